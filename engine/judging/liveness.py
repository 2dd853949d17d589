"""Is the process that recorded a run or claimed a call still the same live process?

A process id alone is not enough: after a kill the id is free, and any later process may get it, so
"a process with that id is alive" would keep a dead run ``running`` for ever. We therefore record the
process's start time beside its id and call it alive only when a process with that id exists *and*
started at that time. The start time comes from ``/proc/<pid>/stat`` (Linux); elsewhere it is
unknown (``None``) and only the id is checked, as before.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache

_TOLERANCE_S = 1.0  # /proc gives clock ticks since boot; boot time is whole seconds


@lru_cache(maxsize=1)
def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def process_started(pid: int) -> float | None:
    """The start time of process ``pid`` in seconds since the epoch; ``None`` when unknown or gone."""
    boot = _boot_time()
    if boot is None:
        return None
    try:
        with open(f"/proc/{int(pid)}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces and brackets
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")


def pid_exists(pid: int) -> bool:
    """A process with this id exists (possibly someone else's)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def same_process_alive(pid: int, started: float | None) -> bool:
    """The process ``pid`` that started at ``started`` is still running (on this host).

    ``started`` ``None`` (recorded before start times were kept, or not knowable here) falls back to
    the id alone."""
    if not pid_exists(pid):
        return False
    if started is None:
        return True
    now = process_started(pid)
    return now is None or abs(now - float(started)) <= _TOLERANCE_S


def me() -> tuple[str, int, float | None]:
    """This process: (host, pid, start time)."""
    return _me(os.getpid())


@lru_cache(maxsize=4)
def _me(pid: int) -> tuple[str, int, float | None]:  # keyed by pid: a forked child is another process
    return socket.gethostname(), pid, process_started(pid)


def owner_name() -> str:
    """This process as one string (host:pid:start time), the owner of its call leases."""
    host, pid, started = me()
    return f"{host}:{pid}:{started if started is not None else '?'}"
