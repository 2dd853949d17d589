"""Benchmark: the Truncation page's slider round trip in a real browser, before and after, in one run.

    python bench/app_roundtrip.py --base OLD_CHECKOUT [--moves 20] [--db STORE] [--cases 0,1,2,3] [--pause S]

For each case (vicuna80 judge gpt-4, vicuna80 all judges pooled, sparse70; and ``floor``: a fragment with the
same two sliders and two figures and nothing else, served twice from the same folder, Streamlit's and the
browser's own round trip on this machine, whose two rows differ by noise alone) and each checkout in turn
(``--base``, the old code, then this one: case by case, so a load that drifts during the run weighs on both
alike) it starts ``streamlit run app.py`` on its own copy of a store holding vicuna80 and the 70-model sparse
set of tests/test_browser_stress.py, opens ``/keep-k`` in headless Chromium at 1280 px, and moves a
slider with the keyboard ``--moves`` times: keep-K one step
left (every K new, so no move is served from a cache the previous one filled), then μ one step,
alternating direction between rounds so each (K, μ) pair is new.

A move is timed in the page: ``performance.now()`` just before the key event, and the moment
Streamlit's script state (the app root's ``data-test-script-state``) went back to ``notRunning``
after having been ``running``, with the page's "Graphs kept" / "μ" figure already showing the new
value (the table, the curves and the metrics are drawn from the same run's messages before the
state flips), and the first animation frame where that figure shows the new value: the "table" time
(the figures and the table come in the same batch; the curves and the protocol table after them).
Reported: median and range per case, slider and end point, the load average before and after
(``--per-move``: every move's time, in order, so first visits and revisits can be told apart), and each
case's CPU per move (user + system, ms): the server's process tree (its warming threads included: after the
last move the count waits until the server has been idle for half a second, at most 30 s, so work a move
started and left for later is counted) and Chromium's processes; under load the wall clock moves with the
other processes, the CPU much less. A move whose
new value the wait saw but the page's frame watcher did not record is reported as missing, not timed; a
value that never changes (a lost update) stops the run with Playwright's timeout.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from browser_support import CHROME_ARGS, CHROMIUM  # noqa: E402
from browser_timing import chromium_cpu_s, serve, tree_cpu_s  # noqa: E402

CASES = (("vicuna80", "gpt-4"), ("vicuna80", "(all)"), ("sparse70", "(all)"), ("floor", "-"))
"""The Truncation page on a dataset and judge; ``floor``: the framework's own round trip (``FLOOR_APP``)."""

FLOOR_APP = """import streamlit as st

@st.fragment
def moves():
    k = st.slider("Keep K graphs", 1, 200, 100)
    mu = st.select_slider("μ (weight of bad 4-cycles), log scale", options=MU_STEPS, value=1.0,
                          format_func=lambda v: f"{v:g}")
    st.metric("Graphs kept", f"{k} of 200")
    st.metric("μ", f"{mu:g}")

moves()
"""
"""The floor case's app: a fragment holding the page's two sliders (same labels and steps) and two figures,
nothing computed. Its round trip is Streamlit's and the browser's alone on this machine: the part of the
Truncation page's time that no change to this app can remove (case ``floor``, served from a folder of its
own with this checkout's .streamlit/config.toml, the same for both rows)."""


def floor_app(folder: Path) -> Path:
    """A folder holding ``FLOOR_APP`` as app.py, with this checkout's Streamlit config and the page's μ
    steps."""
    from engine.views.truncation_view import MU_STEPS

    (folder / "app.py").write_text(f"MU_STEPS = {MU_STEPS!r}\n" + FLOOR_APP, encoding="utf-8")
    shutil.copytree(REPO / ".streamlit", folder / ".streamlit", dirs_exist_ok=True)
    return folder

WATCH = """() => {
    // record when the script state goes running -> notRunning (the moment a rerun has finished), from every
    // mutation record: a rerun short enough that running and notRunning reach one observer callback would be
    // missed by reading the attribute in the callback (the move then timed out though its rerun had ended)
    const root = document.querySelector('[data-test-script-state]');
    window.__runs = [];
    new MutationObserver((records) => {
        const now = performance.now();
        records.forEach((r, i) => {
            const next = i + 1 < records.length ? records[i + 1].oldValue
                : root.getAttribute('data-test-script-state');
            if (r.oldValue === 'running' && next === 'notRunning') window.__runs.push(now);
        });
    }).observe(root, {attributes: true, attributeOldValue: true,
                      attributeFilter: ['data-test-script-state']});
}"""

METRIC = """(label) => {
    // the figure's value, or null while the figure (or its value, mid-render) is not in the page: a
    // figure read as null is never taken for a new value
    const m = [...document.querySelectorAll('[data-testid="stMetric"]')]
        .find(e => e.innerText.startsWith(label));
    const v = m ? m.querySelector('[data-testid="stMetricValue"]') : null;
    return v ? v.innerText : null;
}"""


