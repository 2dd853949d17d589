"""The app at arena shape on graphs bucketed by model count (issue 12 item 6, app side).

Every page renders, without an exception, on an arena-shaped battle log (one model pair per prompt;
CI-sized: 20,000 battles over 60 models plus a few tournaments); and the bucketed computations the
pages now use (slider context, per-model cycle columns, the Cycles heatmaps, the inspector's graph)
equal the same numbers computed on the dense (T, n, n) GraphStack of a small mixed dataset.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from apphelpers import new_app

PAGES = [
    "app_pages/1_leaderboard.py",
    "app_pages/2_truncation.py",
    "app_pages/3_cycles.py",
    "app_pages/4_inspector.py",
    "app_pages/5_judges.py",
    "app_pages/6_data.py",
    "app_pages/7_theory_lab.py",
    "app_pages/8_head_to_head.py",
]


def arena_rows(battles: int, models: int, tournaments: int, seed: int) -> pd.DataFrame:
    """One random pair per prompt (BT winners, 10 % ties, two categories), then 5-model tournaments."""
    rng = np.random.default_rng(seed)
    names = np.array([f"m{i:02d}" for i in range(models)], dtype=object)
    skill = rng.normal(0, 1, models)
    a = rng.integers(0, models, battles)
    b = (a + rng.integers(1, models, battles)) % models
    p = 1 / (1 + np.exp(skill[b] - skill[a]))
    winner = np.where(rng.random(battles) < 0.1, "tie", np.where(rng.random(battles) < p, "A", "B"))
    rows = [
        pd.DataFrame(
            {
                "prompt_id": [f"b{i}" for i in range(battles)],
                "model_a": names[a],
                "model_b": names[b],
                "winner": winner,
                "category": np.where(rng.random(battles) < 0.5, "code", "chat"),
            }
        )
    ]
    for t in range(tournaments):
        pick = rng.choice(models, 5, replace=False)
        pairs = [(i, j) for i in range(5) for j in range(i + 1, 5) if rng.random() < 0.9]
        rows.append(pd.DataFrame({"prompt_id": f"t{t}", "model_a": names[pick[[i for i, _ in pairs]]],
                                  "model_b": names[pick[[j for _, j in pairs]]],
                                  "winner": rng.choice(["A", "B", "tie"], len(pairs), p=[0.45, 0.45, 0.1]),
                                  "category": "code" if t % 2 else "chat"}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def arena_db(shipped_db, tmp_path_factory):
    from engine.ingest import importer as ingest
    from engine.store.connection import Store

    db = tmp_path_factory.mktemp("arena") / "lens.duckdb"
    shutil.copyfile(shipped_db, db)
    store = Store(db)
    report = ingest.validate_file(arena_rows(20_000, 60, 40, 1).to_csv(index=False).encode(), "arena.csv",
                                  dataset="arena")
    assert ingest.store_report(store, report, "arena").status == "stored"
    store.close()
    return db


def test_every_page_renders_on_an_arena_shaped_log(arena_db, monkeypatch):
    at = new_app(arena_db, monkeypatch)
    at.selectbox(key="dataset").set_value("arena").run()
    for page in PAGES:
        at = at.switch_page(page).run()
        assert [e.message for e in at.exception] == [], page
        assert [e.value for e in at.error] == [], page
    at = at.switch_page("app_pages/3_cycles.py").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs"] == "40"  # the tournaments; the 20,000 one-pair graphs are left out and counted
    assert any(c.value.startswith("20,000 graphs") or c.value.startswith("20000 graphs") for c in at.caption)


@pytest.fixture(scope="module")
def mixed():
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import build_stack

    rows = arena_rows(300, 9, 25, 7)
    rows = pd.concat(
        [rows, rows[rows["prompt_id"].str.startswith("t")].assign(judge="j2")], ignore_index=True
    )
    rows["judge"] = rows["judge"].fillna("j1")
    from engine.ingest import importer as ingest

    frame = ingest.validate_file(rows.to_csv(index=False).encode(), "mixed.csv", dataset="mixed").good
    return build_stack(frame), build_buckets(frame)


def dense_model_cycles(table, stack):
    """The dense (T, n) oracle of ``model_cycle_columns``: each model's bad triads summed over the
    graphs and its cycle share (graphs where it lies on a bad triad / graphs where it was compared)."""
    from engine.graphs.cycles import vertex_cycle_counts

    vb = vertex_cycle_counts(stack.adj)["c3_bad"]  # (T, n)
    present = stack.observed.any(axis=2)
    present &= (present.sum(axis=1) >= 3)[:, None]  # graphs of 2 models hold no triad
    pos = {m: i for i, m in enumerate(stack.models)}
    idx = table["model"].map(pos).to_numpy()
    bad = vb.sum(axis=0)
    share = np.divide(((vb > 0) & present).sum(axis=0), present.sum(axis=0),
                      out=np.full(stack.n, np.nan), where=present.sum(axis=0) > 0)
    out = table.copy()
    out["bad_triads"] = bad[idx].astype(np.int64)
    out["cycle_share"] = share[idx]
    return out


def test_slider_context_on_buckets_equals_the_dense_stack(mixed):
    from engine.views.appstate import SliderContext, model_cycle_columns

    stack, buckets = mixed
    dense, sparse = SliderContext.of(stack), SliderContext.of(buckets)
    assert sparse.n_pool == dense.n_pool > 0 and sparse.n_no_cycle == dense.n_no_cycle > 0
    pd.testing.assert_frame_equal(sparse.counts, dense.counts)
    table = pd.DataFrame({"model": list(stack.models)})
    want = dense_model_cycles(table, stack)  # the dense (T, n) computation
    pd.testing.assert_frame_equal(model_cycle_columns(table, sparse, np.arange(stack.T)), want)
    for k in (1, 5, sparse.n_pool):
        idx, thr = sparse.kept(k, 1.0)
        idx_d, thr_d = dense.kept(k, 1.0)
        assert np.array_equal(idx, idx_d) and thr == thr_d
        kept = dense_model_cycles(table, stack.subset(idx))
        pd.testing.assert_frame_equal(model_cycle_columns(table, sparse, idx), kept)


def test_cycle_maps_on_buckets_equal_the_dense_stack(mixed):
    from engine.graphs.cycles import pair_cycle_counts, vertex_cycle_counts
    from engine.views.viz import category_participation, cycle_overview

    stack, buckets = mixed
    ov = cycle_overview(buckets)
    can = stack.observed.any(axis=2).sum(axis=1) >= 3
    sub = stack.subset(np.flatnonzero(can))
    assert ov.n_left_out == int((~can).sum()) > 0 and ov.n_graphs == sub.T
    per_pair = pair_cycle_counts(sub.adj)["c3_bad"].sum(axis=0)
    assert per_pair.sum() > 0
    assert np.array_equal(ov.per_pair.to_numpy(), per_pair)
    rates = category_participation(sub, vertex_cycle_counts(sub.adj)["c3_bad"])
    pd.testing.assert_frame_equal(ov.category_rates, rates, check_dtype=False)
    assert ov.total_bad_triads == int(per_pair.sum() // 6)  # three pairs, each in both directions


def test_inspector_graph_on_buckets_equals_the_dense_stack(mixed):
    from engine.views.inspector import graph_choices, graph_view, variant_names

    stack, buckets = mixed
    for t in [0, 1, stack.T - 1, *np.flatnonzero(stack.observed.any(axis=2).sum(axis=1) >= 4)[:3]]:
        a, b = graph_view(buckets, int(t)), graph_view(stack, int(t))
        assert a.t == b.t and a.models == b.models and a.key == b.key
        assert np.array_equal(a.adj, b.adj) and np.array_equal(a.observed, b.observed)
        pd.testing.assert_frame_equal(a.triads, b.triads)
        assert {k: v.counts for k, v in a.denoised.items()} == {k: v.counts for k, v in b.denoised.items()}
    tree = graph_choices(buckets)
    walk: dict = {}
    for p, v, j in stack.keys[["prompt_id", "variant", "judge"]].itertuples(index=False):
        walk.setdefault(str(p), {}).setdefault(int(v), [])
        if str(j) not in walk[str(p)][int(v)]:
            walk[str(p)][int(v)].append(str(j))
    assert tree == walk and list(tree)[:3] == ["b0", "b1", "b2"] and tree["t0"][0] == ["j1", "j2"]
    assert graph_choices(buckets) is tree  # computed once per graphs object
    assert set(variant_names(buckets).values()) == {"original"}


def test_keep_k_curve_keeps_what_the_leaderboard_keeps_on_mixed_pairs(mixed):
    from engine.experiments.curves import _pools, pool_scores
    from engine.graphs.key_order import key_rank
    from engine.graphs.truncation import keep_k_graphs

    stack, _ = mixed
    krank = key_rank(stack.keys)
    pools, _ = _pools(stack, False, "perturbed", krank)
    (pos,) = pools.values()
    order = np.lexsort((krank, pool_scores(stack, "perturbed", mu=1.0)))
    ranked = order[np.isin(order, pos)]
    for k in (1, 3, 10, pos.size):
        kept = keep_k_graphs(stack, k, mu=1.0, per_category=False, pool="perturbed")
        assert sorted(ranked[:k]) == sorted(kept.index)
    assert pos.size == kept.n_pool  # no-cycle graphs out of both pools


def test_natural_sorted_fast_path_equals_natural_key():
    import random

    from engine.views.labels import natural_key, natural_sorted

    rng = random.Random(1)
    ids = [rng.choice(["b", "B", "q", "", "x_", "ab"]) + rng.choice(["", str(rng.randint(0, 3000)),
                                                                     "0" + str(rng.randint(0, 30))])
           for _ in range(5000)]
    assert natural_sorted(ids) == sorted(ids, key=natural_key)  # vectorised: prefix + number ids
    assert natural_sorted([*ids, "a1b2"]) == sorted([*ids, "a1b2"], key=natural_key)  # falls back


def test_win_tie_matrices_on_buckets_equal_the_dense_stack(mixed):
    stack, buckets = mixed
    (w, t), (wd, td) = buckets.win_tie_matrices(), stack.win_tie_matrices()
    assert w.sum() > 0 and t.sum() > 0
    assert np.array_equal(w, wd) and np.array_equal(t, td)
