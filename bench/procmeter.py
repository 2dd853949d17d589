"""Run one command as a process and measure it: wall time and peak RSS of its whole process tree.

RSS is polled every 50 ms over the process and all its descendants (psutil) and compared with the
kernel's own ``ru_maxrss`` of the waited process (``os.wait4``); the larger is reported. A process
tree whose RSS passes ``cap_gb`` is killed and reported as ``killed past N GB``, one that runs past
``timeout_s`` as ``timed out past N s``; neither takes the shared machine down.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

POLL_S = 0.05


@dataclass
class Run:
    """What one measured process did."""

    cmd: list[str]
    wall_s: float
    peak_gb: float
    status: str  # "ok", "killed past N GB", "timed out past N s", "exit N"
    stdout: str = ""
    stderr_tail: str = ""
    extra: dict = field(default_factory=dict)
    cpu_s: float = 0.0
    """User + system CPU seconds of the waited process and the children it waited for (the kernel's
    accounting, ``os.wait4``): what a shared machine's load inflates least."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    try:
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        with contextlib.suppress(psutil.Error):  # a process that ended meanwhile holds no memory
            total += p.memory_info().rss
    return total


def _kill_tree(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(pid, signal.SIGKILL)  # the child leads its own process group


def measure(cmd: list[str], *, cap_gb: float, timeout_s: float, cwd: Path | None = None,
            env: dict | None = None, out_path: Path | None = None) -> Run:
    """Run ``cmd`` to completion (or to its cap / timeout) and return a :class:`Run`."""
    out = open(out_path, "w+b") if out_path else subprocess.DEVNULL  # noqa: SIM115 - closed after the child
    err_file = Path(out_path).with_suffix(".err") if out_path else None
    err = open(err_file, "w+b") if err_file else subprocess.DEVNULL  # noqa: SIM115 - closed after the child
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err, start_new_session=True)
    ps = psutil.Process(proc.pid)
    peak, status, ru_max = 0, None, 0
    cap = cap_gb * 1024**3
    while True:
        pid, code, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            ru_max = ru.ru_maxrss * 1024
            cpu = ru.ru_utime + ru.ru_stime
            wall = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(code)
            break
        peak = max(peak, _tree_rss(ps))
        if peak > cap:
            status = f"killed past {cap_gb:g} GB"
        elif time.perf_counter() - t0 > timeout_s:
            status = f"timed out past {timeout_s:g} s"
        if status:
            _kill_tree(proc.pid)
            _, code, ru = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - t0
            ru_max = ru.ru_maxrss * 1024
            cpu = ru.ru_utime + ru.ru_stime
            break
        time.sleep(POLL_S)
    _kill_tree(proc.pid)  # leave no grandchild behind
    if status is None:
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
    stdout, tail = "", ""
    if out_path:
        out.close()
        stdout = Path(out_path).read_text(errors="replace")[:20_000]
    if err_file:
        err.close()
        tail = err_file.read_text(errors="replace")[-1500:]
    return Run(cmd, wall, max(peak, ru_max) / 1024**3, status, stdout, tail, cpu_s=cpu)
