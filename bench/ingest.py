"""Ingest speed: validating a verdict file against pandas merely parsing it, and the shipped bootstrap.

Run: ``python bench/ingest.py [ROWS]``. Prints a small table; ratios are measured in the same run
(no absolute targets: the machine is shared). Validation does more than parsing (every row checked,
duplicates, line numbers), so the ratio to ``pd.read_csv`` is the cost of those checks.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.ingest.importer import store_report  # noqa: E402
from engine.ingest.shipped import vicuna80_report  # noqa: E402
from engine.ingest.verdicts import validate_bytes  # noqa: E402
from engine.store.connection import Store  # noqa: E402


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = np.array([f"model-{i}" for i in range(12)])
    a = rng.integers(0, 12, rows)
    b = (a + rng.integers(1, 12, rows)) % 12
    return pd.DataFrame({
        "judge": rng.choice(["j1", "j2", "j3"], rows), "prompt_id": np.arange(rows) // 66,
        "variant": rng.integers(0, 3, rows), "model_a": models[a], "model_b": models[b],
        "winner": rng.choice(["A", "B", "tie", "error"], rows), "order": rng.choice(["AB", "BA"], rows),
        "prob_a": np.round(rng.random(rows), 4), "explanation": "because",
    })


def best(f, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    data = table(rows).to_csv(index=False).encode()
    t_pd = best(lambda: pd.read_csv(io.BytesIO(data)))
    t_val = best(lambda: validate_bytes(data, "bench.csv", dataset="b"))
    rep = validate_bytes(data, "bench.csv", dataset="b")
    t_report = best(vicuna80_report, repeat=2)
    report = vicuna80_report()
    with tempfile.TemporaryDirectory() as d:
        def store_once(i=[0]):  # noqa: B006 - a fresh store file per repeat
            i[0] += 1
            with Store(Path(d) / f"s{i[0]}.duckdb") as s:
                store_report(s, report, "vicuna80")
        t_store = best(store_once, repeat=2)
    print(
        f"validate {rows:,} CSV rows: {t_val:.2f} s   pd.read_csv: {t_pd:.2f} s   ratio {t_val / t_pd:.1f}x  "
        " "
        f"({rows / t_val:,.0f} rows/s; good {rep.n_good:,}, rejected {rep.n_rejected:,})"
    )
    print(f"shipped vicuna80: build from raw {t_report:.2f} s + store {t_store:.2f} s "
          f"({report.rows_read:,} verdicts, {len(report.answers)} answers)")


if __name__ == "__main__":
    main()
