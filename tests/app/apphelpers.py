"""Shared by the AppTest tests: the app on a temp store, caches cleared, independent recomputations.

The app reads its store from $LENS_DB; every test points it at a temp on-disk DuckDB file. The
helpers here recompute the numbers the pages show from the raw verdict rows with plain pandas and
networkx (not the engine), so a page test fails when a page shows the wrong thing.
"""

from __future__ import annotations

import ast
import itertools
import os
import re
import shutil
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest
from conftest import REPO


def scan_installed_components_once() -> None:
    """Make Streamlit's scan of the installed packages for v2 component manifests run once per test
    process instead of once per AppTest.

    Each new AppTest builds its own component registry on its first run, and filling it reads the
    metadata of every installed distribution (about 180 here): 0.4 s of CPU and 1.2 s of wall per
    AppTest at load 4, about a third of a short app test. The installed packages cannot change while
    the tests run, so the scan's answer is kept and handed out again (a new list each time); each
    AppTest still gets a registry of its own, filled from it. A Streamlit server does the same: it
    scans once, when it starts, for every session it serves."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "lens_scanned_once", False):
        return
    found: list = []
    done = False

    def scanned_once(*args, **kwargs) -> list:
        nonlocal found, done
        if not done:
            found, done = scan(*args, **kwargs), True
        return list(found)

    scanned_once.lens_scanned_once = True  # type: ignore[attr-defined]
    manifest_scanner.scan_component_manifests = scanned_once


def compile_scripts_once() -> None:
    """Make each page script's bytecode compile once per test process instead of once per script run.

    AppTest gives every ``run()`` a new, empty ScriptCache (streamlit/testing/v1: one for its pages
    manager, one for its script runner), so each run reads app.py and the page it opens again, adds
    Streamlit's "magic" to their syntax trees and compiles them: 10-40 ms of CPU a run, about a fifth
    of a short run's script thread. A Streamlit server keeps one ScriptCache for its life and compiles
    a script once. Here the compiled code is kept per (path, size, modification time, magic on or off),
    so a script edited while the tests run is compiled again; code objects are immutable, so sharing
    them between runs changes nothing a run does."""
    from streamlit import config
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    get = ScriptCache.get_bytecode
    if getattr(get, "lens_compiled_once", False):
        return
    compiled: dict[tuple, object] = {}

    def get_bytecode_once(self, script_path: str):
        stat = os.stat(script_path)
        key = (os.path.abspath(script_path), stat.st_size, stat.st_mtime_ns,
               bool(config.get_option("runner.magicEnabled")))
        if key not in compiled:
            compiled[key] = get(self, script_path)
        return compiled[key]

    get_bytecode_once.lens_compiled_once = True  # type: ignore[attr-defined]
    ScriptCache.get_bytecode = get_bytecode_once  # type: ignore[method-assign]


def wait_for_runs_without_polling() -> None:
    """Make AppTest's wait for a script run's end a wait on the run's SHUTDOWN event.

    AppTest's test thread waits for a run by waking every millisecond and scanning every event the
    run has sent so far (streamlit/testing/v1/local_script_runner.py ``require_widgets_deltas``): a
    cost that grows with the run's length, and each wake takes the interpreter lock from the script
    thread doing the run. Here the test thread sleeps until the runner's own ``on_event`` signal says
    SHUTDOWN, with the same timeout and the same error (the run stopped first) when it does not come."""
    import threading

    from streamlit.runtime.scriptrunner import ScriptRunnerEvent
    from streamlit.testing.v1 import local_script_runner

    if getattr(local_script_runner.require_widgets_deltas, "lens_waits", False):
        return

    def wait_for_shutdown(runner, timeout: float = 3) -> None:
        ended = threading.Event()

        def on_event(_sender, event=None, **_kwargs) -> None:
            if event == ScriptRunnerEvent.SHUTDOWN:
                ended.set()

        runner.on_event.connect(on_event, weak=False)
        try:
            if runner.script_stopped() or ended.wait(timeout):
                return
        finally:
            runner.on_event.disconnect(on_event)
        runner.request_stop()  # as AppTest does: stop the run before the error, so it cannot hang
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")

    wait_for_shutdown.lens_waits = True  # type: ignore[attr-defined]
    local_script_runner.require_widgets_deltas = wait_for_shutdown


def page_addresses() -> dict[str, str]:
    """app.py's page files -> their url paths (``"app_pages/6_data.py"`` -> ``"datasets"``), read from
    the ``st.Page("file", url_path=...)`` calls of app.py itself, so the two cannot drift apart."""
    tree = ast.parse((REPO / "app.py").read_text(encoding="utf-8"))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page" and node.args:
            first = node.args[0]
            url = [k.value for k in node.keywords if k.arg == "url_path"]
            if isinstance(first, ast.Constant) and url and isinstance(url[0], ast.Constant):
                found[first.value] = url[0].value
    return found


def new_app(db: Path, monkeypatch: pytest.MonkeyPatch, page: str | None = None,
            query: dict[str, str] | None = None):
    """A fresh AppTest of app.py on store ``db``, with every Streamlit cache emptied, run once.

    ``page`` (a file such as ``"app_pages/6_data.py"``) makes that first run open the page at its own
    address, as a new browser tab on ``/datasets`` does, instead of opening the Leaderboard and then
    switching: a test about another page does not pay the Leaderboard's first open (0.7 s of CPU on
    the shipped store, 4 s of wall at load 18). AppTest can only switch pages by file after a first
    run, so the run is asked for by the page's address (Streamlit names a ``st.Page`` by the hash of
    its url path); the page that ran is checked against the file asked for. ``query`` is the address's
    query (``{"dataset": "k", "judge": "gpt-4"}``), which sets the sidebar's choices when the session
    starts, as a shared link does: one run instead of a run per sidebar choice."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest
    from streamlit.util import calc_hash

    scan_installed_components_once()
    compile_scripts_once()
    wait_for_runs_without_polling()
    monkeypatch.setenv("LENS_DB", str(db))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    at.query_params.update(query or {})
    if page is not None and page_addresses()[page]:  # the Leaderboard is what a bare run opens
        at._page_hash = calc_hash(page_addresses()[page])
    at.run()
    if page is not None:
        ran = at._registered_pages.get(at._finished_page_script_hash, {}).get("script_path")
        assert ran is not None and Path(ran).resolve() == (REPO / page).resolve(), (page, ran)
    return at


