"""Accuracy versus calls spent for every active-judging strategy, 5 seeds, on the bench pools (issue 27, 5).

Each pool is a stored dataset (bench/active_pools.py) replayed in process through the same ``select`` and
``fit_revealed`` the CLI uses (engine/views/active_curves.py). Writes, under ``--out``:
``<pool>.csv`` (every run's row per grid point), ``<pool>_<metric>.svg`` (seed means), and prints the
seed-mean tables and, for the arena-shaped pools, the calls ``uncertainty`` needs to match random's
accuracy at each budget N (the goal: <= 0.6 N). ``--triads`` runs the re-judging experiment on vicuna80
instead: one order of every edge known, then random re-judging against ``cycles``, bad triads counted
after every batch.

    python bench/active_pools.py --work /tmp/i27m/work --arena
    python bench/active_curves.py --db /tmp/i27m/work/active.duckdb --dataset arena2024 \
        --budget 16000 --batch 1000
    python bench/active_curves.py --db /tmp/i27m/lens.duckdb --dataset vicuna80 --judge gpt-4 --triads
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from active_plot import svg_lines  # noqa: E402

STRATEGIES = ("random", "round-robin", "swim", "uncertainty", "cycles")
SEEDS = (0, 1, 2, 3, 4)
METRICS = ("kendall", "spearman", "top1", "top5")


def accuracy(source, name: str, budget: int, batch: int, out: Path) -> pd.DataFrame:
    from engine.views.active_curves import calls_to_match, mean_curve, on_grid, replay_curve

    runs = []
    for strategy in STRATEGIES:
        for seed in SEEDS:
            t0 = time.process_time()
            runs.append(replay_curve(source, strategy, seed, budget, batch))
            cpu = time.process_time() - t0
            print(f"  {strategy} seed {seed}: {cpu:.1f} s CPU", file=sys.stderr, flush=True)
    grid = np.arange(0, budget + 1, batch)
    curves = on_grid(pd.concat(runs, ignore_index=True), grid)
    curves.to_csv(out / f"{name}.csv", index=False)
    for metric in METRICS:
        table = mean_curve(curves, metric)
        svg_lines(table, out / f"{name}_{metric}.svg", f"{name}: {metric} vs calls (mean of 5 seeds)", metric)
        print(f"\n{name}: {metric}, mean of {len(SEEDS)} seeds\n{table.round(4).to_string()}")
    print(f"\n{name}: calls uncertainty needs to reach random's Kendall distance at N (goal <= 0.6 N)")
    for n in grid[grid > 0]:
        need = calls_to_match(curves, "uncertainty", "random", "kendall", int(n))
        print(f"  N = {n:>7,}: {need:>9,.0f} calls = {need / n:.2f} N")
    return curves


def triads(source, name: str, budget: int, batch: int, out: Path) -> pd.DataFrame:
    from engine.views.active_curves import replay_curve, start_one_order

    runs = []
    for seed in SEEDS:
        start = start_one_order(source, seed)
        for strategy in ("random", "cycles"):
            runs.append(replay_curve(source, strategy, seed, budget, batch, start=start,
                                     count_bad_triads=True))
    curves = pd.concat(runs, ignore_index=True)
    curves.to_csv(out / f"{name}_triads.csv", index=False)
    table = curves.pivot_table(index="calls", columns="strategy", values="bad_triads", aggfunc="mean")
    svg_lines(table, out / f"{name}_triads.svg", f"{name}: bad triads vs re-judging calls (mean of 5 seeds)",
              "bad triads (C3_bad)")
    start_bad = table.iloc[0]
    per_call = ((start_bad - table.iloc[1:]).div(table.index[1:], axis=0)).round(4)
    print(f"\n{name}: bad triads (mean of {len(SEEDS)} seeds)\n{table.round(1).to_string()}")
    print(f"\n{name}: bad triads removed per call (negative: added)\n{per_call.to_string()}")
    return curves


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="a store holding the pool (opened read-only)")
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--judge")
    ap.add_argument("--budget", type=int, help="calls per run (default: the whole pool; triads: half of it)")
    ap.add_argument("--batch", type=int, help="calls per batch (default: budget / 20)")
    ap.add_argument("--triads", action="store_true", help="the re-judging experiment (random vs cycles)")
    ap.add_argument("--out", type=Path, default=Path("docs/notes/active"))
    a = ap.parse_args()

    from engine.store.connection import Store
    from engine.views.active_curves import replay_source

    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    store = Store(a.db, read_only=True)
    verdicts = store.verdicts(a.dataset, judge=a.judge)
    store.close()
    name = a.dataset + (f"-{a.judge}" if a.judge else "")
    source = replay_source(verdicts, name)
    del verdicts
    print(f"{name}: {len(source.pool):,} items, {source.pool.n_models} models "
          f"(loaded in {time.perf_counter() - t0:.0f} s)")
    budget = a.budget or (len(source.pool) // 2 if a.triads else len(source.pool))
    batch = a.batch or max(1, budget // 20)
    if a.triads:
        triads(source, name, budget, batch, a.out)
    else:
        accuracy(source, name, budget, batch, a.out)


if __name__ == "__main__":
    main()
