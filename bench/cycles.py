"""Benchmark: batched closed-form cycle counts against enumeration and networkx, same stacks.

    python bench/cycles.py [--scale 10000x20 ...] [--budget 20 | --full] [--threads N] [--seed 0]

For each scale (T graphs × n models; complete graphs, 20 % ties, as in the paper's data) it times
``engine.graphs.cycles.cycle_counts_arrays`` on the whole stack, then each baseline graph by graph on the
same graphs until its time budget runs out:

- ``enumerate``: paper 000 App. A.2 as written, every vertex triple/quadruple and every cyclic
  orientation, in Python (C3, C4 and the same on B);
- ``networkx``: ``nx.simple_cycles(G, length_bound=4)`` on A and on B, counting lengths 3 and 4.

A baseline that finishes only part of the stack is extrapolated linearly (marked ``~``); one that
cannot finish a single graph in the budget gives a lower bound (marked ``>``); ``--full`` runs the
baselines on every graph, however long that takes (no mark). Every graph a baseline does finish
is checked against the batched counts. Structure metrics (largest SCC, draw rate) and the triple
classifier are timed too. ``--scale TxN`` (repeatable) picks the scales. Prints a Markdown table
and the load average before and after; nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.graphs.cycles import cycle_counts_arrays  # noqa: E402
from engine.graphs.stack import KEY_COLUMNS, GraphStack  # noqa: E402
from engine.graphs.structure import draw_rate, largest_scc  # noqa: E402
from engine.graphs.triads import classify_triples  # noqa: E402

SCALES = ((400, 20), (10_000, 20), (100, 200))


class OutOfTime(Exception):
    pass


def make_stack(T: int, n: int, tie_rate: float, seed: int) -> np.ndarray:
    """Complete graphs: each pair tied with probability tie_rate, else a fair coin for direction."""
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    u = rng.random((T, len(iu)))
    tie = u < tie_rate
    fwd = u >= tie_rate + (1 - tie_rate) / 2
    adj = np.zeros((T, n, n), dtype=bool)
    adj[:, iu, ju] = tie | fwd
    adj[:, ju, iu] = tie | ~fwd
    return adj


def enumerate_counts(a: np.ndarray, deadline: float) -> tuple[int, int, int, int]:
    """C3, C4, C3_tie, C4_tie by visiting every vertex subset and cyclic orientation."""
    b = a & a.T
    n = a.shape[0]
    out = []
    for m in (a, b):
        for length in (3, 4):
            count = 0
            for k, subset in enumerate(itertools.combinations(range(n), length)):
                if k % 4096 == 0 and time.perf_counter() > deadline:
                    raise OutOfTime
                first = subset[0]
                for order in itertools.permutations(subset[1:]):
                    seq = (first, *order)
                    if all(m[seq[s], seq[(s + 1) % length]] for s in range(length)):
                        count += 1
            out.append(count)
    return out[0], out[1], out[2], out[3]


def networkx_counts(a: np.ndarray, deadline: float) -> tuple[int, int, int, int]:
    """C3, C4, C3_tie, C4_tie from networkx.simple_cycles(length_bound=4) on A and on B."""
    out = []
    for m in (a, a & a.T):
        g = nx.DiGraph()
        g.add_nodes_from(range(m.shape[0]))
        g.add_edges_from(zip(*np.nonzero(m), strict=True))
        c3 = c4 = 0
        for k, cyc in enumerate(nx.simple_cycles(g, length_bound=4)):
            if k % 4096 == 0 and time.perf_counter() > deadline:
                raise OutOfTime
            c3 += len(cyc) == 3
            c4 += len(cyc) == 4
        out += [c3, c4]
    return out[0], out[1], out[2], out[3]


def run_baseline(fn, adj: np.ndarray, expect: dict[str, np.ndarray], budget: float) -> tuple[float, str, int]:
    """(estimated seconds for the whole stack, mark, graphs done); checks every finished graph."""
    start = time.perf_counter()
    deadline = start + budget
    done, finished_at = 0, start
    try:
        for t in range(len(adj)):
            got = fn(adj[t], deadline)
            finished_at = time.perf_counter()
            want = tuple(int(expect[c][t]) for c in ("c3", "c4", "c3_tie", "c4_tie"))
            if got != want:
                raise AssertionError(f"{fn.__name__} disagrees on graph {t}: {got} vs {want}")
            done += 1
            if finished_at > deadline:
                break
    except OutOfTime:
        pass
    if done == len(adj):
        return finished_at - start, "", done
    if done == 0:  # not one graph in the budget: each takes longer than the budget
        return (time.perf_counter() - start) * len(adj), ">", 0
    return (finished_at - start) / done * len(adj), "~", done


def best_of(fn, repeat: int = 5, clock=time.perf_counter) -> float:
    """Best of ``repeat`` runs on ``clock`` (wall time by default; process CPU time on request)."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def previous_kernel(rev: str):
    """``cycle_counts_arrays`` of engine/graphs/cycles.py as committed at git revision ``rev``."""
    root = Path(__file__).resolve().parent.parent
    src = subprocess.run(["git", "show", f"{rev}:engine/graphs/cycles.py"], cwd=root, capture_output=True,
                         text=True, check=True).stdout
    module = types.ModuleType(f"engine.cycles_at_{rev}")
    module.__package__ = "engine"
    exec(compile(src, f"{rev}:engine/graphs/cycles.py", "exec"), module.__dict__)  # noqa: S102 - our own file
    return module.cycle_counts_arrays


