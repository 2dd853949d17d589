"""Style control and sandwich intervals on the leaderboard (issue 24, LMArena's arrangement).

``--style-control`` fits the style-controlled Bradley-Terry (``engine.rankers.style_bt``) on the votes
whose first verdict carries the eight style counts, beside plain BT on the same votes: the table shows
the controlled score and rank, ``rank_plain`` (the plain board's rank) and ``rank_change`` = rank_plain -
rank (+2: two places higher once style is controlled), and the params carry beta per feature with its
interval (``"style"``). Each vote is fitted as its first verdict names it (model_a first), since the
features' standardisation subtracts their mean, which acts as an advantage of the side named first.

Sandwich intervals (``--ci sandwich``, ``engine.rankers.sandwich``) need a logistic ranker (BT): score -/+
z * standard error, no rank intervals. Under style control they are the default, as on LMArena.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.rankers import RankResult
from engine.rankers.base import ranks_from_scores, ranks_from_scores_batch, series
from engine.rankers.objects import Ranker
from engine.rankers.votes import PairCounts, VoteRows
from engine.rankers.votes import votes as make_votes
from engine.ranking.board import (
    NOT_ESTIMABLE,
    TABLE_COLUMNS,
    BoardSpec,
    Leaderboard,
    frame_columns,
    interval_columns,
    plain_values,
)
from engine.store.schema import STYLE_FEATURES

if TYPE_CHECKING:
    from engine.store.connection import Store

STYLE_TABLE_COLUMNS = ("rank_plain", "rank_change")
"""Appended to the table under style control: the plain board's rank and rank_plain - rank."""

CI_METHODS = ("sandwich", "bootstrap")

NO_FEATURES = (
    "No verdict of this selection carries style features (answer tokens, headers, lists and bold per side: "
    "a conv_metadata field, tokens_a ... bold_b columns, or answer texts in the store), so --style-control "
    "has nothing to control for."
)


def check_interval_choice(spec: BoardSpec) -> None:
    """Refuse, in one sentence and before any data is read, a combination the intervals or the style
    fit cannot serve."""
    if spec.ci is not None and spec.ci not in CI_METHODS:
        raise LensError(f"Unknown interval method {spec.ci!r}; choose sandwich or bootstrap.")
    obj = spec.obj
    wants_model = spec.ci_method == "sandwich" or spec.style_control
    what = "--style-control" if spec.style_control else "--ci sandwich"
    if wants_model and not obj.logistic:
        raise LensError(f"{what} needs the Bradley-Terry likelihood; the {spec.ranker} ranker has none "
                        "(use --ranker bt).")
    if wants_model and obj.check(spec.ranker_params).get("soft"):
        raise LensError(f"{what} fits hard outcomes; soft=true (judge probabilities) is not supported there.")
    if spec.ci_method == "sandwich" and spec.bootstrap:
        raise LensError("--bootstrap B draws resamples for --ci bootstrap; sandwich intervals need none "
                        "(drop --bootstrap, or give --ci bootstrap).")
    if spec.style_control and spec.keep_k is not None:
        raise LensError(
            "--style-control fits every vote of the selection; it does not combine with --keep-k."
        )
    if spec.style_control and spec.ci_method == "bootstrap" and not spec.bootstrap:
        raise LensError("--ci bootstrap under --style-control needs --bootstrap B (the resamples to refit).")
    if spec.style_control and spec.bootstrap_unit not in (None, "vote"):
        raise LensError("Under --style-control the bootstrap resamples votes (as arena-rank does); "
                        f"--bootstrap-unit {spec.bootstrap_unit} is not supported there.")


def score_interval_columns(low: np.ndarray, high: np.ndarray, note: str = "") -> dict[str, Any]:
    """The table's interval columns from score intervals alone (the sandwich's): ci_low, ci_high, no rank
    intervals, ``ci_note`` (``note`` on every row), and, where the board has the column, ``rank_ub``
    computed by its owner (``engine.ranking.board.rank_upper_bound``, issue 24 point 3) from these
    intervals."""
    n = low.size
    na = pd.array([pd.NA] * n, dtype="Int64")
    cols: dict[str, Any] = {"ci_low": low, "ci_high": high, "rank_low": na, "rank_high": na.copy(),
                            "ci_note": pd.array([note] * n, dtype="string")}
    if "rank_ub" in TABLE_COLUMNS:
        from engine.ranking import board

        cols["rank_ub"] = pd.array(getattr(board, "rank_upper_bound")(low, high), dtype="Int64")  # noqa: B009
    return cols


