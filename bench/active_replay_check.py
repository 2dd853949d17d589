"""One end-to-end replay per pool, checked equal to the harness for that seed (issue 27, point 5).

Runs ``python -m engine --db COPY judge --dataset OUT --backend replay --from-dataset SRC --select S
--budget N --batch B --seed SEED`` as a process on a copy of the store (the store itself is never
written), then walks the harness (engine/views/active_curves.py) with the same arguments and compares the
multiset of (judge, prompt, model_a, model_b, winner) rows the run stored with the rows the harness
revealed. Prints the run's wall time, its summary line and MATCH or DIFFER.

    python bench/active_replay_check.py --db /tmp/i27m/work/active.duckdb --dataset sparse70 \\
        --select uncertainty --budget 2000 --batch 200 --seed 3
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--judge")
    ap.add_argument("--select", required=True)
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()

    from engine.store.connection import Store
    from engine.views.active_curves import replay_steps, store_source, verdict_rows

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "lens.duckdb"
        shutil.copyfile(a.db, copy)
        cmd = [sys.executable, "-m", "engine", "--db", str(copy), "judge", "--dataset", "replayed",
               "--backend", "replay", "--from-dataset", a.dataset, "--select", a.select,
               "--budget", str(a.budget), "--batch", str(a.batch), "--seed", str(a.seed)]
        if a.judge:
            cmd += ["--from-judge", a.judge]
        t0 = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        print(f"judge --backend replay: exit {done.returncode}, {wall:.1f} s wall")
        print(done.stderr.strip()[-600:])
        if done.returncode:
            raise SystemExit(1)
        with Store(copy, read_only=True) as store:
            got = store.verdicts("replayed")
            source = store_source(store, a.dataset, a.judge)
    *_, state = replay_steps(source, a.select, a.seed, a.budget, a.batch)
    want = verdict_rows(source, np.flatnonzero(state.revealed.asked))
    key = ["judge", "prompt_id", "model_a", "model_b", "winner"]
    rows = [Counter(map(tuple, frame[key].astype(str).to_numpy())) for frame in (got, want)]
    same = rows[0] == rows[1]
    print(f"{a.dataset} {a.select} seed {a.seed}: run stored {len(got):,} rows, harness revealed "
          f"{len(want):,}: {'MATCH' if same else 'DIFFER'}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
