"""Engine-side builders for the app's pictures: safe text, pyvis tournament graphs, plot frames.

The pages render; this module computes what they render. Every user-supplied string (model
names, prompt texts, rationales) that reaches HTML or Markdown passes through ``escape_html`` or
``escape_md`` here, so a dataset whose names hold ``<script>`` shows them as text. The graph
drawing follows DESIGN.md's edge convention: ``i → j`` means *i beats j*, a tie is the pair of
reciprocal edges (drawn once, undirected and dashed).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlencode

import numpy as np
import pandas as pd

# Colours shared by the graph drawings and the legend the inspector page shows.
COLOR_EDGE = "#8a94a6"
COLOR_BAD = "#e03131"
COLOR_REMOVED = "#c0c6d0"
COLOR_NODE = "#3b5bdb"
COLOR_NODE_BAD = "#f08c00"

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>$:])")


def escape_html(text: object) -> str:
    """``text`` as HTML text: ``<``, ``>``, ``&`` and quotes become entities."""
    return html.escape("" if text is None else str(text), quote=True)


def escape_md(text: object) -> str:
    """``text`` safe inside Streamlit Markdown: HTML-escaped, Markdown syntax backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", escape_html(text)).replace("\n", " ")


def text_block(text: object) -> str:
    """A long user text (question, rationale, answer) as safe Markdown that keeps its line breaks."""
    lines = ("" if text is None else str(text)).splitlines()
    return "  \n".join(escape_md(line) for line in lines)


