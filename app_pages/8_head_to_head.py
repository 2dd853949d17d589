"""Head-to-head: two models, every prompt where they met, both answers side by side, and each judge's
verdicts on the pair in each presentation order with the rationales; counts and win rate on top.
The queries and every word of the labels come from ``engine.views.head_to_head``; this page renders."""

from __future__ import annotations

import hashlib
import math

import streamlit as st

from app_pages._lens import current, get_store, metric_row, opened_expander, or_stop, verdict_list
from engine.views.appstate import CacheKey
from engine.views.head_to_head import (
    OUTCOMES,
    PAGE_SIZE,
    Matchup,
    has_texts,
    meeting_label,
    models_by_verdicts,
    n_prompts,
    opponents,
    outcome_label,
    prompt_page,
    prompts_phrase,
    summary,
    summary_rows,
    verdict_sentence,
    verdict_text,
)
from engine.views.viz import escape_md


@st.cache_data(max_entries=16, show_spinner=False)
def _models(key: CacheKey):
    return models_by_verdicts(get_store(), key.dataset, key.judge, key.category)


@st.cache_data(max_entries=32, show_spinner=False)
def _opponents(key: CacheKey, model: str):
    return opponents(get_store(), key.dataset, model, key.judge, key.category)


@st.cache_data(max_entries=32, show_spinner="Counting meetings…")
def _summary(key: CacheKey, a: str, b: str):
    return summary(get_store(), Matchup(key.dataset, a, b, key.judge, key.category))


@st.cache_data(max_entries=64, show_spinner=False)
def _n_prompts(key: CacheKey, a: str, b: str, outcomes: tuple[str, ...]):
    return n_prompts(get_store(), Matchup(key.dataset, a, b, key.judge, key.category), outcomes)


@st.cache_data(max_entries=16, show_spinner=False)
def _has_texts(dataset: str, version: int):
    return has_texts(get_store(), dataset)


@st.cache_data(max_entries=64, show_spinner="Reading the page…")
def _page(key: CacheKey, a: str, b: str, outcomes: tuple[str, ...], page: int):
    return prompt_page(get_store(), Matchup(key.dataset, a, b, key.judge, key.category), outcomes, page)


def _pick(key: str, options: list[str], seed: str | None) -> None:
    """Keep a picker's choice among ``options``: a link's ``?model_a=`` / ``?model_b=`` when it is new to
    this session (a later choice in the picker then stands), else the first option."""
    if seed in options and st.session_state.get(f"_{key}_link") != seed:
        st.session_state[key] = st.session_state[f"_{key}_link"] = seed
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]


def _question_and_answers(p, model_a: str, model_b: str) -> None:
    """The prompt's question, then the two answers side by side (a sentence where a text is missing); a later
    turn's earlier turns first, folded: the conversation its answers build on."""
    if p.context:
        with st.expander(f"Turns 1–{p.turn - 1}: the conversation before this turn" if p.turn > 2
                         else "Turn 1: the conversation before this turn"):
            for k, (question, first, second) in enumerate(p.context, 1):
                st.markdown(f"**Turn {k}**")
                _texts_side_by_side(question, model_a, model_b, first, second)
    _texts_side_by_side(p.question, model_a, model_b, p.answer_a, p.answer_b)


def _texts_side_by_side(question, model_a: str, model_b: str, answer_a, answer_b) -> None:
    """A question, then two models' answers side by side (a sentence where a text is missing)."""
    if question is None:
        st.caption("The dataset holds no text for this prompt.")
    else:
        st.text(question)
    for col, model, answer in zip(st.columns(2), (model_a, model_b), (answer_a, answer_b), strict=True):
        with col:
            st.markdown(f"**{escape_md(model)}**")
            if answer is None:
                st.caption("No answer text stored.")
            else:
                st.text(answer)


def _meeting_key(key: CacheKey, model_a: str, model_b: str, p, meeting) -> str:
    """The session-state key of one meeting's expander: the same meeting keeps its open state across
    reruns while it is on the page (a meeting not drawn in a run loses its state: another page, pair
    or filter opens it closed)."""
    ident = repr((key, model_a, model_b, p.prompt_id, p.variant, p.turn, meeting.judge))
    return "h2h_open_" + hashlib.sha1(ident.encode()).hexdigest()[:16]


@st.fragment
def prompt_entry(p, key: CacheKey, model_a: str, model_b: str, texts: bool, instances: bool = False) -> None:
    """One prompt of the page: its question and the two answers, then one expander per meeting whose
    verdicts and rationales are drawn only once it is opened (a new tab draws the prompts' texts, not
    also every meeting's hidden verdicts). Opening one reruns this prompt alone, from the page the full
    run read (``p``): no store read, so never a newer version's verdicts under the older counts.
    ``instances``: the pair met on several variants or turns of a prompt, so every entry names its variant and
    turn (the first turn's entry was headed by its prompt alone, its second's with both)."""
    with st.container(border=True):
        where = [f"prompt {p.prompt_id}"]
        if p.category:
            where.append(p.category)
        if instances or p.variant or p.turn != 1:
            where.append(f"variant {p.variant}, turn {p.turn}")
        st.markdown("**" + escape_md(" · ".join(where)) + "**")
        if texts:
            _question_and_answers(p, model_a, model_b)
        for meeting in p.meetings:
            box = opened_expander(escape_md(meeting_label(meeting, model_a, model_b)),
                                  _meeting_key(key, model_a, model_b, p, meeting))
            if box is not None:
                with box:
                    verdict_list([(escape_md(verdict_text(v, model_a, model_b)), v.rationale)
                                  for v in meeting.verdicts])


