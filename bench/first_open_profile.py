"""Where a page's first open goes on a fresh server: the browser's part and the script run's, and what the
script thread spends its CPU on.

    python bench/first_open_profile.py --db STORE --dataset bench [--base CHECKOUT] [--rounds 5] [--sample]
        [--kept] [--imported PARQUET]

Each round starts ``streamlit run app.py`` of each checkout in turn (``--base`` first) on its own copy of the
store, opens ``/?dataset=NAME`` (or ``--page``) in a new headless Chromium and reports: the first open (the
page's own clock, from the navigation to the script state's first ``notRunning``, as
bench/app_page_timing.py), the navigation to ``running`` (the browser loading the frontend and connecting:
the server has no script to run before it), the server's first script run (wall, and the CPU of the thread
running it: the critical path, without the Leaderboard's deferred bootstrap thread) and the server's CPU over
the open (every thread, the bootstrap's included). A ``sitecustomize`` on the server's path wraps Streamlit's
``ScriptRunner._run_script``; ``--sample`` also samples the script thread's stack every 2 ms during the first
run, each sample weighted by the CPU the thread used since the last (its own clock, so waiting counts
nothing), and prints the functions holding most of it (the last round's, per checkout; Streamlit's and the
import system's plumbing left out). A call holding the interpreter lock is counted in the frame seen after it.
Wall times on a loaded machine say little; the thread CPU and its before/after in the same round say more.
Nothing is asserted.

The store is copied per server. ``--imported PARQUET`` adds, in each round, each checkout's first open on a
store that checkout made itself by importing PARQUET (once, before the rounds; column "boards" = import): the
very first open after an import, where a checkout's import may keep the Leaderboard's point board
(``engine.views.import_board``, round 39). ``--kept`` adds, in each round, each checkout's first open on a
copy in which that checkout has already kept the Leaderboard's boards (``engine.views.stored_board``: a first
server's point board and bootstrap, made once per checkout before the rounds by ``prime``): the case of every
server start after the first, beside the case of the very first open after an import (nothing kept; column
"boards"). A checkout that keeps no boards (before round 37) opens its primed copy as it opens any.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from browser_timing import launch, open_timed, serve  # noqa: E402

HOOK = r'''
import collections, os, sys, threading, time
OUT, SAMPLE = os.environ["LENS_FIRST_OPEN_PROFILE"], os.environ.get("LENS_FIRST_OPEN_SAMPLE") == "1"
NAME = "streamlit.runtime.scriptrunner.script_runner"


def _sampler(tid, stop, counts):
    clock = time.pthread_getcpuclockid(tid)
    last = time.clock_gettime(clock)
    while not stop.is_set():
        now = time.clock_gettime(clock)
        frame, stack = sys._current_frames().get(tid), []
        while frame is not None:
            stack.append(f"{frame.f_code.co_filename}:{frame.f_code.co_firstlineno}({frame.f_code.co_name})")
            frame = frame.f_back
        counts[";".join(reversed(stack))] += now - last
        last = now
        time.sleep(0.002)


def _patch():
    while NAME not in sys.modules or not hasattr(sys.modules[NAME], "ScriptRunner"):
        time.sleep(0.001)
    runner = sys.modules[NAME].ScriptRunner
    original, runs = runner._run_script, []

    def _run_script(self, rerun_data):
        runs.append(1)
        first = len(runs) == 1
        counts, stop = collections.Counter(), threading.Event()
        sampler = threading.Thread(target=_sampler, args=(threading.get_ident(), stop, counts), daemon=True)
        wall, cpu = time.time(), time.thread_time()
        if first and SAMPLE:
            sampler.start()
        try:
            return original(self, rerun_data)
        finally:
            stop.set()
            if first:
                if SAMPLE:
                    sampler.join()
                with open(OUT, "w") as out:
                    out.write(f"{time.time() - wall} {time.thread_time() - cpu}\n")
                    for stack, seconds in counts.items():
                        out.write(f"{seconds} {stack}\n")

    runner._run_script = _run_script


class _Finder:
    done = False

    def find_spec(self, name, path, target=None):
        if name == NAME and not _Finder.done:
            _Finder.done = True
            threading.Thread(target=_patch, daemon=True).start()
        return None


sys.meta_path.insert(0, _Finder())
'''
"""The server's ``sitecustomize``: times (and with LENS_FIRST_OPEN_SAMPLE=1 samples) the first script run."""


