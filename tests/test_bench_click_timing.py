"""The app benchmarks' click timing (bench/browser_timing.click_timed) in headless Chromium, on a page that
plays Streamlit's part: its app root carries ``data-test-script-state`` and its sidebar links switch the
address and redraw the page, as Streamlit's do.

A click whose run the script state never shows (the state stays ``notRunning`` while the address becomes the
link's and the page redraws: what Streamlit 1.67 shows when the click preempts another run, docs/notes/
race35-35.md) is timed to the page's last change, noted ``SWITCHED_UNSEEN``, instead of waiting out the
timeout; a click whose run is seen is timed to its stop as before; a click that switches nothing is still not
called done. Each time is checked against the page's own record of the same moment (taken by the page's
script when it drew its last element or set the state), not against a bound.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from browser_support import CHROMIUM, _free_port
from conftest import REPO, require

sys.path.insert(0, str(REPO / "bench"))

PAGE = b"""<!doctype html><html><body>
<div data-testid="stApp" data-test-script-state="notRunning">
  <nav data-testid="stSidebarNav">
    <a href="/unseen">unseen</a><a href="/seen">seen</a><a href="/idle">idle</a>
  </nav>
  <main><h1>Start</h1></main>
</div>
<script>
const app = document.querySelector('[data-testid="stApp"]');
const main = document.querySelector('main');
// the page's own record: when it drew its last element, when it set the state to notRunning
window.__drawnAt = null; window.__stoppedAt = null;
function draw(title, n, gapMs, then) {
  let k = 0;
  const step = () => {
    const p = document.createElement('p'); p.textContent = title + ' ' + k; main.appendChild(p);
    window.__drawnAt = performance.now();
    if (++k < n) setTimeout(step, gapMs); else if (then) setTimeout(then, gapMs);
  };
  setTimeout(step, gapMs);
}
function go(e, path, title) {
  e.preventDefault(); history.pushState({}, '', path); document.querySelector('h1').textContent = title;
}
document.querySelector('a[href="/unseen"]').addEventListener('click', (e) => {
  go(e, '/unseen', 'Unseen'); draw('unseen', 5, 80);       // redrawn, the script state never changes
});
document.querySelector('a[href="/seen"]').addEventListener('click', (e) => {
  app.setAttribute('data-test-script-state', 'running'); go(e, '/seen', 'Seen');
  draw('seen', 3, 80, () => {
    app.setAttribute('data-test-script-state', 'notRunning'); window.__stoppedAt = performance.now();
  });
});
document.querySelector('a[href="/idle"]').addEventListener('click', (e) => { e.preventDefault(); });
</script></body></html>"""
"""Every path answers this page: three sidebar links, whose clicks switch unseen, switch seen, or do
nothing."""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def page():
    require(Path(CHROMIUM).exists(), "Chromium is not installed")
    import browser_timing

    server = ThreadingHTTPServer(("127.0.0.1", _free_port()), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with browser_timing.launch() as context:
            tab = context.new_page()
            yield tab, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()


def _fresh(page) -> object:
    tab, url = page
    tab.goto(url)
    tab.wait_for_selector("h1")
    return tab


def test_a_switch_whose_run_is_unseen_is_timed_to_the_last_change(page):
    from browser_timing import SWITCHED_UNSEEN, click_timed, page_link

    tab = _fresh(page)
    opened = click_timed(tab, page_link("unseen"), timeout_s=20)
    drawn = tab.evaluate("() => (window.__drawnAt - window.__lensMark) / 1000")
    assert opened.note == SWITCHED_UNSEEN
    assert opened.first_s == pytest.approx(drawn, abs=0.02)
    assert opened.settled_s == opened.first_s
    assert tab.evaluate("() => location.pathname") == "/unseen"


def test_a_switch_whose_run_is_seen_is_timed_to_its_stop(page):
    from browser_timing import click_timed, page_link

    tab = _fresh(page)
    opened = click_timed(tab, page_link("seen"), timeout_s=20)
    stopped = tab.evaluate("() => (window.__stoppedAt - window.__lensMark) / 1000")
    assert opened.note == ""
    assert opened.first_s == pytest.approx(stopped, abs=0.02)


def test_a_click_that_switches_nothing_is_not_done(page):
    from browser_timing import click_timed, page_link

    tab = _fresh(page)
    opened = click_timed(tab, page_link("idle"), timeout_s=1.5)
    assert opened.first_s is None
    assert opened.note.startswith("not settled after 1.5 s")
