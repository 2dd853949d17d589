"""Benchmark (issue 26, point 4): Elo's bootstrap, PGED and Kemeny on an arena-shaped battle log, before
and after in one run.

For each source tree given (``--tree NAME=PATH``, e.g. a worktree of main and this one), on one store:

- ``cli``: ``python -m engine leaderboard --ranker elo --bootstrap 100`` as a whole process (wall seconds,
  CPU seconds user + system and peak RSS from ``/usr/bin/time -v``; CPU is the figure to compare on a
  loaded machine), its whole stdout compared between trees byte for byte;
- ``app``: the Leaderboard page's engine work (``engine.views.appstate.app_leaderboard`` with the page's
  B = 200, after the selection's graphs and votes are read, as the page's cached context holds them) for
  elo, pged and kemeny, in a fresh process per tree and ranker (wall seconds of that call).

Trees alternate run by run, and the table gives each figure's median with the load average at the start
and end. The 27k log is synthetic (``bench/battlegen.py arena``, 27,000 battles, 20 models): no real
Chatbot Arena export is on this machine. Usage:

    python bench/battlegen.py arena /tmp/arena27k.parquet --n 27000 --models 20
    python -m engine --db /tmp/a27k.duckdb import --dataset arena27k --format arena /tmp/arena27k.parquet
    python bench/rankers_app.py --db /tmp/a27k.duckdb --dataset arena27k \\
        --tree main=/work/wt/elo-base --tree new=.

At 1M x 100, the CLI process only (a COPY of the shared store; the page's PGED at 1M is out of scope);
``--elo-threads`` adds Elo's bootstrap in one process with the CPU of its main thread (the fits) and of
its drawing thread, whose larger is the bootstrap's wall on two free cores:

    cp /work/benchdata/store-app-1000000x100.duckdb /tmp/s1m.duckdb
    python bench/rankers_app.py --db /tmp/s1m.duckdb --dataset bench --rankers '' --repeats 2 \\
        --tree main=/work/wt/elo-base --tree new=.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

APP_SNIPPET = """
import sys, time
from engine.graphs.buckets import build_buckets
from engine.rankers.votes import votes
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from engine.views.appstate import SliderContext, app_leaderboard
st = Store(sys.argv[1], read_only=True)
ctx = SliderContext.of(build_buckets(st.verdicts(sys.argv[2])))
v = votes(store_vote_rows(st, sys.argv[2]))
t, c = time.perf_counter(), time.process_time()
board = app_leaderboard(ctx, ranker=sys.argv[3], keep_k=None, mu=1.0, bootstrap=200, seed=0, votes=v)
print("SECONDS", time.perf_counter() - t, time.process_time() - c)
print("HEAD", board.table[["model", "score", "ci_low", "ci_high"]].head(3).to_json(orient="values"))
"""


THREADS_SNIPPET = """
import hashlib, sys, time
import numpy as np
from engine.rankers.votes import votes
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from engine.ranking.count_bootstrap import bootstrap_counts
import engine.rankers.resample_draws as rd
v = votes(store_vote_rows(Store(sys.argv[1], read_only=True), sys.argv[2]))
drawn = {}
if hasattr(rd, "DrawnRows"):  # the tree draws in a thread: time that thread's CPU
    real = rd.DrawnRows._draw_all
    def timed(self, kernel):
        t = time.thread_time()
        try:
            return real(self, kernel)
        finally:
            drawn["cpu"] = time.thread_time() - t
    rd.DrawnRows._draw_all = timed
bootstrap_counts(v, "elo", B=2, seed=0)  # numba's caches loaded before timing
w, c, m = time.perf_counter(), time.process_time(), time.thread_time()
res = bootstrap_counts(v, "elo", B=100, seed=0)
print("SECONDS", time.perf_counter() - w, time.process_time() - c, time.thread_time() - m,
      drawn.get("cpu", 0.0))
