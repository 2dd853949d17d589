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
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

import duckdb

from engine.errors import LensError
from engine.frames import pd
from engine.store import file_lock
from engine.store.schema import GRAPH_KEY, STYLE_COLUMNS, VERDICT_COLUMNS, VERDICT_DTYPES

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT / "data"
DEFAULT_DB_PATH = DATA_DIR / "lens.duckdb"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_MIGRATION_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


T = TypeVar("T")

_INTEGER_TYPES = frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                            "UINTEGER", "UBIGINT", "UHUGEINT"})
"""DuckDB's integer types: a key column of one reads into the frame as its decimal text
(``verdict_pieces``)."""


def _frame_by_columns(table, dtypes: dict) -> pd.DataFrame:
    """An Arrow table as a DataFrame of ``dtypes``, one column at a time, each column's Arrow buffers let go
    once it is converted: the frame ``.df()`` and ``astype`` made, with under two thirds of their peak
    (a million verdicts' graph columns: 1.02 GB read by ``.df()``, 0.61 GB so; nits39)."""
    out = {}
    for name in list(table.column_names):
        column = table.column(name)
        table = table.drop_columns([name])
        out[name] = column.to_pandas().astype(dtypes[name])
        del column
    return pd.DataFrame(out)


_LOG_ENDINGS = (".wal", ".wal.checkpoint", ".wal.recovery")
"""DuckDB's write-ahead logs beside the store file (the last two exist while a checkpoint or a recovery
runs): ``Store.file_signature`` reads them all."""

UNCHANGED_AFTER_S = 3.0
"""How old (seconds) the store file's and its log's last write must be before their size and times vouch for
its contents (``Store.file_signature``): beyond any file system's time granularity (2 s on FAT), so a later
write always shows a later time."""


class StoreError(LensError):
    """A problem with the store that the user can act on (one clear sentence)."""


class StoreBusy(StoreError):
    """Another process holds the store file's write lock."""


_DUCKDB_MAGIC = b"DUCK"


def check_store_file(path: Path) -> int | None:
    """Refuse a path that exists but is not a DuckDB database (DuckDB would silently open a CSV or
    Parquet file as a temporary in-memory database, and every write would be lost). Returns the file's
    block size (``header_block_size``) for ``truncation``, None for a new file."""
    if not path.exists():
        return None
    held, block_size = file_lock.held_block_size(path)
    if held:  # read when this process took the lock; reading it again would drop DuckDB's own lock
        return block_size
    if path.is_dir():
        raise StoreError(f"The store path {path} is a folder; give a file such as {path / 'lens.duckdb'}.")
    with open(path, "rb") as fh:
        head = fh.read(_HEADERS)
    if len(head) < 12 or head[8:12] != _DUCKDB_MAGIC:
        raise StoreError(f"{path} exists but is not a DuckDB database; give a new or existing .duckdb file.")
    return _block_size(head)


_HEADERS = 3 * 4096
"""DuckDB's main header and its two database headers, before the first block."""


def _block_size(head: bytes) -> int | None:
    """The block size recorded in DuckDB's database headers (the one with the higher iteration), None
    when neither holds a plausible one (a format this check does not know: no claim is made)."""
    best: tuple[int, int] | None = None
    for offset in (4096, 8192):
        if len(head) < offset + 48:
            break
        iteration, block_size = (struct.unpack_from("<Q", head, offset + k)[0] for k in (8, 40))
        if 4096 <= block_size <= 1 << 30 and block_size & (block_size - 1) == 0 \
                and (best is None or iteration > best[0]):
            best = (iteration, block_size)
    return None if best is None else best[1]


def header_block_size(path: Path) -> int | None:
    """``path``'s block size as its headers record it. Opens the file: call it only while this process
    holds no connection to it (closing any descriptor of a file drops the process's POSIX locks on it,
    DuckDB's included)."""
    with open(path, "rb") as fh:
        return _block_size(fh.read(_HEADERS))


