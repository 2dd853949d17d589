"""Benchmark: every app page on a large store, one process per page (Streamlit AppTest, the real pages).

    python bench/app_scale.py --db STORE.duckdb [--dataset arena] [--ranker R] [--pages 1,2,3,4,5,6,7]
        [--timeout 600]

For each page a fresh process opens the app (AppTest starts on the default page, the Leaderboard,
which loads the verdicts and builds the graphs), switches to the page (first open: its own first
computation fills its caches), then runs it again in the same session (warm: what a user sees on a
revisit or a widget move that hits the cache). Prints wall seconds of both, the process's peak RSS (the
server's
memory: AppTest runs the page in-process), the exceptions and error boxes, and the load average.
Make a store with ``python bench/graphs_arena.py``'s ``battle_log`` + ``python -m engine import``.
Speed is measured, never asserted; the machine is shared, so read the load beside every number.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = {
    "1": "app_pages/1_leaderboard.py", "2": "app_pages/2_truncation.py", "3": "app_pages/3_cycles.py",
    "4": "app_pages/4_inspector.py", "5": "app_pages/5_judges.py", "6": "app_pages/6_data.py",
    "7": "app_pages/7_theory_lab.py",
    "8": "app_pages/8_head_to_head.py",
}


def one_page(page: str, timeout: int, dataset: str, ranker: str | None = None) -> dict:
    """Open ``page`` cold, then warm; wall seconds, peak RSS MB and what the page said."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.query_params["dataset"] = dataset  # the sidebar reads it once per session
    if ranker:  # the sidebar's ranker, as a link's ?ranker= sets it
        at.query_params["ranker"] = ranker
    t0 = time.perf_counter()
    at.run()  # AppTest opens on the default page (Leaderboard): it loads the verdicts and graphs
    landing = time.perf_counter() - t0
    t0 = time.perf_counter()
    at.switch_page(page).run()
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    at.run()
    warm = time.perf_counter() - t0
    said = (
        [f"dataset {at.session_state['_dataset']}"]
        + [e.value for e in at.info][:1]
        + [e.value for e in at.error][:2]
    )
    return {"page": page, "landing_s": round(landing, 2), "cold_s": round(cold, 2), "warm_s": round(warm, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "exceptions": [str(e.message)[:160] for e in at.exception], "said": [str(s)[:160] for s in said]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--dataset", default="arena")
    ap.add_argument("--ranker", help="the sidebar's ranker (default: the app's, bt)")
    ap.add_argument("--pages", default="1,2,3,4,5,6,7")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_page(args.one, args.timeout, args.dataset, args.ranker)))
        return
    env = {**os.environ, "LENS_DB": str(Path(args.db).resolve())}
    print(f"load average: {os.getloadavg()}")
    print(
        "| page | app open (Leaderboard) s | page first open s | warm s | peak RSS MB | exceptions / errors "
        "|\n"
        "|---|---|---|---|---|---|"
    )
    for p in args.pages.split(","):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--db",
                args.db,
                "--one",
                PAGES[p],
                "--dataset",
                args.dataset,
                "--timeout",
                str(args.timeout),
                *(["--ranker", args.ranker] if args.ranker else []),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        try:
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(
                f"| {Path(r['page']).stem} | {r['landing_s']} | {r['cold_s']} | {r['warm_s']} | "
                f"{r['peak_rss_mb']} | "
                f"{'; '.join(r['exceptions'] + r['said'])[:200]} |",
                flush=True,
            )
        except (IndexError, json.JSONDecodeError):
            print(
                f"| {Path(PAGES[p]).stem} | failed (exit {out.returncode}) | | | {out.stderr.strip()[-200:]} "
                "|",
                flush=True,
            )
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
