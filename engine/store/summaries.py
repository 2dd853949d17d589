"""Per-dataset summaries: the counts the dataset listing, the app's sidebar and ``python -m engine datasets``
show (verdicts, invalid ones, judges, prompts, models, the models each judge covers, the categories, the
battles), computed once per dataset version and kept in the store (migration 075). A dataset attached in
place is counted over its files (re-attaching it, which moves its version, counts them again, as for every
cache of its results).

Counting distinct models over every verdict takes seconds at ten million rows; a summary is one small row.
Rows are keyed by the dataset's store-wide version, which every write moves (``engine.store.writes``: import,
replace, rename, judge run, attach, map, import-texts), so a summary is never read for contents it was not
counted from; a missing one is counted and stored at the next read, and rows of older versions go then. The
counts are read and stored in one transaction, so they belong to the version stored beside them. A store
opened read-only gets its summaries counted and not stored.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import duckdb

from engine.errors import LensError
from engine.store.connection import Store
from engine.store.sql import Relation, params


@dataclass(frozen=True)
class DatasetSummary:
    """What one dataset version holds, counted over its verdicts (stored, or its attached Parquet files read
    in place) or its pair counts.

    ``verdicts``, ``invalid`` (winner 'invalid'), ``judges`` and ``prompts`` (distinct, over every verdict),
    ``models`` (distinct names on either side of a verdict or a stored pair count), ``judge_models`` (per
    judge with a valid verdict: the distinct models its valid verdicts compare, most first, then by name),
    ``categories`` (distinct, sorted, none for no category) and ``battles``: the outcomes it holds, each
    verdict that is not invalid (one model pair on one prompt, as presented: both presentation orders of a
    pair are two) plus a pair-count dataset's wins, ties and both-bad summed over its pairs. A pair-count
    dataset has no verdicts, so without ``battles`` its listing said nothing of its size."""

    verdicts: int
    invalid: int
    judges: int
    prompts: int
    models: int
    judge_models: tuple[tuple[str, int], ...]
    categories: tuple[str, ...]
    battles: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> DatasetSummary | None:
        """The stored summary, or None for a row written before a field was added (counted again)."""
        d = json.loads(text)
        if not all(f in d for f in cls.__dataclass_fields__):
            return None
        return cls(int(d["verdicts"]), int(d["invalid"]), int(d["judges"]), int(d["prompts"]),
                   int(d["models"]), tuple((str(j), int(n)) for j, n in d["judge_models"]),
                   tuple(str(c) for c in d["categories"]), int(d["battles"]))


def _one(con: duckdb.DuckDBPyConnection, sql: str, args: dict) -> tuple:
    row = con.execute(sql, args).fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    return row


def count_summary(con: duckdb.DuckDBPyConnection, dataset: str,
                  attached: Relation | None = None) -> DatasetSummary:
    """The summary of ``dataset`` counted from its rows now (what a stored summary must equal): its rows of
    the verdicts table and of the pair counts, or, for a dataset attached in place, the canonical rows of its
    Parquet files (``attached``: ``engine.store.attached.attached_relation``)."""
    # ``rows`` may be followed by further conditions (AND ...); ``args`` binds its parameters, ``both`` those
    # of a statement that also reads the pair counts ($d)
    rows = "verdicts WHERE dataset = $d" if attached is None else f"{attached} AS v WHERE TRUE"
    args: dict[str, object] = {"d": dataset} if attached is None else dict(params(attached) or {})
    both = {**args, "d": dataset}
    verdicts, invalid, judges, prompts = _one(con,
        "SELECT count(*), count(*) FILTER (WHERE winner = 'invalid'), count(DISTINCT judge), "
        f"count(DISTINCT prompt_id) FROM {rows}", args)
    # distinct per side first: a few hundred names per side, not every row, reach the union
    (models,) = _one(con,
        f"SELECT count(*) FROM (SELECT DISTINCT model_a FROM {rows} "
        f"UNION SELECT DISTINCT model_b FROM {rows} "
        "UNION SELECT model_a FROM pair_counts WHERE dataset = $d "
        "UNION SELECT model_b FROM pair_counts WHERE dataset = $d)", both)
    judge_models = con.execute(
        "SELECT judge, count(*) AS n FROM ("
        f"  SELECT DISTINCT judge, model_a AS m FROM {rows} AND winner <> 'invalid' "
        f"  UNION SELECT DISTINCT judge, model_b FROM {rows} AND winner <> 'invalid') "
        "GROUP BY judge ORDER BY n DESC, judge", args).fetchall()
    categories = con.execute(
        f"SELECT DISTINCT category FROM {rows} AND category IS NOT NULL ORDER BY 1", args).fetchall()
    (counted,) = _one(con,
        "SELECT coalesce(sum(coalesce(wins_a, 0) + coalesce(wins_b, 0) + coalesce(ties, 0) "
        "+ coalesce(both_bad, 0)), 0) FROM pair_counts WHERE dataset = $d", {"d": dataset})
    return DatasetSummary(int(verdicts), int(invalid), int(judges), int(prompts), int(models),
                          tuple((str(j), int(n)) for j, n in judge_models),
                          tuple(str(c[0]) for c in categories), int(verdicts) - int(invalid) + int(counted))


def _current(con: duckdb.DuckDBPyConnection, names: list[str] | None) -> list[tuple[str, int]]:
    rows = con.execute("SELECT name, version FROM datasets ORDER BY name").fetchall()
    return [(str(n), int(v)) for n, v in rows if names is None or n in names]


def _stored(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], DatasetSummary]:
    """The stored summaries by (dataset, version); a row of an older shape is left out (counted again)."""
    rows = con.execute("SELECT dataset, version, summary FROM dataset_summaries").fetchall()
    return {(str(d), int(v)): got for d, v, s in rows if (got := DatasetSummary.from_json(s)) is not None}


def _counted(store: Store, con: duckdb.DuckDBPyConnection, dataset: str) -> tuple[DatasetSummary, bool]:
    """``count_summary`` of a dataset, and whether it may be stored: not when the dataset is attached and its
    files cannot be read now (moved, deleted, damaged): it is then listed with nothing counted, and counted
    again at the next listing (the commands that read it say why they cannot)."""
    from engine.store.attached import attached_relation, attached_source

    if attached_source(store, dataset) is None:
        return count_summary(con, dataset), True
    try:  # the files on a cursor of their own: a failed read must not abort the caller's transaction
        return count_summary(store.cursor(), dataset, attached_relation(store, dataset)), True
    except (LensError, duckdb.Error):
        return count_summary(con, dataset), False


class Summaries(dict):
    """``summaries``' answer: name -> ``DatasetSummary``, and ``provisional``, the attached datasets whose
    files could not be read now: listed with nothing counted, under a version that does not move when the
    files come back, so a caller that keeps results by version must not keep these."""

    provisional: frozenset[str] = frozenset()


def summaries(store: Store, names: list[str] | None = None) -> Summaries:
    """The summary of every dataset (or of ``names``), by name: read where stored for the current version,
    else counted and stored (with the rows of versions that are gone dropped) in the same transaction."""
    out = Summaries()
    provisional: set[str] = set()
    if store.read_only:  # nothing is written; a store from before migration 075 has no summaries table
        cur = store.cursor()
        has_table = cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'dataset_summaries'"
                                " AND database_name = current_database()").fetchone()
        stored = _stored(cur) if has_table and has_table[0] else {}
        for n, v in _current(cur, names):
            got = stored.get((n, v))
            if got is None:
                got, kept = _counted(store, cur, n)
                if not kept:
                    provisional.add(n)
            out[n] = got
        out.provisional = frozenset(provisional)
        return out
    cur = store.cursor()
    current = _current(cur, names)
    stored = _stored(cur)
    if all(key in stored for key in current):  # the usual case: nothing to count, nothing written
        out.update((n, stored[(n, v)]) for n, v in current)
        return out
    with store.transaction() as tx:  # counts and versions from one snapshot
        current = _current(tx, names)
        stored = _stored(tx)
        for name, version in current:
            got = stored.get((name, version))
            if got is None:
                got, keep = _counted(store, tx, name)
                if keep:
                    tx.execute("INSERT OR REPLACE INTO dataset_summaries VALUES (?, ?, ?)",
                               [name, version, got.to_json()])
                else:
                    provisional.add(name)
            out[name] = got
        tx.execute("DELETE FROM dataset_summaries s WHERE NOT EXISTS "
                   "(SELECT 1 FROM datasets d WHERE d.name = s.dataset AND d.version = s.version)")
    out.provisional = frozenset(provisional)
    return out


def summary(store: Store, dataset: str) -> DatasetSummary:
    """The summary of one dataset (``summaries``); a KeyError when there is no such dataset."""
    return summaries(store, [dataset])[dataset]
