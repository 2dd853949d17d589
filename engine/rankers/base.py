"""The common face of every ranker: a frozen result, the W/T aggregation and the registry.

Every ranker takes a GraphStack (T graphs over n models) plus keyword parameters and returns a
``RankResult`` whose ``scores`` are a Series by model (higher is better). W and T follow paper 000,
eq. 3-4: ``W[i, j]`` graphs where i beat j, ``T[i, j]`` graphs where they tied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.blas import single_thread_blas  # noqa: F401 - re-exported
from engine.errors import LensError
from engine.frames import pd

if TYPE_CHECKING:
    from engine.graphs.stack import GraphStack


class FrozenDict(dict):
    """A dict that refuses changes after construction (and still pickles, for Streamlit caches)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError(
            "RankResult details and extras are read-only; build them before constructing the result."
        )

    __setitem__ = __delitem__ = _refuse
    clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __reduce__(self):
        return (FrozenDict, (dict(self),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        import copy

        return FrozenDict(copy.deepcopy(dict(self), memo))


@dataclass(frozen=True)
class ModelScores:
    """Scores by model without pandas: the models in order and their float64 values. A ranker on the plain
    board's path returns these (``RankResult.scores`` builds the Series on first read), so a command that
    prints the board from arrays never imports pandas (issue 26, point 5)."""

    models: tuple[str, ...]
    values: np.ndarray

    def series(self) -> pd.Series:
        """The same scores as the float Series every ranker's ``scores`` is (``series``)."""
        return series(self.models, self.values)


@dataclass(frozen=True)
class RankResult:
    """Scores by model (higher is better) plus how they were obtained.

    ``model_scores`` is what the ranker gave: a Series by model or ``ModelScores`` (arrays); ``scores``
    is always the Series. ``details`` says solver, iterations, convergence, regularisation and ranker
    parameters; ``extras`` holds optional artefacts such as a denoised graph (``graph``, a DataFrame
    adjacency) and the ``removed`` edges for PGED/ELSPR, or a total ``order`` when the ranker defines one.
    Both are read-only after construction (``FrozenDict``): build them before constructing the result.
    """

    ranker: str
    model_scores: pd.Series | ModelScores
    details: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", FrozenDict(self.details))
        object.__setattr__(self, "extras", FrozenDict(self.extras))

    @property
    def scores(self) -> pd.Series:
        """Score by model, a float Series indexed by model (built once from ``ModelScores``)."""
        if not isinstance(self.model_scores, ModelScores):
            return self.model_scores
        built = self.__dict__.get("_scores_series")
        if built is None:
            built = self.model_scores.series()
            self.__dict__["_scores_series"] = built
        return built

    @property
    def ranks(self) -> pd.Series:
        """Rank by model, 1 = best; scores equal within a tolerance share the smallest rank of their group.

        Always from the scores, never from a name: a ranker's listed order (``extras["order"]``,
        ``extras["consensus_order"]``) shows one representative of models with equal scores, and those
        models still share a rank (issue 23: Kemeny and PGED ranked all-tie data by name).
        """
        return ranks_from_scores(self.scores)

    @property
    def models(self) -> tuple[str, ...]:
        """The ranked models in score-index order."""
        if isinstance(self.model_scores, ModelScores):
            return self.model_scores.models
        return tuple(self.scores.index)

    def scores_of(self, models: list[str] | tuple[str, ...]) -> np.ndarray:
        """float64 scores of ``models`` in that order (NaN for a model the ranker did not score): the
        Series' ``reindex(models)`` values, without pandas when the ranker gave ``ModelScores``."""
        if not isinstance(self.model_scores, ModelScores):
            return self.scores.reindex(list(models)).to_numpy(np.float64)
        at = {m: i for i, m in enumerate(self.model_scores.models)}
        values = np.asarray(self.model_scores.values, dtype=np.float64)
        return np.array([values[at[m]] if m in at else np.nan for m in models], dtype=np.float64)

    def ranks_of(self, models: list[str] | tuple[str, ...]) -> np.ndarray:
        """``ranks`` of ``models`` in that order, as ``ranks.reindex(models).to_numpy()``: int64 ranks
        computed from the ranker's own models (the same ``ranks_from_scores_batch``), without pandas when
        every model was scored and the ranker gave ``ModelScores``."""
        if not isinstance(self.model_scores, ModelScores) or not set(models) <= set(self.model_scores.models):
            return self.ranks.reindex(list(models)).to_numpy()
        own = ranks_from_scores_batch(np.asarray(self.model_scores.values, dtype=np.float64)[None])[0]
        at = {m: i for i, m in enumerate(self.model_scores.models)}
        return own[[at[m] for m in models]].astype(np.int64)


TIE_RTOL = 1e-9
"""Scores closer than TIE_RTOL * max(1, |score|) count as tied (floating-point noise is not an order)."""


def ranks_from_scores(scores: pd.Series, rtol: float = TIE_RTOL) -> pd.Series:
    """Competition ranks (1 = highest score; tied scores get the minimum rank of their group), int64.

    Two scores are tied when they differ by at most ``rtol * max(1, |s|)``; groups are formed along
    the sorted scores (a chain of near-equal scores is one group). Missing scores rank last.
    """
    s = pd.Series(scores, dtype=np.float64)
    vals = s.to_numpy(np.float64)
    ranks = ranks_from_scores_batch(vals[None], rtol)[0]
    return pd.Series(ranks, index=s.index, name=s.name).astype(np.int64)


def ranks_from_scores_batch(scores: np.ndarray, rtol: float = TIE_RTOL) -> np.ndarray:
    """(B, n) scores → (B, n) competition ranks (1 = best, ties within tolerance get the min rank)."""
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    B, n = s.shape
    if n == 0:
        return np.zeros((B, 0), dtype=np.int64)
    key = np.where(np.isnan(s), -np.inf, s)
    order = np.argsort(-key, axis=1, kind="stable")
    srt = np.take_along_axis(key, order, axis=1)
    with np.errstate(invalid="ignore"):
        gap = srt[:, :-1] - srt[:, 1:]
        scale = np.maximum(1.0, np.abs(srt[:, :-1]))
        new_group = ~(gap <= rtol * scale)  # inf - inf (both missing) is nan: a new group is fine
    both_missing = np.isneginf(srt[:, :-1]) & np.isneginf(srt[:, 1:])
    new_group &= ~both_missing
    start = np.zeros((B, n), dtype=np.int64)
    pos = np.arange(1, n)
    start[:, 1:] = np.where(new_group, pos[None, :], 0)
    start = np.maximum.accumulate(start, axis=1)
    ranks = np.empty((B, n), dtype=np.int64)
    np.put_along_axis(ranks, order, start + 1, axis=1)
    return ranks


def ordered_ranks_batch(
    scores: np.ndarray, names: tuple[str, ...] | list[str], rtol: float = TIE_RTOL
) -> np.ndarray:
    """(B, n) scores → (B, n) positions 1..n in the order "score descending (ties within the tolerance of
    ``ranks_from_scores``), then model name": the order PGED lists its models in (a listing only: the
    ranks shared by equal scores are ``ranks_from_scores``)."""
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    comp = ranks_from_scores_batch(s, rtol)
    name_rank = np.argsort(np.argsort(np.asarray(list(names), dtype=object), kind="stable"), kind="stable")
    order = np.lexsort((np.broadcast_to(name_rank, comp.shape), comp), axis=-1)
    ranks = np.empty_like(comp)
    np.put_along_axis(ranks, order, np.arange(1, s.shape[1] + 1)[None].repeat(s.shape[0], 0), axis=1)
    return ranks


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct row of the 2-D float array, its group for every row): grouped by two
    random projections, then every row checked equal to its group's first (a byte comparison when two
    different rows projected alike), so rows share a group only when they are equal."""
    rows = np.asarray(rows, dtype=np.float64)
    proj = np.random.default_rng(0x9ED).standard_normal((rows.shape[1], 2))
    _, first, inverse = np.unique(rows @ proj, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    if not np.array_equal(rows, rows[first][inverse]):
        key = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))
        _, first, inverse = np.unique(key.ravel(), return_index=True, return_inverse=True)
        inverse = inverse.ravel()
    return first, inverse


def centred(x: np.ndarray) -> np.ndarray:
    """Subtract the mean over the last axis (scores are identified only up to a shift)."""
    x = np.asarray(x, dtype=np.float64)
    return x - x.mean(axis=-1, keepdims=True)


def series(models: tuple[str, ...] | list[str], values: np.ndarray) -> pd.Series:
    """Scores as a float Series indexed by model, the shape every ranker returns."""
    return pd.Series(
        np.asarray(values, dtype=np.float64), index=pd.Index(list(models), name="model"), name="score"
    )


def check_stack(stack: GraphStack, ranker: str) -> None:
    """Refuse to rank nothing: an empty stack or fewer than two models is a user mistake."""
    if stack.n < 2:
        raise LensError(f"The {ranker} ranker needs at least two models, but the selection has {stack.n}.")
    if stack.T == 0 or not stack.observed.any():
        raise LensError(f"The {ranker} ranker got no compared pair: the selection holds no valid verdict.")


RankerFn = Callable[..., RankResult]
RANKERS: dict[str, RankerFn] = {}
RANKER_HELP: dict[str, str] = {}


def register(name: str, help_text: str) -> Callable[[RankerFn], RankerFn]:
    """Decorator: add a ranker ``fn(stack, **params) -> RankResult`` to the registry under ``name``."""

    def deco(fn: RankerFn) -> RankerFn:
        RANKERS[name] = fn
        RANKER_HELP[name] = help_text
        return fn

    return deco


def adjacency_frame(models: tuple[str, ...] | list[str], mat: np.ndarray) -> pd.DataFrame:
    """An (n, n) adjacency or weight matrix as a DataFrame with models on both axes (row beats column)."""
    idx = pd.Index(list(models), name="model")
    return pd.DataFrame(np.asarray(mat), index=idx, columns=pd.Index(list(models), name="opponent"))


