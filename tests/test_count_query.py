"""The leaderboard's lean pair counts (``engine.ranking.count_query``) against the per-verdict vote path
(``vote_query`` rows → ``votes`` → ``pair_counts``) on random battle logs: repeated battles, several
annotators, ties, invalid rows, unknown and one-sided presentation orders, prompts holding several
pairs, and both orders (where the lean path must step aside)."""

from __future__ import annotations

import dataclasses
import threading

import duckdb
import numpy as np
import pandas as pd
import pytest

from engine.rankers.objects import fit_counts
from engine.rankers.votes import votes as make_votes
from engine.ranking import count_query
from engine.ranking.count_query import lean_pair_counts
from engine.ranking.leaderboard import leaderboard
from engine.ranking.vote_query import GRAPH_HASH, frame_vote_rows, key_hashes, read_vote_rows
from tests.test_count_rankers import frame


def battle_log(seed: int, n: int = 3000, n_models: int = 9, orders: tuple = (None,), multi_pair: bool = False,
               n_judges: int = 1) -> pd.DataFrame:
    """An arena-shaped random log: mostly one battle per prompt, some prompts battled again (same pair,
    own battle id, or no battle id and another annotator), ties, invalid verdicts."""
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(n_models)]
    strength = rng.normal(0, 1, n_models)
    rows, q = [], 0
    while len(rows) < n:
        i, j = rng.choice(n_models, 2, replace=False)
        for k in range(1 + int(rng.random() < 0.15) + int(rng.random() < 0.05)):  # repeated battles
            u = rng.random()
            w = ("invalid" if u < 0.03 else "tie" if u < 0.2
                 else "A" if rng.random() < 1 / (1 + np.exp(strength[j] - strength[i])) else "B")
            rows.append({"prompt_id": f"q{q}", "model_a": models[i], "model_b": models[j], "winner": w,
                         "order": orders[rng.integers(len(orders))],
                         "annotator": None if rng.random() < 0.5 else f"h{rng.integers(3)}",
                         "battle_id": f"b{len(rows)}" if rng.random() < 0.7 else None,
                         "judge": f"j{rng.integers(n_judges)}"})
            if k == 0 and rng.random() < 0.3:  # the very same row again (a repeated vote)
                rows.append(dict(rows[-1]))
        if multi_pair and rng.random() < 0.2:
            a, b = rng.choice(n_models, 2, replace=False)
            rows.append({**rows[-1], "model_a": models[a], "model_b": models[b]})
        q += 1
    v = frame(rows)
    v["tstamp"] = np.arange(len(v), dtype=np.float64)
    return v


def python_path(v: pd.DataFrame, policy: str):
    rows = frame_vote_rows(v)
    vts = make_votes(rows, policy)
    return vts.pair_counts(), len(vts), vts.n_verdicts, rows.n_invalid


def lean_path(v: pd.DataFrame, policy: str):
    con = duckdb.connect()
    try:
        con.register("lens_log", v)
        return lean_pair_counts(con, "lens_log")
    finally:
        con.close()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("policy", ["plurality", "net", "unanimous"])
@pytest.mark.parametrize("orders", [(None,), ("AB", None), ("BA",)])
def test_lean_pair_counts_equal_the_vote_path(seed, policy, orders):
    v = battle_log(seed, orders=orders)
    sc = lean_path(v, policy)
    assert sc is not None  # the arena shape takes the lean path
    pc, n_votes, n_verdicts, n_invalid = python_path(v, policy)
    assert sc.counts.models == pc.models
    for name in ("W", "T", "votes", "n_graphs", "n_prompts"):
        np.testing.assert_array_equal(getattr(sc.counts, name), getattr(pc, name), err_msg=name)
    assert (sc.counts.n_graph_total, sc.n_votes, sc.n_verdicts, sc.n_invalid) == (
        pc.n_graph_total, n_votes, n_verdicts, n_invalid)
    assert n_invalid > 0 and pc.T.sum() > 0 and pc.n_graph_total < n_verdicts  # the log has what it should
    for ranker in ("bt", "davidson", "copeland", "rank-centrality"):
        a, b = fit_counts(ranker, sc.counts).scores, fit_counts(ranker, pc).scores
        np.testing.assert_allclose(
            a.to_numpy(), b.reindex(a.index).to_numpy(), rtol=0, atol=1e-10, err_msg=ranker
        )


@pytest.mark.parametrize("case",
                         ["both orders", "several pairs per prompt", "several judges", "probabilities"])
def test_lean_path_steps_aside_where_votes_need_the_verdicts(case):
    kw = {"both orders": {"orders": ("AB", "BA")}, "several pairs per prompt": {"multi_pair": True},
          "several judges": {"n_judges": 2}, "probabilities": {}}[case]
    v = battle_log(5, n=800, **kw)
    if case == "probabilities":
        v["prob_a"] = np.where(np.arange(len(v)) % 3 == 0, 0.7, np.nan)
    assert lean_path(v, "plurality") is None


@pytest.mark.parametrize("kw", [{"orders": (None,)}, {"orders": ("AB", "BA")}, {"multi_pair": True}])
def test_leaderboard_over_attached_log_equals_the_vote_path(tmp_path, db_path, monkeypatch, kw):
    from engine.store.attached import attach
    from engine.store.connection import Store

    v = battle_log(7, n=2000, **kw).drop(columns=["dataset", "source_file", "source_line"])
    v.to_parquet(tmp_path / "log.parquet")
    store = Store(db_path)
    try:
        attach(store, "log", str(tmp_path / "log.parquet"))
        taken = []
        real = count_query.lean_pair_counts
        monkeypatch.setattr(
            count_query, "lean_pair_counts", lambda *a, **k: taken.append(real(*a, **k)) or taken[-1]
        )
        fast = leaderboard(store, "log", ranker="bt")
        assert (taken[0] is not None) == (kw == {"orders": (None,)})
        monkeypatch.setattr(count_query, "lean_pair_counts", lambda *a, **k: None)
        slow = leaderboard(store, "log", ranker="bt")
    finally:
        store.close()
    pd.testing.assert_frame_equal(fast.table, slow.table, rtol=0, atol=1e-10)
    same = ("n_votes", "n_verdicts_valid", "n_invalid_verdicts", "n_graphs", "judges", "dropped_models")
    assert {k: fast.params[k] for k in same} == {k: slow.params[k] for k in same}


