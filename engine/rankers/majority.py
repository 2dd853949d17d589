"""The majority-vote integration graph of paper 000, eq. 5, ranked by its wins.

Eq. 5, for each pair i < j (model order of the stack), over the t graphs that compared the pair:
edge i -> j when more than t/2 of them hold the edge i -> j, otherwise j -> i. It is the pairwise MLE
of the random tournament model (paper 000, Section 5.2), stated for tournaments without ties.
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

from engine.errors import LensError
from engine.graphs.stack import GraphStack
from engine.rankers.base import RankResult, adjacency_frame, check_stack, register, series


def edge_counts(adj: np.ndarray, ties: str) -> np.ndarray:
    """(T, n, n) per-graph doubled edge counts 2 N_ij: 2 per edge ("edge") or 2 per win + 1 per tie
    ("half")."""
    a = np.asarray(adj, dtype=bool)
    if ties == "edge":
        return 2 * a.astype(np.int64)
    if ties == "half":
        strict = a & ~a.swapaxes(1, 2)
        tie = a & a.swapaxes(1, 2)
        return 2 * strict.astype(np.int64) + tie.astype(np.int64)
    raise LensError(f"Unknown tie reading {ties!r} for the integration graph; choose half or edge.")


def graph_from_counts(count2: np.ndarray, t: np.ndarray, exact_half: str) -> np.ndarray:
    """(B, n, n) doubled counts 2 N_ij and comparisons t_ij → (B, n, n) bool eq. 5 graphs (no edge if t =
    0)."""
    if exact_half not in ("later", "both"):
        raise LensError(f"Unknown exact-half rule {exact_half!r}; choose later or both.")
    n = count2.shape[-1]
    upper = np.triu(np.ones((n, n), dtype=bool), 1) & (t > 0)
    fwd = upper & (count2 > t)  # N_ij > t/2
    half = upper & (count2 == t)
    back = upper & ~fwd
    g = fwd | back.swapaxes(-1, -2)
    if exact_half == "both":
        g = g | half
    return g


def integration_graph(
    adj: np.ndarray, observed: np.ndarray, *, ties: str = "edge", exact_half: str = "later"
) -> np.ndarray:
    """(T, n, n) adjacency + observed → (n, n) bool integration graph (uncompared pairs: no edge).

    The defaults here are the literal eq. 5; the ranker's defaults are the symmetric reading.
    """
    count2 = edge_counts(adj, ties).sum(axis=0)
    t = np.asarray(observed).sum(axis=0, dtype=np.int64)
    return graph_from_counts(count2[None], t[None], exact_half)[0]


def majority_scores(
    g: np.ndarray, compared: np.ndarray, normalize: bool = False, strict: bool = True
) -> np.ndarray:
    """(B, n, n) integration graphs → (B, n) out-degree, a bidirectional edge counting 1/2."""
    score = ((g & ~g.swapaxes(1, 2)).sum(axis=2) + 0.5 * (g & g.swapaxes(1, 2)).sum(axis=2)).astype(
        np.float64
    )
    if normalize:
        n = g.shape[-1]
        opp = (compared & ~np.eye(n, dtype=bool)).sum(axis=2)
        score = np.divide(score, opp, out=np.full(score.shape, np.nan), where=opp > 0)
        if strict and np.isnan(score).any():
            raise LensError(
                "The normalised majority score is undefined for a model never compared in this selection."
            )
    return score


def majority_pair_edges(
    w_lo: np.ndarray, w_hi: np.ndarray, ties: np.ndarray, ties_rule: str, exact_half: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``graph_from_counts`` per pair (lo before hi in the model order): (edge lo -> hi, edge hi -> lo,
    compared), each shaped like the counts; a pair without a vote has neither edge."""
    if exact_half not in ("later", "both"):
        raise LensError(f"Unknown exact-half rule {exact_half!r}; choose later or both.")
    if ties_rule == "half":
        count2 = 2.0 * w_lo + ties
    elif ties_rule == "edge":
        count2 = 2.0 * (w_lo + ties)
    else:
        raise LensError(f"Unknown tie reading {ties_rule!r} for the integration graph; choose half or edge.")
    t = w_lo + w_hi + ties
    compared = t > 0
    fwd = compared & (count2 > t)  # N_ij > t/2
    e_lo = fwd | (compared & (count2 == t)) if exact_half == "both" else fwd
    return e_lo, compared & ~fwd, compared


def majority_pairs(
    n: int, lo: np.ndarray, hi: np.ndarray, w_lo, w_hi, ties, *, ties_rule: str = "half",
    exact_half: str = "both", normalize: bool = False, strict: bool = True,
) -> np.ndarray:
    """``majority_scores`` of the eq. 5 graph from per-pair counts ((b, m) or (m,), ``lo < hi`` in the
    model order) → (b, n), never an (n, n) array (issue 23, bug 13)."""
    from engine.rankers.simple import pair_sums

    w_lo, w_hi, ties = (np.atleast_2d(np.asarray(x, dtype=np.float64)) for x in (w_lo, w_hi, ties))
    e_lo, e_hi, compared = majority_pair_edges(w_lo, w_hi, ties, ties_rule, exact_half)
    both = e_lo & e_hi
    score = pair_sums(n, lo, hi, (e_lo & ~e_hi) + 0.5 * both, (e_hi & ~e_lo) + 0.5 * both)
    if normalize:
        opp = pair_sums(n, lo, hi, compared, compared)
        score = np.divide(score, opp, out=np.full(score.shape, np.nan), where=opp > 0)
        if strict and np.isnan(score).any():
            raise LensError(
                "The normalised majority score is undefined for a model never compared in this selection."
            )
    return score


def majority_result(
    models: tuple[str, ...],
    score: np.ndarray,
    g: np.ndarray | None,
    *,
    ties: str,
    exact_half: str,
    normalize: bool,
) -> RankResult:
    """The eq. 5 ranker's result from its scores (n,) and integration graph ``g`` (n, n; None: too many
    models to show one): shared by the graph path (``majority``) and the count path
    (``objects.Majority``)."""
    return RankResult(
        "majority", series(models, score),
        {"score": "out-degree in the eq. 5 integration graph (a bidirectional edge counts 1/2)",
         "ties": ties, "exact_half": exact_half, "normalized": bool(normalize),
         "uncompared_pairs": "no edge for a pair never compared"
         + ("; normalised: divided by the number of opponents compared" if normalize
            else "; not normalised (normalize=true divides by compared opponents)")},
        {} if g is None else {"graph": adjacency_frame(models, g)},
    )


@register("majority", "wins in the majority-vote integration graph (paper 000, eq. 5)")
def majority(
    stack: GraphStack, *, ties: str = "half", exact_half: str = "both", normalize: bool = False
) -> RankResult:
    """Out-degree in paper 000's majority-vote integration graph (eq. 5), ties by ``ties``/``exact_half``."""
    check_stack(stack, "majority")
    g = integration_graph(stack.adj, stack.observed, ties=ties, exact_half=exact_half)
    score = majority_scores(g[None], np.asarray(stack.observed.any(axis=0))[None], normalize)[0]
    return majority_result(stack.models, score, g, ties=ties, exact_half=exact_half, normalize=normalize)
