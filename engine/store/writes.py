"""Every write to the shared dataset tables, and the one version counter they all advance.

The tables a dataset owns (``datasets``, ``verdicts``, ``prompts``, ``answers``, ``synthetic_truth``,
``dataset_files``, ``attached_datasets``, ``model_maps``, ``pair_counts``: its rows written by
``engine.store.pair_counts``) and the ``import_log`` are changed here and nowhere else: the importer,
``attach``, ``truth`` and judging's persist module call these functions inside their own transaction
(``Store.transaction()``), so one change stays one commit.

The version counter: every change to a dataset's rows takes a fresh number from the store-wide
sequence ``dataset_version_seq`` (``new_version``), whichever path writes. Numbers are never
reused and strictly increase, so a cache keyed by (dataset, version) (the results cache, the
app's ``CacheKey``) can never serve a frame computed before a write. The dataset's own change
count (``revision``, shown to users as its version) moves by one on the same writes. Tests
(tests/test_store_ownership.py) hold that no module outside ``engine/store/`` writes these tables or
advances the counter.

Values are always bound parameters; the only text spliced into SQL is a table or column name
(``engine.store.sql.identifier``) or a ``Relation`` over the import's stage files, whose values
are bound too.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from engine.frames import pd
from engine.store.sql import Relation, identifier, identifiers, param_name, params, scalar

DATASET_TABLES: tuple[str, ...] = ("verdicts", "prompts", "answers", "synthetic_truth", "dataset_files",
                                   "model_maps", "pair_counts")
"""Tables whose rows belong to one dataset by its name: a rename moves them, a delete removes them."""

CONTENT_TABLES: tuple[str, ...] = ("verdicts", "prompts", "answers", "pair_counts")
"""What ``replace`` swaps: the dataset's verdicts and their texts, or its pair counts (migration 074)."""


# -- the version counter ------------------------------------------------------------------------
def new_version(tx: duckdb.DuckDBPyConnection) -> int:
    """A fresh store-wide dataset version (never handed out before, larger than every earlier one)."""
    return int(scalar(tx, "SELECT nextval('dataset_version_seq')"))