st.title("Head-to-head")
st.caption(
    "Two models, every prompt where they met: the question, both answers side by side, and each judge's "
    "verdicts on the pair in each presentation order with the judge's rationale. The judge and category "
    "are the sidebar's."
)
ch = current()
models = or_stop(_models, ch.key)
if len(models) < 2:
    st.info("This selection holds no verdict between two models, so there is nothing to compare.")
    st.stop()

names = models["model"].tolist()
verdict_counts = dict(zip(names, models["verdicts"].tolist(), strict=True))
_pick("h2h_a", names, st.query_params.get("model_a"))
left, right = st.columns(2)
model_a = left.selectbox(
    "Model A", names, key="h2h_a", format_func=lambda m: f"{m} · {verdict_counts[m]:,} verdicts",
    help="Results are read from this model's side; most verdicts first.",
)
rivals = or_stop(_opponents, ch.key, model_a)
rival_names = rivals["model"].tolist()
if not rival_names:
    st.info(f"{model_a} met no other model in this selection.")
    st.stop()
prompts_met = {m: prompts_phrase(g, i) for m, g, i in
               zip(rival_names, rivals["prompts"].tolist(), rivals["prompt_ids"].tolist(), strict=True)}
_pick("h2h_b", rival_names, st.query_params.get("model_b"))
model_b = right.selectbox(
    "Model B", rival_names, key="h2h_b", format_func=lambda m: f"{m} · met on {prompts_met[m]}",
    help=escape_md(f"The models {model_a} met, most prompts first (counting a prompt's variants and turns)."),
)

s = or_stop(_summary, ch.key, model_a, model_b)
graphs_differ = s.prompts != s.prompt_ids  # prompts with variants or turns: one entry below per graph
unit = "prompt graphs" if graphs_differ else "prompts"
figures: list[tuple[str, object] | tuple[str, object, str]] = [
    ("Prompts", f"{s.prompt_ids:,}", "Prompt ids where the two models met.")]
if graphs_differ:
    figures.append(("Prompt graphs", f"{s.prompts:,}",
                    "(prompt id, variant, turn) where the two models met: a prompt's variants and turns "
                    "are graphs of their own, each an entry below."))
figures += [
    ("Meetings", f"{s.n_meetings:,}", "One judge's verdicts on the pair for one prompt graph."),
    ("Win rate of A", "–" if s.win_rate is None else f"{s.win_rate:.3f}",
     escape_md(f"{model_a}'s (wins + ties / 2) over its valid verdicts against {model_b}, as the "
               "leaderboard's win rate counts votes.")),
]
metric_row(*figures)
st.caption(escape_md(verdict_sentence(Matchup(ch.dataset, model_a, model_b), s)))
by_outcome = opened_expander("Meetings by outcome", "h2h_by_outcome")
if by_outcome is not None:
    with by_outcome:
        st.caption(
            "A meeting's outcome is the plurality of the judge's valid verdicts on the pair for that prompt "
            "(no single most frequent result: a tie), unless the judge saw both orders and the two orders "
            "disagree: then it is 'orders disagree'."
        )
        st.dataframe(summary_rows(Matchup(ch.dataset, model_a, model_b), s), hide_index=True,
                     column_config={"share": st.column_config.NumberColumn(format="percent")})

labels = {o: outcome_label(o, model_a, model_b) for o in OUTCOMES}
chosen = st.pills(
    "Outcome", list(OUTCOMES), selection_mode="multi", key="h2h_outcomes",
    format_func=lambda o: escape_md(f"{labels[o]} ({s.meetings[o]:,})"),
    help="Show only the meetings with these outcomes; none chosen shows every meeting.",
)
outcomes = tuple(o for o in OUTCOMES if o in (chosen or []))
total = or_stop(_n_prompts, ch.key, model_a, model_b, outcomes)
if total == 0:
    st.info("No meeting of these two models has the chosen outcome.")
    st.stop()
pages = math.ceil(total / PAGE_SIZE)
if st.session_state.get("h2h_page", 1) > pages:  # fewer pages than the last pair or filter had
    st.session_state["h2h_page"] = pages
pager, about = st.columns([1, 3], vertical_alignment="bottom")
if pages > 1:
    page = int(pager.number_input(f"Page (of {pages:,})", 1, pages, key="h2h_page",
                                  help=f"{PAGE_SIZE} {unit} a page.")) - 1
else:
    page = 0
page = min(page, pages - 1)
first, last = page * PAGE_SIZE + 1, min(total, (page + 1) * PAGE_SIZE)
about.caption(f"{unit.capitalize()} {first:,}–{last:,} of {total:,} (in prompt-id order).")
texts = _has_texts(ch.dataset, ch.key.version)
if not texts:
    st.caption("The dataset holds no question or answer texts, so only the verdicts are shown.")

for p in or_stop(_page, ch.key, model_a, model_b, outcomes, page):
    prompt_entry(p, ch.key, model_a, model_b, texts, graphs_differ)
