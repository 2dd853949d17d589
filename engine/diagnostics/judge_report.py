"""The judge report (issue 28, point 3): one row per judge against a reference judge (``human`` by default
when the dataset has one): agreement and Cohen's kappa on two kinds of labels, position bias, length bias,
self-preference, and the cycle statistics where graphs can hold cycles.

What each column computes (the reference's own row has empty comparison columns):

- ``verdicts``: the judge's valid verdicts.
- ``items_vs_ref``, ``agreement_vs_ref``, ``kappa_by_model``: the ``agreement`` table's numbers (its
  module): per item (a pair in one prompt instance) the judge's verdicts combined by the policy into which
  MODEL won (lo / tie / hi, both presentation orders combined), compared with the reference's.
- ``items_shown_vs_ref``, ``kappa_as_shown``: Cohen's kappa on the labels AS SHOWN (first-shown answer
  won / tie / second-shown won), per item and presentation order, on the (item, order) cells both judges
  judged; position bias enters these labels, so the two kappas differ when a judge favours a side.
- ``first_win_rate``, ``first_win_rate_decisive``, ``order_consistency``, ``mcnemar_p_ordinal``: the
  ``position`` table's numbers (its module).
- ``length_verdicts``, ``longer_wins``: among decisive verdicts on two answers of different lengths
  (characters of the stored answer texts), the share the longer answer won; empty without texts.
- ``style_beta_tokens``: the fitted coefficient of the length feature (``tokens``, the answer's token
  count) in the judge's own style-controlled Bradley-Terry, the fit and features of ``leaderboard --judge J
  --style-control`` (``engine.ranking.style_board``; log-odds per standard deviation of (a - b)/(a + b),
  the other style features held equal); empty without texts or where the judge's verdicts carry none.
- ``family``, ``self_verdicts``, ``self_win_rate``, ``self_win_rate_ref``, ``self_preference``: the
  judge's family by the NAME RULE below; among its verdicts on items where exactly one model is of its
  family, the share that model won (ties one half); the reference's same share on the same items; and
  their difference (positive: the judge favours its own family more than the reference does).
- ``triples``, ``pnt``, ``graph_cycle_rate``: the overview's triples and PNT (``nontransitivity``) and the
  share of the judge's graphs of 3 or more models holding a cycle (``cycle_stats``); empty where no graph
  has 3 models (a battle log).

NAME RULE for families: the leading run of letters of the lower-cased name: gpt-4, gpt35 and
gpt-3.5-turbo are ``gpt``; claude-3-opus is ``claude``; vicuna-13b is ``vicuna``. A judge whose family
matches no model's family has empty self-preference columns.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from engine.diagnostics.agreement import INSTANCE, cohen_kappa
from engine.diagnostics.verdict_pairs import verdict_outcomes
from engine.graphs.stack import DEFAULT_POLICY, combine_counts

COLUMNS: tuple[str, ...] = (
    "judge", "reference", "verdicts", "items_vs_ref", "agreement_vs_ref", "kappa_by_model",
    "items_shown_vs_ref", "kappa_as_shown", "first_win_rate", "first_win_rate_decisive", "order_consistency",
    "mcnemar_p_ordinal", "length_verdicts", "longer_wins", "style_beta_tokens", "family",
    "self_verdicts", "self_win_rate", "self_win_rate_ref", "self_preference", "triples", "pnt",
    "graph_cycle_rate",
)


def family(name: str) -> str:
    """A model's or judge's family by the name rule (module docstring); '' when the name has no letter."""
    m = re.search(r"[a-z]+", str(name).lower())
    return m.group(0) if m else ""


def default_reference(judges) -> str | None:
    """``human`` when the judges include it, else None (no comparison columns)."""
    return "human" if "human" in set(judges) else None


def _shown(vo: pd.DataFrame) -> pd.DataFrame:
    """Verdicts of known order with ``first`` (1.0 lo shown first, 0.0 second) and ``shown`` (+1 the
    first-shown answer won, -1 the second-shown, 0 tie)."""
    vo = vo[vo["lo_first"].notna()]
    shown = np.where(vo["lo_first"] == 1.0, vo["outcome"], -vo["outcome"])
    return vo.assign(first=vo["lo_first"], shown=shown)


def kappa_as_shown(vo: pd.DataFrame, reference: str, policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """Per judge: (item, order) cells judged by both it and ``reference`` and Cohen's kappa of the labels
    as shown, each cell's verdicts combined by ``policy``."""
    s = _shown(vo)
    keys = ["judge", *INSTANCE, "first"]
    s = s.assign(w=(s["shown"] > 0).astype(np.int64), l_=(s["shown"] < 0).astype(np.int64),
                 t=(s["shown"] == 0).astype(np.int64))
    g = s.groupby(keys, sort=True, dropna=False)[["w", "l_", "t"]].sum().reset_index()
    return kappa_of_shown_cells(g, [*INSTANCE, "first"], reference, policy)


