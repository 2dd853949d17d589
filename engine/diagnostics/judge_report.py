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
    g["label"] = combine_counts(g["w"].to_numpy(), g["l_"].to_numpy(), g["t"].to_numpy(), policy)
    ref = g[g["judge"] == reference][[*INSTANCE, "first", "label"]]
    rows = []
    for judge, part in g[g["judge"] != reference].groupby("judge", sort=True):
        m = part[[*INSTANCE, "first", "label"]].merge(ref, on=[*INSTANCE, "first"], suffixes=("", "_ref"))
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
    fam_lo, fam_hi = _families(vo["lo"]), _families(vo["hi"])
    rows = []
    for judge in sorted(vo["judge"].dropna().unique()):
        fam = family(judge)
        one = (fam_lo == fam) != (fam_hi == fam)
        own_is_lo = (fam_lo == fam).to_numpy()
        score = np.where(vo["outcome"].to_numpy() == 0, 0.5,
                         ((vo["outcome"].to_numpy() > 0) == own_is_lo).astype(np.float64))
        scored = vo.assign(score=score)[one.to_numpy()]
        mine = scored[scored["judge"] == judge]
        row = {"judge": judge, "family": fam, "self_verdicts": len(mine),
               "self_win_rate": float(mine["score"].mean()) if len(mine) else np.nan,
               "self_win_rate_ref": np.nan}
        if reference is not None and judge != reference and len(mine):
            items = mine[list(INSTANCE)].drop_duplicates()
            theirs = scored[scored["judge"] == reference].merge(items, on=list(INSTANCE))
            if len(theirs):
                row["self_win_rate_ref"] = float(theirs["score"].mean())
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
    out["reference"] = ref
    for c in COLUMNS:
        if c not in out.columns:
            out[c] = np.nan
    out = out[list(COLUMNS)].sort_values("judge").reset_index(drop=True)
    for c in ("verdicts", "items_vs_ref", "items_shown_vs_ref", "length_verdicts", "self_verdicts",
              "triples"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype("Int64")
    notes = list(ov.attrs.get("notes") or [])
    if ref is None:
        notes.append("No reference judge (no judge named human, and none given with --reference): the "
                     "agreement, kappa and reference columns are empty.")
    if lengths is None or not len(lengths):
        notes.append("The dataset holds no answer texts: length bias is not measured.")
    if notes:
        out.attrs["notes"] = notes
    return out


def store_lengths(store, dataset: str) -> pd.DataFrame:
    """The answers' lengths in characters (prompt_id, variant, turn, model, length) of a stored dataset,
    counted in DuckDB (the texts never reach Python)."""
    return store.cursor().execute(
        "SELECT prompt_id, variant, turn, model, length(text) AS length FROM answers WHERE dataset = ? "
        "AND text IS NOT NULL", [dataset]).df()
