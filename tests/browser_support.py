"""What the real-browser tests share: headless Chromium, ``streamlit run app.py`` on a free local port,
and the waits and picks that drive a page (tests/test_browser.py, tests/test_browser_stress.py)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO, require

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = REPO / os.environ.get("LENS_SCREENSHOTS", "tests/_artifacts/screenshots")
"""Where screenshots go: git-ignored by default, docs/screenshots only when asked for."""
SHOTS_ASKED = "LENS_SCREENSHOTS" in os.environ
"""Page screenshots only when asked for (``LENS_SCREENSHOTS=...``): a run without it saves a screenshot
of each page a failing tour left open instead (``failed_<tour>_<k>.png`` in SHOTS), for the person
reading the failure. The waits before a screenshot (every chart, table and graph drawn) run either way:
they are checks of their own."""
PAGES = {  # url path -> (screenshot name, page title)
    "": ("leaderboard", "Leaderboard"),
    "keep-k": ("truncation", "Truncation"),
    "cycle-map": ("cycles", "Cycles"),
    "prompt-inspector": ("inspector", "Prompt inspector"),
    "head-to-head": ("head_to_head", "Head-to-head"),
    "judge-diagnostics": ("judges", "Judges"),
    "datasets": ("data", "Data"),
    "theory-lab": ("theory_lab", "Theory lab"),
    "which-calls-next": ("active", "Active judging"),
}
XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_IMG = "<img src=x onerror=window.__xss=1>"
MARKUP = "it's :material/home: $x$ **b** [l](javascript:window.__xss=1)"
"""Text that Markdown or Streamlit would turn into an icon, a formula, bold text and a link."""
SHOT_HEIGHT = {"inspector": 2000, "judges": 1500, "data": 1100}
CHROME_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def xss_verdicts(path: Path) -> Path:
    """A small round robin whose every user string carries an HTML/script payload."""
    models = [f"m1 {XSS_SCRIPT}", f"m2 {XSS_IMG}", "m3's :material/home:", "m4"]
    lines = ["prompt_id,model_a,model_b,winner,category,question,explanation"]
    outcomes = {(0, 1): "A", (1, 2): "A", (0, 2): "B", (0, 3): "A", (1, 3): "tie", (2, 3): "A"}
    for p in ("p1", "p2", "p3"):
        for (i, j), w in outcomes.items():
            q = f"Question {p} {XSS_SCRIPT} {MARKUP}"
            e = f"Because {XSS_IMG} said so; {MARKUP}"
            lines.append(f'{p},"{models[i]}","{models[j]}",{w},"cat {XSS_IMG}","{q}","{e}"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


STACKS_SIGNAL = signal.SIGUSR1
"""The signal on which a test server writes every thread's Python stack to its stacks file (faulthandler)."""

SERVE_WITH_STACKS = (
    "import faulthandler, runpy, signal, sys\n"
    "STACKS = open(sys.argv.pop(1), 'w')\n"  # kept open (a global) for as long as the server runs
    f"faulthandler.register(signal.Signals({int(STACKS_SIGNAL)}), file=STACKS, all_threads=True)\n"
    "sys.argv[0] = 'streamlit'\n"
    "runpy.run_module('streamlit', run_name='__main__', alter_sys=True)\n"
)
"""``python -c`` code run as ``python -m streamlit ...`` (its argv after the stacks file's path), with
``faulthandler`` writing every thread's stack to that file on ``STACKS_SIGNAL``: a wait for the page that
times out says where the server's threads were (``Launched.stacks``), not only that the page still ran."""

STACKS_MAX_CHARS = 30_000
"""The most of a stack dump an assertion message quotes (the whole dump is in the server's stacks file)."""