def _script_safe_json(obj: object) -> str:
    """JSON that cannot close a ``<script>`` block: ``<``, ``>``, ``&`` as unicode escapes."""
    text = json.dumps(obj, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def edge_lists(adj: np.ndarray, observed: np.ndarray | None = None) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Strict edges ``(i, j)`` (i beat j) and tie pairs ``(i, j)`` with i < j, of one (n, n) graph."""
    a = np.asarray(adj, dtype=bool)
    if observed is not None:
        a = a & np.asarray(observed, dtype=bool)
    strict = a & ~a.T
    tie = np.triu(a & a.T, 1)
    return [tuple(map(int, e)) for e in np.argwhere(strict)], [tuple(map(int, e)) for e in np.argwhere(tie)]


def triad_edge_set(triads: Iterable[Iterable[int]]) -> set[frozenset[int]]:
    """The unordered vertex pairs that lie on at least one of the given triads."""
    pairs: set[frozenset[int]] = set()
    for tri in triads:
        a, b, c = (int(v) for v in tri)
        pairs.update({frozenset((a, b)), frozenset((b, c)), frozenset((a, c))})
    return pairs


def tournament_html(
    models: Iterable[str],
    adj: np.ndarray,
    observed: np.ndarray | None = None,
    *,
    highlight: set[frozenset[int]] | None = None,
    removed: Iterable[tuple[int, int]] = (),
    height_px: int = 420,
) -> str:
    """A self-contained interactive pyvis page of one tournament graph.

    Strict edges are arrows (winner → loser), ties undirected dashed links; pairs in ``highlight``
    (e.g. edges on bad cycles) are red and thick; ``removed`` edges (i → j, e.g. a feedback arc set)
    are drawn grey and dotted with the label "removed". vis.js is inlined, so the page works
    offline, and every label and tooltip is JSON-escaped for a script block and shown as text.
    """
    from pyvis.network import Network  # heavy import, only where a graph is drawn

    names = [str(m) for m in models]
    highlight = highlight or set()
    removed = [(int(i), int(j)) for i, j in removed]
    removed_pairs = {frozenset(e) for e in removed}
    strict, ties = edge_lists(adj, observed)
    bad_nodes = {v for pair in highlight for v in pair}

    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line")
    for i, name in enumerate(names):
        net.add_node(
            i, label=name, title=name, shape="dot", size=18,
            color=COLOR_NODE_BAD if i in bad_nodes else COLOR_NODE, font={"size": 16},
        )
    for i, j in strict:
        if frozenset((i, j)) in removed_pairs:
            continue
        bad = frozenset((i, j)) in highlight
        net.add_edge(
            i, j, title=f"{names[i]} beat {names[j]}", arrows="to",
            color=COLOR_BAD if bad else COLOR_EDGE, width=3.5 if bad else 1.5,
        )
    for i, j in ties:
        bad = frozenset((i, j)) in highlight
        net.add_edge(
            i, j, title=f"{names[i]} tied {names[j]}", arrows={"to": {"enabled": False}}, dashes=True,
            color=COLOR_BAD if bad else COLOR_EDGE, width=3.5 if bad else 1.5,
        )
    for i, j in removed:
        net.add_edge(
            i, j, title=f"removed: {names[i]} beat {names[j]}", arrows="to", dashes=[2, 6],
            color=COLOR_REMOVED, width=1.5, label="removed", font={"size": 10, "color": "#868e96"},
        )
    net.set_options(json.dumps({
        "physics": {"solver": "forceAtlas2Based", "stabilization": {"iterations": 150}},
        "edges": {"smooth": {"type": "continuous"}},
        "interaction": {"hover": True, "tooltipDelay": 120},
    }))
    page = net.generate_html(notebook=False)
    # pyvis embeds nodes/edges with Jinja's tojson (already HTML-safe); re-embed them with our own
    # escaping as well, so the guarantee does not hang on a template detail of the pyvis version.
    nodes_json, edges_json = _script_safe_json(net.nodes), _script_safe_json(net.edges)
    page = re.sub(r"nodes = new vis\.DataSet\(.*?\);\n", lambda _: f"nodes = new vis.DataSet({nodes_json});\n", page, count=1, flags=re.S)
    page = re.sub(r"edges = new vis\.DataSet\(.*?\);\n", lambda _: f"edges = new vis.DataSet({edges_json});\n", page, count=1, flags=re.S)
    return page


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
    b = before[["model", "rank"]].rename(columns={"rank": "rank_all"})
    out = after.merge(b, on="model", how="left")
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
    negative binomial (paper 003), with ``nb_caption`` naming the fitted parameters.
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


def inspector_link(dataset: str, judge: str, prompt_id: str, variant: int) -> str:
    """A relative URL that opens the inspector on one graph (a fresh session reads it too)."""
    return "prompt-inspector?" + urlencode({"dataset": dataset, "judge": judge, "prompt_id": prompt_id, "variant": int(variant)})


def category_participation(stack, vertex_bad: np.ndarray) -> pd.DataFrame:
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


def cycle_overview(stack, nb_fit=None) -> CycleOverview:
    """Build the Cycles page's frames (batched over graphs; ``nb_fit(counts) -> (frame, caption)``)."""
    from .cycles import cycle_counts, pair_cycle_counts, vertex_cycle_counts

    counts = cycle_counts(stack)
    per_pair = pair_cycle_counts(stack.adj)["c3_bad"].sum(axis=0)
    vertex_bad = vertex_cycle_counts(stack.adj)["c3_bad"]
    keys = stack.keys.reset_index(drop=True)
    graphs = pd.concat([keys[["judge", "prompt_id", "variant", "turn", "category"]], counts], axis=1)
    graphs["link"] = [
        inspector_link(d, j, p, v) for d, j, p, v in keys[["dataset", "judge", "prompt_id", "variant"]].itertuples(index=False)
    ]
    fits, captions = {}, {}
    for name in ("c3_bad", "c4_bad"):
        fits[name], captions[name] = (None, "") if nb_fit is None else nb_fit(counts[name].to_numpy())
    return CycleOverview(
        n_graphs=stack.T,
        share_cyclic=float((counts["c3_bad"] > 0).mean()) if stack.T else 0.0,
        total_bad_triads=int(counts["c3_bad"].sum()),
        mean_c4_bad=float(counts["c4_bad"].mean()) if stack.T else 0.0,
        per_pair=pair_matrix_frame(per_pair, stack.models),
        category_rates=category_participation(stack, vertex_bad),
        graphs=graphs,
        nb_c3=fits["c3_bad"],
        nb_c4=fits["c4_bad"],
        nb_caption=captions,
    )


DENOISERS: tuple[tuple[str, str], ...] = (("PGED", "pged"), ("ELSPR", "elspr"))
"""(label, ranker name) of the rankers whose result carries a denoised graph (papers 002, 004)."""


def denoised_view(stack) -> dict[str, tuple[np.ndarray, list[tuple[str, str]]]]:
    """Each denoiser's graph for a one-graph stack: ``{label: (adjacency, removed (winner, loser))}``.

    The adjacency is (n, n) bool over ``stack.models`` (edge i → j: i beats j after denoising);
    removed edges are PGED's feedback arc set, and for ELSPR the input edges (a tie is two) that the
    reconstruction re-oriented.
    """
    from .rankers import rank

    out = {}
    for label, name in DENOISERS:
        res = rank(stack, name)
        graph = res.extras["graph"]
        adj = np.asarray(
            graph.reindex(index=list(stack.models), columns=list(stack.models)).fillna(0).to_numpy(), dtype=bool
        )
        if "removed" in res.extras:  # PGED names its feedback arc set (ties never enter its graph)
            removed = [(str(e[0]), str(e[1])) for e in res.extras["removed"]]
        else:  # ELSPR re-orients edges inside SCCs: the input edges its graph no longer has
            gone = stack.adj[0] & stack.observed[0] & ~adj
            removed = [(stack.models[i], stack.models[j]) for i, j in np.argwhere(gone)]
        out[label] = (adj, removed)
    return out


@dataclass(frozen=True)
class JudgeOverview:
    """Everything the Judges page shows for one dataset (optionally one category).

    ``kappa_matrix``: judge × judge Cohen's κ on shared items (1 on the diagonal);
    ``agreement``: the pairwise table (items, raw agreement, κ; per category when asked);
    ``position``: order consistency, first-position win rates, McNemar per judge (and category);
    ``transitivity``: PNT, SNTD, ρ_non-trans, τ per judge (and category).
    """

    judges: tuple[str, ...]
    kappa_matrix: pd.DataFrame
    agreement: pd.DataFrame
    position: pd.DataFrame
    transitivity: pd.DataFrame
    worst_pnt: str
    worst_position: str


def judge_overview(verdicts: pd.DataFrame, stack, by_category: bool = False) -> JudgeOverview:
    """Agreement, position bias and non-transitivity of every judge in ``verdicts``/``stack``."""
    from .diagnostics.agreement import agreement
    from .diagnostics.entropy import entropy_summary
    from .diagnostics.nontransitivity import pnt_summary
    from .diagnostics.position import position_table
    from .diagnostics.sntd import sntd_summary

    by = ("judge", "category") if by_category else ("judge",)
    # unknown presentation orders as None rather than pd.NA: diagnostics.verdict_pairs compares the
    # order column elementwise, which pd.NA refuses (a dataset without an order column failed here)
    verdicts = verdicts.assign(order=verdicts["order"].astype(object).where(verdicts["order"].notna(), None))
    judges = tuple(sorted(verdicts["judge"].dropna().astype(str).unique()))
    overall = agreement(verdicts)
    mat = pd.DataFrame(np.eye(len(judges)), index=list(judges), columns=list(judges))
    for j1, j2, k in overall[["judge_1", "judge_2", "kappa"]].itertuples(index=False):
        mat.loc[j1, j2] = mat.loc[j2, j1] = k
    table = agreement(verdicts, by_category=True) if by_category else overall
    position = position_table(verdicts, by=by)
    trans = pnt_summary(stack, by)
    trans = trans.merge(sntd_summary(stack, by), on=list(by), how="left")
    trans = trans.merge(entropy_summary(stack, by).drop(columns=["graphs"]), on=list(by), how="left")
    per_judge = pnt_summary(stack)
    worst_pnt = str(per_judge.sort_values("pnt").iloc[-1]["judge"]) if len(per_judge) else "—"
    rate_col = "first_win_rate"
    pos_j = position_table(verdicts) if by_category else position
    if rate_col in pos_j.columns and pos_j[rate_col].notna().any():
        worst_position = str(pos_j.loc[(pos_j[rate_col] - 0.5).abs().idxmax(), "judge"])
    else:
        worst_position = "—"
    return JudgeOverview(judges, mat, table, position, trans, worst_pnt, worst_position)


def nb_fit_frame(counts: np.ndarray) -> tuple[pd.DataFrame | None, str]:
    """Negative binomial fit of per-graph cycle counts (paper 003) as expected graphs per count.

    Returns (frame with ``k`` and ``expected`` = number of graphs × NB pmf(k), caption naming the fit
    and how it compares with a Poisson by AIC), or (None, why) when the counts cannot be fitted.
    """
    from scipy import stats

    from .diagnostics.cycle_stats import fit_counts
    from .errors import LensError

    x = np.asarray(counts, dtype=np.int64)
    try:
        fit = fit_counts(x)
    except LensError as exc:
        return None, str(exc)
    k = np.arange(int(x.max()) + 1)
    frame = pd.DataFrame({"k": k, "expected": x.size * stats.nbinom.pmf(k, fit.nb_n, fit.nb_p)})
    caption = (
        f"Negative binomial MLE: n = {fit.nb_n:.3g}, p = {fit.nb_p:.3g} (mean {fit.mean:.2f}, variance "
        f"{fit.variance:.2f}); AIC {fit.nb_aic:.1f} vs Poisson {fit.poisson_aic:.1f}; R² of the CDF {fit.nb_r2:.3f}."
    )
    return frame, caption
