"""Time one selection step of active judging at 1M battles x 100 models (issue 27: <= 1 s).

The step between two batches is what a real judge waits on: refit Bradley-Terry with intervals on the
verdicts revealed so far (``fit_revealed``) and choose the next batch (``select``). This script loads a
replay pool from a store (not timed: a run does it once), reveals ``--revealed`` items at random, then
times ``--repeat`` steps per strategy (wall and CPU seconds of fit + select, median and max), and
prints the process's peak RSS. Run it as a process on an idle machine:

    python bench/active_select_step.py --db /tmp/i27m/work/active-1m.duckdb --dataset bench
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="a store (a copy: opened read-only)")
    ap.add_argument("--dataset", default="bench")
    ap.add_argument("--revealed", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--strategies", default="random,round-robin,swim,uncertainty,cycles")
    a = ap.parse_args()

    from engine.judging.active.fit import Revealed, fit_revealed
    from engine.judging.active.pool import pool_from_verdicts
    from engine.judging.active.select import select
    from engine.store.connection import Store

    t0 = time.perf_counter()
    store = Store(a.db, read_only=True)
    verdicts = store.verdicts(a.dataset)
    store.close()
    pool = pool_from_verdicts(verdicts)
    winners = verdicts["winner"].astype(str).to_numpy(object)
    del verdicts
    print(f"pool: {len(pool):,} items, {pool.n_models} models, loaded in {time.perf_counter() - t0:.1f} s")
    print(f"{'strategy':<12} {'wall median':>11} {'wall max':>9} {'cpu median':>10} {'fit wall':>9}")
    for strategy in a.strategies.split(","):
        rng = np.random.default_rng(0)
        revealed = Revealed.empty(pool)
        first = rng.choice(len(pool), a.revealed, replace=False)
        revealed.record_winners(first, winners[first])
        walls, cpus, fits = [], [], []
        for _ in range(a.repeat):
            w0, c0 = time.perf_counter(), time.process_time()
            fit = fit_revealed(pool, revealed)
            w1 = time.perf_counter()
            items = select(strategy, pool, revealed, a.batch, rng, fit=fit)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
            fits.append(w1 - w0)
            revealed.record_winners(items, winners[items])
        print(f"{strategy:<12} {np.median(walls):>10.3f}s {max(walls):>8.3f}s {np.median(cpus):>9.3f}s "
              f"{np.median(fits):>8.3f}s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:,.0f} MB")


if __name__ == "__main__":
    main()
