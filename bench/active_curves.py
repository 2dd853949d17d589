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


def accuracy(source, name: str, budget: int, batch: int, out: Path,
             strategies: tuple[str, ...] = STRATEGIES) -> pd.DataFrame:
    """Every strategy's curves, 5 seeds; with ``strategies`` a subset, the other strategies' rows are read
    back from an earlier ``<pool>.csv`` of the same budget and batch (their code did not change)."""
    from engine.views.active_curves import calls_to_match, mean_curve, on_grid, replay_curve

    runs = []
    earlier = out / f"{name}.csv"
    if set(strategies) != set(STRATEGIES) and earlier.exists():
        kept = pd.read_csv(earlier)
        kept = kept[~kept["strategy"].isin(strategies)]
        if kept["calls"].max() != budget - budget % batch:
            raise SystemExit(f"{earlier} was made with another budget; run every strategy.")
        runs.append(kept)
        print(f"  kept {sorted(set(kept['strategy']))} from {earlier}", file=sys.stderr)
    for strategy in strategies:
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


def random_settling(pool, revealed, batch: int, rng) -> np.ndarray:
    """The re-judging baseline with cycles' settling rule, edges chosen at random instead of by their bad
    triads: first one more call for every edge whose verdicts split (not settled, >= 2 verdicts), then
    one call each for judged edges with a single verdict, drawn at random, then the rest at random."""
    from engine.judging.active.select import edge_votes, settled_votes

    insts, lo_win, hi_win, ties = edge_votes(pool, revealed)
    votes = lo_win + hi_win + ties
    tier = np.where(settled_votes(lo_win, hi_win, ties), 0, np.where(votes >= 2, 2, 1))
    avail = np.flatnonzero(~revealed.asked)
    mine = pool.instance[avail]
    at = np.minimum(np.searchsorted(insts, mine), max(len(insts) - 1, 0))
    judged = (insts[at] == mine) if len(insts) else np.zeros(len(mine), dtype=bool)
    score = np.where(judged, tier[at] if len(insts) else 0, -1)
    order = np.lexsort((rng.random(len(avail)), -score))
    _, first = np.unique(mine[order], return_index=True)
    lead = np.zeros(len(order), dtype=bool)
    lead[first] = True
    ranked = np.concatenate([order[lead & (score[order] > 0)], order[~(lead & (score[order] > 0))]])
    return avail[ranked[: min(batch, len(avail))]]


def settling_curve(source, seed: int, budget: int, batch: int, start) -> pd.DataFrame:
    """Bad triads after every batch of ``random_settling`` from ``start`` (rng seeded like a replay)."""
    from engine.views.active_curves import bad_triads

    revealed = type(start)(start.asked.copy(), start.wins_a.copy(), start.wins_b.copy(), start.ties.copy())
    rng = np.random.default_rng(seed)
    rows = [{"strategy": "random-settling", "seed": seed, "calls": 0,
             "bad_triads": bad_triads(source, revealed)}]
    spent = 0
    while spent < budget and not revealed.asked.all():
        items = random_settling(source.pool, revealed, min(batch, budget - spent), rng)
        revealed.record_winners(items, source.winners[items])
        spent += len(items)
        rows.append({"strategy": "random-settling", "seed": seed, "calls": spent,
                     "bad_triads": bad_triads(source, revealed)})
    return pd.DataFrame(rows)


def triads(source, name: str, budget: int, batch: int, out: Path) -> pd.DataFrame:
    """Re-judging from one verdict of every edge: random, random with cycles' settling rule, cycles."""
    from engine.views.active_curves import replay_curve, start_one_order

    runs = []
    for seed in SEEDS:
        start = start_one_order(source, seed)
        for strategy in ("random", "cycles"):
            runs.append(replay_curve(source, strategy, seed, budget, batch, start=start,
                                     count_bad_triads=True))
        runs.append(settling_curve(source, seed, budget, batch, start))
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
    ap.add_argument("--panel", help="comma list of judges replayed as one judge 'panel' (their verdicts of "
                    "an edge re-judge one graph's edge): the re-judging experiment with third calls")
    ap.add_argument("--budget", type=int, help="calls per run (default: the whole pool; triads: half of it)")
    ap.add_argument("--batch", type=int, help="calls per batch (default: budget / 20)")
    ap.add_argument("--triads", action="store_true", help="the re-judging experiment (random vs cycles)")
    ap.add_argument("--out", type=Path, default=Path("docs/notes/active"))
    ap.add_argument("--strategies", default=",".join(STRATEGIES),
                    help="comma list to rerun (the others' rows are kept from an earlier <pool>.csv)")
    a = ap.parse_args()

    from engine.store.connection import Store
    from engine.views.active_curves import replay_source

    a.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    store = Store(a.db, read_only=True)
    verdicts = store.verdicts(a.dataset, judge=a.judge)
    store.close()
    name = a.dataset + (f"-{a.judge}" if a.judge else "")
    if a.panel:
        verdicts = verdicts[verdicts["judge"].isin(a.panel.split(","))].assign(judge="panel")
        name = f"{a.dataset}-panel"
    source = replay_source(verdicts, name)
    del verdicts
    print(f"{name}: {len(source.pool):,} items, {source.pool.n_models} models "
          f"(loaded in {time.perf_counter() - t0:.0f} s)")
    budget = a.budget or (len(source.pool) // 2 if a.triads else len(source.pool))
    batch = a.batch or max(1, budget // 20)
    if a.triads:
        triads(source, name, budget, batch, a.out)
    else:
        accuracy(source, name, budget, batch, a.out, tuple(a.strategies.split(",")))


if __name__ == "__main__":
    main()