def kappa_of_shown_cells(g: pd.DataFrame, on: list[str], reference: str,
                         policy: str = DEFAULT_POLICY) -> pd.DataFrame:
    """``kappa_as_shown`` from one row per (judge, item, order shown) with the verdicts the first-shown
    answer won (``w``), lost (``l_``) and tied (``t``); ``on``: the columns naming an (item, order) cell
    (the verdict frame's item columns, or the store counts' item number) and ``first``."""
    g = g.assign(label=combine_counts(g["w"].to_numpy(), g["l_"].to_numpy(), g["t"].to_numpy(), policy))
    ref = g[g["judge"] == reference][[*on, "label"]]
    rows = []
    for judge, part in g[g["judge"] != reference].groupby("judge", sort=True):
        m = part[[*on, "label"]].merge(ref, on=on, suffixes=("", "_ref"))
        rows.append({"judge": judge, "items_shown_vs_ref": len(m),
                     "kappa_as_shown": cohen_kappa(m["label"].to_numpy(), m["label_ref"].to_numpy())})
    return pd.DataFrame(rows, columns=["judge", "items_shown_vs_ref", "kappa_as_shown"])


def length_bias(verdicts: pd.DataFrame, lengths: pd.DataFrame) -> pd.DataFrame:
    """Per judge: decisive verdicts on answers of different lengths and the share the longer one won.
    ``lengths``: prompt_id, variant, turn, model, length (one row per answer)."""
    key = ["prompt_id", "variant", "turn"]
    v = verdicts[verdicts["winner"].isin(["A", "B"])][["judge", *key, "model_a", "model_b", "winner"]]
    ln = lengths[[*key, "model", "length"]].astype({"prompt_id": str})
    v = v.astype({"prompt_id": str})
    v = v.merge(ln.rename(columns={"model": "model_a", "length": "len_a"}), on=[*key, "model_a"])
    v = v.merge(ln.rename(columns={"model": "model_b", "length": "len_b"}), on=[*key, "model_b"])
    v = v[v["len_a"] != v["len_b"]]
    longer_won = (v["len_a"] > v["len_b"]) == (v["winner"] == "A")
    out = v.assign(lw=longer_won.astype(np.int64)).groupby("judge", sort=True).agg(
        length_verdicts=("lw", "size"), longer_wins=("lw", "mean")).reset_index()
    return out


LENGTH_FEATURE = "tokens"
"""The style feature that measures length (``engine.store.schema.STYLE_FEATURES``)."""


def style_length_betas(store, dataset: str, judges, category: str | None = None) -> pd.DataFrame:
    """Per judge: the coefficient of the length feature in its style-controlled Bradley-Terry, the board of
    ``leaderboard --judge J --style-control`` (NaN where the judge's verdicts carry no style features).
    One fit per judge."""
    from engine.errors import LensError
    from engine.ranking.leaderboard import leaderboard

    rows = []
    for judge in judges:
        try:
            board = leaderboard(store, dataset, ranker="bt", style_control=True, judge=judge,
                                category=category)
            beta = float(board.params["style"]["features"][LENGTH_FEATURE]["beta"])
        except LensError:  # no valid verdict, or none with style features: an empty cell
            beta = np.nan
        rows.append({"judge": judge, f"style_beta_{LENGTH_FEATURE}": beta})
    return pd.DataFrame(rows, columns=["judge", f"style_beta_{LENGTH_FEATURE}"])


