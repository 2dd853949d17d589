"""CPU seconds of the app's first runs of pages, in process (Streamlit's AppTest), before (a second checkout)
and after (this one) alternating, each on its own copy of a store; the load average beside them.

    python bench/first_run_cpu.py --db /work/benchdata/store-app-1000000x100.duckdb --dataset bench \
        --base /tmp/base-lb1m --pages ,,prompt-inspector,prompt-inspector --rounds 3

A browser's wall clock on a shared 2-core machine under load 10-40 says little; the process's CPU does. The
Leaderboard's deferred bootstrap job is not started here (its thread's CPU would run into the next page's
window): what is measured is each page run's own work, DuckDB's threads included. The first run also pays
AppTest's one-time scan of installed components (about 1 s, which a server does at start). Pages are url
paths ('' for the Leaderboard); nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import os, resource, shutil, sys, tempfile
from concurrent.futures import Future
from pathlib import Path
repo, src, dataset, pages = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].split(",")
ranker = sys.argv[5] if len(sys.argv) > 5 else ""
tmp = tempfile.mkdtemp(prefix="lens-firstrun-")
db = os.path.join(tmp, "lens.duckdb")
shutil.copyfile(src, db)
os.chdir(repo)
sys.path.insert(0, str(repo))
os.environ["LENS_DB"] = db
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash
from app_pages import _lbopen_cache
_lbopen_cache.BootstrapJobs.get = lambda self, key, start: Future()  # never run: no thread in the window
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
at = AppTest.from_file(str(repo / "app.py"), default_timeout=600)
at.query_params.update({"dataset": dataset, **({"ranker": ranker} if ranker else {})})
out = []
for p in pages:
    at._page_hash = calc_hash(p) if p else ""
    c = cpu()
    at.run()
    out.append(f"{cpu() - c:.2f}")
    assert not at.exception, [e.value for e in at.exception]
print(" | ".join(out))
shutil.rmtree(tmp)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--base", help="a second checkout (e.g. a worktree of main), run before this one")
    ap.add_argument("--pages", default=",,prompt-inspector,prompt-inspector",
                    help="url paths in order, comma-separated ('' = the Leaderboard)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranker", default="",
                    help="the sidebar's ranker (as a link's ?ranker=; '' = the default)")
    a = ap.parse_args()
    roots = ([Path(a.base).resolve()] if a.base else []) + [REPO]
    names = [p or "leaderboard" for p in a.pages.split(",")]
    print(f"load average {os.getloadavg()}")
    print("| checkout | round | " + " | ".join(names) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in names) + " |")
    for r in range(a.rounds):
        for root in roots:
            got = subprocess.run([sys.executable, "-c", CHILD, str(root), a.db, a.dataset, a.pages, a.ranker],
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            print(f"| {root} | {r + 1} | {got} |", flush=True)
    print(f"load average after {os.getloadavg()}")


if __name__ == "__main__":
    main()
