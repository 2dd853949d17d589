"""Parquet files as a dataset read in place: the verdicts stay in the user's files, DuckDB scans them.

For verdict sets larger than the store should hold (10^8 rows), ``attach`` records a glob of Parquet
files under a dataset name; every read of that dataset (``store_relation``: the count path of the
leaderboard and bootstrap; ``Store.verdicts`` for the graph path) selects from
``read_parquet(glob)`` with the canonical columns. Required columns: prompt_id, model_a, model_b,
winner (A, B, tie, invalid; ``error``, the import format's and ``datasets export``'s spelling of an
invalid verdict, reads as invalid); judge (default ``judge``), variant (0), turn (1) and the rest
are optional. Nothing is copied; the files must stay where they are, and changing them changes the dataset
(re-attach to
bump its version for caches).

An attach may also say how the files' columns read as verdicts (``datasets attach --format, --map,
--map-value, --set, --model-name, --judge-name``): the ingest layer (``engine/ingest/attach_options.py``)
turns the options into a *definition*, kept as JSON beside the glob (migration 073), and every read builds
its SELECT from it here. A definition names, per canonical column, the file columns that feed it (the
first non-empty one wins), or a constant; a value map per column (cells compared lower-cased, trimmed,
runs of blanks as one); and exact renames per column. Values enter the SQL as bound parameters only.
"""

from __future__ import annotations

import glob as globlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from engine.errors import LensError
from engine.store.schema import DEFAULT_JUDGE, DEFAULT_TURN, STYLE_COLUMNS, VERDICT_COLUMNS
from engine.store.sql import Relation, identifier, in_values, param_name, params, scalar
from engine.store.writes import record_attached

if TYPE_CHECKING:
    import duckdb

    from engine.store.connection import Store

REQUIRED = ("prompt_id", "model_a", "model_b", "winner")
DEFAULTS = {
    "judge": f"'{DEFAULT_JUDGE}'", "variant": "0", "variant_kind": "'original'", "turn": str(DEFAULT_TURN),
}
TYPES = {
    "variant": "INTEGER",
    "turn": "INTEGER",
    "prob_a": "DOUBLE",
    "source_line": "INTEGER",
    "tstamp": "DOUBLE",
    "strength": "INTEGER",
    **{c: "DOUBLE" for c in STYLE_COLUMNS},
}


def parquet_columns(con: duckdb.DuckDBPyConnection, glob: str) -> set[str]:
    """The column names of the Parquet files a glob names (one clear sentence when none match)."""
    if "://" not in glob and not globlib.glob(glob, recursive=True):
        raise LensError(f"No file matches {glob!r}: attach reads Parquet files that exist (check the path; "
                        "quote a glob such as 'logs/*.parquet' so that the shell passes it whole).")
    try:
        rows = con.execute("DESCRIBE SELECT * FROM read_parquet($files, union_by_name = true)",
                           {"files": glob}).fetchall()
    except Exception as exc:  # duckdb.IOException / InvalidInputException: no file, not Parquet
        raise LensError(f"Cannot read Parquet files at {glob!r}: {str(exc).splitlines()[0]}") from None
    return {str(r[0]) for r in rows}


READ_COLUMNS = (*VERDICT_COLUMNS, "battle_id", "tstamp", *STYLE_COLUMNS)
"""The columns an attached dataset's SELECT gives (battle_id, tstamp: migration 030; style counts: 070)."""
UPPER = frozenset({"order"})
LOWER = frozenset({"variant_kind"})
"""Columns whose values the import reads case-insensitively, stored upper- or lower-cased."""


def plain_definition(columns: set[str]) -> dict:
    """The definition of files holding canonical columns (an attach without options): each column read
    from the file's column of that name, ``error`` read as an invalid verdict."""
    return {"sources": {c: [c] for c in READ_COLUMNS if c in columns and c != "dataset"},
            "values": {"winner": {"error": "invalid"}}}


def definition_columns(definition: Mapping) -> set[str]:
    """The canonical columns a definition fills from the files or with a constant."""
    return set(definition.get("sources", {})) | set(definition.get("constants", {}))


