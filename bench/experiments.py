"""Benchmark: a full keep-K curve and a full Table 2 on synthetic data, batched vs a loop of fits.

Run: ``python bench/experiments.py`` (not part of CI). Data: the synthetic generator, 8 categories
× 10 prompts × 5 prompt instances (+4 sampling replicates for the Sample protocol) × 20 models.
The batched engine is timed end to end. The naive twin is the obvious loop — for every draw,
``engine.rankers.rank(stack.subset(draw), "bt")`` and ``engine.distances.all_distances`` — timed
on ``--loop-fits`` draws of the same workload and scaled to the full number of fits (the loop's
cost is linear in the number of fits); the ratio is reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.curves import keep_k_curve  # noqa: E402
from engine.distances import all_distances  # noqa: E402
from engine.graphs import build_stack  # noqa: E402
from engine.rankers import rank  # noqa: E402
from engine.resampling import PROTOCOLS, ProtocolParams, build_jobs, reference_ranks, run_protocols  # noqa: E402
from engine.synthetic import SyntheticParams, generate  # noqa: E402


def loop_seconds_per_fit(stack, truth, rows: np.ndarray) -> float:
    """Time the naive loop on the given (fits, T) count rows; seconds per fit."""
    ref = pd.Series(reference_ranks(truth, stack.models), index=stack.models)
    t0 = time.perf_counter()
    for row in rows:
        sub = stack.subset(np.repeat(np.arange(row.size), row.astype(int)))
        s = rank(sub, "bt").scores
        all_distances(s.rank(ascending=False, method="first"), ref)
    return (time.perf_counter() - t0) / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--loop-fits", type=int, default=300)
    args = ap.parse_args()
    d = generate(SyntheticParams(n_models=20, categories=8, prompts=10, paraphrases=4, samples=4))
    stack = build_stack(d.verdicts.assign(dataset="bench", turn=1, prob_a=np.nan))
    perturbed = stack.subset(np.flatnonzero(stack.keys["variant_kind"].to_numpy() != "sample"))
    truth = d.truth
    rng = np.random.default_rng(0)

    t0 = time.perf_counter()
    curve = keep_k_curve(perturbed, truth, resamples=args.resamples)
    t_curve = time.perf_counter() - t0
    n_fits_curve = 50 * 8 * (1 + args.resamples)
    rows = np.zeros((args.loop_fits, perturbed.T))
    cats = perturbed.keys["category"].to_numpy()
    for r in range(args.loop_fits):  # bootstrap draws of kept sets of random size, as in the curve
        pos = np.flatnonzero(cats == f"cat-{r % 8 + 1}")
        k = int(rng.integers(1, pos.size + 1))
        np.add.at(rows[r], rng.choice(pos[:k], size=k, replace=True), 1)
    per_fit = loop_seconds_per_fit(perturbed, truth, rows)
    loop_curve = per_fit * n_fits_curve

    p = ProtocolParams(resamples=args.resamples)
    t0 = time.perf_counter()
    run_protocols(stack, truth, PROTOCOLS, p)
    t_table = time.perf_counter() - t0
    jobs = build_jobs(stack, PROTOCOLS, p, single_k=10)
    all_rows = np.concatenate([j.counts for j in jobs if j.ranker == "bt"])
    n_fits_table = sum(j.counts.shape[0] for j in jobs)
    pick = all_rows[rng.choice(all_rows.shape[0], size=min(args.loop_fits, all_rows.shape[0]), replace=False)]
    loop_table = loop_seconds_per_fit(stack, truth, pick) * n_fits_table

    out = pd.DataFrame([
        {"workload": "keep-K curve: K=1..50 × 8 categories × (1+R) fits, 20 models", "fits": n_fits_curve,
         "batched_s": t_curve, "loop_s_scaled": loop_curve, "speedup": loop_curve / t_curve},
        {"workload": "Table 2: 6 protocols × 8 categories × R resamples (Random ×10)", "fits": n_fits_table,
         "batched_s": t_table, "loop_s_scaled": loop_table, "speedup": loop_table / t_table},
    ])
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(out.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    print(f"loop time measured on {args.loop_fits} fits each and scaled linearly; R = {args.resamples}; "
          f"curve rows: {len(curve)}; load average (1 min) at the end: {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
