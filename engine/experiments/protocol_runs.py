"""Run the resampling protocols of ``engine.experiments.protocols`` (paper 000, Table 2): fit every
cell's draws in batches, measure the distances to the reference, summarise per cell and per macro
row; ``table2`` lays the result out as the paper's table.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.experiments.batch_fits import bt_scores, bt_scores_info, copeland_majority_batch, flat_matrices
from engine.experiments.protocols import (
    BT_FIT,
    COPELAND_FIT,
    MACRO,
    PROTOCOL_FITS,
    PROTOCOLS,
    Job,
    ProtocolParams,
    build_jobs,
    category_positions,
    keep_scores,
    label,
    rated_columns,
)
from engine.graphs.key_order import key_rank
from engine.graphs.stack import GraphStack
from engine.graphs.truncation import is_original, keep_k_index
from engine.rankers.base import single_thread_blas
from engine.ranking.distances import DISTANCES, distances_for_scores
from engine.ranking.reference import common_models, reference_of, reference_ranks


def summarise(values: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of (cells, R) resample values: mean, ci_low/ci_high (2.5/97.5 %), half_width
    (1.96·sd/√R, the interval of the mean) and sd — vectorised over cells."""
    v = np.atleast_2d(np.asarray(values, dtype=np.float64))
    R = v.shape[1]
    sd = v.std(axis=1, ddof=1) if R > 1 else np.zeros(v.shape[0])
    lo, hi = np.quantile(v, [0.025, 0.975], axis=1) if R else (np.full(v.shape[0], np.nan),) * 2
    return {"mean": v.mean(axis=1), "ci_low": lo, "ci_high": hi, "half_width": 1.96 * sd / np.sqrt(max(R, 1)),
            "sd": sd}


