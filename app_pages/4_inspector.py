"""Prompt inspector: one tournament graph before and after denoising, its bad triads, and the
verdicts, rationales and answers behind a chosen triad."""

from __future__ import annotations

import contextlib

import streamlit as st

from app_pages._lens import (
    choice_tree_for,
    current,
    graph_view_for,
    guarded_session,
    inspector_html_for,
    metric_row,
    opened_expander,
    or_stop,
    prompt_graphs_for,
    prompt_options_for,
    prompt_texts_for,
    show_error,
    triad_view_for,
    verdict_list,
)
from engine.errors import LensError
from engine.views.inspector import (
    DENOISERS,
    TRIAD_KINDS,
    graph_position,
    graph_turns,
    judged_by,
    prompt_variant_names,
    question_text,
)
from engine.views.viz import escape_md

# The drawing's frame: the panels' 430 px networks and titles of up to three lines (they wrap, not cut).
GRAPH_FRAME_PX = 520

st.title("Prompt inspector")
st.caption(
    "One prompt's tournament graph: an arrow points from the winner to the loser, a dashed link is a tie. "
    "Pick a bad triad to see it in the graph and read the verdicts behind it."
)
ch = current()
everything = or_stop(choice_tree_for, ch.key)  # the pickers' keys, listed by the store: no graph built
if len(everything) == 0:
    st.info("The selection holds no graph.")
    st.stop()

c1, c2, c3 = st.columns([2, 1, 1])
# the judge first: the prompt picker's bad triads and S_μ count that judge's graphs, the ones drawn below
all_judges = everything.judges
if st.session_state.get("insp_judge") not in all_judges:
    st.session_state["insp_judge"] = all_judges[0]
judge = c3.selectbox("Judge", all_judges, key="insp_judge",
                     help="Whose graph is drawn; the prompt menu counts this judge's bad triads.")
tree = judged_by(everything, judge)
prompts, labels, n_prompts = prompt_options_for(ch.key, judge)  # worst first: S_μ, then bad triads
qp = st.query_params
if "insp_prompt" not in st.session_state and qp.get("prompt_id") in tree:
    st.session_state["insp_prompt"] = qp.get("prompt_id")
if n_prompts > len(prompts):

    def _open_typed() -> None:
        typed = (st.session_state.get("insp_prompt_id") or "").strip()
        st.session_state["insp_typed_missing"] = bool(typed) and typed not in tree
        if typed in tree:
            st.session_state["insp_prompt"] = typed

    st.text_input(
        "Open a prompt by its id",
        key="insp_prompt_id",
        on_change=_open_typed,
        help=f"The menu below lists the {len(prompts):,} worst of the selection's {n_prompts:,} prompts.",
    )
    if st.session_state.get("insp_typed_missing"):
        st.warning("No graph of this selection has that prompt id.")
    st.caption(
        f"The menu lists the {len(prompts):,} worst of {n_prompts:,} prompts; type an id above to open "
        "any other."
    )
if st.session_state.get("insp_prompt") not in tree:
    st.session_state["insp_prompt"] = prompts[0]
if st.session_state["insp_prompt"] not in labels:  # opened by id or by a link: listed first
    prompts = [st.session_state["insp_prompt"], *prompts]
prompt = c1.selectbox(
    "Prompt",
    prompts,
    key="insp_prompt",
    format_func=lambda p: labels.get(p, p),
    help="Worst first: S_μ = C3_bad + C4_bad and bad triads summed over the chosen judge's graphs of the "
    "prompt (each of its variants and turns), then the question's first words.",
)
variants = sorted(tree[prompt])
if "insp_variant" not in st.session_state and qp.get("variant") is not None:
    with contextlib.suppress(ValueError):  # a variant that is not a number in the link: the first is shown
        st.session_state["insp_variant"] = int(qp.get("variant"))
if st.session_state.get("insp_variant") not in variants:
    st.session_state["insp_variant"] = variants[0]
