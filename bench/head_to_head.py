"""Benchmark: ``head-to-head`` on a large battle log, as a process (wall seconds and peak RSS of the CLI).

    python bench/head_to_head.py [--battles 1000000] [--models 100] [--work /tmp/h2h-bench] [--import]

Writes a Chatbot-Arena-shaped battle log (``bench/battlegen.py``, Parquet), attaches it to a fresh store
(read in place) and, with ``--import``, also imports it (stored), then finds the pair that met most and
runs ``python -m engine head-to-head`` for that pair: the first page of 10 meetings, a page deep in the
list (offset 10,000) and one outcome. Prints one Markdown row per run with the
load average; speed is measured, never asserted (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def prepare(work: Path, battles: int, models: int, do_import: bool) -> None:
    """Write the log, attach (and import) it into a fresh store; print the datasets and the pair that met
    most, tab-separated. Run in its own process: a child forked from a process that holds the 1M-row
    import would report the parent's memory as its own peak (``ru_maxrss`` counts it from the fork)."""
    import battlegen

    from engine.ingest.importer import import_files
    from engine.ingest.shipped import open_store
    from engine.store.attached import attach

    work.mkdir(parents=True, exist_ok=True)
    log = work / f"arena_{battles}_short.parquet"
    if not log.exists():
        battlegen.write("arena", log, battles, models, seed=0, short_winners=True)
    db = work / "lens.duckdb"
    for suffix in ("", ".wal"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    datasets = ["attached"]
    with open_store(db, ensure_default=False) as store:
        attach(store, "attached", str(log))
        if do_import:
            import_files(store, [log], "stored")
            datasets.append("stored")
        a, b, met = store.cursor().execute(
            "SELECT least(model_a, model_b), greatest(model_a, model_b), count(*) AS n FROM "
            "read_parquet($f) GROUP BY 1, 2 ORDER BY n DESC LIMIT 1", {"f": str(log)}).fetchone()
    print("\t".join([",".join(datasets), a, b, str(met)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--work", type=Path, default=Path("/tmp/h2h-bench"))
    ap.add_argument("--import", dest="do_import", action="store_true", help="also import the log (stored)")
    ap.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.prepare:
        prepare(args.work, args.battles, args.models, args.do_import)
        return

    from procmeter import measure

    cmd = [sys.executable, __file__, "--prepare", "--battles", str(args.battles),
           "--models", str(args.models), "--work", str(args.work)] + (["--import"] if args.do_import else [])
    names, a, b, met_text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\t")
    met = int(met_text)
    print(f"load average {os.getloadavg()}; {args.battles:,} battles, {args.models} models; "
          f"{a} vs {b} met {met:,} times")
    print("| dataset | run | wall s | peak RSS MB | status |\n|---|---|---|---|---|")
    env = {**os.environ, "LENS_DB": str(args.work / "lens.duckdb")}
    base_run = measure([sys.executable, "-m", "engine", "datasets", "--format", "csv"], cap_gb=4,
                       timeout_s=600, cwd=ROOT, env=env)
    print(f"| (baseline) | datasets: start-up, store open, list | {base_run.wall_s:.2f} | "
          f"{base_run.peak_gb * 1024:.0f} | {base_run.status} |")
    for dataset in names.split(","):
        base = [sys.executable, "-m", "engine", "head-to-head", "--dataset", dataset, "--model-a", a,
                "--model-b", b, "--format", "csv"]
        runs = {
            "first 10 meetings": ["--limit", "10"],
            "10 meetings from 10,000": ["--limit", "10", "--offset", str(min(10_000, max(0, met - 10)))],
            "ties only, first 10": ["--outcome", "tie", "--limit", "10"],
        }
        for label, extra in runs.items():
            run = measure(base + extra, cap_gb=4, timeout_s=600, cwd=ROOT, env=env)
            print(f"| {dataset} | {label} | {run.wall_s:.2f} | {run.peak_gb * 1024:.0f} | {run.status} |")


if __name__ == "__main__":
    main()
