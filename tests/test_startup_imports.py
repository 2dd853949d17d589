"""``python -m engine leaderboard`` imports what ranking needs, not what other commands need.

Why: the command's start-up is mostly imports (issue 26, point 5: at most twice a bare
``python -c "import duckdb, numpy"``). On a store that already holds vicuna80 the leaderboard never
imports a file, never reads Parquet through pyarrow's dataset layer, never draws a page, never
calls scipy.special (its sandwich and baseline paths do, when asked), never imports scipy at all
(the comparison graph's components come from a numpy union-find) and never imports pandas or pyarrow
(the board is built as arrays and its text written from them; pandas only where a caller asks for a
DataFrame). A module import moved back to the top of a file on the command's path (engine.ingest.
shipped importing the importer, a ranker importing scipy.special, pandas at the top of a module that
names it) puts the module back in the process and fails here.

The command runs as a real process (``python -c`` running the package as ``python -m`` does) and
writes its ``sys.modules`` to a file after it finished; bench/startup.py times the same command.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

NOT_NEEDED = (
    "pandas",                          # the board is built and printed from arrays (engine.ranking.board.
    "pyarrow",                         # BoardRows, engine.cli._text_table); pandas imports pyarrow
    "streamlit",                       # the app's
    "plotly",                          # the app's charts
    "engine.views",                    # what pages render
    "engine.ingest.importer",          # importing files (only a store's first use imports vicuna80)
    "engine.ingest.verdicts",          # validating verdict files
    "engine.ingest.pair_count_files",  # reading pair-count files (the shipped arena counts' first use)
    "engine.ingest.staging",
    "pyarrow.parquet",                 # Parquet files (the importer's)
    "pyarrow.dataset",
    "scipy.special",                   # the sandwich, the baseline's win rates, predicted win rates
    "scipy.optimize",
    "scipy.stats",
    "scipy.sparse",                    # the sparse solvers above the dense limit, the bootstraps, PGED;
    "scipy.linalg",                    # components are found by engine.graphs.reachability.pair_components
    "scipy._lib",                      # (scipy.sparse pulled numpy.f2py through scipy's array-API layer)
    "numpy.f2py",
    "engine.judging.api",              # the judging pipeline
    "torch",
    "transformers",
)
"""Packages and modules the plain ``leaderboard`` must not import (a name covers its submodules)."""

NEEDED = ("duckdb", "numpy", "engine.ranking.leaderboard", "engine.store.connection")
"""What it does import: the list is read, not empty (a dump that failed would pass NOT_NEEDED)."""

RUN_AS_MAIN = """
import json, runpy, sys
out, sys.argv = sys.argv[1], ["engine", *sys.argv[2:]]
try:
    runpy.run_module("engine", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def loaded_by(args: list[str], tmp_path: Path, db: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -m engine --db DB ARGS`` as a process; (the process, its modules at exit)."""
    dump = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "LENS_DB"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", RUN_AS_MAIN, str(dump), "--db", str(db), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    record = json.loads(dump.read_text())
    assert record["code"] == 0, done.stderr
    return done, set(record["modules"])


def offending(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The loaded modules that are one of ``names`` or inside one."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.fixture
def store_copy(shipped_db: Path, tmp_path: Path) -> Path:
    path = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, path)
    return path


def test_leaderboard_imports_only_what_it_needs(store_copy: Path, tmp_path: Path):
    done, modules = loaded_by(["leaderboard", "--dataset", "vicuna80"], tmp_path, store_copy)
    assert "gpt4" in done.stdout and "rank" in done.stdout.splitlines()[0]
    assert offending(modules, NEEDED) and all(n in modules for n in NEEDED)
    assert offending(modules, NOT_NEEDED) == []


def test_a_path_that_needs_scipy_special_still_loads_it(store_copy: Path, tmp_path: Path):
    """The moved imports still run where they are used: the sandwich interval needs ndtri and expit,
    and gives the intervals (a lazy import that named a wrong module would fail here, not at start)."""
    done, modules = loaded_by(["leaderboard", "--dataset", "vicuna80", "--ci", "sandwich", "--format", "csv"],
                              tmp_path, store_copy)
    assert "scipy.special" in modules
    header = done.stdout.splitlines()[0].split(",")
    assert "ci_low" in header and "ci_high" in header


def test_an_elo_bootstrap_board_imports_no_pandas_and_no_numba(store_copy: Path, tmp_path: Path):
    """``--ranker elo --bootstrap B``: Elo's point fit gives arrays, its resamples run in the loop built
    from LLVM IR (llvmlite, not numba: 0.5-1 s to load), and the interval columns are printed from
    arrays (``engine.ranking.board.Typed``), so neither pandas nor numba is loaded; the intervals are
    there."""
    args = ["leaderboard", "--dataset", "vicuna80", "--ranker", "elo", "--bootstrap", "20"]
    done, modules = loaded_by(args, tmp_path, store_copy)
    header = done.stdout.splitlines()[0].split()
    assert "ci_low" in header and "rank_ub" in header and "gpt4" in done.stdout
    assert "llvmlite" in modules
    assert offending(modules, ("pandas", "pyarrow", "numba", "scipy.sparse")) == []
