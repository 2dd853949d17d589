"""The Leaderboard page (AppTest) on its first-open path (the point board at once, the bootstrap in a worker
thread, then the whole board) shows the same table as the old path (``app_leaderboard`` on every graph with
the app's B and seed, through the same view), pooled and for one judge; while the bootstrap runs the
interval column says it is being computed, never a stale or empty interval."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from apphelpers import assert_clean, new_app

from app_pages._lens import B_DEFAULT, SEED, board_display
from engine.graphs.buckets import build_buckets
from engine.rankers.votes import votes
from engine.ranking.reference import reference_for
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from engine.views.appstate import SliderContext, app_leaderboard
from engine.views.leaderboard_view import PENDING, board_view


def old_view(db, judge, ranker):
    with Store(db) as store:
        ref, note = reference_for("vicuna80", None, store)
        board = app_leaderboard(
            SliderContext.of(build_buckets(store.verdicts("vicuna80", judge=judge))), ranker=ranker,
            keep_k=None, mu=1.0, bootstrap=B_DEFAULT, seed=SEED, reference=ref, reference_note=note,
            votes=votes(store_vote_rows(store, "vicuna80", judge=judge)))
    return board_view(board.table, ranker=ranker, n_graphs=int(board.params["n_graphs"]),
                      reference_note=board.reference_note)


def without_kept_boards(db):
    """``db`` with no Leaderboard board kept in it (a copy of the shared store may hold those another test's
    bootstrap job kept): its first open computes, as the first open after an import does."""
    from engine.store.results_table import delete_results

    with Store(db) as store:
        delete_results(store, None)
    return db


def wait_for_bootstrap() -> None:
    from app_pages._lbopen_cache import _jobs

    for job in list(_jobs().jobs.values()):
        job.result(timeout=120)


@pytest.mark.parametrize("judge, ranker", [(None, "bt"), ("gpt-4", "elo")])
@pytest.mark.parametrize("defer", [True, False])
def test_page_shows_the_old_board(shipped_db_copy, monkeypatch, judge, ranker, defer):
    """``defer``: the bootstrap after the point board (as from DEFER_MIN_VOTES votes up), else in one pass.
    On a copy: the bootstrap job keeps boards in the store it ran on, which later tests' copies of the shared
    store would then read instead of computing."""
    from engine.views import leaderboard_first

    shipped_db = shipped_db_copy

    if defer:
        monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    at = new_app(shipped_db, monkeypatch)
    if judge:
        at.selectbox(key="judge").set_value(judge)
    at.selectbox(key="ranker").set_value(ranker).run()
    wait_for_bootstrap()
    at.run()
    assert_clean(at)
    shown = at.dataframe[0].value.reset_index(drop=True)
    want = board_display(old_view(shipped_db, judge, ranker).frame).reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, want, check_exact=True)
    assert not any(PENDING in str(c.value) for c in at.caption)
    assert "rank_ub" in at.multiselect(key="lb_columns").value  # the full board's default columns


def test_a_pending_board_says_its_intervals_are_being_computed(shipped_store):
    from engine.views.leaderboard_first import cycle_context, first_board

    v = votes(store_vote_rows(shipped_store, "vicuna80"))
    ctx = cycle_context(shipped_store, "vicuna80", None, None)
    point = first_board(v, ctx, ranker="bt", bootstrap=0, seed=0)
    view = board_view(point.table, ranker="bt", n_graphs=80, pending=True)
    assert (view.frame["interval"] == PENDING).all() and (view.frame["rank_range"] == PENDING).all()
    assert "being computed" in view.rank_note
    done = board_view(point.table, ranker="bt", n_graphs=80)
    assert (done.frame["interval"] == "—").all()  # without the flag: "no interval"; pending must not say so


def test_the_bootstrap_starts_after_the_pages_last_element(shipped_db_copy, monkeypatch):
    """The deferred bootstrap's thread starts only once the first view is drawn (it would share the cores and
    the GIL with the drawing): when the job is asked for, every element of the run has been sent (the
    pending note, under the table, among them), and the first view says the intervals are being computed;
    the next run after the job shows them."""
    from streamlit.delta_generator import DeltaGenerator

    from app_pages import _lbopen_cache
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    sent: list[str] = []  # every element the script sends, in order (every container)
    sent_at_start: list[int] = []  # how many had been sent when the job was asked for
    real_enqueue, real_get = DeltaGenerator._enqueue, _lbopen_cache.BootstrapJobs.get

    def enqueue_seen(self, delta_type, element_proto, *args, **kwargs):
        sent.append(f"{delta_type} {element_proto}")
        return real_enqueue(self, delta_type, element_proto, *args, **kwargs)

    def get_seen(self, key, start):
        sent_at_start.append(len(sent))
        return real_get(self, key, start)

    monkeypatch.setattr(DeltaGenerator, "_enqueue", enqueue_seen)
    monkeypatch.setattr(_lbopen_cache.BootstrapJobs, "get", get_seen)
    _lbopen_cache._jobs.clear()  # a job of this choice left by another test would be done already
    # a store of its own: another test's job may have kept this choice's whole board in the shared one
    at = new_app(without_kept_boards(shipped_db_copy), monkeypatch)  # the first run
    in_first_run = len(sent)
    at.run()
    assert_clean(at)
    assert sent_at_start, "the page never asked for its bootstrap job"
    first = sent_at_start[0]
    # the page's last caption went out before the job was asked for, and nothing after it in that run; the
    # pending note's caption went out before (the note's own run only looks for the job)
    assert "bootstrap being computed" in sent[first - 1]
    assert first == in_first_run
    assert any("Computing the 95 % bootstrap intervals" in e for e in sent[:first])
    wait_for_bootstrap()
    at.run()
    assert not any("being computed" in str(c.value) for c in at.caption)
    assert "rank_ub" in at.multiselect(key="lb_columns").value


def test_the_first_element_of_a_server_does_not_probe_for_a_prompt(shipped_db, monkeypatch):
    """Streamlit's one-time "use streamlit run" check (``env_util.is_repl``: an ``inspect.stack()`` over every
    frame, 0.2-0.4 s) is not run by the app's first page: app.py marks it given when served. The flag it
    reads is the one app.py sets (a renamed flag in a new Streamlit would bring the probe back: this
    fails)."""
    from streamlit import delta_generator, env_util

    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 10**12)  # no bootstrap thread in this test
    monkeypatch.setattr(delta_generator, "_use_warning_has_been_displayed", False)  # as in a new process
    probes: list[bool] = []
    real_is_repl = env_util.is_repl

    def is_repl_seen() -> bool:
        probes.append(True)
        return real_is_repl()

    monkeypatch.setattr(env_util, "is_repl", is_repl_seen)
    at = new_app(shipped_db, monkeypatch)
    at.run()
    assert_clean(at)
    assert at.title[0].value == "Leaderboard"
    assert probes == []
    assert delta_generator._use_warning_has_been_displayed is True


def test_a_section_that_stops_the_page_still_starts_the_bootstrap(shipped_db, tmp_path, monkeypatch):
    """A later section that stops the page on a user mistake (style control on a battle log without answers:
    no style counts, or_stop) while the intervals are pending: the bootstrap job is started all the same
    and the note under the table is there, so the intervals come (lbfirst: they said "computing…" for
    ever)."""
    import random
    import shutil

    from app_pages import _lbopen_cache
    from engine.ingest.importer import import_files
    from engine.views import leaderboard_first

    rng = random.Random(7)
    models = [f"m{i}" for i in range(6)]
    lines = ["prompt_id,model_a,model_b,winner,judge"]
    for b in range(300):
        a, c = rng.sample(models, 2)
        lines.append(f"b{b},{a},{c},{rng.choice(['A', 'B', 'tie'])},h")
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    with Store(db) as store:
        import_files(store, [tmp_path / "log.csv"], "log")
    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    _lbopen_cache._jobs.clear()
    at = new_app(db, monkeypatch, query={"dataset": "log"})
    assert any("being computed" in str(c.value) for c in at.caption)  # pending, the note under the table
    _lbopen_cache._jobs.clear()  # as if this run's job had not been asked for: the stopped run must ask
    at.toggle(key="lb_style").set_value(True).run()
    assert [e.message for e in at.exception] == []
    assert at.error, "style control on a log without answers should stop the page with its sentence"
    assert len(_lbopen_cache._jobs().jobs) == 1, "the stopped page never started its bootstrap"
    assert any("Computing the 95 % bootstrap intervals" in str(c.value) for c in at.caption)
    wait_for_bootstrap()
    at.run()
    assert not any("being computed" in str(c.value) for c in at.caption)
    assert "rank_ub" in at.multiselect(key="lb_columns").value


def test_the_bootstrap_thread_runs_at_a_lower_priority():
    """The bootstrap's worker thread is niced by BOOTSTRAP_NICE against the thread that asked (Linux: each
    thread has its own niceness), so a page opened meanwhile gets the cores first."""
    import os
    import threading

    from app_pages import _lbopen_cache

    if not hasattr(os, "getpriority"):
        pytest.skip("no per-thread priority on this platform")
    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    jobs = _lbopen_cache.BootstrapJobs()
    try:
        seen = jobs.get(("nice-test",), lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        assert _lbopen_cache.BOOTSTRAP_NICE > 0 and here < 19  # else there is nothing lower to run at
        assert seen.result(timeout=30) == min(19, here + _lbopen_cache.BOOTSTRAP_NICE) > here
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == here  # the asker's unchanged
    finally:
        jobs.pool.shutdown(wait=True)


def drawn(at) -> list[str]:
    """Every element under the page's title, in page order, as its type and protobuf text (the blocks around
    them left out: the intervals fragment draws its board inside a container of its own), a download's file
    id left out."""
    out: list[str] = []

    def walk(node) -> None:
        children = getattr(node, "children", None)
        if children is None:
            # a download's file is registered anew by every run under a random id
            text = f"{node.type} {node.proto}"
            out.append(re.sub(r'deferred_file_id: "[0-9a-f]+"', "deferred_file_id", text))
            return
        for child in children.values():
            walk(child)

    walk(at.main)
    return out


def test_the_intervals_fragment_draws_the_board_a_full_run_draws(shipped_db_copy, monkeypatch):
    """Once the bootstrap is done, the intervals fragment draws the finished board itself (no ``st.rerun()``,
    docs/notes/race36-36.md): every element it draws (table with intervals and rank (UB), metrics, captions,
    column picker, chart, downloads) is the one the page's full run draws once the job is done; it draws no
    pending note, and it tells the browser to stop the timer it started (the same fragment id)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext

    from app_pages import _lbopen_cache
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    _lbopen_cache._jobs.clear()
    # a store of its own, no board kept in it yet: pending, the point board, the job started at the page's end
    at = new_app(without_kept_boards(shipped_db_copy), monkeypatch)
    assert any("Computing the 95 % bootstrap intervals" in str(c.value) for c in at.caption)
    wait_for_bootstrap()

    at.run()  # the job is done: the page's full run draws the board with its intervals
    assert_clean(at)
    full = drawn(at)
    assert not any("being computed" in e for e in full)

    # the fragment's run once the job is done: the page's run finds no job and no whole board kept (as when
    # it ran before the job ended) and draws the fragment, whose own look finds the job done
    real_started = _lbopen_cache.started_job
    monkeypatch.setattr(_lbopen_cache, "stored_board_for",
                        lambda key, ranker, bootstrap, seed: None)
    asks: list[int] = []

    def started_after_first_open(*args):
        asks.append(1)
        return None if len(asks) == 1 else real_started(*args)

    sent = []  # (timers started, timers stopped) by fragment id
    real_enqueue = ScriptRunContext.enqueue

    def enqueue_seen(self, msg):
        kind = msg.WhichOneof("type")
        if kind == "auto_rerun":
            sent.append(("start", msg.auto_rerun.fragment_id))
        elif kind == "stop_auto_rerun":
            sent.extend(("stop", f) for f in msg.stop_auto_rerun.fragment_ids)
        return real_enqueue(self, msg)

    monkeypatch.setattr(_lbopen_cache, "started_job", started_after_first_open)
    monkeypatch.setattr(ScriptRunContext, "enqueue", enqueue_seen)
    at.run()
    assert_clean(at)
    assert len(asks) == 2, "the page's run did not draw the intervals fragment"
    by_fragment = drawn(at)
    assert by_fragment == full
    assert [k for k, _ in sent] == ["start", "stop"] and sent[0][1] == sent[1][1] != ""


