"""The server's prewarm of the Leaderboard's store reads (app_pages._prewarm.prewarm_store,
app_pages._lbopen_cache.prewarm_first_open): which request starts it, which choice it warms, that the first
run then reads no votes and shows the very page it shows without it, that a dataset replaced after the
prewarm shows its new numbers (never the prewarmed ones), and that the store's connection is handed over to
the first script run. The prewarm is called here as the lifespan thread calls it, in a thread with no session;
the page is a real AppTest run of app.py on the same process's caches."""

from __future__ import annotations

import ast
import random
import shutil
import threading
from pathlib import Path

import pandas as pd
import pytest
from apphelpers import (
    assert_clean,
    compile_scripts_once,
    scan_installed_components_once,
    wait_for_runs_without_polling,
)
from conftest import REPO

from app_pages import _prewarm


def write_log(path: Path, seed: int) -> Path:
    """A CSV of verdicts: prompts of four of six models (graphs that can hold a triad, both orders for some
    pairs) and one-pair battles; ``seed`` draws the winners."""
    rng = random.Random(seed)
    models = [f"m{i}" for i in range(6)]
    lines = ["prompt_id,model_a,model_b,winner,judge"]
    for k in range(8):
        four = rng.sample(models, 4)
        for i in range(4):
            for j in range(i + 1, 4):
                lines.append(f"q{k},{four[i]},{four[j]},{rng.choice(['A', 'A', 'B', 'tie'])},j1")
    for k in range(40):
        a, b = rng.sample(models, 2)
        lines.append(f"b{k},{a},{b},{rng.choice(['A', 'B', 'B', 'tie'])},j1")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def log_db(shipped_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped store with dataset ``log`` (seed 1), the app pointed at it, every cache empty,
    no first request noted yet and no hand-over wait."""
    import streamlit as st

    from engine.ingest.importer import import_files
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    with Store(db) as store:
        import_files(store, [write_log(tmp_path / "v1.csv", 1)], "log")
    monkeypatch.setenv("LENS_DB", str(db))
    monkeypatch.setattr(_prewarm.FirstPage, "request", None)
    monkeypatch.setattr(_prewarm.FirstPage, "asked", threading.Event())
    monkeypatch.setattr(_prewarm, "HANDOVER_S", 0.0)
    st.cache_data.clear()
    st.cache_resource.clear()
    return db


def asked_for(path: str, query: dict[str, str]) -> None:
    """The server noting the browser's first page request (``RequestCount`` calls ``FirstPage.note``)."""
    from urllib.parse import urlencode

    _prewarm.FirstPage.note({"type": "http", "method": "GET", "path": "/" + path,
                             "query_string": urlencode(query).encode()})


def first_run(query: dict[str, str]):
    """An AppTest first run of app.py at ``/?query`` on the caches as they are (not emptied)."""
    from streamlit.testing.v1 import AppTest

    scan_installed_components_once()
    compile_scripts_once()
    wait_for_runs_without_polling()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    at.query_params.update(query)
    at.run()
    assert_clean(at)
    return at


def shown(at) -> dict:
    """What the page shows: its tables, metrics, captions, markdown and warnings (the sidebar's store caption
    left out: it names the file)."""
    return {
        "tables": [d.value.reset_index(drop=True) for d in at.dataframe],
        "metrics": [(m.label, m.value) for m in at.metric],
        "text": [c.value for c in [*at.caption, *at.markdown, *at.warning] if "Store: `" not in c.value],
    }


def assert_same_page(a: dict, b: dict) -> None:
    assert len(a["tables"]) == len(b["tables"]) > 0
    for x, y in zip(a["tables"], b["tables"], strict=True):
        pd.testing.assert_frame_equal(x, y, check_exact=True)
    assert a["metrics"] == b["metrics"] and a["text"] == b["text"]


class Reads:
    """Counts the votes read from the store and the point boards computed (the real functions run; the
    bootstrap job the page starts after its first view is not counted: it is not the first run's)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from engine.ranking import vote_query
        from engine.views import leaderboard_first

        self.votes = self.boards = 0
        self.readers: list[str] = []  # the threads that read votes, by name
        read, board = vote_query.store_vote_rows, leaderboard_first.first_board

        def counted_read(*args, **kwargs):
            self.votes += 1
            self.readers.append(threading.current_thread().name)
            return read(*args, **kwargs)

        def counted_board(*args, **kwargs):
            self.boards += kwargs["bootstrap"] == 0
            return board(*args, **kwargs)

        monkeypatch.setattr(vote_query, "store_vote_rows", counted_read)
        monkeypatch.setattr(leaderboard_first, "first_board", counted_board)


def test_after_the_prewarm_the_first_run_reads_no_votes_and_shows_the_same_page(log_db, monkeypatch) -> None:
    """The deferred path (the point board first, as from 100,000 votes up): a first run after the prewarm
    computes no board and reads no votes, and draws exactly what a first run without it draws."""
    import streamlit as st

    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    reads = Reads(monkeypatch)
    query = {"dataset": "log", "ranker": "davidson"}
    cold = shown(first_run(query))
    assert reads.votes > 0 and reads.boards > 0  # the count can see a read

    st.cache_data.clear()
    st.cache_resource.clear()
    asked_for("", query)
    warmed = _prewarm.prewarm_store(wait_s=0)
    assert warmed is not None and warmed[0].dataset == "log" and warmed[1] == "davidson", warmed
    reads.votes = reads.boards = 0
    warm = shown(first_run(query))
    assert (reads.votes, reads.boards) == (0, 0), "the first run read or computed what the prewarm had"
    assert_same_page(cold, warm)
    assert any("computing" in str(c) for t in warm["tables"] for c in t.to_numpy().ravel())


def test_a_dataset_replaced_after_the_prewarm_shows_its_new_numbers(log_db, tmp_path) -> None:
    """Prewarmed, then ``log`` replaced by other verdicts (an import with replace, as the Data page or the
    command line does), then the page opened: it shows the new data's board (computed here on a fresh store
    handle, through the same view), not the prewarmed one."""
    from app_pages._lens import B_DEFAULT, SEED, board_display, get_store
    from engine.ingest.importer import import_files
    from engine.views.leaderboard_view import board_view

    asked_for("leaderboard", {"dataset": "log"})
    key, ranker = _prewarm.prewarm_store(wait_s=0)
    with get_store().session():
        import_files(get_store(), [write_log(tmp_path / "v2.csv", 2)], "log", replace=True)
    at = first_run({"dataset": "log"})
    table = at.dataframe[0].value.reset_index(drop=True)

    def expected(seed_file: Path) -> pd.DataFrame:
        from engine.graphs.buckets import build_buckets
        from engine.ingest.importer import import_files
        from engine.rankers.votes import votes
        from engine.ranking.vote_query import store_vote_rows
        from engine.store.connection import Store
        from engine.views.appstate import SliderContext, app_leaderboard

        with Store(tmp_path / f"{seed_file.stem}.duckdb") as store:
            import_files(store, [seed_file], "log")
            board = app_leaderboard(SliderContext.of(build_buckets(store.verdicts("log"))), ranker=ranker,
                                    keep_k=None, mu=1.0, bootstrap=B_DEFAULT, seed=SEED,
                                    votes=votes(store_vote_rows(store, "log")))
        view = board_view(board.table, ranker=ranker, n_graphs=int(board.params["n_graphs"]),
                          reference_note=board.reference_note)
        return board_display(view.frame).reset_index(drop=True)

    new, old = expected(tmp_path / "v2.csv"), expected(tmp_path / "v1.csv")
    assert not new[["model", "score"]].equals(old[["model", "score"]])  # the two datasets separate
    pd.testing.assert_frame_equal(table, new, check_exact=True)


def test_only_the_first_page_request_is_noted_and_only_the_leaderboards_is_warmed(log_db,
                                                                                     monkeypatch) -> None:
    """The server's own routes (health, the frontend's files, the websocket) are not page requests; the first
    page request is kept with its query (under a base path too) and later ones are not; a first page other
    than the Leaderboard warms nothing (the store is not even opened)."""
    from streamlit import config

    counted = _prewarm.RequestCount(lambda scope, receive, send: _done())
    import asyncio

    for scope in ({"type": "http", "method": "GET", "path": "/_stcore/health", "query_string": b""},
                  {"type": "http", "method": "GET", "path": "/static/js/index.abc.js", "query_string": b""},
                  {"type": "http", "method": "GET", "path": "/favicon.png", "query_string": b""},
                  {"type": "websocket", "path": "/_stcore/stream", "query_string": b""},
                  {"type": "http", "method": "POST", "path": "/", "query_string": b""}):
        asyncio.run(counted(scope, None, None))
    assert _prewarm.FirstPage.request is None and not _prewarm.FirstPage.asked.is_set()
    asyncio.run(counted({"type": "http", "method": "GET", "path": "/keep-k",
                         "query_string": b"dataset=log&judge=j1&judge=j2"}, None, None))
    asyncio.run(counted({"type": "http", "method": "GET", "path": "/", "query_string": b"dataset=vicuna80"},
                        None, None))
    assert _prewarm.FirstPage.request == ("keep-k", {"dataset": "log", "judge": "j1"})
    opened = []
    monkeypatch.setattr("app_pages._lens.get_store", lambda: opened.append(1))
    assert _prewarm.prewarm_store(wait_s=0) is None and not opened

    monkeypatch.setattr(_prewarm.FirstPage, "request", None)
    saved = config.get_option("server.baseUrlPath")
    try:
        config.set_option("server.baseUrlPath", "/lens/")
        _prewarm.FirstPage.note({"type": "http", "method": "GET", "path": "/other/", "query_string": b""})
        _prewarm.FirstPage.note({"type": "http", "method": "GET", "path": "/lens/static/x",
                                 "query_string": b""})
        assert _prewarm.FirstPage.request is None
        _prewarm.FirstPage.note({"type": "http", "method": "GET", "path": "/lens/ranking",
                                 "query_string": b"ranker=elo"})
    finally:
        config.set_option("server.baseUrlPath", saved)
    assert _prewarm.FirstPage.request == ("ranking", {"ranker": "elo"})


async def _done() -> None:
    return None


def test_the_leaderboards_addresses_are_app_pys() -> None:
    """``LEADERBOARD_PATHS`` is the default page's url path and the aliases app.py sends on to it."""
    tree = ast.parse((REPO / "app.py").read_text(encoding="utf-8"))
    aliases = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                   and getattr(node.targets[0], "id", None) == "PAGE_ALIASES")
    default = [next(k.value.value for k in node.keywords if k.arg == "url_path") for node in ast.walk(tree)
               if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page"
               and any(k.arg == "default" for k in node.keywords)]
    assert default == [""]
    assert set(_prewarm.LEADERBOARD_PATHS) == {""} | {a for a, p in aliases.items() if p == ""}


