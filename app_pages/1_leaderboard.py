"""Leaderboard: models ranked from every graph of the current choice in the field's conventions
(LMArena's rank (UB) from the score intervals beside the ranker's rank, score +x / -y, votes, prompts),
then cycle participation per model and the rank on the reference leaderboard where one is mapped."""

from __future__ import annotations

import streamlit as st

from app_pages._ci_figure import ci_figure
from app_pages._lbopen_cache import bootstrap_job, started_job, stop_polling, stored_board_for
from app_pages._length_control import length_controlled_win_rates
from app_pages._lens import (
    B_DEFAULT,
    SEED,
    baseline_result,
    board_columns,
    board_display,
    bootstrap_note,
    column_picker,
    current,
    get_store,
    guarded_session,
    leaderboard_result,
    metric_row,
    or_stop,
    pair_counts_for,
    table_height,
    vote_order_note,
    widen_name_column,
)
from engine.views.baseline_view import NO_BASELINE, has_win_rates, star_baseline
from engine.views.exports import csv_bytes, leaderboard_json
from engine.views.leaderboard_view import (
    DEFAULT_EXTRA,
    MAIN_COLUMNS,
    NAME_ROOM_GIVE_UP,
    board_view,
    elo_factor,
    on_scale,
    spearman_help,
    spearman_value,
)
from engine.views.panel_view import is_panel_board, panel_judges
from engine.views.viz import ci_plot_frame, escape_md


def baseline_win_rates(ch, models: list[str], star: str | None = None) -> None:
    """Arena-Hard's score: a select box of the board's models; once one is chosen, each model's win rate
    against it predicted by a Bradley-Terry fit of every verdict as its own battle (A>>B three times),
    with bootstrap intervals, in a table of its own (its fit counts battles, not the board's votes).
    ``star``: the model every vote includes (``star_baseline``: Arena-Hard's and AlpacaEval's design), which
    the box opens on; else it opens on no baseline."""
    if not has_win_rates(ch.ranker):
        return
    options = [NO_BASELINE, *models]
    choice = st.selectbox(
        "Win rate against a baseline (Arena-Hard's score)", options, key="lb_baseline",
        index=options.index(star) if star in options else 0,
        help="Each model's win rate against the chosen model, predicted by a Bradley-Terry fit in which "
        "every verdict is one battle and a strong verdict (A>>B) counts 3 times where verdicts carry a "
        "strength; "
        f"95 % bootstrap intervals over single battles (B = {B_DEFAULT}).",
    )
    if choice == NO_BASELINE:
        return
    style_ci = st.session_state.get("lb_style_ci", "sandwich") if st.session_state.get("lb_style") else None
    frame, notes = or_stop(baseline_result, ch.key, ch.ranker, choice, B_DEFAULT, SEED, style_ci)
    if style_ci is not None:
        st.caption(f"Style control is on: win rates from the style-controlled fit at zero style difference, "
                   f"{style_ci} intervals.")
    rate = st.column_config.NumberColumn(  # predicted, where the length-controlled table's is observed
        f"predicted win rate vs {choice} (%)", format="%.1f",
        help=f"1 / (1 + exp(s_{choice} − s_model)) from the Bradley-Terry fit of the battles.")
    st.dataframe(frame[["model", "win_rate_pct", "interval"]], hide_index=True, width="content",
                 column_config={"win_rate_pct": rate, "interval": st.column_config.TextColumn("95% CI (%)")})
    for note in notes:
        st.caption(escape_md(note))


@st.cache_data(max_entries=16, show_spinner="Fitting the style-controlled board…")
def style_board_for(key, ranker: str, ci: str, bootstrap: int, seed: int):
    """The style-controlled board of the current choice (engine.ranking.style_board), cached by the
    dataset version, filters, ranker and interval method."""
    from engine.ranking.board import BoardSpec
    from engine.ranking.leaderboard import leaderboard

    spec = BoardSpec(ranker=ranker, style_control=True, ci=ci,
                     bootstrap=bootstrap if ci == "bootstrap" else 0, seed=seed)
    return leaderboard(get_store(), key.dataset, spec, judge=key.judge, category=key.category)


