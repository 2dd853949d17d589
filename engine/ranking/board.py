"""The leaderboard as a result: its table's columns, what its counts are, and the ``Leaderboard`` that
carries the table with the parameters that produced it (shared by the graph and the count paths)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.frames import pd
from engine.graphs.stack import DEFAULT_POLICY
from engine.rankers import RankResult, ranker_object
from engine.rankers.objects import Ranker

if TYPE_CHECKING:  # named in annotations only: engine.ranking.bootstrap loads where a bootstrap runs
    from engine.ranking.bootstrap import BootstrapResult


@dataclass(frozen=True)
class BoardSpec:
    """How to rank a selection: the ranker and its parameters, keep-K truncation, the bootstrap and the
    combine policy. One object travels from the CLI and the app through ``leaderboard`` to the graph and
    count paths (``leaderboard_from_stack``, ``leaderboard_from_votes``, ``leaderboard_from_counts``), so a
    choice is named once and cannot be dropped on the way. What is ranked (store, dataset, judge,
    category, or a stack or votes) is passed beside it."""

    ranker: str = "bt"
    ranker_params: dict[str, Any] = field(default_factory=dict, hash=False)
    """The ranker's parameters (``--param``, ``--judge-weight``), checked by the ranker's object."""
    keep_k: int | None = None
    """Keep the K graphs with the smallest S_mu (None: rank every graph)."""
    mu: float = 1.0
    per_category: bool = False
    pool: str = "perturbed"
    bootstrap: int = 0
    """Bootstrap resamples for the intervals (0: none)."""
    seed: int = 0
    level: float = 0.95
    bootstrap_unit: str | None = None
    """graph, prompt or vote (None: the ranker's own unit)."""
    policy: str = DEFAULT_POLICY
    # issue 24, style control and sandwich intervals (engine.ranking.style_board)
    ci: str | None = None
    """How the intervals are made: "sandwich" (H^-1 G H^-1, a logistic ranker only) or "bootstrap" (None:
    sandwich under style control, as LMArena's default, else bootstrap)."""
    style_control: bool = False
    """Fit the style-controlled Bradley-Terry (the verdicts' style counts as covariates)."""
    style_reweight: bool = True
    """Under style control: weigh each vote by 1 / max(votes of its pair, 50) (arena-rank's default)."""

    @property
    def ci_method(self) -> str:
        """The interval method this spec asks for: the explicit ``ci`` or its default."""
        return self.ci or ("sandwich" if self.style_control else "bootstrap")

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranker_params", dict(self.ranker_params or {}))

    @property
    def obj(self) -> Ranker:
        """The ranker's object (an unknown name is a user error naming the choices)."""
        return ranker_object(self.ranker)

    @classmethod
    def of(cls, spec: BoardSpec | None, choices: dict[str, Any]) -> BoardSpec:
        """``spec`` with the keyword ``choices`` applied (a library caller's shorthand: ``ranker="elo"``);
        an unknown choice is a TypeError naming it."""
        base = cls() if spec is None else spec
        return replace(base, **choices) if choices else base


TABLE_COLUMNS = (
    "rank", "model", "score", "ci_low", "ci_high", "rank_low", "rank_high", "rank_ub", "wins", "losses",
    "ties", "win_rate", "n_graphs_model", "votes", "n_prompts", "component", "ci_note",
)
"""wins / losses / ties / votes count votes on the count path (params["unit"] == "votes") and graph
edges on the stack path ("graphs"); on data with one verdict pair per graph and pair they agree.
``rank_ub`` is ``rank_upper_bound`` of the score interval (ci_low, ci_high)."""

UNIT_NOTES = {
    "votes": (
        "counts are votes: one per judge, annotator and battle on a pair in a graph (its two presentation "
        "orders combined by the policy); repeated votes count"
    ),
    "graphs": "counts are graph edges: all verdicts on a pair in one graph combined by the policy into one",
}


@dataclass(frozen=True)
class Missing:
    """A table column without a value in any row, of a pandas dtype that holds missing values (``Int64``
    for the rank intervals, ``string`` for ``ci_note``): what a board without a bootstrap has, named
    without building pandas arrays."""

    dtype: str


@dataclass(frozen=True)
class Typed:
    """A table column held as plain values (an int64 array with no missing value, a list of texts) that the
    DataFrame holds as a pandas dtype (``Int64``, ``string``): ``frame_columns`` builds the pandas array, the
    command line prints the values (the same text), so a bootstrap board prints without pandas."""

    values: Any
    dtype: str


@dataclass(frozen=True)
class BoardRows:
    """The board's table as columns before pandas: name -> a numpy array, a list of model names, a pandas
    array (paths that already use pandas) or ``Missing``, one row per model, best first. The count path
    builds its table as these, so a command that prints the plain board never imports pandas (issue 26,
    point 5); ``frame()`` is the same table as a DataFrame for every other reader."""

    columns: dict[str, Any]

    @classmethod
    def ranked(cls, columns: dict[str, Any]) -> BoardRows:
        """The rows sorted by (rank, model), as ``sort_values(["rank", "model"], kind="stable")`` sorts
        them (a missing rank last), with the columns in ``TABLE_COLUMNS`` order."""
        rank, models = columns["rank"], list(columns["model"])
        missing = np.isnan(np.asarray(rank, dtype=np.float64))
        order = sorted(range(len(models)),
                       key=lambda i: (bool(missing[i]), 0 if missing[i] else rank[i], models[i]))
        take = np.asarray(order, dtype=np.intp)
        out: dict[str, Any] = {}
        for name in TABLE_COLUMNS:
            col = columns[name]
            if isinstance(col, Missing):
                out[name] = col
            elif isinstance(col, Typed):
                values = col.values
                out[name] = Typed([values[i] for i in order] if isinstance(values, list) else values[take],
                                  col.dtype)
            elif isinstance(col, list):
                out[name] = [col[i] for i in order]
            else:
                out[name] = col[take]
        return cls(out)

    def __len__(self) -> int:
        return len(self.columns["model"])

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame (``Missing`` columns as all-<NA> arrays of their dtype)."""
        return pd.DataFrame(frame_columns(self.columns, len(self)))


@dataclass(frozen=True)
class Leaderboard:
    """``table`` (one row per model, best first), ``params`` (what produced it), the graphs ranked
    (``kept``: with keep-K, the kept-graph table in keep order with each graph's S_mu).

    ``rows`` is the table as built: a DataFrame, or ``BoardRows`` (the count path) whose DataFrame
    ``table`` is made on first read; the plain command line prints ``rows`` without pandas."""

    rows: pd.DataFrame | BoardRows
    params: dict[str, Any]
    n_graphs: int
    kept_graphs: pd.DataFrame | None
    """The kept-graph table (None: the count path without keep-K, whose ``kept`` is an empty frame)."""
    result: RankResult = field(repr=False)
    bootstrap: BootstrapResult | None = field(default=None, repr=False)
    covariance: pd.DataFrame | None = field(default=None, repr=False)
    """With sandwich intervals: the sandwich covariance H^-1 G H^-1 of the fit's natural-log strengths
    (models x models), for quantities of several strengths, e.g. a win rate against a baseline."""

    @property
    def table(self) -> pd.DataFrame:
        """The table, one row per model, best first (built once from ``BoardRows``)."""
        if not isinstance(self.rows, BoardRows):
            return self.rows
        built = self.__dict__.get("_table_frame")
        if built is None:
            built = self.rows.frame()
            self.__dict__["_table_frame"] = built
        return built

    @property
    def kept(self) -> pd.DataFrame:
        """The graphs ranked (with keep-K: the kept-graph table in keep order); an empty frame where the
        count path ranked votes without keep-K."""
        return pd.DataFrame() if self.kept_graphs is None else self.kept_graphs

    @property
    def ranks(self) -> pd.Series:
        """Rank per model."""
        return self.table.set_index("model")["rank"]

    @property
    def scores(self) -> pd.Series:
        """Score per model."""
        return self.table.set_index("model")["score"]


NOT_ESTIMABLE = "not estimable"
"""The table's ``ci_note`` where a model's bootstrap interval cannot be estimated (its ci_low, ci_high,
rank_low and rank_high are then empty; ``BootstrapResult.not_estimable`` says why)."""


def rank_upper_bound(ci_low, ci_high) -> np.ndarray:
    """LMArena's "rank (UB)" from score intervals: 1 + the number of models whose interval lies wholly
    above this model's, i.e. whose lower bound is strictly greater than this model's upper bound. A
    model no interval separates from the top ranks 1: the best rank its interval allows.

    Equal bounds (lower_j == upper_i) do not separate two models. A missing bound (NaN: an interval
    that is not estimable) is read as unbounded on that side, so such a model is never counted above
    another and ranks 1 itself, as FastChat's pairwise comparison ``q025_j > q975_i`` treats a NaN
    (false either way). O(n log n): each upper bound is searched in the sorted lower bounds."""
    low = np.asarray(ci_low, dtype=np.float64)
    high = np.asarray(ci_high, dtype=np.float64)
    if low.shape != high.shape or low.ndim != 1:
        raise ValueError("ci_low and ci_high must be 1-D arrays of one length")
    low = np.where(np.isnan(low), -np.inf, low)
    high = np.where(np.isnan(high), np.inf, high)
    above = low.size - np.searchsorted(np.sort(low), high, side="right")
    return (1 + above).astype(np.int64)


def interval_columns(boot: BootstrapResult | None, models: list[str]) -> dict[str, Any]:
    """The table's interval columns for ``models``: ci_low, ci_high, rank_low, rank_high (empty without
    a bootstrap, and where an interval is not estimable), ``rank_ub`` (``rank_upper_bound`` of the
    score intervals; empty without a bootstrap) and ``ci_note`` (``NOT_ESTIMABLE`` there, '' where
    estimated, <NA> without a bootstrap). Shared by the graph and the count paths; the empty columns are
    ``Missing`` (``frame_columns`` turns them into pandas arrays for a DataFrame's ``assign``)."""
    n = len(models)
    if boot is None:  # Missing columns: no pandas array for a board without a bootstrap (``BoardRows``)
        return {"ci_low": np.full(n, np.nan), "ci_high": np.full(n, np.nan), "rank_low": Missing("Int64"),
                "rank_high": Missing("Int64"), "rank_ub": Missing("Int64"), "ci_note": Missing("string")}
    at = {m: i for i, m in enumerate(boot.models)}
    if all(m in at for m in models):  # every board model resampled: the columns from arrays, no pandas
        take = np.asarray([at[m] for m in models], dtype=np.intp)
        low, high = (b[take] for b in boot.interval_bounds(ranks=False))
        rank_low, rank_high = (b[take] for b in boot.interval_bounds(ranks=True))
        if not (np.isnan(rank_low).any() or np.isnan(rank_high).any()):  # else Int64 with <NA>: pandas below
            reasons = boot.not_estimable_reasons()
            return {
                "ci_low": low, "ci_high": high,
                "rank_low": rank_low.astype(np.int64), "rank_high": rank_high.astype(np.int64),
                "rank_ub": Typed(rank_upper_bound(low, high), "Int64"),
                "ci_note": Typed([NOT_ESTIMABLE if reasons[i] else "" for i in take], "string"),
            }
    sci, rci = boot.scores_ci.reindex(models), boot.ranks_ci.reindex(models)
    why = boot.not_estimable.reindex(models).fillna("").to_numpy()
    low, high = sci["low"].to_numpy(np.float64), sci["high"].to_numpy(np.float64)
    return {
        "ci_low": low, "ci_high": high,
        "rank_low": rci["low"].to_numpy(), "rank_high": rci["high"].to_numpy(),
        "rank_ub": pd.array(rank_upper_bound(low, high), dtype="Int64"),
        "ci_note": pd.array([NOT_ESTIMABLE if w else "" for w in why], dtype="string"),
    }


def frame_columns(columns: dict[str, Any], n: int) -> dict[str, Any]:
    """``columns`` for a DataFrame of ``n`` rows: each ``Missing`` column an all-<NA> array of its dtype, each
    ``Typed`` column its values as a pandas array of its dtype."""
    out = dict(columns)
    for name, col in columns.items():
        if isinstance(col, Typed):
            out[name] = pd.array(col.values, dtype=col.dtype)
        elif isinstance(col, Missing):
            dtype: Any = col.dtype  # "Int64" or "string": pandas' stubs type each name apart
            out[name] = pd.array([pd.NA] * n, dtype=dtype)
    return out


def components_of(compared, models: list[str]) -> tuple[np.ndarray, list[list[str]] | None]:
    """(the table's ``component`` per model, the models of each component or None when there is one).

    Component k holds models linked by a chain of comparisons (``engine.graphs.reachability.
    comparison_components``: 1 = the largest); no verdict links two components, so a score or rank is
    comparable only with those of its own component. ``compared``: an (n, n) matrix, or the compared
    pairs as a tuple (lo, hi) of model indices."""
    from engine.graphs.reachability import comparison_components, pair_components

    if isinstance(compared, tuple):
        label = pair_components(len(models), *compared)
    else:
        label = comparison_components(compared)
    if label.size == 0 or label.max() <= 1:
        return label, None
    order = np.argsort(label, kind="stable")  # models keep their order inside a component
    bounds = np.cumsum(np.bincount(label)[1:])[:-1]
    return label, [list(g) for g in np.split(np.asarray(models, dtype=object)[order], bounds)]


def not_estimable_params(boot: BootstrapResult | None) -> dict[str, str] | None:
    """Model -> why its interval is not estimable (for the board's params and notes); None without a
    bootstrap."""
    if boot is None:
        return None
    return {str(m): str(w) for m, w in zip(boot.models, boot.not_estimable_reasons(), strict=True) if w}


def plain_values(v: Any) -> Any:
    """NumPy scalars, lists and dicts of them as plain Python values (for JSON and the params dict)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [plain_values(x) for x in v]
    if isinstance(v, dict):
        return {k: plain_values(x) for k, x in v.items()}
    return v