def dataset_exists(tx: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether a dataset row of that name exists (read inside the caller's transaction)."""
    return tx.execute("SELECT 1 FROM datasets WHERE name = ?", [name]).fetchone() is not None


def create_dataset(tx: duckdb.DuckDBPyConnection, name: str, *, description: str | None, source: str | None,
                   synthetic: bool = False) -> int:
    """Insert a new dataset row (revision 1, a fresh version); returns the version."""
    version = new_version(tx)
    tx.execute("INSERT INTO datasets (name, description, source, synthetic, version, revision)"
               " VALUES (?, ?, ?, ?, ?, 1)", [name, description, source, synthetic, version])
    return version


def bump_dataset(tx: duckdb.DuckDBPyConnection, name: str, *, description: str | None = None,
                 source: str | None = None, synthetic: bool | None = None) -> int:
    """Record a change to an existing dataset: a fresh version, revision + 1, the time; a given
    description, source or synthetic flag replaces the stored one. Returns the version."""
    version = new_version(tx)
    tx.execute(
        "UPDATE datasets SET version = ?, revision = coalesce(revision, 0) + 1, updated_at = "
        "current_timestamp,"
        " description = coalesce(?, description), source = coalesce(?, source), synthetic = coalesce(?, "
        "synthetic) WHERE name = ?",
        [version, description, source, synthetic, name],
    )
    return version


def dataset_written(tx: duckdb.DuckDBPyConnection, name: str, *, description: str, source: str) -> int:
    """A judging write's record of change: create the dataset (with this description and source)
    when it is new, else bump it keeping its own description and source. Returns the version."""
    if dataset_exists(tx, name):
        return bump_dataset(tx, name)
    return create_dataset(tx, name, description=description, source=source)


def revision(tx: duckdb.DuckDBPyConnection, name: str) -> int:
    """The dataset's own change count, read inside the caller's transaction."""
    return int(scalar(tx, "SELECT revision FROM datasets WHERE name = ?", [name]))


def rename_dataset_rows(tx: duckdb.DuckDBPyConnection, old: str, new: str) -> int:
    """Move a dataset and every row it owns to a new name (a change: new version); returns it."""
    # left by an older dataset of that name
    tx.execute("DELETE FROM synthetic_truth WHERE dataset = ?", [new])
    for table in DATASET_TABLES:
        tx.execute(f"UPDATE {identifier(table)} SET dataset = ? WHERE dataset = ?", [new, old])
    tx.execute("DELETE FROM attached_datasets WHERE name = ?", [new])  # left by an older dataset of that name
    tx.execute("UPDATE attached_datasets SET name = ? WHERE name = ?", [new, old])  # files read in place
    # the judging runs that wrote it go with it, so an unfinished one still marks it incomplete
    # (judging.completeness) and a rerun under the new name completes it
    tx.execute("UPDATE judge_runs SET dataset = ? WHERE dataset = ?", [new, old])
    # one UPDATE of the row: DuckDB refuses a second change to a key in one transaction
    version = new_version(tx)
    tx.execute("UPDATE datasets SET name = ?, version = ?, revision = coalesce(revision, 0) + 1,"
               " updated_at = current_timestamp WHERE name = ?", [new, version, old])
    return version


def delete_dataset_rows(tx: duckdb.DuckDBPyConnection, name: str) -> int:
    """Delete a dataset and every row it owns; returns how many verdicts went."""
    n = int(scalar(tx, "SELECT count(*) FROM verdicts WHERE dataset = ?", [name]))
    for table in DATASET_TABLES:
        tx.execute(f"DELETE FROM {identifier(table)} WHERE dataset = ?", [name])
    tx.execute("DELETE FROM attached_datasets WHERE name = ?", [name])
    tx.execute("DELETE FROM datasets WHERE name = ?", [name])
    return n


def clear_content(tx: duckdb.DuckDBPyConnection, dataset: str, *, ids_below: int | None = None) -> None:
    """Delete the dataset's verdicts, prompts and answers (an import with ``replace``). ``ids_below``:
    only verdicts numbered below it go (the import's early insert put the new ones in first, numbered
    from it: ``engine.ingest.early_insert``)."""
    for table in CONTENT_TABLES:
        if table == "verdicts" and ids_below is not None:
            tx.execute("DELETE FROM verdicts WHERE dataset = ? AND verdict_id < ?", [dataset, ids_below])
        else:
            tx.execute(f"DELETE FROM {identifier(table)} WHERE dataset = ?", [dataset])


def clear_truth(tx: duckdb.DuckDBPyConnection, dataset: str) -> None:
    """Delete the dataset's synthetic ground truth (it belongs to the rows it was generated with)."""
    tx.execute("DELETE FROM synthetic_truth WHERE dataset = ?", [dataset])


def insert_truth(
    tx: duckdb.DuckDBPyConnection, dataset: str, truth: pd.DataFrame, columns: Sequence[str]
) -> None:
    """Replace the dataset's synthetic ground truth by the rows of ``truth`` (``columns``)."""
    clear_truth(tx, dataset)
    tx.register("_truth", truth[list(columns)])
    cols = identifiers(columns)
    tx.execute(f"INSERT INTO synthetic_truth ({cols}) SELECT {cols} FROM _truth")
    tx.unregister("_truth")


# -- an import's rows ------------------------------------------------------------------------------
def insert_verdicts_from(tx: duckdb.DuckDBPyConnection, dataset: str, relation: Relation,
                         columns: Sequence[str]) -> None:
    """Append the rows of ``relation`` (a SELECT over the import's stage, with a ``seq`` column) as
    the dataset's verdicts, in ``seq`` order."""
    cols, name = identifiers(columns), param_name("dataset", dataset)
    tx.execute(
        f'INSERT INTO verdicts ("dataset", {cols}) SELECT ${name}, {cols} FROM ({relation}) ORDER BY seq',
        params(relation, {name: dataset}),
    )


def insert_numbered_verdicts(tx: duckdb.DuckDBPyConnection, dataset: str, good_file: str, n: int,
                             columns: Sequence[str]) -> None:
    """Append the ``n`` rows of one staged Parquet file whose ``seq`` strictly increases in file order
    as the dataset's verdicts, in file order, with the ids ``insert_verdicts_from`` would give them.

    Why: with the ids drawn by the column's default (``nextval`` row by row) and ``ORDER BY seq``,
    DuckDB's insert runs on one core; with the ids given (``first + file_row_number``) it runs on all,
    for the same CPU. The ``n`` ids are drawn from ``verdict_id_seq`` first, so the sequence moves as
    before, and a failed insert (DuckDB rolls no sequence back) burns them as the old insert does."""
    first = draw_verdict_ids(tx, n)
    cols, name = identifiers(columns), param_name("dataset", dataset)
    tx.execute(
        f'INSERT INTO verdicts ("verdict_id", "dataset", {cols}) SELECT $first + file_row_number, ${name}, '
        f"{cols} FROM read_parquet($file, file_row_number = true)",
        {"first": first, name: dataset, "file": good_file},
    )


def draw_verdict_ids(tx: duckdb.DuckDBPyConnection, n: int) -> int:
    """Draw ``n`` ids from ``verdict_id_seq`` (as the column's default would, one by one) and return the
    first; they are consecutive, or this raises (one connection draws in a row; anything else is a bug)."""
    row = tx.execute(
        "SELECT min(v), max(v), count(*) FROM (SELECT nextval('verdict_id_seq') AS v FROM range(?))", [n]
    ).fetchone()
    first, last, drawn = row if row is not None else (0, -1, 0)
    if drawn != n or last - first != n - 1:
        raise RuntimeError(f"verdict ids drawn out of order: {first}..{last} for {n} rows")
    return int(first)


def next_verdict_id(tx: duckdb.DuckDBPyConnection) -> int:
    """The id ``verdict_id_seq`` will hand out next, read without drawing it (DuckDB rolls no sequence
    back, so a transaction that may be rolled back must not draw): the import's early insert
    (``engine.ingest.early_insert``) numbers its rows from it and draws them at its end."""
    rows = tx.execute(
        "SELECT start_value, increment_by, last_value FROM duckdb_sequences() WHERE sequence_name = "
        "'verdict_id_seq' AND database_name = current_database() AND schema_name = current_schema()"
    ).fetchall()
    if len(rows) != 1:
        raise RuntimeError("the store has no verdict_id_seq")
    start, step, last = rows[0]
    return int(start if last is None else last + step)


def verdicts_from(tx: duckdb.DuckDBPyConnection, dataset: str, first: int) -> int:
    """How many of the dataset's verdicts are numbered ``first`` or above, inside the caller's
    transaction: the early insert's rows are exactly those when this equals their count (then the rows
    numbered below ``first`` are the ones stored before the import)."""
    return int(scalar(tx, "SELECT count(*) FROM verdicts WHERE dataset = ? AND verdict_id >= ?",
                      [dataset, first]))


def insert_verdict_batch(tx: duckdb.DuckDBPyConnection, dataset: str, batch: object, first: int,
                         columns: Sequence[str]) -> None:
    """Append one staged batch of good rows (an Arrow table of ``staging.SCHEMAS['good']``, in ``seq``
    order) as the dataset's verdicts numbered ``first``, ``first + 1``, ... in table order: the rows and
    ids ``insert_numbered_verdicts`` gives the same rows when they are read back from the stage file.

    The table goes in as a relation (``from_arrow``, every column of ``verdicts`` in its order, DuckDB
    casting as an INSERT does): a table ``register``-ed on the connection stayed in memory after
    ``unregister`` (0.4 GB per million rows held until the transaction's end, 4 GB at ten million)."""
    import numpy as np
    import pyarrow as pa

    assert isinstance(batch, pa.Table)
    n = batch.num_rows
    order = [str(r[0]) for r in tx.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = 'verdicts' AND database_name = "
        "current_database() AND schema_name = current_schema() ORDER BY column_index").fetchall()]
    given = {"verdict_id": pa.array(np.arange(first, first + n, dtype=np.int64)),
             "dataset": pa.repeat(pa.scalar(dataset, pa.string()), n)}
    missing = [c for c in order if c not in given and c not in columns]
    if missing:  # an INSERT naming ``columns`` would give these their defaults: not this path's to guess
        raise RuntimeError(f"the batch has no column {', '.join(missing)} of verdicts")
    numbered = pa.table({c: given[c] if c in given else batch.column(c) for c in order})
    tx.from_arrow(numbered).insert_into("verdicts")


def upsert_texts_from(tx: duckdb.DuckDBPyConnection, dataset: str, kind: str, relation: Relation) -> None:
    """Insert or replace the dataset's prompt (``kind`` = prompts) or answer texts from ``relation``."""
    cols = {"prompts": ("prompt_id", "variant", "turn", "category", "variant_kind", "text"),
            "answers": ("prompt_id", "variant", "turn", "model", "text")}[kind]
    names, name = identifiers(cols), param_name("dataset", dataset)
    tx.execute(f"INSERT OR REPLACE INTO {identifier(kind)} (dataset, {names}) SELECT ${name}, {names} "
               f"FROM ({relation})", params(relation, {name: dataset}))


TEXT_KEYS: dict[str, tuple[str, ...]] = {"prompts": ("prompt_id", "variant", "turn"),
                                          "answers": ("prompt_id", "variant", "turn", "model")}
"""The key of a prompt text and of an answer text within a dataset (the tables' primary keys)."""


def texts_changed(tx: duckdb.DuckDBPyConnection, dataset: str, kind: str, relation: Relation) -> int:
    """How many rows of ``relation`` (``kind``'s key, text, and a prompt's category) would change what the
    dataset stores: a new key, another text, or a prompt category given and different."""
    keys, name = identifiers(TEXT_KEYS[kind]), param_name("dataset", dataset)
    table = identifier(kind)
    # texts compared by their 64-bit hashes: the sets hold keys and hashes, not the texts (a false
    # "unchanged" needs a new text whose hash equals the stored one's: chance 2^-64 a key)
    checks = [f"SELECT {keys}, hash(text) FROM ({relation}) EXCEPT "
              f"SELECT {keys}, hash(text) FROM {table} WHERE dataset = ${name}"]
    if kind == "prompts":
        checks.append(f"SELECT {keys}, category FROM ({relation}) WHERE category IS NOT NULL EXCEPT "
                      f"SELECT {keys}, category FROM {table} WHERE dataset = ${name}")
    return sum(int(scalar(tx, f"SELECT count(*) FROM ({sql})", params(relation, {name: dataset})))
               for sql in checks)


_CATEGORY_FROM_PROMPT = (
    "v.dataset = $dataset AND p.dataset = $dataset AND v.category IS NULL AND p.category IS NOT NULL "
    "AND p.prompt_id = v.prompt_id AND p.variant = v.variant AND p.turn = v.turn")
"""A stored verdict without a category (``v``) and its prompt's stored text with one (``p``)."""


def uncategorised_verdicts(tx: duckdb.DuckDBPyConnection, dataset: str) -> int:
    """How many stored verdicts of ``dataset`` have no category while their prompt's stored text has one."""
    return int(scalar(tx, f"SELECT count(*) FROM verdicts v WHERE EXISTS "
                          f"(SELECT 1 FROM prompts p WHERE {_CATEGORY_FROM_PROMPT})", {"dataset": dataset}))


def fill_verdict_categories(tx: duckdb.DuckDBPyConnection, dataset: str) -> int:
    """Give every stored verdict of ``dataset`` without a category its prompt's category (same prompt id,
    variant and turn) and return how many took one. The category filters of every command, page and
    the head-to-head browser read the verdicts' category, so a category that arrives only with the prompt
    texts (MT-Bench's ``question.jsonl``) must land there to be filterable; a verdict's own category wins."""
    n = uncategorised_verdicts(tx, dataset)
    if n:
        tx.execute(f"UPDATE verdicts v SET category = p.category FROM prompts p "
                   f"WHERE {_CATEGORY_FROM_PROMPT}", {"dataset": dataset})
    return n


def upsert_text_file_rows(tx: duckdb.DuckDBPyConnection, dataset: str, kind: str, relation: Relation) -> None:
    """Insert the prompt or answer texts of ``relation`` (one row per key) read from text files
    (``import-texts``): a stored key gets the new text; a prompt keeps its stored category when the file
    gives none, and its variant kind and lineage always."""
    keys = TEXT_KEYS[kind]
    cols = (*keys, "category", "variant_kind", "text") if kind == "prompts" else (*keys, "text")
    update = "text = excluded.text" + (", category = coalesce(excluded.category, prompts.category)"
                                       if kind == "prompts" else "")
    names, name = identifiers(cols), param_name("dataset", dataset)
    tx.execute(f"INSERT INTO {identifier(kind)} (dataset, {names}) SELECT ${name}, {names} FROM ({relation}) "
               f"ON CONFLICT (dataset, {identifiers(keys)}) DO UPDATE SET {update}",
               params(relation, {name: dataset}))


def record_files(tx: duckdb.DuckDBPyConnection, dataset: str, hashes: dict[str, str], import_id: int, *,
                 replace: bool) -> None:
    """Record the content hash of each imported file (``replace``: forget the dataset's earlier files).

    One statement for all files (a statement per file cost 3.4 ms each, 0.7 s for vicuna80's 204 files on
    every new store); two files with the same bytes keep the later name, as row-by-row replacing did."""
    if replace:
        tx.execute("DELETE FROM dataset_files WHERE dataset = ?", [dataset])
    by_digest = {digest: name for name, digest in hashes.items()}
    if not by_digest:
        return
    rows = ", ".join(["(?, ?, ?, ?)"] * len(by_digest))
    values = [v for digest, name in by_digest.items() for v in (dataset, digest, name, import_id)]
    tx.execute("INSERT OR REPLACE INTO dataset_files (dataset, content_hash, source, import_id) "
               f"VALUES {rows}", values)


def log_import(tx: duckdb.DuckDBPyConnection, *, dataset: str, source: str, fmt: str | None, rows_read: int,
               rows_stored: int, rows_rejected: int, rows_invalid: int, mode: str, status: str, detail: str,
               content_hashes: str | None = None, dropped_columns: str | None = None) -> int:
    """One ``import_log`` row (every import, stored or refused, writes one); returns its id."""
    return int(scalar(
        tx,
        """INSERT INTO import_log (dataset, source, format, rows_read, rows_stored, rows_rejected,
                                   rows_invalid, mode, status, detail, content_hashes, dropped_columns)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING import_id""",
        [dataset, source, fmt, rows_read, rows_stored, rows_rejected, rows_invalid, mode, status, detail,
         content_hashes, dropped_columns],
    ))


# -- judging's rows --------------------------------------------------------------------------------
PROMPT_TEXT_COLUMNS = ("prompt_id", "variant", "turn", "category", "variant_kind", "parent_variant", "text")
ANSWER_TEXT_COLUMNS = ("prompt_id", "variant", "turn", "model", "text")
JUDGED_COLUMNS = ("prompt_id", "variant", "variant_kind", "turn", "category", "model_a", "model_b", "winner",
                  "order", "prob_a", "explanation", "source_line")


def _insert_frame(tx: duckdb.DuckDBPyConnection, verb: str, table: str, dataset: str, frame: pd.DataFrame,
                  columns: Sequence[str]) -> None:
    tx.register("_rows", frame[list(columns)])
    try:
        cols = identifiers(columns)
        tx.execute(f"{verb} {identifier(table)} (dataset, {cols}) SELECT ?, {cols} FROM _rows", [dataset])
    finally:
        tx.unregister("_rows")


def _texts_differ(tx: duckdb.DuckDBPyConnection, table: str, dataset: str, frame: pd.DataFrame,
                  columns: Sequence[str]) -> bool:
    """Whether ``frame`` holds a row the dataset does not already store exactly (a new key or a
    changed value; EXCEPT compares NULLs as equal)."""
    tx.register("_rows", frame[list(columns)])
    try:
        cols = identifiers(columns)
        rows = tx.execute(f"SELECT count(*) FROM (SELECT {cols} FROM _rows EXCEPT "
                          f"SELECT {cols} FROM {identifier(table)} WHERE dataset = ?)", [dataset]).fetchall()
    finally:
        tx.unregister("_rows")
    return bool(rows[0][0])


def upsert_prompts(tx: duckdb.DuckDBPyConnection, dataset: str, prompts: pd.DataFrame) -> bool:
    """Insert or replace prompt texts (PROMPT_TEXT_COLUMNS) when any is new or changed; returns
    whether it wrote (the caller then records the change). Texts already stored as they are (a
    rerun's) are not rewritten and move no version: nothing a cache keyed by it holds went stale."""
    if not _texts_differ(tx, "prompts", dataset, prompts, PROMPT_TEXT_COLUMNS):
        return False
    _insert_frame(tx, "INSERT OR REPLACE INTO", "prompts", dataset, prompts, PROMPT_TEXT_COLUMNS)
    return True


def insert_prompts(tx: duckdb.DuckDBPyConnection, dataset: str, prompts: pd.DataFrame) -> None:
    """Insert new prompt texts (PROMPT_TEXT_COLUMNS; a key already stored is an error: new variants)."""
    _insert_frame(tx, "INSERT INTO", "prompts", dataset, prompts, PROMPT_TEXT_COLUMNS)


def upsert_answers(tx: duckdb.DuckDBPyConnection, dataset: str, answers: pd.DataFrame) -> bool:
    """Insert or replace answer texts (ANSWER_TEXT_COLUMNS) when any is new or changed; returns
    whether it wrote (the caller then records the change), as ``upsert_prompts``."""
    if not _texts_differ(tx, "answers", dataset, answers, ANSWER_TEXT_COLUMNS):
        return False
    _insert_frame(tx, "INSERT OR REPLACE INTO", "answers", dataset, answers, ANSWER_TEXT_COLUMNS)
    return True


def replace_pair_verdicts(tx: duckdb.DuckDBPyConnection, dataset: str, judge: str, rows: pd.DataFrame,
                          source: str) -> None:
    """Replace this judge's verdicts on every pair instance in ``rows`` (JUDGED_COLUMNS) by ``rows``:
    a rerun or a resumed run leaves exactly one set."""
    tx.register("_v", rows[list(JUDGED_COLUMNS)])
    try:
        tx.execute(
            "DELETE FROM verdicts v USING (SELECT DISTINCT prompt_id, variant, turn, model_a, model_b FROM "
            "_v) k"
            " WHERE v.dataset = ? AND v.judge = ? AND v.prompt_id = k.prompt_id AND v.variant = k.variant"
            " AND v.turn = k.turn AND v.model_a = k.model_a AND v.model_b = k.model_b",
            [dataset, judge],
        )
        cols = [c for c in JUDGED_COLUMNS if c != "source_line"]
        tx.execute(
            f"INSERT INTO verdicts (dataset, judge, {identifiers(cols)}, source_file, source_line)"
            f" SELECT ?, ?, {identifiers(cols)}, ?, source_line FROM _v",
            [dataset, judge, source],
        )
    finally:
        tx.unregister("_v")


# -- Parquet read in place --------------------------------------------------------------------------
def record_attached(tx: duckdb.DuckDBPyConnection, name: str, glob: str, description: str,
                    definition: str | None = None) -> int:
    """Register ``glob`` as dataset ``name`` read in place (a new dataset row) with its column definition
    (JSON, ``engine.store.attached``; None: canonical columns); returns its version."""
    tx.execute("DELETE FROM attached_datasets WHERE name = ?", [name])  # left by a deleted dataset
    version = create_dataset(tx, name, description=description, source=glob)
    tx.execute("INSERT INTO attached_datasets (name, files, definition) VALUES (?, ?, ?)",
               [name, glob, definition])
    return version
