"""App benchmark: how long each page takes to open in a real browser, and the server's peak RSS.

    python bench/app_page_timing.py --db STORE --dataset NAME [--cap-gb 8] [--timeout 300]
    python bench/app_page_timing.py --battles 1m --models 100        # builds the store itself first

Starts ``streamlit run app.py`` on the store (as tests/test_browser.py does, with the helpers of
tests/browser_support.py),
opens ``/?dataset=NAME`` in headless Chromium, then visits every page through the sidebar twice:
the first visit computes (cold caches), the second is what a user sees once the page's results
are cached. A page "opens" when its title is drawn and Streamlit's running indicator has been gone
0.5 s (the browser test's ``wait_idle``; the 0.5 s is subtracted). The server's process-tree RSS is
polled throughout; past ``--cap-gb`` the server is killed and the rest reported as not measured.
Prints a Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "bench")]

from browser_support import CHROME_ARGS, CHROMIUM, PAGES, _free_port, errors_on, wait_idle  # noqa: E402
from procmeter import _kill_tree, _tree_rss  # noqa: E402

QUIET_S = 0.5  # wait_idle's quiet period, not part of the page's time


class RssWatch(threading.Thread):
    """Polls a process tree's RSS; kills it past the cap."""

    def __init__(self, pid: int, cap_gb: float):
        super().__init__(daemon=True)
        self.proc, self.pid, self.cap = psutil.Process(pid), pid, cap_gb * 1024**3
        self.peak, self.killed, self.stop = 0, False, False

    def run(self) -> None:
        while not self.stop:
            self.peak = max(self.peak, _tree_rss(self.proc))
            if self.peak > self.cap:
                self.killed = True
                _kill_tree(self.pid)
                return
            time.sleep(0.05)


def start_server(db: Path, log: Path, root: Path = REPO) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` of the checkout ``root`` on the store ``db``; the process and its URL."""
    port = _free_port()
    env = {**os.environ, "LENS_DB": str(db), "PYTHONPATH": str(root)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--server.fileWatcherType",
            "none",
            "--browser.gatherUsageStats",
            "false",
        ],
        cwd=root,
        env=env,
        stdout=open(log, "wb"),  # noqa: SIM115 - the server writes it until it is stopped
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    import urllib.request
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.3)
    _kill_tree(proc.pid)
    raise SystemExit("streamlit did not come up: " + log.read_text()[-1500:])


def timed_open(
    page, url: str | None, path: str, timeout_s: float, watch: RssWatch
) -> tuple[float | None, str]:
    """Open one page (by URL when given, else through the sidebar); seconds to idle, and a note."""
    t0 = time.perf_counter()
    try:
        if url is not None:
            page.goto(url)
        else:
            page.click(f'[data-testid="stSidebarNav"] a[href$="/{path}"]' if path
                       else '[data-testid="stSidebarNav"] a >> nth=0')
    except Exception as exc:  # a dead server: reported, not raised
        return None, type(exc).__name__
    while True:  # in short waits, so a server killed past its cap ends the wait at once
        try:
            wait_idle(page, PAGES[path][1], timeout_s=10)
            break
        except Exception:
            if watch.killed:
                return None, "server killed"
            if time.perf_counter() - t0 > timeout_s:
                return None, f"not open after {timeout_s:g} s"
    errors = errors_on(page)
    return time.perf_counter() - t0 - QUIET_S, ("error box: " + errors[0][:80]) if errors else ""


def measure_pages(db: Path, dataset: str, cap_gb: float, timeout_s: float, root: Path = REPO,
                  pages: list[str] | None = None) -> str:
    """Every page opened twice (computing, then cached) in headless Chromium; a Markdown table."""
    from playwright.sync_api import sync_playwright

    log = Path(db).with_suffix(".streamlit.log")
    server, url = start_server(db, log, root)
    watch = RssWatch(server.pid, cap_gb)
    watch.start()
    order = list(PAGES) if pages is None else pages
    rows: dict[str, list] = {p: [None, "", None, ""] for p in order}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1440, "height": 1300})
            for visit in (0, 1):
                for i, path in enumerate(order):
                    if watch.killed:
                        break
                    first_load = visit == 0 and i == 0
                    secs, note = timed_open(
                        page,
                        f"{url}/{path}?dataset={dataset}" if first_load else None,
                        path,
                        timeout_s,
                        watch,
                    )
                    rows[path][2 * visit: 2 * visit + 2] = [secs, note]
                    print(
                        f"  visit {visit + 1} {PAGES[path][1]:<18} "
                        f"{'-' if secs is None else f'{secs:.2f} s'} {note} (server "
                        f"{watch.peak / 1024**3:.2f} GB)",
                        flush=True,
                    )
            browser.close()
    finally:
        watch.stop = True
        _kill_tree(server.pid)
    def f(s: float | None) -> str:
        return "—" if s is None else f"{s:.2f} s"

    lines = ["| page | first open (computes) | open again (cached) | note |", "| --- | ---: | ---: | --- |"]
    for path, (cold, n1, warm, n2) in rows.items():
        lines.append(f"| {PAGES[path][1]} | {f(cold)} | {f(warm)} | {'; '.join(x for x in (n1, n2) if x)} |")
    peak = watch.peak / 1024**3
    lines.append("")
    lines.append(
        f"Server peak RSS {peak:.2f} GB" + (f" — killed past {cap_gb:g} GB" if watch.killed else "") + "."
    )
    return "\n".join(lines)


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
    ap.add_argument(
        "--pages",
        help="url paths to visit, in order, comma-separated ('' or 'leaderboard' for the first "
        f"page; default all: {','.join(p or 'leaderboard' for p in PAGES)})",
    )
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
    print(
        f"app pages on {db} (dataset {a.dataset}), "
        f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}",
        file=sys.stderr,
    )
    pages = None if a.pages is None else ["" if p in ("", "leaderboard") else p for p in a.pages.split(",")]
    unknown = [p for p in pages or [] if p not in PAGES]
    if unknown:
        raise SystemExit(f"unknown page(s) {unknown}; pages: {list(PAGES)}")
    print(measure_pages(db, a.dataset, a.cap_gb, a.timeout, a.repo, pages))


if __name__ == "__main__":
    main()
