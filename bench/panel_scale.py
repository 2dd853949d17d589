"""The judge panel at scale (issue 28): ``leaderboard --ranker panel`` on 1M verdicts x 100 models x 4 judges,
timed as the process a user runs, with its peak memory, beside ``leaderboard --ranker bt`` (the pooled
count path) on the same data in the same run.

Data: drawn from the panel's own model (strengths N(0, 1); reliabilities 0.9, 0.7, 0.5, 0.3; side biases
0.5, 0.6, 0.4, 0.7; 5 % ties; presentation order AB with model_a the first shown), written to one Parquet
file and attached to a new store in place (``datasets attach``; the files are read on every use).

    python bench/panel_scale.py [--verdicts 1000000] [--models 100] [--work /tmp/panel_scale]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


def write_data(path: Path, n_verdicts: int, n_models: int, seed: int = 0) -> None:
    """The drawn verdicts as canonical columns in one Parquet file."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    s = rng.normal(size=n_models)
    rel, bias = np.array([0.9, 0.7, 0.5, 0.3]), np.array([0.5, 0.6, 0.4, 0.7])
    j = rng.integers(0, 4, n_verdicts)
    a = rng.integers(0, n_models, n_verdicts)
    b = (a + rng.integers(1, n_models, n_verdicts)) % n_models
    p_first = rel[j] / (1 + np.exp(-(s[a] - s[b]))) + (1 - rel[j]) * bias[j]
    tie = rng.random(n_verdicts) < 0.05
    winner = np.where(tie, "tie", np.where(rng.random(n_verdicts) < p_first, "A", "B"))
    names = np.array([f"model-{k:03d}" for k in range(n_models)])
    judges = np.array(["j1", "j2", "j3", "j4"])
    pd.DataFrame({"prompt_id": np.arange(n_verdicts).astype(str), "judge": judges[j],
                  "model_a": names[a], "model_b": names[b], "winner": winner, "order": "AB"}).to_parquet(path)


def main() -> int:
    from procmeter import measure

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdicts", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--work", default="/tmp/panel_scale")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    data, db = work / f"panel-{args.verdicts}x{args.models}.parquet", work / "store.duckdb"
    if not data.exists():
        write_data(data, args.verdicts, args.models)
    if db.exists():
        db.unlink()
    engine = [sys.executable, "-m", "engine", "--db", str(db)]
    subprocess.run([*engine, "datasets", "attach", "big", str(data), "--format", "parquet"], check=True,
                   cwd=REPO, capture_output=True)
    print(f"load average {os.getloadavg()[0]:.2f}; {args.verdicts} verdicts x {args.models} models, 4 judges")
    for ranker in ("bt", "panel", "bt", "panel"):
        run = measure([*engine, "leaderboard", "--dataset", "big", "--ranker", ranker, "--format", "csv"],
                      cap_gb=4.0, timeout_s=300, cwd=REPO, out_path=work / f"{ranker}.csv")
        print(f"{ranker:6s} {run.status:8s} wall {run.wall_s:6.2f} s  peak {run.peak_gb:5.2f} GB")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
