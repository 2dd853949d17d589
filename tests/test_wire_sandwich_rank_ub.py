"""Seam: under ``--ci sandwich`` (plain Bradley-Terry) the CLI's rank_ub in JSON, CSV and the printed table
is the pairwise count of the sandwich intervals it prints (issue 24 point 3: rank (UB) comes from the
interval shown), on the natural-log and on the Elo-like scale."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from tests.conftest import run_engine


def brute_force(lows: list[float], highs: list[float]) -> list[int]:
    """1 + the models j != i whose lower bound is strictly above i's upper bound."""
    n = len(lows)
    return [1 + sum(1 for j in range(n) if j != i and lows[j] > highs[i]) for i in range(n)]


@pytest.mark.parametrize("scale", [[], ["--param", "scale=elo"]])
def test_sandwich_rank_ub_is_the_count_of_the_printed_intervals(shipped_db, scale):
    """Kills a rank_ub taken from anything but the sandwich intervals shown (planted: the lower bounds
    compared with the lower bounds)."""
    args = ["--db", str(shipped_db), "leaderboard", "--judge", "gpt-4", "--ci", "sandwich", *scale]
    outs = {}
    for fmt in ("json", "csv", "table"):
        res = run_engine([*args, "--format", fmt])
        assert res.returncode == 0, res.stderr
        outs[fmt] = res.stdout
    table = pd.DataFrame(json.loads(outs["json"])["table"]).set_index("model")
    csv = pd.read_csv(io.StringIO(outs["csv"])).set_index("model")
    printed = pd.read_fwf(io.StringIO(outs["table"])).set_index("model")
    for t in (table, csv):
        assert t["rank_ub"].tolist() == brute_force(t["ci_low"].tolist(), t["ci_high"].tolist())
    assert table["rank_ub"].to_dict() == csv["rank_ub"].to_dict() == printed["rank_ub"].to_dict()
    assert len(set(table["rank_ub"])) < len(table)  # some intervals overlap: shared places exercised
