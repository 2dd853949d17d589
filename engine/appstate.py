"""Engine-side helpers for the app's shared state: what the sidebar offers and the cache keys.

The sidebar (dataset, judge, category, ranker) is shared by every page; its choices come from the
store here, so the app holds no SQL. Every cached result in the app is keyed by
``CacheKey`` — the dataset's version counter plus the parameters — so an import, rename or delete
(which bump or drop the version) can never serve a stale result.
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import Store

ALL = "(all)"
"""The sidebar's 'no filter' choice for judge and category."""


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


@dataclass(frozen=True)
class CacheKey:
    """Everything a cached page result depends on; hashable, so it keys ``st.cache_data``."""

    dataset: str
    version: int
    judge: str | None
    category: str | None

    @classmethod
    def of(cls, store: Store, dataset: str, judge: str | None, category: str | None) -> CacheKey:
        """The key for the sidebar's current choice; ``ALL`` means no filter (``None``)."""
        return cls(
            dataset,
            store.dataset_version(dataset),
            None if judge in (None, ALL) else judge,
            None if category in (None, ALL) else category,
        )
