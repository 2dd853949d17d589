"""``datasets attach`` held to the import's rules: Parquet files read in place are checked once, when
they are attached, so that no later command meets what an import would have refused.

Two checks, both streaming (memory bounded by one batch, whatever the files' size): the import's
decompression guard (``parquet_reader.check_expansion``: a small file whose text expands past the
stated ratio is refused before anything decodes it, and so is a cell longer than any verdict field
may hold), and the import's row rules in SQL over the files (an empty or blank name, the same model
on both sides, a variant or turn that is not an integer in the store's range, ``prob_a`` outside
[0, 1] or NaN, a ``tstamp`` that is not finite, a style count (``STYLE_COLUMNS``) that is negative,
NaN or no number, an ``order``, ``variant_kind`` or ``strength``
outside its vocabulary, a name over the name limit or one the import refuses as rendering blank or
as a look-alike: ``limits.name_problem``, the import's one definition, words it here too). A file
that breaks a rule is refused in one sentence naming the file, the row and the rule, with the count
of such rows: attach copies nothing, so it cannot set rows aside; importing the files does.
"""

from __future__ import annotations

import contextlib
import glob as globlib
import os
import unicodedata
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from engine.errors import LensError
from engine.ingest.attach_options import AttachOptions, attach_definition
from engine.ingest.cells import ID_COLUMNS
from engine.ingest.limits import (
    INT_MAX,
    INVISIBLE_RE,
    MARKS_ONLY_RE,
    MIXED_SCRIPT_RE,
    NAME_MAX_CHARS,
    TEXT_MAX_CHARS,
    batch_rows,
    name_problem,
)
from engine.ingest.parquet_reader import check_expansion
from engine.store.attached import attach, definition_columns, parquet_columns, projection
from engine.store.schema import STYLE_COLUMNS
from engine.store.sql import identifier

if TYPE_CHECKING:
    from engine.store.connection import Store

CELL_MAX_BYTES = 4 * TEXT_MAX_CHARS
"""Longest cell in bytes (the import's per-field cap: the longest text in 4-byte UTF-8)."""
NAME_SUSPECT_RE = f"{INVISIBLE_RE}|{MARKS_ONLY_RE}|{MIXED_SCRIPT_RE}"
"""The import's patterns for a name that may render blank or as a look-alike (``cells.name_suspects``):
a superset, so only the names it matches reach Python's ``name_problem``, which decides."""
NAME_PROBLEM_SQL = "lens_name_problem"
"""The SQL name of ``stored_name_problem`` on a store's connection (registered once per connection)."""
NAME_RULE = "renders blank or as a look-alike"
"""The words of the name rule in ``_rules``; the message replaces them with ``name_problem``'s."""


def stored_name_problem(value: str) -> str | None:
    """``limits.name_problem`` of a name as the import would store it (stripped, NFC), or None."""
    return name_problem(unicodedata.normalize("NFC", value.strip()))


def _register_name_problem(con: duckdb.DuckDBPyConnection) -> None:
    """Make ``stored_name_problem`` callable from SQL on this connection (its cursors share it)."""
    with contextlib.suppress(duckdb.CatalogException):  # registered already, by an earlier attach
        con.create_function(NAME_PROBLEM_SQL, stored_name_problem, ["VARCHAR"], "VARCHAR",
                            side_effects=False)


def attach_parquet(store: Store, name: str, glob: str, description: str | None = None,
                   options: AttachOptions | None = None) -> dict:
    """Attach Parquet files as dataset ``name`` (``engine.store.attached.attach``), read as ``options``
    say (``attach_options``), once they pass the import's decompression guard and row rules; returns
    attach's counts and ``notes`` (what the definition decided), or LensError."""
    con = store.cursor()
    columns = parquet_columns(con, glob)  # one sentence when no file matches
    paths = sorted(globlib.glob(glob, recursive=True)) if "://" not in glob else []
    made = attach_definition(columns, glob, options or AttachOptions(), paths)
    if paths:
        for path in paths:
            check_file_expansion(path, list(made.file_columns))
    check_rows(con, glob, made.definition)
    info = attach(store, name, glob, description, made.definition)
    return {**info, "notes": list(made.notes)}