def _bound(kind: str, value: object, out: dict[str, object]) -> str:
    name = param_name(kind, value)
    out[name] = value
    return f"${name}"


def column_expr(col: str, definition: Mapping, out: dict[str, object]) -> str | None:
    """The SQL for canonical column ``col`` under ``definition`` (its values bound into ``out``), before
    any type cast; None when the definition does not fill it."""
    constants = definition.get("constants", {})
    if col in constants:
        expr = _bound("set", str(constants[col]), out)
    elif col in definition.get("sources", {}):
        files = [identifier(f) for f in definition["sources"][col]]
        expr = files[0] if len(files) == 1 else (
            "coalesce(" + ", ".join(f"nullif(CAST({f} AS VARCHAR), '')" for f in files) + ")")
    else:
        return None
    mapping = definition.get("values", {}).get(col)
    if mapping:
        key = f"lower(regexp_replace(trim(CAST({expr} AS VARCHAR)), '\\s+', ' ', 'g'))"
        whens = " ".join(f"WHEN {_bound('from', str(k), out)} THEN {_bound('to', str(v), out)}"
                         for k, v in mapping.items())
        expr = f"CASE {key} {whens} ELSE CAST({expr} AS VARCHAR) END"
    renames = definition.get("renames", {}).get(col)
    if renames:
        whens = " ".join(f"WHEN {_bound('old', str(k), out)} THEN {_bound('new', str(v), out)}"
                         for k, v in renames.items())
        expr = f"CASE CAST({expr} AS VARCHAR) {whens} ELSE CAST({expr} AS VARCHAR) END"
    return expr


def projection(definition: Mapping, out: dict[str, object], typed: bool = True) -> dict[str, str]:
    """Canonical column → its SQL over the files, for every column the definition fills; values bound
    into ``out``. ``typed``: cast as the store types it and cased as the import stores it (the checks
    read the values before, to name a bad one as the file holds it)."""
    exprs = {}
    for col in READ_COLUMNS:
        expr = column_expr(col, definition, out)
        if expr is None:
            continue
        if typed and col in TYPES:
            expr = f"({expr})::{TYPES[col]}"
        elif typed and col in UPPER:
            expr = f"upper(CAST({expr} AS VARCHAR))"
        elif typed and col in LOWER:
            expr = f"lower(CAST({expr} AS VARCHAR))"
        exprs[col] = expr
    return exprs


def canonical_select(glob: str, dataset: str, columns: set[str],
                     definition: Mapping | None = None) -> Relation:
    """A SELECT giving the canonical verdict columns (and battle_id / tstamp) and the style counts
    (``STYLE_COLUMNS``, NULL where the files have none) over the files, as ``definition`` reads them
    (``plain_definition(columns)`` when None); the glob, the dataset name and every value are bound."""
    values: dict[str, object] = {}
    exprs = projection(definition if definition is not None else plain_definition(columns), values)
    parts = []
    for col in dict.fromkeys(READ_COLUMNS):
        if col == "dataset":
            expr = "{dataset}"
        elif col in exprs:
            expr = exprs[col]
        elif col == "source_file":  # source order of files read in place: file name, then row
            expr = "filename"
        elif col == "source_line":
            expr = "(file_row_number + 1)::INTEGER"
        elif col in DEFAULTS:
            expr = DEFAULTS[col]
        else:
            expr = f"NULL::{TYPES.get(col, 'VARCHAR')}"
        parts.append(f"{expr} AS {identifier(col)}")
    sel = Relation.bind(f"SELECT {', '.join(parts)} FROM read_parquet({{files}}, union_by_name = true, "
                        "filename = true, file_row_number = true)", dataset=dataset, files=glob)
    return Relation(sel.sql, sel.values + tuple(values.items()))


def attached_glob(store: Store, dataset: str) -> str | None:
    """The glob of an attached dataset, or None for a dataset stored in the verdicts table."""
    found = attached_source(store, dataset)
    return None if found is None else found[0]


