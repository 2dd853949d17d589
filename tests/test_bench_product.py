"""The product benchmark's parts: the battle-log generators, the process meter, the peers' BT fit.

No timing is asserted (the machine is shared); what is checked is what the numbers rest on: the
logs have the promised shape and follow the BT model they are drawn from, the FastChat-style peer's
fit agrees with evalica on the same battles, and the meter sees a known allocation and kills a
process past its cap.
"""

from __future__ import annotations

import sys
import textwrap

import evalica
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import battlegen  # noqa: E402
from peer_fastchat import fit_bt, win_matrix  # noqa: E402
from procmeter import measure  # noqa: E402
from product import parse_count, parse_workloads  # noqa: E402


@pytest.fixture(scope="module")
def arena() -> pd.DataFrame:
    return pa.concat_tables(list(battlegen.arena_chunks(60_000, 12, seed=3, chunk=25_000))).to_pandas()


def test_arena_log_shape(arena):
    assert len(arena) == 60_000
    assert list(arena.columns) == ["battle_id", "prompt_id", "model_a", "model_b", "winner", "tstamp"]
    assert arena["battle_id"].is_unique
    assert (arena["model_a"] != arena["model_b"]).all()
    assert set(arena["winner"]) == {"model_a", "model_b", "tie", "tie (bothbad)"}
    ties = arena["winner"].str.startswith("tie").mean()
    assert 0.10 <= ties <= 0.30
    repeats = arena["prompt_id"].duplicated(keep=False)
    assert 0 < arena["prompt_id"].duplicated().sum() < 0.01 * len(arena)
    # a repeated prompt is a repeated battle: the same pair again
    rep = arena[repeats].groupby("prompt_id")[["model_a", "model_b"]].nunique()
    assert (rep == 1).all().all()
    assert arena["tstamp"].is_monotonic_increasing
    assert arena["model_a"].nunique() == 12


def test_arena_outcomes_follow_the_drawn_strengths(arena):
    models = pd.Index(sorted(set(arena["model_a"]) | set(arena["model_b"])))
    fitted = fit_bt(win_matrix(arena, models))
    truth = pd.Series(battlegen.strengths(12, 3), index=battlegen.model_names(12)).reindex(models).to_numpy()
    assert np.corrcoef(fitted, truth)[0, 1] > 0.99


def test_fastchat_style_fit_agrees_with_evalica(arena):
    models = pd.Index(sorted(set(arena["model_a"]) | set(arena["model_b"])))
    ours = fit_bt(win_matrix(arena, models))
    to = {"model_a": evalica.Winner.X, "model_b": evalica.Winner.Y}
    res = evalica.bradley_terry(arena["model_a"].tolist(), arena["model_b"].tolist(),
                                [to.get(w, evalica.Winner.Draw) for w in arena["winner"]],
                                tolerance=1e-10, limit=10_000)
    theirs = np.log(res.scores.reindex(models).to_numpy())
    np.testing.assert_allclose(ours, theirs - theirs.mean(), atol=1e-4)


def test_tournaments_hold_every_pair_in_both_orders():
    t = pa.concat_tables(list(battlegen.tournament_chunks(7, 6, prompts_per_chunk=3))).to_pandas()
    assert len(t) == 7 * 15 * 2
    per = t.groupby(["prompt_id", "model_a", "model_b"])["order"].agg(lambda s: tuple(sorted(s)))
    assert len(per) == 7 * 15 and set(per) == {("AB", "BA")}
    assert set(t["winner"]) <= {"A", "B", "tie"}


def test_write_streams_parquet_and_csv_with_the_same_rows(tmp_path):
    n = battlegen.write("arena", tmp_path / "a.parquet", 1_234, 8)
    m = battlegen.write("arena", tmp_path / "a.csv", 1_234, 8)
    assert n == m == 1_234 == pq.ParquetFile(tmp_path / "a.parquet").metadata.num_rows
    a = pd.read_parquet(tmp_path / "a.parquet")
    b = pd.read_csv(tmp_path / "a.csv")
    pd.testing.assert_series_equal(a["winner"], b["winner"])
    assert not list(tmp_path.glob("*.part"))


def test_meter_sees_an_allocation_and_kills_past_the_cap(tmp_path):
    alloc = textwrap.dedent("""
        import sys, time
        blocks = [bytearray(b"x" * (50 * 2**20)) for _ in range(int(sys.argv[1]))]
        time.sleep(0.5)
    """)
    script = tmp_path / "alloc.py"
    script.write_text(alloc)
    ok = measure([sys.executable, str(script), "6"], cap_gb=4, timeout_s=120)
    assert ok.status == "ok" and ok.peak_gb >= 0.29
    killed = measure([sys.executable, str(script), "40"], cap_gb=0.5, timeout_s=120)
    assert killed.status == "killed past 0.5 GB"
    failed = measure([sys.executable, "-c", "raise SystemExit(3)"], cap_gb=1, timeout_s=60)
    assert failed.status == "exit 3"


def test_workload_names():
    assert parse_count("100k") == 100_000 and parse_count("1m") == 1_000_000 and parse_count("2500") == 2500
    assert parse_workloads("1mx200,t10000x20") == [
        ("arena", 1_000_000, 200, "arena 1,000,000 battles x 200 models"),
        ("tournament", 10_000, 20, "tournaments 10,000 prompts x 20 models x 2 orders"),
    ]
