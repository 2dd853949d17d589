"""One lock per store file for every Lens process, held from before DuckDB opens the file until after it
has closed it: several processes taking turns on one store can then never meet inside it.

DuckDB guards its file with a POSIX record lock (``fcntl``), and the kernel drops every such lock a
process holds on a file as soon as the process closes *any* descriptor of that file: a second ``Store``
of the same path in one process (the app's sessions, a command that opens the store twice) reads the
file's headers to check it (``check_store_file``), closes that descriptor, and from then on another
process can open the file for writing while this one still writes to it, which damages the file. DuckDB
also reads a file's first bytes before it takes its lock.

So a Lens process first takes an ``flock`` on ``<store>.lock`` beside the file (exclusive to write,
shared to read): an ``flock`` belongs to the open file description, so closing other descriptors never
drops it. Within one process the lock is counted per path (DuckDB shares one database per path inside a
process), taken by the first holder and let go by the last. A store whose folder cannot hold the lock
file (a read-only folder) is opened read-only without it: nobody can write there anyway.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path


class LockBusy(Exception):
    """Another process held the store's lock for longer than the wait allowed."""


def lock_path(store_path: Path) -> Path:
    """Where the lock file of the store at ``store_path`` lives: beside it, named after it."""
    return store_path.with_name(store_path.name + ".lock")


@dataclass
class _Held:
    """This process's lock on one store: its descriptor, how many holders, exclusive or shared, and the
    block size read from the file's headers before anybody in this process opened it."""

    fd: int | None
    exclusive: bool
    holders: int = 0
    block_size: int | None = None


_HELD: dict[str, _Held] = {}
_GUARD = threading.RLock()


def _key(store_path: Path) -> str:
    return os.path.realpath(store_path)


def held_block_size(store_path: Path) -> tuple[bool, int | None]:
    """(whether this process holds the store's lock now, the block size recorded when it was taken):
    a holder must not open the store file again to read it (that would drop DuckDB's own lock)."""
    with _GUARD:
        held = _HELD.get(_key(store_path))
        return (held is not None, None if held is None else held.block_size)


def acquire(store_path: Path, *, exclusive: bool, wait_s: float, block_size: int | None = None) -> None:
    """Take the store's lock for one more holder in this process, waiting up to ``wait_s`` seconds for
    other processes to let go (``LockBusy`` after that). Shared holders of a process that now needs to
    write are upgraded to exclusive."""
    key = _key(store_path)
    with _GUARD:
        held = _HELD.get(key)
        if held is None:
            fd = _open_lock_file(store_path, exclusive)
            held = _Held(fd=fd, exclusive=False, block_size=block_size)
            try:
                _flock(held, exclusive=exclusive, wait_s=wait_s)
            except BaseException:
                if fd is not None:
                    os.close(fd)
                raise
            _HELD[key] = held
        elif exclusive and not held.exclusive:
            _flock(held, exclusive=True, wait_s=wait_s)
        held.holders += 1


def release(store_path: Path) -> None:
    """One holder of this process lets go; the last one unlocks (call it after DuckDB closed the file)."""
    key = _key(store_path)
    with _GUARD:
        held = _HELD.get(key)
        if held is None:
            return
        held.holders -= 1
        if held.holders <= 0:
            del _HELD[key]
            if held.fd is not None:
                os.close(held.fd)  # closing the description drops its flock


def _open_lock_file(store_path: Path, exclusive: bool) -> int | None:
    """The lock file's descriptor, created if need be; None when a read-only holder's folder cannot hold
    one (nobody can write to the store there)."""
    try:
        return os.open(lock_path(store_path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if not exclusive and exc.errno in (errno.EACCES, errno.EROFS, errno.EPERM):
            return None
        raise


def _flock(held: _Held, *, exclusive: bool, wait_s: float) -> None:
    """Lock ``held``'s file, retrying without blocking until ``wait_s`` has passed."""
    if held.fd is None:
        return
    mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + wait_s
    delay = 0.02
    while True:
        try:
            fcntl.flock(held.fd, mode)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockBusy() from None
            time.sleep(min(delay, max(deadline - time.monotonic(), 0.0)))
            delay = min(delay * 2, 0.5)
            continue
        held.exclusive = exclusive
        return
