"""Peak memory and wall time of ``leaderboard`` as a process on many models (issue 23, bug 13).

    python bench/many_models.py --models 500 1000 3000 10000 [--battles 1000000] [--dir /tmp/manymodels]
        [--rankers bt davidson rank-centrality elo] [--cap-gb 4] [--timeout 120] [--bootstrap 0]

For each model count: an arena-shaped store (``bench.count_path.generate``'s shape: one model pair per
prompt, 10 % ties, win probability rising with the model index; names wide enough for 10^5 models),
then ``python -m engine leaderboard --dataset arena --ranker R`` per ranker, one process at a time
under ``/usr/bin/time -v`` (peak RSS), with its address space capped at ``--cap-gb`` (``ulimit -v``)
and its wall time at ``--timeout`` so a runaway cannot take a shared machine down. Prints one
markdown row per run: models, ranker, wall s, peak RSS MB, and how the process ended (ok, or the
last line of its stderr). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

RANKERS = ("bt", "davidson", "rank-centrality", "elo")


def generate(db: Path, battles: int, models: int) -> None:
    """A store whose dataset ``arena`` holds ``battles`` one-pair prompts over ``models`` models
    (``bench.count_path``'s battles, model names padded to 6 digits)."""
    from bench.count_path import write_arena_store

    write_arena_store(db, battles, models, pad=6).close()


def measured(cmd: list[str], cap_gb: float, timeout_s: int) -> dict:
    """Wall seconds, peak RSS (MB) and outcome of one capped process."""
    line = (f"ulimit -v {int(cap_gb * 1024 * 1024)}; exec timeout {timeout_s} /usr/bin/time -v "
            + " ".join(shlex.quote(c) for c in cmd))
    out = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=REPO)
    err = out.stderr

    def grab(pattern: str) -> str | None:
        m = re.search(pattern, err)
        return m.group(1) if m else None

    wall = grab(r"Elapsed \(wall clock\) time.*: (\S+)")
    secs = sum(float(p) * 60 ** k for k, p in enumerate(reversed(wall.split(":")))) if wall else float("nan")
    rss = grab(r"Maximum resident set size \(kbytes\): (\d+)")
    if out.returncode == 0:
        how = "ok"
    elif out.returncode == 124:
        how = f"timed out past {timeout_s} s"
    else:
        body = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("\t", "Command"))]
        how = f"exit {out.returncode}: {body[-1][:120] if body else ''}"
    return {"wall_s": secs, "rss_mb": int(rss) / 1024 if rss else float("nan"), "how": how}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, nargs="+", default=[500, 1000, 3000, 10000])
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--rankers", nargs="+", default=list(RANKERS))
    ap.add_argument("--dir", default="/tmp/manymodels")
    ap.add_argument("--cap-gb", type=float, default=4.0)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--bootstrap", type=int, default=0)
    args = ap.parse_args()
    work = Path(args.dir)
    work.mkdir(parents=True, exist_ok=True)
    print(f"{args.battles:,} battles; address space capped at {args.cap_gb} GB, {args.timeout} s")
    print("| models | ranker | wall s | peak RSS MB | outcome |\n| --- | --- | --- | --- | --- |", flush=True)
    for n in args.models:
        db = work / f"arena-{args.battles}-{n}.duckdb"
        if not db.exists():
            generate(db, args.battles, n)
        for ranker in args.rankers:
            cmd = [sys.executable, "-m", "engine", "--db", str(db), "leaderboard", "--dataset", "arena",
                   "--ranker", ranker, "--format", "csv"]
            if args.bootstrap:
                cmd += ["--bootstrap", str(args.bootstrap)]
            r = measured(cmd, args.cap_gb, args.timeout)
            print(f"| {n:,} | {ranker} | {r['wall_s']:.1f} | {r['rss_mb']:.0f} | {r['how']} |", flush=True)


if __name__ == "__main__":
    main()
