"""The resampling protocols of paper 000 (Section 4.1, Appendix A.3) as one parameterised engine.

Each protocol is a *source pool* per category plus a *draw rule*; every draw is a multiset of graphs
whose W and T (paper 000, eq. 3-4) are fitted by a ranker and compared with a reference ranking:

"Every graph" below means the perturbed pool: originals and paraphrases (sampling replicates only
ever enter the ``sample`` protocol).

==============  ===========================================  ==========================================
protocol        pool (per category)                          draw (each of ``resamples`` outer draws)
==============  ===========================================  ==========================================
trunc           the ``keep`` graphs of smallest S_mu          ``draw`` of them without replacement
sample          the same, on originals + sampling replicates  ``draw`` without replacement
notrunc_boot    every graph                                   as many as the pool, with replacement
scorewin        every graph                                   ``scorewin_draw`` without replacement;
                                                              Copeland on the majority graph
random          every graph                                   ``random_reps`` subsets of ``random_draw``
                                                              without replacement, distances averaged
single          original prompts only, keep-K with the K      ``single_draw`` without replacement
                that is best (macro) on that reduced pool
==============  ===========================================  ==========================================

When a pool is smaller than what a rule asks for, the rule takes the whole pool and the row says
so (``degenerate`` with a note): e.g. on data without paraphrases the trunc pool of 25 is the
10 originals, and every draw of 20 is the whole pool, so the interval has width zero.

Speed: a draw is a row of a (B, T) count matrix; ``counts @ W~`` gives every W~ at once and the
rankers' batched Bradley-Terry fits them all in one call (no loop over graphs or resamples).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import LensError
from .graphs import GraphStack
from .truncation import keep_order, truncation_scores

PROTOCOLS: tuple[str, ...] = ("trunc", "sample", "notrunc_boot", "scorewin", "random", "single")
DISTANCES: tuple[str, ...] = ("spearman", "kendall", "footrule", "chebyshev")
DEFAULT_SEED = 20260324
MACRO = "macro"
FIT_CHUNK = 1000
MAPPINGS_DIR = Path(__file__).resolve().parent.parent / "data" / "mappings"


@dataclass(frozen=True)
class ProtocolParams:
    """Sizes of every protocol; the defaults are paper 000's (Section 4.1, Appendix A.2-A.3)."""

    keep: int = 25
    draw: int = 20
    scorewin_draw: int = 40
    random_draw: int = 20
    random_reps: int = 10
    single_draw: int = 20
    resamples: int = 100
    seed: int = DEFAULT_SEED
    mu: float = 1.0
    lam3: float = 1.0
    lam4: float | None = None
    copeland_tie: float = 1.0
    """Copeland credit for an exact majority (a bidirectional edge): 1 = out-degree of the majority graph."""

    def validate(self) -> ProtocolParams:
        for name in ("keep", "draw", "scorewin_draw", "random_draw", "random_reps", "single_draw", "resamples"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise LensError(f"The protocol parameter {name} must be a whole number ≥ 1; got {v!r}.")
        return self


def label(protocol: str, p: ProtocolParams) -> str:
    """The paper's short name of a protocol cell, with the sizes actually asked for."""
    return {
        "trunc": f"Trunc{p.keep}→{p.draw}",
        "sample": f"Sample{p.keep}→{p.draw}",
        "notrunc_boot": "NoTrunc boot",
        "scorewin": f"ScoreWin{p.scorewin_draw}",
        "random": f"Random→{p.random_draw}×{p.random_reps}",
        "single": f"Single→{p.single_draw}",
    }[protocol]


# ----------------------------------------------------------------------------- draws


def draw_counts(rng: np.random.Generator, pool: np.ndarray, m: int, reps: int, replace: bool, T: int) -> np.ndarray:
    """(reps, T) multiplicities of ``reps`` draws of ``m`` graphs from positions ``pool``.

    Without replacement ``m`` is capped at the pool size (then every draw is the whole pool).
    Vectorised: argsort of uniform keys gives a uniformly random permutation per row.
    """
    pool = np.asarray(pool, dtype=np.int64)
    P = pool.size
    out = np.zeros((reps, T), dtype=np.float64)
    if P == 0 or reps == 0:
        return out
    if replace:
        picks = pool[rng.integers(0, P, size=(reps, m))]
    else:
        m = min(m, P)
        picks = pool[np.argsort(rng.random((reps, P)), axis=1)[:, :m]]
    rows = np.repeat(np.arange(reps), picks.shape[1])
    np.add.at(out, (rows, picks.ravel()), 1.0)
    return out


# ----------------------------------------------------------------------------- rankers on count rows


def ordinal_ranks(scores: np.ndarray) -> np.ndarray:
    """(B, n) scores → (B, n) ranks 1..n (1 = best); equal scores ordered by model position.

    A deterministic total order, so every distance compares two permutations. Scores are rounded
    to 9 decimals first, so fits that are tied in exact arithmetic (equal rows of W~) but differ
    by solver round-off are treated as tied, whichever solver produced them.
    """
    s = np.round(np.asarray(scores, dtype=np.float64), 9)
    n = s.shape[1]
    idx = np.arange(n)
    better = (s[:, None, :] > s[:, :, None]) | ((s[:, None, :] == s[:, :, None]) & (idx[None, :] < idx[:, None])[None])
    return 1 + better.sum(axis=2)


def copeland_majority_batch(wins: np.ndarray, tie_value: float = 1.0, compared: np.ndarray | None = None) -> np.ndarray:
    """Score-of-win on majority graphs, batched: (B, n, n) strict-win counts → (B, n) scores.

    The majority graph has i → j when i beat j in more graphs than j beat i, and both edges when
    the counts are equal (an exact majority, paper 000 Appendix A.3); the score is the out-degree
    with an exact majority credited ``tie_value`` (1 = plain out-degree as ``rankers`` ``scorewin``,
    0.5 = classic Copeland as ``rankers`` ``copeland``). Pairs never compared (``compared`` False,
    (B, n, n)) have no edge; without ``compared`` every pair counts as compared.
    """
    w = np.asarray(wins, dtype=np.float64)
    n = w.shape[1]
    off = ~np.eye(n, dtype=bool)
    if compared is not None:
        off = off & np.asarray(compared, dtype=bool)
    beat = (w > w.swapaxes(1, 2)) & off
    even = (w == w.swapaxes(1, 2)) & off
    return beat.sum(axis=2) + tie_value * even.sum(axis=2)


def unique_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct row, inverse map): identical draws are fitted once.

    Rows are grouped by a random projection (fast) and the grouping is then checked exactly; if
    two different rows ever shared a projection, nothing is merged.
    """
    h = counts @ np.random.default_rng(0).random(counts.shape[1])
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    if not np.array_equal(counts, counts[first[inverse]]):
        return np.arange(counts.shape[0]), np.arange(counts.shape[0])
    return first, inverse.ravel()


def _scores_for_counts(counts: np.ndarray, stack_flat: dict[str, np.ndarray], n: int, ranker: str, p: ProtocolParams) -> np.ndarray:
    """(B, T) graph multiplicities → (B, n) ranker scores (each distinct draw fitted once)."""
    first, inverse = unique_rows(counts)
    if first.size < counts.shape[0]:
        return _scores_for_counts(counts[first], stack_flat, n, ranker, p)[inverse]
    if ranker == "bt":
        from .rankers.bt import fit_bt_batch

        wt = (counts @ stack_flat["wtilde"]).reshape(-1, n, n)
        # chunks keep the solver's (B, n, n) temporaries in cache: ~2x faster than one huge batch
        return np.concatenate([fit_bt_batch(wt[i:i + FIT_CHUNK]) for i in range(0, wt.shape[0], FIT_CHUNK)])
    if ranker == "copeland_majority":
        w = (counts @ stack_flat["wins"]).reshape(-1, n, n)
        seen = (counts @ stack_flat["observed"]).reshape(-1, n, n) > 0
        return copeland_majority_batch(w, p.copeland_tie, seen)
    raise LensError(f"Unknown protocol ranker {ranker!r}; choose bt or copeland_majority.")


def flat_matrices(stack: GraphStack) -> dict[str, np.ndarray]:
    """Per graph, flattened (T, n²) strict wins, half-tie wins W + T/2 (paper 000, Section 3.2)
    and the compared-pair mask."""
    wins = stack.wins.astype(np.float64)
    ties = stack.ties.astype(np.float64)
    T, n = stack.T, stack.n
    return {"wins": wins.reshape(T, n * n), "wtilde": (wins + 0.5 * ties).reshape(T, n * n),
            "observed": stack.observed.astype(np.float64).reshape(T, n * n)}


def distances_for_scores(scores: np.ndarray, ref_ranks: np.ndarray) -> dict[str, np.ndarray]:
    """All four distances of paper 000 (Section 4.1, App. C.2) for (B, n) scores against a reference."""
    from .distances import distances_batch

    out = distances_batch(ordinal_ranks(scores), np.asarray(ref_ranks))
    return {d: np.asarray(out[d], dtype=np.float64) for d in DISTANCES}


# ----------------------------------------------------------------------------- reference


def category_mapping(dataset: str, directory: Path = MAPPINGS_DIR) -> pd.DataFrame:
    """The dataset's category → LMArena category table (``data/mappings/<dataset>.categories.csv``)."""
    path = directory / f"{dataset}.categories.csv"
    if not path.exists():
        raise LensError(f"There is no category mapping for dataset {dataset!r} (expected {path}).")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    need = {"category", "arena_category", "match"}
    if not need.issubset(df.columns):
        raise LensError(f"The category mapping {path} lacks the column(s) {', '.join(sorted(need - set(df.columns)))}.")
    bad = df[~df["match"].isin(["exact", "proxy"])]
    if len(bad):
        raise LensError(f"Row {int(bad.index[0]) + 2} of {path} has match {bad['match'].iloc[0]!r}; use exact or proxy.")
    return df