@pytest.mark.parametrize("query, want", [
    ({}, ("vicuna80", "(all)", "(all)", "bt")),
    ({"dataset": "log", "judge": "j1", "ranker": "elo"}, ("log", "j1", "(all)", "elo")),
    ({"dataset": "nope", "judge": "gpt-4", "category": "writing", "ranker": "x"},
     ("vicuna80", "gpt-4", "writing", "bt")),
    ({"dataset": "vicuna80", "judge": "nobody", "category": "nothing"}, ("vicuna80", "(all)", "(all)", "bt")),
])
def test_the_warmed_choice_is_the_sidebars(log_db, query, want) -> None:
    """``linked_choice`` (what the prewarm warms) is the choice a first session at that address opens on:
    known values kept, unknown ones the sidebar's defaults (vicuna80, all judges, all categories, bt)."""
    from app_pages._lens import get_store, linked_choice

    with get_store().session():
        warmed = linked_choice(query)
    at = first_run(query)
    state = at.session_state
    assert warmed == want == (state["dataset"], state["judge"], state["category"], state["ranker"]), warmed


def test_the_store_connection_is_handed_to_the_first_script_run(log_db, monkeypatch) -> None:
    """After its reads the prewarm keeps its store session (the file open) until another session of the
    process opens, then leaves: that session goes on on the same connection, which closes when it ends."""
    from app_pages import _lbopen_cache
    from app_pages._lens import get_store

    monkeypatch.setattr(_prewarm, "HANDOVER_S", 60.0)
    read = threading.Event()
    warm = _lbopen_cache.prewarm_first_open

    def noted(query):
        got = warm(query)
        read.set()
        return got

    monkeypatch.setattr(_lbopen_cache, "prewarm_first_open", noted)
    asked_for("", {"dataset": "log"})
    thread = threading.Thread(target=_prewarm.prewarm_store, kwargs={"wait_s": 0}, name="lens-prewarm")
    thread.start()
    assert read.wait(60)
    thread.join(0.2)
    held = thread.is_alive() and get_store().is_open
    with get_store().session():
        thread.join(60)
        after_handover = get_store().is_open
    assert held, "the prewarm let go of the store before a script run opened it"
    assert not thread.is_alive() and after_handover
    assert not get_store().is_open


