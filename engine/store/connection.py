"""The DuckDB store: where it lives, its schema (named, versioned migrations) and typed reads.

Location: an explicit path, else ``$LENS_DB``, else ``data/lens.duckdb`` next to the shipped data.
Migrations are the ``engine/store/migrations/NNN_name.sql`` files, applied in order once each and recorded
in ``schema_migrations``; a module that needs tables adds a file there, never DDL in code.

DuckDB lets one process at a time hold a database file for writing. A long-lived process (the app)
therefore opens the store with ``keep_open=False`` and does its work inside ``store.session()``: the
file is released when the last session ends and reopened on the next use, so a ``judge`` run or an
``import`` from the command line can write to the same file while the app is open. Opening waits up
to ``lock_wait_s`` seconds for another process to let go of the file.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from engine.errors import LensError
from engine.store.schema import VERDICT_COLUMNS, VERDICT_DTYPES

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT / "data"
DEFAULT_DB_PATH = DATA_DIR / "lens.duckdb"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


class StoreError(LensError):
    """A problem with the store that the user can act on (one clear sentence)."""


class StoreBusy(StoreError):
    """Another process holds the store file's write lock."""


_DUCKDB_MAGIC = b"DUCK"


def check_store_file(path: Path) -> None:
    """Refuse a path that exists but is not a DuckDB database (DuckDB would silently open a CSV or
    Parquet file as a temporary in-memory database, and every write would be lost)."""
    if not path.exists():
        return
    if path.is_dir():
        raise StoreError(f"The store path {path} is a folder; give a file such as {path / 'lens.duckdb'}.")
    with open(path, "rb") as fh:
        head = fh.read(12)
    if len(head) < 12 or head[8:12] != _DUCKDB_MAGIC:
        raise StoreError(f"{path} exists but is not a DuckDB database; give a new or existing .duckdb file.")


_LOCK_CONFLICT = ("could not set lock on file", "conflicting lock")
"""What DuckDB says when another process holds the file's lock (and only then: a bare "lock" would
also match the "block" of a corrupt-file message, and a damaged store would be waited on as busy)."""


def is_lock_conflict(exc: BaseException) -> bool:
    """The open failed because another process holds the store file's lock."""
    text = str(exc).lower()
    return any(phrase in text for phrase in _LOCK_CONFLICT)


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """The store file: ``db`` if given, else ``$LENS_DB``, else ``data/lens.duckdb``."""
    if db:
        return Path(db)
    env = os.environ.get("LENS_DB")
    if env:
        return Path(env)
    return DEFAULT_DB_PATH


@dataclass(frozen=True)
class Migration:
    """One schema migration file: its number, name and SQL."""

    version: int
    name: str
    sql: str