def reference_ranks(reference: pd.Series, models: tuple[str, ...]) -> np.ndarray:
    """Ranks 1..n (1 = highest reference rating) of ``models`` in their given order."""
    missing = [m for m in models if m not in reference.index]
    if missing:
        raise LensError(f"The reference has no rating for model(s) {', '.join(missing)}.")
    r = reference.reindex(list(models)).to_numpy(dtype=np.float64)
    return ordinal_ranks(r[None, :])[0]


def _reference_for(reference: pd.Series | Mapping[str, pd.Series], category: str | None) -> pd.Series:
    if isinstance(reference, pd.Series):
        return reference
    if category in reference:
        return reference[category]
    raise LensError(f"No reference ranking is given for category {category!r}.")


def common_models(stack: GraphStack, reference: pd.Series | Mapping[str, pd.Series], categories: list[str]) -> tuple[str, ...]:
    """Models of the stack that every needed reference rates (rankings are compared on these)."""
    refs = [reference] if isinstance(reference, pd.Series) else [_reference_for(reference, c) for c in categories]
    keep = [m for m in stack.models if all(m in r.index and np.isfinite(r[m]) for r in refs)]
    if len(keep) < 2:
        raise LensError("Fewer than two of the dataset's models have a reference rating, so no ranking can be compared.")
    return tuple(keep)