def best_of_pair(f, g, repeat: int = 5, clock=time.perf_counter) -> tuple[float, float]:
    """Best of ``repeat`` runs of f and of g, interleaved so both see the same machine load."""
    tf, tg = [], []
    for _ in range(repeat):
        for fn, times in ((f, tf), (g, tg)):
            t0 = clock()
            fn()
            times.append(clock() - t0)
    return min(tf), min(tg)


def fmt(seconds: float, mark: str = "") -> str:
    return f"{mark}{seconds:.4f}" if seconds < 1 else f"{mark}{seconds:,.1f}"


def scale(text: str) -> tuple[int, int]:
    """``10000x20`` (or ``10,000x20``) → (T, n)."""
    t, sep, n = text.lower().replace(",", "").replace("_", "").partition("x")
    if not sep or not t.isdigit() or not n.isdigit() or int(t) < 1 or int(n) < 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not a scale of the form TxN, e.g. 10000x20")
    return int(t), int(n)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=scale, action="append", metavar="TxN",
                        help="T graphs x n models, repeatable (default: 400x20, 10000x20, 100x200)")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per baseline and scale")
    parser.add_argument("--full", action="store_true",
                        help="run the baselines on every graph instead of extrapolating (can take hours)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of the batched kernel (default: its own choice, 2 for large stacks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tie-rate", type=float, default=0.2)
    parser.add_argument("--batched-only", action="store_true", help="skip the baselines (quick re-timing)")
    parser.add_argument(
        "--against",
        metavar="REV",
        help="also time engine/graphs/cycles.py of this git revision on the same stacks (before/after)",
    )
    args = parser.parse_args()
    old = previous_kernel(args.against) if args.against else None
    budget = float("inf") if args.full else args.budget
    print(f"load average before: {loadavg()} ({os.cpu_count()} CPUs)\n")

    extra = f" {args.against} counts (s) | {args.against} CPU (s) |" if old else ""
    print(
        "| T | n | batched counts (s) | batched CPU (s) | enumerate (s) | × | networkx (s) | × | largest SCC "
        "(s) "
        f"| draw rate (s) | classify triples (s) |{extra}"
    )
    print(
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        + (" ---: | ---: |" if old else "")
    )
    for T, n in args.scale or SCALES:
        adj = make_stack(T, n, args.tie_rate, args.seed)
        stack = GraphStack(tuple(f"m{i}" for i in range(n)), adj, adj | adj.swapaxes(1, 2),
                           _keys(T))
        def fast(adj=adj):
            return cycle_counts_arrays(adj, threads=args.threads)

        counts = fast()
        if old is not None:
            before = old(adj)
            assert all(np.array_equal(before[c], counts[c]) for c in counts), f"{args.against} disagrees"
            t_fast, t_old = best_of_pair(fast, lambda adj=adj: old(adj))
            cpu_fast, cpu_old = best_of_pair(fast, lambda adj=adj: old(adj), clock=time.process_time)
        else:
            t_fast = best_of(fast)
            cpu_fast = best_of(fast, clock=time.process_time)
        t_scc = best_of(lambda stack=stack: largest_scc(stack), repeat=3)
        t_draw = best_of(lambda stack=stack: draw_rate(stack), repeat=3)
        t_tri = (
            best_of(lambda stack=stack: classify_triples(stack), repeat=1)
            if T * n**3 <= 1e8
            else float("nan")
        )
        if args.batched_only:
            t_enum = t_nx = float("nan")
            m_enum = m_nx = ""
        else:
            t_enum, m_enum, _ = run_baseline(enumerate_counts, adj, counts, budget)
            t_nx, m_nx, _ = run_baseline(networkx_counts, adj, counts, budget)
        print(
            f"| {T:,} | {n} | {fmt(t_fast)} | {fmt(cpu_fast)} | {fmt(t_enum, m_enum)} | "
            f"{m_enum}{t_enum / t_fast:,.0f} "
            f"| {fmt(t_nx, m_nx)} | {m_nx}{t_nx / t_fast:,.0f} | {fmt(t_scc)} | {fmt(t_draw)} | "
            f"{'—' if np.isnan(t_tri) else fmt(t_tri)} |"
            + (f" {fmt(t_old)} | {fmt(cpu_old)} |" if old is not None else ""),
            flush=True,
        )
    if args.full:
        print("\nBaselines ran on every graph (--full).", end="")
    else:
        print(f"\n~ extrapolated from the graphs finished within {args.budget:g} s; > lower bound "
              "(not one graph finished).", end="")
    print(" Batched times are the best of 5 runs; 'batched CPU' is process CPU time (all threads), "
          "which other jobs on a shared machine do not inflate.")
    print(f"load average after: {loadavg()}")


def _keys(T: int):
    import pandas as pd

    return pd.DataFrame({c: np.arange(T) for c in KEY_COLUMNS})


if __name__ == "__main__":
    main()
