"""Peak memory and wall time of a CSV import of N battle rows, as the command line runs it.

Run: ``python bench/ingest_memory.py ROWS [FOLDER]`` — writes FOLDER/battles_ROWS.csv (7 columns,
about 63 bytes a row: 1.45M rows ≈ 90 MB), a bootstrapped store, then runs
``/usr/bin/time -v python -m engine --db … import … --dataset b`` and prints its wall time and peak
RSS with the load average. Numbers go to docs/notes/ingest.md (no targets asserted: shared box).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent


def write_battles(rows: int, out: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    models = np.array([f"model-{i:02d}-instruct" for i in range(40)])
    a = rng.integers(0, 40, rows)
    b = (a + rng.integers(1, 40, rows)) % 40
    pd.DataFrame({
        "prompt_id": np.char.add("q", (np.arange(rows) // 20).astype(str)), "model_a": models[a],
        "model_b": models[b], "winner": rng.choice(["A", "B", "tie"], rows),
        "judge": rng.choice(["gpt-4", "claude"], rows), "order": rng.choice(["AB", "BA"], rows),
        "annotator": np.char.add("u", np.arange(rows).astype(str)),
    }).to_csv(out, index=False)


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    folder = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/lens-bench-ingest")
    folder.mkdir(parents=True, exist_ok=True)
    csv = folder / f"battles_{rows}.csv"
    if not csv.exists():
        write_battles(rows, csv)
    base = folder / "base.duckdb"
    if not base.exists():
        subprocess.run([sys.executable, "-m", "engine", "--db", str(base), "datasets"], cwd=REPO, check=True,
                       capture_output=True)
    db = folder / "run.duckdb"
    shutil.copy(base, db)
    load = os.getloadavg()[0]
    proc = subprocess.run(
        [
            "/usr/bin/time",
            "-v",
            sys.executable,
            "-m",
            "engine",
            "--db",
            str(db),
            "import",
            str(csv),
            "--dataset",
            "b",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    print(f"{rows:,} rows, {csv.stat().st_size / 2**20:.0f} MiB: wall {wall.group(1) if wall else '?'}, "
          f"peak RSS {int(rss.group(1)) / 2**20:.2f} GiB, load {load:.1f} (exit {proc.returncode})")


if __name__ == "__main__":
    main()
