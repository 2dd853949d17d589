"""``judge --select ... --budget N`` end to end: the replay backend on the shipped vicuna80, a model judge
(the scripted fake server) under every protocol, a kill -9 in the middle, and every bad input.

Each replayed verdict is checked against SRC's row of the verdict id its call names (read back from the
call cache), so "the same calls" and "SRC's verdict for it" are compared row by row, not by count.
"""

from __future__ import annotations

import io
import json
import shutil
import signal
import subprocess

import duckdb
import numpy as np
import pandas as pd
import pytest
from conftest import REPO, run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd
from test_judging_kills import _wait_for

from engine.cli._judge_active import STRATEGY_NAMES
from engine.judging.active.fit import Revealed, fit_revealed, separated
from engine.judging.active.loop import make_plan, simulate
from engine.judging.active.pool import pool_from_verdicts
from engine.judging.active.replay import load_replay_source
from engine.judging.active.select import STRATEGIES
from engine.store.connection import Store

KEY = ["prompt_id", "model_a", "model_b", "winner", "order", "judge"]


@pytest.fixture
def db(shipped_db, tmp_path):
    """A copy of the shipped store (vicuna80 with six judges; the arena pair counts)."""
    path = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, path)
    return path


def _replay(db, out, *extra):
    return run_engine(["--db", db, "judge", "--dataset", out, "--backend", "replay", "--from-dataset",
                       "vicuna80", "--no-progress", "--format", "csv", *extra])


def _row(res) -> pd.Series:
    assert res.returncode == 0, res.stderr
    return pd.read_csv(io.StringIO(res.stdout)).iloc[0]


def _read(db, sql, params=()):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql, list(params)).df()


def _asked_ids(db) -> list[int]:
    calls = _read(db, "SELECT messages FROM judge_calls WHERE backend = 'replay'")
    return sorted(json.loads(json.loads(m)[0]["content"])["verdict_id"] for m in calls["messages"])


def _multiset(frame: pd.DataFrame) -> list[tuple]:
    return sorted(map(tuple, frame[KEY].astype(str).to_numpy().tolist()))


def _src_rows(db, ids) -> pd.DataFrame:
    src = _read(db, "SELECT verdict_id, * FROM verdicts WHERE dataset = 'vicuna80'")
    return src[src["verdict_id"].isin(ids)]


def test_the_parser_offers_exactly_the_engines_strategies():
    assert STRATEGY_NAMES == STRATEGIES


def test_replay_stores_srcs_verdict_for_each_call_and_a_rerun_pays_nothing(db, tmp_path):
    args = ["--from-judge", "gpt-4", "--select", "random", "--budget", "60", "--batch", "20", "--seed", "1"]
    row = _row(_replay(db, "out", *args))
    got = (row.status, row.stop_reason, row.calls, row.batches, row["items"])
    assert got == ("done", "budget", 60, 3, 60)
    assert (row.calls_made, row.calls_cached, row.judges) == (60, 0, "gpt-4")
    ids = _asked_ids(db)
    assert len(set(ids)) == 60
    out = _read(db, "SELECT * FROM verdicts WHERE dataset = 'out'")
    assert _multiset(out) == _multiset(_src_rows(db, ids))
    assert set(out["judge"]) == {"gpt-4"}
    with Store(db) as store:
        source = load_replay_source(store, "vicuna80", judge="gpt-4")
    sim = simulate(source.pool, source.winner, make_plan("random", 60, 20, 1))
    assert sorted(source.verdict_id[np.concatenate(sim.batches)].tolist()) == ids
    again = _row(_replay(db, "out", *args))
    assert (again.calls_made, again.calls_cached, again.calls) == (0, 60, 60)
    assert _multiset(_read(db, "SELECT * FROM verdicts WHERE dataset = 'out'")) == _multiset(out)
    board = run_engine(["--db", db, "leaderboard", "--dataset", "out", "--format", "csv"])
    assert board.returncode == 0, board.stderr
    ranked = pd.read_csv(io.StringIO(board.stdout))
    assert set(ranked["model"]) == set(out["model_a"]) | set(out["model_b"])
    # the same seed, budget and store reveal the same calls; another seed others
    other = tmp_path / "other.duckdb"
    shutil.copyfile(db.parent / "lens.duckdb", other)
    with duckdb.connect(str(other)) as con:
        con.execute("DELETE FROM judge_calls")
    _row(_replay(other, "out", *args))
    assert _asked_ids(other) == ids
    seed2 = tmp_path / "seed2.duckdb"
    shutil.copyfile(other, seed2)
    with duckdb.connect(str(seed2)) as con:
        con.execute("DELETE FROM judge_calls")
    _row(_replay(seed2, "out2", *args[:-1], "2"))
    assert _asked_ids(seed2) != ids


