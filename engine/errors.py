"""User-facing errors: one clear sentence each, shown without a traceback by the CLI and the app."""


class LensError(Exception):
    """A mistake in the user's input or request that they can fix (bad file, unknown dataset, ...)."""


_DISK_FULL = ("no space left", "file too large", "disk full", "disk is full", "errno 28", "errno 27")


def is_disk_full(exc: BaseException) -> bool:
    """The error (or one it was raised from) is the file system refusing to grow a file: no space
    left on the device, or a file-size limit."""
    import errno

    cur: BaseException | None = exc
    seen = 0
    while cur is not None and seen < 8:
        if isinstance(cur, OSError) and cur.errno in (errno.ENOSPC, errno.EFBIG):
            return True
        if any(t in str(cur).lower() for t in _DISK_FULL):
            return True
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    return False


def disk_full_sentence() -> str:
    """What to tell the user when a write hit a full disk (the store keeps its last committed state)."""
    return (
        "The disk is full (or a file-size limit was reached): the write that hit it was not stored and the "
        "store is as it was before it; free some space and run the command again."
    )
