"""A store file's contents as comparable values, for tests that check two import paths store the same."""

from __future__ import annotations

from collections.abc import Iterable

import duckdb


def store_rows(path, in_order: Iterable[str] = (), skip_columns: Iterable[str] = ()) -> dict[str, object]:
    """Every table's rows and the sequences' last values. Tables named in ``in_order`` come whole, with
    their rowid, in scan order (the physical order is part of what is compared), as an Arrow table
    (``==`` is ``Table.equals``: the same column names, types, nulls and values, NaN unequal as in a
    tuple; fetched as Python tuples, vicuna80's 18,772 verdicts were half of a snapshot's 0.2 s of CPU,
    and the early-insert tests take 40+ snapshots); every other table's rows are sorted reprs, without
    timestamp columns (they differ by run) nor ``skip_columns`` (e.g. a source path that differs between
    the two runs' folders). Every table's columns come from one catalogue query."""
    ordered, skip = set(in_order), set(skip_columns)
    con = duckdb.connect(str(path), read_only=True)
    try:
        columns: dict[str, list[str]] = {}
        for table, column, kind in con.execute(
                "SELECT c.table_name, c.column_name, c.data_type FROM duckdb_columns() c "
                "JOIN duckdb_tables() t USING (database_name, schema_name, table_name) WHERE NOT t.temporary "
                "ORDER BY c.table_name, c.column_index").fetchall():
            names = columns.setdefault(table, [])
            if "TIMESTAMP" not in kind and column not in skip:
                names.append(f'"{column}"')
        out: dict[str, object] = {}
        for table, cols in columns.items():
            if table in ordered:
                out[table] = con.sql(f'SELECT rowid, * FROM "{table}" ORDER BY rowid').to_arrow_table()
                continue
            out[table] = sorted(map(repr, con.execute(f'SELECT {", ".join(cols)} FROM "{table}"').fetchall()))
        out["sequences"] = con.execute("SELECT sequence_name, last_value FROM duckdb_sequences() "
                                       "ORDER BY sequence_name").fetchall()
        return out
    finally:
        con.close()