def test_replayed_votes_sharing_a_pair_instance_are_all_kept(db):
    """vicuna80's human votes: three annotators' rows share one (prompt, pair) instance, revealed in
    different batches; every revealed row stays (a write replaces the instance's rows by all of them).
    Fails when each batch writes only its own rows of an instance (earlier votes deleted)."""
    row = _row(_replay(db, "hum", "--from-judge", "human", "--select", "random", "--budget", "300",
                       "--batch", "30", "--seed", "3"))
    ids = _asked_ids(db)
    out = _read(db, "SELECT * FROM verdicts WHERE dataset = 'hum'")
    src = _src_rows(db, ids)
    shared = src.groupby(["prompt_id", "model_a", "model_b"]).size()
    assert (shared > 1).any()  # some instance got two or three votes: the case under test happens
    assert row.verdicts == len(out) == 300
    assert _multiset(out) == _multiset(src)


def test_stop_when_separated_stops_early_once_the_stored_verdicts_separate_the_top(db):
    res = _replay(db, "sep", "--from-judge", "gpt-4", "--select", "uncertainty", "--budget", "5120",
                  "--batch", "256", "--seed", "0", "--stop-when", "separated:1")
    row = _row(res)
    assert row.stop_reason == "separated" and row.calls < 5120 and row.calls % 256 == 0
    assert "because every adjacent pair of the top 1 has separated intervals" in res.stderr
    # the stored verdicts, fitted afresh as their own pool, separate the leader
    out = _read(db, "SELECT * FROM verdicts WHERE dataset = 'sep'")
    pool = pool_from_verdicts(out)
    rev = Revealed.empty(pool)
    rev.record_winners(np.arange(len(pool)), out["winner"].to_numpy())
    assert separated(fit_revealed(pool, rev), 1)
    # the in-process twin (what the bench and the app simulate) asks exactly the CLI's calls
    with Store(db) as store:
        source = load_replay_source(store, "vicuna80", judge="gpt-4")
    sim = simulate(source.pool, source.winner, make_plan("uncertainty", 5120, 256, 0, "separated:1"))
    assert (sim.reason, len(sim.batches)) == ("separated", row.batches)
    assert sorted(source.verdict_id[np.concatenate(sim.batches)].tolist()) == _asked_ids(db)


BAD = [
    (["--select", "random", "--budget", "0"], "--budget must be at least 1 call, not 0."),
    (["--select", "random", "--budget", "10", "--batch", "11"], "--batch 11 is larger than --budget 10"),
    (["--select", "best", "--budget", "10"], "invalid choice: 'best'"),
    (["--budget", "10"], "--budget, --batch and --stop-when need --select STRATEGY."),
    (["--select", "random"], "--select needs --budget N"),
    (["--select", "random", "--budget", "5", "--stop-when", "separated:0"], "--stop-when takes separated"),
]


@pytest.mark.parametrize(("extra", "sentence"), BAD)
def test_bad_plans_are_one_sentence_and_store_nothing(db, extra, sentence):
    before = _read(db, "SELECT (SELECT count(*) FROM judge_runs) AS runs, (SELECT count(*) FROM judge_calls)"
                       " AS calls, (SELECT count(*) FROM datasets) AS datasets")
    res = _replay(db, "bad", *extra)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and sentence in lines[0], res.stderr
    after = _read(db, "SELECT (SELECT count(*) FROM judge_runs) AS runs, (SELECT count(*) FROM judge_calls)"
                      " AS calls, (SELECT count(*) FROM datasets) AS datasets")
    pd.testing.assert_frame_equal(before, after)


@pytest.mark.parametrize(("src", "extra", "sentence"), [
    ("chatbot_arena_2024_08_14", [], "holds pair counts (outcomes summed per model pair), not verdicts"),
    ("nosuch", [], "There is no dataset named 'nosuch' to replay"),
    ("vicuna80", ["--from-judge", "gpt-5"], "has no verdicts of judge 'gpt-5' to replay"),
    ("bad", [], "--from-dataset must name another dataset than --dataset"),
])
def test_a_source_without_verdicts_is_one_sentence_and_stores_nothing(db, src, extra, sentence):
    res = run_engine(["--db", db, "judge", "--dataset", "bad", "--backend", "replay", "--from-dataset", src,
                      "--select", "random", "--budget", "5", "--no-progress", *extra])
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and sentence in lines[0], res.stderr
    assert _read(db, "SELECT count(*) AS n FROM judge_runs")["n"][0] == 0
    assert "bad" not in set(_read(db, "SELECT name FROM datasets")["name"])