def list_migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    """All migration files, sorted by version; duplicate versions are a programming error."""
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        m = _MIGRATION_NAME.match(path.name)
        if not m:
            raise StoreError(f"Migration file {path.name} does not match NNN_name.sql.")
        found.append(Migration(int(m.group(1)), m.group(2), path.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if len(versions) != len(set(versions)):
        raise StoreError(f"Two migrations share a version number in {directory}.")
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration not yet recorded, each in its own transaction; returns names applied."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ( version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
        " applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp)"
    )
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    applied = []
    for mig in list_migrations():
        if mig.version in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(mig.sql)
            con.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [mig.version, mig.name]
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(f"{mig.version:03d}_{mig.name}")
    return applied


class Store:
    """One DuckDB database with the Tournament Lens schema applied.

    ``keep_open=True`` (the command line) holds the file from open to close. ``keep_open=False``
    (the app) holds it only while a ``session()`` is active; ``con`` reopens it on demand.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        keep_open: bool = True,
        lock_wait_s: float = 0.0,
    ):
        self.path = resolve_db_path(path)
        self.read_only = read_only
        self.keep_open = keep_open
        self.lock_wait_s = float(lock_wait_s)
        self._con: duckdb.DuckDBPyConnection | None = None
        self._guard = threading.RLock()
        self._sessions = 0
        check_store_file(self.path)
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.session():
            if not read_only:
                migrate(self.con)

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file, waiting up to ``lock_wait_s`` while another process holds its lock."""
        deadline = time.monotonic() + self.lock_wait_s
        delay = 0.05
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.Error as exc:  # locked by another process, unreadable file, ...
                locked = is_lock_conflict(exc)
                if locked and time.monotonic() < deadline:
                    time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
                    delay = min(delay * 2, 0.5)
                    continue
                if locked:
                    raise StoreBusy(
                        f"The store at {self.path} is in use by another process (a judge run, an import "
                        "or another app); try again when it has finished."
                    ) from exc
                raise StoreError(f"Cannot open the store at {self.path}: {exc}") from exc

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The open connection, (re)opened on first use."""
        with self._guard:
            if self._con is None:
                self._con = self._connect()
            return self._con

    @contextmanager
    def session(self) -> Iterator[Store]:
        """A unit of work; with ``keep_open=False`` the file is released when the last one ends."""
        with self._guard:
            self._sessions += 1
        try:
            yield self
        finally:
            with self._guard:
                self._sessions -= 1
                if self._sessions == 0 and not self.keep_open:
                    self.release()

    def release(self) -> None:
        """Close the connection (the file lock goes with it); the next use reopens it."""
        with self._guard:
            if self._con is not None:
                self._con.close()
                self._con = None

    @contextmanager
    def unheld(self) -> Iterator[Store]:
        """A block that does not use the store (reading and validating an upload): with
        ``keep_open=False`` the file is let go first when no other session of this process is using
        it, so another process (a judge run, an import) can write meanwhile; the next use reopens it."""
        with self._guard:
            if not self.keep_open and self._sessions <= 1:
                self.release()
        yield self

    @property
    def is_open(self) -> bool:
        """Whether a connection (and so the file lock) is held right now."""
        return self._con is not None

    # -- plumbing -------------------------------------------------------------------------------
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor for one unit of work (cursors are cheap; share the connection, not cursors)."""
        return self.con.cursor()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """All-or-nothing block: commits on success, rolls back on any exception."""
        with self.session():
            cur = self.con.cursor()
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    def close(self) -> None:
        """Let go of the file; a keep_open=False store reopens it on its next use."""
        self.release()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads ----------------------------------------------------------------------------------
    def datasets(self) -> pd.DataFrame:
        """One row per dataset with verdict, judge, model and prompt counts."""
        return self.cursor().execute(
            """
            SELECT d.name, d.description, d.synthetic, d.version, d.revision, d.source,
                   count(v.verdict_id) AS verdicts,
                   count(v.verdict_id) FILTER (WHERE v.winner = 'invalid') AS invalid,
                   count(DISTINCT v.judge) AS judges,
                   count(DISTINCT v.prompt_id) AS prompts,
                   d.updated_at
            FROM datasets d LEFT JOIN verdicts v ON v.dataset = d.name
            GROUP BY ALL ORDER BY d.name
            """
        ).df()

    def has_dataset(self, name: str) -> bool:
        """Whether a dataset of that name exists (checked before a read, to say so in one sentence)."""
        row = self.cursor().execute("SELECT 1 FROM datasets WHERE name = ?", [name]).fetchone()
        return row is not None

    def dataset_revision(self, name: str) -> int:
        """The dataset's own change count (1, 2, 3, ...), shown to users as its version."""
        row = self.cursor().execute("SELECT revision FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            raise StoreError(f"There is no dataset named {name!r} in {self.path}.")
        return int(row[0] or 1)

    def dataset_version(self, name: str) -> int:
        """The dataset's store-wide version number (part of every cache key; never reused by a name)."""
        row = self.cursor().execute("SELECT version FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            raise StoreError(f"There is no dataset named {name!r} in {self.path}.")
        return int(row[0])

    def verdicts(
        self,
        dataset: str,
        *,
        judge: str | list[str] | None = None,
        category: str | list[str] | None = None,
        valid_only: bool = False,
        columns: Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """The dataset's verdicts as a canonical frame (schema.VERDICT_COLUMNS plus verdict_id);
        ``columns`` reads only those (a page that needs a few columns of a million verdicts)."""
        if not self.has_dataset(dataset):
            raise StoreError(f"There is no dataset named {dataset!r} in {self.path}.")
        from engine.store.attached import attached_relation
        from engine.store.sql import Relation, in_values, params

        attached = attached_relation(self, dataset)  # Parquet files read in place (engine.store.attached)
        if attached is not None:
            rel = Relation(f"(SELECT row_number() OVER () AS verdict_id, * FROM {attached})", attached.values)
        else:
            rel = Relation("verdicts").filtered([in_values("dataset", [dataset])])
        conditions = [in_values(col, [val] if isinstance(val, str) else list(val))
                      for col, val in (("judge", judge), ("category", category)) if val is not None]
        if valid_only:
            conditions.append(("winner <> 'invalid'", ()))
        rel = rel.filtered(conditions)
        if columns is not None:
            unknown = sorted(set(columns) - set(VERDICT_COLUMNS))
            if unknown:
                raise StoreError(f"Verdicts have no column(s) {', '.join(unknown)}.")
        keep = ("verdict_id", *(VERDICT_COLUMNS if columns is None else
                                [c for c in VERDICT_COLUMNS if c in set(columns)]))
        dtypes = {c: t for c, t in VERDICT_DTYPES.items() if c in keep}
        cols = ", ".join(f'"{c}"' for c in keep)
        df = self.cursor().execute(f"SELECT {cols} FROM {rel} ORDER BY verdict_id", params(rel)).df()
        return df.astype({"verdict_id": "int64", **dtypes})

    def prompt_texts(self, dataset: str) -> pd.DataFrame:
        """The dataset's prompt texts, all variants and turns, for the inspector and judging."""
        return self.cursor().execute(
            "SELECT * FROM prompts WHERE dataset = ? ORDER BY prompt_id, variant, turn", [dataset]
        ).df()

    def answer_texts(self, dataset: str, prompt_id: str | None = None) -> pd.DataFrame:
        """The dataset's answer texts (of one prompt, when given), for the inspector and judging."""
        sql, params = "SELECT * FROM answers WHERE dataset = ?", [dataset]
        if prompt_id is not None:
            sql += " AND prompt_id = ?"
            params.append(prompt_id)
        return self.cursor().execute(sql + " ORDER BY prompt_id, variant, turn, model", params).df()
