"""The browser tests' wait for a page's run (tests/browser_support.py ``wait_idle``): it sees every run,
and when it times out it says where the server's threads were.

The README test command once failed on "the app was still running after the timeout" (the Prompt inspector,
240 s, docs/notes/hang40-40.md) with the page showing the run's result. Two things here, each on a real
``streamlit run`` of a small script in a real headless Chromium:

- a run whose messages reach the page in one burst (the browser busy while the server ran it, as a loaded
  machine deschedules it) went from 'notRunning' to 'notRunning' in one React render: the run counter
  (``RUN_TRACKER``) never saw it start and ``wait_idle`` waited to its timeout. The tracker now holds the
  messages after a run's start until the page shows the run; the test makes the burst (``BURST``: the
  page's incoming messages held below the app's listeners until the server has ended the pick's run, then
  handed on in one task) and waits for each pick's run (with the hold removed, 3 of 3 runs missed one);
- every test server runs under faulthandler, which writes every thread's Python stack on
  ``STACKS_SIGNAL``; ``wait_idle``'s timeout quotes them with the page's own state (script state, runs seen
  against ``after``, loading skeletons): a script that blocks in a function of its own is named, with its
  file, in the message.
"""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from browser_support import (
    CHROME_ARGS,
    CHROMIUM,
    EXPLAINED,
    _requirements,
    _serve,
    new_page,
    runs,
    wait_idle,
)

pytestmark = pytest.mark.browser

PAGE = '''import pathlib
import threading

import streamlit as st

st.title("Fast")


def held_here_by_the_test():
    threading.Event().wait()


if st.query_params.get("block"):
    held_here_by_the_test()
chosen = st.selectbox("Pick", ["a", "b", "c"])
st.write("chosen", chosen)
if st.query_params.get("twice") and st.session_state.get("last") != chosen:
    st.session_state["last"] = chosen
    st.rerun()  # this run ends here and a second one follows at once
pathlib.Path(__file__).with_name("ended").write_text(chosen)
'''
"""The tests' page: quick reruns, a file ``ended`` saying which choice's run has ended; opened with
``?block=1`` its run blocks in a function of its own for good; with ``?twice=1`` a new choice runs the
script twice (the first run ends in ``st.rerun()``)."""


BURST = """(() => {
    // Below the app's (and RUN_TRACKER's) socket listeners: once armed with a choice (window.__burst), the
    // page's incoming messages are held until the server has ended that choice's run (the flag answers '1')
    // and 0.3 s more, then handed on all in one task, as a page busy or descheduled while the server ran
    // the script reads them: one burst.
    const add = EventTarget.prototype.addEventListener;
    EventTarget.prototype.addEventListener = function (type, listener, options) {
        if (!(this instanceof WebSocket) || type !== 'message' || typeof listener !== 'function') {
            return add.call(this, type, listener, options);
        }
        const held = [];
        const take = (event) => {
            if (!window.__burst && !held.length) return listener.call(this, event);
            held.push(event);
            if (held.length > 1) return;
            const want = window.__burst;
            const poll = setInterval(async () => {
                const answer = await (await fetch(window.__flag + want)).text();
                if (answer !== '1') return;
                clearInterval(poll);
                window.__burst = null;
                setTimeout(() => { for (const e of held.splice(0)) listener.call(this, e); }, 300);
            }, 50);
        };
        return add.call(this, type, take, options);
    };
})();"""


