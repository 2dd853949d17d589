"""Benchmark: batched judge diagnostics against per-graph / per-triple peers, same data, same run.

    python bench/diagnostics.py [--seed 0]

- ELSPR entropy table (``entropy.nontransitive_vertices`` + ``structural_entropy``, batched over
  the stack) against networkx SCCs and eq. 4 written per graph;
- SNTD (``sntd.sntd_arrays``, batched over graphs × triples) against a Python loop per triple;
- order-permutation stress test (``order_stress.stress_test``, batched over graphs × orderings)
  against building each ordering's graph in networkx and testing it for cycles;
- cycles of every length (``cycle_dp.cycles_by_length``, a subset DP batched over graphs) against
  ``networkx.simple_cycles`` enumerated per graph without a length bound.

Each peer's results are checked against the batched ones. Prints a Markdown table with wall and
process CPU seconds and the speed-up ratio; nothing is asserted (speed is not a test).
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.diagnostics.cycle_dp import cycles_by_length  # noqa: E402
from engine.diagnostics.entropy import nontransitive_vertices, structural_entropy  # noqa: E402
from engine.diagnostics.order_stress import stress_test  # noqa: E402
from engine.diagnostics.sntd import sntd_arrays  # noqa: E402


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def random_graphs(rng, T, n, tie=0.2):
    iu, ju = np.triu_indices(n, 1)
    u = rng.random((T, len(iu)))
    adj = np.zeros((T, n, n), dtype=bool)
    adj[:, iu, ju] = u < 0.5 * (1 - tie) + tie
    adj[:, ju, iu] = u >= 0.5 * (1 - tie)
    return adj


def peer_entropy(adj):
    nt, hs = [], []
    for a in adj:
        g = nx.DiGraph()
        g.add_nodes_from(range(a.shape[0]))
        g.add_edges_from((int(j), int(i)) for i, j in zip(*np.nonzero(a), strict=True))  # ELSPR direction
        comps = [set(c) for c in nx.strongly_connected_components(g)]
        of = {v: k for k, c in enumerate(comps) for v in c}
        din = dict(g.in_degree())
        vg = sum(din.values())
        h, count = 0.0, 0
        for comp in comps:
            if len(comp) > 2 and any(not (a[u, v] and a[v, u]) for u in comp for v in comp if u != v):
                count += len(comp)
            vs = sum(din[v] for v in comp)
            gk = sum(
                1
                for u, v in g.in_edges(comp)
                if u not in comp and not (len(comp) == 1 and len(comps[of[u]]) == 1)
            )
            if gk:
                h -= gk / vg * math.log2(vs / vg)
            h -= sum(din[v] / vg * math.log2(din[v] / vs) for v in comp if din[v])
        nt.append(count)
        hs.append(h)
    return np.array(nt), np.array(hs)


def peer_sntd(soft):
    T, n = soft.shape[0], soft.shape[1]
    out = np.zeros((T, math.comb(n, 3)))
    lg = lambda p: math.log(p / (1 - p))  # noqa: E731

    def jsd(p, q):
        m = (p + q) / 2
        kl = lambda x, y: sum(a * math.log2(a / b) for a, b in ((x, y), (1 - x, 1 - y)) if a > 0)  # noqa: E731
        return 0.5 * kl(p, m) + 0.5 * kl(q, m)

    for t in range(T):
        for k, (a, b, c) in enumerate(itertools.combinations(range(n), 3)):
            pab, pbc, pac = soft[t, a, b], soft[t, b, c], soft[t, a, c]
            sab, sbc, sac = lg(pab), lg(pbc), lg(pac)
            hats = (
                1 / (1 + math.exp(-(sac - sbc))),
                1 / (1 + math.exp(-(sac - sab))),
                1 / (1 + math.exp(-(sab + sbc))),
            )
            out[t, k] = (jsd(pab, hats[0]) + jsd(pbc, hats[1]) + jsd(pac, hats[2])) / 3
    return out


def stress_verdicts(rng, prompts, models):
    rows = []
    for p in range(prompts):
        for x, y in itertools.combinations(models, 2):
            for f, s in ((x, y), (y, x)):
                rows.append(("j", str(p), f, s, rng.choice(["A", "B", "tie"], p=[0.5, 0.35, 0.15])))
    v = pd.DataFrame(rows, columns=["judge", "prompt_id", "model_a", "model_b", "winner"])
    for c, val in {"dataset": "d", "variant": 0, "turn": 1, "category": "c", "variant_kind": "original",
                   "order": "AB", "prob_a": np.nan}.items():
        v[c] = val
    return v, rows


def peer_stress(rows, prompts, models):
    verdict = {(r[1], r[2], r[3]): r[4] for r in rows}
    bad = []
    for p in range(prompts):
        count = 0
        for perm in itertools.permutations(models):
            g, w = nx.DiGraph(), nx.DiGraph()
            g.add_nodes_from(models)
            for i, j in itertools.combinations(range(len(models)), 2):
                f, s = perm[i], perm[j]
                res = verdict[(str(p), f, s)]
                if res in ("A", "tie"):
                    g.add_edge(f, s)
                if res in ("B", "tie"):
                    g.add_edge(s, f)
                if res != "tie":
                    w.add_edge(*((f, s) if res == "A" else (s, f)))
            count += any(nx.has_path(g, y, x) for x, y in w.edges())
        bad.append(count)
    return np.array(bad)


def peer_cycles(adj):
    """Per graph: cycles of each length ≥ 3 and cycles through each vertex, by networkx enumeration."""
    T, n = adj.shape[0], adj.shape[1]
    lengths = np.zeros((T, n + 1), dtype=np.int64)
    through = np.zeros((T, n), dtype=np.int64)
    for t in range(T):
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from(zip(*(x.tolist() for x in np.nonzero(adj[t] & ~np.eye(n, dtype=bool))), strict=True))
        for cyc in nx.simple_cycles(g):
            if len(cyc) >= 3:
                lengths[t, len(cyc)] += 1
                through[t, cyc] += 1
    return lengths, through


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []

    adj = random_graphs(rng, 3000, 9)
    (nt, h), w, c = timed(lambda: (nontransitive_vertices(adj).sum(axis=1), structural_entropy(adj)))
    (pnt, ph), pw, pc = timed(lambda: peer_entropy(adj))
    assert np.array_equal(nt, pnt) and np.allclose(h, ph)
    rows.append(("ELSPR ρ + H² (T=3000, n=9)", w, c, "networkx per graph", pw, pc))

    n = 10
    iu, ju = np.triu_indices(n, 1)
    soft = np.full((400, n, n), np.nan)
    p = rng.uniform(0.02, 0.98, (400, len(iu)))
    soft[:, iu, ju], soft[:, ju, iu] = p, 1 - p
    (val, _), w, c = timed(lambda: sntd_arrays(soft))
    ref, pw, pc = timed(lambda: peer_sntd(soft))
    assert np.allclose(val, ref)
    rows.append(("SNTD (T=400, n=10, 120 triples)", w, c, "Python loop per triple", pw, pc))

    models = ("a", "b", "c", "d", "e", "f")
    v, vrows = stress_verdicts(rng, 40, models)
    table, w, c = timed(lambda: stress_test(v))
    ref, pw, pc = timed(lambda: peer_stress(vrows, 40, models))
    assert np.array_equal(
        table.sort_values("prompt_id", key=lambda s: s.astype(int))["cyclic_bad"].to_numpy(), ref
    )
    rows.append(("stress test (40 prompts × 720 orderings, n=6)", w, c, "networkx per ordering", pw, pc))

    for T, n in ((80, 9), (10, 11)):  # 80 nine-model graphs: vicuna80's gpt-4 judge has this shape
        adj = random_graphs(rng, T, n)
        (ln, th), w, c = timed(lambda adj=adj: cycles_by_length(adj))
        (pl, pth), pw, pc = timed(lambda adj=adj: peer_cycles(adj))
        assert np.array_equal(ln, pl) and np.array_equal(th, pth)
        rows.append((f"cycles of every length (T={T}, n={n}, {int(ln.sum() / T)} cycles per graph)", w, c,
                     "networkx simple_cycles per graph", pw, pc))

    print("| kernel | batched wall s | batched CPU s | peer | peer wall s | peer CPU s | speed-up (wall) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, w, c, peer, pw, pc in rows:
        print(f"| {name} | {w:.3f} | {c:.3f} | {peer} | {pw:.2f} | {pc:.2f} | {pw / w:.0f}× |")


if __name__ == "__main__":
    main()
