"""What the app benchmarks share: a Streamlit server on a store, and times read from the page's own clock.

A page is *done* when Streamlit's script state, the attribute ``data-test-script-state`` on the app
root (``[data-testid="stApp"]``), has gone to ``notRunning`` after having been ``running`` since the
action that started it. The running indicator (``stStatusWidget``) is no measure: the frontend shows
it only 500 ms after a run starts, so a run shorter than that never shows it, and a wait for "the
indicator is gone" can end before the run has begun.

Every transition of that attribute is recorded in the page itself (an init script with a
MutationObserver, stamped with ``performance.now()``), so a time is the page's own: from the
navigation's start for a page opened by URL, from the event for a click or a key press. Nothing is
polled from Python for the time itself; Python only waits for the record to say "done".

    from browser_timing import serve, launch, open_timed, click_timed, new_tab_timed, key_to_text

Used by bench/app_page_timing.py (first, cached and new-tab opens) and the slider round-trip bench.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "bench")]

from browser_support import CHROME_ARGS, CHROMIUM, PAGES, _free_port, errors_on  # noqa: E402
from procmeter import _kill_tree, _tree_rss  # noqa: E402

__all__ = ["CHROMIUM", "PAGES", "Opened", "RssWatch", "click_timed", "errors_on", "key_to_text", "launch",
           "new_tab_timed", "open_timed", "page_link", "serve", "wait_done"]

SETTLE_S = 0.3
"""After a run stops, how long the state must stay ``notRunning`` before the page counts as settled
(a page that reruns itself, or a second pass, starts a new run within this)."""

STATE_RECORDER = """
(() => {
  if (window.__lensStates) return;
  window.__lensStates = [];         // [state, performance.now()] for every change of the script state
  window.__lensMark = 0;            // the page clock at the action being timed
  const seen = new WeakSet();
  const note = (root) => {
    const s = root.getAttribute('data-test-script-state');
    const log = window.__lensStates;
    if (!log.length || log[log.length - 1][0] !== s) log.push([s, performance.now()]);
  };
  const watchRoot = (root) => {
    if (seen.has(root)) return;
    seen.add(root);
    note(root);
    new MutationObserver(() => note(root)).observe(
      root, {attributes: true, attributeFilter: ['data-test-script-state']});
  };
  const find = () => {
    const root = document.querySelector('[data-testid="stApp"]');
    if (root) watchRoot(root);
  };
  new MutationObserver(find).observe(document, {childList: true, subtree: true});
  find();
})();
"""
"""Init script: records the app root's script-state changes with the page's clock."""

DONE_SINCE_MARK = """
(settleMs) => {
  const log = window.__lensStates || [];
  const mark = window.__lensMark;
  let ran = false, firstStop = null, lastStop = null, lastChange = null;
  for (const [s, t] of log) {
    if (t < mark) continue;
    lastChange = t;
    if (s === 'running') { ran = true; lastStop = null; }
    else if (s === 'notRunning' && ran) { lastStop = t; if (firstStop === null) firstStop = t; }
  }
  const now = performance.now();
  const current = log.length ? log[log.length - 1][0] : null;
  let settled = lastStop !== null && current === 'notRunning' && now - lastStop >= settleMs;
  let switched = false;
  const c = window.__lensClick;
  if (!ran && c && c.mark === mark && c.pathAt !== null && current === 'notRunning') {
    // the page switched but no run was seen to start after the click: its state changes went by unseen
    // (SWITCHED_UNSEEN); the run is taken as stopped at the page's last change (or its last stop)
    const end = Math.max(c.lastChange, lastChange === null ? -Infinity : lastChange);
    switched = true;
    firstStop = lastStop = end;
    settled = now - end >= settleMs;
  }
  return {firstStop, lastStop, settled, mark, current, switched};
}
"""
"""Reads the record since the last mark: the first stop after a run, the last, whether it settled, and whether
it was timed from a page switch whose run was never seen to start (``SWITCHED_UNSEEN``)."""

SWITCHED_UNSEEN = "switched page, no run seen to start: timed to the page's last change"
"""The note of a click whose page switched (the address became the link's) while the script state never
showed the new page's run starting. When the click reaches the server while another run is in progress (the
Leaderboard's bootstrap fragment checks every second, and reruns the page once its intervals are done),
Streamlit 1.67 stops that run and starts the new page without a ``running`` status of its own (the stopped
run's end is never reported, so the session still counts as running); a running status closely followed by a
stopped one may also be drawn as neither. The run then ends unseen. Such a click is timed from
the click to the page's last change (a MutationObserver on the app, armed at the click)
once the page has been quiet ``SETTLE_S``, instead of waiting out the timeout
on an idle server (docs/notes/race35-35.md)."""


@dataclass
class Opened:
    """One timed page: seconds to the first stop of the script after the action (the page drawn), to
    the last stop before the state settled (the same unless the page reran itself), and a note
    (an error box, a timeout)."""

    first_s: float | None
    settled_s: float | None
    note: str = ""


class RssWatch(threading.Thread):
    """Polls a process tree's RSS every 50 ms; kills the tree past ``cap_gb``."""

    def __init__(self, pid: int, cap_gb: float):
        super().__init__(daemon=True)
        self.proc, self.pid, self.cap = psutil.Process(pid), pid, cap_gb * 1024**3
        self.up_s: float | None = None  # set by serve: process start to the first health answer
        self.peak, self.last, self.killed, self.stop = 0, 0, False, False

    def run(self) -> None:
        while not self.stop:
            self.last = _tree_rss(self.proc)
            self.peak = max(self.peak, self.last)
            if self.peak > self.cap:
                self.killed = True
                _kill_tree(self.pid)
                return
            time.sleep(0.05)


def tree_cpu_s(proc: psutil.Process) -> float:
    """User + system CPU seconds so far of ``proc`` and its descendants alive now (0 for one gone): a
    server's whole tree, its warming threads and any child processes included."""
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def chromium_cpu_s() -> dict[int, float]:
    """CPU seconds so far (user + system) of each of this process's Chromium processes (the renderers,
    GPU and network processes of the browser ``launch`` started), by pid. A renderer's time counts while
    its tab is open, so read it before closing the tab."""
    out: dict[int, float] = {}
    for p in psutil.Process().children(recursive=True):
        try:
            if "chrom" in p.name() or "headless" in p.name():
                t = p.cpu_times()
                out[p.pid] = t.user + t.system
        except psutil.Error:
            continue
    return out


@contextlib.contextmanager
def serve(db: Path, log: Path, root: Path = REPO, cap_gb: float = 8.0, poll_s: float = 0.3,
          **env_extra: str) -> Iterator[tuple[str, RssWatch]]:
    """``streamlit run app.py`` of the checkout ``root`` on the store ``db`` (env ``LENS_DB``) and a
    free port; yields the base URL and the server's RSS watch (the tree is killed past ``cap_gb``),
    and stops the server's process tree. The health check is polled every ``poll_s`` seconds; the watch's
    ``up_s`` is the wall from the process's start to its first answer."""
    port = _free_port()
    env = {**os.environ, "LENS_DB": str(db), "PYTHONPATH": str(root), **env_extra}
    started = time.monotonic()
    with open(log, "wb") as out:  # a file, not a pipe: a full pipe would stall the server
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.headless", "true", "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false"],
            cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    watch = RssWatch(proc.pid, cap_gb)
    try:
        for _ in range(300):
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(poll_s)
        else:
            raise SystemExit("streamlit did not come up: " + log.read_text(errors="replace")[-1500:])
        if proc.poll() is not None:
            raise SystemExit("streamlit stopped: " + log.read_text(errors="replace")[-1500:])
        watch.up_s = time.monotonic() - started
        watch.start()
        yield url, watch
    finally:
        watch.stop = True
        _kill_tree(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)


@contextlib.contextmanager
def launch(width: int = 1280, height: int = 1000) -> Iterator:
    """Headless Debian Chromium (playwright) with the state recorder in every page; yields the browser
    context (``context.new_page()`` is a new tab: a new Streamlit session, same browser)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            context.add_init_script(STATE_RECORDER)
            yield context
        finally:
            browser.close()


def _mark(page) -> None:
    """Start the page's clock for the next action (a click, a key press): runs before it."""
    page.evaluate("() => { window.__lensMark = performance.now(); }")


def wait_done(page, timeout_s: float, watch: RssWatch | None = None, settle_s: float = SETTLE_S) -> Opened:
    """Wait until the script has run and stopped since the mark and stayed stopped ``settle_s``;
    the times are the page's own (ms since the mark, in seconds)."""
    t0 = time.perf_counter()
    while True:
        try:
            r = page.evaluate(DONE_SINCE_MARK, settle_s * 1000)
        except Exception as exc:  # the page or the browser went away
            return Opened(None, None, type(exc).__name__)
        if r["settled"]:
            errors = errors_on(page)
            notes = [SWITCHED_UNSEEN] if r["switched"] else []
            notes += ["error box: " + errors[0][:80]] if errors else []
            return Opened((r["firstStop"] - r["mark"]) / 1000, (r["lastStop"] - r["mark"]) / 1000,
                          "; ".join(notes))
        if watch is not None and watch.killed:
            return Opened(None, None, "server killed")
        if time.perf_counter() - t0 > timeout_s:
            first = None if r["firstStop"] is None else (r["firstStop"] - r["mark"]) / 1000
            seen = page.evaluate("(m) => (window.__lensStates || []).slice(-6).map(([s, t]) => "
                                 "s + '@' + ((t - m) / 1000).toFixed(2))", r["mark"])
            return Opened(first, None, f"not settled after {timeout_s:g} s (state {r['current']}; "
                                       f"last states, s from the mark: {' '.join(seen)})")
        time.sleep(0.05)


def open_timed(page, url: str, timeout_s: float = 300, watch: RssWatch | None = None) -> Opened:
    """Load ``url`` in ``page`` (a full load: a new Streamlit session); times from the navigation's
    start (the new document's clock starts there, so the mark is 0)."""
    try:
        page.goto(url, wait_until="commit")
    except Exception as exc:  # a dead server: reported, not raised
        return Opened(None, None, type(exc).__name__)
    return wait_done(page, timeout_s, watch)


def new_tab_timed(context, url: str, timeout_s: float = 300, watch: RssWatch | None = None) -> Opened:
    """Open ``url`` in a new tab of the running browser (another tab stays open), time it, close it."""
    tab = context.new_page()
    try:
        return open_timed(tab, url, timeout_s, watch)
    finally:
        tab.close()


SIDEBAR_LINK = '[data-testid="stSidebarNav"] a'


CLICK_WHEN_STOPPED = """
(sel) => { const el = document.querySelector(sel); if (!el) return 'missing';
           const log = window.__lensStates || [];
           if (log.length && log[log.length - 1][0] === 'running') return 'running';
           const root = document.querySelector('[data-testid="stApp"]');
           const path = new URL(el.href, location.href).pathname;
           const mark = performance.now();
           if (window.__lensClickWatch) window.__lensClickWatch.disconnect();
           const c = window.__lensClick = {mark, path, pathAt: null, lastChange: mark};
           if (root && path !== location.pathname) {
             const watch = window.__lensClickWatch = new MutationObserver(() => {
               c.lastChange = performance.now();
               if (c.pathAt === null && location.pathname === c.path) c.pathAt = c.lastChange;
             });
             watch.observe(root, {childList: true, subtree: true, characterData: true});
           }
           window.__lensMark = mark; el.click(); return 'clicked'; }
"""
"""Clicks only while the script is stopped: a click during a run (the Leaderboard's fragment checks for its
bootstrap every second) leaves no 'running' after the mark (the state stays running into the new page's
run), so the new page's stop was never seen and the bench waited out its timeout on an idle server. A click
that switches page also arms a watch of the app (its last change, and when the address became the link's),
read by ``DONE_SINCE_MARK`` where no run is seen to start (``SWITCHED_UNSEEN``)."""


def click_timed(page, selector: str, timeout_s: float = 300, watch: RssWatch | None = None) -> Opened:
    """Click the element ``selector`` from inside the page (its clock marked just before the click),
    e.g. a sidebar link: the same session switches page. The click waits for the script to be stopped
    (``CLICK_WHEN_STOPPED``)."""
    page.wait_for_selector(selector, timeout=timeout_s * 1000)
    t0 = time.perf_counter()
    while (found := page.evaluate(CLICK_WHEN_STOPPED, selector)) == "running":
        if time.perf_counter() - t0 > timeout_s:
            return Opened(None, None, f"still running after {timeout_s:g} s before the click")
        time.sleep(0.02)
    if found != "clicked":
        return Opened(None, None, f"no {selector}")
    return wait_done(page, timeout_s, watch)


def page_link(path: str) -> str:
    """The sidebar link of the page at url path ``path`` (``''``: the Leaderboard)."""
    return f'{SIDEBAR_LINK}[href$="/{path}"]' if path else f"{SIDEBAR_LINK}:first-of-type"


KEY_WATCH = """
([selector, timeoutMs]) => {
  const text = () => [...document.querySelectorAll(selector)].map(e => e.innerText).join('\\n');
  const w = window.__lensKey = {before: text(), t0: null, ms: null, after: null, failed: false};
  const check = () => {
    if (w.t0 === null || w.ms !== null || w.failed) return;
    const now = performance.now();
    if (text() !== w.before) { w.ms = now - w.t0; w.after = text(); stop(); }
    else if (now - w.t0 > timeoutMs) { w.failed = true; stop(); }
  };
  const obs = new MutationObserver(check);
  const tick = setInterval(check, 5);
  const stop = () => { obs.disconnect(); clearInterval(tick); };
  window.addEventListener('keydown', (e) => { w.t0 = e.timeStamp; }, {capture: true, once: true});
  obs.observe(document.body, {childList: true, subtree: true, characterData: true});
}
"""
"""Arms the page: the next key press's time stamp starts the clock; the text under the selector changing
stops it (watched by a MutationObserver and a 5 ms tick)."""


def key_to_text(page, focus_selector: str, key: str, text_selector: str,
                timeout_s: float = 30) -> tuple[float | None, str]:
    """Focus ``focus_selector`` (a slider: ``[data-testid="stSlider"] input[type="range"]`` in Streamlit
    1.67, whose react-aria slider moves on the browser's own key handling of that input), press ``key``
    (``ArrowRight``) as a real key event, and time on the page's clock from the key event's time stamp
    until the text of ``text_selector`` (every match, joined) differs from before; (seconds or None, the
    new text). Then the script's stop is awaited, so the next move starts from a finished run.
    ``text_selector`` must be the table (or what shows the numbers), not a block holding the slider: the
    slider's own value label changes at once (tried on the Truncation page: the main block "changed" in
    16 ms, before any rerun)."""
    page.focus(focus_selector)
    page.evaluate(KEY_WATCH, [text_selector, timeout_s * 1000])
    _mark(page)
    page.keyboard.press(key)
    page.wait_for_function("() => window.__lensKey.ms !== null || window.__lensKey.failed",
                           timeout=(timeout_s + 5) * 1000)
    r = page.evaluate("() => window.__lensKey")
    wait_done(page, timeout_s)
    return (None if r["ms"] is None else r["ms"] / 1000), r["after"] or r["before"]