def truncation(path: Path, block_size: int | None) -> str | None:
    """Why the DuckDB file at ``path`` must have been cut short, or None. DuckDB writes its file in whole
    blocks of ``block_size`` bytes after three 4 KiB headers, so a file that ends inside a block (or
    inside the headers) lost its end: a copy or download stopped early, a crash or a full disk while it
    was written. Reads only the file's size (never opens it: see ``header_block_size``)."""
    size = path.stat().st_size
    if size < _HEADERS:
        return f"the file is {size:,} bytes, shorter than DuckDB's {_HEADERS:,} bytes of headers"
    if block_size and (size - _HEADERS) % block_size:
        return (f"the file is {size:,} bytes and ends {(size - _HEADERS) % block_size:,} bytes into one of "
                f"its {block_size:,}-byte blocks")
    return None


def damaged_sentence(path: Path, reason: str, verb: str = "open") -> str:
    """One sentence for a store file that cannot be read whole (``reason``: what is wrong with it;
    ``verb``: open, or read when a query after the open met the damage)."""
    return (f"Cannot {verb} the store at {path}: it is damaged ({reason}; a copy or download cut short, a "
            "crash or a full disk while it was written leave a file so); restore it from a copy, or give "
            "another file with --db or $LENS_DB.")


_DAMAGE = ("could not read enough bytes", "checksum", "corrupt", "invalid block", "block id",
           "serialization error", "failed to deserialize")
"""Words of DuckDB's errors on a file it cannot read whole (and only those: a query's own mistakes
never say them)."""


