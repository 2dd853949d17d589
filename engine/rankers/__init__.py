"""Rankers: from a GraphStack to scores by model, behind one entry point ``rank(stack, ranker, **params)``.

The registry ``RANKERS`` maps the CLI names (bt, davidson, elo, winrate, copeland, scorewin,
rank-centrality, majority, pged, elspr, kemeny, borda, pairwise-majority, panel) to functions.

May import: ``engine.graphs``, ``engine.store.schema``, ``engine.blas``, ``engine.errors``.
"""

from __future__ import annotations

from engine.errors import LensError
from engine.graphs.stack import GraphStack
from engine.rankers import (  # noqa: F401 - registers
    bt,
    davidson,
    elo,
    elspr,
    kemeny,
    majority,
    panel,
    pged,
    rank_centrality,
    simple,
)
from engine.rankers.base import RANKER_HELP, RANKERS, RankResult, ranks_from_scores, single_thread_blas
from engine.rankers.objects import RANKER_OBJECTS, fit_counts, ranker_object  # noqa: E402 - needs the registry filled
from engine.rankers.params import check_ranker_params, parse_ranker_params


def rank(stack: GraphStack, ranker: str = "bt", **params) -> RankResult:
    """Rank the models of ``stack`` with the named ranker; unknown names or parameters, and parameters of
    the wrong type or out of range (``engine.rankers.params``), are user errors."""
    fn = RANKERS.get(ranker)
    if fn is None:
        raise LensError(f"Unknown ranker {ranker!r}; choose one of {', '.join(sorted(RANKERS))}.")
    check_ranker_params(ranker, params)
    try:
        with single_thread_blas():
            return fn(stack, **params)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            raise LensError(f"The {ranker} ranker does not take that parameter ({exc}).") from None
        raise


__all__ = [
    "RANKERS",
    "RANKER_OBJECTS",
    "fit_counts",
    "ranker_object",
    "RANKER_HELP",
    "RankResult",
    "check_ranker_params",
    "parse_ranker_params",
    "rank",
    "ranks_from_scores",
]
