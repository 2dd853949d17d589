"""The count path's leaderboard columns and parameters through the CLI (mutation pass survivors):
wins, losses, ties and win rate against pandas over the verdicts, the bootstrap count reported, and
the uncompared pairs counted by hand."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from conftest import run_engine

MODELS = ("m0", "m1", "m2", "m3")


def battle_log(seed: int = 11, n: int = 120) -> pd.DataFrame:
    """Battles of four models with many ties; m0 and m3 never meet (one uncompared pair)."""
    rng = np.random.default_rng(seed)
    pairs = [(a, b) for a in MODELS for b in MODELS if a < b and {a, b} != {"m0", "m3"}]
    rows = []
    for k in range(n):
        a, b = pairs[k % len(pairs)]
        rows.append(
            {
                "prompt_id": f"p{k}",
                "model_a": a,
                "model_b": b,
                "winner": rng.choice(["A", "B", "tie"], p=[0.4, 0.3, 0.3]),
            }
        )
    return pd.DataFrame(rows)


def test_count_leaderboard_columns_equal_pandas_counts(tmp_path, db_path):
    v = battle_log()
    v.to_parquet(tmp_path / "log.parquet")

    def cli(*args):
        out = run_engine(["--db", str(db_path), *args])
        assert out.returncode == 0, out.stderr
        return out.stdout

    cli("datasets", "attach", "log", str(tmp_path / "*.parquet"))
    got = json.loads(cli("leaderboard", "--dataset", "log", "--ranker", "bt", "--format", "json"))
    table = pd.DataFrame(got["table"]).set_index("model")
    a_pts = v["winner"].map({"A": 1.0, "B": 0.0, "tie": 0.5})
    for m in MODELS:
        as_a, as_b = v["model_a"] == m, v["model_b"] == m
        wins = int(((v["winner"] == "A") & as_a).sum() + ((v["winner"] == "B") & as_b).sum())
        ties = int(((v["winner"] == "tie") & (as_a | as_b)).sum())
        games = int((as_a | as_b).sum())
        points = float(a_pts[as_a].sum() + (1.0 - a_pts[as_b]).sum())
        assert (table.loc[m, "wins"], table.loc[m, "ties"], table.loc[m, "losses"]) == (
            wins,
            ties,
            games - wins - ties,
        )
        assert abs(table.loc[m, "win_rate"] - points / games) < 1e-9  # the JSON rounds to 10 decimals
    assert got["params"]["bootstrap"] == 0 and got["params"]["seed"] is None
    assert got["params"]["n_uncompared_pairs"] == 1
    boot = json.loads(
        cli(
            "leaderboard",
            "--dataset",
            "log",
            "--ranker",
            "bt",
            "--bootstrap",
            "4",
            "--seed",
            "2",
            "--format",
            "json",
        )
    )
    assert boot["params"]["bootstrap"] == 4 and boot["params"]["seed"] == 2