def test_a_job_that_met_a_busy_store_is_started_again_and_others_are_kept(monkeypatch):
    """The bootstrap job reads the store in its own thread, where a command-line writer may hold it: a job
    that ended on ``StoreBusy`` is started again on the next ask; one that ended otherwise (or is done) is the
    job the next ask gets."""
    from app_pages import _lbopen_cache
    from engine.store.connection import StoreBusy

    jobs = _lbopen_cache.BootstrapJobs()
    try:
        def busy():
            raise StoreBusy("held")

        def broken():
            raise ValueError("no")

        first = jobs.get(("busy",), busy)
        assert isinstance(first.exception(timeout=30), StoreBusy)
        monkeypatch.setattr(_lbopen_cache, "_jobs", lambda: jobs)
        key = ("busy",)
        monkeypatch.setitem(jobs.jobs, ("k", "bt", 1, 0), first)
        assert _lbopen_cache.started_job("k", "bt", 1, 0) is None  # the page computes and asks again
        assert _lbopen_cache.started_job("k", "bt", 2, 0) is None
        assert key in jobs.jobs
        again = jobs.get(("busy",), lambda: "read")
        assert again is not first and again.result(timeout=30) == "read"
        assert jobs.get(("busy",), lambda: "other") is again
        failed = jobs.get(("broken",), broken)
        assert isinstance(failed.exception(timeout=30), ValueError)
        assert jobs.get(("broken",), lambda: "read") is failed
    finally:
        jobs.pool.shutdown(wait=True)


