"""Where the tool writes a file a user named (``datasets export``, ``import --rejected``), and how.

A regular file (or a new one) is written to a temp file beside it and renamed over it, so a failure
leaves the old file or none, never half of one; a symlink to a regular file keeps its link and its
target is replaced. What is not a regular file is never replaced: a character device (``/dev/null``,
a terminal), a FIFO, or a stream the process already holds open (``/dev/stdout``, ``/proc/self/fd/N``)
is written in place, after the whole output was built in a temp file, so a failure writes nothing
there; a folder, a block device or a socket is refused in one sentence.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.errors import LensError


@dataclass(frozen=True)
class OutputPath:
    """A checked output: ``path`` to write, and whether it is written in place (not replaced)."""

    path: Path
    in_place: bool


def _open_stream(p: Path) -> bool:
    """Whether ``p`` reaches its file through ``/proc/<pid>/fd`` (``/dev/stdout``, ``/dev/fd/1``): a
    stream the process holds open, which a rename would not reach (it would replace the file the shell
    opened, or fail on a pipe)."""
    cur = Path(os.path.abspath(p))
    for _ in range(40):  # the kernel's own limit on a chain of links
        parent = os.path.realpath(cur.parent)
        if re.fullmatch(r"/proc/[^/]+/fd", parent):
            return True
        full = Path(parent) / cur.name
        if not full.is_symlink():
            return False
        cur = Path(os.path.abspath(os.path.join(parent, os.readlink(full))))
    return False


def _kind(mode: int) -> str:
    """A file type in words, for the sentence that refuses it."""
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output(path: str | os.PathLike[str], what: str) -> OutputPath:
    """``path`` checked as an output for ``what`` before anything is written: how it will be written,
    or LensError (a folder, a block device, a socket, a missing folder, no permission)."""
    p = Path(path)
    try:
        st = os.stat(p)  # follows symlinks: the type of what a write would reach
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise LensError(f"Cannot write {what} to {p} ({exc.strerror or exc}).") from exc
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise LensError(f"Cannot write {what} to {p}: it is a folder; give a file name.")
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode) or _open_stream(p)):
        if not os.access(p, os.W_OK):
            raise LensError(f"Cannot write {what} to {p} (Permission denied).")
        return OutputPath(p, True)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise LensError(f"Cannot write {what} to {p}: it is {_kind(st.st_mode)}; give a file name.")
    target = Path(os.path.realpath(p))  # a symlink's target is replaced, the link kept
    if not target.parent.is_dir():
        raise LensError(f"Cannot write {what} to {p}: there is no folder {target.parent}.")
    try:
        fd, probe = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise LensError(f"Cannot write {what} to {p} ({exc.strerror or exc}).") from exc
    return OutputPath(target, False)


def write_output(path: str | os.PathLike[str], write: Callable[[str], None], what: str) -> OutputPath:
    """Call ``write(tmp_path)`` on a temp file, then rename it over ``path`` (a regular file) or copy
    it into ``path`` (a device, FIFO or open stream, appended: never truncated, never replaced); a
    failure leaves no partial file and raises LensError naming ``what``."""
    out = check_output(path, what)
    folder = (os.environ.get("LENS_TMPDIR") or None) if out.in_place else out.path.parent
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{out.path.name}.", suffix=".tmp")
        os.close(fd)
        write(tmp)
        if out.in_place:
            with open(tmp, "rb") as src, open(out.path, "ab") as dst:
                shutil.copyfileobj(src, dst)
        else:
            os.replace(tmp, out.path)
            tmp = None
    except OSError as exc:
        raise LensError(f"Cannot write {what} to {path} ({exc.strerror or exc}).") from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return out