@pytest.mark.parametrize("seed", [0, 1])
def test_rows_in_equals_a_brute_force_membership(seed):
    """``_rows_in`` (a bit table on the keys' low 32-bit words, then an exact search) against np.isin and a
    search of every row: keys that share their low words but differ above them (so the table admits
    non-members), keys equal to a member but for one high bit, and a key array that is a strided view."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**63, 4000, dtype=np.int64).astype(np.uint64)
    high_twins = base ^ (np.uint64(1) << rng.integers(32, 64, base.size).astype(np.uint64))  # same low word
    others = rng.integers(0, 2**63, 50, dtype=np.int64).astype(np.uint64)
    members = np.unique(np.concatenate([base[::3], others]))
    key = rng.permutation(np.concatenate([base, high_twins, base[:500], members[-50:]]))
    for k in (key, np.repeat(key, 2)[::2]):  # contiguous, then a strided view of the same values
        rows, at = count_query._rows_in(k, members)
        want = np.flatnonzero(np.isin(k, members))
        np.testing.assert_array_equal(rows, want)
        np.testing.assert_array_equal(at, np.searchsorted(members, k[want]))
        assert np.array_equal(members[at], k[rows]) and want.size > 1000
        assert np.isin(high_twins, members).sum() < np.isin(high_twins & np.uint64(0xFFFFFFFF),
                                                             members & np.uint64(0xFFFFFFFF)).sum()


@pytest.mark.parametrize("seed", [0, 1])
def test_repeated_keys_equal_a_brute_force_count(seed):
    """``_repeated_keys`` (a sort of the keys' high 32-bit words, then an exact pass over the rows whose word
    repeats) against np.unique: keys repeated two and three times, keys sharing only their high word with
    another (candidates that repeat nothing), a log without any repeat, and a strided view."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2**63, 5000, dtype=np.int64).astype(np.uint64)
    word_twins = (base[:800] & ~np.uint64(0xFFFFFFFF)) | rng.integers(0, 2**32, 800).astype(np.uint64)
    key = rng.permutation(np.concatenate([base, word_twins, base[:300], base[:100]]))
    for k in (key, np.repeat(key, 2)[::2], np.unique(key)):
        shared, n_repeat, rows, gid = count_query._repeated_keys(k)
        values, counts = np.unique(k, return_counts=True)
        np.testing.assert_array_equal(shared, values[counts > 1])
        assert n_repeat == int((counts - 1).sum())
        np.testing.assert_array_equal(rows, np.flatnonzero(np.isin(k, values[counts > 1])))
        np.testing.assert_array_equal(shared[gid], k[rows])
    assert count_query._repeated_keys(key)[0].size == 300  # the log has what it should


def _fresh_vote_rows(v: pd.DataFrame):
    """``read_vote_rows`` over a frame in a database of its own (``frame_vote_rows`` until round 35)."""
    con = duckdb.connect()
    try:
        con.register("lens_frame", v)
        return read_vote_rows(con, "lens_frame", need_strength=True)
    finally:
        con.close()


def _fresh_key_hashes(keys: pd.DataFrame) -> np.ndarray:
    con = duckdb.connect()
    try:
        con.register("lens_keys", keys[["judge", "prompt_id", "variant", "turn"]])
        out = con.execute(f"SELECT {GRAPH_HASH} AS g FROM lens_keys").fetchnumpy()["g"]
        return np.asarray(out, np.uint64)
    finally:
        con.close()


def test_frame_reads_from_threads_at_once_equal_a_database_of_their_own():
    """``frame_vote_rows`` and ``key_hashes`` run on one in-memory database per process (a cursor each,
    ``engine.store.sql.scratch``) instead of a ``duckdb.connect`` per call. Four threads at once (as the app's
    warming threads), each reading its own log (other models, judges, sizes) over and over: every read
    equals that log's read in a database of its own, field by field: no thread sees another's frame."""
    logs = [battle_log(seed, n=200 + 61 * seed, n_models=4 + seed, orders=("AB", "BA", None),
                       n_judges=1 + seed % 3) for seed in range(4)]
    want = [(_fresh_vote_rows(v), _fresh_key_hashes(v)) for v in logs]
    start = threading.Barrier(len(logs))
    got: dict[int, list] = {k: [] for k in range(len(logs))}

    def read(k: int) -> None:
        start.wait()
        for _ in range(5):
            got[k].append((frame_vote_rows(logs[k], need_strength=True), key_hashes(logs[k])))

    threads = [threading.Thread(target=read, args=(k,)) for k in range(len(logs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, (rows, keys) in enumerate(want):
        assert len(got[k]) == 5 and rows.n_invalid > 0 and len(rows.models) == 4 + k
        for seen, seen_keys in got[k]:
            for f in dataclasses.fields(rows):
                a, b = getattr(seen, f.name), getattr(rows, f.name)
                if isinstance(b, np.ndarray):
                    np.testing.assert_array_equal(a, b, err_msg=f"log {k}: {f.name}")
                else:
                    assert a == b, (k, f.name)
            np.testing.assert_array_equal(seen_keys, keys)
