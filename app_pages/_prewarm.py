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

Only imports: no store is opened and nothing is read or computed here, so nothing shown depends on when
this thread ran (a page's results still come from its own run, checked against the store's data version).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
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
    "PIL.Image",
    "PIL.ImageFile",
    "orjson",
)
"""Imported by ``prewarm``, in this order: every module of the project, pandas, SciPy, Plotly, PyArrow and
Streamlit that the app's first run on the Leaderboard imports (tests/app/test_app_prewarm.py compares this
list with a real first run)."""

_LOG = logging.getLogger(__name__)


def prewarm(modules: tuple[str, ...] = FIRST_RUN_MODULES) -> None:
    """Import ``modules``, then ``rehearse_chart``. A module that fails to import is logged and skipped (the
    page's own import of it raises again, where the user sees it); so is a failed rehearsal."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the script run's own import reports it
            _LOG.warning("prewarm: importing %s failed", name, exc_info=True)
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

WAIT_S = 120.0
"""The longest a script run waits for the prewarm thread (it imports; only a stuck file system holds it)."""


def start_prewarm() -> threading.Thread:
    """``prewarm`` in a daemon thread of its own, started now (and remembered for ``wait_for_prewarm``)."""
    global _THREAD
    thread = threading.Thread(target=prewarm, name="lens-prewarm", daemon=True)
    _THREAD = thread
    thread.start()
    return thread


def wait_for_prewarm() -> None:
    """Return when this process's prewarm thread has finished (at once where none was started: AppTest, a
    later run)."""
    thread = _THREAD
    if thread is not None and thread is not threading.current_thread():
        thread.join(WAIT_S)


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
