"""The active-judging replay harness and the "which calls next" view (engine/views/active_curves.py,
engine/views/active_view.py) against second paths: pandas counts of the revealed verdict rows, a brute-force
bad-triad count over every triple of every prompt, and hand-made curves."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.judging.active.fit import counts_matrix
from engine.store.connection import Store
from engine.views.active_curves import (
    bad_triads,
    calls_to_match,
    mean_curve,
    on_grid,
    replay_curve,
    replay_steps,
    start_one_order,
    store_source,
)
from engine.views.active_view import dataset_source, next_batch, panel_curves


@pytest.fixture(scope="module")
def claude(shipped_db):
    """vicuna80 judged by claude: 1,600 verdicts, every edge in both orders, 5 models."""
    with Store(shipped_db, read_only=True) as store:
        return store_source(store, "vicuna80", "claude")


@pytest.fixture(scope="module")
def stored(shipped_db):
    """The stored verdict rows of claude, by verdict id (the second path's input)."""
    with Store(shipped_db, read_only=True) as store:
        return store.verdicts("vicuna80", judge="claude").set_index("verdict_id")


def _asked_rows(stored: pd.DataFrame, source, revealed) -> pd.DataFrame:
    """The stored rows of the items ``revealed`` asked, looked up by verdict id."""
    return stored.loc[source.verdict_id[np.flatnonzero(revealed.asked)]].reset_index()


def _pandas_half_wins(rows: pd.DataFrame, models: tuple[str, ...]) -> np.ndarray:
    """W[i, j] = wins of i over j + ties / 2 among ``rows``, by pandas."""
    idx = {m: k for k, m in enumerate(models)}
    w = np.zeros((len(models), len(models)))
    for r in rows.itertuples():
        a, b = idx[r.model_a], idx[r.model_b]
        if r.winner == "A":
            w[a, b] += 1
        elif r.winner == "B":
            w[b, a] += 1
        elif r.winner == "tie":
            w[a, b] += 0.5
            w[b, a] += 0.5
    return w


def _brute_bad_triads(rows: pd.DataFrame) -> int:
    """Bad 3-cycles summed over prompts: per prompt and unordered pair the plurality of its verdicts among
    lo wins, hi wins and tie (no single most-voted outcome: tie; a tie is an edge both ways), then every
    triple's directed 3-cycles minus those made of tie edges only."""
    total = 0
    for _, g in rows[rows["winner"].isin(["A", "B", "tie"])].groupby("prompt_id"):
        votes: dict[tuple[str, str], list[int]] = {}
        for r in g.itertuples():
            lo, hi = sorted((r.model_a, r.model_b))
            winner = r.model_a if r.winner == "A" else r.model_b if r.winner == "B" else None
            tally = votes.setdefault((lo, hi), [0, 0, 0])
            tally[2 if winner is None else (0 if winner == lo else 1)] += 1
        edges: set[tuple[str, str]] = set()
        for (lo, hi), (n_lo, n_hi, n_tie) in votes.items():
            lo_wins = n_lo > max(n_hi, n_tie)
            hi_wins = n_hi > max(n_lo, n_tie)
            if not hi_wins:
                edges.add((lo, hi))
            if not lo_wins:
                edges.add((hi, lo))
        models = sorted({m for pair in votes for m in pair})
        for x, y, z in itertools.combinations(models, 3):
            for cyc in ((x, y, z), (x, z, y)):
                steps = [(cyc[0], cyc[1]), (cyc[1], cyc[2]), (cyc[2], cyc[0])]
                if all(s in edges for s in steps):
                    all_ties = all((b, a) in edges for a, b in steps)
                    total += 0 if all_ties else 1
    return total


def test_revealed_counts_equal_a_pandas_count_of_the_asked_rows(claude, stored):
    """After each batch of each strategy, the fit's input is exactly the asked verdict rows."""
    for strategy in ("random", "uncertainty", "cycles"):
        for state in replay_steps(claude, strategy, 3, 300, 100):
            rows = _asked_rows(stored, claude, state.revealed)
            assert len(rows) == state.spent
            want = _pandas_half_wins(rows, claude.pool.models)
            assert np.allclose(counts_matrix(claude.pool, state.revealed), want)


def test_a_full_replay_recovers_the_full_data_ranking(claude):
    curve = replay_curve(claude, "random", 0, len(claude.pool), 400)
    assert curve["calls"].tolist() == [0, 400, 800, 1200, 1600]
    assert curve.iloc[0]["kendall"] == 0.5  # nothing revealed: every model tied
    last = curve.iloc[-1]
    assert (last["kendall"], last["spearman"], last["top1"], last["top5"]) == (0.0, 1.0, 1.0, 1.0)


def test_bad_triads_equal_a_brute_force_count(claude, stored):
    for seed in (0, 1):
        start = start_one_order(claude, seed)
        first = _asked_rows(stored, claude, start)
        assert bad_triads(claude, start) == _brute_bad_triads(first)
        *_, state = replay_steps(claude, "cycles", seed, 200, 50, start=start)
        rows = _asked_rows(stored, claude, state.revealed)
        assert bad_triads(claude, state.revealed) == _brute_bad_triads(rows)


def test_start_one_order_reveals_one_verdict_of_every_edge(claude, stored):
    start = start_one_order(claude, 5)
    rows = stored.loc[claude.verdict_id].assign(asked=start.asked)
    rows["lo"] = rows[["model_a", "model_b"]].min(axis=1)
    rows["hi"] = rows[["model_a", "model_b"]].max(axis=1)
    per_edge = rows.groupby(["prompt_id", "lo", "hi"])["asked"].sum()
    assert (per_edge == 1).all() and len(per_edge) == 800
    assert not np.array_equal(start.asked, start_one_order(claude, 6).asked)


def test_on_grid_holds_each_runs_last_value_and_calls_to_match_reads_the_mean():
    curves = pd.DataFrame({
        "strategy": ["random"] * 3 + ["swim"] * 3,
        "seed": [0] * 6,
        "calls": [0, 10, 20, 0, 7, 21],
        "kendall": [0.5, 0.3, 0.2, 0.5, 0.25, 0.1],
    })
    grid = on_grid(curves, np.array([0, 10, 20]))
    swim = grid[grid["strategy"] == "swim"]
    assert swim["kendall"].tolist() == [0.5, 0.25, 0.25]  # 21 calls is past the grid point 20
    assert calls_to_match(grid, "swim", "random", "kendall", 20) == pytest.approx(float("nan"), nan_ok=True)
    assert calls_to_match(grid, "swim", "random", "kendall", 10) == 10
    assert mean_curve(grid, "kendall").loc[10].tolist() == [0.3, 0.25]


def test_next_batch_lists_unasked_items_with_their_facts(claude, stored):
    nb = next_batch(claude, "cycles", 800, 40, seed=2)
    *_, state = replay_steps(claude, "cycles", 2, 800, 40)
    rows = _asked_rows(stored, claude, state.revealed)
    assert nb.spent == 800 and len(nb.table) == 40
    key = ["prompt_id", "model_a", "model_b"]
    asked = set(map(tuple, rows[key].astype(str).to_numpy()))
    assert not asked & set(map(tuple, nb.table[key].astype(str).to_numpy()))
    ab = rows[["model_a", "model_b"]]
    pair = rows.assign(lo=ab.min(axis=1), hi=ab.max(axis=1))
    counts = pair.groupby(["lo", "hi"]).size()
    for r in nb.table.itertuples():
        lo, hi = sorted((r.model_a, r.model_b))
        assert r.pair_calls_so_far == counts.get((lo, hi), 0)
        assert r.information == pytest.approx(r.p_a_wins * (1 - r.p_a_wins))
        # the bad triads through this edge: the revealed graph's bad triads minus those left when it is cut
        here = pair[pair["prompt_id"].astype(str) == str(r.prompt_id)]
        edge = ((here["lo"] == lo) & (here["hi"] == hi)).to_numpy()
        assert r.edge_judged == bool(edge.any())
        assert r.edge_bad_triads == _brute_bad_triads(here) - _brute_bad_triads(here[~edge])


def test_the_panel_refuses_what_it_cannot_replay(shipped_db, claude):
    with Store(shipped_db, read_only=True) as store:
        with pytest.raises(LensError, match="pair counts"):
            dataset_source(store, "chatbot_arena_2024_08_14", None)
        with pytest.raises(LensError, match="no verdicts of judge"):
            dataset_source(store, "vicuna80", "no-such-judge")
    for budget, batch in ((0, 1), (10, 11), (len(claude.pool) + 1, 10)):
        with pytest.raises(LensError):
            panel_curves(claude, budget, batch, strategies=("random",), seeds=(0,))
    with pytest.raises(LensError):
        next_batch(claude, "no-such", 0, 10)


@pytest.mark.parametrize("strategy", ["uncertainty", "cycles", "swim"])
def test_a_replay_run_reveals_what_the_harness_reveals_for_its_seed(
    shipped_db, tmp_path, claude, stored, strategy
):
    """`judge --backend replay` (the command, in process) and the harness take the same calls for one seed:
    the stored verdicts of the run are the stored rows of the items the harness asked."""
    import shutil

    from conftest import run_engine

    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    done = run_engine(["--db", db, "judge", "--dataset", "out", "--backend", "replay",
                       "--from-dataset", "vicuna80", "--from-judge", "claude",
                       "--select", strategy, "--budget", 300, "--batch", 60, "--seed", 4])
    assert done.returncode == 0, done.stderr
    with Store(db, read_only=True) as store:
        got = store.verdicts("out")
    *_, state = replay_steps(claude, strategy, 4, 300, 60)
    want = _asked_rows(stored, claude, state.revealed)
    key = ["judge", "prompt_id", "model_a", "model_b", "winner"]
    assert len(got) == len(want) == 300
    rows = [sorted(map(tuple, frame[key].astype(str).to_numpy())) for frame in (got, want)]
    assert rows[0] == rows[1]


def multi_instance_store(folder: Path, migrated_empty_db: Path) -> Path:
    """A store of dataset 't': 6 prompts, each in two variants and two turns, every pair of 4 models judged
    once on each of those four instances by judge j (seeded winners), imported as the CLI does."""
    import shutil

    from conftest import run_engine

    db = folder / "t.duckdb"
    shutil.copyfile(migrated_empty_db, db)
    rng = np.random.default_rng(4)
    rows = ["prompt_id,variant,turn,model_a,model_b,winner,judge"]
    for p, v, t in itertools.product(range(6), (0, 1), (1, 2)):
        for a, b in itertools.combinations(["m0", "m1", "m2", "m3"], 2):
            rows.append(f"q{p},{v},{t},{a},{b},{rng.choice(['A', 'B', 'tie'])},j")
    (folder / "t.csv").write_text("\n".join(rows) + "\n")
    run_engine(["--db", str(db), "import", str(folder / "t.csv"), "--dataset", "t"], check=True)
    return db


def test_next_batch_names_the_turn_and_variant_each_call_judges(tmp_path, migrated_empty_db):
    """Every pair is asked on four instances of a prompt (two variants, two turns), so a row of the next
    batch is told apart only by its variant and turn. Each row's (prompt, variant, turn, pair) is one of
    the stored instances the replay has not asked yet, and no two rows name the same one."""
    db = multi_instance_store(tmp_path, migrated_empty_db)
    with Store(db, read_only=True) as store:
        source = dataset_source(store, "t", None)
        stored = store.verdicts("t").set_index("verdict_id")
    nb = next_batch(source, "uncertainty", 30, 20, seed=1)
    *_, state = replay_steps(source, "uncertainty", 1, 30, 20)
    key = ["prompt_id", "variant", "turn", "model_a", "model_b"]
    asked = set(map(tuple, _asked_rows(stored, source, state.revealed)[key].astype(str).to_numpy()))
    every = set(map(tuple, stored.reset_index()[key].astype(str).to_numpy()))
    shown = [tuple(map(str, r)) for r in nb.table[key].to_numpy()]
    assert len(shown) == len(set(shown)) == 20
    assert set(shown) <= every - asked
    assert set(nb.table["turn"]) <= {1, 2} and set(nb.table["variant"]) <= {0, 1}