def style_control_section(ch, elo_scale: bool) -> None:
    """LMArena's style control under a toggle: the controlled score and rank, each model's rank change
    against the plain board, beta per style feature with its interval, and which interval method."""
    from engine.rankers import ranker_object
    from engine.views.style_view import style_view

    fits = ranker_object(ch.ranker).logistic
    on = st.toggle(
        "Style control (LMArena): rank with answer length and markdown held equal", key="lb_style",
        disabled=not fits,
        help="Fits P(a beats b) = σ(θa − θb + β·z), z the answers' differences in tokens, headers, lists and "
        "bold, each (a − b)/(a + b) standardised (arena-rank's contextual Bradley-Terry)."
        if fits else f"Style control needs the Bradley-Terry likelihood; the {ch.ranker} ranker has none.",
    )
    if not on:
        return
    ci = st.radio("Intervals", ("sandwich", "bootstrap"), horizontal=True, key="lb_style_ci",
                  help="sandwich: H⁻¹GH⁻¹ of the fit (LMArena's default, one fit); bootstrap: "
                  f"{B_DEFAULT} resamples of the votes, each refitted.")
    board = or_stop(style_board_for, ch.key, ch.ranker, ci, B_DEFAULT, SEED)
    view = style_view(board, ranker=ch.ranker, elo_scale=elo_scale)
    st.subheader("Style-controlled board")
    for note in view.notes:
        st.warning(escape_md(note), icon=":material/info:")
    st.dataframe(view.frame, hide_index=True, width="stretch", height=min(38 + 35 * len(view.frame), 640),
                 column_config={"score": st.column_config.NumberColumn(view.score_label,
                                                                       format=f"%.{view.digits}f"),
                                "rank_ub": st.column_config.NumberColumn(
                                    "rank (UB)", help="1 + the models whose controlled score interval lies "
                                    "wholly above this one's (LMArena's rank (UB))"),
                                "rank_plain": st.column_config.NumberColumn("rank (plain)"),
                                "rank_change": st.column_config.TextColumn(
                                    "rank change", help="rank on the plain board − controlled rank: +2 = two "
                                    "places higher once style is held equal")})
    st.caption(escape_md(f"Intervals: {view.ci_words}. Rank change against the plain Bradley-Terry board on "
                         "the same votes."))
    st.markdown("**What style pays** — β per feature (log-odds of winning per standard deviation of the "
                "feature's (a − b)/(a + b); positive: more of it wins more)")
    st.dataframe(view.betas, hide_index=True, width="content",
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in ("beta", "ci_low", "ci_high")})


def panel_judges_section(board) -> None:
    """Each judge's reliability and side bias with their 95 % intervals, fitted jointly with the scores."""
    st.markdown("**The panel's judges** — reliability σ(γ): the share of verdicts that follow the models' "
                "strengths (1 = all, 0 = none); side bias σ(q): where a verdict does not, how often it picks "
                "the answer shown first (0.5 = no side; empty where no verdict's order is known)")
    st.dataframe(panel_judges(board), hide_index=True, width="content",
                 column_config={c: st.column_config.NumberColumn(format="%.3f") for c in
                                ("reliability", "reliability_low", "reliability_high", "side_bias",
                                 "side_bias_low", "side_bias_high")})


def first_open(ch):
    """(the board to show, whether its intervals are still to come): a count ranker's board comes at once
    with its point scores, its bootstrap computed after the page is on screen (``intervals_pending``, drawn
    last, starts it: ``app_pages._lbopen_cache``), or the whole board at once where an earlier server kept it
    in the store for this dataset version (``stored_board_for``); the other rankers' boards (and pair-count
    datasets', and boards of fewer than ``engine.views.leaderboard_first.DEFER_MIN_VOTES`` votes) are computed
    whole, as before."""
    from engine.views import leaderboard_first
    from engine.views.leaderboard_first import first_open_applies

    # the same calls in the same order as the server's prewarm (app_pages._lbopen_cache.warm_first_open)
    if not first_open_applies(ch.ranker, None) or pair_counts_for(ch.dataset, ch.key.version):
        return or_stop(leaderboard_result, ch.key, ch.ranker, None, 1.0, B_DEFAULT, SEED), False
    job = started_job(ch.key, ch.ranker, B_DEFAULT, SEED)
    if job is not None and job.done():
        return or_stop(job.result), False
    whole = or_stop(stored_board_for, ch.key, ch.ranker, B_DEFAULT, SEED)  # kept by an earlier server
    if whole is not None:
        return whole, False
    point = or_stop(leaderboard_result, ch.key, ch.ranker, None, 1.0, 0, SEED)
    if int(point.params.get("n_votes", 0)) < leaderboard_first.DEFER_MIN_VOTES:  # fast: in one pass
        return or_stop(leaderboard_result, ch.key, ch.ranker, None, 1.0, B_DEFAULT, SEED), False
    return point, True


