"""Rankers whose cost grows with models cubed or worse refuse above a stated size in one sentence,
before allocating (issue 23, bug 13 for the graph rankers; what-must-be-true point 5).

Each refusal is checked with tracemalloc around the call: the peak stays far below what the refused
work would take (on fa0c159 a 1,000-model battle log allocated its (T, n, n) stack first: 100 GB for
100k battles; the CLI then died or the kernel killed it). A selection just under each limit is still
ranked, so a limit cannot pass by refusing everything.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import DENSE_CELL_LIMIT, build_stack
from engine.ingest.importer import import_files
from engine.rankers import rank
from engine.rankers.pged import PGED_ENSEMBLE_CELL_LIMIT, PGED_MAX_MODELS
from engine.ranking.leaderboard import leaderboard
from tests.conftest import run_engine

GRAPH_RANKERS = ("kemeny", "pged", "elspr", "borda", "pairwise-majority")

@pytest.fixture
def db_path(shipped_db_copy):
    """This file's CLI commands read their own dataset only: they start from the shipped store."""
    return shipped_db_copy


def battle_log(n_models: int, n_battles: int, seed: int = 0) -> pd.DataFrame:
    """Single battles (each its own prompt, so its own graph) over ``n_models`` models, every model
    in at least one battle."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([np.arange(n_models), rng.integers(0, n_models, max(0, n_battles - n_models))])
    b = (a + rng.integers(1, n_models, a.size)) % n_models
    return pd.DataFrame({
        "prompt_id": np.arange(a.size).astype(str),
        "model_a": [f"m{i:05d}" for i in a],
        "model_b": [f"m{i:05d}" for i in b],
        "winner": rng.choice(["A", "B", "tie"], a.size),
    })


def round_robin(n_models: int, n_prompts: int, seed: int = 0) -> pd.DataFrame:
    """Every pair of ``n_models`` judged once per prompt."""
    rng = np.random.default_rng(seed)
    ia, ib = np.triu_indices(n_models, 1)
    frames = [pd.DataFrame({"prompt_id": str(q), "model_a": [f"m{i:04d}" for i in ia],
                            "model_b": [f"m{i:04d}" for i in ib],
                            "winner": rng.choice(["A", "B"], ia.size)}) for q in range(n_prompts)]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def battles_store(tmp_path_factory):
    """A store holding 2,000 battles over 1,000 models as dataset "battles" (imported once)."""
    from engine.store.connection import Store

    folder = tmp_path_factory.mktemp("battles")
    battle_log(1000, 2000).to_csv(folder / "battles.csv", index=False)
    store = Store(folder / "lens.duckdb")
    import_files(store, [folder / "battles.csv"], "battles")
    yield store
    store.close()


def peak_bytes(fn) -> tuple[BaseException | None, int]:
    """(the exception ``fn`` raised or None, tracemalloc's peak of Python and NumPy allocations)."""
    tracemalloc.start()
    try:
        fn()
        err = None
    except LensError as exc:
        err = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return err, peak


@pytest.mark.parametrize("ranker", GRAPH_RANKERS)
def test_a_battle_log_too_big_for_a_dense_stack_is_refused_before_allocating(battles_store, ranker):
    # 2,000 battles over 1,000 models: 2e9 graph x model x model cells (20 x the limit; 4 GB as two
    # bool arrays, more as the rankers' float work)
    err, peak = peak_bytes(lambda: leaderboard(battles_store, "battles", ranker=ranker))
    assert err is not None and f"{2000 * 1000 * 1000:,} graph x model x model cells" in str(err)
    assert f"The {ranker} ranker reads whole graphs" in str(err) and str(err).count(". ") == 0
    assert peak < 100 * 2**20  # the refused stack alone would be 2 GB


def test_the_dense_limit_is_the_stated_one_on_both_sides():
    n = 100
    fits = DENSE_CELL_LIMIT // (n * n)  # this many graphs over 100 models fit exactly
    below = build_buckets(battle_log(n, 400).assign(dataset="d", judge="j", variant=0, turn=1,
                                                      category=None, variant_kind="original", prob_a=np.nan))
    assert below.T * n * n <= DENSE_CELL_LIMIT and below.dense().T == 400
    over = build_buckets(battle_log(n, fits + 1).assign(dataset="d", judge="j", variant=0, turn=1,
                                                          category=None, variant_kind="original",
                                                          prob_a=np.nan))
    err, peak = peak_bytes(over.dense)
    assert err is not None and f"more than {DENSE_CELL_LIMIT:,}" in str(err) and peak < 200 * 2**20


def test_pged_refuses_more_models_than_it_states_and_ranks_the_limit():
    st = build_stack(round_robin(PGED_MAX_MODELS + 1, 1).assign(
        dataset="d", judge="j", variant=0, turn=1, category=None, variant_kind="original", prob_a=np.nan))
    err, peak = peak_bytes(lambda: rank(st, "pged"))
    assert err is not None and f"PGED ranks at most {PGED_MAX_MODELS} models" in str(err)
    assert f"this selection has {PGED_MAX_MODELS + 1}" in str(err) and peak < 20 * 2**20
    err, _ = peak_bytes(lambda: rank(st, "pged", mode="global"))
    assert err is not None  # the model limit holds in both modes


def test_per_prompt_pged_refuses_more_ensemble_cells_than_it_states():
    n = 40
    n_q = PGED_ENSEMBLE_CELL_LIMIT // (n * n) + 1
    rng = np.random.default_rng(3)
    a = rng.integers(0, n, n_q)  # one battle per prompt: n_q questions over 40 models
    b = (a + rng.integers(1, n, n_q)) % n
    frame = pd.DataFrame({"prompt_id": np.arange(n_q).astype(str), "model_a": [f"m{i:02d}" for i in a],
                          "model_b": [f"m{i:02d}" for i in b], "winner": "A"})
    frame.loc[: n - 1, "model_a"] = [f"m{i:02d}" for i in range(n)]  # every model present
    frame.loc[: n - 1, "model_b"] = [f"m{(i + 1) % n:02d}" for i in range(n)]
    st = build_stack(frame.assign(dataset="d", judge="j", variant=0, turn=1, category=None,
                                  variant_kind="original", prob_a=np.nan))
    err, peak = peak_bytes(lambda: rank(st, "pged"))
    assert err is not None and f"{n_q:,} question ensembles over {n} models" in str(err)
    assert peak < 50 * 2**20  # the ensembles alone would be n_q * n^2 * 8 bytes = 0.4 GB
    assert rank(st, "pged", mode="global").scores.notna().all()  # the global mode is one ensemble


def test_the_cli_refuses_in_one_sentence_with_exit_2(db_path, tmp_path):
    path = tmp_path / "battles.csv"
    battle_log(1000, 2000).to_csv(path, index=False)
    run_engine(["--db", db_path, "import", path, "--dataset", "battles"], check=True)
    out = run_engine(["--db", db_path, "leaderboard", "--dataset", "battles", "--ranker", "kemeny"])
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("error: The kemeny ranker reads whole graphs")
    assert "Traceback" not in out.stderr


def test_the_apps_ranked_stack_asks_the_same_limits_before_building_it(battles_store):
    """The app's Leaderboard ranks through ``ranked_stack``: the same sentences, before the dense stack."""
    from engine.graphs.buckets import build_buckets
    from engine.views.appstate import SliderContext, ranked_stack

    ctx = SliderContext.of(build_buckets(battles_store.verdicts("battles")))
    err, peak = peak_bytes(lambda: ranked_stack(ctx, np.arange(ctx.stack.T), "borda"))
    assert err is not None and "The borda ranker reads whole graphs" in str(err) and peak < 100 * 2**20
    wide = round_robin(PGED_MAX_MODELS + 1, 1).assign(dataset="d", judge="j", variant=0, turn=1,
                                                       category=None, variant_kind="original", prob_a=np.nan)
    ctx = SliderContext.of(build_buckets(wide))
    with pytest.raises(LensError, match=f"PGED ranks at most {PGED_MAX_MODELS} models"):
        ranked_stack(ctx, np.arange(ctx.stack.T), "pged")
    assert ranked_stack(ctx, np.arange(ctx.stack.T), "borda").n == PGED_MAX_MODELS + 1  # others go on
