"""Benchmark: a full keep-K curve and a full Table 2 on synthetic data, batched vs a loop of fits.

Run: ``python bench/experiments.py [--before DIR]`` (not part of CI). Data: the synthetic
generator, 8 categories × 10 prompts × 5 prompt instances (+4 sampling replicates for the Sample
protocol) × 20 models.

- keep-K curve: every K = 1..50 per category, 100 keep→draw resamples + the point fit
  (8 × 50 × 101 = 40,400 BT fits), all four distances.
- Table 2: the six protocols × 8 categories × 100 resamples (Random × 10 subsets).

The batched engine is timed end to end. The naive twin is the obvious loop — for every draw,
``engine.rankers.rank(stack.subset(draw), "bt")`` and ``engine.ranking.distances.all_distances`` — timed on
``--loop-fits`` draws of the same workload and scaled to the full number of fits (the loop's cost
is linear in the number of fits); the ratio is reported, never asserted. ``--before DIR`` also
times the batched workloads with the engine found in DIR (e.g. an exported older commit), in
alternating rounds within the same run, so both face the same machine load; ``/proc/loadavg`` is
printed before and after. Wall-clock seconds are the target's measure; the process CPU seconds
are shown next to them because on a shared machine the wall clock mostly measures the others' load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def workload():
    import numpy as np

    from engine.graphs.stack import build_stack
    from engine.ingest.synthetic import SyntheticParams, generate

    d = generate(SyntheticParams(n_models=20, categories=8, prompts=10, paraphrases=4, samples=4))
    stack = build_stack(d.verdicts.assign(dataset="bench", turn=1, prob_a=np.nan))
    perturbed = stack.subset(np.flatnonzero(stack.keys["variant_kind"].to_numpy() != "sample"))
    return stack, perturbed, d.truth


def batched_seconds(resamples: int) -> dict[str, float]:
    """Time the batched keep-K curve and Table 2 with whichever ``engine`` is first on sys.path."""
    from engine.experiments.curves import keep_k_curve
    from engine.experiments.protocol_runs import run_protocols
    from engine.experiments.protocols import PROTOCOLS, ProtocolParams

    stack, perturbed, truth = workload()
    t0, c0 = time.perf_counter(), time.process_time()
    keep_k_curve(perturbed, truth, resamples=resamples)
    out = {"curve": time.perf_counter() - t0, "curve_cpu": time.process_time() - c0}
    t0, c0 = time.perf_counter(), time.process_time()
    run_protocols(stack, truth, PROTOCOLS, ProtocolParams(resamples=resamples))
    out.update({"table": time.perf_counter() - t0, "table_cpu": time.process_time() - c0})
    return out


def loop_seconds_per_fit(stack, truth, draws: list) -> float:
    """Time the naive loop on the given draws (lists of stack positions); seconds per fit."""
    import pandas as pd

    from engine.rankers import rank
    from engine.ranking.distances import all_distances
    from engine.ranking.reference import reference_ranks

    ref = pd.Series(reference_ranks(truth, stack.models), index=stack.models)
    t0 = time.perf_counter()
    for draw in draws:
        s = rank(stack.subset(draw), "bt").scores
        all_distances(s.rank(ascending=False, method="first"), ref)
    return (time.perf_counter() - t0) / len(draws)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--loop-fits", type=int, default=300)
    ap.add_argument(
        "--rounds", type=int, default=2, help="alternating before/after rounds (best of each is shown)"
    )
    ap.add_argument("--before", help="a directory holding an older engine/ to time in the same run")
    ap.add_argument("--engine", help=argparse.SUPPRESS)  # child mode: time the engine in this directory
    args = ap.parse_args()
    if args.engine:
        sys.path.insert(0, args.engine)
        print(json.dumps(batched_seconds(args.resamples)))
        return
    sys.path.insert(0, str(HERE))
    import numpy as np
    import pandas as pd

    from engine.experiments.curves import draw_size
    from engine.experiments.protocol_runs import best_single_k
    from engine.experiments.protocols import PROTOCOLS, ProtocolParams, build_jobs
    from engine.graphs.key_order import key_rank
    from engine.graphs.truncation import truncation_scores
    from engine.ranking.reference import reference_ranks

    print(f"load average at start: {loadavg()} ({os.cpu_count()} CPUs)")
    runs: dict[str, list[dict[str, float]]] = {"after": []}
    if args.before:
        runs["before"] = []
    for _ in range(args.rounds):
        for name in runs:
            root = args.before if name == "before" else str(HERE)
            out = subprocess.run(
                [sys.executable, __file__, "--engine", root, "--resamples", str(args.resamples)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))

    from engine.graphs.cycles import cycle_counts

    stack, perturbed, truth = workload()
    rng = np.random.default_rng(0)
    order = np.lexsort((key_rank(perturbed.keys), truncation_scores(cycle_counts(perturbed))))  # keep order
    cats = perturbed.keys["category"].to_numpy()
    draws = []
    for r in range(args.loop_fits):  # keep→draw subsamples of kept sets of random size, as in the curve
        pos = order[cats[order] == f"cat-{r % 8 + 1}"]
        k = int(rng.integers(1, pos.size + 1))
        draws.append(rng.choice(pos[:k], size=draw_size(k), replace=False))
    n_fits_curve = 50 * 8 * (1 + args.resamples)
    loop_curve = loop_seconds_per_fit(perturbed, truth, draws) * n_fits_curve

    p = ProtocolParams(resamples=args.resamples)
    refs = {c: reference_ranks(truth, stack.models) for c in sorted(set(stack.keys["category"]))}
    jobs = build_jobs(stack, PROTOCOLS, p, single_k=best_single_k(stack, refs, p)[0])
    bt_rows = np.concatenate([j.counts for j in jobs if j.ranker == "bt"])
    n_fits_table = sum(j.counts.shape[0] for j in jobs)
    pick = bt_rows[rng.choice(bt_rows.shape[0], size=min(args.loop_fits, bt_rows.shape[0]), replace=False)]
    loop_table = (
        loop_seconds_per_fit(stack, truth, [np.repeat(np.arange(r.size), r.astype(int)) for r in pick])
        * n_fits_table
    )

    rows = []
    for key, label, fits, loop in (("curve", "keep-K curve: K=1..50 × 8 categories × (1+R) fits, 20 models",
                                    n_fits_curve, loop_curve),
                                   ("table", "Table 2: 6 protocols × 8 categories × R resamples (Random ×10)",
                                    n_fits_table, loop_table)):
        after = [r[key] for r in runs["after"]]
        row = {
            "workload": label,
            "fits": fits,
            "after_s": min(after),
            "after_runs_s": " / ".join(f"{x:.1f}" for x in after),
            "after_cpu_s": min(r[key + "_cpu"] for r in runs["after"]),
        }
        if args.before:
            before = [r[key] for r in runs["before"]]
            row.update({"before_s": min(before), "before_runs_s": " / ".join(f"{x:.1f}" for x in before),
                        "before_cpu_s": min(r[key + "_cpu"] for r in runs["before"])})
        row.update({"loop_s_scaled": loop, "speedup_vs_loop": loop / min(after)})
        rows.append(row)
    with pd.option_context("display.width", 250, "display.max_colwidth", 70):
        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"loop time measured on {args.loop_fits} fits each and scaled linearly; R = {args.resamples}; "
          f"best of {args.rounds} alternating round(s); load average at the end: {loadavg()}")


if __name__ == "__main__":
    main()