def _families(names: pd.Series) -> pd.Series:
    """``names.map(family)``, the rule run once per distinct name (a million verdicts name 100 models)."""
    codes, uniques = pd.factorize(names, use_na_sentinel=False)
    fams = np.array([family(u) for u in uniques], dtype=object)
    return pd.Series(fams[codes], index=names.index, name=names.name)


def self_preference(vo: pd.DataFrame, reference: str | None) -> pd.DataFrame:
    """Per judge: its family, verdicts on items with exactly one model of its family, that model's win
    share (ties half) in the judge's verdicts and in the reference's on the same items, and the gap."""
    cells = vo.assign(lw=(vo["outcome"] > 0).astype(np.int64), hw=(vo["outcome"] < 0).astype(np.int64),
                      tie=(vo["outcome"] == 0).astype(np.int64))
    cells = (cells.groupby(["judge", *INSTANCE], sort=False, dropna=False)[["lw", "hw", "tie"]].sum()
             .reset_index())
    return self_preference_of_cells(cells, sorted(vo["judge"].dropna().unique()), reference)


def self_preference_of_cells(cells: pd.DataFrame, judges: list[str], reference: str | None) -> pd.DataFrame:
    """``self_preference`` from one row per (judge, item) (the ``INSTANCE`` columns, ``lo`` and ``hi`` by
    name) with the verdicts lo won (``lw``), hi won (``hw``) and tied (``tie``); ``judges``: the judges with
    a valid verdict, sorted. A share is (own wins + ties / 2) / verdicts: the mean of the verdicts' scores
    (1, 1/2, 0), exactly, the sums being multiples of 1/2."""
    fam_lo, fam_hi = _families(cells["lo"]), _families(cells["hi"])
    lw, hw, tie = (cells[c].to_numpy(np.int64) for c in ("lw", "hw", "tie"))
    rows = []
    for judge in judges:
        fam = family(judge)
        own_is_lo = (fam_lo == fam).to_numpy()
        one = own_is_lo != (fam_hi == fam).to_numpy()
        n = lw + hw + tie
        score = np.where(own_is_lo, lw, hw) + 0.5 * tie
        mine = one & (cells["judge"] == judge).to_numpy()
        n_mine = int(n[mine].sum())
        row = {"judge": judge, "family": fam, "self_verdicts": n_mine,
               "self_win_rate": float(score[mine].sum()) / n_mine if n_mine else np.nan,
               "self_win_rate_ref": np.nan}
        if reference is not None and judge != reference and n_mine:
            items = cells.loc[mine, list(INSTANCE)].drop_duplicates()
            theirs = (cells.assign(n=n, score=score)[one & (cells["judge"] == reference).to_numpy()]
                      .merge(items, on=list(INSTANCE)))
            n_theirs = int(theirs["n"].sum())
            if n_theirs:
                row["self_win_rate_ref"] = float(theirs["score"].sum()) / n_theirs
        rows.append(row)
    out = pd.DataFrame(rows, columns=["judge", "family", "self_verdicts", "self_win_rate",
                                      "self_win_rate_ref"])
    out["self_preference"] = out["self_win_rate"] - out["self_win_rate_ref"]
    return out


def cycle_rates(verdicts: pd.DataFrame, policy: str = DEFAULT_POLICY, big_graphs=None) -> pd.DataFrame:
    """Per judge: the share of its graphs of 3 or more models that hold a cycle (``cycle_stats``);
    ``big_graphs``: the verdicts' graphs that name 3+ models already built (GraphBuckets), else built here."""
    from engine.diagnostics import cycle_stats
    from engine.graphs.buckets import build_buckets

    stack = build_buckets(verdicts, policy=policy) if big_graphs is None else big_graphs
    if not stack.at_least(3):
        return pd.DataFrame(columns=["judge", "graph_cycle_rate"])
    ctab, _ = cycle_stats.cycle_table(stack)
    rates = cycle_stats.inconsistency_rates(ctab, ("judge",))
    return rates[["judge", "graph_inconsistency_rate"]].rename(
        columns={"graph_inconsistency_rate": "graph_cycle_rate"})


