"""Paid calls journaled on arrival: a JSON-lines file per run, filed into the call cache next time.

Every call a run pays for is appended to its journal by the worker thread that received the answer,
before the answer goes anywhere else (one ``judge_calls`` row per line, written through to the
operating system at once), and the store takes the calls in groups afterwards. So a run killed at
any moment (SIGKILL) has every answered call either in the store or in its journal: the next run on
that store files every journal whose writer is gone into the cache (duplicates ignored) and deletes
it, and only the calls that were still in flight at the kill are paid again. Once every journaled
call is in the store the file is emptied, so it stays as small as the calls waiting to be stored;
a run that ends normally removes it.

Where: ``<store>.calls-<host>-<pid>-<start>.jsonl`` beside the store. When that cannot be written
(the store's disk is full, the folder is read-only) the journal moves to a second location,
``$LENS_JOURNAL_DIR`` or else ``~/.cache/tournament-lens/journals`` (``$XDG_CACHE_HOME``), and then
the system's temporary folder, named ``<hash of the store's path>-<store name>.calls-...`` so journals
of different stores never mix; the run's stop sentence says which file holds the calls
(``CallJournal.path``), and the next run on the store looks in every location.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from engine.judging.liveness import me, same_process_alive

COMPACT_CHARS = 1 << 20
"""A journal past this many characters whose calls are mostly stored is rewritten (``stored``)."""

FILE_BATCH = 1000
"""Journal rows filed into the cache per transaction (memory stays bounded for any journal size)."""


def fallback_dirs() -> list[Path]:
    """The second and third places a journal may go, in order of preference."""
    first = os.environ.get("LENS_JOURNAL_DIR")
    if not first:
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        first = os.path.join(cache, "tournament-lens", "journals")
    return [Path(first), Path(tempfile.gettempdir()) / "tournament-lens-journals"]


def journal_dir_and_prefix(store_path: Path) -> tuple[Path, str]:
    """The folder and file-name prefix of every process's call journal beside one store file."""
    return store_path.parent, f"{store_path.name}.calls-"


def _places(store_path: Path) -> list[tuple[Path, str]]:
    """Every (folder, file-name prefix) where a journal of the store at ``store_path`` may be."""
    store_path = Path(store_path).absolute()
    tag = hashlib.sha256(str(store_path).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    beside = journal_dir_and_prefix(store_path)
    return [beside] + [(d, f"{tag}-{store_path.name}.calls-") for d in fallback_dirs()]


def _file_name(prefix: str, token: str | None = None) -> str:
    """``<prefix><host>-<pid>-<start>[.<token>].jsonl``: the writer's process, and a token telling
    apart two journals of one process (two runners on one store)."""
    host, pid, started = me()
    stamp = int(started) if started is not None else 0
    return f"{prefix}{host}-{pid}-{stamp}{f'.{token}' if token else ''}.jsonl"


_WRITER = re.compile(r"calls-(?P<host>.+)-(?P<pid>\d+)-(?P<stamp>\d+)(?:\.[0-9a-f]{8})?\.jsonl$")


def append(path: Path, rows: list[dict]) -> None:
    """Append ``judge_calls`` rows to a journal file and make them durable (fsync)."""
    with open(path, "a", encoding="utf-8") as fh:
        for row in rows:
            fh.write(_line(row))
        fh.flush()
        os.fsync(fh.fileno())


def _line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, default=str) + "\n"


class JournalUnwritable(OSError):
    """No location could take the journal (each one's error is in the message)."""