def is_damaged_store(exc: BaseException) -> bool:
    """The error (or one it came from) is DuckDB failing to read its own file: a block cut off or
    overwritten. A first read of a damaged part can come at any query, long after the open."""
    cur: BaseException | None = exc
    for _ in range(8):
        if cur is None:
            return False
        if isinstance(cur, duckdb.Error) and any(w in str(cur).lower() for w in _DAMAGE):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def damaged_store_error(path: Path, exc: BaseException, block_size: int | None = None,
                        verb: str = "open") -> StoreError:
    """The one sentence for ``exc`` (``is_damaged_store``), naming how the file is cut short when its
    size shows it (``truncation``), else DuckDB's first line."""
    try:
        reason = truncation(path, block_size)
    except OSError:
        reason = None
    if reason is None:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreError(damaged_sentence(path, reason, verb))


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
        self._memory_limit: str | None = None  # ``limit_memory``: applied on every (re)open
        self._guard = threading.RLock()
        self._sessions = 0
        self._unchanged: dict[str, tuple[tuple, object]] = {}  # read_unless_changed: key -> (signature, what)
        self._block_size = check_store_file(self.path)
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self.session():
                if not read_only:
                    try:
                        migrate(self.con)
                    except duckdb.Error as exc:
                        if is_damaged_store(exc):
                            raise damaged_store_error(self.path, exc, self._block_size) from exc
                        raise
        except BaseException:
            self.release()  # a store that failed to open holds neither its file nor its lock
            raise

    def _connect(self) -> duckdb.DuckDBPyConnection:
        """Open the file, waiting up to ``lock_wait_s`` while another process holds its lock."""
        deadline = time.monotonic() + self.lock_wait_s
        self._take_file_lock(deadline)
        try:
            return self._connect_locked(deadline)
        except BaseException:
            self._drop_file_lock()
            raise

    @property
    def _lockable(self) -> bool:
        return str(self.path) != ":memory:"

    def _take_file_lock(self, deadline: float) -> None:
        """Take this store's lock (``engine.store.file_lock``) before DuckDB touches the file."""
        if not self._lockable:
            return
        try:
            file_lock.acquire(self.path, exclusive=not self.read_only, block_size=self._block_size,
                              wait_s=max(deadline - time.monotonic(), 0.0))
        except file_lock.LockBusy:
            raise StoreBusy(
                f"The store at {self.path} is in use by another process (a judge run, an import "
                "or another app); try again when it has finished."
            ) from None
        except OSError as exc:
            raise StoreError(f"Cannot open the store at {self.path}: its lock file "
                             f"{file_lock.lock_path(self.path)} cannot be made ({exc.strerror}).") from exc

    def _drop_file_lock(self) -> None:
        """Let go of this store's lock (after DuckDB closed the file)."""
        if self._lockable:
            file_lock.release(self.path)

    def _connect_locked(self, deadline: float) -> duckdb.DuckDBPyConnection:
        """Open the file (its lock held), waiting until ``deadline`` while a process outside Lens holds
        DuckDB's own lock on it."""
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=self.read_only)
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
                if is_damaged_store(exc) or (self.path.exists() and truncation(self.path, self._block_size)):
                    raise damaged_store_error(self.path, exc, self._block_size) from exc
                raise StoreError(f"Cannot open the store at {self.path}: {exc}") from exc
            # checked with the file's lock held, so never while another process is extending it
            cut = truncation(self.path, self._block_size) if self.path.exists() else None
            if cut is not None:
                con.close()
                raise StoreError(damaged_sentence(self.path, cut))
            if self._memory_limit is not None:
                con.execute(f"SET memory_limit = '{self._memory_limit}'")
            return con

    def limit_memory(self, limit: str) -> None:
        """Cap DuckDB's memory for this store (``limit`` in DuckDB's words, e.g. ``512MB``), now and on
        every reopen. DuckDB's default is 80 % of the machine's memory, which its buffer pool fills with
        every block a process has read until it is needed elsewhere; a long-running writer (a judge run)
        caps it so its memory stays bounded whatever the store's size (blocks past the cap are evicted and
        read again, and large operators spill to disk)."""
        if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", limit):
            raise ValueError(f"not a DuckDB memory size: {limit!r}")
        with self._guard:
            self._memory_limit = limit
            if self._con is not None:
                self._con.execute(f"SET memory_limit = '{limit}'")

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

    def file_signature(self) -> tuple | None:
        """The store file's and its write-ahead logs' (inode, size, modification and change times) as the file
        system has them now, or None when they cannot vouch that nothing was committed since they were last
        the same: a store in memory or not on disk, or a file or log written within the last
        ``UNCHANGED_AFTER_S`` seconds (a later write in the same tick of the file system's clock could leave
        its times and size as they were). Every commit changes one of them (DuckDB appends it to a log, or
        writes the file itself); a read changes none. For a store on a local disk: a network file system
        may answer from attributes it cached, which a commit from another machine has not yet changed."""
        if not self._lockable:
            return None
        now = time.time_ns()
        parts: list[tuple[int, int, int, int] | None] = []
        for path in (self.path, *(Path(f"{self.path}{end}") for end in _LOG_ENDINGS)):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                if path == self.path:  # no file: nothing to vouch for
                    return None
                parts.append(None)
                continue
            except OSError:
                return None
            if now - max(st.st_mtime_ns, st.st_ctime_ns) < UNCHANGED_AFTER_S * 1e9:
                return None
            parts.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return tuple(parts)

    def read_unless_changed(self, key: str, read: Callable[[], T]) -> T:
        """``read()`` (a read of committed data through a fresh cursor), or the value it gave last time under
        ``key`` while the store file and its log are as they were then (``file_signature``): the app's
        per-run look at the datasets' versions then costs no opening of the file (~30 ms of a DuckDB open
        and close on every full rerun). The value is kept under the signature taken before the read: a commit
        landing during the read changes the file, so the next look reads again."""
        before = self.file_signature()
        if before is not None:
            with self._guard:
                kept = self._unchanged.get(key)
            if kept is not None and kept[0] == before:
                return cast(T, kept[1])
        value = read()
        if before is not None:
            with self._guard:
                self._unchanged[key] = (before, value)
        return value

    def session_count(self) -> int:
        """How many ``session()`` blocks of this process are open now (its threads share one connection)."""
        return self._sessions

    def release(self) -> None:
        """Close the connection (the file lock goes with it); the next use reopens it."""
        with self._guard:
            if self._con is not None:
                try:
                    self._con.close()
                finally:
                    self._con = None
                    self._drop_file_lock()

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

    def __del__(self) -> None:
        # a store dropped without close(): DuckDB closes its connection, and this process's count on
        # the store's lock must go down with it, or the lock would outlive the file's use. try/except, not
        # ``suppress``: a store still held at the interpreter's exit (the app's, in a cache frozen with the
        # heap: app_pages._prewarm) is dropped after the module globals are gone, ``suppress`` with them
        try:  # noqa: SIM105 - see above
            self.release()
        except Exception:  # noqa: BLE001,S110 - nothing to tell at collection time
            pass

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

    def no_dataset(self, name: str) -> StoreError:
        """The sentence for a dataset name this store does not hold."""
        return StoreError(f"There is no dataset named {name!r} in {self.path}.")

    def has_dataset(self, name: str) -> bool:
        """Whether a dataset of that name exists (checked before a read, to say so in one sentence)."""
        row = self.cursor().execute("SELECT 1 FROM datasets WHERE name = ?", [name]).fetchone()
        return row is not None

    def dataset_revision(self, name: str) -> int:
        """The dataset's own change count (1, 2, 3, ...), shown to users as its version."""
        row = self.cursor().execute("SELECT revision FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            raise self.no_dataset(name)
        return int(row[0] or 1)

    def dataset_version(self, name: str) -> int:
        """The dataset's store-wide version number (part of every cache key; never reused by a name)."""
        row = self.cursor().execute("SELECT version FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            raise self.no_dataset(name)
        return int(row[0])

    def verdicts(
        self,
        dataset: str,
        *,
        judge: str | list[str] | None = None,
        category: str | list[str] | None = None,
        valid_only: bool = False,
        columns: Sequence[str] | None = None,
        graphs_of_at_least: int = 0,
        prompt_id: str | list[str] | None = None,
    ) -> pd.DataFrame:
        """The dataset's verdicts as a canonical frame (schema.VERDICT_COLUMNS plus verdict_id);
        ``graphs_of_at_least=k``: only the verdicts of graphs (schema.GRAPH_KEY) whose verdicts, valid or
        not, name k or more models, every verdict of such a graph kept (a graph that can hold a triad, for
        k = 3: the leaderboard's cycle columns read a battle log's few such graphs, not its million pairs);
        ``prompt_id``: only those prompts' verdicts (as ``judge`` and ``category``); ``columns`` reads only
        those (a page that needs a few columns of a million verdicts), and may name the style counts
        (schema.STYLE_COLUMNS, float64, NaN where none), which are read only then."""
        rel = self.verdict_relation(dataset, judge=judge, category=category, valid_only=valid_only,
                                    graphs_of_at_least=graphs_of_at_least, prompt_id=prompt_id)
        return self._verdict_frame(rel, columns)

    def verdict_pieces(
        self,
        dataset: str,
        *,
        rows: int,
        judge: str | list[str] | None = None,
        category: str | list[str] | None = None,
        columns: Sequence[str] | None = None,
    ) -> Iterator[pd.DataFrame]:
        """``verdicts`` with the same filters, read in pieces of whole graphs: each piece the verdicts of
        consecutive (judge, prompt_id) groups in key order, each group in the piece where its first verdict
        falls when they are counted off ``rows`` at a time (a piece holds fewer than ``rows`` plus its last
        group), so a command that handles one graph at a time holds one piece, whatever the
        dataset's size. The pieces' ends come from one query first (the last key of each piece); pieces
        follow in key order, their rows together those of ``verdicts``. A key with no judge or prompt id
        (which the schema refuses, but Parquet read in place might hold) makes the selection one piece."""
        from engine.store.sql import param_name, params

        rows = max(int(rows), 1)
        rel = self.verdict_relation(dataset, judge=judge, category=category)
        # the keys as the frame's texts (a Parquet file read in place may hold integer ids, which the frame
        # reads as their decimal text and sorts as text); any other type: one piece, in the frame's order
        probe = self.cursor().sql(f"SELECT judge, prompt_id FROM {rel} LIMIT 0", params=params(rel))
        types = dict(zip(("judge", "prompt_id"), (str(t) for t in probe.types), strict=True))
        texts = {c: f'"{c}"' if t == "VARCHAR" else f'CAST("{c}" AS VARCHAR)' for c, t in types.items()
                 if t == "VARCHAR" or t in _INTEGER_TYPES}
        if len(texts) < 2:
            yield self._verdict_frame(rel, columns)
            return
        j, p = texts["judge"], texts["prompt_id"]
        ends = self.cursor().sql(
            f"""WITH g AS (SELECT {j} AS j, {p} AS p, count(*) AS n FROM {rel} GROUP BY ALL),
            c AS (SELECT j, p, (sum(n) OVER (ORDER BY j, p ROWS UNBOUNDED PRECEDING) - n) // {rows} AS piece
                  FROM g)
            SELECT max((j, p)) AS last, bool_or(j IS NULL OR p IS NULL) AS null_key
            FROM c GROUP BY piece ORDER BY piece""",
            params=params(rel)).fetchall()
        if len(ends) <= 1 or any(null for _, null in ends):
            yield self._verdict_frame(rel, columns)
            return
        before: tuple | None = None
        for (last, _) in ends:
            last = tuple(last.values()) if isinstance(last, dict) else tuple(last)
            bound = [(param_name("piece_last_judge", last[0]), last[0]),
                     (param_name("piece_last_prompt", last[1]), last[1])]
            sql = f"({j}, {p}) <= (${bound[0][0]}, ${bound[1][0]})"
            if before is not None:
                bound += [(param_name("piece_after_judge", before[0]), before[0]),
                          (param_name("piece_after_prompt", before[1]), before[1])]
                sql += f" AND ({j}, {p}) > (${bound[2][0]}, ${bound[3][0]})"
            yield self._verdict_frame(rel.filtered([(sql, tuple(bound))]), columns)
            before = last

    def _verdict_frame(self, rel, columns: Sequence[str] | None) -> pd.DataFrame:
        """The verdicts of relation ``rel`` (``verdict_relation``) as a canonical frame, by verdict id;
        ``columns``: only those (``verdicts``)."""
        from engine.store.sql import params

        if columns is not None:
            unknown = sorted(set(columns) - set(VERDICT_COLUMNS) - set(STYLE_COLUMNS))
            if unknown:
                raise StoreError(f"Verdicts have no column(s) {', '.join(unknown)}.")
        keep = ("verdict_id", *(VERDICT_COLUMNS if columns is None else
                                [c for c in (*VERDICT_COLUMNS, *STYLE_COLUMNS) if c in set(columns)]))
        all_types = VERDICT_DTYPES | dict.fromkeys(STYLE_COLUMNS, "float64")
        dtypes = {c: t for c, t in all_types.items() if c in keep}
        cols = ", ".join(f'"{c}"' for c in keep)
        # the table is handed over without a name here, so each column's buffers go once converted
        return _frame_by_columns(self.cursor().sql(f"SELECT {cols} FROM {rel} ORDER BY verdict_id",
                                                   params=params(rel)).to_arrow_table(),
                                 {"verdict_id": "int64", **dtypes})

    def verdict_relation(
        self,
        dataset: str,
        *,
        judge: str | list[str] | None = None,
        category: str | list[str] | None = None,
        valid_only: bool = False,
        graphs_of_at_least: int = 0,
        prompt_id: str | list[str] | None = None,
    ):
        """The SQL relation (``engine.store.sql.Relation``, a ``verdict_id`` column first) of the verdicts
        ``verdicts`` reads with these filters: what a read that aggregates them in SQL starts from."""
        if not self.has_dataset(dataset):
            raise self.no_dataset(dataset)
        from engine.store.attached import attached_relation
        from engine.store.pair_counts import refuse_pair_counts
        from engine.store.sql import Relation, in_values

        refuse_pair_counts(self, dataset)  # counts have no verdict to read: one sentence (issue 25)

        attached = attached_relation(self, dataset)  # Parquet files read in place (engine.store.attached)
        if attached is not None:
            rel = Relation(f"(SELECT row_number() OVER () AS verdict_id, * FROM {attached})", attached.values)
        else:
            rel = Relation("verdicts").filtered([in_values("dataset", [dataset])])
        conditions = [in_values(col, [val] if isinstance(val, str) else list(val))
                      for col, val in (("judge", judge), ("category", category), ("prompt_id", prompt_id))
                      if val is not None]
        if valid_only:
            conditions.append(("winner <> 'invalid'", ()))
        rel = rel.filtered(conditions)
        if graphs_of_at_least > 0:
            # a hash of the key (NULLs included): a collision only lets a smaller graph through, which the
            # caller's own graph building sees for what it is
            key = "hash(" + ", ".join(f'"{c}"' for c in GRAPH_KEY) + ")"
            cols = ", ".join(f'"{c}"' for c in GRAPH_KEY)
            big = (f"SELECT {key} AS k FROM (SELECT {cols}, model_a AS m FROM {rel} UNION ALL "
                   f"SELECT {cols}, model_b FROM {rel}) GROUP BY k "
                   f"HAVING count(DISTINCT m) >= {int(graphs_of_at_least)}")
            rel = Relation(f"(SELECT * FROM {rel} WHERE {key} IN ({big}))", rel.values)
        return rel

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
