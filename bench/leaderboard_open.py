"""The Leaderboard's first and cached open in headless Chromium at 1280 px, before (a checkout of main) and
after (this checkout) in one run, on copies of one store; the server's peak RSS.

    python bench/leaderboard_open.py --db /work/benchdata/store-app-1000000x100.duckdb --dataset bench \
        --before /work/wt/lbopen-base

A page is open when Streamlit's script state (the ``data-test-script-state`` attribute) has gone from
``running`` back to ``notRunning``; "intervals" is when the table no longer says "computing…" (the bootstrap,
after the point board is on screen; the same as open where the bootstrap is not deferred). The cached open is
a second tab opened on the same server. Prints a Markdown table with the load average; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from browser_support import CHROME_ARGS, CHROMIUM  # noqa: E402
from browser_timing import serve  # noqa: E402

WATCH_STATE = """
window.__lens = {saw: false, doneAt: null};
new MutationObserver(() => {
  const el = document.querySelector('[data-test-script-state]');
  if (!el) return;
  const s = el.getAttribute('data-test-script-state');
  if (s === 'running') { window.__lens.saw = true; }
  else if (s === 'notRunning' && window.__lens.saw && window.__lens.doneAt === null) {
    window.__lens.doneAt = performance.now();
  }
}).observe(document, {subtree: true, attributes: true, childList: true,
                      attributeFilter: ['data-test-script-state']});
"""


def open_once(context, url: str, timeout_s: float) -> tuple[float, float]:
    """(seconds to the first notRunning after running, seconds until no cell says computing…)."""
    page = context.new_page()
    page.add_init_script(WATCH_STATE)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_function("window.__lens.doneAt !== null", timeout=timeout_s * 1000, polling=20)
    opened = page.evaluate("window.__lens.doneAt") / 1000.0  # performance.now() counts from navigation start
    page.wait_for_function(
        "document.querySelector('[data-testid=\"stDataFrame\"]') !== null && "
        "!document.body.innerText.includes('Computing the 95 %')", timeout=timeout_s * 1000, polling=50)
    intervals = time.perf_counter() - t0
    return opened, intervals


def measure(root: Path, db: Path, dataset: str, timeout_s: float) -> tuple[list[float], float]:
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="lbopen-"))
    copy = work / "store.duckdb"
    shutil.copyfile(db, copy)
    os.chmod(copy, 0o644)
    try:
        with serve(copy, work / "server.log", root) as (url, watch), sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
            context = browser.new_context(viewport={"width": 1280, "height": 1000})
            first = open_once(context, f"{url}/?dataset={dataset}", timeout_s)
            time.sleep(1.0)
            cached = open_once(context, f"{url}/?dataset={dataset}", timeout_s)
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [*first, *cached], watch.peak / 1024**3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--before", type=Path, help="a checkout of the old code (e.g. a worktree of main)")
    ap.add_argument("--timeout", type=float, default=300)
    args = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = []
    for name, root in (("before", args.before), ("after", REPO)):
        if root is None:
            continue
        t, peak = measure(root, args.db, args.dataset, args.timeout)
        rows.append(f"| {name} | {t[0]:.2f} s | {t[1]:.2f} s | {t[2]:.2f} s | {peak:.2f} GB |")
        print(rows[-1], flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| code | first open (script state) | intervals shown | cached open (new tab) | server peak RSS |")
    print("| --- | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
