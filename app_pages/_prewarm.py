"""The server's head start: the modules the app's first script run imports, imported while the browser is
still loading Streamlit's frontend.

``streamlit run app.py`` serves app.py's ``st.App`` (Streamlit 1.67 finds it in the script), whose lifespan
hook (``lifespan``) runs once when the server starts. Until then the server had nothing to do between its
start and the first session's script run (the browser fetching and starting the frontend: ~0.8 s), and that
first run paid the imports of pandas, SciPy, Plotly, Streamlit's dataframe serialisation and the engine
(~0.4 s of CPU at 1M x 100, a third of the Leaderboard's first run). The hook starts one daemon thread that
imports them and returns at once: the server answers as soon as it would have. A script run that starts before
the thread is done waits for it (``wait_for_prewarm``, app.py's first statement) instead of importing beside
it: two threads importing the same modules at once could meet in an import cycle and one be handed a module
half made; the wait costs nothing, the run would have done that work itself.

The browser's download of the frontend (62 files) runs on the server's event loop beside the thread, and needs
the interpreter lock at every step: a thread computing in Python keeps it until another has waited the switch
interval for it (5 ms by default), and the download took 3.1-4.4 s instead of 0.4-1.5 s under load
(docs/notes/lb34-34.md). While it imports and reads, the thread lowers the interval to ``SWITCH_S`` (0.5 ms;
``_brisk_switching``), so the event loop gets the lock ten times sooner and the thread keeps working. (Rounds
34-35 had the thread wait instead, before each module while a request was being answered and its reads until
the download was over: when the browser is already open as the server starts, that put the imports and the
reads after the download, 0.6-1.3 s of waiting on the first open's path (docs/notes/lb36-36.md); round 36
switched those waits off and round 37 removed them.)

Then the store: when the browser's first request for a page is the Leaderboard's address (``RequestCount``
keeps it: ``/``, ``/ranking`` or ``/leaderboard``, with its ``?dataset=…&judge=…`` query), the thread reads
what that page's first run reads from the store for the choice the address opens on (the board an earlier
server kept in the store, a few ms; else the votes, the graphs that can hold a triad, the point board;
``app_pages._lbopen_cache.prewarm_first_open``) into the caches the run reads, while the browser still loads
the frontend (~0.8 s). Nothing else is read: a first page elsewhere gets nothing of it (its own first open is
not slowed), and nothing is read at the server's start, before anyone asks. Every value is cached under the
dataset's version as read here, and a script run reads the version itself and looks its values up under that:
a dataset changed in between is computed afresh, never shown stale. The thread then keeps its store session
open until the first script run has opened its own (``HANDOVER_S`` at most), so that run does not connect to
the store file again.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

FIRST_RUN_MODULES = (
    # app.py's and the Leaderboard's own imports (pandas, DuckDB, NumPy and the store come with _lens)
    "app_pages._lens",
    "app_pages._charts_last",
    "app_pages._lbopen_cache",
    "app_pages._length_control",
    "engine.errors",
    "engine.store.connection",
    "engine.store.schema",
    "engine.views.baseline_view",
    "engine.views.exports",
    "engine.views.leaderboard_view",
    "engine.views.panel_view",
    "engine.views.viz",
    "app_pages._ci_figure",
    # what the Leaderboard's first board imports inside its calls
    "engine.rankers",
    "engine.views.leaderboard_first",
    "engine.views.style_view",
    "engine.ranking.count_board",
    "engine.rankers.counts",
    "engine.ranking.bootstrap",
    "engine.ranking.count_bootstrap",
    "engine.ranking.vote_query",
    "engine.ranking.board",
    "engine.ranking.leaderboard",
    "engine.ranking.panel_board",
    "engine.ranking.reference",
    "engine.ranking.distances",
    "engine.ranking.name_match",
    "engine.graphs.truncation",
    "engine.graphs.cycles",
    "engine.graphs.buckets",
    "engine.graphs.distinct",
    "engine.store.summaries",
    "engine.store.pair_counts",
    "engine.store.model_maps",
    "engine.store.attached",
    "engine.store.writes",
    "engine.store.results_table",
    "engine.experiments.protocol_inputs",
    "engine.experiments.results_cache",
    "engine.views.stored_board",
    "engine.views.import_board",
    "engine.ingest.limits",
    "engine.ingest.synthetic",
    "scipy.sparse",
    "plotly.graph_objects",
    "plotly.io",
    "plotly.tools",
    # Streamlit's own lazy imports on a first run: magic, and a data frame's way to the browser
    "streamlit.runtime.scriptrunner.magic_funcs",
    "streamlit.dataframe_util",
    "narwhals.stable.v1",
    "pyarrow",
    "pyarrow.pandas_compat",
    "pyarrow.parquet",  # a kept board's read (engine.views.stored_board), and its frame's dtypes:
    "pandas.core.arrays.arrow._arrow_utils",
    "PIL.Image",
    "PIL.ImageFile",
    "orjson",
)
"""Imported by ``prewarm``, in this order: every module of the project, pandas, SciPy, Plotly, PyArrow and
Streamlit that the app's first run on the Leaderboard imports (tests/app/test_app_prewarm.py compares this
list with a real first run)."""

_LOG = logging.getLogger(__name__)


SWITCH_S = 0.0005
"""The interpreter's switch interval while the prewarm thread imports and reads (Python's default: 5 ms):
how long the server's event loop may wait for the interpreter lock when it wakes up to answer the browser
while the thread computes (``_brisk_switching``)."""


class RequestCount:
    """ASGI middleware: notes the browser's first HTTP request for a page (``FirstPage.note``), then passes
    every request and websocket on unchanged. (Its name is from rounds 34-36, when it also counted the
    requests being answered for the prewarm's waits, removed in round 37.)"""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and FirstPage.request is None:
            FirstPage.note(scope)
        await self.app(scope, receive, send)


LEADERBOARD_PATHS = ("", "ranking", "leaderboard")
"""The Leaderboard's addresses (app.py: its page's url path and the aliases that send on to it)."""

NOT_PAGES = ("_stcore/", "static/", "component/", "media/", "app/static/", "auth/", "oauth2callback")
"""Address prefixes (after the base path) of the server's own routes: health, the frontend's files,
components, media, login. Anything else the browser asks for is a page (the frontend is served for it)."""


class FirstPage:
    """The browser's first request for a page of this server (``request``: its path less the server's base
    path, and its query's first values), noted by ``RequestCount``; ``asked`` is set with it."""

    request: tuple[str, dict[str, str]] | None = None
    asked = threading.Event()

    @classmethod
    def note(cls, scope: dict) -> None:
        """Keep ``scope``'s path and query when it is the first request for a page (a GET that is none of the
        server's own routes, nor a file)."""
        from urllib.parse import parse_qs

        from streamlit import config

        if scope.get("method") != "GET":
            return
        base = (config.get_option("server.baseUrlPath") or "").strip("/")
        path = str(scope.get("path", "")).strip("/")
        if base:
            if path != base and not path.startswith(base + "/"):
                return
            path = path[len(base):].strip("/")
        if path.startswith(NOT_PAGES) or "." in path.rsplit("/", 1)[-1]:
            return
        raw = scope.get("query_string", b"").decode("latin-1")
        query = {name: values[0] for name, values in parse_qs(raw).items() if values}
        cls.request = (path, query)
        cls.asked.set()


def prewarm(modules: tuple[str, ...] = FIRST_RUN_MODULES) -> None:
    """Import ``modules`` with the garbage collector off and what they built frozen after
    (``engine.heap.loading_without_collection``: the imports' ~250,000 long-lived objects are not walked
    while they are made, and the first open's store reads do not set off full collections over them; the
    first script run still freezes once more, ``app_pages._lens.freeze_startup_heap``), then
    ``rehearse_chart``, all with the switch interval lowered (``_brisk_switching``). A module that fails to
    import is logged and skipped (the page's own import of it raises again, where the user sees it); so is a
    failed rehearsal. (engine.heap is imported here: importing app.py stays light.)"""
    from engine.heap import loading_without_collection

    with _brisk_switching():
        with loading_without_collection():
            _import_modules(modules)
        _rehearse()


@contextlib.contextmanager
def _brisk_switching():
    """The interpreter's switch interval lowered to ``SWITCH_S`` meanwhile (the process's own one put back
    after): the thread computing in Python holds the interpreter lock until another thread has waited that
    long for it, so the server's event loop answering a request (several waits for the lock: the request,
    the file's read in a worker thread, the answer) waits 0.5 ms instead of 5 ms each time."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(min(old, SWITCH_S))
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _import_modules(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the script run's own import reports it
            _LOG.warning("prewarm: importing %s failed", name, exc_info=True)


def _rehearse() -> None:
    try:
        rehearse_chart()
    except Exception:  # noqa: BLE001 - the page's own chart reports it
        _LOG.warning("prewarm: the chart rehearsal failed", exc_info=True)


def rehearse_chart() -> str:
    """The Leaderboard's chart (``app_pages._ci_figure``) of two made-up models, turned into the JSON
    ``st.plotly_chart`` sends: Plotly loads a figure's property validators and submodules (and pandas'
    interchange through narwhals) on first use, ~0.1 s that the first page's own chart then skips. Made up
    and thrown away: nothing of it is kept or shown. Returns the JSON."""
    import pandas as pd
    import plotly.io
    import plotly.tools

    from app_pages._ci_figure import ci_figure

    plot = pd.DataFrame({"model": ["a", "b"], "score": [1.0, 0.0], "err_plus": [0.1, 0.2],
                         "err_minus": [0.1, 0.2]})
    fig = ci_figure(plot, "score", "title")
    figure = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    return plotly.io.to_json(figure, validate=False)


_THREAD: threading.Thread | None = None
"""The thread ``start_prewarm`` started in this process, if any."""

_IMPORTED = threading.Event()
"""Set when that thread's imports are done (``wait_for_prewarm`` waits for it)."""

