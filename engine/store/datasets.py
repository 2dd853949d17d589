"""What a dataset offers to choose from: its judges (and the one covering the most models) and its
categories. Shared by the app's sidebar and the command line's notes; no heavy imports, so the
cached-result code fingerprints (``protocol_inputs.code_files``) stay within their family."""

from __future__ import annotations

from dataclasses import dataclass

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