def live_board(ch, point) -> None:
    """The board while its bootstrap runs, in a fragment checked every second: the point board with a note
    that the intervals are being computed, then, once the job is done, the finished board drawn by the
    fragment itself (``draw_board`` with the job's board: what the page's next full run draws) and the
    fragment's timer stopped. No ``st.rerun()``: a rerun asked from a script thread starts its next run
    without looking at what came in meanwhile, and a page click that reaches the server in that moment is lost
    (Streamlit 1.67's fast reruns: two runs of one session share its page choice; docs/notes/race36-36.md).
    The fragment's first run is the page's; the job is started at the page's end (``start_intervals``), so
    its thread does not share the cores and the GIL with the drawing of the first view; a later run of the
    fragment starts it if the page has not (``bootstrap_job`` starts a choice's job once; later asks find
    it)."""
    page_run = [True]  # the fragment's first run is the page's; its reruns (every second) are its own

    @st.fragment(run_every=1.0)
    def live() -> None:
        # a fragment rerun does not pass through app.py's session: it holds the store itself, and a store
        # held by a command-line writer is the same warning and retry as in app.py, not a traceback
        with guarded_session("busy_retry_board"):
            if page_run:
                page_run.clear()
                job = started_job(ch.key, ch.ranker, B_DEFAULT, SEED)
            else:
                job = bootstrap_job(ch.key, ch.ranker, B_DEFAULT, SEED)
            if job is not None and job.done():
                stop_polling()
                draw_board(ch, or_stop(job.result), False)
            else:
                draw_board(ch, point, True)

    live()


def start_intervals(ch) -> None:
    """Start the pending board's bootstrap job: called in the page's ``finally``, after its last element or
    after a section stopped the page (an ``or_stop`` in style control or the baseline win rates), so the
    intervals come however the run ended (no Streamlit call here: a stopped run cannot draw)."""
    bootstrap_job(ch.key, ch.ranker, B_DEFAULT, SEED)


