"""The second shipped dataset (engine/ingest/shipped_counts.py): Chatbot Arena 2024-08-14 as pair counts.

The shipped CSV must be the file PROVENANCE.md describes (its sha256 and totals, read from there), the
conversion must map leaderbot's layout as documented (a file we write in that layout), a new store
must open with the dataset beside vicuna80 (once: a deleted copy stays deleted), and the count path's
Bradley-Terry on it must be the maximum-likelihood fit found by a plain second optimiser.
"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from engine.ingest.importer import delete_dataset
from engine.ingest.shipped import open_store
from engine.ingest.shipped_counts import (
    ARENA_COUNTS_DATASET,
    ARENA_COUNTS_DIR,
    ARENA_COUNTS_FILE,
    leaderbot_pairs,
)
from engine.ranking.leaderboard import leaderboard
from engine.store.pair_counts import is_pair_count_dataset

PROVENANCE = (ARENA_COUNTS_DIR / "PROVENANCE.md").read_text(encoding="utf-8")


def test_shipped_file_is_the_one_provenance_describes():
    sha = re.search(r"`pair_counts.csv` .*? `([0-9a-f]{64})`", PROVENANCE)
    assert sha is not None
    assert hashlib.sha256(ARENA_COUNTS_FILE.read_bytes()).hexdigest() == sha.group(1)
    df = pd.read_csv(ARENA_COUNTS_FILE)
    totals = [int(x.replace(",", "")) for x in re.findall(
        r"first-named model ([\d,]+), of the second ([\d,]+), ties ([\d,]+), both-bad ties ([\d,]+)",
        PROVENANCE)[0]]
    assert df[["wins_a", "wins_b", "ties", "both_bad"]].sum().tolist() == totals
    assert sum(totals) == 1_670_250
    assert len(set(df["model_a"]) | set(df["model_b"])) == 129 and len(df) == 3460
    assert (df["model_a"] < df["model_b"]).all()
    assert "BSD" in PROVENANCE and (ARENA_COUNTS_DIR / "LICENSE").read_text().startswith("Redistribution")


def test_leaderbot_layout_is_mapped_as_documented(tmp_path):
    """(i, j) index pairs and Y = (wins of i, wins of j, ties, both bad), in the file's pair order."""
    src = {"models": ["a", "b", "c"], "X": [[0, 2], [1, 2]], "Y": [[5, 1, 2, 3], [0, 4, 0, 1]]}
    path = tmp_path / "lb.json"
    path.write_text(json.dumps(src))
    want = pd.DataFrame({"model_a": ["a", "b"], "model_b": ["c", "c"], "wins_a": [5, 0], "wins_b": [1, 4],
                         "ties": [2, 0], "both_bad": [3, 1]})
    pd.testing.assert_frame_equal(leaderbot_pairs(path), want)


def test_new_store_opens_with_it_once(db_path):
    store = open_store(db_path)
    try:
        assert set(store.datasets()["name"]) == {"vicuna80", ARENA_COUNTS_DATASET}
        assert is_pair_count_dataset(store, ARENA_COUNTS_DATASET)
        delete_dataset(store, ARENA_COUNTS_DATASET)
    finally:
        store.close()
    store = open_store(db_path)
    try:
        assert not store.has_dataset(ARENA_COUNTS_DATASET)
    finally:
        store.close()


def _half_tie_bt(df: pd.DataFrame) -> pd.Series:
    """Second path: the half-tie Bradley-Terry MLE by L-BFGS on the negative log-likelihood (no prior)."""
    models = sorted(set(df["model_a"]) | set(df["model_b"]))
    code = {m: k for k, m in enumerate(models)}
    i, j = df["model_a"].map(code).to_numpy(), df["model_b"].map(code).to_numpy()
    half = 0.5 * (df["ties"] + df["both_bad"]).to_numpy(float)
    wi, wj = df["wins_a"].to_numpy(float) + half, df["wins_b"].to_numpy(float) + half

    def nll(theta):
        d = theta[i] - theta[j]
        p = 1 / (1 + np.exp(-d))
        f = -(wi * np.log(p) + wj * np.log1p(-p)).sum()
        g = np.bincount(i, wi * (1 - p) - wj * p, len(models)) - np.bincount(j, wi * (1 - p) - wj * p,
                                                                               len(models))
        return f, -g

    res = minimize(nll, np.zeros(len(models)), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-15})
    return pd.Series(res.x - res.x.mean(), index=models)


@pytest.mark.parametrize("ci", [None, "sandwich"])
def test_bt_on_the_arena_counts_is_the_mle(shipped_db, ci):
    from engine.store.connection import Store

    with Store(shipped_db, read_only=True) as store:
        board = leaderboard(store, ARENA_COUNTS_DATASET, ranker="bt", ci=ci).table.set_index("model")
    ref = _half_tie_bt(pd.read_csv(ARENA_COUNTS_FILE))
    ours = board["score"] - board["score"].mean()
    assert np.abs(ours.reindex(ref.index) - ref).max() < 1e-4
    assert board["votes"].sum() == 2 * 1_670_250
    assert list(board.index[:3]) == ["chatgpt-4o-latest", "gemini-1.5-pro-exp-0801", "gpt-4o-2024-05-13"]
