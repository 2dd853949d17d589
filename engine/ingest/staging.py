"""The staging folder of one import: validated batches spilled to Parquet, so memory stays bounded.

An import reads and validates its files one batch at a time; each batch's valid rows, rejected
rows and texts are appended to Parquet files in a temporary folder (``$LENS_TMPDIR`` or the
system's), never held together in memory. The store then inserts straight from those files in
one short transaction, and the report reads them back only when asked (``ValidationReport.good``,
``.rejected``). The folder goes when the last report using it is garbage-collected; a process killed
before that (kill -9, a crash) leaves it behind, so each new stage first removes the folders of
processes that are gone (the folder's name carries its process id and the process-id namespace it is
valid in: ``lens-import-<namespace>-<pid>-…``; a folder from another container sharing the folder, or
from an older version, is left alone).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import LensError
from engine.store.schema import STYLE_COLUMNS, VERDICT_COLUMNS

_S, _I, _F = pa.string(), pa.int64(), pa.float64()
_VERDICT_TYPES = {c: _S for c in VERDICT_COLUMNS} | {
    "variant": _I,
    "turn": _I,
    "prob_a": _F,
    "source_line": _I,
    "tstamp": _F,
    "strength": _I,
}
SCHEMAS: dict[str, pa.Schema] = {
    "good": pa.schema([("seq", _I), *((c, _VERDICT_TYPES[c]) for c in VERDICT_COLUMNS),
                       *((c, _F) for c in STYLE_COLUMNS)]),
    "rejected": pa.schema(
        [("seq", _I), ("source_file", _S), ("source_line", _I), ("reason", _S), ("fields", _S)]
    ),
    "prompts": pa.schema(
        [
            ("seq", _I),
            ("dataset", _S),
            ("prompt_id", _S),
            ("variant", _I),
            ("turn", _I),
            ("category", _S),
            ("variant_kind", _S),
            ("text", _S),
        ]
    ),
    "answers": pa.schema(
        [
            ("seq", _I),
            ("dataset", _S),
            ("prompt_id", _S),
            ("variant", _I),
            ("turn", _I),
            ("model", _S),
            ("text", _S),
        ]
    ),
    "excluded": pa.schema([("seq", _I)]),
}
"""Columns of each kind of staged file (``seq``: the row's position in the import, file order)."""


def no_space(exc: BaseException) -> bool:
    """Is this error a full disk (or quota)?"""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left" in text or "disk quota" in text or "not enough space" in text


def _size(n: int) -> str:
    """Bytes in words: 5.0 MiB, 812 KiB."""
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 2**k:
            return f"{n / 2**k:,.1f} {unit}"
    return f"{n:,} bytes"


def store_space(store) -> str:
    """After a full disk under the store: the size of the store's file and of its log (DuckDB's
    ``.wal``), how much of the file is unused blocks a failed write left (DuckDB keeps them in the
    file and never gives them back to the disk, so the next import may find the disk as full; known
    while the store's connection still answers) and what the disk has left, as a clause for the
    sentence that reports the full disk."""
    path = Path(store.path)
    wal = Path(f"{path}.wal")
    try:
        size = path.stat().st_size
        free = shutil.disk_usage(path.parent).free
        log = f" and its log {_size(wal.stat().st_size)}" if wal.exists() else ""
    except OSError:
        return ""
    try:
        row = store.cursor().execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
        held = f", {_size(max(size - int(row[0]) * int(row[1]), 0))} of the file unused blocks that failed " \
               "writes left (the file keeps them)"
    except Exception:  # duckdb: the connection was invalidated by the failure
        held = ""
    return f"; the store's file is {_size(size)}{log}{held}, and the disk has {_size(free)} free"


PREFIX = "lens-import-"
_OWNED = re.compile(re.escape(PREFIX) + r"(\d+)-(\d+)-")


def _pid_namespace() -> int:
    """The id of this process's pid namespace (0 where /proc does not say): a pid means a process only
    within it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts: it is not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, under another user
        return True
    return True


def remove_orphans(root: str | os.PathLike[str]) -> list[Path]:
    """Remove the stage folders under ``root`` whose process is gone (killed mid-import); returns
    them. A folder of a live process, or one without a process id in its name, is left alone."""
    removed: list[Path] = []
    here = _pid_namespace()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        m = _OWNED.match(entry.name)
        if m is None or int(m.group(1)) != here or not entry.is_dir(follow_symlinks=False) \
                or _alive(int(m.group(2))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.exists(entry.path):
            removed.append(Path(entry.path))
    return removed


class Stage:
    """A temporary folder of Parquet files written one batch at a time."""

    def __init__(self):
        root = os.environ.get("LENS_TMPDIR") or None
        self.orphans_removed = remove_orphans(root or tempfile.gettempdir())
        try:
            self.dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{_pid_namespace()}-{os.getpid()}-", dir=root))
        except OSError as exc:
            raise LensError(f"Cannot create the import's temporary folder in {root or tempfile.gettempdir()} "
                            f"({exc.strerror or exc}); set LENS_TMPDIR to a writable folder.") from exc
        self._db: list[duckdb.DuckDBPyConnection] = []  # the stage's one reading database, once opened
        self._db_lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _remove, str(self.dir), self._db)
        self._writers: dict[str, pq.ParquetWriter] = {}
        self._pending: dict[str, _Write] = {}  # file → its batch being written (one per file at most)
        self._count = 0

    def new_file(self, kind: str) -> str:
        """A fresh file name of this stage for a table of ``kind``."""
        self._count += 1
        return str(self.dir / f"{kind}-{self._count}.parquet")

    def append(self, name: str, kind: str, frame: pd.DataFrame) -> pa.Table:
        """Append ``frame`` (columns of ``SCHEMAS[kind]``) to the stage file ``name``.

        The frame is converted here; its Parquet encoding and write run in a thread (``_Write``) while
        the import checks its next batch (Arrow releases the GIL: the writes' 0.35 s of CPU per 1M rows
        can overlap the checks on a second core). One batch per file is in flight at most, so memory
        stays bounded, and each file's batches are written in order; a failed write is raised here at
        the file's next batch, or by ``close``. Returns the batch as written (an Arrow table of
        ``SCHEMAS[kind]``: the import's early insert takes the good rows from it, not from the file)."""
        schema = SCHEMAS[kind]
        try:
            table = pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False, nthreads=1)
            self._wait(name)
            w = self._writers.get(name)
            if w is None:
                w = self._writers[name] = pq.ParquetWriter(
                    name, schema, compression="lz4", use_dictionary=False
                )
        except OSError as exc:
            raise self.full(exc) from exc
        if WRITE_BEHIND:
            self._pending[name] = _Write(w, table)
        else:
            try:
                w.write_table(table)
            except OSError as exc:
                self._abandon()
                raise self.full(exc) from exc
        return table

    def _wait(self, name: str) -> None:
        """Wait for the batch of ``name`` in flight (if any); raises what its write raised, after letting
        every file go (``_abandon``)."""
        write = self._pending.pop(name, None)
        if write is not None:
            try:
                write.result()
            except BaseException:
                self._abandon()
                raise

    def _abandon(self) -> None:
        """After a failed write the import is refused: the other files' writes are waited for and every
        file is let go without a word (their footers may fail too on a full disk; the folder goes with
        the stage), so no writer complains later when it is collected."""
        for key in list(self._pending):
            with contextlib.suppress(BaseException):
                self._pending.pop(key).result()
        for w in self._writers.values():
            with contextlib.suppress(OSError):
                w.close()
            w.is_open = False  # a failed close leaves it open: pyarrow would close it again when collected
        self._writers.clear()

    def write(self, kind: str, frame: pd.DataFrame) -> str:
        """``frame`` as a new, closed stage file; returns its path."""
        name = self.new_file(kind)
        self.append(name, kind, frame)
        self.close(name)
        return name

    def close(self, name: str | None = None) -> None:
        """Finish one file (or all): footers written, readable by any connection."""
        for key in [name] if name else list(self._writers):
            try:
                self._wait(key)  # its last batch written first
                w = self._writers.pop(key, None)
                if w is not None:
                    w.close()
            except OSError as exc:
                raise self.full(exc) from exc

    def empty(self, kind: str) -> str:
        """An empty file of ``kind``."""
        return self.write(kind, pd.DataFrame({c: pd.Series([], dtype=object) for c in SCHEMAS[kind].names}))

    def full(self, exc: BaseException) -> LensError:
        """The one sentence for a failure to write the stage (a full disk, mostly)."""
        if no_space(exc):
            return LensError(
                f"The disk holding the import's temporary files ({self.dir.parent}) is full, so nothing "
                "was stored; free some space or set LENS_TMPDIR to a folder on a larger disk."
            )
        return LensError(
            f"Cannot write the import's temporary files in {self.dir.parent} ({exc}); nothing was stored."
        )

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A connection for reading this stage (close it after use), spilling to the stage folder: a
        cursor of one in-memory DuckDB opened at the stage's first read and closed with the stage, so a
        report read several times (its repeats, preview, rejected rows) opens one database, not one per
        read (about 30-80 ms of CPU each)."""
        with self._db_lock:
            if not self._db:
                self._db.append(duckdb.connect(
                    config={"temp_directory": str(self.dir / "spill"), "memory_limit": "1GB"}))
            return self._db[0].cursor()


WRITE_BEHIND = True
"""Stage writes run in a thread beside the next batch's checks (``Stage.append``); False writes in line
(the tests compare the two)."""


class _Write:
    """One table written by a writer in a thread of its own; ``result`` joins it and raises its error."""

    def __init__(self, writer: pq.ParquetWriter, table: pa.Table) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(writer, table), name="lens-stage-write")
        self._thread.start()

    def _run(self, writer: pq.ParquetWriter, table: pa.Table) -> None:
        try:
            writer.write_table(table)
        except BaseException as exc:  # noqa: BLE001  handed to the import's thread by result()
            self._error = exc

    def result(self) -> None:
        """Wait for the write; raise what it raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error


def _remove(folder: str, db: list[duckdb.DuckDBPyConnection]) -> None:
    """A stage's end: its reading database closed (its spill files are in the folder), then the folder."""
    for con in db:
        con.close()
    db.clear()
    shutil.rmtree(folder, True)
