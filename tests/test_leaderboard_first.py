"""The Leaderboard's first-open board (engine/views/leaderboard_first.py: the votes and only the graphs that
can hold a triad) equals the old board (``app_leaderboard`` on the SliderContext of every graph) to the last
digit: scores, intervals, ranks, counts, cycle columns, reference columns and params, on vicuna80 (several
judges and categories, pooled and one judge) and on a battle log of one-pair prompts with a few prompts of
three or more models, invalid verdicts, both presentation orders and a model seen only in pairs."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from engine.graphs.buckets import build_buckets
from engine.ingest.importer import import_files
from engine.rankers.votes import votes
from engine.ranking.vote_query import store_vote_rows
from engine.views.appstate import SliderContext, app_leaderboard
from engine.views.leaderboard_first import cycle_context, first_board


def both(store, dataset, judge=None, category=None, ranker="bt", bootstrap=12, reference=None):
    v = votes(store_vote_rows(store, dataset, judge=judge, category=category))
    extra = {"dataset": dataset, "judge": judge, "category": category}
    every = SliderContext.of(build_buckets(store.verdicts(dataset, judge=judge, category=category)))
    old = app_leaderboard(every, ranker=ranker, keep_k=None, mu=1.0, bootstrap=bootstrap, seed=0, votes=v,
                          reference=reference, reference_note="ref", extra_params=extra)
    new = first_board(v, cycle_context(store, dataset, judge, category), ranker=ranker, bootstrap=bootstrap,
                      seed=0, reference=reference, reference_note="ref", extra_params=extra)
    return old, new


def assert_same(old, new) -> None:
    pd.testing.assert_frame_equal(new.table, old.table, check_exact=True)
    assert new.params == old.params
    assert new.distances == old.distances


@pytest.mark.parametrize("judge, category, ranker", [(None, None, "bt"), ("gpt-4", None, "bt"),
                                                     (None, "coding", "davidson"), (None, None, "elo")])
def test_vicuna80(shipped_store, judge, category, ranker):
    ref = pd.Series({"gpt4": 1250.0, "claude": 1200.0, "vicuna-13b": 1100.0, "bard": 900.0})
    old, new = both(shipped_store, "vicuna80", judge, category, ranker, reference=ref)
    assert old.table["bad_triads"].sum() > 0  # graphs with triads: the cycle columns are tested
    assert_same(old, new)


def test_battle_log_with_a_few_larger_prompts(empty_store, tmp_path):
    rng = random.Random(3)
    models = [f"m{i}" for i in range(12)]
    lines = ["prompt_id,model_a,model_b,winner,judge"]
    for b in range(900):  # one pair per prompt, both orders, both judges, some invalid
        a, c = rng.sample(models, 2)
        lines.append(f"b{b},{a},{c},{rng.choice(['A', 'B', 'tie', 'invalid'])},{rng.choice(['h1', 'h2'])}")
    for p in range(15):  # prompts of 3-5 models: the only graphs with triads
        group = rng.sample(models[:8], rng.choice([3, 4, 5]))
        for i, a in enumerate(group):
            for c in group[i + 1:]:
                lines.append(f"t{p},{a},{c},{rng.choice(['A', 'B', 'tie'])},h1")
    lines.append("solo,m10,m11,A,h2")  # m11 elsewhere only in one-pair prompts
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    import_files(empty_store, [tmp_path / "log.csv"], "log")
    for judge in (None, "h1", "h2"):
        old, new = both(empty_store, "log", judge)
        assert_same(old, new)
    old, new = both(empty_store, "log")
    assert old.table["bad_triads"].sum() > 0 and old.table["cycle_share"].isna().any()
