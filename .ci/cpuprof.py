"""Per-test CPU seconds of a pytest run, for finding where the suite's time goes on a shared machine.

Wall times there are inflated several times over by the other sessions' load (a file that takes 45 s
on an idle machine took 225 s at load 15); CPU seconds are not, so before/after comparisons of a test
change are made in CPU. Each test's record holds its wall time, the CPU of the process that ran it
(an xdist worker, or pytest itself under ``-n 0``) and the CPU of the child processes reaped during it
(CLI runs, judge processes, Streamlit servers and Chromium, reaped when their fixture ends: a module
fixture's children count to the file's last test).

Use as a plugin, then sum per file::

    PYTHONPATH=.ci CPUPROF_DIR=/tmp/prof CI=true python -m pytest -q -p cpuprof tests/test_x.py
    python .ci/cpuprof.py /tmp/prof          # most CPU first
    python .ci/cpuprof.py /tmp/prof --wall   # most wall first: the order SLOW_FILES_FIRST wants
    python .ci/cpuprof.py /tmp/prof --slow-files   # that order as SLOW_FILES_FIRST's lines

One JSON Lines file per process goes to ``CPUPROF_DIR`` (default: the current folder). Each record
also has the test's end (seconds since the epoch) and its process's xdist worker, so a two-worker
run shows when each worker ran out of work (the idle tail a file started last leaves). .ci/run
writes these for the whole suite into tests/_artifacts/cpuprof/.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import resource
import sys
import time

import pytest

_out = None


def _cpu() -> tuple[float, float]:
    """(this process's CPU seconds, its reaped children's CPU seconds), user + system."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Time one test's setup, call and teardown together."""
    global _out
    if _out is None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        folder = os.environ.get("CPUPROF_DIR", ".")
        _out = open(os.path.join(folder, f"prof-{os.getpid()}-{worker}.jsonl"), "a")  # noqa: SIM115
    wall0, (self0, kids0) = time.perf_counter(), _cpu()
    yield
    self1, kids1 = _cpu()
    _out.write(json.dumps({"id": item.nodeid, "wall": time.perf_counter() - wall0, "self": self1 - self0,
                           "children": kids1 - kids0, "end": time.time(),
                           "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}) + "\n")
    _out.flush()


def per_file(folder: str) -> dict[str, list[float]]:
    """File -> [wall, own CPU, children's CPU, tests] summed over the records in ``folder``."""
    sums: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for path in glob.glob(os.path.join(folder, "prof-*.jsonl")):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                row = sums[rec["id"].split("::")[0]]
                row[0] += rec["wall"]
                row[1] += rec["self"]
                row[2] += rec["children"]
                row[3] += 1
    return dict(sums)


def per_worker(folder: str) -> dict[str, list[float]]:
    """Worker -> [first test's start, last test's end, busy seconds, tests] over the records in
    ``folder`` (records written before the end times were kept are left out)."""
    rows: dict[str, list[float]] = {}
    for path in glob.glob(os.path.join(folder, "prof-*.jsonl")):
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if "end" not in rec:
                    continue
                row = rows.setdefault(rec["worker"], [float("inf"), 0.0, 0.0, 0])
                row[0] = min(row[0], rec["end"] - rec["wall"])
                row[1] = max(row[1], rec["end"])
                row[2] += rec["wall"]
                row[3] += 1
    return rows


def slow_files_lines(sums: dict[str, list[float]], least_wall: float = 2.0) -> list[str]:
    """tests/conftest.py SLOW_FILES_FIRST's lines for a whole run's records: every file of at least
    ``least_wall`` seconds, longest wall first, with its wall / CPU seconds (the list keys by file name;
    the browser files' places and ONE_WORKER's units are then set by hand, as its comment says)."""
    rows = sorted(((wall, own + kids, name) for name, (wall, own, kids, _) in sums.items()
                   if wall >= least_wall), reverse=True)
    return [f'    {chr(34) + os.path.basename(name) + chr(34) + ",":<36}# {wall:5.1f} / {cpu:5.1f}'
            for wall, cpu, name in rows]


def main(argv: list[str]) -> int:
    """Print the per-file sums of the folder ``argv[0]``, most CPU first (most wall first with
    ``--wall``; only the first N files with ``--top N``), the totals over every file, then each
    worker's busy time and when it finished, from the first test's start."""
    by_wall = "--wall" in argv[1:]
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else None
    sums = per_file(argv[0])
    if "--slow-files" in argv[1:]:
        print("\n".join(slow_files_lines(sums)))
        return 0
    print(f"{'file':56s} {'wall s':>8s} {'own CPU':>8s} {'children':>8s} {'CPU':>8s} {'tests':>6s}")
    key = (lambda kv: -kv[1][0]) if by_wall else (lambda kv: -(kv[1][1] + kv[1][2]))
    for name, (wall, own, kids, n) in sorted(sums.items(), key=key)[:top]:
        print(f"{name:56s} {wall:8.1f} {own:8.1f} {kids:8.1f} {own + kids:8.1f} {int(n):6d}")
    total = [sum(row[k] for row in sums.values()) for k in range(4)]
    print(f"{'total':56s} {total[0]:8.1f} {total[1]:8.1f} {total[2]:8.1f} {total[1] + total[2]:8.1f} "
          f"{int(total[3]):6d}")
    workers = per_worker(argv[0])
    if workers:
        start = min(row[0] for row in workers.values())
        for name, (_, end, busy, n) in sorted(workers.items()):
            print(f"worker {name}: {int(n)} tests, busy {busy:.1f} s, done at {end - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