def judge_report(verdicts: pd.DataFrame, *, reference: str | None = "default", policy: str = DEFAULT_POLICY,
                 lengths: pd.DataFrame | None = None,
                 style_betas: pd.DataFrame | None = None, big_graphs=None,
                 n_graphs: int | None = None) -> pd.DataFrame:
    """The judge report of a verdict frame (module docstring), one row per judge sorted by name.

    ``reference``: the judge every other is compared with ("default": ``human`` when present, else none);
    ``lengths``: the answers' lengths (prompt_id, variant, turn, model, length) or None (no length bias);
    ``style_betas``: ``style_length_betas`` of the same selection, or None (the column empty);
    ``big_graphs``, ``n_graphs``: the verdicts' graphs that name 3+ models (GraphBuckets, built by ``policy``)
    and the count of all their graphs, else every graph is built here (``diagnostics.overview``)."""
    from engine.diagnostics import overview

    judges = sorted(verdicts["judge"].dropna().astype(str).unique())
    ref = default_reference(judges) if reference == "default" else reference
    ov = overview(verdicts, reference=ref, policy=policy, big_graphs=big_graphs, n_graphs=n_graphs)
    out = ov.rename(columns={f"items_vs_{ref}": "items_vs_ref", f"agreement_vs_{ref}": "agreement_vs_ref",
                             f"kappa_vs_{ref}": "kappa_by_model"})
    valid = verdicts[verdicts["winner"] != "invalid"]
    counts = valid.groupby("judge").size().rename("verdicts").reset_index()
    out = out.merge(counts, on="judge", how="left")
    vo = verdict_outcomes(verdicts)
    if ref is not None:
        out = out.merge(kappa_as_shown(vo, ref, policy), on="judge", how="left")
    if lengths is not None and len(lengths):
        out = out.merge(length_bias(valid, lengths), on="judge", how="left")
    if style_betas is not None and len(style_betas):
        out = out.merge(style_betas, on="judge", how="left")
    out = out.merge(self_preference(vo, ref), on="judge", how="left")
    out = out.merge(cycle_rates(verdicts, policy, big_graphs), on="judge", how="left")
    return _finished(out, ref, list(ov.attrs.get("notes") or []), lengths is not None and len(lengths) > 0)


def store_lengths(store, dataset: str) -> pd.DataFrame:
    """The answers' lengths in characters (prompt_id, variant, turn, model, length) of a stored dataset,
    counted in DuckDB (the texts never reach Python)."""
    return store.cursor().execute(
        "SELECT prompt_id, variant, turn, model, length(text) AS length FROM answers WHERE dataset = ? "
        "AND text IS NOT NULL", [dataset]).df()


