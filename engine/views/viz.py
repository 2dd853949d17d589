"""Engine-side builders for the app's pages: safe Markdown text and the frames pages draw.

The pages render; this module computes what they render (Cycles heatmaps and graph table,
Judges tables, leaderboard display columns, plot frames). Every user-supplied string (model
names, prompt texts, rationales) that reaches Markdown goes through ``escape_md`` here; long
texts are shown with text elements, never Markdown. The tournament graph drawing is in
``engine.views.graph_html`` and ``engine.views.inspector``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack

_ASCII_PUNCT = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")
"""Every ASCII punctuation character: CommonMark lets each be backslash-escaped to a literal."""


def escape_md(text: object) -> str:
    """``text`` as one line of Streamlit Markdown that renders exactly as written.

    Every ASCII punctuation character is backslash-escaped (CommonMark turns ``\\x`` back into a
    literal ``x``), so no Markdown, HTML, link, ``$…$`` math or entity can form; the escaped ``/``
    and ``:`` also keep Streamlit's ``:material/…:`` icons and ``:emoji:`` shortcodes from
    matching (both look for the bare sequence in the source). Line breaks become spaces. No HTML
    entities are added, so an apostrophe stays an apostrophe. (A bare ``http://…`` or ``www.…``
    still becomes a safe link: Streamlit links those in the rendered text.) Long texts should not
    go through Markdown at all: pages show them with ``st.text``.
    """
    s = "" if text is None else str(text)
    return _ASCII_PUNCT.sub(r"\\\1", s).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def plot_labels(values: Iterable[object]) -> list[str]:
    """Category labels for plotly (axis ticks, hover): plotly reads ``<b>``, ``<a href>`` … in
    labels as markup and decodes entities, so ``<``, ``>`` and ``&`` go in as entities and the
    label shows exactly as written."""
    return [html.escape("" if v is None else str(v), quote=False) for v in values]


def text_block(text: object) -> str:
    """A multi-line user text as escaped Markdown that keeps its line breaks (hard breaks)."""
    lines = ("" if text is None else str(text)).splitlines()
    return "  \n".join(escape_md(line) for line in lines)


def pair_matrix_frame(per_pair: pd.DataFrame | np.ndarray, models: Iterable[str]) -> pd.DataFrame:
    """A square model × model frame (index and columns = models) from an (n, n) array or frame."""
    names = list(models)
    if isinstance(per_pair, pd.DataFrame):
        return per_pair.reindex(index=names, columns=names)
    return pd.DataFrame(np.asarray(per_pair), index=names, columns=names)


def rank_change_frame(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Join two leaderboards (``model``, ``rank``) and add ``rank_change`` = before − after.

    A positive change means the model moved up under the new setting.
    """
    # a lookup by model name, not ``DataFrame.merge`` (the same left join: ``after``'s rows in order, NaN
    # where ``before`` lacks the model), at a fraction of its cost on a slider move's small tables
    pos = pd.Index(before["model"]).get_indexer(after["model"])  # -1: not on ``before``
    rank_all = before["rank"].to_numpy()[pos]
    if (pos < 0).any():  # as the merge gives: floats with NaN where the model is missing
        rank_all = np.where(pos >= 0, rank_all.astype(np.float64), np.nan)
    out = after.reset_index(drop=True)
    out["rank_all"] = rank_all
    out["rank_change"] = (out["rank_all"] - out["rank"]).astype("Int64")
    return out