WAIT_S = 120.0
"""The longest a script run waits for the prewarm thread (it imports; only a stuck file system holds it)."""

HANDOVER_S = 5.0
"""The longest the thread keeps its store session (the file) open after reading, waiting for the first script
run to open its own (it then goes on the same connection)."""


def start_prewarm() -> threading.Thread:
    """``_run`` (``prewarm``'s imports, then ``prewarm_store``) in a daemon thread of its own, started now
    (and remembered for ``wait_for_prewarm``)."""
    global _THREAD, _IMPORTED
    _IMPORTED = threading.Event()
    thread = threading.Thread(target=_run, args=(_IMPORTED,), name="lens-prewarm", daemon=True)
    _THREAD = thread
    thread.start()
    return thread


def _run(imported: threading.Event) -> None:
    try:
        prewarm()
    finally:
        imported.set()
    prewarm_store()


def wait_for_prewarm() -> None:
    """Return when this process's prewarm thread has done its imports (at once where none was started:
    AppTest, a later run). Its store reads are not waited for here: a run that needs a value the thread is
    still computing waits for that value alone (Streamlit's cache computes a key once)."""
    thread = _THREAD
    if thread is not None and thread is not threading.current_thread():
        _IMPORTED.wait(WAIT_S)


def prewarm_store(wait_s: float | None = None) -> tuple | None:
    """Wait (``wait_s`` at most; None: as long as it takes) for the browser's first request for a page; when
    it is the Leaderboard's, read what its first run reads from the store for the choice its query opens on
    (``app_pages._lbopen_cache.prewarm_first_open``), then hold the store session until a script run has
    opened its own (``HANDOVER_S`` at most). Returns what was warmed ((CacheKey, ranker)), or None. A failure
    (the store busy past its wait, a damaged file, a dataset gone) is logged and left to the page, which
    reads again and says so."""
    if not FirstPage.asked.wait(wait_s) or FirstPage.request is None:
        return None
    path, query = FirstPage.request
    if path not in LEADERBOARD_PATHS:
        return None
    from app_pages._lbopen_cache import prewarm_first_open, quiet_worker_threads
    from app_pages._lens import get_store

    if not _store_free():
        return None
    quiet_worker_threads()  # its cached calls run with no script run: Streamlit's warning for that dropped
    try:
        with contextlib.ExitStack() as held:
            with _brisk_switching():
                store = get_store()
                held.enter_context(store.session())
                warmed = prewarm_first_open(query)
            deadline = time.monotonic() + HANDOVER_S
            while store.session_count() < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        return warmed
    except Exception:  # noqa: BLE001 - the page's own run reads again and reports it
        _LOG.warning("prewarm: reading the Leaderboard's first board failed", exc_info=True)
        return None


