"""Benchmark: PGED with the exact minimum feedback arc set against the greedy, as the commands a user runs.

    python bench/fas.py [--sizes 12 16 18 20] [--bootstrap 200] [--seed 0]

Each row is one CLI process (bench/procmeter.py: wall time and peak RSS of the process tree) on a
scratch store in a temporary folder:

- ``leaderboard --ranker pged --param fas=greedy|exact`` on the shipped vicuna80 (per prompt, no
  bootstrap; then ``--bootstrap B --bootstrap-unit graph``, where every resample's per-question
  ensembles are denoised again);
- ``diagnose --table fas`` on vicuna80 (greedy and minimum on every judge graph);
- one generated prompt with a random tournament over N models (one judge, one verdict per pair), ranked
  by ``leaderboard --ranker pged --param mode=global`` with each ``fas``: N = 20 is the exact limit
  (``engine.graphs.min_fas.EXACT_FAS_MAX_N``), so its row is the time at the limit.

Then, in process (a count, not a timing): on vicuna80's per-question ensembles (every judge pooled,
PGED's own input), how many are cyclic and on how many the greedy removed more weight / more arcs
than the minimum. Prints a Markdown table and the load average before and after; nothing is asserted.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.procmeter import measure  # noqa: E402


def tournament_csv(path: Path, n: int, seed: int) -> None:
    """One prompt, one judge, a random tournament over n models (each pair one decisive verdict)."""
    rng = np.random.default_rng(seed)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["prompt_id", "judge", "model_a", "model_b", "winner"])
        for a, b in itertools.combinations(range(n), 2):
            out.writerow(["p1", "gen", f"m{a:02d}", f"m{b:02d}", "A" if rng.random() < 0.5 else "B"])


def ensemble_gap(db: str) -> str:
    """One line: on vicuna80's per-question PGED ensembles, cyclic ones and the greedy's excess."""
    from engine.graphs.denoise import denoise_batch
    from engine.graphs.min_fas import min_fas_batch
    from engine.graphs.stack import build_stack
    from engine.ingest.shipped import open_store
    from engine.rankers.pged import prompt_ensembles, question_ids

    store = open_store(db)
    try:
        stack = build_stack(store.verdicts("vicuna80"))
    finally:
        store.close()
    q_of_t, keys = question_ids(stack)
    wq = prompt_ensembles(stack, np.ones((1, stack.T)), q_of_t, len(keys))[0][0]
    removed = denoise_batch(wq)[2]
    g_weight = np.where(removed, wq, 0.0).sum(axis=(1, 2))
    g_arcs = removed.sum(axis=(1, 2))
    m = min_fas_batch(wq)
    more_w = g_weight > m.weight + 1e-9
    more_a = g_arcs > m.n_arcs
    span = (g_weight - m.weight)[more_w]
    return (f"vicuna80 per-question ensembles (all judges): {len(keys)} questions, {int((g_arcs > 0).sum())} "
            f"cyclic; greedy removed more weight than the minimum on {int(more_w.sum())} "
            f"(by {span.min():g}-{span.max():g}), more arcs on {int(more_a.sum())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[12, 16, 18, 20])
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    py = [sys.executable, "-m", "engine"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "lens.duckdb")

        def run(label: str, *cmd: str) -> None:
            r = measure([*py, "--db", db, *cmd], cap_gb=8, timeout_s=1800, cwd=ROOT, env=env,
                        out_path=Path(tmp) / "out.txt")
            rows.append((label, r.wall_s, r.peak_gb, r.status))

        run("import shipped vicuna80 (first use)", "datasets")
        for fas in ("greedy", "exact"):
            run(f"vicuna80 leaderboard pged fas={fas}", "leaderboard", "--ranker", "pged",
                "--param", f"fas={fas}")
        for fas in ("greedy", "exact"):
            run(f"vicuna80 leaderboard pged fas={fas} --bootstrap {args.bootstrap} (graph unit)",
                "leaderboard", "--ranker", "pged", "--param", f"fas={fas}",
                "--bootstrap", str(args.bootstrap), "--bootstrap-unit", "graph")
        run("vicuna80 diagnose --table fas --no-cache", "diagnose", "--table", "fas", "--no-cache")
        for n in args.sizes:
            path = Path(tmp) / f"tour{n}.csv"
            tournament_csv(path, n, args.seed + n)
            run(f"import tournament n={n}", "import", "--dataset", f"tour{n}", str(path))
            for fas in ("greedy", "exact"):
                run(f"tournament n={n} pged global fas={fas}", "leaderboard", "--dataset", f"tour{n}",
                    "--ranker", "pged", "--param", "mode=global", "--param", f"fas={fas}")
        gap = ensemble_gap(db)
    print("| command | wall s | peak GB | status |\n|---|---:|---:|---|")
    for label, wall, peak, status in rows:
        print(f"| {label} | {wall:.2f} | {peak:.2f} | {status} |")
    print(f"\n{gap}\n\nload average before {load0}, after {os.getloadavg()}")


if __name__ == "__main__":
    main()