@pytest.mark.parametrize(("protocol", "strategy", "rows_per_item"), [
    ("single", "cycles", 1), ("swapped", "uncertainty", 2), ("hybrid", "round-robin", 1), ("soft", "swim", 1),
])
def test_a_model_judge_under_every_protocol_spends_the_budget(tmp_path, protocol, strategy, rows_per_item):
    db = tmp_path / "m.duckdb"
    with FakeOpenAI() as srv:
        cmd = judge_cmd(db, "m", srv.base_url, "--protocol", protocol, "--select", strategy, "--budget", "8",
                        "--batch", "4", "--seed", "5")
        res = run_engine(cmd[3:])
        row = _row(res)
        sent = len(srv.bodies)
    per_item = 1 if protocol == "single" else 2
    out = _read(db, "SELECT * FROM verdicts WHERE dataset = 'm'")
    assert row["items"] * per_item <= row.calls <= 8 + 2 * row["items"]
    assert row.verdicts == len(out) == row["items"] * rows_per_item
    assert row.calls_made + row.calls_cached == row.calls and sent == row.calls_made
    if protocol == "single":  # one order per item: both orders of one pair are separate items
        assert set(out["order"]) == {"AB"}
    if protocol == "swapped":
        assert sorted(set(out["order"])) == ["AB", "BA"]


def test_a_killed_active_run_resumes_without_paying_twice(tmp_path):
    """SIGKILL while requests wait in the fake server (test_judging_kills' deterministic moment), then the
    same command again: every call answered before the kill is read back, the run walks the same path
    and ends with the budget spent and the verdicts of an unkilled run. The kill comes once all four
    requests of the concurrency wait at the gate, so they are the run's only calls in flight (counting at
    the first arrival missed up to three more on their way: 4 paid twice against 1 counted)."""
    db, clean = tmp_path / "k.duckdb", tmp_path / "clean.duckdb"
    extra = ["--protocol", "single", "--select", "uncertainty", "--budget", "24", "--batch", "8", "--seed",
             "2", "--concurrency", "4"]
    # the gate closes at the 11th request, inside the second batch (calls 9-16): requests 11-14 fill the
    # concurrency of 4 there and nothing else is in flight, whatever the client's speed
    with FakeOpenAI(delay_s=0.02, gate_after=10) as srv:
        cmd = judge_cmd(db, "k", srv.base_url, *extra, models="gpt-4,llama-13b,alpaca-13b,claude-v1")
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert _wait_for(lambda: srv.at_gate >= 4 or proc.poll() is not None)
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            in_flight = srv.at_gate
            srv.gate.set()
        assert _wait_for(lambda: srv.inflight == 0)
        paid_before = len(srv.bodies)
        row = _row(run_engine(cmd[3:]))
        sent = [json.dumps(b["messages"], sort_keys=True) for b in srv.bodies]
    assert (row.status, row.calls) == ("done", 24)
    assert len(sent) - len(set(sent)) <= in_flight  # nothing answered before the kill was paid again
    assert row.calls_made == len(sent) - paid_before and row.calls_cached >= paid_before - in_flight
    with FakeOpenAI(delay_s=0.0) as srv2:
        _row(run_engine(judge_cmd(clean, "k", srv2.base_url, *extra,
                                  models="gpt-4,llama-13b,alpaca-13b,claude-v1")[3:]))
    assert _multiset(_read(db, "SELECT * FROM verdicts WHERE dataset = 'k'")) == _multiset(
        _read(clean, "SELECT * FROM verdicts WHERE dataset = 'k'"))


def test_replayed_invalid_verdicts_are_said_once(tmp_path, migrated_empty_db):
    """A replay whose source holds invalid verdicts stores them as invalid, and the run says how many of its
    verdicts are (the count read back from the stored rows), in one warning line; exit 0 while some are
    valid."""
    db = tmp_path / "r.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    models = ["a", "b", "c", "d"]
    lines = ["prompt_id,model_a,model_b,winner,judge"]
    for p in range(6):
        for i, ma in enumerate(models):
            for mb in models[i + 1:]:
                lines.append(f"q{p},{ma},{mb},{('A', 'B', 'invalid')[(p + i) % 3]},j")
    (tmp_path / "src.csv").write_text("\n".join(lines) + "\n")
    run_engine(["--db", db, "import", str(tmp_path / "src.csv"), "--dataset", "src"], check=True)
    res = run_engine(["--db", db, "judge", "--dataset", "out", "--backend", "replay", "--from-dataset", "src",
                      "--no-progress", "--format", "csv", "--select", "random", "--budget", "24", "--batch",
                      "8", "--seed", "3"])
    row = _row(res)
    out = _read(db, "SELECT winner FROM verdicts WHERE dataset = 'out'")
    bad = int((out["winner"] == "invalid").sum())
    assert 0 < bad < len(out) and (int(row.invalid), int(row.verdicts)) == (bad, len(out))
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [f"warning: {bad} of {len(out)} verdicts of this run are invalid: the source's "
                        "verdicts they replay are; they are stored as invalid and left out of every ranking."]
