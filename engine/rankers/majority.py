"""The majority-vote integration graph of paper 000, eq. 5, ranked by its wins.

Eq. 5, for each pair i < j (model order of the stack), over the t graphs that compared the pair:
edge i -> j when more than t/2 of them hold the edge i -> j, otherwise j -> i. It is the pairwise MLE
of the random tournament model (paper 000, Section 5.3), stated for tournaments without ties.
With ties two readings are possible and both are offered:

- ``ties="half"`` (default): a tie counts half an edge each way, so N_ij = W_ij + T_ij / 2;
- ``ties="edge"``: a tie is the reciprocal edge pair, so it counts fully for both sides (the literal
  reading, which favours whichever model comes first in the model order when ties are common).

An exact half (N_ij = t/2) goes to the later model as in eq. 5 with ``exact_half="later"``, or becomes
a bidirectional edge with ``exact_half="both"`` (default, symmetric in the model order). Models are
scored by out-degree, a bidirectional edge counting one half.
"""

from __future__ import annotations

import numpy as np

from ..errors import LensError
from ..graphs import GraphStack
from .base import RankResult, adjacency_frame, check_stack, register, series


def integration_graph(
    adj: np.ndarray, observed: np.ndarray, *, ties: str = "edge", exact_half: str = "later"
) -> np.ndarray:
    """(T, n, n) adjacency + observed → (n, n) bool integration graph (uncompared pairs: no edge).

    The defaults here are the literal eq. 5; the ranker's defaults are the symmetric reading.
    """
    a = np.asarray(adj, dtype=bool)
    if ties == "edge":
        count2 = 2 * a.sum(axis=0, dtype=np.int64)
    elif ties == "half":
        strict = a & ~a.swapaxes(1, 2)
        tie = a & a.swapaxes(1, 2)
        count2 = 2 * strict.sum(axis=0, dtype=np.int64) + tie.sum(axis=0, dtype=np.int64)
    else:
        raise LensError(f"Unknown tie reading {ties!r} for the integration graph; choose half or edge.")
    if exact_half not in ("later", "both"):
        raise LensError(f"Unknown exact-half rule {exact_half!r}; choose later or both.")
    t = observed.sum(axis=0, dtype=np.int64)
    n = count2.shape[0]
    upper = np.triu(np.ones((n, n), dtype=bool), 1) & (t > 0)
    fwd = upper & (count2 > t)  # N_ij > t/2
    half = upper & (count2 == t)
    back = upper & ~fwd
    g = fwd | back.T
    if exact_half == "both":
        g = g | half
    return g


@register("majority", "wins in the majority-vote integration graph (paper 000, eq. 5)")
def majority(stack: GraphStack, *, ties: str = "half", exact_half: str = "both") -> RankResult:
    check_stack(stack, "majority")
    g = integration_graph(stack.adj, stack.observed, ties=ties, exact_half=exact_half)
    score = (g & ~g.T).sum(axis=1) + 0.5 * (g & g.T).sum(axis=1)
    return RankResult(
        "majority", series(stack.models, score),
        {"score": "out-degree in the eq. 5 integration graph (a bidirectional edge counts 1/2)",
         "ties": ties, "exact_half": exact_half},
        {"graph": adjacency_frame(stack.models, g)},
    )
