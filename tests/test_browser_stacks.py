"""A wait for a page that times out says where the server's threads were (tests/browser_support.py).

The README test command once failed on "the app was still running after the timeout" (the Prompt inspector,
240 s, docs/notes/hang40-40.md) and nothing said why. Every test server now runs under faulthandler, which
writes every thread's Python stack on ``STACKS_SIGNAL``; ``wait_idle``'s timeout quotes them with the page's
own state (script state, runs seen against ``after``, loading skeletons). Here a real ``streamlit run`` of a
script that blocks in a function of its own, in a real headless Chromium: the timeout's message must name
that function and its file, and say the page's run was still on.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import CHROME_ARGS, CHROMIUM, EXPLAINED, _requirements, _serve, new_page, wait_idle

pytestmark = pytest.mark.browser

BLOCKED = '''import threading

import streamlit as st

st.title("Blocked")


def held_here_by_the_test():
    threading.Event().wait()


held_here_by_the_test()
'''


def test_a_timed_out_wait_quotes_the_blocking_frame_of_the_server(tmp_path: Path) -> None:
    _requirements()
    from playwright.sync_api import sync_playwright

    script = tmp_path / "blocked_page.py"
    script.write_text(BLOCKED, encoding="utf-8")
    serving = _serve(tmp_path / "none.duckdb", tmp_path / "streamlit.log", script=script)
    server = next(serving)
    try:
        url = server.wait_up()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
            try:
                page = new_page(browser, 800, 600)
                page.goto(url)
                with pytest.raises(AssertionError) as failed:
                    wait_idle(page, timeout_s=1)  # a bound for the failure only: the run never ends
            finally:
                browser.close()
        message = str(failed.value)
        assert "state=running" in message, message[:500]
        stacks = message.split(EXPLAINED, 1)[1]
        # faulthandler's lines: 'File ".../blocked_page.py", line 10 in held_here_by_the_test'
        blocking = [line for line in stacks.splitlines() if "held_here_by_the_test" in line]
        assert blocking and all("blocked_page.py" in line for line in blocking), stacks[:3000]
        assert "in wait" in stacks  # the Event's wait, innermost, above it
        # the dump is the file's: the stacks file beside the log holds it too
        assert "held_here_by_the_test" in (tmp_path / "streamlit.stacks.txt").read_text(encoding="utf-8")
    finally:
        serving.close()
