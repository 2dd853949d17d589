"""Per-dataset summaries: the counts the dataset listing, the app's sidebar and ``python -m engine datasets``
show (verdicts, invalid ones, judges, prompts, models, the models each judge covers, the categories),
computed once per dataset version and kept in the store (migration 075).

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

from engine.store.connection import Store


@dataclass(frozen=True)
class DatasetSummary:
    """What one dataset version holds, counted over its stored verdicts (or pair counts, for models).

    ``verdicts``, ``invalid`` (winner 'invalid'), ``judges`` and ``prompts`` (distinct, over every verdict),
    ``models`` (distinct names on either side of a verdict or a stored pair count), ``judge_models`` (per
    judge with a valid verdict: the distinct models its valid verdicts compare, most first, then by name)
    and ``categories`` (distinct, sorted, none for no category)."""

    verdicts: int
    invalid: int
    judges: int
    prompts: int
    models: int
    judge_models: tuple[tuple[str, int], ...]
    categories: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> DatasetSummary:
        d = json.loads(text)
        return cls(int(d["verdicts"]), int(d["invalid"]), int(d["judges"]), int(d["prompts"]),
                   int(d["models"]), tuple((str(j), int(n)) for j, n in d["judge_models"]),
                   tuple(str(c) for c in d["categories"]))


def _one(con: duckdb.DuckDBPyConnection, sql: str, args: dict) -> tuple:
    row = con.execute(sql, args).fetchone()
    assert row is not None  # an aggregate without GROUP BY returns one row
    return row


def count_summary(con: duckdb.DuckDBPyConnection, dataset: str) -> DatasetSummary:
    """The summary of ``dataset`` counted from its rows now (what a stored summary must equal)."""
    verdicts, invalid, judges, prompts = _one(con,
        "SELECT count(*), count(*) FILTER (WHERE winner = 'invalid'), count(DISTINCT judge), "
        "count(DISTINCT prompt_id) FROM verdicts WHERE dataset = $d", {"d": dataset})
    # distinct per side first: a few hundred names per side, not every row, reach the union
    (models,) = _one(con,
        "SELECT count(*) FROM (SELECT DISTINCT model_a FROM verdicts WHERE dataset = $d "
        "UNION SELECT DISTINCT model_b FROM verdicts WHERE dataset = $d "
        "UNION SELECT model_a FROM pair_counts WHERE dataset = $d "
        "UNION SELECT model_b FROM pair_counts WHERE dataset = $d)", {"d": dataset})
    judge_models = con.execute(
        "SELECT judge, count(*) AS n FROM ("
        "  SELECT DISTINCT judge, model_a AS m FROM verdicts WHERE dataset = $d AND winner <> 'invalid' "
        "  UNION SELECT DISTINCT judge, model_b FROM verdicts WHERE dataset = $d AND winner <> 'invalid') "
        "GROUP BY judge ORDER BY n DESC, judge", {"d": dataset}).fetchall()
    categories = con.execute(
        "SELECT DISTINCT category FROM verdicts WHERE dataset = $d AND category IS NOT NULL ORDER BY 1",
        {"d": dataset}).fetchall()
    return DatasetSummary(int(verdicts), int(invalid), int(judges), int(prompts), int(models),
                          tuple((str(j), int(n)) for j, n in judge_models),
                          tuple(str(c[0]) for c in categories))


def _current(con: duckdb.DuckDBPyConnection, names: list[str] | None) -> list[tuple[str, int]]:
    rows = con.execute("SELECT name, version FROM datasets ORDER BY name").fetchall()
    return [(str(n), int(v)) for n, v in rows if names is None or n in names]


def _stored(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, int], DatasetSummary]:
    return {(str(d), int(v)): DatasetSummary.from_json(s)
            for d, v, s in con.execute("SELECT dataset, version, summary FROM dataset_summaries").fetchall()}


def summaries(store: Store, names: list[str] | None = None) -> dict[str, DatasetSummary]:
    """The summary of every dataset (or of ``names``), by name: read where stored for the current version,
    else counted and stored (with the rows of versions that are gone dropped) in the same transaction."""
    if store.read_only:  # nothing is written; a store from before migration 075 has no summaries table
        cur = store.cursor()
        has_table = cur.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'dataset_summaries'"
                                " AND database_name = current_database()").fetchone()
        stored = _stored(cur) if has_table and has_table[0] else {}
        return {n: stored.get((n, v)) or count_summary(cur, n) for n, v in _current(cur, names)}
    cur = store.cursor()
    current = _current(cur, names)
    stored = _stored(cur)
    if all(key in stored for key in current):  # the usual case: nothing to count, nothing written
        return {n: stored[(n, v)] for n, v in current}
    with store.transaction() as tx:  # counts and versions from one snapshot
        current = _current(tx, names)
        stored = _stored(tx)
        out: dict[str, DatasetSummary] = {}
        for name, version in current:
            got = stored.get((name, version))
            if got is None:
                got = count_summary(tx, name)
                tx.execute("INSERT OR REPLACE INTO dataset_summaries VALUES (?, ?, ?)",
                           [name, version, got.to_json()])
            out[name] = got
        tx.execute("DELETE FROM dataset_summaries s WHERE NOT EXISTS "
                   "(SELECT 1 FROM datasets d WHERE d.name = s.dataset AND d.version = s.version)")
    return out


def summary(store: Store, dataset: str) -> DatasetSummary:
    """The summary of one dataset (``summaries``); a KeyError when there is no such dataset."""
    return summaries(store, [dataset])[dataset]
