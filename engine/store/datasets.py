"""What a dataset offers to choose from: its judges (and the one covering the most models), its
categories, its models and whether it is synthetic. Shared by the app's
sidebar, the reference choice and the command line's notes; no heavy imports, so the cached-result
code fingerprints (``protocol_inputs.code_files``) stay within their family."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import LensError
from engine.store.connection import Store
from engine.store.sql import Relation, params


@dataclass(frozen=True)
class DatasetChoices:
    """The judges and categories of one dataset, and the judge the sidebar starts on."""

    judges: tuple[str, ...]
    categories: tuple[str, ...]
    default_judge: str
    models_per_judge: dict[str, int]
    provisional: bool = False  # an attached dataset whose files could not be read: nothing counted yet


def dataset_choices(store: Store, dataset: str) -> DatasetChoices:
    """Judges (the default is the one whose graphs cover the most models, then by name) and categories,
    from the dataset's stored summary (``engine.store.summaries``: counted once per dataset version)."""
    from engine.store.summaries import summaries

    got = summaries(store, [dataset])
    s = got[dataset]
    judges = tuple(sorted(j for j, _ in s.judge_models))
    default = s.judge_models[0][0] if s.judge_models else ""
    return DatasetChoices(judges, s.categories, default, dict(s.judge_models), dataset in got.provisional)


def dataset_listing(store: Store, *, models: bool = False, battles: bool = False):
    """``Store.datasets()``'s frame (the same columns, types and order: one row per dataset with its verdict,
    invalid, judge and prompt counts) with the counts read from the stored summaries
    (``engine.store.summaries``) instead of a scan of every verdict, an attached dataset's counted over its
    files (the scan counts none of them); ``models=True`` adds ``models``, the distinct names its verdicts or
    pair counts compare; ``battles=True`` adds ``battles`` after ``verdicts``: its valid verdicts, or the
    outcomes a pair-count dataset sums (``DatasetSummary.battles``)."""
    from engine.store.summaries import summaries

    frame = store.cursor().execute(
        "SELECT name, description, synthetic, version, revision, source, updated_at FROM datasets "
        "ORDER BY name"
    ).df()
    got = summaries(store)
    frame.attrs["provisional"] = sorted(got.provisional)  # listed with nothing counted (``Summaries``)
    names = frame["name"].tolist()
    for col in ("verdicts",) + (("battles",) if battles else ()) + ("invalid", "judges", "prompts") + (
            ("models",) if models else ()):
        frame.insert(len(frame.columns) - (0 if col == "models" else 1), col,
                     [getattr(got[n], col) for n in names])
        frame[col] = frame[col].astype("int64")
    return frame


def dataset_stamps(store: Store) -> tuple[tuple[str, int], ...]:
    """(name, version) of every dataset, by name: a cheap key that changes whenever a dataset does,
    so the app recomputes its per-dataset counts only then. Read again only when the store file has changed
    since the last read (``Store.read_unless_changed``): a full rerun of a page whose results are cached
    then opens no file."""
    return store.read_unless_changed(
        "dataset_stamps",
        lambda: tuple(store.cursor().execute("SELECT name, version FROM datasets ORDER BY name").fetchall()))


def dataset_versions(store: Store) -> dict[str, int]:
    """Every dataset's store-wide version by name (``dataset_stamps``: the file is not opened while it is
    unchanged); the app's pages key their cached results on these."""
    return dict(dataset_stamps(store))


def stamped_version(store: Store, dataset: str) -> int:
    """``Store.dataset_version`` from ``dataset_versions`` (the file is not opened while it is unchanged),
    with its sentence for a dataset the store does not hold."""
    version = dataset_versions(store).get(dataset)
    if version is None:
        raise store.no_dataset(dataset)
    return version


def dataset_judges(store: Store, dataset: str) -> list[str]:
    """The dataset's judges, sorted, without loading its verdicts: those of its stored verdicts, or of its
    attached Parquet files read in place (``engine.store.attached.verdicts_relation``; the verdicts table
    holds none of theirs, and ``--judge`` on an attached dataset was refused as a judge it does not have)."""
    from engine.store.attached import verdicts_relation

    rel = verdicts_relation(store, dataset)
    rows = store.cursor().execute(f"SELECT DISTINCT judge FROM {rel} WHERE judge IS NOT NULL ORDER BY judge",
                                  params(rel)).fetchall()
    return [r[0] for r in rows]


def relation_judges(store: Store, relation: str | Relation) -> list[str]:
    """The distinct judges of a verdict relation (a table or a read_parquet scan), sorted: the count
    path names the judges it used without loading rows."""
    return [r[0] for r in store.cursor().execute(f"SELECT DISTINCT judge FROM {relation} ORDER BY judge",
                                                 params(relation)).fetchall()]


def relation_timestamp_count(store: Store, relation: str | Relation) -> int:
    """How many rows of a verdict relation carry a ``tstamp``: Elo plays them in time order only when some
    do."""
    return int(
        store.cursor().execute(f"SELECT count(tstamp) FROM {relation}", params(relation)).fetchall()[0][0]
    )


def is_synthetic(store: Store, dataset: str) -> bool:
    """Whether ``dataset`` is flagged synthetic (written by ``engine.ingest.synthetic``); False when
    absent."""
    row = store.cursor().execute("SELECT synthetic FROM datasets WHERE name = ?", [dataset]).fetchone()
    return bool(row is not None and row[0])


def dataset_models(store: Store, dataset: str) -> set[str]:
    """Every model name the dataset's verdicts compare (either side, valid or not; an attached dataset's
    read from its files), or its pair counts name: a dataset holds one or the other (migration 074), and the
    reference, the head-to-head and the maps place the names of both kinds. Read again only when the store
    file has changed since the last read (``Store.read_unless_changed``: the Data page asks on every run, a
    scan of the dataset's verdicts)."""
    from engine.store.attached import verdicts_relation

    def read() -> frozenset[str]:
        rel = verdicts_relation(store, dataset)
        return frozenset(r[0] for r in store.cursor().execute(
            f"SELECT model_a FROM {rel} UNION SELECT model_b FROM {rel} "
            "UNION SELECT model_a FROM pair_counts WHERE dataset = $d "
            "UNION SELECT model_b FROM pair_counts WHERE dataset = $d",
            {**(params(rel) or {}), "d": dataset}).fetchall())

    return set(store.read_unless_changed(f"models:{dataset}", read))


def require_dataset(store: Store, name: str) -> None:
    """Refuse, in one sentence listing the datasets there are, a name that is not one of them."""
    if not store.has_dataset(name):
        names = store.cursor().execute("SELECT name FROM datasets ORDER BY name").fetchall()
        known = ", ".join(r[0] for r in names) or "none"
        raise LensError(f"There is no dataset named {name!r} (datasets: {known}).")