def ci_plot_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Leaderboard rows ordered best first with error-bar lengths for a plotly CI chart."""
    cols = {"model", "score", "ci_low", "ci_high"}
    missing = cols - set(table.columns)
    if missing:
        raise KeyError(f"leaderboard lacks {sorted(missing)}")
    out = table.sort_values("score", ascending=True)[["model", "score", "ci_low", "ci_high"]].copy()
    out["err_plus"] = (out["ci_high"] - out["score"]).clip(lower=0)
    out["err_minus"] = (out["score"] - out["ci_low"]).clip(lower=0)
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class CycleOverview:
    """Everything the Cycles page draws, computed from one GraphStack.

    ``per_pair``: model × model bad triads containing the pair, summed over graphs;
    ``category_rates``: category × model share of the graphs (where the model appears) in which the
    model lies on at least one bad triad; ``graphs``: one row per graph with its key, counts and an
    inspector link; ``nb_c3`` / ``nb_c4``: expected number of graphs per count under the fitted
    negative binomial (paper 003), with ``nb_caption`` naming the fitted parameters; ``n_left_out``:
    graphs of fewer than 3 models, left out of all of it (no cycle fits in them).
    """

    n_graphs: int
    share_cyclic: float
    total_bad_triads: int
    mean_c4_bad: float
    per_pair: pd.DataFrame
    category_rates: pd.DataFrame
    graphs: pd.DataFrame
    nb_c3: pd.DataFrame | None
    nb_c4: pd.DataFrame | None
    nb_caption: dict[str, str]
    n_left_out: int = 0


def inspector_link(dataset: str, judge: str, prompt_id: str, variant: int, turn: int = 1) -> str:
    """A relative URL that opens the inspector on one graph (a fresh session reads it too)."""
    return "prompt-inspector?" + urlencode(
        {"dataset": dataset, "judge": judge, "prompt_id": prompt_id, "variant": int(variant),
         "turn": int(turn)}
    )


def category_participation(stack: GraphStack, vertex_bad: np.ndarray) -> pd.DataFrame:
    """Category × model share of graphs (where the model was compared) with the model on a bad triad."""
    present = stack.observed.any(axis=2)  # (T, n)
    on_bad = (vertex_bad > 0) & present
    cats = stack.keys["category"].astype("string").fillna("(none)").to_numpy(dtype=object)
    labels, inverse = np.unique(cats, return_inverse=True)
    onehot = np.zeros((len(labels), stack.T))
    onehot[inverse, np.arange(stack.T)] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = (onehot @ on_bad) / (onehot @ present)
    return pd.DataFrame(rate, index=pd.Index(labels, name="category"), columns=list(stack.models))


def bucket_cycle_maps(graphs) -> tuple[np.ndarray, pd.DataFrame]:
    """(n, n) bad triads per model pair summed over the graphs, and the category × model share of
    graphs (where the model was compared) with the model on a bad triad: the Cycles page's two
    heatmaps, accumulated bucket by bucket over each graph's own models (equal to
    ``pair_cycle_counts(stack.adj)`` summed and ``category_participation`` on the dense stack)."""
    from engine.graphs.buckets import as_buckets
    from engine.graphs.cycles import pair_cycle_counts, vertex_cycle_counts

    b = as_buckets(graphs)
    n = b.n
    cats = (
        b.keys["category"].astype("string").fillna("(none)").to_numpy(dtype=object)
        if b.T
        else np.zeros(0, object)
    )
    labels, inverse = np.unique(cats, return_inverse=True)
    per_pair = np.zeros(n * n, dtype=np.int64)
    on_bad = np.zeros(len(labels) * n, dtype=np.float64)
    present = np.zeros(len(labels) * n, dtype=np.float64)
    for bk in b.buckets:
        seen = bk.observed.any(axis=2)  # (T_k, k)
        cell = inverse[bk.graph][:, None] * n + bk.members  # (T_k, k): category × model
        present += np.bincount(cell[seen], minlength=present.size)
        if bk.k < 3:
            continue
        pc = pair_cycle_counts(bk.adj)["c3_bad"]
        flat = bk.members[:, :, None] * n + bk.members[:, None, :]
        per_pair += np.bincount(flat.reshape(-1), weights=pc.reshape(-1), minlength=n * n).astype(np.int64)
        vb = vertex_cycle_counts(bk.adj)["c3_bad"]
        on_bad += np.bincount(cell[(vb > 0) & seen], minlength=on_bad.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = (on_bad / present).reshape(len(labels), n)
    return per_pair.reshape(n, n), pd.DataFrame(
        rate, index=pd.Index(labels, name="category"), columns=list(b.models)
    )


def cycle_overview(graphs, nb_fit=None) -> CycleOverview:
    """Build the Cycles page's frames from a GraphStack or GraphBuckets, per size bucket over each
    graph's own models; graphs of fewer than 3 models are left out and counted (``nb_fit(counts)
    -> (frame, caption)``)."""
    from engine.graphs.buckets import as_buckets
    from engine.graphs.cycles import cycle_counts

    b = as_buckets(graphs)
    can = b.sizes >= 3
    n_left_out = int((~can).sum())
    if n_left_out:  # graphs of < 3 models hold no cycle: counting them as acyclic would be vacuous
        b = b.subset(np.flatnonzero(can))
    counts = cycle_counts(b)
    per_pair, category_rates = bucket_cycle_maps(b)
    keys = b.keys.reset_index(drop=True)
    graphs = pd.concat([keys[["judge", "prompt_id", "variant", "turn", "category"]], counts], axis=1)
    graphs["link"] = [
        inspector_link(d, j, p, v, u) for d, j, p, v, u in
        keys[["dataset", "judge", "prompt_id", "variant", "turn"]].itertuples(index=False)
    ]
    fits: dict[str, pd.DataFrame | None] = {}
    captions: dict[str, str] = {}
    for name in ("c3_bad", "c4_bad"):
        fits[name], captions[name] = (
            (None, "") if nb_fit is None or not b.T else nb_fit(counts[name].to_numpy())
        )
    return CycleOverview(
        n_graphs=b.T,
        share_cyclic=float((counts["c3_bad"] > 0).mean()) if b.T else 0.0,
        total_bad_triads=int(counts["c3_bad"].sum()),
        mean_c4_bad=float(counts["c4_bad"].mean()) if b.T else 0.0,
        per_pair=pair_matrix_frame(per_pair, b.models),
        category_rates=category_rates,
        graphs=graphs,
        nb_c3=fits["c3_bad"],
        nb_c4=fits["c4_bad"],
        nb_caption=captions,
        n_left_out=n_left_out,
    )


@dataclass(frozen=True)
class JudgeOverview:
    """Everything the Judges page shows for one dataset (optionally one category).

    ``kappa_matrix``: judge × judge Cohen's κ on shared items over the verdicts given (1 on the
    diagonal); ``kappa_by_category``: the same matrix per category (only when split by category);
    ``mean_kappa``: mean κ over the judge pairs (NaN with fewer than two judges);
    ``agreement``: the pairwise table (items, raw agreement, κ; per category when asked);
    ``position``: order consistency, first-position win rates, McNemar per judge (and category);
    ``transitivity``: PNT, SNTD, ρ_non-trans, τ per judge (and category); ``has_prob``: whether
    any verdict carries ``prob_a`` (SNTD needs it).
    """

    judges: tuple[str, ...]
    kappa_matrix: pd.DataFrame
    agreement: pd.DataFrame
    position: pd.DataFrame
    transitivity: pd.DataFrame
    worst_pnt: str
    worst_position: str
    mean_kappa: float = float("nan")
    kappa_by_category: dict[str, pd.DataFrame] | None = None
    has_prob: bool = False
    n_left_out: int = 0


def kappa_matrix(agreement: pd.DataFrame, judges: Iterable[str]) -> pd.DataFrame:
    """Judge × judge κ from a pairwise agreement table (judge_1, judge_2, kappa); 1 on the diagonal."""
    names = list(judges)
    mat = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for j1, j2, k in agreement[["judge_1", "judge_2", "kappa"]].itertuples(index=False):
        if j1 in mat.index and j2 in mat.index:
            mat.loc[j1, j2] = mat.loc[j2, j1] = k
    return mat


def mean_offdiagonal(mat: pd.DataFrame) -> float:
    """Mean of the strictly upper triangle of a square matrix, NaNs left out (NaN if empty)."""
    m = mat.to_numpy(dtype=np.float64)
    upper = m[np.triu_indices(len(m), 1)]
    upper = upper[~np.isnan(upper)]
    return float(upper.mean()) if upper.size else float("nan")


def judge_overview(
    verdicts: pd.DataFrame, stack: GraphStack | GraphBuckets, by_category: bool = False
) -> JudgeOverview:
    """Agreement, position bias and non-transitivity of every judge in ``verdicts``/``stack`` (a
    GraphStack or engine.graphs.buckets.GraphBuckets; graphs of fewer than 3 models hold no triple and
    are counted in ``n_left_out``)."""
    from engine.diagnostics.agreement import agreement
    from engine.diagnostics.position import position_table

    by = ("judge", "category") if by_category else ("judge",)
    judges = tuple(sorted(verdicts["judge"].dropna().astype(str).unique()))
    overall = agreement(verdicts)
    table = agreement(verdicts, by_category=True) if by_category else overall
    position = position_table(verdicts, by=by)
    pos_j = position_table(verdicts) if by_category else position
    has_prob = bool("prob_a" in verdicts.columns and verdicts["prob_a"].notna().any())
    return overview_of_tables(judges, overall, table, position, pos_j, has_prob, stack, by_category)


def overview_of_tables(judges: tuple[str, ...], overall: pd.DataFrame, table: pd.DataFrame,
                       position: pd.DataFrame, pos_j: pd.DataFrame, has_prob: bool,
                       stack: GraphStack | GraphBuckets, by_category: bool) -> JudgeOverview:
    """The JudgeOverview of the agreement tables (``overall``; ``table`` per category when split), the
    position tables (``position`` per the split, ``pos_j`` per judge) and the graphs' transitivity: the
    assembly shared by ``judge_overview`` (tables from a verdict frame) and the Judges page's count path
    (engine.diagnostics.judge_counts)."""
    from engine.diagnostics.entropy import entropy_summary
    from engine.diagnostics.nontransitivity import pnt_summary
    from engine.diagnostics.sntd import sntd_summary
    from engine.graphs.buckets import as_buckets

    stack = as_buckets(stack)
    by = ("judge", "category") if by_category else ("judge",)
    mat = kappa_matrix(overall, judges)
    per_cat = None
    if by_category:
        per_cat = {str(c): kappa_matrix(g, judges) for c, g in table.groupby("category", sort=True)}
    trans = pnt_summary(stack, by)
    # SNTD needs judge probabilities; without any it is empty, and computing it anyway walks every
    # triple of every graph (over 6 GB on a 100-model battle log of 1,000 two-model graphs)
    sntd = sntd_summary(stack, by) if has_prob else pd.DataFrame(columns=[*by, "soft_triples", "sntd_mean"])
    trans = trans.merge(sntd, on=list(by), how="left")
    trans = trans.merge(entropy_summary(stack, by).drop(columns=["graphs"]), on=list(by), how="left")
    per_judge = pnt_summary(stack)
    worst_pnt = str(per_judge.sort_values("pnt").iloc[-1]["judge"]) if len(per_judge) else "—"
    rate_col = "first_win_rate"
    if rate_col in pos_j.columns and pos_j[rate_col].notna().any():
        worst_position = str(pos_j["judge"].iloc[int((pos_j[rate_col] - 0.5).abs().argmax())])
    else:
        worst_position = "—"
    return JudgeOverview(judges, mat, table, position, trans, worst_pnt, worst_position,
                         mean_offdiagonal(mat), per_cat, has_prob, stack.n_below(3))


def graphs_by_score(graphs: pd.DataFrame, mu: float) -> pd.DataFrame:
    """The per-graph table with ``s_mu`` = C3_bad + mu·C4_bad, highest first (then by prompt id)."""
    from engine.graphs.truncation import truncation_scores

    out = graphs.assign(s_mu=truncation_scores(graphs, mu))
    return out.sort_values(["s_mu", "prompt_id"], ascending=[False, True], kind="mergesort").reset_index(
        drop=True
    )


def dash_missing(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``columns`` as text with "—" where a value is missing (tables otherwise print "None");
    integers keep no decimals; a column named ``*_diff`` or ``rank_change`` gets a sign."""
    out = frame.copy()
    for col in columns:
        if col not in out.columns:
            continue
        signed = col.endswith("_diff") or col == "rank_change"

        def fmt(v, signed=signed):
            if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
                return "—"
            if isinstance(v, (int, np.integer)) or (isinstance(v, float) and float(v).is_integer()):
                return f"{int(v):+d}" if signed else str(int(v))
            return str(v)

        out[col] = [fmt(v) for v in out[col].astype(object)]
    return out


