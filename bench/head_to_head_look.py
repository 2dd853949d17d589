"""A look at the Head-to-head page in headless Chromium at 1280 px: screenshots and layout checks.

    python bench/head_to_head_look.py STORE.duckdb [QUERY] [--out /tmp/h2h_shots]

Serves ``app.py`` on the store (tests/browser_support.py), opens ``/head-to-head`` + QUERY (e.g.
``?dataset=arena`` or ``?model_a=gpt4&model_b=claude``) in a 1280 x 1600 window, screenshots the top,
opens the first meeting and screenshots again, and prints: the document's scroll and client widths,
every element of the main block whose content is wider than its box (a sideways scroll or a cut), the
metric labels and values that are cut, and any error box. A manual check, not a test: it needs
Chromium and playwright, and a person reads the screenshots.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

LAYOUT = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]');
  const over = [...main.querySelectorAll('*')]
     .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1
                  && getComputedStyle(e).overflowX !== 'visible')
     .map(e => (e.getAttribute('data-testid') || e.tagName) + ' ' + e.scrollWidth + '>' + e.clientWidth);
  const cut = [...document.querySelectorAll('[data-testid="stMetricLabel"], [data-testid="stMetricValue"]')]
     .filter(e => { const t = e.querySelector('div,p') || e; return t.scrollWidth > t.clientWidth + 1; })
     .map(e => e.innerText);
  const boxes = '[data-testid="stException"], [data-testid="stAlertContentError"]';
  const errors = [...document.querySelectorAll(boxes)].map(e => e.innerText);
  const doc = document.scrollingElement;
  return {document_scroll_client: [doc.scrollWidth, doc.clientWidth],
          wider_than_box: over, cut_metrics: cut, errors: errors};
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("query", nargs="?", default="")
    ap.add_argument("--out", type=Path, default=Path("/tmp/h2h_shots"))
    args = ap.parse_args()

    from browser_support import CHROME_ARGS, CHROMIUM, _serve, wait_idle
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    serving = _serve(args.db.resolve(), args.out / "server.log")
    url = next(serving).wait_up()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            page.goto(f"{url}/head-to-head{args.query}")
            wait_idle(page, "Head-to-head", timeout_s=120)
            time.sleep(3)  # the metrics' and pills' last paint
            wait_idle(page, "Head-to-head", timeout_s=60)
            page.screenshot(path=str(args.out / "head_to_head_top.png"))
            print("top:", page.evaluate(LAYOUT))
            summaries = page.query_selector_all('[data-testid="stExpander"] summary')
            if len(summaries) > 1:  # [0] is "Meetings by outcome"; [1] the first meeting
                summaries[1].click()
                time.sleep(1)
                wait_idle(page, "Head-to-head", timeout_s=60)
                page.screenshot(path=str(args.out / "head_to_head_meeting.png"))
                print("meeting open:", page.evaluate(LAYOUT))
            browser.close()
    finally:
        next(serving, None)


if __name__ == "__main__":
    main()
