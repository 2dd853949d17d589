"""The data pools active judging is measured on (issue 27, point 5), written into one bench store.

Each pool is a dataset of stored verdicts, so the in-process harness (engine/views/active_curves.py) and
``python -m engine judge --backend replay --from-dataset SRC`` read exactly the same rows:

- ``arena2024``: the LMArena 2024 aggregate shipped in data/chatbot_arena_2024_08_14/pair_counts.csv
  (1,670,250 battles, 129 models, pair counts only) expanded into a battle log by one rule: every count
  becomes one battle of that pair (``wins_a`` battles won by ``model_a`` as verdict A, ``wins_b`` as B,
  ``ties`` and ``both_bad`` as tie), each battle its own prompt (``b<k>``), the presentation order not
  known (the aggregate folds both), one judge ``arena-voters``; the battles are put in a random order
  (numpy seed 0) so a strategy that walks a pair's battles in pool order (round-robin) does not meet
  all of one outcome first. Nothing else is drawn: the pool holds exactly the aggregate's counts.
- ``bench`` (the generated 1M-battle log, bench/battlegen.py arena 1,000,000 x 100 models): copied from
  /work/benchdata/store-app-1000000x100.duckdb, never opened for writing there.
- ``vicuna80``: the shipped dataset (each LLM judge judged every edge in both presentation orders);
  the harness takes one judge at a time.
- ``sparse70``: 70 models, 100 prompts, each prompt comparing 12 of them (70 % of those pairs) in both
  presentation orders, Bradley-Terry outcomes on normal(0, 1) strengths plus a prompt effect
  (normal(0, 0.5)) and a first-position bonus of 0.2 log-odds, a tie when the uniform draw falls within
  0.08 of the win probability; numpy seed 70. Most model pairs never meet.

``python bench/active_pools.py --work DIR`` writes DIR/active.duckdb with the last three (the arena
aggregate with ``--arena``) and DIR/active-1m.duckdb (a copy of the 1M store).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ARENA_COUNTS = REPO / "data" / "chatbot_arena_2024_08_14" / "pair_counts.csv"
BENCH_1M_STORE = Path("/work/benchdata/store-app-1000000x100.duckdb")


def arena_battles(counts_csv: Path = ARENA_COUNTS, seed: int = 0) -> pd.DataFrame:
    """The aggregate's pair counts as one verdict row per battle (module docstring's rule)."""
    counts = pd.read_csv(counts_csv)
    per = counts[["wins_a", "wins_b", "ties", "both_bad"]].to_numpy(np.int64)
    outcome = np.concatenate([np.repeat(np.repeat([k], len(counts)), per[:, k]) for k in range(4)])
    row = np.concatenate([np.repeat(np.arange(len(counts)), per[:, k]) for k in range(4)])
    order = np.random.default_rng(seed).permutation(len(row))
    row, outcome = row[order], outcome[order]
    winner = np.array(["A", "B", "tie", "tie"], dtype=object)[outcome]
    return pd.DataFrame({
        "prompt_id": np.char.add("b", np.arange(len(row)).astype(str)),
        "model_a": counts["model_a"].to_numpy(object)[row],
        "model_b": counts["model_b"].to_numpy(object)[row],
        "winner": winner,
        "judge": "arena-voters",
    })


def sparse70(n: int = 70, prompts: int = 100, per: int = 12, seed: int = 70) -> pd.DataFrame:
    """The sparse 70-model set, both presentation orders of every edge (module docstring)."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, n)
    names = [f"sparse-{i:02d}" for i in range(n)]
    rows = []
    for p in range(prompts):
        chosen = rng.choice(n, per, replace=False)
        effect = dict(zip(chosen.tolist(), rng.normal(0.0, 0.5, per), strict=True))
        for i, j in itertools.combinations(chosen.tolist(), 2):
            if rng.random() < 0.3:
                continue
            for first, second in ((i, j), (j, i)):
                d = strength[first] + effect[first] - strength[second] - effect[second] + 0.2
                pa, u = 1.0 / (1.0 + np.exp(-d)), rng.random()
                winner = "tie" if abs(u - pa) < 0.08 else ("A" if u < pa else "B")
                rows.append((f"q{p}", names[first], names[second], winner, "judge-x", "AB", f"cat{p % 5}"))
    columns = ["prompt_id", "model_a", "model_b", "winner", "judge", "order", "category"]
    return pd.DataFrame(rows, columns=columns)


def import_frame(store_path: Path, frame: pd.DataFrame, dataset: str, work: Path) -> None:
    """Store ``frame`` as ``dataset`` through the project's importer (validated, all or nothing)."""
    from engine.ingest.importer import store_report, validate_file
    from engine.ingest.shipped import open_store

    path = work / f"{dataset}.parquet"
    frame.to_parquet(path, index=False)
    store = open_store(store_path)
    try:
        if store.has_dataset(dataset):
            return
        report = validate_file(path, path.name, dataset=dataset)
        store_report(store, report, dataset)
    finally:
        store.close()


def build(work: Path, arena: bool) -> None:
    """Write the bench stores of the module docstring under ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    store = work / "active.duckdb"
    import_frame(store, sparse70(), "sparse70", work)
    if arena:
        import_frame(store, arena_battles(), "arena2024", work)
    copy = work / "active-1m.duckdb"
    if not copy.exists() and BENCH_1M_STORE.exists():
        shutil.copyfile(BENCH_1M_STORE, copy)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--arena", action="store_true", help="also expand and store the arena 2024 aggregate")
    a = ap.parse_args()
    build(a.work, a.arena)


if __name__ == "__main__":
    main()