def make_store(folder: Path) -> Path:
    """A store with the shipped vicuna80 data and the sparse 70-model set."""
    from test_browser_stress import sparse_verdicts

    from engine.ingest.importer import store_report, validate_file
    from engine.ingest.shipped import open_store

    db = folder / "lens.duckdb"
    store = open_store(db)
    report = validate_file(sparse_verdicts(folder / "sparse70.csv"), "sparse70.csv", dataset="sparse70")
    store_report(store, report, "sparse70")
    store.close()
    return db


def wait_state(page, timeout_s: float = 120) -> None:
    """Until the app root exists and its script has stopped running."""
    page.wait_for_selector('[data-test-script-state="notRunning"] [data-testid="stMetric"]',
                           timeout=timeout_s * 1000)


SHOWN = """([label, before]) => {
    // every animation frame: has the figure ``label`` (drawn in the same batch as the table, before the
    // curves) left its old value? The first frame it has is when the move's numbers are on screen.
    window.__shown = null;
    window.__shownIdle = false;
    const look = () => {
        const now = (""" + METRIC + """)(label);
        if (now !== null && now !== before) {
            window.__shown = performance.now();
            // whether the rerun had ended by then (running never drawn: started and ended between frames)
            window.__shownIdle = document.querySelector('[data-test-script-state]')
                .getAttribute('data-test-script-state') === 'notRunning';
            return;
        }
        requestAnimationFrame(look);
    };
    requestAnimationFrame(look);
}"""


def one_move(page, slider: str, key: str, label: str,
             timeout_s: float = 60) -> tuple[float | None, float | None]:
    """Press ``key`` on the slider labelled ``slider``; ms from the key event to the figure ``label``
    (and the table drawn with it) showing the new value, and to the finished rerun (curves included).
    A time is None when the new value was seen by the wait but the page's frame watcher never recorded it
    (lead-36's one crash, a TypeError on ``window.__shown`` null): such a move is counted and reported as
    missing, not timed; a value that never changes fails the wait (a lost update is an error)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    before = page.evaluate(METRIC, label)
    thumb = page.get_by_role("slider", name=slider)
    thumb.focus()
    n_runs = page.evaluate("() => window.__runs.length")
    page.evaluate(SHOWN, [label, before])
    t0 = page.evaluate("() => performance.now()")
    page.keyboard.press(key)
    page.wait_for_function(
        f"""([n, label, before]) => (window.__runs.length > n || window.__shownIdle)
            && document.querySelector('[data-test-script-state]').getAttribute('data-test-script-state')
               === 'notRunning'
            && ({METRIC})(label) !== null && ({METRIC})(label) !== before""",
        arg=[n_runs, label, before], timeout=timeout_s * 1000,
    )  # a figure that never shows its new value (a lost update) times out here: a failure, not a number
    shown = page.evaluate("() => window.__shown")
    if shown is None:
        # the new value is on screen but the frame watcher has not run since (its next animation frame had
        # not come when the wait above returned): give it the frames it needs
        try:
            page.wait_for_function("() => window.__shown !== null", timeout=5000)
            shown = page.evaluate("() => window.__shown")
        except PlaywrightTimeout:
            shown = None  # reported as a move whose watcher is missing (main), not a time
    # a rerun whose running state was never drawn had ended by the frame that showed its numbers: that frame
    # is its end (an upper bound)
    done = page.evaluate(f"() => window.__runs.length > {n_runs} ? window.__runs[window.__runs.length - 1] "
                         ": window.__shown")
    return (None if shown is None else float(shown - t0)), (None if done is None else float(done - t0))


def chromium_cpu() -> float:
    """User + system CPU seconds of this process's Chromium descendants (the browser playwright launched)."""
    return sum(chromium_cpu_s().values())


def settled_cpu(proc, quiet_s: float = 0.5, limit_s: float = 30.0) -> float:
    """The server tree's CPU seconds once it has used under 5 % of a core for ``quiet_s`` (its warming done,
    or ``limit_s`` passed): what the moves cost it, work left for later included."""
    import time

    end = time.monotonic() + limit_s
    last = tree_cpu_s(proc)
    while time.monotonic() < end:
        time.sleep(quiet_s)
        now = tree_cpu_s(proc)
        if now - last < 0.05 * quiet_s:
            return now
        last = now
    return last