def _ended_flag(folder: Path) -> http.server.ThreadingHTTPServer:
    """A local HTTP server answering ``/ended?want=X`` with '1' once the FAST script's run for X has
    ended (its ``ended`` file), else '0' (readable from the app's page: any origin)."""

    class Flag(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            want = self.path.partition("want=")[2]
            ended = folder / "ended"
            body = b"1" if ended.exists() and ended.read_text(encoding="utf-8") == want else b"0"
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Flag)
    threading.Thread(target=httpd.serve_forever, name="ended-flag", daemon=True).start()
    return httpd


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """PAGE served by ``streamlit run`` (as the browser tests serve the app: ``_serve``), the flag server of
    its runs' ends, and a headless Chromium: (server, flag URL without its value, browser, folder)."""
    _requirements()
    from playwright.sync_api import sync_playwright

    folder = tmp_path_factory.mktemp("browser_waits")
    (folder / "page.py").write_text(PAGE, encoding="utf-8")
    flag = _ended_flag(folder)
    serving = _serve(folder / "none.duckdb", folder / "streamlit.log", script=folder / "page.py")
    server = next(serving)
    try:
        server.wait_up()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
            try:
                yield server, f"http://127.0.0.1:{flag.server_address[1]}/ended?want=", browser, folder
            finally:
                browser.close()
    finally:
        serving.close()
        flag.shutdown()


def test_a_run_whose_messages_arrive_in_one_burst_is_waited_for(served) -> None:
    server, flag, browser, _ = served
    page = new_page(browser, 800, 600)
    page.add_init_script(BURST)
    page.goto(server.url)
    wait_idle(page, "Fast")
    page.evaluate("(flag) => { window.__flag = flag; }", flag)
    # back to the first option each second pick (the old counter missed those most often)
    for index, value in ((1, "b"), (0, "a"), (2, "c"), (0, "a"), (1, "b"), (0, "a")):
        page.get_by_role("combobox", name="Pick").click()  # (sends nothing to the server)
        before = runs(page)
        page.evaluate("(value) => { window.__burst = value; }", value)
        page.locator('[role="option"]').nth(index).click()
        wait_idle(page, "Fast", timeout_s=2, after=before)  # a bound for a failure only
        shown = page.inner_text('[data-testid="stMainBlockContainer"]')
        assert shown.rstrip().endswith(f"chosen {value}"), shown
    page.close()


def test_two_runs_in_one_burst_are_both_counted(served) -> None:
    """A pick whose run ends in ``st.rerun()``: both runs' messages reach the page in one burst, the first
    run's end not yet drawn when the second's start comes (the page still shows 'running'); the tracker
    counts two runs (the review of round 40 saw one counted in 4 of 4 picks before the start waited for the
    end to be drawn)."""
    server, flag, browser, _ = served
    page = new_page(browser, 800, 600)
    page.add_init_script(BURST)
    page.goto(server.url + "/?twice=1")
    wait_idle(page, "Fast")
    page.evaluate("(flag) => { window.__flag = flag; }", flag)
    counted = []
    for index, value in ((1, "b"), (0, "a"), (2, "c"), (0, "a")):
        page.get_by_role("combobox", name="Pick").click()
        before = runs(page)
        page.evaluate("(value) => { window.__burst = value; }", value)
        page.locator('[role="option"]').nth(index).click()
        wait_idle(page, "Fast", timeout_s=5, after=before + 1)  # a bound for a failure only
        counted.append(runs(page) - before)
    page.close()
    assert counted == [2, 2, 2, 2]


def test_a_timed_out_wait_quotes_the_blocking_frame_of_the_server(served) -> None:
    server, _, browser, folder = served
    page = new_page(browser, 800, 600)
    page.goto(server.url + "/?block=1")
    with pytest.raises(AssertionError) as failed:
        wait_idle(page, timeout_s=1)  # a bound for the failure only: the run never ends
    page.close()
    message = str(failed.value)
    assert "state=running" in message, message[:500]
    stacks = message.split(EXPLAINED, 1)[1]
    # faulthandler's lines: 'File ".../page.py", line 10 in held_here_by_the_test'
    blocking = [line for line in stacks.splitlines() if "held_here_by_the_test" in line]
    assert blocking and all("page.py" in line for line in blocking), stacks[:3000]
    assert "in wait" in stacks  # the Event's wait, innermost, above it
    # the dump is the file's: the stacks file beside the log holds it too
    assert "held_here_by_the_test" in (folder / "streamlit.stacks.txt").read_text(encoding="utf-8")
