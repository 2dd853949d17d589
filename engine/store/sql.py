"""SQL text and its values kept apart: every value is a bound parameter, every name a checked identifier.

A value (a dataset name, a judge, a file path or glob) never enters SQL text: queries pass it as a
parameter. Where a query is built from a relation made elsewhere (a dataset's verdicts, Parquet
files read in place, the import's stage files), the relation is a ``Relation``: its SQL text, with
named parameters ``$lens_…``, and their values. ``str(relation)`` is the text, so it composes in an
f-string like a table name; ``params(...)`` collects the values of the relations a statement uses,
to pass to ``execute``. A parameter's name is derived from its value, so one relation used twice
in a statement, or two relations filtering on the same value, bind the same name to the same
value. A table or column name, which cannot be bound, goes through ``identifier`` (plain names only).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import duckdb

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def identifier(name: str) -> str:
    """``name`` double-quoted as a SQL identifier, after checking it is a plain name (letters,
    digits, underscores): the one way a table or column name that cannot be bound enters SQL."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ValueError(f"Not a plain SQL identifier: {name!r}")
    return f'"{name}"'


def identifiers(names: Sequence[str]) -> str:
    """Several checked identifiers, comma-separated (a column list)."""
    return ", ".join(identifier(n) for n in names)


def param_name(kind: str, value: object) -> str:
    """The named parameter (without its ``$``) that binds ``value``: ``lens_<kind>_<digest of the value>``."""
    digest = hashlib.sha256(f"{type(value).__name__}:{value!r}".encode()).hexdigest()[:16]
    return f"lens_{identifier(kind)[1:-1]}_{digest}"


Condition = tuple[str, tuple[tuple[str, object], ...]]
"""A WHERE condition's SQL text and the values of its named parameters."""


def in_values(column: str, vals: Iterable[object]) -> Condition:
    """The condition ``column IN (...)`` over bound values (``column = value`` for one)."""
    bound = tuple((param_name(column, v), v) for v in vals)
    if len(bound) == 1:
        return f"{identifier(column)} = ${bound[0][0]}", bound
    return f"{identifier(column)} IN ({', '.join('$' + n for n, _ in bound) or 'NULL'})", bound


@dataclass(frozen=True)
class Relation:
    """A relation's SQL text (a table, a parenthesised SELECT, a table function call) with the
    values of its named parameters."""

    sql: str
    values: tuple[tuple[str, object], ...] = ()

    def __str__(self) -> str:
        return self.sql

    @classmethod
    def bind(cls, template: str, **values: object) -> Relation:
        """``template`` with each ``{key}`` replaced by the named parameter binding ``values[key]``."""
        names = {key: param_name(key, v) for key, v in values.items()}
        return cls(template.format(**{k: f"${n}" for k, n in names.items()}),
                   tuple((names[k], v) for k, v in values.items()))

    def filtered(self, conditions: Sequence[Condition]) -> Relation:
        """``(SELECT * FROM self WHERE ...)`` under the conditions (``in_values``, ``Condition``); self when
        none."""
        if not conditions:
            return self
        values = self.values + tuple(v for _, vs in conditions for v in vs)
        return Relation(f"(SELECT * FROM {self.sql} WHERE {' AND '.join(c for c, _ in conditions)})", values)


def params(*parts: object) -> dict[str, object] | None:
    """The named values of the ``Relation`` parts of one statement (plain strings bind nothing),
    for ``execute``; None when there are none."""
    out: dict[str, object] = {}
    for part in parts:
        if isinstance(part, Relation):
            out.update(part.values)
        elif isinstance(part, Mapping):
            out.update(part)
    return out or None


def scalar(con: duckdb.DuckDBPyConnection, sql: str, values: object = None) -> Any:
    """The first column of the one row a statement returns (a count, ``nextval``, ``RETURNING``)."""
    row = con.execute(sql, values).fetchone()
    if row is None:
        raise RuntimeError(f"The statement returned no row: {sql}")
    return row[0]


_scratch: tuple[int, duckdb.DuckDBPyConnection] | None = None
_scratch_lock = threading.Lock()


@contextmanager
def scratch() -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection of its own to one in-memory DuckDB database kept per process, closed on leaving: for
    queries over registered frames that touch no store (the count path's verdict frames, graph keys).

    Why: a ``duckdb.connect()`` starts a new database instance, ~20-25 ms of CPU each (duckdb 2.0), paid on
    every leaderboard fit over a frame; a cursor of a running instance costs microseconds. Each call gets a
    cursor (a connection of its own: what it registers is visible to it alone, so threads, e.g. the app's
    warming threads, do not share names or state); the instance is made once per process (a forked child
    makes its own: an instance's threads do not survive a fork). The instance has DuckDB's defaults, as a
    fresh ``duckdb.connect()`` had, so the same SQL gives the same rows."""
    global _scratch
    with _scratch_lock:
        if _scratch is None or _scratch[0] != os.getpid():
            _scratch = (os.getpid(), duckdb.connect())
        con = _scratch[1].cursor()
    try:
        yield con
    finally:
        con.close()
