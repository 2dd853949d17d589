"""app.py's st.App and its lifespan (app_pages/_prewarm.py): ``streamlit run app.py`` serves the st.App,
importing app.py costs the server's start nothing beyond Streamlit, the lifespan returns without waiting for
its imports, and those imports cover what the Leaderboard's first script run imports (each side measured in a
process of its own: this one has imported everything already)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from apphelpers import REPO

HEAVY = ("app_pages", "engine", "pandas", "scipy", "plotly", "pyarrow", "narwhals", "PIL", "orjson", "duckdb",
         "numpy")
"""The modules that cost a first run its imports: the project's, and the libraries it brings."""


def _heavy(names: list[str]) -> set[str]:
    return {n for n in names if n.split(".")[0] in HEAVY}


def _python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter in the repository; its last line of stdout, as JSON."""
    import os

    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO), **env})
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout.strip().splitlines()[-1])


def test_streamlit_run_serves_the_st_app_and_importing_app_py_stays_light() -> None:
    """Streamlit's own discovery finds ``app`` in app.py (so ``streamlit run app.py`` serves it with its
    lifespan and the request counter the prewarm gives way to), and importing app.py as the server does
    imports none of the heavy modules: they are the lifespan thread's, not a delay before the server
    answers."""
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(REPO / "app.py")
    assert found.is_asgi_app and found.import_string == "app:app", found
    out = _python("import json, sys; import streamlit; before = set(sys.modules); import app; "
                  "from app_pages._prewarm import RequestCount, lifespan; "
                  "print(json.dumps({'type': type(app.app).__name__, "
                  "'ours': app.app._user_lifespan is lifespan "
                  "and [m.cls for m in app.app._user_middleware] == [RequestCount], "
                  "'modules': sorted(set(sys.modules) - before)}))")
    assert out["type"] == "App" and out["ours"], out
    assert _heavy(out["modules"]) == {"app_pages", "app_pages._prewarm"}, _heavy(out["modules"])


def test_the_lifespan_does_not_wait_for_its_imports(monkeypatch) -> None:
    """Entering the lifespan starts the import thread and returns while that thread is still importing (held
    here on an event): the server's start does not wait for it."""
    from app_pages import _prewarm

    release, started, done = threading.Event(), threading.Event(), threading.Event()

    def held(modules=_prewarm.FIRST_RUN_MODULES) -> None:
        started.set()
        release.wait(30)
        done.set()

    monkeypatch.setattr(_prewarm, "prewarm", held)
    monkeypatch.setattr(_prewarm, "prewarm_store", lambda: None)  # tests/app/test_app_prewarm_store.py

    async def enter() -> bool:
        async with _prewarm.lifespan(None):
            return started.wait(30) and not done.is_set()

    try:
        assert asyncio.run(enter())
    finally:
        release.set()
    assert done.wait(30)


def test_the_prewarm_imports_what_the_first_run_imports(shipped_db: Path, tmp_path: Path) -> None:
    """The heavy modules the app's first run (the Leaderboard, AppTest, the shipped store) imports, in a fresh
    process after Streamlit and AppTest are loaded, are all imported by ``prewarm`` in another fresh process:
    a first run on a server whose lifespan thread has finished imports none of them itself."""
    import shutil

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    warmed = _python("import json, sys; from app_pages._prewarm import prewarm; prewarm(); "
                     "print(json.dumps({'modules': sorted(sys.modules)}))")
    first_run = _python(
        "import json, sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=120)\n"
        "before = set(sys.modules)\n"
        "at.run()\n"
        "assert not at.exception, at.exception\n"
        "assert at.dataframe, 'the Leaderboard drew no table'\n"
        "print(json.dumps({'modules': sorted(set(sys.modules) - before)}))\n",
        LENS_DB=str(db))
    missing = _heavy(first_run["modules"]) - _heavy(warmed["modules"])
    assert _heavy(first_run["modules"]), "the first run imported nothing heavy: the comparison is empty"
    assert not missing, sorted(missing)


FROZEN_PREWARM = """
import gc, json, sys
from app_pages import _prewarm
states, rehearsed = [], []

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in _prewarm.FIRST_RUN_MODULES:
            states.append(gc.isenabled())
        return None

sys.meta_path.insert(0, Watch())
chart = _prewarm.rehearse_chart
_prewarm.rehearse_chart = lambda: rehearsed.append((gc.isenabled(), gc.get_freeze_count())) or chart()
_prewarm.prewarm()
from app_pages import _lens
with _lens.get_store().session():  # the server's store, made after the freeze and held to the exit
    pass
print(json.dumps({"during": states, "rehearsed": rehearsed, "after": gc.isenabled(),
                  "frozen": gc.get_freeze_count(), "lens_frozen": _lens._HEAP_FROZEN}))
"""


