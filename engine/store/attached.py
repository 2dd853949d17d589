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
"""

from __future__ import annotations

import glob as globlib
from typing import TYPE_CHECKING

from engine.errors import LensError
from engine.store.schema import DEFAULT_JUDGE, DEFAULT_TURN, STYLE_COLUMNS, VERDICT_COLUMNS
from engine.store.sql import Relation, identifier, params, scalar
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


def canonical_select(glob: str, dataset: str, columns: set[str]) -> Relation:
    """A SELECT giving the canonical verdict columns (and battle_id / tstamp when present) and the style
    counts (``STYLE_COLUMNS``, NULL where the files have none) over the files; the glob and the dataset
    name are bound parameters."""
    parts = []
    # battle_id, tstamp: migration 030; the style counts: migration 070
    for col in dict.fromkeys((*VERDICT_COLUMNS, "battle_id", "tstamp", *STYLE_COLUMNS)):
        if col == "dataset":
            expr = "{dataset}"
        elif col == "winner":  # 'error' is the import format's spelling of an invalid verdict (as exported)
            expr = "CASE \"winner\" WHEN 'error' THEN 'invalid' ELSE \"winner\" END"
        elif col in columns:
            expr = identifier(col) if col not in TYPES else f"{identifier(col)}::{TYPES[col]}"
        elif col == "source_file":  # source order of files read in place: file name, then row
            expr = "filename"
        elif col == "source_line":
            expr = "(file_row_number + 1)::INTEGER"
        elif col in DEFAULTS:
            expr = DEFAULTS[col]
        else:
            expr = f"NULL::{TYPES.get(col, 'VARCHAR')}"
        parts.append(f"{expr} AS {identifier(col)}")
    return Relation.bind(f"SELECT {', '.join(parts)} FROM read_parquet({{files}}, union_by_name = true, "
                         "filename = true, file_row_number = true)", dataset=dataset, files=glob)


def attached_glob(store: Store, dataset: str) -> str | None:
    """The glob of an attached dataset, or None for a dataset stored in the verdicts table."""
    try:
        row = (
            store.cursor().execute("SELECT files FROM attached_datasets WHERE name = ?", [dataset]).fetchone()
        )
    except Exception:  # a read-only store opened before migration 050
        return None
    return None if row is None else str(row[0])


def attached_relation(store: Store, dataset: str) -> Relation | None:
    """The canonical SELECT (in parentheses) of an attached dataset, or None when it is stored."""
    glob = attached_glob(store, dataset)
    if glob is None:
        return None
    cols = parquet_columns(store.cursor(), glob)
    sel = canonical_select(glob, dataset, cols)
    return Relation(f"({sel})", sel.values)


def attach(store: Store, name: str, glob: str, description: str | None = None) -> dict:
    """Register Parquet files (a glob) as dataset ``name`` read in place; returns its row and file counts."""
    if not name or not name.strip():
        raise LensError("A dataset name must not be empty.")
    if store.has_dataset(name):
        raise LensError(f"There is already a dataset named {name!r}; delete it or choose another name.")
    con = store.cursor()
    cols = parquet_columns(con, glob)
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise LensError(
            f"The Parquet files at {glob!r} have no {', '.join(missing)} column(s); a verdict needs "
            f"{', '.join(REQUIRED)}."
        )
    sel = canonical_select(glob, name, cols)
    n_files = int(scalar(con, "SELECT count(*) FROM glob(?)", [glob]))
    bad = con.execute(
        f"SELECT winner, count(*) FROM ({sel}) WHERE winner NOT IN ('A', 'B', 'tie', 'invalid') "
        "OR winner IS NULL GROUP BY winner LIMIT 3",
        params(sel),
    ).fetchall()
    if bad:
        raise LensError(
            f"The Parquet files at {glob!r} have winners other than A, B, tie or invalid "
            f"({', '.join(f'{w!r} x{c}' for w, c in bad)}); convert them or import with a value map."
        )
    n_rows = int(scalar(con, f"SELECT count(*) FROM ({sel})", params(sel)))
    with store.transaction() as tx:
        version = record_attached(tx, name, glob, description or f"Parquet read in place: {glob}")
    return {"dataset": name, "glob": glob, "files": n_files, "verdicts": n_rows, "version": version}


