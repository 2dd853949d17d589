"""The ground truth of synthetic datasets (table ``synthetic_truth``): the strength each model was
generated with, so recovery can be scored against it. Written by ``engine.ingest.synthetic``, read
by ``--reference truth``."""

from __future__ import annotations

import pandas as pd

from engine.store.connection import Store
from engine.store.sql import scalar
from engine.store.writes import insert_truth

TRUTH_COLUMNS = ("dataset", "model", "strength", "rank", "seed")


def replace_truth(store: Store, dataset: str, truth: pd.DataFrame) -> None:
    """Replace the dataset's stored truth by ``truth`` (TRUTH_COLUMNS) in one transaction, so a
    regenerated dataset never keeps a model of its previous run."""
    with store.transaction() as tx:
        insert_truth(tx, dataset, truth, TRUTH_COLUMNS)


def truth_frame(store: Store, dataset: str) -> pd.DataFrame:
    """The dataset's (model, strength) rows, best first; empty for a dataset without a stored truth."""
    return store.cursor().execute(
        "SELECT model, strength FROM synthetic_truth WHERE dataset = ? ORDER BY rank", [dataset]
    ).df()


def has_truth(store: Store, dataset: str) -> bool:
    """Whether the dataset has a stored ground truth (only synthetic datasets do)."""
    return bool(scalar(store.cursor(), "SELECT count(*) FROM synthetic_truth WHERE dataset = ?", [dataset]))