def judge_report_of_counts(store, dataset: str, category: str | None, counts, *,
                           reference: str | None = "default", policy: str = DEFAULT_POLICY,
                           style_betas: pd.DataFrame | None = None, big_graphs=None,
                           n_graphs: int | None = None) -> pd.DataFrame:
    """``judge_report`` of a stored dataset (of ``category``) from verdict counts grouped in DuckDB, not a
    frame of every verdict. ``counts``: ``engine.diagnostics.judge_counts.judge_counts`` of the same
    selection, whose position and agreement tables and labels as shown these are; the self-preference
    cells and the length comparison are grouped in SQL here. Each table is made by the frame path's own
    second half (``overview_of_tables``, ``kappa_of_shown_cells``, ``self_preference_of_cells``), so the
    numbers are the frame path's (tests/test_judge_report_store.py). ``big_graphs`` and ``n_graphs`` as for
    ``judge_report`` (required: no graph is built here). A verdict with a presentation order other than
    AB, BA or none (an attached file) is not counted: the caller takes the frame path, which names its row
    (``judge_counts.bad_order``)."""
    from engine.diagnostics import overview_of_tables
    from engine.diagnostics.judge_counts import position_from_counts

    judges = list(counts.judges)
    ref = default_reference(judges) if reference == "default" else reference
    pos = position_from_counts(counts, ("judge",), policy)
    ag = _agreement_of_counts(counts, ref, policy) if ref is not None and ref in set(judges) else None
    ov = overview_of_tables(judges, big_graphs, pos, ag, reference=ref, n_graphs=n_graphs)
    out = ov.rename(columns={f"items_vs_{ref}": "items_vs_ref", f"agreement_vs_{ref}": "agreement_vs_ref",
                             f"kappa_vs_{ref}": "kappa_by_model"})
    cells = counts.cells
    names = counts.names
    per_judge = cells.groupby("judge", sort=True)[["lo_win", "hi_win", "tie"]].sum()
    valid = pd.DataFrame({"judge": names[per_judge.index.to_numpy(np.int64)].astype(object),
                          "verdicts": per_judge.sum(axis=1).to_numpy(np.int64)})
    out = out.merge(valid, on="judge", how="left")
    if ref is not None:
        known = cells[cells["lo_first"].notna()]
        lo_first = (known["lo_first"] == 1.0).to_numpy()
        shown = pd.DataFrame({
            "judge": names[known["judge"].to_numpy(np.int64)].astype(object),
            "item": known["item"].to_numpy(np.int64), "first": known["lo_first"].to_numpy(np.float64),
            "w": np.where(lo_first, known["lo_win"], known["hi_win"]).astype(np.int64),
            "l_": np.where(lo_first, known["hi_win"], known["lo_win"]).astype(np.int64),
            "t": known["tie"].to_numpy(np.int64)})
        out = out.merge(kappa_of_shown_cells(shown, ["item", "first"], ref, policy), on="judge", how="left")
    has_texts = has_answer_texts(store, dataset)
    if has_texts:
        out = out.merge(_length_bias_in_store(store, dataset, category), on="judge", how="left")
    if style_betas is not None and len(style_betas):
        out = out.merge(style_betas, on="judge", how="left")
    fam_cells = _family_cells(store, dataset, category, [str(n) for n in names])
    out = out.merge(self_preference_of_cells(fam_cells, [str(n) for n in names], ref), on="judge", how="left")
    out = out.merge(cycle_rates(pd.DataFrame(), policy, big_graphs), on="judge", how="left")
    return _finished(out, ref, list(ov.attrs.get("notes") or []), has_texts)


def _agreement_of_counts(counts, reference: str, policy: str) -> pd.DataFrame:
    """``agreement.agreement(verdicts, reference=reference)`` of the counted verdicts (a reference without a
    valid verdict shares no item)."""
    from engine.diagnostics.agreement import agreement_of_items
    from engine.diagnostics.judge_counts import item_table

    names = list(counts.names)
    every = np.array([*names, *([] if reference in names else [reference])], dtype=object)
    table = agreement_of_items(item_table(counts, policy), ("item",), reference=list(every).index(reference))
    table["judge_1"] = every[table["judge_1"].to_numpy(np.int64)].astype(object)
    table["judge_2"] = every[table["judge_2"].to_numpy(np.int64)].astype(object)
    return table


def has_answer_texts(store, dataset: str) -> bool:
    """Whether the dataset holds an answer text (``store_lengths`` has a row)."""
    row = store.cursor().execute("SELECT count(*) FROM (SELECT 1 FROM answers WHERE dataset = ? AND text IS "
                                 "NOT NULL LIMIT 1)", [dataset]).fetchone()
    return bool(row[0])