def numbers_as_text(frame: pd.DataFrame, formats: dict[str, str]) -> tuple[pd.DataFrame, list[str]]:
    """Numeric columns that have missing values, as text: each value with its format spec
    (e.g. ``".2g"``), "—" where missing (tables would print "None"). Returns the frame and the
    names of the columns it turned into text; complete columns stay numeric (sortable)."""
    out, changed = frame.copy(), []
    for col, spec in formats.items():
        if col not in out.columns or not out[col].isna().any():
            continue
        out[col] = ["—" if pd.isna(v) else format(int(v) if spec.endswith("d") else float(v), spec)
                    for v in out[col].astype(object)]
        changed.append(col)
    return out, changed


def nb_fit_frame(counts: np.ndarray) -> tuple[pd.DataFrame | None, str]:
    """Negative binomial fit of per-graph cycle counts (paper 003) as expected graphs per count.

    Returns (frame with ``k`` and ``expected`` = number of graphs × NB pmf(k), caption naming the fit
    and how it compares with a Poisson by AIC), or (None, why) when the counts cannot be fitted.
    """
    from scipy import stats

    from engine.diagnostics.cycle_stats import fit_nb_poisson
    from engine.errors import LensError

    x = np.asarray(counts, dtype=np.int64)
    try:
        fit = fit_nb_poisson(x)  # what the caption names; not the zero-inflated fits (fit_counts), unshown
    except LensError as exc:
        return None, str(exc)
    k = np.arange(int(x.max()) + 1)
    frame = pd.DataFrame({"k": k, "expected": x.size * stats.nbinom.pmf(k, fit.nb_n, fit.nb_p)})
    caption = (
        f"Negative binomial MLE: n = {fit.nb_n:.3g}, p = {fit.nb_p:.3g} (mean {fit.mean:.2f}, variance "
        f"{fit.variance:.2f}); AIC {fit.nb_aic:.1f} vs Poisson {fit.poisson_aic:.1f}; R² of the CDF "
        f"{fit.nb_r2:.3f}."
    )
    return frame, caption
