"""ELSPR tournament-graph reconstruction (paper 004, Section 3.3), batched over graphs.

Per graph: find the strongly connected components (ties are edges both ways); inside every SCC drop
the original edges and re-orient each pair by the vertices' global win score (out-degree here, since
our edges point from winner to loser; the paper's edges point to the winner, hence its in-degree):
the higher score wins, equal scores tie. Edges between SCCs are kept. The result has no cycle other
than ties. A verdict is *cleaned* when it agrees with its reconstructed graph, else *discarded*.
The ranker fits half-tie Bradley-Terry on the cleaned pairs only (discarded pairs are left out).
"""

from __future__ import annotations

import numpy as np

from engine.frames import pd
from engine.graphs.reachability import closure_batch
from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, adjacency_frame, check_stack, register
from engine.rankers.bt import DEFAULT_ALPHA, fit_bt
from engine.store.schema import GRAPH_KEY


def reconstruct(adj: np.ndarray) -> np.ndarray:
    """(T, n, n) bool adjacency → (T, n, n) reconstructed adjacency (SCCs re-ordered by win score)."""
    a = np.asarray(adj, dtype=bool)
    reach = closure_batch(a)
    same = reach & reach.swapaxes(1, 2)
    n = a.shape[-1]
    same &= ~np.eye(n, dtype=bool)
    score = a.sum(axis=2)
    inside = score[:, :, None] >= score[:, None, :]
    return np.where(same, inside, a)


def cleaned_mask(stack: GraphStack, rec: np.ndarray | None = None) -> np.ndarray:
    """(T, n, n) bool, symmetric: compared pairs whose outcome agrees with the reconstruction."""
    rec = reconstruct(stack.adj) if rec is None else rec
    agree = (stack.adj == rec) & (stack.adj.swapaxes(1, 2) == rec.swapaxes(1, 2))
    return agree & stack.observed


def split_verdicts(verdicts: pd.DataFrame, stack: GraphStack) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split valid verdicts into (cleaned, discarded) by their graph's reconstruction (paper 004, 3.3).

    A verdict A/B is cleaned when the reconstructed graph has that strict win; a tie when it has the
    tie. Verdicts outside the stack's graphs or models (and invalid ones) are in neither part.
    """
    rec = reconstruct(stack.adj)
    pos = {m: i for i, m in enumerate(stack.models)}
    v = verdicts[
        (verdicts["winner"] != "invalid") & verdicts["model_a"].isin(pos) & verdicts["model_b"].isin(pos)
    ]
    keys = stack.keys[list(GRAPH_KEY)].copy()
    keys["_t"] = np.arange(stack.T)
    v = v.merge(keys, on=list(GRAPH_KEY), how="inner")
    t = v["_t"].to_numpy(np.int64)
    a = v["model_a"].map(pos).to_numpy(np.int64)
    b = v["model_b"].map(pos).to_numpy(np.int64)
    ab, ba = rec[t, a, b], rec[t, b, a]
    w = v["winner"].to_numpy(object)
    ok = np.where(w == "A", ab & ~ba, np.where(w == "B", ba & ~ab, ab & ba))
    v = v.drop(columns="_t")
    return v[ok].reset_index(drop=True), v[~ok].reset_index(drop=True)


def cleaned_contributions(stack: GraphStack) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-graph cleaned wins and ties (T, n, n) as float, and the reconstruction (T, n, n)."""
    rec = reconstruct(stack.adj)
    keep = cleaned_mask(stack, rec)
    return (stack.wins & keep).astype(np.float64), (stack.ties & keep).astype(np.float64), rec


@register("elspr", "ELSPR: SCCs re-ordered by win score per graph, BT on the cleaned pairs (paper 004)")
def elspr(
    stack: GraphStack, *, alpha: float = DEFAULT_ALPHA, on_degenerate: str = "regularize"
) -> RankResult:
    """Bradley-Terry on the pairs left after ELSPR's per-graph cycle cleaning (paper 004), with what it
    dropped."""
    check_stack(stack, "elspr")
    cw, ct, rec = cleaned_contributions(stack)
    keep = cleaned_mask(stack, rec)
    res = fit_bt(cw.sum(axis=0), ct.sum(axis=0), stack.models, alpha=alpha, on_degenerate=on_degenerate,
                 ranker="elspr")
    n_pairs = int(stack.observed.sum() // 2)
    n_clean = int(keep.sum() // 2)
    details = {
        **res.details,
        "model": "half-tie Bradley-Terry on the ELSPR-cleaned pairs",
        "pairs_cleaned": n_clean,
        "pairs_discarded": n_pairs - n_clean,
        "discarded_share": (n_pairs - n_clean) / n_pairs if n_pairs else 0.0,
    }
    extras = {**res.extras, "reconstructed": rec, "cleaned": keep}
    if stack.T == 1:
        extras["graph"] = adjacency_frame(stack.models, rec[0])
    return RankResult("elspr", res.scores, details, extras)