def _length_bias_in_store(store, dataset: str, category: str | None) -> pd.DataFrame:
    """``length_bias`` of the stored verdicts against ``store_lengths``, joined and counted in DuckDB."""
    from engine.diagnostics.judge_counts import verdict_source
    from engine.store.sql import params

    rel = verdict_source(store, dataset, category)
    got = store.cursor().execute(f"""
        WITH ln AS (SELECT prompt_id, variant, turn, model, length(text) AS length FROM answers
                    WHERE dataset = $lens_texts_dataset AND text IS NOT NULL)
        SELECT v.judge, count(*) AS n,
               count(*) FILTER (WHERE (la.length > lb.length) = (v.winner = 'A')) AS lw
        FROM {rel} v
        JOIN ln la ON la.prompt_id = v.prompt_id::VARCHAR AND la.variant = v.variant AND la.turn = v.turn
                  AND la.model = v.model_a
        JOIN ln lb ON lb.prompt_id = v.prompt_id::VARCHAR AND lb.variant = v.variant AND lb.turn = v.turn
                  AND lb.model = v.model_b
        WHERE v.winner IN ('A', 'B') AND v.judge IS NOT NULL AND la.length <> lb.length
        GROUP BY v.judge ORDER BY v.judge""", params(rel, {"lens_texts_dataset": dataset})).fetchall()
    return pd.DataFrame({"judge": [r[0] for r in got],
                         "length_verdicts": np.array([r[1] for r in got], dtype=np.int64),
                         "longer_wins": np.array([r[2] / r[1] for r in got], dtype=np.float64)})


def _family_cells(store, dataset: str, category: str | None, judges: list[str]) -> pd.DataFrame:
    """``self_preference_of_cells``' cells of the stored valid verdicts: per (judge, item) lo's wins, hi's
    wins and ties, only of items with a model of some judge's family (no other item counts for any)."""
    from engine.diagnostics.judge_counts import verdict_source
    from engine.store.sql import params

    rel = verdict_source(store, dataset, category)
    con = store.cursor()
    valid = f"(SELECT * FROM {rel} WHERE winner IS DISTINCT FROM 'invalid' AND judge IS NOT NULL)"
    models = [r[0] for r in con.execute(
        f"SELECT DISTINCT m FROM (SELECT model_a AS m FROM {valid} UNION ALL SELECT model_b FROM {valid})",
        params(rel)).fetchall()]
    wanted = {family(j) for j in judges}
    own = pd.DataFrame({"model": pd.Series([m for m in models if family(m) in wanted], dtype=object)})
    con.register("lens_family_models", own)
    try:
        cells = con.execute(f"""
            SELECT judge, prompt_id, variant, turn, lo, hi,
                   count(*) FILTER (WHERE outcome > 0) AS lw, count(*) FILTER (WHERE outcome < 0) AS hw,
                   count(*) FILTER (WHERE outcome = 0) AS tie
            FROM (SELECT judge, prompt_id, variant, turn, least(model_a, model_b) AS lo,
                         greatest(model_a, model_b) AS hi,
                         CASE WHEN winner = 'A' THEN 1 WHEN winner = 'B' THEN -1 ELSE 0 END
                           * CASE WHEN model_a > model_b THEN -1 ELSE 1 END AS outcome
                  FROM {valid})
            WHERE lo IN (SELECT model FROM lens_family_models) OR hi IN (SELECT model FROM lens_family_models)
            GROUP BY judge, prompt_id, variant, turn, lo, hi""", params(rel)).df()
    finally:
        con.unregister("lens_family_models")
    return cells.assign(dataset=dataset)


def _finished(out: pd.DataFrame, ref: str | None, notes: list[str], has_texts: bool) -> pd.DataFrame:
    """The report's columns in order, sorted by judge, counts as nullable integers, its notes attached."""
    out["reference"] = ref
    for c in COLUMNS:
        if c not in out.columns:
            out[c] = np.nan
    out = out[list(COLUMNS)].sort_values("judge").reset_index(drop=True)
    for c in ("verdicts", "items_vs_ref", "items_shown_vs_ref", "length_verdicts", "self_verdicts",
              "triples"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype("Int64")
    if ref is None:
        notes.append("No reference judge (no judge named human, and none given with --reference): the "
                     "agreement, kappa and reference columns are empty.")
    if not has_texts:
        notes.append("The dataset holds no answer texts: length bias is not measured.")
    if notes:
        out.attrs["notes"] = notes
    return out
