"""The leaderboard of the judge panel (``leaderboard --ranker panel``): verdicts → counts per (judge, model
shown first, model shown second, order known) grouped in DuckDB → the joint fit of
``engine.rankers.panel`` → the table, with intervals from the fit's observed information.

Each verdict is one observation (the panel models the side a verdict favours, so the two presentation
orders of a pair are not combined into one vote; ``--policy`` does not apply). Memory: the counts are
O(judges x compared ordered pairs), whatever the number of verdicts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.rankers.panel import Z95, PanelCells, panel_result
from engine.ranking.board import (
    TABLE_COLUMNS,
    BoardSpec,
    Leaderboard,
    components_of,
    plain_values,
    rank_upper_bound,
)

if TYPE_CHECKING:
    from engine.store.connection import Store

CI_METHOD = "observed-information"
"""The board's ``ci_method`` for the panel: Wald intervals from the inverse Hessian of its fit."""


def panel_cells(con, relation, *, judge=None, category=None) -> tuple[PanelCells, int]:
    """(the panel's counts of a verdict relation under the judge / category filters, invalid verdicts).
    A valid verdict whose order is neither AB, BA nor empty is refused in one sentence."""
    from engine.ranking.vote_query import check_winners, columns_of, filtered_source
    from engine.store.sql import params

    cols = columns_of(con, relation)
    src = filtered_source(relation, cols, judge, category)
    n_invalid = check_winners(con, src)
    order = "\"order\"" if "order" in cols else "NULL::VARCHAR"
    bad = con.execute(f"SELECT {order} FROM {src} WHERE winner <> 'invalid' AND {order} IS NOT NULL "
                      f"AND {order} NOT IN ('AB', 'BA') LIMIT 1", params(src)).fetchall()
    if bad:
        raise LensError(f"A verdict has presentation order {bad[0][0]!r}; the panel reads AB, BA or empty.")
    out = con.execute(f"""
        SELECT judge::VARCHAR AS judge,
               CASE WHEN {order} = 'BA' THEN model_b ELSE model_a END AS f,
               CASE WHEN {order} = 'BA' THEN model_a ELSE model_b END AS g,
               {order} IS NOT NULL AS known,
               count(*) FILTER (WHERE (winner = 'A') = ({order} IS DISTINCT FROM 'BA') AND winner <> 'tie')
                 AS fw,
               count(*) FILTER (WHERE (winner = 'B') = ({order} IS DISTINCT FROM 'BA') AND winner <> 'tie')
                 AS sw,
               count(*) FILTER (WHERE winner = 'tie') AS t
        FROM {src} WHERE winner <> 'invalid' AND judge IS NOT NULL
        GROUP BY ALL ORDER BY ALL""", params(src)).df()
    models = tuple(sorted(set(out["f"]) | set(out["g"])))
    judges = tuple(sorted(set(out["judge"])))
    mcode = {m: k for k, m in enumerate(models)}
    jcode = {j: k for k, j in enumerate(judges)}
    cells = PanelCells(
        models, judges,
        out["judge"].map(jcode).to_numpy(np.int64), out["f"].map(mcode).to_numpy(np.int64),
        out["g"].map(mcode).to_numpy(np.int64), out["known"].to_numpy(bool),
        out["fw"].to_numpy(np.float64), out["sw"].to_numpy(np.float64), out["t"].to_numpy(np.float64))
    return cells, n_invalid