def _is_text(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        t = t.value_type
    return any(f(t) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                              pa.types.is_large_binary))


def check_file_expansion(path: str, columns: list[str]) -> None:
    """The import's decompression guard on one file: the columns' stored size from the footer, then
    their decoded text batch by batch with dictionaries kept encoded (lengths only, nothing decoded),
    refused once past ``check_expansion``'s ratio; a cell longer than CELL_MAX_BYTES is refused too."""
    size = max(os.path.getsize(path), 1)
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise LensError(f"{path} cannot be read as Parquet ({exc}).") from None
    schema = pf.schema_arrow
    read = [c for c in columns if c in schema.names]
    md = pf.metadata
    check_expansion(path, size, sum(
        md.row_group(g).column(j).total_uncompressed_size
        for g in range(md.num_row_groups) for j in range(md.num_columns)
        if md.row_group(g).column(j).path_in_schema.split(".")[0] in read
    ))
    texts = [c for c in read if _is_text(schema.field(c).type)]
    if not texts:
        return
    decoded, first = 0, 1
    try:
        batches = pq.ParquetFile(path, read_dictionary=texts).iter_batches(
            batch_size=batch_rows(), columns=texts)
        for batch in batches:
            for c in texts:
                arr = batch.column(c)
                if pa.types.is_dictionary(arr.type):
                    lens = pc.take(pc.binary_length(arr.dictionary), arr.indices)
                else:
                    lens = pc.binary_length(arr)
                lens_np = np.asarray(pc.fill_null(lens, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
                if len(lens_np) and lens_np.max() > CELL_MAX_BYTES:
                    row = int(lens_np.argmax())
                    raise LensError(
                        f"{path} row {first + row}: {c} is {int(lens_np[row]):,} bytes long, more than any "
                        f"verdict field may hold ({CELL_MAX_BYTES:,}); nothing was attached."
                    )
                decoded += int(lens_np.sum())
            check_expansion(path, size, decoded)
            first += batch.num_rows
    except LensError:
        raise
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise LensError(f"{path} cannot be read as Parquet ({exc}).") from None


def _rules(columns: set[str]) -> list[tuple[str, str, str]]:
    """(column, SQL that is true on a row the import would refuse, the rule in words) per present
    column; ``{v}`` in the SQL is the column's value as text, ``{d}`` as a number."""
    whole = f"isfinite({{d}}) AND {{d}} >= 0 AND {{d}} <= {INT_MAX} AND {{d}} = floor({{d}})"
    rules = [(c, "{v} IS NULL OR trim({v}) = ''", "is empty") for c in ("prompt_id", "model_a", "model_b")]
    for c in ID_COLUMNS:
        rules.append((c, f"length({{v}}) > {NAME_MAX_CHARS}", f"is longer than {NAME_MAX_CHARS} characters"))
        rules.append((c, f"CASE WHEN regexp_matches({{v}}, '{NAME_SUSPECT_RE}') "
                         f"THEN {NAME_PROBLEM_SQL}({{v}}) IS NOT NULL ELSE false END", NAME_RULE))
    if "model_a" in columns:
        rules.append(("model_b", '{v} = CAST("model_a" AS VARCHAR)', "is the same model as model_a"))
    rules += [(c, f"{{v}} IS NOT NULL AND NOT coalesce({whole}, false)",
               f"is not an integer from 0 to {INT_MAX:,}") for c in ("variant", "turn")]
    rules += [
        ("prob_a", "{v} IS NOT NULL AND NOT coalesce(isfinite({d}) AND {d} >= 0 AND {d} <= 1, false)",
         "is not a number in [0, 1]"),
        ("tstamp", "{v} IS NOT NULL AND NOT coalesce(isfinite({d}), false)", "is not a finite time"),
        ("strength", "{v} IS NOT NULL AND coalesce({d} NOT IN (1, 2), true)", "is not 1 or 2"),
        ("order", "{v} IS NOT NULL AND upper({v}) NOT IN ('AB', 'BA')", "is not AB or BA"),
        ("variant_kind", "{v} IS NOT NULL AND lower({v}) NOT IN ('original', 'paraphrase', 'sample')",
         "is not original, paraphrase or sample"),
    ]
    rules += [(c, "{v} IS NOT NULL AND NOT coalesce(isfinite({d}) AND {d} >= 0, false)",
               "is not a count (a finite number, 0 or more)") for c in STYLE_COLUMNS]
    return [r for r in rules if r[0] in columns]


def check_rows(con: duckdb.DuckDBPyConnection, glob: str, definition: dict) -> None:
    """Refuse files holding a row the import would refuse (``_rules``) once read as ``definition`` says,
    in one sentence with the first such row (file order) and how many there are. One streaming scan; the
    first row by a top-1."""
    columns = definition_columns(definition)
    conds = []
    for c, sql, _ in _rules(columns):
        v = f"CAST({identifier(c)} AS VARCHAR)"
        d = f"TRY_CAST({identifier(c)} AS DOUBLE)"
        conds.append(f"coalesce(({sql.replace('{v}', v).replace('{d}', d)}), false)")
    if not conds:
        return
    _register_name_problem(con)
    bound: dict[str, object] = {"files": glob}
    exprs = projection(definition, bound, typed=False)  # values as the files hold them, before any cast
    src = (f"(SELECT {', '.join(f'{e} AS {identifier(c)}' for c, e in exprs.items())}, filename, "
           "file_row_number FROM read_parquet($files, union_by_name = true, filename = true, "
           "file_row_number = true))")
    flags = ", ".join(f"{c} AS b{i}" for i, c in enumerate(conds))
    try:
        row = con.execute(
            f"SELECT filename, file_row_number, {flags} FROM {src} WHERE {' OR '.join(conds)} "
            "ORDER BY filename, file_row_number LIMIT 1", bound).fetchone()
        if row is None:
            return
        n_bad = con.execute(f"SELECT count(*) FROM {src} WHERE {' OR '.join(conds)}", bound).fetchone()
    except Exception as exc:  # duckdb: a file changed or unreadable between the scans
        raise LensError(f"Cannot read Parquet files at {glob!r}: {str(exc).splitlines()[0]}") from None
    rules = _rules(columns)
    broken = [rules[i] for i, hit in enumerate(row[2:]) if hit]
    cols = list(dict.fromkeys(c for c, _, _ in broken))
    found = con.execute(
        f"SELECT {', '.join(f'CAST({identifier(c)} AS VARCHAR)' for c in cols)} FROM {src} "
        "WHERE filename = $f AND file_row_number = $r", {**bound, "f": row[0], "r": row[1]}).fetchone()
    values = dict(zip(cols, found or [None] * len(cols), strict=True))

    def words(c: str, rule: str) -> str:
        problem = stored_name_problem(values[c]) if rule == NAME_RULE and values[c] is not None else None
        return problem or rule

    col = broken[0][0]
    shown = "NULL" if values[col] is None else repr(values[col][:60])
    also = "".join(f"; {c} {words(c, w)}" for c, _, w in broken[1:])
    n = int(n_bad[0]) if n_bad else 1
    raise LensError(
        f"{row[0]} row {int(row[1]) + 1} would not import: {col} {shown} {words(col, broken[0][2])}{also}"
        + (f" (and {n - 1:,} more such row(s))" if n > 1 else "")
        + "; nothing was attached: fix the files, or import them, which sets such rows aside."
    )
