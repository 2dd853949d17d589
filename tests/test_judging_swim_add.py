"""SWIM's insertion step on a stored leaderboard: one new model, ceil(log2 M) opponents per prompt.

Five models are judged round robin first (the leaderboard); then the sixth is added. The test counts
the comparisons and calls against ceil(log2 5) = 3, checks that no stored verdict changed, and
replays the opponent choice: the first from the seeded generator, each next one the ranked model
closest in BT score fitted on the stored verdicts plus the newcomer's verdicts so far.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI

from engine.errors import LensError
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.pipeline import judge_run, load_inputs
from engine.judging.runner import Runner
from engine.judging.schedule import bt_scores

REPO = Path(__file__).resolve().parent.parent
RANKED = ["alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b"]
NEW = "vicuna-13b-v1.3"


def _runner(store, srv):
    return Runner(store, OpenAIBackend("fake", base_url=srv.base_url, api_key="k"), backoff_s=0.01)


def test_add_model_makes_log2_m_comparisons_and_leaves_stored_verdicts_alone(empty_store):
    st = empty_store
    load_inputs(
        st, "lb", "mt_bench", models=RANKED + [NEW], categories=["writing", "math"], limit_per_category=1
    )
    with FakeOpenAI() as srv:
        judge_run(st, "lb", _runner(st, srv), protocol="single", models=RANKED, judge="J")
        before = st.verdicts("lb", judge="J")
        assert len(before) == 10 * 2  # 10 pairs × 2 prompts
        sent = srv.total
        rep = judge_run(
            st, "lb", _runner(st, srv), protocol="single", schedule="swim", add_model=NEW, judge="J", seed=4
        )
        comps = rep.swim.comparisons
        c = math.ceil(math.log2(len(RANKED)))
        assert c == 3 and len(comps) == c and all(p == NEW for p, _ in comps)
        assert len({x for _, x in comps}) == c and {x for _, x in comps} <= set(RANKED)
        assert rep.pairs == c * 2 and srv.total - sent == c * 2 and rep.stats.made == c * 2
    after = st.verdicts("lb", judge="J")
    old = after[after["verdict_id"].isin(before["verdict_id"])]
    pd.testing.assert_frame_equal(old.reset_index(drop=True), before.reset_index(drop=True))
    new = after[~after["verdict_id"].isin(before["verdict_id"])]
    assert len(new) == c * 2
    assert {frozenset(p) for p in zip(new["model_a"], new["model_b"], strict=True)} == {
        frozenset((NEW, x)) for _, x in comps
    }
    # replay the choice of opponents
    ranked = sorted(RANKED)
    assert comps[0][1] == ranked[int(np.random.default_rng(4).integers(len(ranked)))]
    group = ranked + [NEW]
    base = before[["model_a", "model_b", "winner"]]
    for k in range(1, c):
        met = [x for _, x in comps[:k]]
        so_far = new[new["model_a"].isin(met) | new["model_b"].isin(met)][["model_a", "model_b", "winner"]]
        beta = dict(zip(group, bt_scores(group, pd.concat([base, so_far], ignore_index=True)), strict=True))
        best = min((m for m in ranked if m not in met), key=lambda m: (abs(beta[m] - beta[NEW]), m))
        assert comps[k][1] == best
    assert set(rep.swim.scores.index) == set(group)


def test_add_model_needs_a_stored_leaderboard(empty_store):
    st = empty_store
    load_inputs(st, "lb", "mt_bench", models=RANKED + [NEW], categories=["writing"], limit_per_category=1)
    with FakeOpenAI() as srv:
        with pytest.raises(LensError, match="no stored verdicts of judge 'nobody'"):
            judge_run(st, "lb", _runner(st, srv), schedule="swim", add_model=NEW, judge="nobody")
        with pytest.raises(LensError, match="needs the swim schedule"):
            judge_run(st, "lb", _runner(st, srv), add_model=NEW)
        assert srv.total == 0


def test_cli_add_model_uses_the_default_judge_name(tmp_path):
    db = tmp_path / "add.duckdb"
    base = [
        "--db",
        str(db),
        "judge",
        "--dataset",
        "lb",
        "--protocol",
        "single",
    ]
    with FakeOpenAI() as srv:
        be = ["--base-url", srv.base_url, "--model", "fake", "--no-progress", "--format", "csv"]
        first = run_engine(
            base
            + [
                "--inputs",
                "mt_bench",
                "--categories",
                "coding",
                "--limit",
                "1",
                "--models",
                ",".join(RANKED),
                *be,
            ],
        )
        assert first.returncode == 0, first.stderr
        add = run_engine(
            base
            + ["--inputs", "mt_bench", "--categories", "coding", "--limit", "1", "--add-model", NEW, *be],
        )
        assert add.returncode == 0, add.stderr
        row = pd.read_csv(pd.io.common.StringIO(add.stdout)).iloc[0]
        assert (row.judge, row.pairs, row.calls_made, row.status) == ("fake:single", 3, 3, "done")
        assert srv.total == 10 + 3