def test_a_store_another_process_holds_is_not_read_ahead(log_db, monkeypatch) -> None:
    """A store whose lock another process holds (a judge run, an import) is not opened by the prewarm: its
    open would wait out the lock, and the page's own open as long again. The store is opened only by the
    page."""
    import subprocess
    import sys

    from app_pages import _lens

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from engine.store import file_lock; "
         f"file_lock.acquire(Path({str(log_db)!r}), exclusive=True, wait_s=10); print('held', flush=True); "
         "sys.stdin.read()"],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        opened = []
        monkeypatch.setenv("LENS_LOCK_WAIT", "1")
        real = _lens.get_store
        monkeypatch.setattr(_lens, "get_store", lambda: opened.append(1) or real())
        asked_for("", {"dataset": "log"})
        assert _prewarm.prewarm_store(wait_s=0) is None
        assert not opened, "the prewarm opened a store another process holds"
    finally:
        holder.communicate("")
    assert _prewarm._store_free()  # once let go


def test_the_reads_run_with_the_switch_interval_lowered_and_put_it_back(log_db, monkeypatch) -> None:
    """While the prewarm reads the store, the interpreter's switch interval is ``SWITCH_S`` (the server's
    event loop waits 0.5 ms, not 5 ms, for the lock the reads hold); it is the process's own again once they
    are done, before the thread waits to hand its session over (it sets the lower of the two: a process that
    runs with a lower one keeps it)."""
    import sys

    from app_pages import _lbopen_cache

    seen: list[float] = []
    real = _lbopen_cache.prewarm_first_open

    def observed(*args, **kwargs):
        seen.append(sys.getswitchinterval())
        return real(*args, **kwargs)

    monkeypatch.setattr(_lbopen_cache, "prewarm_first_open", observed)
    own = sys.getswitchinterval()
    try:
        for interval, during in ((0.004, _prewarm.SWITCH_S), (_prewarm.SWITCH_S / 2, _prewarm.SWITCH_S / 2)):
            sys.setswitchinterval(interval)
            monkeypatch.setattr(_prewarm.FirstPage, "request", None)
            asked_for("", {"dataset": "log"})
            assert _prewarm.prewarm_store(wait_s=0) is not None
            assert seen.pop() == pytest.approx(during)
            assert sys.getswitchinterval() == pytest.approx(interval)
    finally:
        sys.setswitchinterval(own)


