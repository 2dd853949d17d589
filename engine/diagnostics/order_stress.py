"""Order-permutation stress test (paper 003, Sections 3.3-3.4 and Appendix A.1.1).

For a prompt whose pairs were all judged in both presentation orders, every ordering π of the
models defines one single-order tournament: the pair (x, y) takes the verdict in which whichever
of x, y comes first in π was shown first. Over all n! orderings this probes how many cyclic graphs
presentation order alone can produce. A graph counts as cyclic (``bad``) when it has a directed
cycle through at least one strict edge (ties are reciprocal edges), i.e. a strict edge i → j with
j reaching i; ``strict`` cyclic means a cycle of strict wins alone (a Condorcet cycle).

All orderings are enumerated when n! ≤ ``max_permutations``; otherwise ``max_permutations``
orderings are drawn uniformly with ``seed`` (stated in the output). Only pairs judged in both orders
enter; several verdicts in one order are combined by plurality first. Batched over graphs and
orderings ((T·P, n, n) reachability of engine.graphs.structure), in chunks to bound memory.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from engine.diagnostics.verdict_pairs import combine_outcomes, verdict_outcomes
from engine.graphs.structure import scc_membership
from engine.store.schema import GRAPH_KEY


def orderings(n: int, max_permutations: int, seed: int) -> tuple[np.ndarray, bool]:
    """(P, n) positions of each model in each ordering, and whether the list is exhaustive."""
    if math.factorial(n) <= max_permutations:
        perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)
        exhaustive = True
    else:
        rng = np.random.default_rng(seed)
        perms = np.argsort(rng.random((max_permutations, n)), axis=1)
        exhaustive = False
    pos = np.empty_like(perms)
    np.put_along_axis(pos, perms, np.arange(n)[None, :].repeat(len(perms), 0), axis=1)
    return pos, exhaustive


def first_shown_outcomes(verdicts: pd.DataFrame) -> tuple[pd.DataFrame, tuple[str, ...], np.ndarray]:
    """Graph keys, models and F (T, n, n): F[t, i, j] = outcome for i (+1/0/−1) when i was shown
    before j, NaN unless the pair has verdicts in both orders."""
    vo = verdict_outcomes(verdicts)
    vo = vo[vo["lo_first"].notna()]
    per = combine_outcomes(vo, [*GRAPH_KEY, "lo", "hi", "lo_first"], "plurality")
    both = per.groupby([*GRAPH_KEY, "lo", "hi"], dropna=False)["lo_first"].transform("nunique") == 2
    per = per[both]
    models = tuple(sorted(set(per["lo"]).union(per["hi"])))
    keys = per[list(GRAPH_KEY)].drop_duplicates().sort_values(list(GRAPH_KEY)).reset_index(drop=True)
    t_idx = pd.MultiIndex.from_frame(keys).get_indexer(pd.MultiIndex.from_frame(per[list(GRAPH_KEY)]))
    pos = {m: i for i, m in enumerate(models)}
    lo = per["lo"].map(pos).to_numpy(np.int64)
    hi = per["hi"].map(pos).to_numpy(np.int64)
    o = per["outcome"].to_numpy(np.float64)
    lo_first = per["lo_first"].to_numpy() == 1.0
    F = np.full((len(keys), len(models), len(models)), np.nan)
    F[t_idx[lo_first], lo[lo_first], hi[lo_first]] = o[lo_first]
    F[t_idx[~lo_first], hi[~lo_first], lo[~lo_first]] = -o[~lo_first]  # hi shown first: hi's outcome
    return keys, models, F


def _cyclic(adj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bad, strict) cyclic flags of a (B, n, n) adjacency stack."""
    strict = adj & ~adj.swapaxes(-1, -2)
    n = adj.shape[-1]
    bad = (strict & scc_membership(adj)).any(axis=(-1, -2))
    strict_cyc = (scc_membership(strict) & ~np.eye(n, dtype=bool)).any(axis=(-1, -2))
    return np.asarray(bad), np.asarray(strict_cyc)  # asarray: typed as arrays, not numpy scalars


def stress_test(verdicts: pd.DataFrame, *, max_permutations: int = 5040, seed: int = 0,
                chunk: int = 200_000) -> pd.DataFrame:
    """One row per graph judged in both orders: models, orderings tried, whether exhaustive, and
    how many of the ordering graphs are cyclic (bad / strict)."""
    cols = [*GRAPH_KEY, "category", "variant_kind", "n_models", "orderings", "exhaustive", "cyclic_bad",
            "cyclic_strict"]
    extra = [c for c in ("category", "variant_kind") if c in verdicts.columns]
    labels = verdicts.drop_duplicates(list(GRAPH_KEY))[[*GRAPH_KEY, *extra]]
    frames = []
    for _judge, v in verdicts.groupby("judge", sort=True):  # per judge: its own model set
        keys, models, F = first_shown_outcomes(v)
        if len(keys) == 0:
            continue
        n = len(models)
        pos, exhaustive = orderings(n, max_permutations, seed)
        before = pos[:, :, None] < pos[:, None, :]  # (P, n, n): i shown before j
        Fneg = -F.swapaxes(1, 2)  # i's outcome when j was shown first
        bad = np.zeros(len(keys), dtype=np.int64)
        strict = np.zeros(len(keys), dtype=np.int64)
        step = max(1, chunk // max(1, len(pos)))
        for t0 in range(0, len(keys), step):  # memory chunks of whole graphs, not a loop per graph
            f, g = F[t0:t0 + step, None], Fneg[t0:t0 + step, None]
            out_i = np.where(before[None], f, g)  # (t, P, n, n)
            adj = out_i >= 0  # NaN (pair not in both orders) gives no edge
            b, s = _cyclic(adj.reshape(-1, n, n))
            bad[t0:t0 + step] = b.reshape(len(f), -1).sum(axis=1)
            strict[t0:t0 + step] = s.reshape(len(f), -1).sum(axis=1)
        present = ~np.isnan(F).all(axis=2)
        out = keys.merge(labels, on=list(GRAPH_KEY), how="left")
        for c in ("category", "variant_kind"):
            if c not in out.columns:
                out[c] = pd.NA
        out["n_models"] = present.sum(axis=1)
        out["orderings"] = len(pos)
        out["exhaustive"] = exhaustive
        out["cyclic_bad"] = bad
        out["cyclic_strict"] = strict
        frames.append(out[cols])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def stress_summary(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group: graphs, ordering graphs, cyclic ordering graphs (bad / strict) and their shares,
    and graphs with at least one cyclic ordering."""
    t = table.assign(total=table["orderings"], any_bad=(table["cyclic_bad"] > 0).astype(np.int64),
                     any_strict=(table["cyclic_strict"] > 0).astype(np.int64))
    out = t.groupby(list(by), sort=True, dropna=False).agg(
        graphs=("total", "size"), ordering_graphs=("total", "sum"), cyclic_bad=("cyclic_bad", "sum"),
        cyclic_strict=("cyclic_strict", "sum"), graphs_any_bad=("any_bad", "sum"),
        graphs_any_strict=("any_strict", "sum"), exhaustive=("exhaustive", "all")).reset_index()
    out["cyclic_bad_share"] = out["cyclic_bad"] / out["ordering_graphs"]
    out["cyclic_strict_share"] = out["cyclic_strict"] / out["ordering_graphs"]
    return out