graphs = or_stop(prompt_graphs_for, ch.key, prompt)  # the chosen prompt's graphs alone
names = prompt_variant_names(graphs, prompt)
variant = c2.selectbox(
    "Variant",
    variants,
    key="insp_variant",
    format_func=lambda v: names.get(v, str(v)),
    help="The prompt as written (original), a paraphrase of it, or a sampling replicate.",
)

try:
    turns = list(graph_turns(graphs, prompt, variant, judge))
    if "insp_turn" not in st.session_state and qp.get("turn") is not None:
        with contextlib.suppress(ValueError):  # a turn that is not a number in the link: the first is shown
            st.session_state["insp_turn"] = int(qp.get("turn"))
    if st.session_state.get("insp_turn") not in turns:
        st.session_state["insp_turn"] = turns[0]
    if len(turns) > 1:  # multi-turn data (MT-Bench's two turns): each turn is a graph of its own
        st.segmented_control("Turn", turns, key="insp_turn", required=True,
                             help="Each turn of a multi-turn prompt is judged, and drawn, as a graph of "
                             "its own.")
    t = graph_position(graphs, prompt, variant, judge, st.session_state["insp_turn"])
    view = graph_view_for(ch.key, prompt, t)
except LensError as exc:
    show_error(exc)
    st.stop()
key = view.key

category = key["category"] if isinstance(key["category"], str) else "no category"
st.markdown(f"**Question** · {escape_md(category)} · prompt {escape_md(prompt)}, "
            f"{escape_md(names.get(variant, str(variant)))}"
            + (f", turn {key['turn']}" if len(turns) > 1 or key["turn"] != 1 else ""))
texts = prompt_texts_for(ch.dataset, ch.key.version)
question = question_text(texts, prompt, variant, key["turn"])
earlier = [(k, question_text(texts, prompt, variant, k)) for k in range(1, int(key["turn"]))]
if any(q is not None for _, q in earlier):  # a later turn: the questions its answers follow, folded
    with st.expander("Earlier questions of this conversation"):
        for k, text in earlier:
            st.markdown(f"**Turn {k}**")
            if text is None:
                st.caption("The dataset holds no text for this turn.")
            else:
                st.text(text)
with st.container(border=True):
    if question is None:
        st.caption("The dataset holds no text for this prompt.")
    else:
        st.text(question)

metric_row(("Models in this graph", len(view.models)), ("Verdicts", int(key["n_verdicts"])),
           ("Bad triads", len(view.triads)), ("Unparsable verdicts", int(key["n_invalid"])))


@st.fragment
def graph_and_triad() -> None:
    """The drawing, the triad list and the chosen triad's verdicts: picking a triad or a denoiser
    reruns only this part, and the drawing comes from a cache."""
    # a fragment rerun does not pass through app.py's session: it holds the store itself, and a store
    # held by a command-line writer is the same warning and retry as in app.py, not a traceback
    with guarded_session("busy_retry_graph"):
        _graph_and_triad()


