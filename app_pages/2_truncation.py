"""Truncation: keep the K most consistent graphs by S_mu = C3_bad + mu·C4_bad and re-rank live."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages._curve_figure import CURVES_DRAWN, setting_svg
from app_pages._lens import (
    B_DEFAULT,
    CURVE_RESAMPLES,
    SEED,
    board_columns,
    board_display,
    board_made_for,
    bootstrap_note,
    column_picker,
    current,
    curve_markup_for,
    guarded_session,
    intervals_follow,
    keep_k_curve_for,
    leaderboard_result,
    metric_row,
    mu_curve_for,
    opened_expander,
    or_stop,
    protocol_params,
    protocol_table,
    reference_for_key,
    remember,
    show_error,
    truncation_pool_for,
    user_text,
    vote_order_note,
    warm_boards_for,
    warm_curves_for,
    widen_name_column,
)
from engine.errors import LensError
from engine.views.leaderboard_view import score_digits
from engine.views.truncation_view import (
    MU_STEPS,
    PAPER_KEEP,
    best_k,
    default_keep_k,
    format_s_mu,
    no_cycle_text,
    protocol_sizes,
)
from engine.views.viz import escape_md, rank_change_frame

# The kept board's columns always shown, and those shown beside them until the reader picks others:
# together they fit at 1280 px without sideways scroll (tests/test_browser_stress.py).
TRUNCATION_MAIN = ("rank", "rank_change", "model", "score", "ci_low", "ci_high")
TRUNCATION_EXTRA = ("ties", "bad_triads", "ref_rank", "ref_diff")
TRUNCATION_GIVE_UP = ("ties",)  # left out at first while the longest model name would be cut beside it

st.title("Truncation")
st.caption(
    "Each graph gets the score S_μ = C3ᵇᵃᵈ + μ·C4ᵇᵃᵈ (bad 3- and 4-cycles, paper 000 App. A.2). "
    "Keep-K keeps the K graphs with the smallest score and ranks the models from those alone."
)
ch = current()
# counted without building the graphs keep-K cannot keep (a battle log's million one-pair graphs): the
# selection's every graph is built only below, for a pool of two or more graphs
counts = or_stop(truncation_pool_for, ch.key)
T = counts.n_pool  # originals + paraphrases that can hold a cycle: the graphs keep-K chooses from
n_no_cycle = counts.n_no_cycle
left_out = counts.n_replicates  # sampling replicates
no_cycle = no_cycle_text(n_no_cycle, T)
if T == 0 and no_cycle:
    st.info(no_cycle)
    st.stop()
if no_cycle:
    st.caption(no_cycle)
if T < 2:
    st.info("Truncation needs at least two graphs (originals or paraphrases) in the selection.")
    st.stop()

# a new selection (another pool size) opens on the paper's share of the pool again; the sliders'
# values live in plain twins (_keep_k, _mu) so they survive a visit to another page
if st.session_state.get("_keep_k_for") != ch.key:
    st.session_state["_keep_k_for"] = ch.key
    st.session_state["_keep_k"] = default_keep_k(T)
MU_DEFAULT = 1.0  # paper 000, Section 4: mu = 1 by default


@st.fragment
def sliders_and_results() -> None:
    """The sliders and everything they drive (the kept board, its figures, the curves, the protocol
    table): a slider move reruns this fragment alone, not the sidebar and the page's selection work
    above it (which a move does not change)."""
    # a fragment rerun does not pass through app.py's session: it holds the store itself, and a store
    # held by a command-line writer is the same warning and retry as in app.py, not a traceback
    with guarded_session("busy_retry_sliders"):
        _sliders_and_results()


def _sliders_and_results() -> None:
    """The fragment's content, in the order a move needs it: the sliders, the kept board and its
    figures first (what the move is for), then the curves and the protocol table."""
    st.session_state["keep_k"] = st.session_state["_keep_k"]
    st.session_state["mu"] = st.session_state.get("_mu", MU_DEFAULT)
    left, right = st.columns(2)
    keep_k = left.slider(
        "Keep K graphs", 1, T, key="keep_k", on_change=remember, args=("keep_k",),
        help=f"Opens at {default_keep_k(T)} = half the pool: paper 000 keeps {PAPER_KEEP[0]} of each "
        f"category's "
        f"{PAPER_KEEP[1]} graphs.",
    )
    mu = right.select_slider(
        "μ (weight of bad 4-cycles), log scale", options=MU_STEPS, key="mu", on_change=remember, args=("mu",),
        format_func=lambda v: f"{v:g}",
    )
    # a count ranker's ranks, scores and counts do not depend on the bootstrap: the move's numbers come from
    # its point board at once, the intervals after them (the table is redrawn in place); the untruncated board
    # gives only its ranks (the Δ rank column), so it is never bootstrapped. A board made already (the same
    # kept graphs at another μ, or made ahead of this move) is shown at once, intervals included.
    later = intervals_follow(ch.ranker) and not board_made_for(ch.key, ch.ranker, int(keep_k), float(mu),
                                                                B_DEFAULT, SEED)
    # once the reader moves a slider, the boards and curves the next moves need are made in the background
    # while the reader looks (below): those moves are then look-ups, not fits. A page opened and left (or a
    # test that only reads it) starts no such work.
    setting, before = (ch.key, int(keep_k), float(mu)), st.session_state.get("_slid_from")
    st.session_state["_slid_from"] = setting
    slid = before is not None and before[0] == ch.key and before != setting
    try:
        # the untruncated ranking of the same pool (every graph of the selection when nothing is left out):
        # keeping all T graphs keeps the same graphs at every mu, so it is fitted once, at MU_DEFAULT
        every = T if T < counts.n_graphs else None
        full = leaderboard_result(ch.key, ch.ranker, every, MU_DEFAULT, 0 if later else B_DEFAULT, SEED)
        kept = leaderboard_result(ch.key, ch.ranker, int(keep_k), float(mu), 0 if later else B_DEFAULT, SEED)
    except LensError as exc:
        show_error(exc)
        return

    table = rank_change_frame(full.table, kept.table)
    moved = int((table["rank_change"].fillna(0) != 0).sum())
    metric_row(("Graphs kept", f"{keep_k} of {T}"), ("μ", f"{mu:g}"), ("Models whose rank changed", moved),
               ("Leader", escape_md(table.iloc[0]["model"])))
    order = ["rank", "rank_change", "model", "score", "ci_low", "ci_high", "wins", "losses", "ties",
             "win_rate",
             "bad_triads", "cycle_share", "ref_rank", "ref_diff"]
    config = board_columns(kept.reference_note, f"{ch.ranker}", digits=score_digits(table["score"]))
    shown = column_picker([c for c in order if c in table.columns], TRUNCATION_MAIN, TRUNCATION_EXTRA, config,
                          "trunc_columns", "Rank, Δ rank, model, score and its interval",
                          names=table["model"], give_up=TRUNCATION_GIVE_UP)
    config = widen_name_column(config, shown, table["model"])
    # the board itself holds its place (no ``st.empty`` slot first): a move re-sends a data frame where the
    # last run drew one, which the browser updates in place; an empty slot that reached the browser ahead of
    # the frame made it take the table down and build a new one (a quarter of the pooled μ moves,
    # docs/notes/mu39-39.md)
    board = st.dataframe(board_display(table), hide_index=True, width="stretch", column_config=config,
                         column_order=shown)
    if later:  # the intervals: the same board with its B draws, drawn over the point board
        try:
            kept = leaderboard_result(ch.key, ch.ranker, int(keep_k), float(mu), B_DEFAULT, SEED)
        except LensError as exc:
            show_error(exc)
            return
        table = rank_change_frame(full.table, kept.table)
        board.dataframe(board_display(table), hide_index=True, width="stretch", column_config=config,
                        column_order=shown)
    st.caption(
        f"{ch.caption()} · ranker {escape_md(ch.ranker)} · keep K={keep_k} of {T} graphs by S_μ with "
        f"μ={mu:g} "
        f"(kept: S_μ ≤ {escape_md(format_s_mu(kept.params['threshold'], mu))}) "
        f"· {bootstrap_note(kept)}{escape_md(vote_order_note(kept))} · Δ rank against the same ranker on all "
        f"{T} graphs"
        + (f" · {left_out} sampling-replicate graph(s) are not in the pool (paper 000's Trunc pool: "
           "originals "
           "and paraphrases)" if left_out else "")
    )

    st.subheader("Sensitivity against the reference ranking")
    try:
        k_frame = keep_k_curve_for(ch.key, float(mu))
        mu_frame = mu_curve_for(ch.key, int(keep_k))
    except LensError as exc:
        st.info(user_text(exc))
        k_frame = mu_frame = None
    if k_frame is not None:
        ref_note = reference_for_key(ch.key.dataset, ch.key.category, ch.key.version)[1]
        k_best = best_k(k_frame)
        metric = "Spearman ρ distance"
        cols = st.columns(2)
        drawn: dict[str, np.ndarray] = {}
        for col, frame, x, at, marker, title in (
            (cols[0], k_frame, "k", float(mu), keep_k, f"distance vs K (μ={mu:g})"),
            (cols[1], mu_frame, "mu", int(keep_k), mu, f"distance vs μ (K={keep_k})"),
        ):
            # inline SVG (st.html strips SVG: its DOMPurify keeps HTML only); titles are escaped. The
            # setting's line is its own small element over the curve: a move of the other slider leaves the
            # curve's markup as it was (made once per curve), and the browser does not redraw it
            markup, drawn[x] = curve_markup_for(ch.key, x, at, title, metric, k_best)
            col.markdown(markup, unsafe_allow_html=True)
            col.markdown(setting_svg(frame, x, marker, best=k_best), unsafe_allow_html=True)
        st.session_state[CURVES_DRAWN] = drawn  # the numbers drawn, kept on the server (tests read them)
        st.caption(
            "Paper 000's protocol, whatever the sidebar's ranker: half-tie Bradley–Terry on the kept "
            "graphs, "
            f"Spearman distance to the {escape_md(ref_note)}. Blue: the mean over {CURVE_RESAMPLES} draws "
            "of 80 "
            "% of "
            "the kept graphs without replacement (the paper's 25 → 20), band: its 95 % interval; dotted "
            "grey: "
            "all "
            "kept graphs fitted once. Dashed red: the current setting; dotted green: the K where the blue "
            "curve "
            "is "
            f"lowest at this μ ({k_best})."
        )
        if slid:  # the curves of μ a step or two away and of K nearby
            warm_curves_for(ch.key, int(keep_k), float(mu), T, MU_STEPS)
    if slid:  # the kept boards (intervals included) one and two steps away
        warm_boards_for(ch.key, ch.ranker, int(keep_k), float(mu), T, MU_STEPS, B_DEFAULT, SEED)

    protocol_expander(float(mu))


@st.fragment
def protocol_expander(mu: float) -> None:
    """The protocol table's expander: a fragment of its own inside the sliders' (opening or closing it, or
    computing the table, does not redraw the board and the curves), its content drawn once opened, so a
    slider move does not re-send what the reader does not see. A table already computed for this selection
    and μ opens it again when the reader comes back to the page (Streamlit drops the state of an expander a
    run did not draw)."""
    if (st.session_state.get("protocol_for") == (ch.key, mu) and "protocol_result" in st.session_state
            and "protocol_open" not in st.session_state):
        st.session_state["protocol_open"] = True
    box = opened_expander("Protocol table (Table-2 shape)", "protocol_open")
    if box is not None:
        # a fragment run of its own: guarded like the sliders' (an error in a fragment called from another
        # does not reach the outer guard as itself)
        with guarded_session("busy_retry_protocol"), box:
            _protocol_section(mu)


def _protocol_section(mu: float) -> None:
    """The Table-2 protocols (paper 000) behind a button: the expander's content."""
    st.caption(escape_md(
        "The six protocols of paper 000, Table 2 (truncation, sampling-only, no truncation, "
        "score-of-win, "
        f"random, single prompt) with the engine's sizes: {protocol_sizes(protocol_params(mu))}. "
        "Spearman "
        f"distance to the reference × 1000, mean ± half-width, at μ = {mu:g}; like the curves they use "
        "half-tie Bradley–Terry, not the sidebar's ranker."
    ))
    params = (ch.key, mu)
    if st.session_state.get("protocol_for") != params:
        st.session_state.pop("protocol_result", None)
    if ch.key.judge is None:
        st.info("Choose one judge in the sidebar: the protocols compare one judge's graphs.")
    elif "protocol_result" not in st.session_state and st.button(
        "Compute the protocol table", key="protocol_go"
    ):
        try:
            st.session_state["protocol_result"] = protocol_table(ch.key, mu)
            st.session_state["protocol_for"] = params
        except LensError as exc:
            show_error(exc)
    if "protocol_result" in st.session_state:
        ptab, sizes = st.session_state["protocol_result"]
        st.dataframe(
            ptab, hide_index=True, width="stretch",
            column_config={
                "protocol": st.column_config.TextColumn("protocol", pinned=True),
                "macro": st.column_config.TextColumn("macro", help="Mean over categories, per resample."),
                "no spread": st.column_config.TextColumn(
                    "no spread", help="Category cells whose resamples all gave the same distance (± 0)."),
                "why": st.column_config.TextColumn("why ± 0", width="large"),
            },
        )
        st.caption(escape_md(f"Run with {sizes}."))
        if not ptab["no spread"].str.startswith("0 of").all():
            st.caption(
                "“± 0” is no resampling spread: the pool a protocol draws from is no larger than a draw "
                "(the pools are named above and in the “why” column), so every draw is the same set of "
                "graphs."
            )


sliders_and_results()
