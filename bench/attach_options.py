"""Issue 25, ``datasets attach`` with the import's options: the same raw LMSYS-shaped battle log
(``question_id``, ``winner`` as ``model_a`` / ``tie (bothbad)``, the voter under ``judge``, ``tstamp``,
``anony``) read in place with ``--format arena`` and imported with it, each followed by the leaderboard a
user then asks for. Every command runs as a process (``bench/procmeter.py``: wall time, peak RSS of the
process tree); the two paths' boards must agree.

    python bench/attach_options.py --n 300000 --models 100
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import battlegen  # noqa: E402
from procmeter import measure  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def raw_log(path: Path, n: int, models: int, seed: int) -> None:
    """battlegen's arena log in the Arena's own field names and winner spellings."""
    writer = None
    rng = np.random.default_rng(seed)
    try:
        for t in battlegen.arena_chunks(n, models, seed):
            voter = pa.array(np.char.add("arena_user_", rng.integers(0, 5000, t.num_rows).astype(str)))
            raw = pa.table({"question_id": t["prompt_id"], "model_a": t["model_a"], "model_b": t["model_b"],
                            "winner": t["winner"], "judge": voter, "tstamp": t["tstamp"],
                            "anony": pa.array([True] * t.num_rows), "num": t["battle_id"]})
            writer = writer or pq.ParquetWriter(path, raw.schema, compression="zstd")
            writer.write_table(raw)
    finally:
        if writer is not None:
            writer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="attach-options-"))
    try:
        log = work / "battles.parquet"
        raw_log(log, args.n, args.models, args.seed)
        db = str(work / "lens.duckdb")
        engine = [sys.executable, "-m", "engine", "--db", db]
        measure([*engine, "datasets"], cap_gb=8, timeout_s=600, cwd=REPO)  # the shipped import, not timed
        steps = [
            ("attach --format arena", [*engine, "datasets", "attach", "att", str(log), "--format", "arena"]),
            ("leaderboard (attached)", [*engine, "leaderboard", "--dataset", "att", "--format", "csv"]),
            ("import --format arena", [*engine, "import", str(log), "--dataset", "imp", "--format", "arena"]),
            ("leaderboard (imported)", [*engine, "leaderboard", "--dataset", "imp", "--format", "csv"]),
            ("diagnose position (attached)", [*engine, "diagnose", "--dataset", "att", "--table", "position",
                                              "--format", "csv"]),
        ]
        boards = {}
        print(f"{args.n:,} battles, {args.models} models, {log.stat().st_size / 2**20:.1f} MiB Parquet")
        print("| step | wall s | peak RSS GB | status |")
        print("| --- | ---: | ---: | --- |")
        for name, cmd in steps:
            run = measure(cmd, cap_gb=8, timeout_s=1200, cwd=REPO, out_path=work / "out.txt")
            print(f"| {name} | {run.wall_s:.1f} | {run.peak_gb:.2f} | {run.status} |")
            boards[name] = (work / "out.txt").read_text()
        same = boards["leaderboard (attached)"] == boards["leaderboard (imported)"]
        print(f"boards identical: {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
