"""What a dataset offers to choose from: its judges (and the one covering the most models), its
categories, its models, whether it is synthetic and its stored ground truth. Shared by the app's
sidebar, the reference choice and the command line's notes; no heavy imports, so the cached-result
code fingerprints (``protocol_inputs.code_files``) stay within their family."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from engine.errors import LensError
from engine.store.connection import Store


@dataclass(frozen=True)
class DatasetChoices:
    """The judges and categories of one dataset, and the judge the sidebar starts on."""

    judges: tuple[str, ...]
    categories: tuple[str, ...]
    default_judge: str
    models_per_judge: dict[str, int]


def dataset_choices(store: Store, dataset: str) -> DatasetChoices:
    """Judges (the default is the one whose graphs cover the most models, then by name) and categories."""
    rows = store.cursor().execute(
        """
        SELECT judge, count(DISTINCT m) AS n_models FROM (
            SELECT judge, model_a AS m FROM verdicts WHERE dataset = ? AND winner <> 'invalid'
            UNION ALL
            SELECT judge, model_b FROM verdicts WHERE dataset = ? AND winner <> 'invalid')
        GROUP BY judge ORDER BY n_models DESC, judge
        """,
        [dataset, dataset],
    ).fetchall()
    cats = store.cursor().execute(
        "SELECT DISTINCT category FROM verdicts WHERE dataset = ? AND category IS NOT NULL ORDER BY 1",
        [dataset],
    ).fetchall()
    judges = tuple(sorted(r[0] for r in rows))
    default = rows[0][0] if rows else ""
    return DatasetChoices(judges, tuple(c[0] for c in cats), default, {r[0]: int(r[1]) for r in rows})


def is_synthetic(store: Store, dataset: str) -> bool:
    """Whether ``dataset`` is flagged synthetic (written by ``engine.ingest.synthetic``); False when absent."""
    row = store.cursor().execute("SELECT synthetic FROM datasets WHERE name = ?", [dataset]).fetchone()
    return bool(row is not None and row[0])


def dataset_models(store: Store, dataset: str) -> set[str]:
    """Every model name the dataset's verdicts compare (either side, valid or not)."""
    return {r[0] for r in store.cursor().execute(
        "SELECT model_a FROM verdicts WHERE dataset = ? UNION SELECT model_b FROM verdicts WHERE dataset = ?",
        [dataset, dataset]).fetchall()}


def synthetic_truth(store: Store, name: str) -> pd.Series:
    """The ground-truth strength by model of a synthetic dataset (higher is better)."""
    df = store.cursor().execute(
        "SELECT model, strength FROM synthetic_truth WHERE dataset = ? ORDER BY rank", [name]
    ).df()
    if df.empty:
        raise LensError(f"Dataset {name!r} has no stored ground truth (only synthetic datasets do).")
    return pd.Series(df["strength"].to_numpy(), index=pd.Index(df["model"], name="model"), name="strength")