class Launched:
    """A ``streamlit run app.py`` process just started: its base URL, a wait for it to answer, and its
    threads' stacks on demand (``stacks``)."""

    def __init__(self, proc: subprocess.Popen, url: str, log, stacks_path: Path | None = None) -> None:
        self.proc, self.url, self._log = proc, url, log
        self.stacks_path = stacks_path

    def wait_up(self, timeout_s: float = 45) -> str:
        """Wait until the server answers its health check; returns its base URL (a failure quotes its log)."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return self.url
            except OSError:
                time.sleep(0.3)
        self.proc.kill()
        self._log.seek(0)
        log = self._log.read().decode(errors="replace")
        raise AssertionError("streamlit did not come up: " + log[-2000:])

    def stacks(self, settle_s: float = 5.0) -> str:
        """Every thread's Python stack in the server now (faulthandler's dump on ``STACKS_SIGNAL``,
        innermost call first), or why there is none. For a failure message: never raises."""
        if self.stacks_path is None:
            return "(no stacks: the server was not started with SERVE_WITH_STACKS)"
        if self.proc.poll() is not None:
            return f"(no stacks: the server has exited with {self.proc.returncode})"
        try:
            start = self.stacks_path.stat().st_size
            os.kill(self.proc.pid, STACKS_SIGNAL)
            deadline, size, text = time.time() + settle_s, -1, ""
            while time.time() < deadline:  # the dump is written in one go, from the signal handler
                time.sleep(0.1)
                now = self.stacks_path.stat().st_size
                if now > start and now == size:
                    break
                size = now
            with open(self.stacks_path, encoding="utf-8", errors="replace") as f:
                f.seek(start)
                text = f.read()
        except OSError as exc:
            return f"(no stacks: {exc})"
        if not text:
            return f"(no stacks: the server wrote none within {settle_s:g} s)"
        if len(text) > STACKS_MAX_CHARS:
            text = text[:STACKS_MAX_CHARS] + f"\n... (cut; the whole dump: {self.stacks_path})"
        return text


SERVERS: dict[str, Launched] = {}
"""The test servers running, by base URL: a failed wait finds the server of the page it waited on."""


def server_of(url: str) -> Launched | None:
    """The running test server whose base URL ``url`` starts with (a page's address), if any."""
    for base, launched in list(SERVERS.items()):
        if url == base or url.startswith(base + "/"):
            return launched
    return None


def server_stacks(url: str) -> str:
    """The Python stacks of every thread of the test server serving ``url`` (``Launched.stacks``)."""
    launched = server_of(url)
    return "(no stacks: no test server serves this address)" if launched is None else launched.stacks()


def _serve(db: Path, log_path: Path, script: str | Path = "app.py", **env_extra: str) -> Iterator[Launched]:
    """``streamlit run app.py`` (or ``script``) on ``db`` and a free port, started so that it writes its
    threads' stacks on demand (``SERVE_WITH_STACKS``, into a file beside ``log_path``); yields it at once
    (the tours wait for it to answer, several servers starting side by side), stops the server at the end."""
    port = _free_port()
    env = {**os.environ, "LENS_DB": str(db), "PYTHONPATH": str(REPO), **env_extra}
    log = open(log_path, "w+b")  # noqa: SIM115 - a file, not a pipe: a full pipe would stall the server
    stacks_path = log_path.with_name(log_path.stem + ".stacks.txt")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE_WITH_STACKS, str(stacks_path), "run", str(script),
         "--server.port", str(port),
         "--server.headless", "true", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    launched = Launched(proc, f"http://127.0.0.1:{port}", log, stacks_path)
    SERVERS[launched.url] = launched
    try:
        yield launched
    finally:
        SERVERS.pop(launched.url, None)
        proc.kill()  # a test server has nothing to save: its graceful shutdown took seconds per server
        proc.wait(timeout=60)
        log.close()


def _requirements() -> None:
    require(Path(CHROMIUM).exists(), "Debian chromium is installed (.ci/install)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        require(False, "the playwright Python package is installed (requirements-dev.txt)")


RUN_TRACKER = """(() => {
    // Count the script runs this document has seen start: each time the app root's
    // data-test-script-state becomes 'running' (a page load, a widget's rerun, a fragment's rerun).
    if (window !== window.top) return;  // the graph iframes have no app root of their own
    window.__lensRuns = 0;
    let last = null;
    const look = () => {
        const app = document.querySelector('[data-testid="stApp"]');
        const state = app && app.getAttribute('data-test-script-state');
        if (state === 'running' && last !== 'running') window.__lensRuns += 1;
        last = state;
    };
    new MutationObserver(look).observe(document, {
        subtree: true, childList: true, attributes: true, attributeFilter: ['data-test-script-state'],
    });
    // A run whose messages reach the page in one burst (the browser busy or descheduled while the server
    // ran it) could go from 'notRunning' to 'notRunning' in one React render: the page never showed it
    // running, the count above missed it, and wait_idle waited for it to its timeout (the README test
    // command's 240 s in the Prompt inspector, docs/notes/hang40-40.md). So the messages after the one
    // that starts a run (a SessionStatus with script_is_running) are held back until the page shows
    // 'running' (at most HOLD_MS): every run is shown running before it is shown ended. The app sees the
    // same messages in the same order, only later.
    const HOLD_MS = 3000;
    const varint = (b, i) => {  // [value, next index]
        let v = 0, m = 1;
        while (i < b.length) { const c = b[i++]; v += (c & 127) * m; m *= 128; if (c < 128) break; }
        return [v, i];
    };
    const fields = function* (b) {  // [field number, wire type, value or [start, end)] of a protobuf message
        let i = 0;
        while (i < b.length) {
            let key, v;
            [key, i] = varint(b, i);
            const f = Math.floor(key / 8), w = key & 7;
            if (w === 0) { [v, i] = varint(b, i); yield [f, w, v]; }
            else if (w === 2) { [v, i] = varint(b, i); yield [f, w, [i, i + v]]; i += v; }
            else if (w === 1) { i += 8; } else if (w === 5) { i += 4; } else return;
        }
    };
    const statusOf = (data) => {  // SessionStatus's script_is_running (9, 2); null: another message
        if (!(data instanceof ArrayBuffer)) return null;
        const b = new Uint8Array(data);
        for (const [f, w, v] of fields(b)) {
            if (f === 9 && w === 2) {
                for (const [g, x, r] of fields(b.subarray(v[0], v[1]))) {
                    if (g === 2 && x === 0) return r !== 0;
                }
                return false;
            }
        }
        return null;
    };
    // How each run ended, in order (ForwardMsg's script_finished, field 6: 1 a full run, 3 a fragment's run
    // alone): a test tells a fragment's rerun from a full one by it
    window.__lensFinished = [];
    const finishedOf = (data) => {
        if (!(data instanceof ArrayBuffer)) return null;
        for (const [f, w, v] of fields(new Uint8Array(data))) if (f === 6 && w === 0) return v;
        return null;
    };
    const shown = () => {
        const app = document.querySelector('[data-testid="stApp"]');
        return app && app.getAttribute('data-test-script-state') === 'running';
    };
    const Native = window.WebSocket;
    window.WebSocket = class extends Native {
        addEventListener(type, listener, options) {
            if (type !== 'message' || typeof listener !== 'function') {
                return super.addEventListener(type, listener, options);
            }
            const held = [];
            let holding = false, endUndrawn = false;
            const hold = (until) => {  // hold what follows until until() (HOLD_MS at most)
                holding = true;
                const since = Date.now();
                const poll = setInterval(() => {
                    if (!until() && Date.now() - since < HOLD_MS) return;
                    clearInterval(poll);
                    holding = false;
                    endUndrawn = false;
                    while (held.length && !holding) deliver(held.shift());
                }, 10);
            };
            const deliver = (event) => {
                const status = statusOf(event.data);
                const finished = finishedOf(event.data);
                if (finished !== null) window.__lensFinished.push(finished);
                // a run's start while the run before's end is handed on but not drawn (two runs in one
                // burst: a script ending in st.rerun()): the start waits until the page has drawn that end
                if (status === true && endUndrawn && shown()) {
                    held.unshift(event);
                    hold(() => !shown());
                    return;
                }
                listener.call(this, event);
                if (status === false) endUndrawn = true;
                if (status === true) hold(shown);
            };
            const take = (event) => (holding ? held.push(event) : deliver(event));
            return super.addEventListener(type, take, options);
        }
    };
})();"""
"""Installed by new_page in every document the page opens, before the app's own scripts run."""

STILL = """(() => {
    // No CSS animation runs: Streamlit's running indicator, spinners and loading skeletons animate
    // for as long as a script runs, and each of their frames is styled, rastered and composited in
    // software (headless, no GPU), in every frame the page has. On the shared test machine, where a page's
    // run can last a minute, that was most of a tour's Chromium CPU (docs/notes/suitebrowser-32.md).
    // Transitions (finite, and some code waits for their end) are left alone; no check reads motion.
    const add = () => {
        const style = document.createElement('style');
        style.textContent = '*, *::before, *::after { animation: none !important; }';
        document.head.appendChild(style);
    };
    if (document.head) add(); else document.addEventListener('DOMContentLoaded', add);
})();"""
"""Installed by new_page in every document (graph iframes included) beside RUN_TRACKER."""

DONE = """(after) => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    const runs = window.__lensRuns;
    // without the tracker (a page not made by new_page) only a full load can be waited for: its state
    // starts 'initial' and is 'notRunning' only once its first run has ended
    // (-1 there: a falsy 0 would keep wait_for_function waiting); an element whose code is still loading
    // (a table, a chart: lazy chunks) shows Streamlit's skeleton in its place after the run has ended
    const loading = document.querySelector('[data-testid="stSkeleton"]');
    return state === 'notRunning' && !loading && (runs === undefined || runs > after) ? (runs ?? -1) : null;
}"""


NAVIGATION_TIMEOUT_MS = 180_000
"""How long a page's navigation (goto, reload) may take to its load event before the tour fails."""


class OnePage:
    """The browser of a chain of tours (``start_tours``'s ``chains``): the tours run one after another and
    share one page, which ``new_page`` hands to each at the size it asks for and ``release`` leaves open.

    Why: Chromium's CPU for a page's first load is ~5 s, for a full load (goto) in a page that has loaded
    before ~2 s, for a sidebar move ~1 s (docs/notes/suite35-35.md, load 15-19): most of a new page's
    cost is its renderer's start and first compile of the app's scripts, not the browser's launch and
    not the cache (a fresh context in the same browser, or a copied warm profile, cost as much). Every
    tour opens its first page by a full load (``goto``): a new document, a new Streamlit session, its own
    run counter and init scripts, so what a tour checks does not depend on the tour before it."""

    def __init__(self, browser) -> None:
        self.browser = browser
        self.page = None

    @property
    def contexts(self):
        """The browser's contexts (failure_shots)."""
        return self.browser.contexts


def new_page(browser, width: int, height: int):
    """A page of ``width`` x ``height`` px whose documents count their script runs (RUN_TRACKER), so
    wait_idle knows when the run an action started has ended, and run no CSS animation (STILL). In a
    chain of tours (``OnePage``), the chain's one page at that size."""
    if isinstance(browser, OnePage):
        if browser.page is None or browser.page.is_closed():
            browser.page = new_page(browser.browser, width, height)
        else:
            browser.page.set_viewport_size({"width": width, "height": height})
        return browser.page
    page = browser.new_page(viewport={"width": width, "height": height})
    # a navigation's "load" event is a failure bound only: Playwright's default 30 s failed every tour's
    # first goto at load 40 (on main too, docs/notes/suitebrowser-32.md); a passing goto returns at once
    page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    page.add_init_script(RUN_TRACKER)
    page.add_init_script(STILL)
    return page


def release(page, browser) -> None:
    """A tour's end with its page: closed, unless the tour runs in a chain (``OnePage``), whose next tour
    opens its first page in it by a full load."""
    if not isinstance(browser, OnePage):
        page.close()


FRAGMENT_RUN = 3
"""ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: a run of one fragment alone ended (1: a full run)."""


def last_finished(page) -> int | None:
    """How the page's last script run ended (``FRAGMENT_RUN`` for a fragment's run alone), as its
    ``script_finished`` message said; None before any run ended."""
    return page.evaluate("() => window.__lensFinished.length ? window.__lensFinished.at(-1) : null")


def runs(page) -> int:
    """How many script runs the page's current document has seen start (0 after a load's first
    frame; pass it to wait_idle as ``after`` before an action that reruns the script)."""
    return int(page.evaluate("() => window.__lensRuns || 0"))


def wait_idle(page, title: str | None = None, timeout_s: float = 40, after: int = 0) -> None:
    """Wait until a script run started after the first ``after`` runs of the document has ended
    (Streamlit's ``data-test-script-state`` back to ``notRunning``), every element it sent is mounted
    (no loading skeleton), no further run followed within 0.15 s (a page that forwards or reruns
    itself), and the page shows its title ``title`` (a page that stops on an error has none:
    ``title=None``).

    Streamlit's running indicator, which this waited on until issue 26, shows only after a run has
    lasted 0.5 s: a wait for it to be gone could return before a rerun had started, and cost 0.5-0.7 s
    of quiet after every run that it did see."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_s * 1000)
    # the run and the mounting of its elements get three times ``timeout_s``: at load 30 a fresh
    # server's first open ended its run after 40 s and mounted its chart 50 s later (a new browser
    # fetches every lazy chunk once); times the tours driving pages at once (Tours), which share the
    # machine; a bound for a failure only, a passing wait returns at once
    deadline = time.time() + 3 * timeout_s * max(1, Tours.driving)
    while True:
        left_ms = max(1.0, (deadline - time.time()) * 1000)
        try:
            seen = page.wait_for_function(DONE, arg=after, timeout=left_ms, polling=50).json_value()
        except Exception as exc:
            raise AssertionError(f"the app was still running after the timeout ({page_state(page, after)})"
                                 + explained(page.url)) from exc
        time.sleep(0.15)
        if page.evaluate(DONE, after) == seen:
            break
        after = int(seen)  # another run started: wait for that one too
    if title is not None:
        h1 = '[data-testid="stMainBlockContainer"] h1'
        page.wait_for_selector(f'{h1}:has-text("{title}")', timeout=timeout_s * 1000)


PAGE_STATE = """(after) => {
    const app = document.querySelector('[data-testid="stApp"]');
    return {state: app && app.getAttribute('data-test-script-state'), runs: window.__lensRuns ?? null,
            after, skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length};
}"""
"""What ``DONE`` reads, as it reads it: whether a wait for the page timed out on a run still going on
(``state`` 'running'), on a run it never saw start (``runs`` not above ``after``: the page's run counter
missed it, or no run was started), or on an element still loading (``skeletons``)."""

EXPLAINED = "server threads at the timeout"
"""The heading ``explained`` puts before a server's stacks (a failure quoting them once)."""


def page_state(page, after: int) -> str:
    """The page's script state, run count (against ``after``) and loading skeletons, for a failure
    message (or why they could not be read)."""
    try:
        return "page: " + ", ".join(f"{k}={v}" for k, v in page.evaluate(PAGE_STATE, after).items())
    except Exception as exc:  # noqa: BLE001 - a failure message: the page may be gone
        return f"page state unreadable: {exc!s:.200}"


def explained(url: str) -> str:
    """The stacks of the server serving ``url`` (``server_stacks``) under ``EXPLAINED``: appended to the
    message of a wait for the page that timed out."""
    return f"\n{EXPLAINED} (innermost call first):\n{server_stacks(url)}"


def wait_drawn(page, timeout_s: float = 20) -> None:
    """Wait until every plotly chart has drawn its SVG, every visible dataframe its canvas and
    every graph iframe its vis-network canvas (lazy chunks)."""
    check = """() => {
            const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
            const frames = [...document.querySelectorAll('[data-testid="stDataFrame"]')]
                // not in a closed expander
                .filter(f => f.checkVisibility() && f.getBoundingClientRect().height > 0);
            const graphs = [...document.querySelectorAll('iframe')].filter(f => f.srcdoc);
            return {charts: charts.filter(c => !c.querySelector('.main-svg')).length,
                    frames: frames.filter(f => !f.querySelector('canvas')).length,
                    graphs: graphs.filter(g => !(g.contentDocument
                                                 && g.contentDocument.querySelector('.net canvas'))).length};
        }"""
    try:
        page.wait_for_function(
            f"() => {{ const s = ({check})(); return !s.charts && !s.frames && !s.graphs; }}",
            timeout=timeout_s * 1000,
        )
    except Exception as exc:
        raise AssertionError(f"not drawn after {timeout_s} s: {page.evaluate(check)}") from exc
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")  # laid out


README_PICTURES = SHOTS.resolve() == (REPO / "docs" / "screenshots").resolve()
"""Screenshots asked for as the README's pictures (``LENS_SCREENSHOTS=docs/screenshots``)."""


def settle(page) -> None:
    """Before a screenshot: the canvases drawn by wait_drawn also paint their pixels. The README's
    pictures wait 0.8 s more for the last paint; a test run's screenshots (git-ignored, for a person
    reading a failure) do not hold the test up for it: no assertion reads their pixels."""
    wait_drawn(page)
    if README_PICTURES:
        time.sleep(0.8)


def errors_on(page) -> list[str]:
    boxes = page.query_selector_all('[data-testid="stException"], [data-testid="stAlertContentError"]')
    return [b.inner_text()[:300] for b in boxes]


def open_page(page, server: str, path: str, first: bool, query: str = "", timeout_s: float = 40) -> None:
    """Go to a page: a full load the first time, then through the sidebar (same session)."""
    if first:
        page.goto(f"{server}/{path}{query}")
        before = 0
    else:
        before = runs(page)
        page.click(f'[data-testid="stSidebarNav"] a[href$="/{path}"]' if path else
                   '[data-testid="stSidebarNav"] a >> nth=0')
    wait_idle(page, PAGES[path][1], timeout_s=timeout_s, after=before)


def snap(page, name: str) -> None:
    """Wait until everything on the page is drawn (settle); then, when screenshots are asked for
    (SHOTS_ASKED), a screenshot of the window as it is, ``name``.png in SHOTS."""
    settle(page)
    if SHOTS_ASKED:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def shoot(page, name: str) -> None:
    """A screenshot of the top of the page, as tall as the page's content needs, when screenshots are
    asked for (SHOTS_ASKED); otherwise only the wait until everything on the page is drawn."""
    if not SHOTS_ASKED:
        wait_drawn(page)
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1440, "height": SHOT_HEIGHT.get(name, 1300)})
    if README_PICTURES:  # the charts' own resize handlers have run (plotly's is debounced)
        time.sleep(0.5)
    settle(page)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def pick_option(page, label: str, index: int) -> int:
    """Choose the ``index``-th option of the selectbox labelled ``label`` with the mouse; returns the
    document's run count before the choice (wait_idle's ``after``)."""
    page.get_by_role("combobox", name=label).click()
    before = runs(page)
    page.locator('[role="option"]').nth(index).click()
    return before