# -- the boards kept in the store (engine.views.stored_board): a later server's first open reads them --------

QUERY = {"dataset": "log", "ranker": "davidson"}


def new_server() -> None:
    """As a server started anew: every Streamlit cache and the bootstrap jobs gone (the store file kept)."""
    import streamlit as st

    from app_pages import _lbopen_cache

    st.cache_data.clear()
    st.cache_resource.clear()
    _lbopen_cache._jobs.clear()


def finished(query: dict[str, str]):
    """A new server's first run at ``query``, then (its bootstrap job done) the next run: the AppTest, the
    first run's page and the finished page."""
    from app_pages import _lbopen_cache

    new_server()
    at = first_run(query)
    first = shown(at)
    for job in list(_lbopen_cache._jobs().jobs.values()):
        job.result(timeout=120)
    at.run()
    assert_clean(at)
    return at, first, shown(at)


def kept(db: Path) -> int:
    """How many boards of ``log`` are kept (the shared store this copy came from may hold vicuna80's)."""
    from engine.store.connection import Store
    from engine.views.stored_board import KIND

    with Store(db, read_only=True) as store:
        return int(store.cursor().execute(
            "SELECT count(*) FROM results_cache WHERE kind = ? AND dataset = 'log'", [KIND]).fetchone()[0])


def computed_afresh(db: Path, tmp_path: Path, monkeypatch, query=QUERY) -> tuple[dict, dict]:
    """The pages a server shows on a copy of ``db`` with no board kept in it (the old path: the boards
    computed from the votes): its first run's and the finished one."""
    from engine.store.connection import Store
    from engine.store.results_table import delete_results

    copy = tmp_path / "afresh.duckdb"
    shutil.copyfile(db, copy)
    with Store(copy) as store:
        delete_results(store, None)
    monkeypatch.setenv("LENS_DB", str(copy))
    try:
        _, first, done = finished(query)
    finally:
        monkeypatch.setenv("LENS_DB", str(db))
    return first, done


