"""App benchmark: how long each page takes to open in a real browser, and the server's peak RSS.

    python bench/app_page_timing.py --db STORE --dataset NAME [--cap-gb 8] [--timeout 300]
    python bench/app_page_timing.py --battles 1m --models 100        # builds the store itself first
    python bench/app_page_timing.py --db STORE --dataset vicuna80 --new-tabs 5 [--base ../main]

Starts ``streamlit run app.py`` on the store (bench/browser_timing.py), opens ``/?dataset=NAME`` in
headless Chromium at 1280 px, then visits every page through the sidebar twice: the first visit
computes (cold caches), the second is what a user sees once the page's results are cached.
With ``--new-tabs N`` it then opens every page N times in a new tab (a new Streamlit session; the
first tab stays open, every page already visited in it) and reports the median: what a new session
pays on a warm server.

A page is done when Streamlit's script state (``data-test-script-state`` on the app root) has gone
to ``notRunning`` after ``running``, timed on the page's own clock from the click or the navigation's
start; not when the running indicator is gone (it shows only 500 ms into a run, so a page could be
called done before its run began). A page that reruns itself is reported at its first stop; the
settled column, when it differs, is its last stop. Beside each wall time, the server's CPU seconds
for the same open (its process tree's user + system time), which a loaded machine inflates less; for a
new tab also the browser's CPU seconds (every Chromium process), where most of a new tab's time goes.
``--base CHECKOUT`` measures a second checkout (e.g. a worktree of main) on a copy of the same store
in the same run, before this one. The server's process-tree RSS is polled throughout; past
``--cap-gb`` the server is killed and the rest reported as not measured. Prints Markdown tables and
the load average; nothing is asserted. ``--stall-dump S``: while a page has run S seconds (and every S
seconds after), the server writes every thread's Python stack (faulthandler on SIGUSR1, installed by a
``sitecustomize`` on the server's path) to ``$TMPDIR/lens-stacks-*.txt`` (named in the report): what
a page that stalls is waiting on.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from browser_timing import (  # noqa: E402
    PAGES,
    Opened,
    RssWatch,
    chromium_cpu_s,
    click_timed,
    launch,
    open_timed,
    page_link,
    serve,
    tree_cpu_s,
)


def load_average() -> str:
    """The machine's load average now (1, 5, 15 min), for the report."""
    out = subprocess.run(["uptime"], capture_output=True, text=True).stdout
    return out.strip().split("load average:")[-1].strip()


def server_cpu_s(watch: RssWatch) -> float:
    """The server process tree's CPU seconds so far (user + system)."""
    return tree_cpu_s(watch.proc)


def cpu_since(before: dict[int, float], after: dict[int, float]) -> float:
    """The CPU seconds the processes alive at ``after`` spent since ``before`` (a process that started
    in between counts whole; one that ended in between, e.g. a closed tab's renderer, is left out rather
    than subtracted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def _new_tab_cpu_timed(watch: RssWatch, context, url: str, timeout_s: float) -> tuple[Opened, float, float]:
    """``url`` opened in a new tab (a new session): the time, and the server's and the browser's CPU
    seconds from the navigation to the page's settled state (the tab closed after both are read)."""
    tab = context.new_page()
    try:
        server0, browser0 = server_cpu_s(watch), chromium_cpu_s()
        opened = open_timed(tab, url, timeout_s, watch)
        return opened, server_cpu_s(watch) - server0, cpu_since(browser0, chromium_cpu_s())
    finally:
        tab.close()


def _cpu_timed(watch: RssWatch, action, *args) -> tuple[Opened, float]:
    """``action(*args)`` and the server's CPU seconds it took."""
    before = server_cpu_s(watch)
    opened = action(*args)
    return opened, server_cpu_s(watch) - before


STACK_HOOK = """import faulthandler, os, signal
faulthandler.register(signal.SIGUSR1, file=open(os.environ["LENS_STACK_DUMP"], "a"), all_threads=True)
"""
"""The server's ``sitecustomize`` under ``--stall-dump``: SIGUSR1 appends every thread's stack to a file."""


def _stall_env(root: Path, hook_dir: Path) -> dict[str, str]:
    """The server's environment for stack dumps: the hook first on its path, the dump file named."""
    (hook_dir / "sitecustomize.py").write_text(STACK_HOOK)
    dump = Path(tempfile.gettempdir()) / f"lens-stacks-{os.getpid()}-{time.time():.0f}.txt"
    return {"PYTHONPATH": f"{hook_dir}{os.pathsep}{root}", "LENS_STACK_DUMP": str(dump)}


