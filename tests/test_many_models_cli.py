"""``python -m engine leaderboard`` on 4,000 models as a process with a capped address space (issue 23,
bug 13): the lean DuckDB count path and the pair-list fits never build an (n, n) or (pairs, n) array.

The process's scores are checked against a second path in this process: the general vote path
(``store_vote_rows`` → ``votes`` → ``leaderboard_from_votes``), which shares no code with the lean SQL
fetch up to the pair counts.
"""

from __future__ import annotations

import io
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
CAP_BYTES = 3 * 1024**3
"""Address-space cap of the measured process: the dense path asked for 3 n^2 cell counts (384 MB at
4,000 models, several copies) and, for BT and Davidson, an (8M pairs x 4,000) incidence (256 GB)."""


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


@pytest.fixture(scope="module")
def wide_store(tmp_path_factory) -> Path:
    sys.path.insert(0, str(ROOT))
    from bench.many_models import generate

    db = tmp_path_factory.mktemp("wide") / "wide.duckdb"
    generate(db, 120_000, 4_000)
    return db


@pytest.mark.parametrize("ranker", ["bt", "rank-centrality"])
def test_leaderboard_on_4000_models_runs_capped_and_matches_the_vote_path(wide_store, ranker):
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.count_board import leaderboard_from_votes
    from engine.ranking.vote_query import store_vote_rows
    from engine.store.connection import Store

    out = subprocess.run(
        [sys.executable, "-m", "engine", "--db", str(wide_store), "leaderboard", "--dataset", "arena",
         "--ranker", ranker, "--format", "csv"],
        cwd=ROOT, capture_output=True, text=True, preexec_fn=_cap, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-800:]
    table = pd.read_csv(io.StringIO(out.stdout)).set_index("model")
    assert len(table) == 4_000 and np.isfinite(table["score"]).all()
    store = Store(wide_store)
    try:
        rows = store_vote_rows(store, "arena")
    finally:
        store.close()
    board = leaderboard_from_votes(make_votes(rows), ranker=ranker).table.set_index("model")
    np.testing.assert_allclose(table["score"].loc[board.index], board["score"], atol=1e-6)
    np.testing.assert_array_equal(table["wins"].loc[board.index], board["wins"])