def sandwich_columns(pc: PairCounts, res: RankResult, obj: Ranker, params: dict, level: float
                     ) -> tuple[dict[str, Any], str | None, pd.DataFrame | None]:
    """The table's interval columns from plain BT's sandwich (``bt_sandwich``) on the score scale
    (``Ranker.from_log`` / ``to_log`` under ``params``), in ``pc.models`` order, why they
    are empty when they are (a regularised fit: the MLE does not exist, so neither does its
    sandwich), and the covariance of the natural-log strengths (``Leaderboard.covariance``)."""
    n = pc.n
    if res.details.get("alpha", 0.0):
        why = ("sandwich intervals need the maximum-likelihood estimate, which does not exist for this "
               "selection (the fit added virtual ties)")
        return score_interval_columns(np.full(n, np.nan), np.full(n, np.nan), NOT_ESTIMABLE), why, None
    from engine.rankers.sandwich import bt_sandwich, z_quantile

    theta = obj.to_log(res.scores.reindex(pc.models).to_numpy(np.float64), params)
    cov = bt_sandwich(n, pc.lo, pc.hi, pc.wins_lo, pc.wins_hi, pc.ties, theta, covariance=True)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    z = z_quantile(level)
    low, high = obj.from_log(theta - z * se, params), obj.from_log(theta + z * se, params)
    return score_interval_columns(low, high), None, covariance_frame(cov, pc.models)


def covariance_frame(cov: np.ndarray, models) -> pd.DataFrame:
    """A strengths' covariance matrix labelled by model on both axes."""
    names = pd.Index([str(m) for m in models], name="model")
    return pd.DataFrame(cov, index=names, columns=names)