def test_the_bootstrap_job_yields_to_a_pages_run(shipped_db_copy, monkeypatch):
    """The job is background work (``engine.foreground``): while a page's run is on it waits at a checkpoint;
    once the run ends it finishes with the board computed without pauses."""
    import threading

    import streamlit as st
    from test_count_bootstrap_pauses import parked as parked_at_checkpoint

    from app_pages import _lbopen_cache
    from app_pages._lens import B_DEFAULT, SEED, get_store, reference_for_key
    from engine import foreground as fg
    from engine.store.connection import Store
    from engine.store.results_table import delete_results
    from engine.views.appstate import CacheKey
    from engine.views.stored_board import same_board

    with Store(shipped_db_copy) as store:  # no board kept by another test's job: this one computes
        delete_results(store, None)

    monkeypatch.setattr(fg, "MAX_PAUSE", 120.0)
    monkeypatch.setenv("LENS_DB", str(shipped_db_copy))
    st.cache_data.clear()
    st.cache_resource.clear()
    with get_store().session():
        key = CacheKey.of(get_store(), "vicuna80", None, None)
        ref, note = reference_for_key("vicuna80", None, key.version)
        want = _lbopen_cache._board(key, "bt", B_DEFAULT, SEED, _lbopen_cache.votes_for(key, "bt"),
                                    _lbopen_cache.cycle_context_for(key, "bt"), ref, note)
    with fg.foreground():  # a page's run
        job = _lbopen_cache.bootstrap_job(key, "bt", B_DEFAULT, SEED)
        assert parked_at_checkpoint(lambda: [t for t in threading.enumerate()
                                             if t.name.startswith("lens-bootstrap")])
        assert not job.done()
    assert same_board(job.result(timeout=120), want)