@pytest.fixture
def app(shipped_db: Path, monkeypatch: pytest.MonkeyPatch):
    """The app on the session's shipped store (tests that only read)."""
    return new_app(shipped_db, monkeypatch)


@pytest.fixture
def own_app(shipped_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The app on a private copy of the shipped store (tests that write)."""
    copy = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, copy)
    return new_app(copy, monkeypatch)


@pytest.fixture
def app_at(shipped_db: Path, monkeypatch: pytest.MonkeyPatch):
    """``app_at(page, **query)``: the app opened at ``page`` on the session's shipped store (tests of
    one page that only read; new_app's ``page`` and ``query``)."""
    return lambda page, **query: new_app(shipped_db, monkeypatch, page, query)


@pytest.fixture
def own_app_at(shipped_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``own_app_at(page, **query)``: the app opened at ``page`` on a private copy of the shipped store
    (tests of one page that write)."""

    def open_at(page: str, **query: str):
        copy = tmp_path / "lens.duckdb"
        shutil.copyfile(shipped_db, copy)
        return new_app(copy, monkeypatch, page, query)

    return open_at


def judge_of(at) -> str | None:
    """The sidebar's judge as a verdict filter: None for "all judges" (the app's first view)."""
    judge = at.session_state["judge"]
    return None if judge == "(all)" else judge


def assert_clean(at) -> None:
    """No exception and no error box on the page."""
    assert [e.message for e in at.exception] == []
    assert [e.value for e in at.error] == []


def unescape_md(md: str) -> str:
    """Markdown written by engine.views.viz.escape_md back to its plain text (drop each escaping
    backslash)."""
    return re.sub(r"\\(.)", r"\1", md)


def combined_outcomes(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per graph and unordered pair, the combined outcome by plurality (equal counts → tie).

    Columns: judge, prompt_id, variant, turn, lo, hi, outcome in {'lo', 'hi', 'tie'}.
    Written with plain pandas, independently of engine.graphs.stack.
    """
    v = verdicts[verdicts["winner"] != "invalid"].copy()
    v["lo"] = v[["model_a", "model_b"]].min(axis=1)
    v["hi"] = v[["model_a", "model_b"]].max(axis=1)
    winner_name = v["model_a"].where(v["winner"] == "A", v["model_b"].where(v["winner"] == "B", "~tie"))
    v["vote"] = winner_name.where(
        winner_name == "~tie", winner_name.eq(v["lo"]).map({True: "lo", False: "hi"})
    )
    v.loc[v["vote"] == "~tie", "vote"] = "tie"
    counts = (
        v.groupby(["judge", "prompt_id", "variant", "turn", "lo", "hi", "vote"]).size().unstack(fill_value=0)
    )
    for c in ("lo", "hi", "tie"):
        if c not in counts:
            counts[c] = 0
    top = counts[["lo", "hi", "tie"]].max(axis=1)
    n_top = (counts[["lo", "hi", "tie"]].to_numpy() == top.to_numpy()[:, None]).sum(axis=1)
    outcome = counts[["lo", "hi", "tie"]].idxmax(axis=1).where(n_top == 1, "tie")
    return outcome.rename("outcome").reset_index()


def graph_digraph(pairs: pd.DataFrame) -> nx.DiGraph:
    """networkx DiGraph of one graph's combined outcomes (a tie is two reciprocal edges)."""
    g = nx.DiGraph()
    for lo, hi, out in pairs[["lo", "hi", "outcome"]].itertuples(index=False):
        if out in ("lo", "tie"):
            g.add_edge(lo, hi)
        if out in ("hi", "tie"):
            g.add_edge(hi, lo)
    return g


def bad_triads_bruteforce(g: nx.DiGraph) -> set[frozenset[str]]:
    """Triples carrying a directed 3-cycle that is not made of ties only (enumerated, no algebra)."""
    bad = set()
    for a, b, c in itertools.combinations(sorted(g.nodes), 3):
        for x, y, z in ((a, b, c), (a, c, b)):
            if g.has_edge(x, y) and g.has_edge(y, z) and g.has_edge(z, x):
                all_tie = g.has_edge(y, x) and g.has_edge(z, y) and g.has_edge(x, z)
                if not all_tie:
                    bad.add(frozenset((a, b, c)))
    return bad


def style_board_page(app, judge: str = "human"):
    """The Leaderboard page for ``judge`` with the style-control toggle on (checked clean at each step)."""
    app.selectbox(key="judge").set_value(judge).run()
    at = app.switch_page("app_pages/1_leaderboard.py").run()
    assert_clean(at)
    at.toggle(key="lb_style").set_value(True).run()
    assert_clean(at)
    return at


def old_pick_labels(table: pd.DataFrame, mu: float) -> list[str]:
    """The Cycles graph picker's options as the page wrote them before ``graph_pick_labels`` (a format_func
    reading ``table.iloc[i]`` per option): the other path, kept to check the labels against."""
    from engine.views.truncation_view import format_s_mu

    turns_differ = table["turn"].nunique() > 1
    return [f"prompt {table.iloc[i]['prompt_id']} · {table.iloc[i]['variant_label']} · "
            + (f"turn {table.iloc[i]['turn']} · " if turns_differ else "")
            + f"{table.iloc[i]['judge']} · S_μ={format_s_mu(table.iloc[i]['s_mu'], mu)}"
            for i in range(len(table))]