def _store_free() -> bool:
    """Whether no other process holds the store's lock now (a judge run, an import). If one does, the
    prewarm reads nothing: its open would wait out the lock (``LENS_LOCK_WAIT``) and the page's own open would
    then wait as long again before it says the store is busy."""
    from engine.store import file_lock
    from engine.store.connection import resolve_db_path

    path = resolve_db_path()
    try:
        file_lock.acquire(path, exclusive=True, wait_s=0)
    except file_lock.LockBusy:
        _LOG.info("prewarm: the store is held by another process; nothing read ahead")
        return False
    except OSError:  # no lock file can be made there: the page's own open says so
        return False
    file_lock.release(path)
    return True


def open_browser() -> None:
    """Open the app in the user's browser unless the server is headless: what ``streamlit run`` does once a
    plain script's server is up and does not do for an ``st.App`` (Streamlit 1.67,
    ``bootstrap._on_server_start``), with the same choice of address."""
    from streamlit import cli_util, config
    from streamlit.web.server import server_address_is_unix_socket, server_util

    if config.get_option("server.headless"):
        return
    if config.is_manually_set("browser.serverAddress"):
        address = config.get_option("browser.serverAddress")
    elif config.is_manually_set("server.address"):
        if server_address_is_unix_socket():
            return
        address = server_util.get_display_address(config.get_option("server.address"))
    else:
        address = "localhost"
    cli_util.open_browser(server_util.get_url(address))


@contextlib.asynccontextmanager
async def lifespan(_app: Any) -> AsyncIterator[None]:
    """app.py's ``st.App`` lifespan: the imports start in the background at server start (the server does
    not wait for them), and the browser opens as it did before app.py held an ``st.App``."""
    import asyncio

    start_prewarm()
    asyncio.get_running_loop().call_soon(open_browser)
    yield
