"""A store file's contents as comparable values, for tests that check two import paths store the same."""

from __future__ import annotations

from collections.abc import Iterable

import duckdb


def store_rows(path, in_order: Iterable[str] = (), skip_columns: Iterable[str] = ()) -> dict[str, object]:
    """Every table's rows and the sequences' last values. Tables named in ``in_order`` come whole, with
    their rowid, in scan order (the physical order is part of what is compared); every other table's rows
    are sorted, without timestamp columns (they differ by run) nor ``skip_columns`` (e.g. a source path
    that differs between the two runs' folders)."""
    ordered, skip = set(in_order), set(skip_columns)
    con = duckdb.connect(str(path), read_only=True)
    try:
        out: dict[str, object] = {}
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary "
                                    "ORDER BY table_name").fetchall():
            if table in ordered:
                out[table] = con.execute(f'SELECT rowid, * FROM "{table}" ORDER BY rowid').fetchall()
                continue
            cols = [f'"{c}"' for c, t in con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                "ORDER BY column_index", [table]).fetchall() if "TIMESTAMP" not in t and c not in skip]
            out[table] = sorted(map(repr, con.execute(f'SELECT {", ".join(cols)} FROM "{table}"').fetchall()))
        out["sequences"] = con.execute("SELECT sequence_name, last_value FROM duckdb_sequences() "
                                       "ORDER BY sequence_name").fetchall()
        return out
    finally:
        con.close()
