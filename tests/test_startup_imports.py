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
from contextlib import redirect_stdout
from io import StringIO
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
    "numpy.ma",                        # masked arrays: the vote read coalesces its NULLs in SQL and asks
                                       # engine.ranking.vote_query.is_masked, which never touches np.ma
    "scipy.special",                   # the sandwich, the baseline's win rates, predicted win rates
    "scipy.optimize",
    "scipy.stats",
    "scipy.sparse",                    # the sparse solvers above the dense limit, the bootstraps, PGED;
    "scipy.linalg",                    # components are found by engine.graphs.reachability.pair_components
    "scipy._lib",                      # (scipy.sparse pulled numpy.f2py through scipy's array-API layer)
    "numpy.f2py",
    "engine.rankers.style_bt",         # the style-controlled fit and its sandwich (--style-control, --ci
    "engine.rankers.sandwich",         # sandwich): engine.ranking.style_board loads them where it fits
    "engine.ranking.bootstrap",        # the bootstraps (--bootstrap B) and what only they use: loaded
    "engine.ranking.count_bootstrap",  # where a bootstrap runs (engine.ranking.board names their result
    "engine.rankers.counts",           # in annotations only)
    "engine.style.features",           # style counts (--style-control): engine.ranking.vote_query loads
    "engine.style.counting",           # them for a read with style counts only
    "engine.judging.api",              # the judging pipeline
    "torch",
    "transformers",
)
"""Packages and modules the plain ``leaderboard`` must not import (a name covers its submodules)."""

NEEDED = ("duckdb", "numpy", "engine.ranking.leaderboard", "engine.store.connection")
"""What it does import: the list is read, not empty (a dump that failed would pass NOT_NEEDED)."""

RUN_AS_MAIN = """
import gc, json, runpy, sys
out, sys.argv = sys.argv[1], ["engine", *sys.argv[2:]]
try:
    runpy.run_module("engine", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules), "gc_enabled": gc.isenabled(),
               "frozen": gc.get_freeze_count()}, f)
"""


def run_as_main(args: list[str], tmp_path: Path, db: Path) -> tuple[subprocess.CompletedProcess, dict]:
    """Run ``python -m engine --db DB ARGS`` as a process; (the process, what it recorded at exit: its
    exit code, modules and collector state)."""
    dump = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "LENS_DB"}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", RUN_AS_MAIN, str(dump), "--db", str(db), *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    record = json.loads(dump.read_text())
    assert record["code"] == 0, done.stderr
    return done, record


def loaded_by(args: list[str], tmp_path: Path, db: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -m engine --db DB ARGS`` as a process; (the process, its modules at exit)."""
    done, record = run_as_main(args, tmp_path, db)
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


def test_the_program_loads_without_collection_and_collects_after(store_copy: Path, tmp_path: Path):
    """``python -m engine`` loads its modules with the collector off and freezes what they built
    (``engine.__main__.loading_without_collection``); the command itself runs with the collector on again,
    and the board is the one main() prints in this process, where the collector is left alone."""
    import gc

    from engine.__main__ import main

    done, record = run_as_main(["leaderboard", "--dataset", "vicuna80"], tmp_path, store_copy)
    assert record["gc_enabled"] is True
    assert record["frozen"] > 10_000  # numpy, DuckDB and the engine's modules: tens of thousands of objects
    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    in_process = tmp_path / "in_process.duckdb"
    shutil.copyfile(store_copy, in_process)
    out = StringIO()
    with redirect_stdout(out):
        assert main(["--db", str(in_process), "leaderboard", "--dataset", "vicuna80"]) == 0
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)  # a caller's collector untouched
    assert out.getvalue() == done.stdout


def test_the_vote_read_gives_nan_for_null_times_and_probabilities():
    """The vote read coalesces NULL times and probabilities to NaN in SQL (no masked array, so no numpy.ma):
    each row's ``when`` / ``prob_a`` is the stored value, NaN where it is NULL, as the masked read gave.
    Rows come back in the table's order (order_by=None), checked against the values inserted."""
    import duckdb
    import numpy as np

    from engine.ranking.vote_query import is_masked, read_vote_rows

    times = [1.5, None, 3.25, None, 7.0, None]
    probs = [0.25, 0.75, None, 0.5, None, None]
    con = duckdb.connect()
    con.execute("CREATE TABLE v (judge VARCHAR, prompt_id VARCHAR, variant BIGINT, turn BIGINT, "
                "model_a VARCHAR, model_b VARCHAR, winner VARCHAR, tstamp DOUBLE, prob_a DOUBLE)")
    for i, (t, p) in enumerate(zip(times, probs, strict=True)):
        con.execute("INSERT INTO v VALUES ('j', ?, 0, 1, ?, ?, ?, ?, ?)",
                    [f"p{i}", "m0" if i % 2 else "m1", "m2", ("A", "B", "tie")[i % 3], t, p])
    rows = read_vote_rows(con, "v")
    assert rows.when is not None and rows.prob_a is not None
    assert not is_masked(rows.when) and not is_masked(rows.prob_a)
    expected = lambda xs: np.array([np.nan if x is None else x for x in xs])  # noqa: E731
    np.testing.assert_array_equal(rows.when, expected(times))
    np.testing.assert_array_equal(rows.prob_a, expected(probs))
    assert is_masked(np.ma.masked_array([1.0, 2.0], mask=[True, False])) and not is_masked(np.ones(2))