def style_battles(rows: VoteRows, votes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per vote, the battle as its first verdict names it: (a = that verdict's model_a, b, a's outcome
    1 / 0 / 0.5, its eight style counts, model_a's four then model_b's)."""
    if rows.style is None:
        raise ValueError("the rows were read without their style counts (style=True)")
    first = votes.row
    own = len(votes) == len(rows) and bool(np.array_equal(first, np.arange(len(rows))))
    a = rows.a.astype(np.int64) if own else rows.a[first].astype(np.int64)  # every verdict its own vote:
    b = rows.b.astype(np.int64) if own else rows.b[first].astype(np.int64)  # no gather needed
    y_lo = np.where(votes.outcome > 0, 1.0, np.where(votes.outcome < 0, 0.0, 0.5))
    y = np.where(a == votes.lo, y_lo, 1.0 - y_lo)
    return a, b, y, (rows.style if own else rows.style[first])


def style_leaderboard(store: Store, dataset: str, judge, category, spec: BoardSpec) -> Leaderboard:
    """The style-controlled leaderboard of a stored dataset: DuckDB -> VoteRows with style -> votes."""
    from engine.ranking.count_board import filtered_judges, no_valid_verdict
    from engine.ranking.vote_query import store_vote_rows

    check_interval_choice(spec)
    rows = store_vote_rows(store, dataset, judge=judge, category=category, style=True)
    if len(rows) == 0:
        no_valid_verdict(dataset, judge, category)
    assert rows.style is not None
    if not np.isfinite(rows.style).all(axis=1).any():  # one sentence naming what is missing
        from engine.ranking.vote_query import store_style_coverage

        said = store_style_coverage(store, dataset, judge=judge, category=category).sentence()
        raise LensError(said or NO_FEATURES)
    extra = {"dataset": dataset, "dataset_version": store.dataset_version(dataset), "judge": judge,
             "category": category, "judges": filtered_judges(store, dataset, judge),
             "n_invalid_verdicts": rows.n_invalid}
    plain = None
    if np.isfinite(rows.style).all():  # every vote fitted: the plain board is the store's own (DuckDB counts)
        from engine.ranking.count_board import count_leaderboard

        plain = count_leaderboard(store, dataset, judge, category, plain_spec(spec))
    return leaderboard_from_style_rows(rows, spec, extra_params=extra, plain=plain)


def plain_spec(spec: BoardSpec) -> BoardSpec:
    """The plain board a style-controlled one is compared with: the same ranker and parameters, no
    intervals."""
    return replace(spec, style_control=False, ci="bootstrap", bootstrap=0, bootstrap_unit=None)


def leaderboard_from_style_rows(rows: VoteRows, spec: BoardSpec | None = None, *,
                                extra_params: dict | None = None, plain: Leaderboard | None = None,
                                **choices) -> Leaderboard:
    """The style-controlled board of verdict rows read with their style counts (module docstring);
    ``plain``: the plain board of the same votes when the caller has it (every vote carries features);
    ``choices``: keyword shorthand for the spec's fields."""
    from engine.rankers.sandwich import style_sandwich, z_quantile
    from engine.rankers.style_bt import (
        MIN_PAIR_COUNT,
        RIDGE,
        Battles,
        StyleFit,
        bootstrap_style,
        design_of,
        fit_style_bt,
    )
    from engine.ranking.bootstrap import BootstrapResult
    from engine.ranking.count_board import leaderboard_from_votes

    spec = BoardSpec.of(spec, {"style_control": True, **choices})
    check_interval_choice(spec)
    params = spec.obj.check(spec.ranker_params)
    v = make_votes(replace(rows, style=None), spec.policy)  # the battles read rows.style themselves
    a, b, y, counts = style_battles(rows, v)
    has = np.isfinite(counts).all(axis=1)
    if not has.any():
        raise LensError(NO_FEATURES)
    if plain is None or not has.all():
        plain = leaderboard_from_votes(v if has.all() else v.take(has), plain_spec(spec),
                                       extra_params=extra_params)
    models = list(plain.result.scores.index)
    code = {m: i for i, m in enumerate(models)}
    remap = np.array([code.get(m, -1) for m in rows.models], dtype=np.int64)
    if has.all():
        bt = Battles.of_counts(len(models), remap[a], remap[b], y, counts, reweight=spec.style_reweight)
    else:
        bt = Battles.of_counts(len(models), remap[a[has]], remap[b[has]], y[has], counts[has],
                               reweight=spec.style_reweight)
    obj = spec.obj
    design = design_of(bt)
    # plain BT's strengths: a close start (the optimum does not depend on it)
    start = StyleFit(obj.to_log(plain.result.scores.to_numpy(np.float64), params), np.zeros(bt.x.shape[1]),
                     np.nan, 0, False)
    fit = fit_style_bt(bt, start=start, design=design)
    scores = series(tuple(models), obj.from_log(fit.theta, params))
    level = spec.level
    boot = None
    if spec.ci_method == "sandwich":
        cov_theta, se_beta = style_sandwich(bt, fit, design=design, covariance=True)
        se_theta = np.sqrt(np.maximum(np.diag(cov_theta), 0.0))
        covariance = covariance_frame(cov_theta, models)
        z = z_quantile(level)
        cols = score_interval_columns(obj.from_log(fit.theta - z * se_theta, params),
                                      obj.from_log(fit.theta + z * se_theta, params))
        beta_low, beta_high = fit.beta - z * se_beta, fit.beta + z * se_beta
        n_unconverged = 0
    else:
        covariance = None
        thetas, betas, n_unconverged = bootstrap_style(bt, fit, int(spec.bootstrap), int(spec.seed))
        samples = obj.from_log(thetas, params)
        boot = BootstrapResult("bt", tuple(models), int(spec.bootstrap), int(spec.seed), level, samples,
                               ranks_from_scores_batch(samples), "style-controlled fit refitted per resample",
                               0, n_unconverged, "vote", int(np.isnan(thetas).any(axis=1).sum()))
        cols = frame_columns(interval_columns(boot, models), len(models))
        q = (1.0 - level) / 2.0
        beta_low, beta_high = np.nanquantile(betas, [q, 1.0 - q], axis=0)
        se_beta = np.nanstd(betas, axis=0, ddof=1)
    table = plain.table.set_index("model").loc[models].reset_index()
    table["rank_plain"] = table["rank"].to_numpy()
    table["score"] = scores.to_numpy()
    table["rank"] = ranks_from_scores(scores).to_numpy()
    table = table.assign(**cols)
    table["rank_change"] = table["rank_plain"] - table["rank"]
    table = table.sort_values(["rank", "model"], kind="stable")
    table = table[list(plain.table.columns) + list(STYLE_TABLE_COLUMNS)].reset_index(drop=True)
    assert set(TABLE_COLUMNS) <= set(table.columns)
    # a feature that does not vary over the fitted votes informs nothing: its beta is the ridge's 0 and
    # its interval would read as a certain zero, so it gets none (``None`` in JSON, a note below)
    constant = [f for k, f in enumerate(STYLE_FEATURES) if not np.any(bt.x[:, k] != 0.0)]

    def interval(k: int, f: str, v: float) -> float | None:
        return None if f in constant or not np.isfinite(v) else float(v)

    style = {
        "features": {f: {"beta": float(fit.beta[k]), "ci_low": interval(k, f, beta_low[k]),
                         "ci_high": interval(k, f, beta_high[k]), "se": interval(k, f, se_beta[k])}
                     for k, f in enumerate(STYLE_FEATURES)},
        "constant_features": constant,
        "beta_reads": "change in the log-odds of winning per standard deviation of (a - b) / (a + b) of the "
                      "feature over the fitted votes (positive: more of it wins more)",
        "feature_mean": bt.mean.tolist(), "feature_std": bt.std.tolist(),
        "reweighted": bool(spec.style_reweight),
        "min_pair_count": MIN_PAIR_COUNT if spec.style_reweight else None,
        "ridge": RIDGE, "n_votes_fit": int(has.sum()), "n_votes_without_features": int((~has).sum()),
        "iterations": fit.iterations, "converged": bool(fit.converged), "loss": fit.loss,
        "bootstrap_n_unconverged": n_unconverged if boot is not None else None,
    }
    details = {"model": "style-controlled Bradley-Terry (arena-rank's contextual BT: ratings + beta . style)",
               "solver": "newton", "iterations": fit.iterations, "converged": bool(fit.converged),
               "scale": plain.result.details.get("scale"), "ridge_on_beta": RIDGE}
    res = RankResult(spec.ranker, scores, details)
    info = dict(plain.params)
    info.update({
        "ranker_details": plain_values(details),
        "plain_ranker_details": plain.params.get("ranker_details"),
        "style_control": True,
        "style": plain_values(style),
        "ci_method": spec.ci_method,
        "level": level,
        "bootstrap": int(spec.bootstrap or 0),
        "seed": int(spec.seed) if boot is not None else None,
        "bootstrap_unit": "vote" if boot is not None else None,
        "bootstrap_method": boot.method if boot is not None else None,
        "bootstrap_n_unconverged": n_unconverged if boot is not None else None,
        "bootstrap_n_undefined": boot.n_undefined if boot is not None else None,
        "bootstrap_not_estimable": (None if boot is None else
                                    {str(m): str(w) for m, w in boot.not_estimable.items() if w}),
    })
    return Leaderboard(table, info, plain.n_graphs, plain.kept, res, boot, covariance)


def style_notes(board: Leaderboard) -> list[str]:
    """The lines the CLI adds under a style-controlled board or sandwich intervals."""
    p = board.params
    out: list[str] = []
    st = p.get("style")
    if st:
        pct = f"{p.get('level', 0.95):.0%}"
        betas = "; ".join(f"{f} {v['beta']:+.4f} " + ("(no interval)" if v["ci_low"] is None else
                                                        f"[{v['ci_low']:+.4f}, {v['ci_high']:+.4f}]")
                          for f, v in st["features"].items())
        out.append(f"style control: beta per feature with its {pct} {p['ci_method']} interval (log-odds per "
                   f"standard deviation of (a - b)/(a + b)): {betas}; rank_change = rank_plain - rank, the "
                   "plain Bradley-Terry board on the same votes.")
        if st.get("constant_features"):
            out.append(f"style control: {', '.join(st['constant_features'])} take(s) one value over every "
                       "fitted vote, so the data say nothing of its beta: 0 (the ridge's), no interval.")
        if st["n_votes_without_features"]:
            out.append(f"style control: {st['n_votes_without_features']:,} of "
                       f"{st['n_votes_fit'] + st['n_votes_without_features']:,} votes carry no style "
                       "features and are left out of both fits.")
    if p.get("ci_method") == "sandwich":
        out.append("intervals: sandwich (H^-1 G H^-1), score -/+ z * standard error; no rank intervals.")
        if p.get("sandwich_not_estimable"):
            out.append(f"intervals: {p['sandwich_not_estimable']}.")
    return out