def measure(root: Path, db: Path, moves: int, cases=CASES,
            pause_s: float = 0.0) -> dict[tuple[str, ...], list[float | None]]:
    """Every case's keep-K and μ move times (ms) on a server of checkout ``root``, and its CPU per move
    (``(dataset, judge, "cpu")``: [server ms, Chromium ms] per move, the case's keep-K and μ moves
    together)."""
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="roundtrip_"))
    copy = work / "lens.duckdb"
    shutil.copyfile(db, copy)
    out: dict[tuple[str, ...], list[float | None]] = {}
    try:
        with serve(copy, work / "streamlit.log", root) as (url, watch), sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
            for dataset, judge in cases:
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.goto(f"{url}/" if dataset == "floor"
                          else f"{url}/keep-k?dataset={dataset}&judge={judge}")
                wait_state(page)
                page.evaluate(WATCH)
                server0, chrome0 = settled_cpu(watch.proc), chromium_cpu()
                k_times, mu_times = [], []
                for i in range(moves):
                    if pause_s:
                        page.wait_for_timeout(pause_s * 1000)
                    k_times.append(one_move(page, "Keep K graphs", "ArrowLeft", "Graphs kept"))
                    if pause_s:
                        page.wait_for_timeout(pause_s * 1000)
                    mu_key = "ArrowRight" if (i // 8) % 2 == 0 else "ArrowLeft"
                    mu_times.append(one_move(page, "μ (weight of bad 4-cycles), log scale", mu_key, "μ"))
                server1, chrome1 = settled_cpu(watch.proc), chromium_cpu()
                out[(dataset, judge, "cpu")] = [(server1 - server0) * 500 / moves,
                                                (chrome1 - chrome0) * 500 / moves]
                for name, times in (("keep-K", k_times), ("μ", mu_times)):
                    out[(dataset, judge, name, "table")] = [t[0] for t in times]
                    out[(dataset, judge, name, "whole rerun")] = [t[1] for t in times]
                page.close()
            browser.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="a checkout of the old code (git worktree)")
    ap.add_argument("--moves", type=int, default=20)
    ap.add_argument("--db", type=Path, help="a store with vicuna80 and sparse70 (default: made here)")
    ap.add_argument("--cases", default="0,1,2,3", help="which of CASES to run, by index (default all)")
    ap.add_argument("--per-move", action="store_true", help="also print every move's time, in order")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds the reader looks at the page before each move (default 0: back to back); "
                         "the CPU per move then counts the pauses too")
    args = ap.parse_args()
    cases = [CASES[int(i)] for i in args.cases.split(",")]
    db = args.db or make_store(Path(tempfile.mkdtemp(prefix="roundtrip_store_")))
    load0 = os.getloadavg()
    before: dict[tuple[str, ...], list[float | None]] = {}
    after: dict[tuple[str, ...], list[float | None]] = {}
    floor = floor_app(Path(tempfile.mkdtemp(prefix="roundtrip_floor_"))) if ("floor", "-") in cases else None
    try:
        for case in cases:  # case by case, old then new: a load that drifts during the run hits both alike
            # the floor app is the same on both sides (a first and a second serving): its two rows differ by
            # the machine's noise alone
            old, new = (floor, floor) if floor and case[0] == "floor" else (args.base.resolve(), REPO)
            before.update(measure(old, db, args.moves, [case], args.pause))
            after.update(measure(new, db, args.moves, [case], args.pause))
    finally:
        if floor is not None:
            shutil.rmtree(floor, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"load average before {load0[0]:.2f} / after {load1[0]:.2f}; {args.moves} moves per row; "
          "ms from key event to the finished rerun (Chromium, 1280 px)")
    print("| dataset | judge | slider | until | before median (range) | after median (range) |")
    print("| --- | --- | --- | --- | ---: | ---: |")
    for key, old in before.items():
        if key[2] != "cpu":
            print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {summary(old)} | {summary(after[key])} |")
    print("\nCPU per move (ms, user + system; keep-K and μ moves together; server tree after it settled"
          + ("; the pauses between moves included)" if args.pause else ")"))
    print("| dataset | judge | server before | server after | Chromium before | Chromium after |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for key, old in before.items():
        if key[2] == "cpu":
            new = after[key]
            print(f"| {key[0]} | {key[1]} | {old[0]:.0f} | {new[0]:.0f} | {old[1]:.0f} | {new[1]:.0f} |")
    if args.per_move:
        print("\nper move, in order (ms; - = watcher missing)")
        for key, old in before.items():
            if key[2] == "cpu":
                continue
            for side, times in (("before", old), ("after", after[key])):
                shown = ", ".join("-" if t is None else f"{t:.0f}" for t in times)
                print(f"{' / '.join(key)} {side}: {shown}")


def summary(times: list[float | None]) -> str:
    """``median (min-max)`` of the timed moves, and how many moves' watcher was missing (not timed)."""
    timed = [t for t in times if t is not None]
    text = f"{statistics.median(timed):.0f} ({min(timed):.0f}-{max(timed):.0f})" if timed else "-"
    return text + (f", {len(times) - len(timed)} missing" if len(timed) < len(times) else "")


if __name__ == "__main__":
    main()