def test_the_prewarm_imports_without_collection_and_freezes_what_they_built(shipped_db: Path,
                                                                           tmp_path: Path) -> None:
    """In a fresh process: every module of ``FIRST_RUN_MODULES`` the prewarm imports (first seen by a finder
    on the meta path) is imported with the garbage collector off, the imports' objects are frozen before the
    chart rehearsal (which runs with the collector back, its figure's garbage collectable) and before the
    thread's store reads (the first script run still freezes once more), and the collector is on again after
    (as the process had it; a process with it off keeps it off: tests/test_heap.py, in process). The app's
    store, opened after and held to the exit, is dropped there without a word (``Store.__del__``: the frozen
    cache holding it outlives the module globals)."""
    import os
    import shutil

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LENS_DB": str(db)}
    got = subprocess.run([sys.executable, "-c", FROZEN_PREWARM], capture_output=True, text=True,
                         cwd=REPO, timeout=300, env=env)
    assert got.returncode == 0, got.stderr[-3000:]
    assert "Exception ignored" not in got.stderr, got.stderr[-3000:]
    out = json.loads(got.stdout.strip().splitlines()[-1])
    assert len(out["during"]) > 10, out["during"]  # the finder saw the imports (none was loaded before)
    assert not any(out["during"]), out["during"]
    # frozen by the prewarm; the first script run's own freeze (``freeze_startup_heap``) is still to come
    assert out["frozen"] > 100_000 and not out["lens_frozen"], out
    [(enabled, frozen)] = out["rehearsed"]
    # frozen before the rehearsal (refcounting frees some of them later, so the count may go down)
    assert enabled and frozen > 100_000, out
    assert out["after"], out


def test_a_script_run_waits_for_the_prewarm_before_its_own_imports(monkeypatch) -> None:
    """``wait_for_prewarm`` returns only once the prewarm thread's imports are done (held here on an event;
    its store reads, stubbed here, are not waited for), and app.py calls it before it imports anything of the
    app: the first run never imports beside the thread."""
    import ast

    from app_pages import _prewarm

    release = threading.Event()
    monkeypatch.setattr(_prewarm, "prewarm", lambda modules=(): release.wait(30))
    monkeypatch.setattr(_prewarm, "prewarm_store", lambda: None)
    _prewarm.start_prewarm()
    waiter = threading.Thread(target=_prewarm.wait_for_prewarm)
    waiter.start()
    waiter.join(0.3)
    held = waiter.is_alive()
    release.set()
    waiter.join(30)
    assert held, "wait_for_prewarm returned while the prewarm thread was still running"
    assert not waiter.is_alive()

    tree = ast.parse((REPO / "app.py").read_text(encoding="utf-8"))
    script = next(node for node in tree.body if isinstance(node, ast.If)
                  and ast.unparse(node.test) == "__name__ == '__main__'")
    calls = [ast.unparse(node) for node in script.body]
    assert calls[:2] == ["from app_pages._prewarm import wait_for_prewarm", "wait_for_prewarm()"], calls


def test_the_lifespan_opens_the_browser_as_streamlit_run_does_for_a_script(monkeypatch) -> None:
    """Served as an st.App, ``streamlit run`` would no longer open the browser; the lifespan does, after
    entering, at the address Streamlit's own start-up picks (this project's config: 127.0.0.1), and not when
    the server is headless. (No desktop browser here: the opener is recorded instead of run.)"""
    from streamlit import cli_util, config

    from app_pages import _prewarm

    opened: list[str] = []
    monkeypatch.setattr(cli_util, "open_browser", opened.append)
    monkeypatch.setattr(_prewarm, "prewarm", lambda modules=(): None)
    monkeypatch.setattr(_prewarm, "prewarm_store", lambda: None)

    async def serve_once() -> None:
        async with _prewarm.lifespan(None):
            await asyncio.sleep(0)

    keys = ("server.headless", "server.address", "server.port")
    options = config.get_config_options()
    saved = {key: (options[key].value, options[key].where_defined) for key in keys}
    try:
        for headless in (True, False):
            config.set_option("server.headless", headless)
            config.set_option("server.address", "127.0.0.1")
            config.set_option("server.port", 8599)
            asyncio.run(serve_once())
    finally:
        for key, (value, where) in saved.items():
            options[key].set_value(value, where)
    assert opened == ["http://127.0.0.1:8599"], opened


def test_the_imports_run_with_the_switch_interval_lowered_and_put_it_back(monkeypatch, tmp_path) -> None:
    """While the prewarm thread imports, the interpreter's switch interval is ``SWITCH_S`` (a module made here
    notes it as it is imported), and once the imports are done it is the process's own again; the thread
    installs no meta path finder of its own (the import machinery is Python's: the finders seen while the
    module is imported are those installed before the thread started)."""
    from app_pages import _prewarm

    monkeypatch.setattr(_prewarm, "rehearse_chart", lambda: "")
    (tmp_path / "lens_switch_probe.py").write_text(
        "import sys\nSEEN = sys.getswitchinterval()\nFINDERS = [type(f).__name__ for f in sys.meta_path]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    own = sys.getswitchinterval()
    finders = [type(f).__name__ for f in sys.meta_path]
    try:
        sys.setswitchinterval(0.004)
        thread = _prewarm.threading.Thread(target=_prewarm.prewarm, args=(("lens_switch_probe",),))
        thread.start()
        thread.join(30)
        after = sys.getswitchinterval()
    finally:
        sys.setswitchinterval(own)
    probe = sys.modules.pop("lens_switch_probe")
    assert probe.SEEN == pytest.approx(_prewarm.SWITCH_S), probe.SEEN
    assert after == pytest.approx(0.004), after
    assert probe.FINDERS == finders, (probe.FINDERS, finders)
