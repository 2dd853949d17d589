"""Win rate against a baseline model (Arena-Hard's score), predicted by the leaderboard's own fit.

Battles. With a baseline chosen, every valid verdict is one battle: an Arena-Hard record's two games
(the baseline shown first, then second) are two battles, never combined into one vote; a verdict of
strength 2 (a decisive ``A>>B``) counts ``decisive_weight`` times (3 by default where the verdicts
carry a strength, as Arena-Hard counts them; 1 turns it off); a tie is half a win to each side. The
leaderboard's Bradley-Terry fit runs on these battles (its scores, its bootstrap), and the predicted
win rate of model m against baseline b is 1 / (1 + exp(s_b - s_m)) on the fit's natural-log strengths
s (``Ranker.to_log``), 0.5 for the baseline itself. Its interval is the percentile interval of
the same quantity over the bootstrap's refits (default unit here: one battle, which is what
arena-hard-auto resamples).

Why this is Arena-Hard's arithmetic: arena-hard-auto v0.1 doubles every battle, writes a tie as one
win and one loss, and fits an unpenalised logistic regression on the strength differences; its
likelihood is the half-tie BT likelihood on W + T/2 up to a factor 2, so both have the same maximum.
Where that maximum does not exist (a model that never loses to the baseline) the regression has no
finite answer and ours adds the fit's stated virtual ties (``engine.rankers.bt``). The baseline's
win rate reads only the fitted strengths and their resamples, so any fit that gives BT strengths (a
style-controlled fit included) gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.rankers import ranker_object
from engine.rankers.votes import VoteRows, Votes
from engine.rankers.votes import votes as make_votes
from engine.ranking.board import BoardSpec, Leaderboard

if TYPE_CHECKING:
    from engine.store.connection import Store

DECISIVE_WEIGHT = 3
"""How many times a strong verdict (strength 2, ``A>>B``) counts by default where verdicts carry a
strength (arena-hard-auto's weight for ``>>``)."""
STRONG = 2
BASELINE_COLUMNS = ("baseline_win_rate", "baseline_ci_low", "baseline_ci_high")
"""Appended at the end of the leaderboard table when a baseline is chosen."""
BATTLES = "each valid verdict is one battle (presentation orders not combined)"


def decisive_weight_for(rows: VoteRows, given: int | None) -> int:
    """The weight of a strong verdict: ``given``, else ``DECISIVE_WEIGHT`` when any verdict carries a
    strength (the source grades its verdicts, as Arena-Hard does), else 1."""
    if given is not None:
        return check_decisive_weight(given)
    graded = rows.strength is not None and bool((rows.strength > 0).any())
    return DECISIVE_WEIGHT if graded else 1


def check_decisive_weight(value: Any) -> int:
    """A whole number of times, 1 or more (1: a strong verdict counts once, like any other)."""
    try:
        w = int(value)
    except (TypeError, ValueError):
        w = 0
    if str(value).strip() != str(w) or w < 1:
        raise LensError(
            f"decisive_weight says how many times a strong verdict (A>>B) counts and must be a whole "
            f"number, 1 or more; got {value!r}."
        )
    return w


def battle_rows(rows: VoteRows, decisive_weight: int) -> VoteRows:
    """The verdict rows of the battles arena-hard-auto fits: a strong verdict repeated ``decisive_weight``
    times, each row with a voter key of its own, so that ``votes`` pairs no two of them (each is its own
    vote, and a bootstrap over votes resamples the repeats one by one, as arena-hard-auto resamples its
    weighted battle rows). Per-verdict columns (strength, style counts) travel with the repeats."""
    strength = rows.strength if rows.strength is not None else np.zeros(len(rows), dtype=np.int8)
    times = np.where(strength == STRONG, int(decisive_weight), 1)
    idx = np.repeat(np.arange(len(rows)), times)
    return replace(rows.take(idx), voter=np.arange(idx.size, dtype=np.uint64))


def battle_votes(rows: VoteRows, decisive_weight: int) -> Votes:
    """One vote per battle of ``battle_rows`` (no two verdicts combined)."""
    expanded = battle_rows(rows, decisive_weight)
    v = make_votes(expanded)
    if len(v) != len(expanded):  # a 64-bit key collision would pair two battles
        raise ValueError("battle_votes combined two battles into one vote.")
    return replace(v, n_verdicts=len(rows))


def linked_to(rows: VoteRows, baseline: str) -> np.ndarray:
    """(n,) bool: the models a chain of verdicts links to ``baseline`` (its comparison component). A
    model outside has no win rate against it; fitted together, the virtual ties that make such a
    fit exist would also move the linked models' strengths."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = rows.n
    graph = coo_matrix((np.ones(len(rows)), (rows.a.astype(np.int64), rows.b.astype(np.int64))), shape=(n, n))
    _, label = connected_components(graph, directed=False)
    return np.asarray(label == label[rows.models.index(baseline)])


def baseline_win_rates(board: Leaderboard, baseline: str) -> pd.DataFrame:
    """Per model of ``board`` (its table's order): the win rate against ``baseline`` predicted by the
    board's fit and its bootstrap percentile interval (NaN without a bootstrap, and for a model in
    another comparison component than the baseline, which no verdict links to it)."""
    from scipy.special import expit  # here: scipy.special slows every command's start

    obj = ranker_object(board.params["ranker"])
    params = dict(board.params.get("ranker_params") or {})
    models = [str(m) for m in board.table["model"]]
    if baseline not in models:
        raise LensError(f"The baseline {baseline!r} is not on the board; models: {_some(models)}.")
    if not obj.logistic:
        raise LensError(
            f"A win rate against a baseline reads Bradley-Terry strengths, and the {obj.name} ranker's "
            "scores have no such reading; use --ranker bt."
        )
    s = np.asarray(obj.to_log(board.result.scores.reindex(models).to_numpy(np.float64), params))
    b = models.index(baseline)
    rate = expit(s - s[b])
    low, high = np.full(len(models), np.nan), np.full(len(models), np.nan)
    boot = board.bootstrap
    if boot is not None:
        x = np.asarray(obj.to_log(np.asarray(boot.samples, dtype=np.float64), params))
        at = [list(boot.models).index(m) for m in models]
        pw = expit(x[:, at] - x[:, [list(boot.models).index(baseline)]])
        why = boot.not_estimable.reindex(models).fillna("").to_numpy()
        q = (1.0 - boot.level) / 2.0
        ok = (why == "") & ~np.isnan(pw).all(axis=0)
        if ok.any():
            low[ok], high[ok] = np.nanquantile(pw[:, ok], [q, 1.0 - q], axis=0)
        low[b] = high[b] = 0.5
    elif board.covariance is not None:
        low, high = sandwich_win_rate_interval(s, board.covariance.reindex(index=models, columns=models)
                                               .to_numpy(np.float64), b, float(board.params["level"]))
    comp = board.table["component"].to_numpy()
    other = comp != comp[b]
    rate[other], low[other], high[other] = np.nan, np.nan, np.nan
    return pd.DataFrame({"baseline_win_rate": rate, "baseline_ci_low": low, "baseline_ci_high": high},
                        index=pd.Index(models, name="model"))


def sandwich_win_rate_interval(s: np.ndarray, cov: np.ndarray, b: int, level: float
                               ) -> tuple[np.ndarray, np.ndarray]:
    """The ``level`` interval of each model's win rate sigma(s_m - s_b) against model ``b`` from the
    sandwich covariance ``cov`` of the natural-log strengths ``s``: d = s_m - s_b has the variance
    C_mm + C_bb - 2 C_mb (exact: d is linear in s), its z-interval d -/+ z se(d) is mapped through sigma
    (the delta method on the log-odds scale: the interval stays inside (0, 1), and a bootstrap percentile
    interval, which Arena-Hard reports, is likewise unchanged by that monotone map). [0.5, 0.5] for the
    baseline itself (d = 0 with variance 0)."""
    from scipy.special import expit  # here: scipy.special slows every command's start

    from engine.rankers.sandwich import z_quantile

    d = s - s[b]
    var = np.diag(cov) + cov[b, b] - 2.0 * cov[:, b]
    half = z_quantile(level) * np.sqrt(np.maximum(var, 0.0))
    low, high = expit(d - half), expit(d + half)
    low[b] = high[b] = 0.5
    return low, high


def with_baseline(board: Leaderboard, baseline: str, decisive_weight: int | None = None) -> Leaderboard:
    """``board`` with ``BASELINE_COLUMNS`` appended (``baseline_win_rates``) and the baseline named in
    its params."""
    rates = baseline_win_rates(board, baseline)
    table = board.table.assign(**{c: rates[c].to_numpy() for c in BASELINE_COLUMNS})
    comp = board.table["component"].to_numpy()
    b = list(board.table["model"]).index(baseline)
    unlinked = [str(m) for m, c in zip(board.table["model"], comp, strict=True) if c != comp[b]]
    params = {**board.params, "baseline": baseline, "decisive_weight": decisive_weight,
              "baseline_unlinked": list(board.params.get("baseline_unlinked") or []) + unlinked}
    return replace(board, rows=table, params=params)


def baseline_leaderboard(
    store: Store,
    dataset: str,
    spec: BoardSpec,
    baseline: str,
    *,
    decisive_weight: int | None = None,
    judge: str | list[str] | None = None,
    category: str | list[str] | None = None,
    board_from_votes: Callable[..., Leaderboard] | None = None,
    **read_options: Any,
) -> Leaderboard:
    """The leaderboard of a stored dataset fitted on its battles (module docstring) with each model's
    win rate against ``baseline``; ``decisive_weight``: None for the default (3 where verdicts carry a
    strength, else 1). The bootstrap resamples single battles unless ``spec.bootstrap_unit`` says
    otherwise. Refused in one sentence: a ranker without BT strengths, keep-K, a baseline without a
    valid verdict.

    ``board_from_votes(votes, spec, extra_params=...)`` fits the battles (default: the count path's
    ``leaderboard_from_votes``); another fit that gives BT strengths and their bootstrap refits (a
    style-controlled fit, given ``read_options`` such as the style features for ``store_vote_rows``)
    plugs in here, and the win rates read its strengths."""
    from engine.ranking.count_board import filtered_judges, leaderboard_from_votes, no_valid_verdict
    from engine.ranking.vote_query import store_vote_rows

    obj = spec.obj
    params = obj.check(spec.ranker_params)
    if not obj.logistic:
        raise LensError(
            f"--baseline predicts win rates from Bradley-Terry strengths, and the {obj.name} ranker has "
            "none; use --ranker bt."
        )
    if spec.keep_k is not None:
        raise LensError("--baseline fits every battle of the selection; it does not combine with --keep-k.")
    if spec.style_control:  # the style fit reads each battle's style counts
        read_options = {**read_options, "style": True}
    rows = store_vote_rows(store, dataset, judge=judge, category=category, need_strength=True, **read_options)
    if len(rows) == 0:
        no_valid_verdict(dataset, judge, category)
    if baseline not in rows.models:
        raise LensError(
            f"The baseline {baseline!r} has no valid verdict in dataset {dataset!r}"
            f"{' under the filters' if judge is not None or category is not None else ''}; "
            f"models: {_some(rows.models)}."
        )
    weight = decisive_weight_for(rows, decisive_weight)
    linked = linked_to(rows, baseline)
    if not linked.all():  # fit the baseline's component only (``linked_to``)
        rows = rows.take(linked[rows.a])
    spec = replace(spec, ranker_params=params, bootstrap_unit=spec.bootstrap_unit or "vote")
    extra = {
        "dataset": dataset, "dataset_version": store.dataset_version(dataset), "judge": judge,
        "category": category, "judges": filtered_judges(store, dataset, judge),
        "n_invalid_verdicts": rows.n_invalid, "unit": "battles", "battles": BATTLES, "policy": None,
        "baseline_unlinked": [m for m, k in zip(rows.models, linked, strict=True) if not k],
    }
    if spec.style_control and board_from_votes is None:  # the style fit reads the battles' rows
        from engine.ranking.style_board import leaderboard_from_style_rows

        # its verdicts are the rows before a strong one is repeated (the note said "N from N")
        board = leaderboard_from_style_rows(battle_rows(rows, weight), spec,
                                            extra_params={**extra, "n_verdicts_valid": len(rows)})
        return with_baseline(board, baseline, weight)
    battles = battle_votes(rows, weight)
    if not linked.all():
        battles = battles.restrict_models(linked)
    board = (board_from_votes or leaderboard_from_votes)(battles, spec, extra_params=extra)
    return with_baseline(board, baseline, weight)


def baseline_notes(board: Leaderboard) -> list[str]:
    """What a reader of the baseline columns should know: how battles were counted and what the win
    rate and its interval are."""
    p = board.params
    if p.get("baseline") is None:
        return []
    w = p.get("decisive_weight")
    out = [
        f"baseline: baseline_win_rate = the win rate against {p['baseline']} predicted by the "
        f"{p['ranker']} fit, 1 / (1 + exp(s_baseline - s_model)); 0.5 for {p['baseline']} itself."
    ]
    if p.get("unit") == "battles":
        weight = (f"a strong verdict (strength 2, A>>B) counts {w} times (--param decisive_weight=1 counts "
                  "it once)" if w and w > 1 else "every verdict counts once")
        out.append(f"battles: {p.get('n_votes')} from {p.get('n_verdicts_valid')} valid verdicts; {BATTLES}; "
                   f"{weight}; a tie is half a win to each side.")
    if p.get("style_control"):
        out.append("baseline: under style control s is the style-controlled rating, so the win rate is the "
                   "prediction at zero style difference, sigma(theta_model - theta_baseline).")
    if p.get("ci_method") == "sandwich" and not p.get("bootstrap"):
        out.append(
            f"baseline: baseline_ci_low / baseline_ci_high = sigma(d -/+ z se(d)), d = s_model - s_baseline, "
            f"se(d) from the sandwich covariance (var_m + var_b - 2 cov_mb), level {p.get('level'):g}."
        )
    if p.get("bootstrap"):
        unit = p.get("bootstrap_unit")
        out.append(
            f"baseline: baseline_ci_low / baseline_ci_high = the {p.get('level'):g} percentile interval of "
            f"the predicted win rate over {p['bootstrap']} refits on resampled {unit}s"
            f"{' (single battles, as arena-hard-auto resamples)' if unit == 'vote' else ''}."
        )
    if p.get("baseline_unlinked"):
        where = ("left off the board (the fit covers the baseline's comparison component)"
                 if p.get("unit") == "battles" else "their win rate against it is left empty")
        out.append(f"baseline: no chain of verdicts links {_some(p['baseline_unlinked'])} to "
                   f"{p['baseline']}; {where}.")
    return out


def _some(names, k: int = 8) -> str:
    names = list(names)
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")