def _participation(con, src_rel, models: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Per model: distinct graphs (judge, prompt, variant, turn) and prompts of its valid verdicts."""
    from engine.store.sql import params

    # distinct over 64-bit hashes, model by model: a struct's distinct cost 12 s at a million verdicts
    got = con.execute(f"""
        WITH v AS (SELECT hash(judge::VARCHAR, prompt_id::VARCHAR, variant::BIGINT, turn::BIGINT) AS g,
                          hash(prompt_id::VARCHAR) AS p, model_a AS m FROM {src_rel} WHERE winner <> 'invalid'
                   UNION ALL
                   SELECT hash(judge::VARCHAR, prompt_id::VARCHAR, variant::BIGINT, turn::BIGINT),
                          hash(prompt_id::VARCHAR), model_b FROM {src_rel} WHERE winner <> 'invalid')
        SELECT m, count(DISTINCT g) AS g, count(DISTINCT p) AS p
        FROM v GROUP BY m""", params(src_rel)).df().set_index("m")
    got = got.reindex(list(models)).fillna(0)
    return got["g"].to_numpy(np.int64), got["p"].to_numpy(np.int64)


def check_panel_spec(spec: BoardSpec) -> None:
    """Refuse, in one sentence each, the options the panel's board does not take."""
    if spec.keep_k is not None:
        raise LensError("The panel fits every verdict with its judge and order; keep-K truncation does not "
                        "apply to it (drop --keep-k).")
    if spec.bootstrap:
        raise LensError("The panel's intervals come from its fit's observed information; drop --bootstrap.")
    if spec.style_control or spec.ci is not None:
        raise LensError("--style-control and --ci apply to Bradley-Terry on votes, not to the panel.")


def panel_leaderboard(store: Store, dataset: str, spec: BoardSpec, *, judge=None,
                      category=None) -> Leaderboard:
    """The panel's leaderboard of a stored dataset (module docstring)."""
    from engine.ranking.vote_query import columns_of, filtered_source, store_relation

    check_panel_spec(spec)
    params = spec.obj.check(spec.ranker_params)
    relation = store_relation(store, dataset)
    con = store.cursor()
    cells, n_invalid = panel_cells(con, relation, judge=judge, category=category)
    if cells.n_verdicts == 0:
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    if len(cells.models) < 2:
        raise LensError(
            f"The panel ranker needs at least two models, but the selection has {len(cells.models)}.")
    res = panel_result(cells, **params)
    chosen = [r["judge"] for r in res.details["judges"]]
    if len(chosen) != len(cells.judges):
        cells = cells.restrict_judges(chosen)
    src = filtered_source(relation, columns_of(con, relation), chosen, category)
    n_graphs_model, n_prompts = _participation(con, src, cells.models)
    models = list(cells.models)
    n = len(models)
    f, g = cells.first, cells.second
    wins = np.bincount(f, cells.first_wins, n) + np.bincount(g, cells.second_wins, n)
    losses = np.bincount(f, cells.second_wins, n) + np.bincount(g, cells.first_wins, n)
    ties = np.bincount(f, cells.ties, n) + np.bincount(g, cells.ties, n)
    games = wins + losses + ties
    se = res.extras["strength_se"].reindex(models).to_numpy(np.float64)
    score = res.scores.reindex(models).to_numpy(np.float64)
    low, high = score - Z95 * se, score + Z95 * se
    na = pd.array([pd.NA] * n, dtype="Int64")
    table = pd.DataFrame({
        "model": models, "score": score, "ci_low": low, "ci_high": high,
        "rank_low": na, "rank_high": na.copy(),
        "rank_ub": pd.array(rank_upper_bound(low, high), dtype="Int64"),
        "wins": wins.astype(np.int64), "losses": losses.astype(np.int64), "ties": ties.astype(np.int64),
        "win_rate": np.divide(wins + 0.5 * ties, games, out=np.full(n, np.nan), where=games > 0),
        "n_graphs_model": n_graphs_model, "votes": games.astype(np.int64), "n_prompts": n_prompts,
        "ci_note": pd.array(["" if np.isfinite(s) else "not estimable" for s in se], dtype="string"),
    })
    table["rank"] = res.ranks.reindex(models).to_numpy()
    lo = np.minimum(f, g)
    hi = np.maximum(f, g)
    table["component"], components = components_of((lo, hi), models)
    table = table.sort_values(["rank", "model"], kind="stable")[list(TABLE_COLUMNS)].reset_index(drop=True)
    pairs = np.unique(lo * n + hi).size
    info = {
        "ranker": "panel",
        "ranker_params": plain_values(params),
        "ranker_details": plain_values(
            {k: v for k, v in res.details.items() if not isinstance(v, np.ndarray)}),
        "policy": None, "keep_k": None, "mu": None, "per_category": None, "pool": None, "threshold": None,
        "keep_note": None, "n_graphs_pool": None, "n_graphs": None, "n_models": n, "dropped_models": [],
        "bootstrap": 0, "seed": None, "bootstrap_unit": None, "bootstrap_method": None,
        "bootstrap_n_regularised": None, "bootstrap_n_unconverged": None, "bootstrap_n_undefined": None,
        "bootstrap_not_estimable": None, "components": components,
        "n_uncompared_pairs": n * (n - 1) // 2 - pairs, "level": 0.95, "ci_method": CI_METHOD,
        "unit": "verdicts", "n_verdicts_valid": cells.n_verdicts, "n_invalid_verdicts": n_invalid,
        "dataset": dataset, "dataset_version": store.dataset_version(dataset), "judge": judge,
        "judges": chosen, "category": category,
        "fit_from": "verdict counts per judge, model shown first, model shown second (DuckDB)",
    }
    cov = pd.DataFrame(np.asarray(res.extras["strength_cov"]), index=models, columns=models)
    return Leaderboard(table, info, 0, pd.DataFrame(), res, None, cov)
