"""Prompt inspector: one tournament graph before and after denoising, its cyclic triads and the
verdicts, rationales and answers behind a chosen triad."""

from __future__ import annotations

import streamlit as st

from engine.errors import LensError
from engine.viz import COLOR_BAD, escape_md, text_block, tournament_html, triad_edge_set
from pages._lens import current, denoised_for, get_store, show_error, stack_for, triads_for, verdicts_for

st.title("Prompt inspector")
st.caption(
    "One tournament graph: arrows point from the winner to the loser, dashed links are ties, red edges "
    "lie on a bad (non-transitive) triad. Pick a triad to read the three verdicts behind it."
)
ch = current()
try:
    stack = stack_for(ch.key)
except LensError as exc:
    show_error(exc)
    st.stop()
if stack.T == 0:
    st.info("The selection holds no graph.")
    st.stop()

keys = stack.keys.reset_index(drop=True)
prompts = list(dict.fromkeys(keys["prompt_id"].astype(str)))
qp = st.query_params
if "insp_prompt" not in st.session_state and qp.get("prompt_id") in prompts:
    st.session_state["insp_prompt"] = qp.get("prompt_id")
if st.session_state.get("insp_prompt") not in prompts:
    st.session_state["insp_prompt"] = prompts[0]

c1, c2, c3 = st.columns([2, 1, 1])
prompt = c1.selectbox("Prompt", prompts, key="insp_prompt")
here = keys[keys["prompt_id"].astype(str) == prompt]
variants = sorted(here["variant"].astype(int).unique().tolist())
if "insp_variant" not in st.session_state and qp.get("variant") is not None:
    try:
        st.session_state["insp_variant"] = int(qp.get("variant"))
    except ValueError:
        pass
if st.session_state.get("insp_variant") not in variants:
    st.session_state["insp_variant"] = variants[0]
variant = c2.selectbox("Variant", variants, key="insp_variant", help="0 is the original prompt.")
here = here[here["variant"].astype(int) == variant]
judges = sorted(here["judge"].astype(str).unique().tolist())
if st.session_state.get("insp_judge") not in judges:
    st.session_state["insp_judge"] = judges[0]
judge = c3.selectbox("Judge", judges, key="insp_judge")
here = here[here["judge"].astype(str) == judge]
t = int(here.index[0])  # one graph per turn; the first turn is shown
key = keys.iloc[t]

texts = get_store().prompt_texts(ch.dataset)
q = texts[(texts["prompt_id"].astype(str) == prompt) & (texts["variant"] == variant) & (texts["turn"] == key["turn"])]
category = key["category"] if isinstance(key["category"], str) else "no category"
st.markdown(f"**Question** · {escape_md(category)} · prompt {escape_md(prompt)}, variant {variant}")
if len(q) and isinstance(q.iloc[0]["text"], str):
    st.markdown(text_block(q.iloc[0]["text"]))
else:
    st.caption("The dataset holds no text for this prompt.")

try:
    triads = triads_for(ch.key, t)
    den = denoised_for(ch.key, t)
except LensError as exc:
    show_error(exc)
    st.stop()

models = list(stack.models)
present = sorted(set(stack.observed[t].any(axis=1).nonzero()[0].tolist()))
sub_models = [models[i] for i in present]
adj = stack.adj[t][present][:, present]
obs = stack.observed[t][present][:, present]
pos = {m: i for i, m in enumerate(sub_models)}
tri_idx = [(pos[a], pos[b], pos[c]) for a, b, c in triads[["model_a", "model_b", "model_c"]].itertuples(index=False)]
hl = triad_edge_set(tri_idx)

m1, m2, m3, m4 = st.columns(4)
m1.metric("Models in this graph", len(sub_models))
m2.metric("Verdicts", int(key["n_verdicts"]))
m3.metric("Bad triads", len(triads))
m4.metric("Unparsable verdicts", int(key["n_invalid"]))

method = st.radio(
    "Denoised by", list(den), horizontal=True, key="insp_method",
    help="PGED: greedy weighted feedback-arc-set removal on the strict wins (paper 002). ELSPR: each "
    "strongly connected component re-ordered by win score (paper 004).",
)
d_adj, removed = den[method]
d_adj = d_adj[present][:, present]
removed_sub = [(pos[a], pos[b]) for a, b in removed if a in pos and b in pos]
g1, g2 = st.columns(2)
with g1:
    st.markdown("**Before denoising**")
    st.iframe(tournament_html(sub_models, adj, obs, highlight=hl), height=440)
with g2:
    st.markdown(f"**After {escape_md(method)}** · {len(removed_sub)} edge(s) removed")
    st.iframe(tournament_html(sub_models, d_adj, None, removed=removed_sub), height=440)
st.caption(
    f"Legend: grey arrow = strict win, dashed = tie, <span style='color:{COLOR_BAD}'>red</span> = on a bad "
    "triad, dotted grey = removed by denoising. Drag nodes to rearrange; hover an edge for its verdict.",
    unsafe_allow_html=True,
)

st.subheader(f"Cyclic triads ({len(triads)})")
if triads.empty:
    st.success("This graph has no bad triad: its verdicts are transitive.")
    st.stop()
st.dataframe(triads, hide_index=True, width="stretch")
labels = [f"{a} · {b} · {c} ({k})" for a, b, c, k in triads[["model_a", "model_b", "model_c", "kind"]].itertuples(index=False)]
choice = st.selectbox("Show the verdicts behind triad", range(len(labels)), format_func=lambda i: labels[i], key="insp_triad")
trio = set(triads.iloc[choice][["model_a", "model_b", "model_c"]])

vd = verdicts_for(ch.key)
mask = (
    (vd["judge"] == judge) & (vd["prompt_id"] == prompt) & (vd["variant"] == variant) & (vd["turn"] == key["turn"])
    & vd["model_a"].isin(trio) & vd["model_b"].isin(trio)
)
rows = vd[mask].sort_values(["model_a", "model_b", "order"], na_position="last")
answers = get_store().answer_texts(ch.dataset, prompt)
answers = answers[(answers["variant"] == variant) & (answers["turn"] == key["turn"])].set_index("model")["text"]
st.markdown(f"**{len(rows)} verdict(s) on the three pairs of this triad**")
for _, r in rows.iterrows():
    who = {"A": r["model_a"], "B": r["model_b"]}.get(r["winner"], r["winner"])
    shown = {"AB": f"{r['model_a']} shown first", "BA": f"{r['model_b']} shown first"}.get(r["order"], "order not recorded")
    title = f"{r['model_a']} vs {r['model_b']} → {who} · {shown}"
    with st.expander(escape_md(title), expanded=len(rows) <= 3):
        if isinstance(r["explanation"], str) and r["explanation"].strip():
            st.markdown("**Judge's rationale**")
            st.markdown(text_block(r["explanation"]))
        else:
            st.caption("No rationale was stored for this verdict.")
        a1, a2 = st.columns(2)
        for col, m in ((a1, r["model_a"]), (a2, r["model_b"])):
            col.markdown(f"**Answer of {escape_md(m)}**")
            txt = answers.get(m)
            if isinstance(txt, str):
                col.markdown(text_block(txt))
            else:
                col.caption("No answer text stored.")
