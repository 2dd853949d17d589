"""Start-up cost of the command line: ``python -m engine leaderboard`` as a process beside a bare
``python -c "import duckdb, numpy"`` in the same run.

    python bench/startup.py [--db STORE] [--repeats 7] [--base CHECKOUT] [--pandas-floor] [--same-output]
                            [-- extra leaderboard args]

Each round runs the bare import, then the command of this checkout (and of ``--base``, e.g. a worktree
of main, when given), in turn, so a drift of the shared machine's speed hits every command alike; the
first round is a warm-up and is not counted. For each command: the median (min-max) of wall seconds,
CPU seconds (user + system of the process, from the kernel's accounting of the reaped child), and peak
RSS; and the median of the per-round ratios to the bare import, wall and CPU. Bytecode caches are written
in the warm-up round and read after it (``user_environment``). The command runs on a copy
of the store (default: a fresh one with the shipped vicuna80, which the first run imports). Prints a
Markdown table with the load average before and after; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BARE = [sys.executable, "-c", "import duckdb, numpy"]
WITH_PANDAS = [sys.executable, "-c", "import duckdb, numpy, pandas"]
"""The floor of any command that builds its table with pandas (pandas imports pyarrow at its start)."""


def load_average() -> str:
    """The machine's load average now (1, 5, 15 min)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_once(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float, float, int]:
    """One process to completion: (wall s, cpu s, peak RSS MiB, exit status)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, proc.returncode


def user_environment() -> dict[str, str]:
    """This process's environment as a user's shell has it: without ``PYTHONDONTWRITEBYTECODE`` (set on
    the shared machine), so the warm-up round writes the engine's bytecode caches and the counted rounds
    read them, as an installed package's are read (else every run compiles ~75 engine modules, ~0.1 s)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


VARIANTS = (
    (),
    ("--bootstrap", "20", "--format", "csv"),
    ("--baseline", "gpt4", "--bootstrap", "10", "--format", "json"),
    ("--judge", "gpt-4", "--ranker", "davidson"),
    ("--ranker", "elo", "--format", "csv"),
    ("--ci", "sandwich"),
    ("--style-control",),
    ("--keep-k", "20", "--bootstrap", "10"),
    ("--ranker", "pged", "--bootstrap", "5", "--format", "csv"),
    ("--ranker", "copeland", "--bootstrap", "10"),
    ("--ranker", "kemeny", "--judge", "gpt-4"),
)
"""Leaderboard variants whose printed bytes must not change with a start-up change (``--same-output``)."""


def same_output(base: Path, db: Path) -> list[str]:
    """Run every ``VARIANTS`` leaderboard in ``base`` and in this checkout on copies of ``db``; one line
    per variant: same or DIFFERENT stdout+stderr and exit status."""
    lines = []
    for variant in VARIANTS:
        outputs = []
        for checkout in (base, REPO):
            copy = db.with_name(f"same-{checkout.name}.duckdb")
            shutil.copyfile(db, copy)
            env = {**os.environ, "PYTHONPATH": str(checkout)}
            done = subprocess.run([sys.executable, "-m", "engine", "--db", str(copy), "leaderboard",
                                   "--dataset", "vicuna80", *variant], cwd=checkout, env=env,
                                  capture_output=True)
            outputs.append((done.returncode, done.stdout, done.stderr))
        verdict = "same" if outputs[0] == outputs[1] else "DIFFERENT"
        lines.append(f"- {verdict} (exit {outputs[1][0]}, {len(outputs[1][1])} bytes): "
                     f"`leaderboard --dataset vicuna80 {' '.join(variant)}`")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, help="a store to copy (default: a fresh one with vicuna80)")
    ap.add_argument("--repeats", type=int, default=7, help="counted rounds (after one warm-up)")
    ap.add_argument("--base", type=Path, help="a second checkout measured in the same rounds")
    ap.add_argument("--pandas-floor", action="store_true",
                    help="also time a bare `import duckdb, numpy, pandas` (a pandas board's floor)")
    ap.add_argument("--same-output", action="store_true",
                    help="with --base: also check that every VARIANTS board prints the same bytes in both")
    ap.add_argument("extra", nargs="*", help="more leaderboard arguments (after --)")
    a = ap.parse_args()
    args = ["leaderboard", "--dataset", "vicuna80", *a.extra]
    with tempfile.TemporaryDirectory(prefix="lens-startup-") as tmp:
        db = Path(tmp) / "lens.duckdb"
        if a.db is not None:
            shutil.copyfile(a.db, db)
        commands = {"bare `import duckdb, numpy`": (BARE, REPO)}
        if a.pandas_floor:
            commands["bare `import duckdb, numpy, pandas`"] = (WITH_PANDAS, REPO)
        if a.base is not None:
            commands["base `python -m engine " + " ".join(args) + "`"] = (
                [sys.executable, "-m", "engine", "--db", str(db), *args], a.base)
        commands["this `python -m engine " + " ".join(args) + "`"] = (
            [sys.executable, "-m", "engine", "--db", str(db), *args], REPO)
        results: dict[str, list[tuple[float, float, float, int]]] = {k: [] for k in commands}
        before = load_average()
        for round_ in range(a.repeats + 1):
            for name, (cmd, cwd) in commands.items():
                env = {**user_environment(), "PYTHONPATH": str(cwd)}
                r = run_once(cmd, cwd, env)
                if r[3] != 0:
                    raise SystemExit(f"{name} exited {r[3]}")
                if round_:  # round 0 is the warm-up (and imports vicuna80 into a fresh store)
                    results[name].append(r)
        after = load_average()
    bare = results[next(iter(commands))]
    lines = [f"`python bench/startup.py {' '.join(sys.argv[1:])}`: {a.repeats} rounds, load average "
             f"{before} before, {after} after", "",
             "| command | wall s median (min-max) | cpu s median (min-max) | peak MiB | wall / bare "
             "| cpu / bare |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for name, runs in results.items():
        walls, cpus, peaks = ([r[i] for r in runs] for i in range(3))
        wall_ratio = statistics.median(r[0] / b[0] for r, b in zip(runs, bare, strict=True))
        cpu_ratio = statistics.median(r[1] / b[1] for r, b in zip(runs, bare, strict=True))
        lines.append(f"| {name} | {statistics.median(walls):.3f} ({min(walls):.3f}-{max(walls):.3f}) "
                     f"| {statistics.median(cpus):.3f} ({min(cpus):.3f}-{max(cpus):.3f}) "
                     f"| {statistics.median(peaks):.0f} | {wall_ratio:.2f} | {cpu_ratio:.2f} |")
    if a.same_output and a.base is not None:
        with tempfile.TemporaryDirectory(prefix="lens-startup-") as tmp:
            db = Path(tmp) / "lens.duckdb"
            if a.db is not None:
                shutil.copyfile(a.db, db)
            else:  # a fresh store with vicuna80, imported once, then copied for every run
                subprocess.run([sys.executable, "-m", "engine", "--db", str(db), "datasets"], cwd=REPO,
                               env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, check=True)
            lines += ["", "Printed bytes (stdout, stderr, exit status), base vs this:",
                      *same_output(a.base, db)]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