def draw_board(ch, board, pending: bool) -> None:
    """Everything under the title that shows the board: the metrics, the table (the point board's with a note
    that the intervals are being computed where ``pending``), the sections under it, the chart, the
    downloads and the closing caption. One drawing for the page's run and the intervals fragment's
    (``live_board``), so the board the fragment draws once the intervals are in is the page's own."""
    table = board.table
    counts_only = board.params.get("unit") == "battles"  # a pair-count dataset: battles, no graph (issue 25)
    panel_board = is_panel_board(board)  # the judge panel: verdicts with their orders, as the CLI fits them
    st.caption(
        "Every verdict of the chosen dataset, judge and category, each with its judge and presentation "
        "order, in one noisy Bradley-Terry fit with each judge's reliability and side bias (as `leaderboard "
        "--ranker panel` fits it). Intervals are 95 % Wald intervals from the fit's observed information."
        if panel_board else
        "Every battle of the chosen pair-count dataset (wins and ties summed per model pair), aggregated "
        "into one ranking. Intervals are percentile bootstrap intervals, the battles redrawn as one "
        "multinomial; there are no prompts, so no graphs and no bad triads." if counts_only else
        "Every tournament graph of the chosen dataset, judge and category, aggregated into one ranking "
        "(W = wins, T = ties over graphs, paper 000 eq. 3–4). Intervals are percentile bootstrap intervals "
        "over graphs; bad triads count the non-transitive triples a model sits in."
    )
    n_units = int(board.params["n_votes"] if counts_only else board.params["n_verdicts_valid"] if panel_board
                  else board.params["n_graphs"])
    unit_word = "Battles" if counts_only else "Verdicts" if panel_board else "Graphs"

    elo_ok = elo_factor(ch.ranker) is not None
    elo = st.toggle(
        "Elo-like scale (400·log10 units around 1000)",
        key="lb_elo",
        disabled=not elo_ok,
        help="Shows BT / Davidson log-strengths and Elo ratings as 1000 + 400·log10 units, as arena "
        "leaderboards do."
        if elo_ok
        else f"The {ch.ranker} score is not a log-strength; no Elo reading.",
    )
    view = board_view(table, ranker=ch.ranker, n_graphs=n_units, elo_scale=bool(elo and elo_ok),
                      reference_note=board.reference_note, pending=pending)

    reference = (
        ("Spearman distance to reference", spearman_value(board.distances), spearman_help(board.distances))
        if board.distances else ("Reference", "none", board.reference_note)
    )
    metric_row(("Models", len(table)), (unit_word, n_units),
               ("Leader", escape_md(view.frame.iloc[0]["model"])), reference)

    for note in view.notes:
        st.warning(escape_md(note), icon=":material/info:")
    config = board_columns(board.reference_note, ch.ranker, view.score_label, view.digits)
    # a picker of its own while the intervals run: its options lack rank (UB), and the full board's picker
    # must start with it among the defaults (a kept choice from the pending run would leave it out)
    shown = column_picker(list(view.frame.columns), MAIN_COLUMNS, DEFAULT_EXTRA, config,
                          "lb_columns_pending" if pending else "lb_columns",
                          "Rank, model, score, 95% CI and votes", names=view.frame["model"],
                          give_up=NAME_ROOM_GIVE_UP)
    config = widen_name_column(config, shown, view.frame["model"])
    st.dataframe(board_display(view.frame), hide_index=True, width="stretch",
                 height=table_height(len(view.frame)), column_order=shown,
                 column_config=config)
    if pending:
        st.caption(f":material/hourglass_top: Computing the 95 % bootstrap intervals (B = {B_DEFAULT}); the "
                   "scores and ranks shown are final, the intervals and rank (UB) follow in a moment.")
    st.caption(escape_md(f"{view.rank_note} Score: {view.score_label}; 95% CI as +above / -below."))
    if view.delta_note:
        st.caption(escape_md(view.delta_note))
    if panel_board:
        panel_judges_section(board)
    style_control_section(ch, bool(elo and elo_ok))

    baseline_win_rates(ch, sorted(table["model"].astype(str)), star_baseline(table))
    length_controlled_win_rates(ch, st.session_state.get("lb_baseline"), sorted(table["model"].astype(str)))

    plot = ci_plot_frame(on_scale(table, ch.ranker, bool(elo and elo_ok)))
    title = ("Scores with 95 % Wald intervals (the panel's fit)" if panel_board else
             f"Scores (95 % bootstrap intervals being computed, B = {B_DEFAULT})" if pending else
             f"Scores with 95 % bootstrap intervals (B = {B_DEFAULT})")
    fig = ci_figure(plot, view.score_label, title)
    st.plotly_chart(fig, width="stretch")

    d1, d2, _ = st.columns([1, 1, 4])
    d1.download_button("Download CSV", lambda: csv_bytes(table), "leaderboard.csv", "text/csv", key="lb_csv",
                       on_click="ignore", disabled=pending,
                       help="With the intervals, once computed." if pending else None)
    d2.download_button("Download JSON", lambda: leaderboard_json(board), "leaderboard.json",
                       "application/json", key="lb_json", on_click="ignore", disabled=pending,
                       help="With the intervals, once computed." if pending else None)
    unit_policy = ("each verdict one observation" if panel_board
                   else f"combine policy {board.params['policy']}")
    st.caption(
        f"{ch.caption()} · ranker {escape_md(ch.ranker)} · all {n_units} "
        f"{unit_word.lower()} · "
        f"{unit_policy} · "
        f"{'bootstrap being computed' if pending else bootstrap_note(board)}"
        f"{escape_md(vote_order_note(board))} · "
        f"{escape_md(board.reference_note)}. "
        "The Data page exports every result at once."
    )


st.title("Leaderboard")
ch = current()
board, pending = first_open(ch)
try:  # the bootstrap starts (in ``finally``) however the page ends: a section's or_stop too
    if pending:
        live_board(ch, board)
    else:
        draw_board(ch, board, False)
finally:
    if pending:  # after the page's last element (or the error a section stopped at)
        start_intervals(ch)