class _StallDumps:
    """While a page is timed: after ``every`` seconds, and each ``every`` seconds after, signal the server
    to dump its threads' stacks (``STACK_HOOK``), noting the time and the page in the dump file."""

    def __init__(self, watch: RssWatch, every: float, dump: Path, label: str):
        self.watch, self.every, self.dump, self.label = watch, every, dump, label
        self.done = threading.Event()
        self.count = 0

    def __enter__(self):
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def _run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(self.every):
            with open(self.dump, "a") as out:
                out.write(f"\n=== {self.label}: {time.monotonic() - start:.1f} s into the open, load "
                          f"{load_average()} ===\n")
            os.kill(self.watch.proc.pid, signal.SIGUSR1)
            self.count += 1

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


def measure_pages(db: Path, dataset: str, cap_gb: float, timeout_s: float, root: Path = REPO,
                  pages: list[str] | None = None, new_tabs: int = 0, stall_dump: float = 0.0,
                  cold: bool = False) -> str:
    """Every page opened twice in one tab (computing, then cached), then ``new_tabs`` times each in a
    new tab; Markdown tables. ``stall_dump``: stack dumps of a page that runs that long (``_StallDumps``).
    ``cold``: the browser is started before the server and the first page asked for as soon as the server
    answers (``--cold``), and the report adds the server's start and the wait from ``streamlit run``."""
    log = Path(db).with_suffix(".streamlit.log")
    hook_dir = Path(tempfile.mkdtemp(prefix="lens-stack-hook-"))
    env = _stall_env(root, hook_dir) if stall_dump > 0 else {}
    dumps = 0
    order = list(PAGES) if pages is None else pages
    rows: dict[str, list] = {p: [] for p in order}
    tabs: dict[str, list[tuple[Opened, float, float]]] = {p: [] for p in order}
    with contextlib.ExitStack() as stack:
        if cold:  # the browser first, the first page asked for the moment the server answers
            context = stack.enter_context(launch())
            page = context.new_page()
            url, watch = stack.enter_context(serve(db, log, root, cap_gb=cap_gb, poll_s=0.02, **env))
        else:
            url, watch = stack.enter_context(serve(db, log, root, cap_gb=cap_gb, **env))
            context = stack.enter_context(launch())
            page = context.new_page()
        for visit in (0, 1):
            for i, path in enumerate(order):
                if watch.killed:
                    break
                stalls = _StallDumps(watch, stall_dump, Path(env.get("LENS_STACK_DUMP", "/dev/null")),
                                     f"visit {visit + 1} {PAGES[path][1]}")
                with stalls if stall_dump > 0 else contextlib.nullcontext():
                    if (visit == 0 and i == 0) or len(order) == 1:  # by address (one page: a reload)
                        opened, cpu = _cpu_timed(watch, open_timed, page, f"{url}/{path}?dataset={dataset}",
                                                 timeout_s, watch)
                    else:  # through the sidebar, in the same session
                        opened, cpu = _cpu_timed(watch, click_timed, page, page_link(path), timeout_s, watch)
                dumps += stalls.count
                rows[path].append((opened, cpu))
                print(f"  visit {visit + 1} {PAGES[path][1]:<18} {_f(opened.first_s)} {opened.note} "
                      f"(server cpu {cpu:.2f} s, {watch.peak / 1024**3:.2f} GB)", flush=True)
        after_pages = watch.last
        for _ in range(new_tabs):
            for path in order:
                if watch.killed:
                    break
                opened, cpu, bcpu = _new_tab_cpu_timed(watch, context, f"{url}/{path}?dataset={dataset}",
                                                       timeout_s)
                tabs[path].append((opened, cpu, bcpu))
                print(f"  new tab {PAGES[path][1]:<18} {_f(opened.first_s)} {opened.note} "
                      f"(server cpu {cpu:.2f} s, browser cpu {bcpu:.2f} s)", flush=True)
        peak, killed, up_s = watch.peak, watch.killed, watch.up_s
    lines = ["| page | first open (computes) | server cpu | open again (cached) | server cpu | note |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    for path, visits in rows.items():
        cells, notes = [], []
        for opened, cpu in visits:
            settled = ("" if opened.settled_s in (None, opened.first_s)
                       else f" (settled {_f(opened.settled_s)})")
            cells += [_f(opened.first_s) + settled, f"{cpu:.2f} s"]
            notes.append(opened.note)
        cells += ["—"] * (4 - len(cells))
        lines.append(f"| {PAGES[path][1]} | {' | '.join(cells)} | {'; '.join(n for n in notes if n)} |")
    if new_tabs:
        lines += ["", f"| page in a new tab (median of {new_tabs}) | wall (min-max) | server cpu "
                      "| browser cpu |", "| --- | ---: | ---: | ---: |"]
        for path, opens in tabs.items():
            walls = [o.first_s for o, _, _ in opens if o.first_s is not None]
            cpus = [c for o, c, _ in opens if o.first_s is not None]
            bcpus = [b for o, _, b in opens if o.first_s is not None]
            if not walls:
                lines.append(f"| {PAGES[path][1]} | — | — | — |")
                continue
            spread = f"({min(walls):.2f}-{max(walls):.2f})"
            lines.append(f"| {PAGES[path][1]} | {_f(statistics.median(walls))} {spread} "
                         f"| {statistics.median(cpus):.2f} s | {statistics.median(bcpus):.2f} s |")
    lines.append("")
    if stall_dump > 0:
        lines.append(f"Stack dumps (pages running past {stall_dump:g} s): {dumps}"
                     + (f", in {env['LENS_STACK_DUMP']}" if dumps else "") + ".")
    shutil.rmtree(hook_dir, ignore_errors=True)
    first = next(iter(rows.values()), [])
    if cold and up_s is not None and first and first[0][0].first_s is not None:
        lines.append(f"Server up (process start to its first health answer) {up_s:.2f} s; from `streamlit "
                     f"run` to the first page drawn {up_s + first[0][0].first_s:.2f} s.")
    lines.append(f"Server peak RSS {peak / 1024**3:.2f} GB, {after_pages / 1024**3:.2f} GB after every page"
                 + (f" — killed past {cap_gb:g} GB" if killed else "") + ".")
    return "\n".join(lines)


def _f(s: float | None) -> str:
    return "—" if s is None else f"{s:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path)
    ap.add_argument("--dataset", default="bench")
    ap.add_argument(
        "--battles", default="1m", help="with no --db: build a store with this many arena battles"
    )
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--work", default="/tmp/lens-bench")
    ap.add_argument("--cap-gb", type=float, default=8.0)
    ap.add_argument(
        "--timeout", type=float, default=300.0, help="seconds a page may take before it is given up"
    )
    ap.add_argument(
        "--repo", type=Path, default=REPO, help="the checkout whose app is served (default: this one)"
    )
    ap.add_argument("--base", type=Path,
                    help="a second checkout (e.g. a worktree of main) measured first, on a copy of the store")
    ap.add_argument("--new-tabs", type=int, default=0, metavar="N",
                    help="then open every page N times in a new tab (median reported)")
    ap.add_argument(
        "--pages",
        help="url paths to visit, in order, comma-separated ('' or 'leaderboard' for the first "
        f"page; default all: {','.join(p or 'leaderboard' for p in PAGES)})",
    )
    ap.add_argument("--cold", action="store_true",
                    help="start the browser before the server and open the first page the moment the server "
                    "answers, as `streamlit run` opening a browser does (the server gets no idle head start "
                    "while Chromium launches); also reports the server's start")
    ap.add_argument("--stall-dump", type=float, default=0.0, metavar="S",
                    help="dump the server's thread stacks while a page has run S seconds (and every S after)")
    a = ap.parse_args()
    db = a.db
    if db is None:
        import battlegen
        from product import engine_cmd, fresh_store, parse_count
        n = parse_count(a.battles)
        work = Path(a.work)
        pq = work / f"arena-{n}x{a.models}.parquet"
        if not pq.exists():
            battlegen.write("arena", pq, n, a.models)
        db = work / f"store-app-{n}x{a.models}.duckdb"
        if not db.exists():
            fresh_store(db)
            subprocess.run(
                engine_cmd(
                    db,
                    "import",
                    str(pq),
                    "--dataset",
                    a.dataset,
                    "--skip-invalid",
                    "--rejected",
                    str(work / "rejected-app.csv"),
                ),
                cwd=a.repo,
                check=True,
                capture_output=True,
            )
    pages = None if a.pages is None else ["" if p in ("", "leaderboard") else p for p in a.pages.split(",")]
    unknown = [p for p in pages or [] if p not in PAGES]
    if unknown:
        raise SystemExit(f"unknown page(s) {unknown}; pages: {list(PAGES)}")
    runs = ([("base", a.base)] if a.base else []) + [("this checkout", a.repo)]
    for label, root in runs:
        with tempfile.TemporaryDirectory(prefix="lens-pages-") as tmp:  # the app may write: a copy
            copy = Path(tmp) / Path(db).name
            shutil.copyfile(db, copy)
            print(f"\n{label} ({root}) on {db} (dataset {a.dataset}), load average {load_average()}")
            print(measure_pages(copy, a.dataset, a.cap_gb, a.timeout, root, pages, a.new_tabs, a.stall_dump,
                                a.cold),
                  flush=True)
            print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