Tour = Callable[[object, str, Path], None]
"""A browser tour: ``tour(browser, server_url, folder)`` drives its pages and asserts as it goes."""


class Tours:
    """Browser tours run side by side, each in a thread of its own with its own Playwright and headless
    Chromium (Playwright's sync API belongs to the thread that started it). A test waits for its tour
    and raises what the tour raised. One tour's waits (the server's script run, a chart's drawing, a
    lazy chunk's load) overlap with the other tours' work instead of adding up: the two browser files
    used to spend about 60 % of their wall time waiting (docs/notes/suiteapp2-26.md)."""

    _lock = threading.Lock()
    driving = 0
    """Tours driving pages at this moment (wait_idle's bound grows with it)."""
    AT_ONCE = 3
    """Tours driving pages at the same time; the others wait for a slot. Every wait inside a tour has a
    bound sized for a loaded machine; with all of a file's tours at once on a machine at load 25 the
    first opens outlasted them (every tour failed, as main's servers failed to come up at all in the
    same run), and three at once keep most of the overlap: a file's two or three long tours."""

    def __init__(self) -> None:
        self._threads: dict[str, threading.Thread] = {}
        self._ended: dict[str, threading.Event] = {}
        self._errors: dict[str, BaseException] = {}
        self._slots = threading.BoundedSemaphore(self.AT_ONCE)

    def start(self, chain: list[tuple[Tour, Launched, Path]]) -> None:
        """Start the tours of ``chain`` (each with its server and folder) in a thread of their own, with
        one browser, one after another, and return at once. A chain of more than one tour shares one page
        (``OnePage``); a tour that fails gets its screenshots and its page closed, and the next tour of the
        chain goes on in a new page."""
        from playwright.sync_api import sync_playwright

        done = threading.Event()

        def run() -> None:
            try:
                with self._slots, sync_playwright() as pw:
                    browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
                    view = OnePage(browser) if len(chain) > 1 else browser
                    with Tours._lock:
                        Tours.driving += 1
                    try:
                        for tour, server, folder in chain:
                            try:
                                tour(view, server.wait_up(), folder)
                            except BaseException as exc:  # noqa: BLE001 - handed to the test that waits
                                # the server's stacks first, before the screenshots take their seconds (a
                                # wait_idle timeout quotes them already)
                                if EXPLAINED not in str(exc):
                                    exc.add_note(f"{EXPLAINED} (innermost call first):\n{server.stacks()}")
                                failure_shots(browser, tour.__name__)
                                self._errors[tour.__name__] = exc
                                if isinstance(view, OnePage) and view.page is not None:
                                    view.page.close()
                            finally:
                                self._ended[tour.__name__].set()
                    finally:
                        with Tours._lock:
                            Tours.driving -= 1
                        browser.close()
            except BaseException as exc:  # noqa: BLE001 - handed to the tests whose tours did not end
                for tour, _, _ in chain:
                    if not self._ended[tour.__name__].is_set():
                        self._errors[tour.__name__] = exc
            finally:
                for tour, _, _ in chain:
                    self._ended[tour.__name__].set()
                done.set()

        for tour, _, _ in chain:
            self._ended[tour.__name__] = threading.Event()
        name = " + ".join(tour.__name__ for tour, _, _ in chain)
        thread = threading.Thread(target=run, name=f"tour {name}", daemon=True)
        self._threads[name] = thread
        thread.start()

    def wait(self, tour: Tour) -> None:
        """Wait until ``tour`` has ended; raise what it raised (its traceback points into the tour).
        Every wait inside a tour has its own timeout, so a stuck page ends the tour with an error."""
        self._ended[tour.__name__].wait()
        error = self._errors.pop(tour.__name__, None)
        if error is not None:
            raise error

    def join(self) -> None:
        """Wait for every tour (before the servers they drive are stopped)."""
        for thread in self._threads.values():
            thread.join()


