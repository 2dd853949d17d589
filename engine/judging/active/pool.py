"""The candidate pool of active judging: every call a strategy may choose to make, as arrays.

One pool item is one thing a strategy can ask for and pay for: in a replay (``--backend replay``) one
stored verdict of the source dataset (a battle of a battle log, one presentation order of a pair on a
prompt, one judge's or one annotator's vote); in a run with a model judge one pair of answers on a
prompt instance, judged by the run's protocol (``single``: one item per presentation order, each one
call; the other protocols ask both orders in one item). Items are numbered 0 … n-1 and never reorder,
so "the calls revealed" is a boolean mask over the pool and a seed reproduces a run.

Arrays (length n): ``prompt`` (index into ``prompt_table``, a prompt instance: prompt_id, variant,
turn), ``a`` and ``b`` (indices into ``models``: model_a and model_b as the verdict names them, model_a
shown first when ``order`` is 0), ``order`` (0 AB, 1 BA, -1 not fixed: the protocol asks both),
``judge`` (index into ``judges``). Derived: the unordered ``pair`` (lo · M + hi) and the ``instance``
(prompt, unordered pair): two items of one instance are a re-judging of one edge of that prompt's
tournament graph (the other order, another judge or annotator).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine.errors import LensError

ACTIVE_MODELS_MAX = 2_000
"""Most models an active run takes: its fit inverts a dense (models x models) information matrix."""

INSTANCE_COLUMNS = ("prompt_id", "variant", "turn", "variant_kind", "category")
"""The columns of ``Pool.prompt_table`` (one row per prompt instance)."""

_ORDER_CODE = {"AB": 0, "BA": 1}


@dataclass(frozen=True, eq=False)
class Pool:
    """The items a strategy chooses among (module docstring); ``calls_per_item``: calls one item asks
    (1 for a replay or the single protocol, 2 for swapped, hybrid and soft; hybrid may ask 2 more)."""

    models: tuple[str, ...]
    judges: tuple[str, ...]
    prompt_table: pd.DataFrame
    prompt: np.ndarray
    a: np.ndarray
    b: np.ndarray
    order: np.ndarray
    judge: np.ndarray
    calls_per_item: int = 1
    _derived: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        n = len(self.prompt)
        for name in ("a", "b", "order", "judge"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"pool array {name!r} has {len(getattr(self, name))} items, not {n}")
        if len(self.models) > ACTIVE_MODELS_MAX:
            raise LensError(
                f"Active judging takes at most {ACTIVE_MODELS_MAX:,} models (its fit inverts a dense "
                f"information matrix); this pool has {len(self.models):,}; choose fewer with --models."
            )

    def __len__(self) -> int:
        return len(self.prompt)

    @property
    def n_models(self) -> int:
        return len(self.models)

    def _cached(self, name: str, make):
        if name not in self._derived:
            self._derived[name] = make()
        return self._derived[name]

    @property
    def lo(self) -> np.ndarray:
        """The smaller model index of each item's pair."""
        return self._cached("lo", lambda: np.minimum(self.a, self.b))

    @property
    def hi(self) -> np.ndarray:
        """The larger model index of each item's pair."""
        return self._cached("hi", lambda: np.maximum(self.a, self.b))

    @property
    def pair(self) -> np.ndarray:
        """The unordered model pair of each item as one int64: lo · M + hi."""
        return self._cached("pair", lambda: self.lo.astype(np.int64) * self.n_models + self.hi)

    @property
    def pair_values(self) -> np.ndarray:
        """The distinct ``pair`` values, sorted: ``pair_id`` numbers them 0 … P-1."""
        return self._unique_pairs()[0]

    @property
    def pair_id(self) -> np.ndarray:
        """Each item's pair as a dense number 0 … P-1 (an index into ``pair_values``)."""
        return self._unique_pairs()[1]

    def _unique_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        def make():
            # pairs are < M² <= 4M: a presence table numbers them in one pass, as np.unique's sorted
            # values and inverse would (0.2 s of CPU saved at 1M items)
            present = np.bincount(self.pair, minlength=self.n_models * self.n_models) > 0
            values = np.flatnonzero(present).astype(np.int64)
            number = np.cumsum(present, dtype=np.int64) - 1
            return values, number[self.pair]

        return self._cached("unique_pairs", make)

    def pair_index(self, x: int, y: int) -> int:
        """The ``pair_id`` of models x and y (either order), or -1 when the pool has no item of that pair."""
        value = min(x, y) * self.n_models + max(x, y)
        at = int(np.searchsorted(self.pair_values, value))
        return at if at < len(self.pair_values) and self.pair_values[at] == value else -1

    @property
    def instance(self) -> np.ndarray:
        """(prompt instance, unordered pair) of each item as one int64: items sharing it judge one edge."""
        m2 = self.n_models * self.n_models
        return self._cached("instance", lambda: self.prompt.astype(np.int64) * m2 + self.pair)


def _codes(values: pd.Series) -> tuple[np.ndarray, tuple[str, ...]]:
    codes, uniques = pd.factorize(values.astype(str), sort=True)
    return codes.astype(np.int32), tuple(str(u) for u in uniques)


def pool_from_verdicts(verdicts: pd.DataFrame, *, what: str = "The source", calls_per_item: int = 1) -> Pool:
    """One item per verdict row (a replay's pool: SRC's battles, orders, judges and annotators).

    ``verdicts`` has the canonical columns prompt_id, variant, turn, model_a, model_b, order, judge
    (variant_kind and category are kept for the rows a replay writes). Rows whose two models are the
    same are not comparisons and are left out by the caller (``replay``); here they are refused.
    """
    if verdicts.empty:
        raise LensError(f"{what} holds no verdicts to choose from.")
    if (verdicts["model_a"] == verdicts["model_b"]).any():
        raise LensError(f"{what} has a verdict of a model against itself; it cannot be a pool item.")
    name_a, name_b = verdicts["model_a"].astype(str), verdicts["model_b"].astype(str)
    # the distinct names by hashing (pd.unique), not a Python set over every row: 2.4 s of CPU at 1M rows
    models = tuple(sorted({str(x) for x in pd.unique(name_a)} | {str(x) for x in pd.unique(name_b)}))
    a = pd.Categorical(name_a, categories=models).codes.astype(np.int32)
    b = pd.Categorical(name_b, categories=models).codes.astype(np.int32)
    judge, judges = _codes(verdicts["judge"])
    inst = instance_table(verdicts)
    prompt = inst.groupby(["prompt_id", "variant", "turn"], sort=True).ngroup().to_numpy(np.int32)
    first = pd.Series(np.arange(len(prompt))).groupby(prompt).first().to_numpy()
    table = inst.iloc[first].reset_index(drop=True)
    order = verdicts["order"].map(_ORDER_CODE).fillna(-1).to_numpy(np.int8)
    return Pool(models, judges, table, prompt, a, b, order, judge, calls_per_item)


def instance_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The ``INSTANCE_COLUMNS`` of verdict rows as ``Pool.prompt_table`` holds them (variant 0 and turn 1
    where missing, prompt ids as text); one helper, so every way of building a pool types them alike."""
    inst = verdicts.reindex(columns=list(INSTANCE_COLUMNS))
    inst["variant"] = inst["variant"].fillna(0).astype("int64")
    inst["turn"] = inst["turn"].fillna(1).astype("int64")
    inst["prompt_id"] = inst["prompt_id"].astype(str)
    return inst