class CallJournal:
    """One run's journal: ``record`` appends rows as calls arrive (any thread), ``stored`` tells it
    which calls the store now holds (the file is emptied once it holds nothing else), ``close``
    removes it when nothing is left unstored. See the module docstring."""

    def __init__(self, store_path: Path):
        token = uuid.uuid4().hex[:8]
        self.places = [folder / _file_name(prefix, token) for folder, prefix in _places(store_path)]
        self.path: Path | None = None  # the file in use (None until the first row)
        self.moved_because: str | None = None  # why the first location could not be used
        self._fh: TextIO | None = None
        self._unstored: dict[str, str] = {}  # call key -> its journal line, until the store holds it
        self._left_behind: list[Path] = []  # files of failed locations, removed once their rows moved
        self._bytes = 0  # characters in the current file (its size, near enough, to decide compaction)
        self._lock = threading.Lock()

    @property
    def unstored(self) -> int:
        """How many journaled calls the store does not hold yet."""
        return len(self._unstored)

    def holds(self, key: str) -> bool:
        """Whether the call ``key`` is in the journal and not yet stored."""
        return key in self._unstored

    def record(self, rows: list[dict], *, durable: bool = False) -> None:
        """Append ``rows`` (written through to the OS, so a killed process keeps them; ``durable``:
        also fsync, for calls that will not reach the store). Moves to the next location when one
        fails; ``JournalUnwritable`` when none can take them."""
        if not rows:
            return
        lines = {r["call_key"]: _line(r) for r in rows}
        with self._lock:
            self._write("".join(lines.values()), durable=durable)
            self._unstored.update(lines)

    def keep_unstored(self) -> None:
        """Rewrite the journal to hold exactly the calls the store does not, fsynced (a run that stops
        because the store cannot take its calls leaves this file for the next run). The rewrite
        replaces the file whole (``_rewrite``); where it cannot, the longer file stays (its stored
        calls are filed as duplicates, which changes nothing)."""
        with self._lock:
            if self._unstored and not self._rewrite() and self._fh is not None:
                os.fsync(self._fh.fileno())

    def _write(self, data: str, *, durable: bool) -> None:
        """Append ``data`` to the current location, moving on while one fails (lock held)."""
        errors: list[str] = []
        while True:
            try:
                fh = self._open()
                fh.write(data)
                fh.flush()
                if durable:
                    os.fsync(fh.fileno())
                self._bytes += len(data)
            except OSError as exc:
                errors.append(f"{self.path}: {exc.strerror or exc}")
                if not self._move_on(exc):
                    raise JournalUnwritable("; ".join(errors)) from exc
                data = "".join(self._unstored.values()) + data  # the rows left behind come along
                continue
            for old in self._left_behind:  # their rows are in this file now
                with contextlib.suppress(OSError):
                    old.unlink(missing_ok=True)
            self._left_behind = []
            return

    def _rewrite(self) -> bool:
        """Replace the journal file by one holding only the unstored calls: written beside it, fsynced
        and renamed over it, so a kill at any instant finds the old file or the new one, never less
        (lock held). False (the old file kept) when it cannot be written."""
        if self._fh is None or self.path is None:
            return False
        fresh = self.path.with_name(self.path.name + ".new")
        data = "".join(self._unstored.values())
        try:
            with open(fresh, "w", encoding="utf-8") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(fresh, self.path)
        except OSError:
            fresh.unlink(missing_ok=True)
            return False
        self._fh.close()
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the run)
        self._bytes = len(data)
        return True

    def stored(self, keys: Iterable[str]) -> None:
        """The store now holds the calls ``keys``: when the journal holds nothing else, empty it; when
        it has grown past ``COMPACT_CHARS`` and four times what is still unstored, rewrite it with
        only the unstored calls, so the file stays as small as the calls waiting to be stored even
        when some always are (a long run at full concurrency)."""
        with self._lock:
            for key in keys:
                self._unstored.pop(key, None)
            if self._fh is None:
                return
            if not self._unstored:
                # opened for appending: the next row goes at offset 0; a journal left holding stored
                # calls is filed as duplicates, harmless
                with contextlib.suppress(OSError):
                    self._fh.truncate(0)
                    self._bytes = 0
            elif self._bytes > COMPACT_CHARS and self._bytes > 4 * sum(map(len, self._unstored.values())):
                self._rewrite()

    def close(self) -> None:
        """Close the file; delete it when every call in it is stored (else the next run files it)."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
                if not self._unstored and self.path is not None:
                    self.path.unlink(missing_ok=True)

    def _open(self):
        if self._fh is None:
            if not self.places:  # every location failed before: the caller's JournalUnwritable case
                raise OSError(errno.ENOSPC, "no journal location is left")
            self.path = self.places[0]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (kept open for the run)
        return self._fh

    def _move_on(self, exc: OSError) -> bool:
        """Leave the failed location for the next one; False when none is left. The unstored rows
        are written again there, and the old file is removed once they are (``_write``)."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        self._bytes = 0
        if self.moved_because is None:
            self.moved_because = f"{self.places[0]}: {exc.strerror or exc}"
        if self.path is not None:
            self._left_behind.append(self.path)
        self.places = self.places[1:]
        self.path = None
        return bool(self.places)


def _writer_alive(path: Path) -> bool:
    """The journal's writer (host-pid-start in its name) is this host's live process other than us."""
    host, pid, _started = me()
    m = _WRITER.search(path.name)
    if m is None:
        return False
    whost, wpid_i, wstamp_f = m["host"], int(m["pid"]), float(m["stamp"])
    if whost != host or wpid_i == pid:
        return False
    return same_process_alive(wpid_i, wstamp_f or None) if wstamp_f else same_process_alive(wpid_i, None)


def pending(store_path: Path) -> list[Path]:
    """Journals of this store, in every location, that nobody is writing any more (ready to be filed)."""
    found = []
    for folder, prefix in _places(Path(store_path)):
        if folder.is_dir():
            found += sorted(p for p in folder.glob(f"{prefix}*.jsonl") if not _writer_alive(p))
    return found


def _batches(path: Path, size: int = FILE_BATCH):
    rows: list[dict] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "call_key" in row:
                rows.append(row)
            if len(rows) >= size:
                yield rows
                rows = []
    if rows:
        yield rows


def file_pending(store_path: Path, put_rows: Callable[[list[dict]], None]) -> int:
    """File every pending journal into the cache with ``put_rows(rows)`` (``FILE_BATCH`` rows a
    transaction), deleting each one once all its rows are committed; returns the number of rows
    filed."""
    n = 0
    for path in pending(store_path):
        for rows in _batches(path):
            put_rows(rows)
            n += len(rows)
        path.unlink(missing_ok=True)
    return n