def failure_shots(browser, name: str) -> None:
    """A screenshot of every page a failed tour left open (``failed_<tour>_<k>.png`` in SHOTS), taken
    whether or not screenshots were asked for; a page that cannot be shot any more is passed over."""
    pages = [page for context in browser.contexts for page in context.pages]
    for k, page in enumerate(pages):
        try:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"failed_{name}_{k}.png"), timeout=10_000)
        except Exception:  # noqa: BLE001 - the tour's own error is what the test reports
            continue


def start_tours(request: pytest.FixtureRequest, tours: dict[Tour, str],
                chains: tuple[tuple[Tour, ...], ...] = ()) -> Iterator[Tours]:
    """For a module fixture: start at once the tours of the file's selected tests (tour ``x`` is the
    test ``test_x``; ``tours`` names the server fixture each drives), the servers they need first;
    yield the running tours; at teardown wait for them all. The tours of one of ``chains`` run one after
    another in one thread on one page (``OnePage``), in the chain's order, where the chain starts."""
    selected = {item.name for item in request.session.items if item.module is request.module}
    chosen = {tour: fixture for tour, fixture in tours.items() if f"test_{tour.__name__}" in selected}
    servers = {fixture: request.getfixturevalue(fixture) for fixture in dict.fromkeys(chosen.values())}
    factory = request.getfixturevalue("tmp_path_factory")
    chain_of = {tour: chain for chain in chains for tour in chain}
    running = Tours()
    try:
        started: set[Tour] = set()
        for tour in chosen:
            if tour in started:
                continue
            group = [t for t in chain_of.get(tour, (tour,)) if t in chosen]
            started.update(group)
            running.start([(t, servers[chosen[t]], factory.mktemp(t.__name__[:30])) for t in group])
        yield running
    finally:
        running.join()


def bad_file(folder: Path) -> Path:
    """A verdict file with a repeated model (line 3) and an unknown winner (line 5)."""
    path = folder / "my-judge-run.csv"
    path.write_text(
        "prompt_id,model_a,model_b,winner,judge\n1,gpt4,claude,A,my-judge\n1,gpt4,gpt4,B,my-judge\n"
        "2,claude,bard,tie,my-judge\n2,gpt4,bard,maybe,my-judge\n3,bard,gpt4,B,my-judge\n",
        encoding="utf-8",
    )
    return path
