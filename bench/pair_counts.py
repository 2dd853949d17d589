"""Pair counts on the shipped Chatbot Arena 2024-08-14 aggregate, beside leaderbot on the same data.

Rows (each command a measured process: wall time, peak RSS of its tree, bench/procmeter.py):

1. ``python -m engine import pair_counts.csv`` into a fresh store (the shipped datasets skipped);
2. ``python -m engine leaderboard`` (half-tie BT) with 200 bootstrap resamples over the 1,670,250 battles;
3. ``python -m engine diagnose --table majority``;
4. leaderbot 0.4.3's own ``BradleyTerry`` fit (its own virtual environment, ``--leaderbot-python``) on
   its own data file, and ours on the same counts without ties (leaderbot's Bradley-Terry leaves ties
   out): the two score vectors compared (Spearman rank correlation, largest score gap after centring).

Usage: python bench/pair_counts.py --leaderbot-python /work/venvs/leaderbot/bin/python \
           --leaderbot-json <site-packages>/leaderbot/data/chatbotarena_20240814.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from procmeter import measure  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CSV = REPO / "data" / "chatbot_arena_2024_08_14" / "pair_counts.csv"
LEADERBOT = """
import json, sys, time, numpy as np, leaderbot
data = leaderbot.data.load(sys.argv[1], tie='none')
t = time.perf_counter()
model = leaderbot.models.BradleyTerry(data)
model.train()
print(json.dumps({"seconds": time.perf_counter() - t, "models": list(data["models"]),
                  "scores": np.asarray(model.param[:len(data["models"])]).tolist()}))
"""


def engine(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "engine", "--db", str(db), *args]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--leaderbot-python", type=Path)
    ap.add_argument("--leaderbot-json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pair_counts_bench_"))
    db = tmp / "lens.duckdb"
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.connection import Store
    from engine.store.init_log import record_init_step

    with Store(db) as store:
        record_init_step(store, INIT_STEP, "bench: no default dataset")
        record_init_step(store, INIT_STEP_ARENA_COUNTS, "bench: imported by the measured command")
    rows = []
    for name, cmd in (
        ("import", engine(db, "import", str(CSV), "--dataset", "arena")),
        ("leaderboard bt, B=200", engine(db, "leaderboard", "--dataset", "arena", "--bootstrap", "200",
                                         "--format", "csv")),
        ("leaderboard bt, sandwich", engine(db, "leaderboard", "--dataset", "arena", "--ci", "sandwich",
                                            "--format", "csv")),
        ("diagnose --table majority", engine(db, "diagnose", "--dataset", "arena", "--table", "majority",
                                             "--format", "csv")),
    ):
        run = measure(cmd, cap_gb=4.0, timeout_s=600, cwd=REPO)
        rows.append((name, run.wall_s, run.peak_gb, run.status))
    if args.leaderbot_python is not None:
        no_ties = pd.read_csv(CSV).assign(ties=0, both_bad=0)
        no_ties_csv = tmp / "no_ties.csv"
        no_ties.to_csv(no_ties_csv, index=False)
        subprocess.run(engine(db, "import", str(no_ties_csv), "--dataset", "arena_no_ties"), check=True,
                       cwd=REPO, capture_output=True)
        ours_out = tmp / "ours.csv"
        ours_run = measure(engine(db, "leaderboard", "--dataset", "arena_no_ties", "--format", "csv"),
                           cap_gb=4.0, timeout_s=600, cwd=REPO, out_path=ours_out)
        rows.append(("leaderboard bt, no ties", ours_run.wall_s, ours_run.peak_gb, ours_run.status))
        lb_out = tmp / "leaderbot.json"
        lb_run = measure([str(args.leaderbot_python), "-c", LEADERBOT, str(args.leaderbot_json)], cap_gb=4.0,
                         timeout_s=600, out_path=lb_out)
        rows.append(("leaderbot BradleyTerry (process)", lb_run.wall_s, lb_run.peak_gb, lb_run.status))
        lb = json.loads(lb_out.read_text().strip().splitlines()[-1])
        theirs = pd.Series(lb["scores"], index=lb["models"])
        ours = pd.read_csv(ours_out).set_index("model")["score"]
        theirs, ours = theirs - theirs.mean(), ours.reindex(theirs.index)
        ours = ours - ours.mean()
        rho = ours.rank().corr(theirs.rank())
        scale = float(np.dot(ours, theirs) / np.dot(theirs, theirs))
        print(f"leaderbot fit alone: {lb['seconds']:.2f} s; Spearman(ours, leaderbot) = {rho:.6f}; "
              f"ours ~ {scale:.4f} x leaderbot; largest |ours - leaderbot| = "
              f"{float((ours - theirs).abs().max()):.2e}; top 3 ours {list(ours.nlargest(3).index)}, "
              f"leaderbot {list(theirs.nlargest(3).index)}")
    print(pd.DataFrame(rows, columns=["command", "wall_s", "peak_gb", "status"]).to_string(index=False))


if __name__ == "__main__":
    main()