def test_a_later_servers_first_open_reads_the_kept_boards_and_shows_the_same_page(log_db,
                                                                                  monkeypatch) -> None:
    """The first server computes the boards (the point board, then its intervals in the worker thread, which
    keeps both in the store); a later server's first run, with or without the prewarm, reads no votes and
    computes no board, and draws exactly the finished page the first server drew, at once (no pending
    intervals). With only the point board kept, its first run draws the first server's first page (pending)
    from it, reading no votes; its bootstrap job reads them in its own thread."""
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    assert kept(log_db) == 0
    _, cold_first, cold_done = finished(QUERY)
    assert any("being computed" in t for t in cold_first["text"])
    assert kept(log_db) == 2  # the point board and the board with its intervals

    reads = Reads(monkeypatch)
    new_server()
    later = shown(first_run(QUERY))
    assert (reads.votes, reads.boards) == (0, 0), "a later server's first run read the votes"
    assert_same_page(later, cold_done)

    new_server()
    asked_for("", QUERY)
    assert _prewarm.prewarm_store(wait_s=0) is not None
    assert (reads.votes, reads.boards) == (0, 0), "the prewarm read the votes though the boards are kept"
    assert_same_page(shown(first_run(QUERY)), cold_done)

    from engine.store.connection import Store
    from engine.views.stored_board import KIND

    with Store(log_db) as store:  # only the point board kept: a server stopped before the intervals were in
        store.cursor().execute(
            "DELETE FROM results_cache WHERE kind = ? AND dataset = 'log' AND params NOT LIKE ?",
            [KIND, '%"bootstrap":0,%'])
    assert kept(log_db) == 1
    new_server()
    asked_for("", QUERY)
    assert _prewarm.prewarm_store(wait_s=0) is not None
    assert (reads.votes, reads.boards) == (0, 0), "the prewarm read the votes though the point board is kept"
    at, point_first, point_done = finished(QUERY)
    assert reads.boards == 0 and reads.votes > 0  # the job read the votes, in its own thread
    assert all(name.startswith("lens-bootstrap") for name in reads.readers), reads.readers
    assert_same_page(point_first, cold_first)
    assert_same_page(point_done, cold_done)
    assert kept(log_db) == 2


@pytest.mark.parametrize("writer", ["replace", "delete", "map"])
def test_a_dataset_written_after_its_boards_were_kept_shows_its_new_numbers(log_db, tmp_path, monkeypatch,
                                                                            writer) -> None:
    """Boards kept, then ``log`` written through a writer (replaced by other verdicts, deleted and imported
    again, its model map set), then a new server's page: the pages a server computes from the votes on the
    written store (no board kept), never the kept ones."""
    import pandas as pd

    from app_pages._lens import get_store
    from engine.ingest.importer import delete_dataset, import_files
    from engine.store.model_maps import set_stored_map
    from engine.views import leaderboard_first

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    _, _, before = finished(QUERY)
    assert kept(log_db) == 2
    with get_store().session():
        if writer == "replace":
            import_files(get_store(), [write_log(tmp_path / "v2.csv", 2)], "log", replace=True)
        elif writer == "delete":
            delete_dataset(get_store(), "log")
            import_files(get_store(), [write_log(tmp_path / "v2.csv", 2)], "log")
        else:
            set_stored_map(get_store(), "log", pd.DataFrame({
                "model": ["m0", "m1", "m2"],
                "reference_model": ["grok-3-preview-02-24", "early-grok-3", "chatgpt-4o-latest-20250129"]}))
    _, first, done = finished(QUERY)
    want_first, want_done = computed_afresh(log_db, tmp_path, monkeypatch)
    assert_same_page(first, want_first)
    assert_same_page(done, want_done)
    assert not before["tables"][0].equals(done["tables"][0])  # other verdicts, or reference columns


def test_a_kept_row_that_does_not_read_back_is_computed_afresh(log_db, tmp_path, monkeypatch) -> None:
    """A row under the very key of the choice that is no board of this format (a damaged row; one written by
    another encoding) is not shown: the page computes its boards from the votes, as with nothing kept."""
    from app_pages import _lbopen_cache
    from app_pages._lens import B_DEFAULT, SEED, get_store
    from engine.experiments.results_cache import canonical_params, param_hash
    from engine.store.results_table import write_latest_result
    from engine.views import leaderboard_first
    from engine.views.appstate import CacheKey
    from engine.views.stored_board import KIND

    monkeypatch.setattr(leaderboard_first, "DEFER_MIN_VOTES", 0)
    want_first, want_done = computed_afresh(log_db, tmp_path, monkeypatch)
    new_server()
    with get_store().session():
        key = CacheKey.of(get_store(), "log", None, None)
        for b in (0, B_DEFAULT):
            params = _lbopen_cache.board_key(key, "davidson", b, SEED)
            write_latest_result(get_store(), "log", key.version, KIND, param_hash(params),
                                canonical_params(params), b"PAR1 not a board", None)
    reads = Reads(monkeypatch)
    _, first, done = finished(QUERY)
    assert reads.votes > 0
    assert_same_page(first, want_first)
    assert_same_page(done, want_done)
