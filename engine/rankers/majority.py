"""The majority-vote integration graph of paper 000, eq. 5, ranked by its wins.

For each pair i < j (model order of the stack): edge i -> j when more than half of the graphs that
compared the pair hold the edge i -> j (ties count as an edge both ways), otherwise j -> i. Eq. 5 is
deliberately one-sided: an exact half goes to j. It is the pairwise MLE of the random tournament model
(paper 000, Section 5.3). Models are scored by out-degree (wins) in this graph.
"""

from __future__ import annotations

import numpy as np

from ..graphs import GraphStack
from .base import RankResult, adjacency_frame, check_stack, register, series


def integration_graph(adj: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """(T, n, n) adjacency + observed → (n, n) bool integration graph of eq. 5 (uncompared pairs: no edge)."""
    count = adj.sum(axis=0, dtype=np.int64)
    t = observed.sum(axis=0, dtype=np.int64)
    n = count.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), 1) & (t > 0)
    fwd = upper & (2 * count > t)
    back = upper & ~fwd
    return fwd | back.T


@register("majority", "wins in the majority-vote integration graph (paper 000, eq. 5)")
def majority(stack: GraphStack) -> RankResult:
    check_stack(stack, "majority")
    g = integration_graph(stack.adj, stack.observed)
    return RankResult(
        "majority", series(stack.models, g.sum(axis=1)),
        {"score": "out-degree in the eq. 5 integration graph; an exact half goes to the later model"},
        {"graph": adjacency_frame(stack.models, g)},
    )