def open_once(root: Path, src: Path, dataset: str, page: str, sample: bool,
              cold: bool = False) -> tuple[dict, list[str]]:
    """One fresh server of ``root`` on a copy of ``src``, one first open: its figures, the top functions.
    ``cold``: Chromium started first and the page asked for the moment the server answers (no idle second for
    the server between its start and the open; the server CPU column then counts from the health answer)."""
    tmp = Path(tempfile.mkdtemp(prefix="lens-first-open-"))
    try:
        db, out = tmp / src.name, tmp / "run1.txt"
        shutil.copyfile(src, db)
        (tmp / "sitecustomize.py").write_text(HOOK)
        env = {"PYTHONPATH": f"{tmp}{os.pathsep}{root}", "LENS_FIRST_OPEN_PROFILE": str(out),
               "LENS_FIRST_OPEN_SAMPLE": "1" if sample else "0"}
        with contextlib.ExitStack() as stack:
            if cold:
                context = stack.enter_context(launch())
                tab = context.new_page()
                url, watch = stack.enter_context(serve(db, tmp / "streamlit.log", root, poll_s=0.02, **env))
            else:
                url, watch = stack.enter_context(serve(db, tmp / "streamlit.log", root, **env))
                context = stack.enter_context(launch())
                tab = context.new_page()
                time.sleep(1.0)  # the server up (health answered) and idle
            server = psutil.Process(watch.proc.pid)
            cpu0 = sum(server.cpu_times()[:2])
            opened = open_timed(tab, f"{url}/{page}?dataset={dataset}", 300, watch)
            cpu = sum(server.cpu_times()[:2]) - cpu0
            states = json.loads(tab.evaluate("() => JSON.stringify(window.__lensStates || [])"))
        lines = out.read_text().splitlines()
        run_wall, run_cpu = (float(x) for x in lines[0].split())
        running = next((t for s, t in states if s == "running"), float("nan")) / 1000
        return ({"first": opened.first_s, "to_running": running, "run_wall": run_wall, "run_cpu": run_cpu,
                 "server_cpu": cpu}, _top(lines[1:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


PRIME = r'''
import logging, sys
logging.disable(logging.WARNING)
from app_pages import _lbopen_cache
from app_pages._lens import B_DEFAULT, SEED, get_store
key, ranker = _lbopen_cache.prewarm_first_open({"dataset": sys.argv[1]})
with get_store().session():
    job = _lbopen_cache.bootstrap_job(key, ranker, B_DEFAULT, SEED)
job.result()
'''
"""A first server's work on the Leaderboard's first open without a browser: the point board, then its
bootstrap job (which keeps both boards in the store where the checkout does)."""


def imported(root: Path, parquet: Path, dataset: str, tmp: Path) -> tuple[Path, int, float]:
    """A new store holding ``parquet`` as ``dataset``, made by ``root``'s own ``python -m engine import`` (the
    case of the very first open after an import: a checkout whose import keeps the Leaderboard's point board,
    ``engine.views.import_board``, has it there), how many boards it holds, and the import's CPU seconds."""
    import subprocess

    import duckdb

    db = tmp / f"imported-{len(list(tmp.glob('imported-*')))}.duckdb"
    before = os.times()
    subprocess.run([sys.executable, "-m", "engine", "import", "--dataset", dataset, str(parquet)], cwd=root,
                   check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "LENS_DB": str(db), "PYTHONPATH": str(root)})
    after = os.times()
    cpu = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM results_cache WHERE kind = 'app_board'").fetchone()
    return db, int(row[0]) if row else 0, cpu


def prime(root: Path, src: Path, dataset: str, tmp: Path) -> tuple[Path, int]:
    """A copy of ``src`` after ``root``'s first Leaderboard open of ``dataset`` (``PRIME``), and how many
    boards it kept."""
    import subprocess

    import duckdb

    db = tmp / f"primed-{len(list(tmp.glob('primed-*')))}.duckdb"
    shutil.copyfile(src, db)
    subprocess.run([sys.executable, "-c", PRIME, dataset], cwd=root, check=True,
                   env={**os.environ, "LENS_DB": str(db), "PYTHONPATH": str(root)})
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM results_cache WHERE kind = 'app_board'").fetchone()
    return db, int(row[0]) if row else 0


PLUMBING = re.compile(r"threading\.py|<frozen |scriptrunner/|caching/cache_utils|sitecustomize|metrics_util")
"""Frames every sample passes through (thread start, script runner, imports, caches): not in the top list."""


def _top(lines: list[str], n: int = 40) -> list[str]:
    """The functions holding most of the sampled CPU (inclusive), as 'ms  share  function'."""
    total, inclusive = 0.0, collections.Counter[str]()
    for line in lines:
        seconds, stack = line.split(" ", 1)
        total += float(seconds)
        for frame in set(stack.split(";")):
            if not PLUMBING.search(frame):
                inclusive[re.sub(r"^.*site-packages/", "", frame)] += float(seconds)
    return [f"{s * 1000:8.1f} ms {s / total:6.1%}  {f}" for f, s in inclusive.most_common(n)] if total else []


def _rounds(a: argparse.Namespace, roots: list[Path], sources: dict[tuple[Path, str], Path]) -> dict:
    """Each round: every case (nothing kept, then kept) of every checkout, alternating; the rows printed."""
    tops: dict[Path, list[str]] = {}
    for r in range(a.rounds):
        for (root, case), src in _alternating(roots, sources):
            got, tops[root] = open_once(root, src, a.dataset, a.page, a.sample, a.cold)
            cells = [f"{got[k]:.2f} s" for k in ("first", "to_running", "run_wall", "run_cpu", "server_cpu")]
            load = os.getloadavg()[0]
            print(f"| {root} | {case} | {r + 1} | {' | '.join(cells)} | {load:.1f} |", flush=True)
    return tops


def _alternating(roots: list[Path], sources: dict[tuple[Path, str], Path]):
    """(checkout, case) and its store, the checkouts alternating within each case."""
    for case in ("none", "import", "kept"):
        for root in roots:
            if (root, case) in sources:
                yield (root, case), sources[(root, case)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--base", type=Path,
                    help="a second checkout (e.g. a worktree of main), run first in each round")
    ap.add_argument("--page", default="", help="the url path opened ('' = the Leaderboard)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true",
                    help="start Chromium first and open the page the moment the server answers (as "
                    "bench/app_page_timing.py --cold): no idle head start for the server")
    ap.add_argument("--sample", action="store_true", help="sample the first run's stacks (adds a little CPU)")
    ap.add_argument("--kept", action="store_true",
                    help="also open, each round, a copy in which the checkout kept its boards (a later "
                    "server)")
    ap.add_argument("--imported", type=Path, metavar="PARQUET",
                    help="also open, each round, a store each checkout made itself by importing PARQUET as "
                    "--dataset (the very first open after an import; column boards 'import')")
    a = ap.parse_args()
    roots = ([a.base.resolve()] if a.base else []) + [REPO]
    print(f"load average {os.getloadavg()}")
    work = Path(tempfile.mkdtemp(prefix="lens-first-open-kept-"))
    try:
        sources: dict[tuple[Path, str], Path] = {(root, "none"): a.db for root in roots}
        if a.kept:
            for root in roots:
                sources[(root, "kept")], n = prime(root, a.db, a.dataset, work)
                print(f"{root}: a first server kept {n} boards in its primed copy")
        if a.imported:
            for root in roots:
                sources[(root, "import")], n, cpu = imported(root, a.imported.resolve(), a.dataset, work)
                print(f"{root}: its import kept {n} boards ({cpu:.2f} s of CPU)")
        print("| checkout | boards | round | first open | to running | script run | its thread cpu "
              "| server cpu | load |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        tops = _rounds(a, roots, sources)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for root, top in tops.items():
        if top:
            print(f"\n{root}: the first run's script thread, CPU by function (inclusive, last round)")
            print("\n".join(top))
    print(f"\nload average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
