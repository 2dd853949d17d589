"""PGED (paper 002): ensemble graphs, denoise by greedy weighted feedback arc set, rank by descendants.

Graph ensemble (Section 3.2): w_E(u, v) = sum over graphs of alpha_t * [u beat v in graph t] (strict
wins; ties are ignored as in Section 4). Denoising: Algorithm 1 (engine.denoise). Ranking (Section 3.4):
desc(v) = number of vertices reachable from v in the DAG, higher first, ties broken lexicographically by
model name (the total order is in ``extras["order"]``; ``scores`` keep the raw descendant counts).
"""

from __future__ import annotations

import numpy as np

from ..denoise import denoise, descendant_counts
from ..graphs import GraphStack
from .base import RankResult, adjacency_frame, check_stack, register, series
from .simple import graph_weights


def pged_from_weights(w: np.ndarray, models: tuple[str, ...]) -> RankResult:
    """PGED steps 2-3 on an ensemble weight matrix (row beats column)."""
    d = denoise(w)
    desc = descendant_counts(d.dag)
    order = sorted(range(len(models)), key=lambda i: (-int(desc[i]), models[i]))
    removed = [
        (models[i], models[j], float(w[i, j])) for i, j in zip(*np.nonzero(d.removed), strict=True)
    ]
    details = {
        "score": "descendant count in the denoised DAG (paper 002, eq. 5); ties broken by model name",
        "n_removed_arcs": len(removed),
        "removed_weight": d.removed_weight,
        "total_weight": float(np.asarray(w).sum() - np.trace(w)),
        "greedy_sequence": [models[i] for i in d.order],
    }
    extras = {
        "graph": adjacency_frame(models, d.dag),
        "ensemble": adjacency_frame(models, w),
        "removed": removed,
        "order": [models[i] for i in order],
    }
    return RankResult("pged", series(models, desc), details, extras)


@register("pged", "PGED: graph ensemble, greedy feedback-arc-set denoising, descendant count (paper 002)")
def pged(stack: GraphStack, *, weights: np.ndarray | dict | None = None) -> RankResult:
    check_stack(stack, "pged")
    alpha = graph_weights(stack, weights)
    w = np.einsum("t,tij->ij", alpha, stack.wins.astype(np.float64))
    res = pged_from_weights(w, stack.models)
    res.details["weighted"] = weights is not None
    return res
