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


def file_columns(data: bytes, filename: str) -> list[str]:
    """The column names of an uploaded verdict file (CSV header, JSONL keys, Parquet schema).

    Used only to offer a column map when the names differ from the canonical ones; reading and
    validating the rows is ``engine.verdicts``' job. Unreadable files give an empty list (the
    validator then reports the actual problem).
    """
    import io
    import json

    import pandas as pd

    name = filename.lower()
    try:
        if name.endswith(".parquet"):
            import pyarrow.parquet as pq

            return [str(c) for c in pq.read_schema(io.BytesIO(data)).names]
        if name.endswith((".jsonl", ".ndjson")):
            keys: dict[str, None] = {}
            for line in data.decode("utf-8-sig", errors="replace").splitlines()[:200]:
                if line.strip():
                    obj = json.loads(line)
                    if isinstance(obj, dict):
                        keys.update(dict.fromkeys(map(str, obj)))
            return list(keys)
        sep = "\t" if name.endswith(".tsv") else ","
        return [str(c) for c in pd.read_csv(io.BytesIO(data), nrows=0, sep=sep, encoding="utf-8-sig").columns]
    except (ValueError, UnicodeDecodeError, OSError, ImportError):
        return []


def reference_for(dataset: str, category: str | None) -> tuple[object, str]:
    """The reference ratings for the current choice and a note saying which, or (None, why not).

    The category goes through the dataset's category mapping to a reference category; a dataset
    without a model mapping has no reference (the pages then leave the reference columns out).
    """
    from .errors import LensError
    from .reference import arena_category, reference_for_dataset

    try:
        ref_cat = arena_category(dataset, category) if category else None
        ref = reference_for_dataset(dataset, ref_cat)
    except LensError as exc:
        return None, str(exc)
    if len(ref) < 2:
        return None, f"fewer than two models of {dataset} are on the reference leaderboard"
    return ref, f"LMArena reference, category {ref_cat or 'full'}, {len(ref)} mapped models"


def with_model_cycles(table, stack):
    """Add each model's bad triads (summed over the graphs ranked) and cycle participation (share
    of the graphs where the model was compared in which it lies on a bad triad)."""
    import numpy as np

    from .cycles import vertex_cycle_counts

    vb = vertex_cycle_counts(stack.adj)["c3_bad"]  # (T, n)
    present = stack.observed.any(axis=2)
    pos = {m: i for i, m in enumerate(stack.models)}
    idx = table["model"].map(pos).to_numpy()
    bad = vb.sum(axis=0)
    share = np.divide(((vb > 0) & present).sum(axis=0), present.sum(axis=0),
                      out=np.full(stack.n, np.nan), where=present.sum(axis=0) > 0)
    out = table.copy()
    out["bad_triads"] = bad[idx].astype(np.int64)
    out["cycle_share"] = share[idx]
    return out


def with_reference(table, reference):
    """Add ``ref_rank`` (rank on the reference among the mapped models) and ``ref_diff`` = rank here
    among the same models − ref_rank (positive: lower here than on the reference)."""
    import pandas as pd

    out = table.copy()
    if reference is None:
        return out
    mapped = out[out["model"].isin(reference.index)]
    ref_rank = reference.reindex(mapped["model"]).rank(ascending=False, method="min")
    here = mapped["score"].rank(ascending=False, method="min")
    out["ref_rank"] = pd.Series(ref_rank.to_numpy(), index=mapped.index).astype("Int64")
    out["ref_diff"] = (pd.Series(here.to_numpy(), index=mapped.index) - out["ref_rank"]).astype("Int64")
    return out


@dataclass(frozen=True)
class AppBoard:
    """A leaderboard as the app shows it: the table (with cycle and reference columns), the
    engine's params, and the distances to the reference (empty without one)."""

    table: object
    params: dict
    distances: dict
    reference_note: str


def app_leaderboard(stack, *, ranker: str, keep_k: int | None, mu: float, bootstrap: int, seed: int,
                    reference=None, reference_note: str = "", extra_params: dict | None = None) -> AppBoard:
    """One slider move's engine work: keep-K by S_mu, rank, bootstrap CIs, cycle and reference columns."""
    from .leaderboard import compare_to_reference, leaderboard_from_stack, truncate

    board = leaderboard_from_stack(stack, ranker=ranker, keep_k=keep_k, mu=mu, bootstrap=bootstrap, seed=seed,
                                   extra_params=extra_params)
    kept = stack if keep_k is None else truncate(stack, keep_k, mu)[0]
    table = with_reference(with_model_cycles(board.table, kept), reference)
    dist = {} if reference is None else compare_to_reference(board, reference)
    return AppBoard(table, board.params, dist, reference_note)