def _graph_and_triad() -> None:
    """The pickers, then the drawing across the page (its panels' titles fit), then the chosen triad's
    verdicts in the page's own flow: beside the drawing they sat in a 420 px box that scrolled."""
    triads = view.triads
    labels = [
        f"{i + 1}. {s} ({k})" for i, (s, k) in enumerate(zip(triads["shape"], triads["kind"], strict=True))
    ]
    pick_triad, pick_method = st.columns([3, 2], gap="medium")
    with pick_triad:
        if triads.empty:
            choice = None
        else:
            if st.session_state.get("insp_triad") not in range(len(labels)):
                st.session_state["insp_triad"] = 0
            choice = st.selectbox(
                f"Bad triad ({len(labels)})",
                range(len(labels)),
                format_func=lambda i: labels[i],
                key="insp_triad",
                help="Its three pairs are drawn violet and thick in both graphs; the rest is muted.",
            )
    with pick_method:
        method = st.segmented_control(
            "Denoised by", list(DENOISERS), default="PGED", required=True, key="insp_method",
            help="PGED: greedy weighted feedback-arc-set removal on the strict wins (paper 002). ELSPR: each "
            "strongly connected component re-ordered by win count (paper 004).",
        )
    html, left_out = inspector_html_for(ch.key, prompt, t, method, choice)
    st.iframe(html, height=GRAPH_FRAME_PX)
    if left_out:
        st.info(escape_md(left_out), icon=":material/filter_alt:")
    st.caption(
        "Before: an edge's colour and width grow with the number of bad triads through the pair (grey: "
        "none); node size likewise. After: grey = unchanged, teal = changed by the denoiser (dark: "
        "re-oriented or made a tie; light: a tie resolved into a win; dotted: a pair never compared that "
        "it ordered), dotted orange = removed, faded dashed = a tie PGED sets aside. Hover an edge for what "
        "happened to it; scroll to zoom."
    )
    if method in view.denoised:
        st.caption(escape_md(view.denoised[method].note))
    if triads.empty:
        st.success("This graph has no bad triad: its verdicts are transitive.")
        return
    _triad_detail(choice, triad_view_for(ch.key, prompt, t, choice))
    _all_triads(triads)


@st.fragment
def _all_triads(triads) -> None:
    """Every bad triad of the graph as a table, drawn once its expander is opened (a new tab does not
    draw a table it does not show); opening it reruns this part alone, not the drawing."""
    legend = " · ".join(f"{k}: {v}" for k, v in TRIAD_KINDS.items())
    box = opened_expander(f"All {len(triads)} bad triads of this graph", "insp_all_triads")
    if box is not None:
        with guarded_session("busy_retry_all_triads"), box:  # see _triad_detail
            st.caption(escape_md(f"Kinds (paper 001, App. B.1): {legend}. a ~ b is a tie."))
            table = triads[["shape", "kind"]].rename(columns={"shape": "triad"})
            table.insert(0, "#", range(1, len(table) + 1))
            st.dataframe(table, hide_index=True, width="stretch", height=min(35 * len(table) + 38, 250))


@st.fragment
def _triad_detail(choice: int, tv) -> None:
    """The chosen triad's three pairs (``tv``, read by the outer fragment): combined outcome, every verdict
    with its rationale, and the two answers, drawn once their expander is opened (six long texts a new tab
    would draw unseen); opening one reruns this part alone, from ``tv`` as the outer run read it (no store
    read: never a newer version's answers under the graph drawn above)."""
    # an error in a fragment called from another is shown by Streamlit's handler and reaches the outer
    # fragment's guard as FragmentHandledException (two boxes, one of them "unexpected error"): a nested
    # fragment is guarded on its own, like the outer one
    with guarded_session("busy_retry_triad"):
        _triad_detail_body(choice, tv)


def _triad_detail_body(choice: int, tv) -> None:
    """``_triad_detail``'s content."""
    st.markdown(f"#### Triad {choice + 1}: {escape_md(tv.shape)}")
    st.caption(
        escape_md(
            f"{tv.kind}: {tv.explanation}. Each pair's edge combines its verdicts ({view.policy} "
            "rule: the most frequent outcome; no single most frequent outcome gives a tie)."
        )
    )
    for k, pair in enumerate(tv.pairs):
        with st.container(border=True):
            st.markdown(f"**{escape_md(pair.heading)}**")
            if not pair.verdicts:
                st.caption("No stored verdict on this pair.")
            verdict_list([(f"{escape_md(v.shown)} → **{escape_md(v.outcome)}**", v.rationale)
                          for v in pair.verdicts])
            box = opened_expander(f"Answers of {escape_md(pair.a)} and {escape_md(pair.b)}",
                                  f"insp_answers_{k}")
            if box is not None:
                with box:
                    for m in (pair.a, pair.b):
                        st.markdown(f"**{escape_md(m)}**")
                        if tv.answers.get(m):
                            st.text(tv.answers[m])
                        else:
                            st.caption("No answer text stored.")


graph_and_triad()