def attached_source(store: Store, dataset: str) -> tuple[str, dict | None] | None:
    """The glob and the column definition (None: canonical columns) of an attached dataset, or None for a
    dataset stored in the verdicts table. Read again only when the store file has changed since the last
    read (``Store.read_unless_changed``: every page run asks); the definition is parsed afresh for each
    caller (a caller changing it changes nothing kept)."""
    row = store.read_unless_changed(f"attached:{dataset}", lambda: _attached_row(store, dataset))
    if row is None:
        return None
    return row[0], (json.loads(row[1]) if row[1] else None)


def _attached_row(store: Store, dataset: str) -> tuple[str, str | None] | None:
    """``attached_source``'s read of the store: (files, definition as stored), or None. A store that cannot
    be opened (busy, damaged) raises its sentence, never reads as "not attached"."""
    import duckdb

    cur = store.cursor()  # StoreBusy / StoreError from the open go to the caller
    sql = "SELECT files, {} FROM attached_datasets WHERE name = ?"
    try:
        row = cur.execute(sql.format("definition"), [dataset]).fetchone()
    except duckdb.Error:  # a read-only store opened before migration 050 / 073
        try:
            row = cur.execute(sql.format("NULL"), [dataset]).fetchone()
        except duckdb.Error:
            return None
    if row is None:
        return None
    return str(row[0]), (str(row[1]) if row[1] else None)


def attached_relation(store: Store, dataset: str) -> Relation | None:
    """The canonical SELECT (in parentheses) of an attached dataset, or None when it is stored."""
    found = attached_source(store, dataset)
    if found is None:
        return None
    glob, definition = found
    cols = parquet_columns(store.cursor(), glob)
    sel = canonical_select(glob, dataset, cols, definition)
    return Relation(f"({sel})", sel.values)


def verdicts_relation(store: Store, dataset: str) -> Relation:
    """The SQL relation of a dataset's verdicts: its attached Parquet files read in place, else its rows of
    the verdicts table (none for a dataset of pair counts). ``engine.ranking.vote_query.store_relation``
    adds the refusal of pair counts for the analyses that need verdicts."""
    rel = attached_relation(store, dataset)
    if rel is not None:
        return rel
    return Relation("verdicts").filtered([in_values("dataset", [dataset])])


def attach(store: Store, name: str, glob: str, description: str | None = None,
           definition: Mapping | None = None) -> dict:
    """Register Parquet files (a glob) as dataset ``name`` read in place, read as ``definition`` says
    (None: canonical columns); returns its row and file counts."""
    if not name or not name.strip():
        raise LensError("A dataset name must not be empty.")
    if store.has_dataset(name):
        raise LensError(f"There is already a dataset named {name!r}; delete it or choose another name.")
    con = store.cursor()
    cols = parquet_columns(con, glob)
    filled = definition_columns(definition) if definition is not None else cols
    missing = [c for c in REQUIRED if c not in filled]
    if missing:
        raise LensError(
            f"The Parquet files at {glob!r} have no {', '.join(missing)} column(s); a verdict needs "
            f"{', '.join(REQUIRED)}."
        )
    sel = canonical_select(glob, name, cols, definition)
    n_files = int(scalar(con, "SELECT count(*) FROM glob(?)", [glob]))
    bad = con.execute(
        f"SELECT winner, count(*) FROM ({sel}) WHERE winner NOT IN ('A', 'B', 'tie', 'invalid') "
        "OR winner IS NULL GROUP BY winner LIMIT 3",
        params(sel),
    ).fetchall()
    if bad:
        raise LensError(
            f"The Parquet files at {glob!r} have winners other than A, B, tie or invalid "
            f"({', '.join(f'{w!r} x{c}' for w, c in bad)}); read them with --map-value winner:VALUE=A "
            "(or B, tie), or import the files."
        )
    n_rows = int(scalar(con, f"SELECT count(*) FROM ({sel})", params(sel)))
    with store.transaction() as tx:
        version = record_attached(tx, name, glob, description or f"Parquet read in place: {glob}",
                                  None if definition is None else json.dumps(definition, sort_keys=True))
    from engine.store.summaries import summaries

    summaries(store, [name])  # its listing counts (judges, models, ...) over the files now, not at a listing
    return {"dataset": name, "glob": glob, "files": n_files, "verdicts": n_rows, "version": version}