def fit_jobs(jobs: list[Job], stack: GraphStack, refs: dict[str, np.ndarray],
              p: ProtocolParams, rated: np.ndarray | None = None,
              ) -> tuple[dict[int, dict[str, np.ndarray]], dict[int, int]]:
    """(distances per outer resample of every job — NaN for an empty job —, BT fits per job that did
    not converge); all BT fits in one warm-started batch over every model of the stack, the distances on
    the ``rated`` columns (``rated_columns``; None: all)."""
    flat = flat_matrices(stack)
    n = stack.n
    scores: dict[int, np.ndarray] = {}
    nonconv = {i: 0 for i in range(len(jobs))}
    bt = [i for i, j in enumerate(jobs) if j.ranker == BT_FIT and not j.empty]
    if bt:
        wt_rows = [jobs[i].weights @ flat["wtilde"][jobs[i].cols] for i in bt]
        centre = bt_scores(np.stack([flat["wtilde"][jobs[i].cols].sum(axis=0) for i in bt]).reshape(-1, n, n))
        theta0 = np.concatenate(
            [np.repeat(centre[a][None], w.shape[0], axis=0) for a, w in enumerate(wt_rows)]
        )
        all_scores, conv = bt_scores_info(np.concatenate(wt_rows).reshape(-1, n, n), theta0)
        bounds = np.cumsum([0] + [w.shape[0] for w in wt_rows])
        for a, i in enumerate(bt):
            scores[i] = all_scores[bounds[a]:bounds[a + 1]]
            nonconv[i] = int((~conv[bounds[a]:bounds[a + 1]]).sum())
    for i, j in enumerate(jobs):
        if j.ranker not in PROTOCOL_FITS:
            raise LensError(f"Unknown protocol ranker {j.ranker!r}; choose {' or '.join(PROTOCOL_FITS)}.")
        if j.ranker == COPELAND_FIT and not j.empty:
            w = (j.weights @ flat["wins"][j.cols]).reshape(-1, n, n)
            seen = (j.weights @ flat["observed"][j.cols]).reshape(-1, n, n) > 0
            scores[i] = copeland_majority_batch(w, p.copeland_tie, seen)
    out: dict[int, dict[str, np.ndarray]] = {}
    for i, j in enumerate(jobs):
        if j.empty:
            out[i] = {k: np.full(j.weights.shape[0] // j.reps, np.nan) for k in DISTANCES}
    for cat in sorted({j.category for j in jobs}):
        mine = [i for i, j in enumerate(jobs) if j.category == cat and not j.empty]
        if not mine:
            continue
        fitted = np.concatenate([scores[i] for i in mine])
        d = distances_for_scores(fitted if rated is None else fitted[:, rated], refs[cat])
        off = 0
        for i in mine:
            size = scores[i].shape[0]
            out[i] = {k: v[off:off + size].reshape(-1, jobs[i].reps).mean(axis=1) for k, v in d.items()}
            off += size
    return out, nonconv


def point_distances(
    stack: GraphStack, groups: list[tuple[str, np.ndarray]], refs: dict[str, np.ndarray],
    ranker: str = BT_FIT, rated: np.ndarray | None = None,
) -> list[dict[str, float]]:
    """Distances of single fits, one per (category, kept positions) group, in one batch (every model
    fitted, distances on the ``rated`` columns; None: all); each dict also says whether its fit
    ``converged``."""
    if ranker != BT_FIT:
        raise LensError(f"Point fits use the bt ranker; got {ranker!r}.")
    flat = flat_matrices(stack)["wtilde"]
    wt = np.stack([flat[pos].sum(axis=0) for _, pos in groups]).reshape(-1, stack.n, stack.n)
    scores, conv = bt_scores_info(wt)
    res: list[dict[str, float]] = [{} for _ in groups]
    for cat in sorted({c for c, _ in groups}):
        rows = [r for r, (c, _) in enumerate(groups) if c == cat]
        d = distances_for_scores(scores[rows] if rated is None else scores[rows][:, rated], refs[cat])
        for a, r in enumerate(rows):
            res[r] = {**{k: float(v[a]) for k, v in d.items()}, "converged": bool(conv[r])}
    return res


def best_single_k(
    stack: GraphStack,
    refs: dict[str, np.ndarray],
    p: ProtocolParams,
    distance: str = "spearman",
    scores: np.ndarray | None = None,
    rated: np.ndarray | None = None,
) -> tuple[int, pd.DataFrame]:
    """The single-prompt baseline's K: the global keep-K (K per category, capped at the category's
    original-prompt pool) with the smallest macro-averaged distance; ties → the smaller K.

    ``scores``: the keep-K scores of the unrestricted stack (default: ``keep_scores`` on ``stack`` itself)."""
    cats = category_positions(stack)
    orig = is_original(stack.keys)
    scores = keep_scores(stack, p) if scores is None else scores
    krank = key_rank(stack.keys)
    pools = {c: pos[orig[pos]] for c, pos in cats.items()}
    kmax = max(int(v.size) for v in pools.values())
    if kmax == 0:
        raise LensError(
            "The single-prompt baseline needs original-prompt graphs (variant 0), and there are none."
        )
    cells = [(k, c) for k in range(1, kmax + 1) for c in cats if pools[c].size]
    d = point_distances(stack, [(c, keep_k_index(scores, krank, k, among=pools[c])) for k, c in cells], refs,
                        rated=rated)
    curve = pd.DataFrame({"k": [k for k, _ in cells], "category": [c for _, c in cells],
                          distance: [x[distance] for x in d], "converged": [x["converged"] for x in d]})
    macro = curve.groupby("k")[distance].mean()
    return int(macro.index[int(macro.argmin())]), curve  # idxmin, typed: the k of the smallest mean


def _with_nonconverged(note: str, bad: int, fits: int) -> str:
    """``note`` plus, when some Bradley-Terry fits stopped at the iteration cap, how many."""
    if not bad:
        return note
    return "; ".join(x for x in (note, f"{bad} of {fits} Bradley-Terry fits did not converge") if x)


def run_protocols(
    stack: GraphStack,
    reference: pd.Series | Mapping[str, pd.Series],
    protocols: tuple[str, ...] | list[str] = PROTOCOLS,
    params: ProtocolParams | None = None,
) -> pd.DataFrame:
    """Run the protocols on one judge's graphs; a long Table-2-shaped frame.

    ``reference``: one rating Series by model name, or a mapping category → Series. Truncation
    scores and the fits use every model of the graphs (the leaderboard's ranking, as ``compare`` ranks);
    the distances compare the order of the models rated in every needed reference.
    One row per (protocol, category, distance) plus a ``macro`` row
    per (protocol, distance) whose resampling distribution is the per-resample mean over
    categories. Columns: protocol, label, category, distance, mean, ci_low, ci_high (2.5/97.5 % of
    the resampling distribution), half_width (1.96·sd/√R, the interval of the mean), sd, n_pool,
    n_keep, n_draw, n_categories (1 / 0 for an empty cell; the macro: categories averaged),
    resamples, degenerate, bt_nonconverged (fits that stopped at the iteration cap), note.
    An empty cell is NaN (degenerate, with a note naming it) and stays out of the macro.
    """
    p = (params or ProtocolParams()).validate()
    protocols = tuple(protocols)
    for proto in protocols:
        if proto not in PROTOCOLS:
            raise LensError(f"Unknown protocol {proto!r}; choose from {', '.join(PROTOCOLS)}.")
    if stack.T == 0:
        raise LensError("There are no graphs to resample.")
    cats = list(category_positions(stack))
    models = common_models(stack, reference, cats)
    scores = keep_scores(stack, p)  # the graphs as judged, every model
    # every model is ranked, as the leaderboard and compare rank them; distances on the rated models only
    rated = rated_columns(stack, models)
    refs = {c: reference_ranks(reference_of(reference, c), models) for c in cats}
    with single_thread_blas():  # small matrices: threads only add synchronisation
        single_k, single_curve = (
            best_single_k(stack, refs, p, scores=scores, rated=rated)
            if "single" in protocols else (None, None)
        )
        jobs = build_jobs(stack, protocols, p, single_k, scores=scores)
        dist, nonconv = fit_jobs(jobs, stack, refs, p, rated=rated)
    blocks = []
    for proto in protocols:
        mine = [i for i, j in enumerate(jobs) if j.protocol == proto]
        js = [jobs[i] for i in mine]
        used = [i for i in mine if not jobs[i].empty]
        left = [jobs[i].category for i in mine if jobs[i].empty]
        fits = [
            jobs[i].weights.shape[0] if jobs[i].ranker == BT_FIT and not jobs[i].empty else 0 for i in mine
        ]
        bad = [nonconv[i] for i in mine]
        # Single's K comes from point fits on its pool: those count too (on the macro row)
        k_bad, k_fits = ((int((~single_curve["converged"]).sum()), len(single_curve))
                         if proto == "single" and single_curve is not None else (0, 0))
        notes = [_with_nonconverged(j.note, b, f) for j, b, f in zip(js, bad, fits, strict=True)]
        macro_note = (f"macro over {len(used)} of {len(mine)} categories"
                      + (f" (left out, empty pool: {', '.join(left)})" if left else "")
                      + f"; models: {', '.join(models)}")
        for dname in DISTANCES:
            macro = (np.mean([dist[i][dname] for i in used], axis=0) if used
                     else np.full(p.resamples, np.nan))  # per resample: the mean over the non-empty cells
            vals = np.stack([dist[i][dname] for i in mine] + [macro])
            s = summarise(vals)
            block = pd.DataFrame({
                "protocol": proto, "label": label(proto, p), "category": [j.category for j in js] + [MACRO],
                "distance": dname, **s,
                "n_pool": [j.n_pool for j in js] + [sum(j.n_pool for j in js)],
                "n_keep": [j.n_keep for j in js] + [sum(j.n_keep for j in js)],
                "n_draw": [j.n_draw for j in js] + [sum(j.n_draw for j in js)],
                "n_categories": [0 if j.empty else 1 for j in js] + [len(used)],
                "resamples": p.resamples,
                "bt_nonconverged": bad + [sum(bad) + k_bad],
                "note": notes + [_with_nonconverged(macro_note, sum(bad) + k_bad, sum(fits) + k_fits)],
            })
            empty = np.array([j.empty for j in js] + [not used])
            block.insert(list(block.columns).index("resamples") + 1, "degenerate",
                         empty | ((s["ci_high"] - s["ci_low"]) == 0.0))
            blocks.append(block)
    return pd.concat(blocks, ignore_index=True)


def table2(frame: pd.DataFrame, distance: str = "spearman", scale: float = 1000.0) -> pd.DataFrame:
    """Pivot a ``run_protocols`` frame into paper 000's Table 2 layout: ``mean ± half_width``
    (× ``scale``) by protocol label (rows) and category (columns, macro last); an empty cell is —."""
    f = frame[frame["distance"] == distance]
    cell = f.assign(cell=["—" if not np.isfinite(m) else f"{m * scale:.0f} ± {h * scale:.0f}"
                          for m, h in zip(f["mean"], f["half_width"], strict=True)])
    wide = cell.pivot(index="label", columns="category", values="cell")
    cols = [c for c in wide.columns if c != MACRO] + ([MACRO] if MACRO in wide.columns else [])
    order = list(dict.fromkeys(f["label"]))
    return wide.loc[order, cols]


__all__ = ["best_single_k", "fit_jobs", "point_distances", "run_protocols", "summarise", "table2"]