print("HEAD", hashlib.sha256(res.samples.tobytes()).hexdigest()[:16], res.method)
"""


def threads_run(tree: str, db: str, dataset: str) -> tuple[tuple[float, ...], str]:
    """(wall, process CPU, main thread CPU, drawing thread CPU) of Elo's bootstrap (B = 100) in one
    process on ``tree``, and a digest of its samples: the main thread fits, the drawing thread (where the
    tree has one) draws, so on free cores the wall is about the larger of the two, not their sum."""
    out = subprocess.run([sys.executable, "-c", THREADS_SNIPPET, db, dataset], cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    figures = tuple(float(x) for x in re.search(r"SECONDS (\S+) (\S+) (\S+) (\S+)", out).groups())
    return figures, re.search(r"HEAD (.*)", out).group(1)


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cli_run(tree: str, db: str, dataset: str) -> tuple[float, float, float, str]:
    """(wall s, CPU s user + system, peak RSS GB, whole stdout) of the Elo bootstrap board as a process."""
    cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "engine", "--db", db, "leaderboard",
           "--dataset", dataset, "--ranker", "elo", "--bootstrap", "100", "--format", "csv"]
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr).group(1)) / 1e6
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): (\S+)", out.stderr).group(1))
              for kind in ("User", "System"))
    return wall, cpu, rss, out.stdout


def app_run(tree: str, db: str, dataset: str, ranker: str) -> tuple[float, float, str]:
    """(wall and CPU seconds of the page's engine call, its first rows) in a fresh process on ``tree``."""
    out = subprocess.run([sys.executable, "-c", APP_SNIPPET, db, dataset, ranker], cwd=tree,
                         capture_output=True, text=True, check=True).stdout
    wall, cpu = (float(x) for x in re.search(r"SECONDS (\S+) (\S+)", out).groups())
    return wall, cpu, re.search(r"HEAD (.*)", out).group(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="a store holding the battle log (read only)")
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--tree", action="append", required=True, help="NAME=PATH of a source tree (repeatable)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rankers", default="elo,pged,kemeny")
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--elo-threads", action="store_true",
                    help="also Elo's bootstrap in one process: process CPU against each thread's CPU")
    a = ap.parse_args()
    trees = dict(t.split("=", 1) for t in a.tree)
    print(f"load average at start: {load()}")
    rows: dict[tuple[str, str], list[float]] = {}
    heads: dict[tuple[str, str], set[str]] = {}
    for _ in range(a.repeats):
        for name, path in trees.items():
            if not a.skip_cli:
                wall, cpu, rss, stdout = cli_run(path, a.db, a.dataset)
                rows.setdefault((name, "cli elo --bootstrap 100 (process), wall s"), []).append(wall)
                rows.setdefault((name, "cli elo --bootstrap 100 (process), CPU s"), []).append(cpu)
                rows.setdefault((name, "cli peak RSS GB"), []).append(rss)
                heads.setdefault((name, "cli (whole stdout)"), set()).add(stdout)
            if a.elo_threads:
                figures, head = threads_run(path, a.db, a.dataset)
                for what, x in zip(("wall", "process CPU", "main thread CPU", "drawing thread CPU"), figures,
                                   strict=True):
                    rows.setdefault((name, f"elo bootstrap B=100 in process, {what} s"), []).append(x)
                heads.setdefault((name, "elo bootstrap samples (sha256, method)"), set()).add(head)
            for r in filter(None, a.rankers.split(",")):  # --rankers '' : the CLI process only
                wall, cpu, head = app_run(path, a.db, a.dataset, r)
                rows.setdefault((name, f"app {r} B=200 (engine call), wall s"), []).append(wall)
                rows.setdefault((name, f"app {r} B=200 (engine call), CPU s"), []).append(cpu)
                heads.setdefault((name, r), set()).add(head)
    print(f"load average at end: {load()}")
    print("| tree | figure | median | runs |\n| --- | --- | ---: | --- |")
    for (name, what), xs in rows.items():
        print(f"| {name} | {what} | {statistics.median(xs):.2f} | {', '.join(f'{x:.2f}' for x in xs)} |")
    kinds = {k for _, k in heads}
    for k in sorted(kinds):
        seen = {h for (n, kk), hs in heads.items() if kk == k for h in hs}
        verdict = "the same in every run and tree" if len(seen) == 1 else f"DIFFER: {sorted(seen)[:2]}"
        print(f"{k}: {verdict}")


if __name__ == "__main__":
    main()
