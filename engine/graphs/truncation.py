"""Cycle-aware truncation: score each graph by its bad short cycles and keep the K most consistent.

Paper 000, Section 3.1 / Appendix A.2: a graph's truncation score is
``S = λ3·C3_bad + λ4·C4_bad`` (the paper's ``S_mu = C3_bad + mu·C4_bad`` is λ3 = 1, λ4 = mu; any
real λ is allowed, so a score can be negative). Keep-K keeps the K graphs with the smallest score,
over the whole pool or K per category, and reports the threshold ``S_K`` (the largest kept score).
A K larger than the pool (or than a category, per category) keeps all of it, and the selection
says which groups were capped. Equal scores are ordered by the graph key (dataset, judge,
prompt_id, variant, turn), prompt ids compared naturally (``"2" < "10"``), so a selection never
depends on row order or on the random state.

Scores always come from the graphs as judged, over every model in them: leaving out models
(e.g. those without a reference rating) happens after truncation, for ranking and distances only.

Pools (which graphs may be kept): ``perturbed`` = originals + paraphrases (the paper's Trunc, the
default), ``sampling`` = originals + sampling replicates (the sampling-only control), ``all``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.key_order import key_rank
from engine.store.schema import GRAPH_KEY

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack

POOLS: tuple[str, ...] = ("perturbed", "sampling", "all")
"""perturbed: originals + paraphrases (default); sampling: originals + sampling replicates
(the control of paper 000, Figure 6); all: every graph."""


@dataclass(frozen=True)
class Selection:
    """Which graphs keep-K kept.

    ``index``: positional indices (into the scored pool) of the kept graphs, sorted ascending;
    ``threshold``: S_K, the largest kept score (a float, or a Series by category when per category);
    ``k``: K; ``scores``: the score of every graph in the pool; ``capped``: group → graphs kept
    where the group (the pool, or a category) had fewer than K graphs; ``note``: that, in words.
    """

    index: np.ndarray
    threshold: float | pd.Series
    k: int
    scores: np.ndarray
    capped: dict[str, int] = field(default_factory=dict)

    @property
    def n_kept(self) -> int:
        """How many graphs the selection kept (K, or fewer where a group held fewer)."""
        return int(self.index.size)

    @property
    def note(self) -> str:
        """One sentence naming the groups that held fewer than K graphs; empty when none did."""
        if not self.capped:
            return ""
        parts = ", ".join(f"{g} keeps all {m}" for g, m in self.capped.items())
        return f"K = {self.k} is more than some groups hold: {parts}."


def truncation_scores(
    counts: pd.DataFrame, mu: float = 1.0, lam3: float = 1.0, lam4: float | None = None
) -> np.ndarray:
    """S = lam3·C3_bad + lam4·C4_bad per graph (lam4 = mu when not given); paper 000, Section 4.1 and Appendix
    A.2.

    ``counts`` is the frame of ``engine.graphs.cycles.cycle_counts`` (columns ``c3_bad``, ``c4_bad``).
    The weights are any finite real numbers (the paper's λ ∈ ℝ²).
    """
    missing = [c for c in ("c3_bad", "c4_bad") if c not in counts.columns]
    if missing:
        raise LensError(f"The cycle-count table lacks the column(s) {', '.join(missing)}.")
    w3, w4 = check_weights(mu, lam3, lam4)
    c3 = counts["c3_bad"].to_numpy(dtype=np.float64)
    c4 = counts["c4_bad"].to_numpy(dtype=np.float64)
    return w3 * c3 + w4 * c4


SCORES: dict[str, str] = {
    "coverage": "bad cycles per cycle the graph's compared pairs could carry, in units of the best-covered "
                "graph scored with it (S_mu itself where every graph compared the same pairs)",
    "raw": "S_mu as counted (paper 000, Section 4.1 and Appendix A.2), whatever pairs the graph compared",
}
"""How a graph's truncation score treats missing pairs; ``coverage`` is the default (docs/notes/cycles.md)."""
DEFAULT_SCORE = "coverage"


def check_score(score: str) -> str:
    """The score kind, checked against ``SCORES``."""
    if score not in SCORES:
        raise LensError(f"Unknown truncation score {score!r}; choose one of {', '.join(SCORES)}.")
    return score


def can_hold_cycle(capacity: pd.DataFrame) -> np.ndarray:
    """(T,) bool: the graph's compared pairs could carry a bad 3- or 4-cycle
    (engine.graphs.cycles.cycle_capacity)."""
    return ((capacity["cap3"].to_numpy() + capacity["cap4"].to_numpy()) > 0)


def graph_scores(
    counts: pd.DataFrame, capacity: pd.DataFrame, *, mu: float = 1.0, lam3: float = 1.0,
    lam4: float | None = None, score: str = DEFAULT_SCORE, among: np.ndarray | None = None,
    reference: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(score, coverage) per graph, comparable across graphs that compared different pairs.

    ``capacity`` (engine.graphs.cycles.cycle_capacity): the bad 3- / 4-cycles each graph's compared
    pairs could carry, cap3 and cap4. The reference R3, R4 is the largest capacity among the
    graphs scored together (``among``: positions, default all). ``coverage`` scales each length
    by R/cap: S = λ3·C3_bad·R3/cap3 + λ4·C4_bad·R4/cap4 (a length the graph cannot carry adds 0),
    the score the graph would have if its rate of bad cycles held on the best-covered graph;
    equal to the raw S where cap = R. ``raw``: λ3·C3_bad + λ4·C4_bad. Coverage per graph is
    (cap3 + cap4) / (R3 + R4), NaN where the reference carries no cycle. ``reference``: (R3, R4) given, not
    taken from ``capacity`` (graphs scored in pieces against the largest capacity of them all).
    """
    check_score(score)
    raw = truncation_scores(counts, mu=mu, lam3=lam3, lam4=lam4)
    cap3 = capacity["cap3"].to_numpy(np.float64)
    cap4 = capacity["cap4"].to_numpy(np.float64)
    if reference is None:
        idx = np.arange(len(cap3)) if among is None else np.asarray(among, dtype=np.int64)
        reference = (float(cap3[idx].max(initial=0.0)), float(cap4[idx].max(initial=0.0)))
    r3, r4 = reference
    coverage = np.full(len(cap3), np.nan)
    if r3 + r4 > 0:
        coverage = (cap3 + cap4) / (r3 + r4)
    if score == "raw":
        return raw, coverage
    w3, w4 = check_weights(mu, lam3, lam4)
    f3 = np.divide(r3, cap3, out=np.zeros_like(cap3), where=cap3 > 0)
    f4 = np.divide(r4, cap4, out=np.zeros_like(cap4), where=cap4 > 0)
    c3 = counts["c3_bad"].to_numpy(np.float64)
    c4 = counts["c4_bad"].to_numpy(np.float64)
    return w3 * c3 * f3 + w4 * c4 * f4, coverage


def check_weights(mu: float = 1.0, lam3: float = 1.0, lam4: float | None = None) -> tuple[float, float]:
    """(λ3, λ4) as floats (λ4 = mu unless given); refuses a weight that is not a finite number."""
    out = []
    for name, v in (("lam3", lam3), ("mu/lam4", mu if lam4 is None else lam4)):
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise LensError(f"The truncation weight {name} must be a number; got {v!r}.") from None
        if not np.isfinite(x):
            raise LensError(f"The truncation weight {name} must be a finite number; got {x}.")
        out.append(x)
    return out[0], out[1]


def is_sample(keys: pd.DataFrame) -> np.ndarray:
    """Sampling replicates (``variant_kind == "sample"``)."""
    if "variant_kind" not in keys:
        return np.zeros(len(keys), dtype=bool)
    return (keys["variant_kind"].astype("string") == "sample").fillna(False).to_numpy(dtype=bool)


def is_original(keys: pd.DataFrame) -> np.ndarray:
    """Original prompts: ``variant_kind == "original"`` (or variant 0 when the kind is unknown)."""
    variant = pd.to_numeric(keys["variant"]).to_numpy()
    if "variant_kind" not in keys:
        return variant == 0
    kind = keys["variant_kind"].astype("string").fillna("original").to_numpy(dtype=object)
    return (kind == "original") | ((variant == 0) & (kind != "sample"))


def pool_mask(keys: pd.DataFrame, pool: str = "perturbed") -> np.ndarray:
    """Which graphs belong to a pool (see ``POOLS``)."""
    if pool not in POOLS:
        raise LensError(f"Unknown pool {pool!r}; choose one of {', '.join(POOLS)}.")
    if pool == "all":
        return np.ones(len(keys), dtype=bool)
    samp = is_sample(keys)
    return ~samp if pool == "perturbed" else (samp | is_original(keys))


def check_k(k, n_pool: int | None = None) -> int:
    """K as an int: a whole number of at least 1 and, when ``n_pool`` is given (the app's slider,
    which never offers more), at most the pool size. Elsewhere a K above a group's size keeps it all."""
    try:
        k_int = int(k)
    except (TypeError, ValueError):
        k_int = None
    if k_int is None or k_int != k or (n_pool is not None and not 1 <= k_int <= n_pool):
        bound = "" if n_pool is None else f" between 1 and the pool size {n_pool}"
        raise LensError(f"K must be a whole number{bound}; got {k!r}.")
    if k_int < 1:
        raise LensError(f"K must be at least 1; got {k_int}.")
    return k_int


def keep_pool(keys: pd.DataFrame, capacity: pd.DataFrame, pool: str = "perturbed") -> tuple[np.ndarray, int]:
    """(positions of the ``pool`` graphs that can hold a cycle, how many pool graphs cannot): the graphs
    keep-K chooses from. A graph that cannot hold a cycle scores 0, which is no evidence of consistency."""
    member = pool_mask(keys, pool)
    holds = can_hold_cycle(capacity)
    return np.flatnonzero(member & holds), int((member & ~holds).sum())


def no_cycle_refusal(pool: str, n_no_cycle: int) -> LensError:
    """The one sentence keep-K refuses with when no graph of the pool can hold a cycle."""
    return LensError(f"No graph of the {pool} pool can hold a cycle ({n_no_cycle} graph"
                     f"{'s' if n_no_cycle != 1 else ''}, each with fewer than 3 models or no compared "
                     "triple), so keep-K has no score to keep graphs by.")


@dataclass(frozen=True)
class PoolScores:
    """Keep-K's scores of one selection under one weighting, computed once and shared by every K.

    ``pos``: positions of the pool graphs that can hold a cycle (ascending; what keep-K chooses
    from); ``n_no_cycle``: pool graphs left out because they cannot hold a cycle; ``scores``: every
    graph's keep-K score (``graph_scores`` with the reference capacity over ``pos``); ``coverage``
    and ``raw`` (S as counted) per graph; ``score_kind``: coverage or raw.
    """

    pos: np.ndarray
    n_no_cycle: int
    scores: np.ndarray
    coverage: np.ndarray
    raw: np.ndarray
    score_kind: str = DEFAULT_SCORE

    def keep(self, k: int, tie_rank: np.ndarray, among: np.ndarray | None = None,
             groups: np.ndarray | None = None) -> np.ndarray:
        """``keep_k_index`` on these scores: the ``k`` smallest within ``among`` (default the pool)."""
        return keep_k_index(
            self.scores, tie_rank, k, among=self.pos if among is None else among, groups=groups
        )


def keep_k_scores(
    keys: pd.DataFrame, counts: pd.DataFrame, capacity: pd.DataFrame | None, *, pool: str = "perturbed",
    mu: float = 1.0, lam3: float = 1.0, lam4: float | None = None, score: str = DEFAULT_SCORE,
    pos: np.ndarray | None = None,
) -> PoolScores:
    """THE keep-K scoring: the pool (``keep_pool``: graphs that cannot hold a cycle stay out) and every
    graph's score with the coverage reference taken over that pool, once. The CLI's ``keep_k_graphs``,
    the app's slider (``engine.views.appstate.SliderContext.kept``) and the curves
    (``engine.experiments.curves``) all score through here, so none can take its reference over another
    set of graphs. ``pos``: the pool positions when already known (the app's slider computes them once
    per selection); ``capacity`` None (a hand-built context without it): raw S over the given ``pos``.
    """
    check_score(score)
    raw = truncation_scores(counts, mu=mu, lam3=lam3, lam4=lam4)
    n_no_cycle = 0
    if capacity is None:
        pos = np.arange(len(keys)) if pos is None else np.asarray(pos, dtype=np.int64)
        return PoolScores(pos, 0, raw, np.full(len(raw), np.nan), raw, "raw")
    if pos is None:
        pos, n_no_cycle = keep_pool(keys, capacity, pool)
    pos = np.asarray(pos, dtype=np.int64)
    scores, coverage = graph_scores(counts, capacity, mu=mu, lam3=lam3, lam4=lam4, score=score, among=pos)
    return PoolScores(pos, n_no_cycle, scores, coverage, raw, score)


def keep_k_order(scores: np.ndarray, tie_rank: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """The positions ``among`` (default all) from the smallest score up, equal scores in graph-key order
    (``tie_rank``): keep-K keeps a prefix of it (``keep_k_index``), so the app's slider computes it once
    per mu and cuts every K from it (``engine.views.appstate.SliderContext.ordering``)."""
    pos = np.arange(len(scores)) if among is None else np.asarray(among, dtype=np.int64)
    return pos[np.lexsort((np.asarray(tie_rank)[pos], np.asarray(scores)[pos]))]


def keep_k_index(
    scores: np.ndarray, tie_rank: np.ndarray, k: int, among: np.ndarray | None = None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """THE keep-K: positions of the ``k`` graphs of smallest score, sorted ascending.

    ``scores`` and ``tie_rank`` (``key_rank``: the graph-key order, so equal scores never depend on row
    order) have one entry per graph; ``among``: the pool's positions (default all); ``groups``: one
    group code per graph to keep ``k`` per group (per category). A pool or group with fewer than ``k``
    graphs keeps them all. The app's slider, the CLI's ``--keep-k``, the curves and the protocols all
    select through this function (the first three on ``keep_k_scores``' scores).
    """
    order = keep_k_order(scores, tie_rank, among)
    if groups is None:
        return np.sort(order[:k])
    codes = np.asarray(groups)[order]
    # rank of each graph within its group along the (score, key) order: a stable sort by group keeps
    # that order inside each block, then subtract each block's start
    by_group = np.argsort(codes, kind="stable")
    sorted_codes = codes[by_group]
    starts = np.searchsorted(sorted_codes, sorted_codes, side="left")
    within = np.empty(order.size, dtype=np.int64)
    within[by_group] = np.arange(order.size) - starts
    return np.sort(order[within < k])


def select_keep_k(
    scores: np.ndarray, keys: pd.DataFrame, k: int, per_category: bool = False
) -> Selection:
    """Keep the K graphs with the smallest score (K per category when ``per_category``).

    Ties in score are broken by graph key (see module docstring). ``keys`` has one row per score
    (the ``GraphStack.keys`` frame); per category it needs a ``category`` column. A group with
    fewer than K graphs keeps them all (``Selection.capped`` says which).
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or len(keys) != s.size:
        raise LensError(f"There are {s.size} scores but {len(keys)} graph keys; they must match one to one.")
    if np.isnan(s).any():
        raise LensError(
            f"Graph at position {int(np.flatnonzero(np.isnan(s))[0])} has no truncation score (NaN)."
        )
    k_int = check_k(k)
    if s.size == 0:
        raise LensError("There are no graphs to keep.")
    keys = keys.reset_index(drop=True)
    if not per_category:
        kept = keep_k_index(s, key_rank(keys), k_int)
        capped = {"the pool": int(s.size)} if k_int > s.size else {}
        return Selection(index=kept, threshold=float(s[kept].max()), k=k_int, scores=s, capped=capped)
    if "category" not in keys.columns:
        raise LensError("Per-category keep-K needs a category for every graph, and the keys have none.")
    cats = keys["category"].astype("string")
    if cats.isna().any():
        pos = int(np.flatnonzero(cats.isna().to_numpy())[0])
        raise LensError(f"Graph at position {pos} has no category, so per-category keep-K cannot place it.")
    cat_codes, uniques = pd.factorize(cats, sort=True)
    kept = keep_k_index(s, key_rank(keys), k_int, groups=cat_codes)
    thr = pd.Series(s[kept], index=cats.to_numpy()[kept]).groupby(level=0).max()
    thr.index.name = "category"
    thr.name = "threshold"
    sizes = np.bincount(cat_codes, minlength=len(uniques))
    capped = {str(uniques[c]): int(sizes[c]) for c in range(len(uniques)) if sizes[c] < k_int}
    return Selection(index=kept, threshold=thr.astype(float), k=k_int, scores=s, capped=capped)


@dataclass(frozen=True)
class KeptGraphs:
    """The graphs keep-K kept from a stack, for a leaderboard to rank and a person to read.

    ``index``: positions in the stack of the kept graphs (ascending); ``table``: one row per kept
    graph in keep order (smallest score first, ties by graph key) with its key, category, kind,
    ``c3_bad``, ``c4_bad``, ``coverage``, ``raw_score`` (S_mu as counted) and ``score`` (the one
    keep-K sorted by, see ``SCORES``); ``threshold``: S_K (a float, or a Series by category);
    ``selection``: the underlying Selection (positions into the scored pool); ``pool``: the pool's
    name; ``n_pool``: the graphs that competed; ``note``: caps and left-out graphs, in words ('' when
    nothing to say); ``score_kind``: coverage or raw; ``n_no_cycle``: graphs of the pool left out
    because they cannot hold a cycle.
    """

    index: np.ndarray
    table: pd.DataFrame
    threshold: float | pd.Series
    selection: Selection
    pool: str
    n_pool: int
    note: str
    score_kind: str = DEFAULT_SCORE
    n_no_cycle: int = 0


def keep_k_graphs(
    stack: GraphStack | GraphBuckets,
    k: int,
    *,
    mu: float = 1.0,
    lam3: float = 1.0,
    lam4: float | None = None,
    per_category: bool = False,
    pool: str = "perturbed",
    counts: pd.DataFrame | None = None,
    capacity: pd.DataFrame | None = None,
    score: str = DEFAULT_SCORE,
) -> KeptGraphs:
    """Keep-K on a GraphStack or GraphBuckets: score every graph as judged, keep the K smallest
    within ``pool``.

    Graphs that cannot hold a cycle (fewer than 3 models, or no compared triple or 4-cycle of
    pairs) are left out of the pool and counted in the note: their zero is not evidence of
    consistency. A pool where no graph can hold a cycle is refused (LensError). ``score``: coverage
    (default) or raw, see ``SCORES`` / ``graph_scores``; the reference capacity is the largest in the
    pool. ``counts`` / ``capacity``: engine.graphs.cycles' ``cycle_counts`` / ``cycle_capacity`` frames when
    already computed. The leaderboard ranks ``stack.subset(result.index)``; ``result.table`` and
    ``result.threshold`` are what to print.
    """
    from engine.graphs.buckets import as_buckets
    from engine.graphs.cycles import cycle_capacity, cycle_counts

    check_score(score)
    if counts is None or capacity is None:
        stack = as_buckets(stack)  # once, for both tables
    if counts is None:
        counts = cycle_counts(stack)
    if capacity is None:
        capacity = cycle_capacity(stack)
    scored = keep_k_scores(stack.keys, counts, capacity, pool=pool, mu=mu, lam3=lam3, lam4=lam4, score=score)
    return kept_by_scores(stack.keys, counts, scored, k, per_category=per_category, pool=pool, score=score,
                          n_graphs=stack.T)


def kept_by_scores(keys: pd.DataFrame, counts: pd.DataFrame, scored: PoolScores, k: int, *,
                   per_category: bool, pool: str, score: str, n_graphs: int) -> KeptGraphs:
    """``keep_k_graphs`` from its scores: the K kept among ``scored.pos``, their table and the notes.
    ``keys`` / ``counts``: the graphs scored (every graph of the selection, or the pool's graphs that can
    hold a cycle when the selection was read in pieces: ``engine.ranking.keep_k_pieces``);
    ``n_graphs``: the selection's graphs, for the note on those outside the pool."""
    pos, n_no_cycle, scores, coverage, raw = (
        scored.pos,
        scored.n_no_cycle,
        scored.scores,
        scored.coverage,
        scored.raw,
    )
    if pos.size + n_no_cycle == 0:
        raise LensError(f"The {pool} pool is empty for this selection, so there is nothing to keep.")
    if pos.size == 0:
        raise no_cycle_refusal(pool, n_no_cycle)
    sub_keys = keys.iloc[pos].reset_index(drop=True)
    sel = select_keep_k(scores[pos], sub_keys, k, per_category=per_category)
    kept = pos[sel.index]
    in_order = kept[np.lexsort((key_rank(keys)[kept], scores[kept]))]
    cols = [c for c in (*GRAPH_KEY, "category", "variant_kind") if c in keys.columns]
    table = keys.iloc[in_order][cols].reset_index(drop=True)
    table["c3_bad"] = counts["c3_bad"].to_numpy()[in_order]
    table["c4_bad"] = counts["c4_bad"].to_numpy()[in_order]
    table["coverage"] = coverage[in_order]
    table["raw_score"] = raw[in_order]
    table["score"] = scores[in_order]
    table.insert(0, "keep_rank", np.arange(1, in_order.size + 1))
    notes = [sel.note] if sel.note else []
    pool_cov = coverage[pos]
    if score == "coverage" and np.nanmin(pool_cov) < 1.0:
        notes.append(
            f"Graphs compared different pairs (coverage {np.nanmin(pool_cov):.3g} to 1), so each score is "
            "S_mu scaled per cycle length by the cycles the graph's pairs could carry against the "
            "best-covered graph of the pool."
        )
    if n_no_cycle:
        notes.append(
            f"{n_no_cycle} graph{'s' if n_no_cycle != 1 else ''} of the {pool} pool cannot hold a cycle "
            "(fewer than 3 models, or no compared triple) and "
            f"{'were' if n_no_cycle != 1 else 'was'} left out."
        )
    left_out = int(n_graphs - pos.size - n_no_cycle)
    if left_out:
        notes.append(f"{left_out} graph(s) outside the {pool} pool were not considered.")
    return KeptGraphs(np.sort(kept), table, sel.threshold, sel, pool, int(pos.size), " ".join(notes), score,
                      n_no_cycle)


__all__ = [
    "DEFAULT_SCORE",
    "POOLS",
    "SCORES",
    "KeptGraphs",
    "PoolScores",
    "Selection",
    "can_hold_cycle",
    "check_score",
    "check_weights",
    "check_k",
    "graph_scores",
    "is_original",
    "is_sample",
    "keep_k_graphs",
    "keep_k_index",
    "kept_by_scores",
    "keep_k_order",
    "keep_k_scores",
    "keep_pool",
    "no_cycle_refusal",
    "pool_mask",
    "select_keep_k",
    "truncation_scores",
]