# ----------------------------------------------------------------------------- the engine


@dataclass(frozen=True)
class _Job:
    protocol: str
    category: str
    counts: np.ndarray  # (rows, T)
    reps: int  # rows averaged per outer resample (random), else 1
    ranker: str
    n_pool: int
    n_keep: int
    n_draw: int
    note: str


def _category_positions(stack: GraphStack) -> dict[str, np.ndarray]:
    cats = stack.keys["category"].astype("string").fillna("(none)").to_numpy(dtype=object)
    return {c: np.flatnonzero(cats == c) for c in sorted(set(cats))}


def _kept(pool: np.ndarray, order: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` graphs of ``pool`` in the global (score, key) ``order``."""
    in_pool = np.zeros(order.size, dtype=bool)
    in_pool[pool] = True
    ordered = order[in_pool[order]]
    return np.sort(ordered[: min(k, ordered.size)])


def _note(pool_size: int, keep: int | None, draw: int, replace_: bool) -> tuple[int, int, str]:
    kept = pool_size if keep is None else min(keep, pool_size)
    notes = []
    if keep is not None and keep > pool_size:
        notes.append(f"pool has {pool_size} < keep {keep}")
    n_draw = draw if replace_ else min(draw, kept)
    if not replace_ and draw >= kept:
        notes.append("each draw is the whole kept pool (no resampling spread)")
    return kept, n_draw, "; ".join(notes)


def _is_original(stack: GraphStack) -> np.ndarray:
    k = stack.keys
    kind = k["variant_kind"].astype("string").fillna("original").to_numpy(dtype=object) if "variant_kind" in k else None
    variant = pd.to_numeric(k["variant"]).to_numpy()
    return (variant == 0) if kind is None else ((kind == "original") | ((variant == 0) & (kind != "sample")))


def _is_sample(stack: GraphStack) -> np.ndarray:
    if "variant_kind" not in stack.keys:
        return np.zeros(stack.T, dtype=bool)
    return (stack.keys["variant_kind"].astype("string") == "sample").fillna(False).to_numpy(dtype=bool)


def _fit_jobs(jobs: list[_Job], stack: GraphStack, refs: dict[str, np.ndarray], p: ProtocolParams) -> dict[int, dict[str, np.ndarray]]:
    """Distances (per outer resample) of every job, all fits of one ranker done in one batch."""
    flat = flat_matrices(stack)
    out: dict[int, dict[str, np.ndarray]] = {}
    for ranker in sorted({j.ranker for j in jobs}):
        ids = [i for i, j in enumerate(jobs) if j.ranker == ranker]
        counts = np.concatenate([jobs[i].counts for i in ids], axis=0)
        scores = _scores_for_counts(counts, flat, stack.n, ranker, p)
        bounds = np.cumsum([0] + [jobs[i].counts.shape[0] for i in ids])
        for cat in sorted({jobs[i].category for i in ids}):
            mine = [(i, bounds[a], bounds[a + 1]) for a, i in enumerate(ids) if jobs[i].category == cat]
            rows = np.concatenate([np.arange(lo, hi) for _, lo, hi in mine])
            d = distances_for_scores(scores[rows], refs[cat])
            off = 0
            for i, lo, hi in mine:
                size = hi - lo
                reps = jobs[i].reps
                out[i] = {k: v[off:off + size].reshape(-1, reps).mean(axis=1) for k, v in d.items()}
                off += size
    return out


def point_distances(stack: GraphStack, groups: list[tuple[str, np.ndarray]], refs: dict[str, np.ndarray], ranker: str = "bt") -> list[dict[str, float]]:
    """Distances of single fits, one per (category, kept positions) group, in one batch."""
    counts = np.zeros((len(groups), stack.T))
    for r, (_, pos) in enumerate(groups):
        counts[r, pos] = 1.0
    scores = _scores_for_counts(counts, flat_matrices(stack), stack.n, ranker, ProtocolParams())
    res: list[dict[str, float]] = [{} for _ in groups]
    for cat in sorted({c for c, _ in groups}):
        rows = [r for r, (c, _) in enumerate(groups) if c == cat]
        d = distances_for_scores(scores[rows], refs[cat])
        for a, r in enumerate(rows):
            res[r] = {k: float(v[a]) for k, v in d.items()}
    return res


def best_single_k(stack: GraphStack, refs: dict[str, np.ndarray], p: ProtocolParams, distance: str = "spearman") -> tuple[int, pd.DataFrame]:
    """The single-prompt baseline's K: the global keep-K (K per category, capped at the category's
    original-prompt pool) with the smallest macro-averaged distance; ties → the smaller K."""
    cats = _category_positions(stack)
    orig = _is_original(stack)
    order = keep_order(_scores(stack, p), stack.keys)
    pools = {c: pos[orig[pos]] for c, pos in cats.items()}
    kmax = max(int(v.size) for v in pools.values())
    if kmax == 0:
        raise LensError("The single-prompt baseline needs original-prompt graphs (variant 0), and there are none.")
    cells = [(k, c) for k in range(1, kmax + 1) for c in cats if pools[c].size]
    d = point_distances(stack, [(c, _kept(pools[c], order, k)) for k, c in cells], refs)
    curve = pd.DataFrame({"k": [k for k, _ in cells], "category": [c for _, c in cells],
                          distance: [x[distance] for x in d]})
    macro = curve.groupby("k")[distance].mean()
    return int(macro.idxmin()), curve


def _scores(stack: GraphStack, p: ProtocolParams) -> np.ndarray:
    from .cycles import cycle_counts

    return truncation_scores(cycle_counts(stack), mu=p.mu, lam3=p.lam3, lam4=p.lam4)


def build_jobs(stack: GraphStack, protocols: tuple[str, ...], p: ProtocolParams, single_k: int | None = None) -> list[_Job]:
    """The draws of every (protocol, category) cell as count matrices (seeded per protocol)."""
    cats = _category_positions(stack)
    order = keep_order(_scores(stack, p), stack.keys)
    orig, samp = _is_original(stack), _is_sample(stack)
    T, R = stack.T, p.resamples
    jobs: list[_Job] = []
    for pi, proto in enumerate(protocols):
        if proto not in PROTOCOLS:
            raise LensError(f"Unknown protocol {proto!r}; choose from {', '.join(PROTOCOLS)}.")
        rng = np.random.default_rng([p.seed, pi])
        for cat, allpos in cats.items():
            pos = allpos[~samp[allpos]]  # the perturbed pool: originals + paraphrases
            if proto in ("trunc", "sample"):
                pool = pos if proto == "trunc" else allpos[orig[allpos] | samp[allpos]]
                kept_pos = _kept(pool, order, p.keep)
                kept, m, note = _note(pool.size, p.keep, p.draw, False)
                if proto == "sample" and not samp[pos].any():
                    note = "no sampling replicates: pool is the original prompts only" + (f"; {note}" if note else "")
                jobs.append(_Job(proto, cat, draw_counts(rng, kept_pos, p.draw, R, False, T), 1, "bt", pool.size, kept, m, note))
            elif proto == "notrunc_boot":
                jobs.append(_Job(proto, cat, draw_counts(rng, pos, pos.size, R, True, T), 1, "bt", pos.size, pos.size, pos.size, ""))
            elif proto == "scorewin":
                kept, m, note = _note(pos.size, None, p.scorewin_draw, False)
                jobs.append(_Job(proto, cat, draw_counts(rng, pos, p.scorewin_draw, R, False, T), 1, "copeland_majority", pos.size, kept, m, note))
            elif proto == "random":
                kept, m, note = _note(pos.size, None, p.random_draw, False)
                c = draw_counts(rng, pos, p.random_draw, R * p.random_reps, False, T)
                jobs.append(_Job(proto, cat, c, p.random_reps, "bt", pos.size, kept, m, note))
            else:  # single
                pool = pos[orig[pos]]
                k = single_k if single_k is not None else p.keep
                kept_pos = _kept(pool, order, k)
                kept, m, note = _note(pool.size, k, p.single_draw, False)
                jobs.append(_Job(proto, cat, draw_counts(rng, kept_pos, p.single_draw, R, False, T), 1, "bt", pool.size, kept, m, f"K={k}" + (f"; {note}" if note else "")))
    return jobs


def _summary(values: np.ndarray) -> dict[str, float]:
    v = np.asarray(values, dtype=np.float64)
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    lo, hi = np.quantile(v, [0.025, 0.975])
    return {"mean": float(v.mean()), "ci_low": float(lo), "ci_high": float(hi),
            "half_width": float(1.96 * sd / np.sqrt(v.size)), "sd": sd}


def run_protocols(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    protocols: tuple[str, ...] | list[str] = PROTOCOLS,
    params: ProtocolParams | None = None,
) -> pd.DataFrame:
    """Run the protocols on one judge's graphs; a long Table-2-shaped frame.

    ``reference``: one rating Series by model name, or a mapping category → Series. Models without
    a rating in every needed reference are left out. One row per (protocol, category, distance)
    plus a ``macro`` row per (protocol, distance) whose resampling distribution is the per-resample
    mean over categories. Columns: protocol, label, category, distance, mean, ci_low, ci_high
    (2.5/97.5 % of the resampling distribution), half_width (1.96·sd/√R, the interval of the
    mean), sd, n_pool, n_keep, n_draw, resamples, degenerate, note.
    """
    p = (params or ProtocolParams()).validate()
    protocols = tuple(protocols)
    if stack.T == 0:
        raise LensError("There are no graphs to resample.")
    cats = list(_category_positions(stack))
    models = common_models(stack, reference, cats)
    st = stack.restrict_models(models)
    refs = {c: reference_ranks(_reference_for(reference, c), models) for c in cats}
    single_k = best_single_k(st, refs, p)[0] if "single" in protocols else None
    jobs = build_jobs(st, protocols, p, single_k)
    dist = _fit_jobs(jobs, st, refs, p)
    rows = []
    for proto in protocols:
        mine = [i for i, j in enumerate(jobs) if j.protocol == proto]
        for dname in DISTANCES:
            for i in mine:
                j = jobs[i]
                s = _summary(dist[i][dname])
                rows.append({"protocol": proto, "label": label(proto, p), "category": j.category, "distance": dname, **s,
                             "n_pool": j.n_pool, "n_keep": j.n_keep, "n_draw": j.n_draw, "resamples": p.resamples,
                             "degenerate": s["ci_high"] - s["ci_low"] == 0.0, "note": j.note})
            macro = np.mean([dist[i][dname] for i in mine], axis=0)
            s = _summary(macro)
            rows.append({"protocol": proto, "label": label(proto, p), "category": MACRO, "distance": dname, **s,
                         "n_pool": sum(jobs[i].n_pool for i in mine), "n_keep": sum(jobs[i].n_keep for i in mine),
                         "n_draw": sum(jobs[i].n_draw for i in mine), "resamples": p.resamples,
                         "degenerate": s["ci_high"] - s["ci_low"] == 0.0, "note": f"{len(mine)} categories; models: {', '.join(models)}"})
    return pd.DataFrame(rows)


def table2(frame: pd.DataFrame, distance: str = "spearman", scale: float = 1000.0) -> pd.DataFrame:
    """Pivot a ``run_protocols`` frame into paper 000's Table 2 layout: ``mean ± half_width``
    (× ``scale``) by protocol label (rows) and category (columns, macro last)."""
    f = frame[frame["distance"] == distance]
    cell = f.assign(cell=[f"{m * scale:.0f} ± {h * scale:.0f}" for m, h in zip(f["mean"], f["half_width"], strict=True)])
    wide = cell.pivot(index="label", columns="category", values="cell")
    cols = [c for c in wide.columns if c != MACRO] + ([MACRO] if MACRO in wide.columns else [])
    order = list(dict.fromkeys(f["label"]))
    return wide.loc[order, cols]


__all__ = [
    "DEFAULT_SEED", "DISTANCES", "PROTOCOLS", "ProtocolParams", "best_single_k", "category_mapping",
    "copeland_majority_batch", "draw_counts", "ordinal_ranks", "reference_ranks", "run_protocols", "table2",
]
