"""Two first-open shortcuts give what the slow paths give, exactly (issue 26 point 1).

``leaderboard_first.cycle_context(..., votes=)``: when the votes and the invalid verdicts show every graph
over one pair, no graph of 3+ models is read; the answer must equal the SQL read's (``votes=None``) on data
that separates them: a third model named only by an invalid verdict, invalid verdicts in graphs of their
own, repeats, both orders, several judges and categories, one-pair logs and logs with a few bigger prompts.

``votes._distinct_per_model``: only votes sharing a key are folded and sorted; the per-model counts must
equal a count of distinct (key, model) sets done in plain Python. ``votes.holds`` (which votes share a key)
sifts 64-bit keys by their low bits before its binary search: its answer must equal set membership.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from engine.ingest.importer import import_files
from engine.rankers.votes import A_WINS, TIE, _distinct_per_model, holds, votes
from engine.ranking.vote_query import store_vote_rows
from engine.views.leaderboard_first import cycle_context, graphs_over_one_pair

MODELS = [f"m{i}" for i in range(9)]


def _log(rng: random.Random, *, big_prompts: int, invalid_third: bool) -> list[str]:
    """A battle log: one pair per prompt (some judged twice, in both orders, by two judges, some invalid),
    ``big_prompts`` prompts of 3-4 models, and (``invalid_third``) one prompt whose third model only an
    invalid verdict names."""
    lines = ["prompt_id,model_a,model_b,winner,judge,category,order"]
    for b in range(120):
        a, c = rng.sample(MODELS, 2)
        judge, cat = rng.choice(["h1", "h2"]), rng.choice(["c1", "c2"])
        for _ in range(rng.choice([1, 1, 2, 3])):  # repeats of the same pair in the same graph
            a, c = (c, a) if rng.random() < 0.5 else (a, c)
            lines.append(f"b{b},{a},{c},{rng.choice(['A', 'B', 'tie', 'invalid'])},{judge},{cat},"
                         f"{rng.choice(['AB', 'BA', ''])}")
    for b in range(10):  # graphs of invalid verdicts only, one pair each
        a, c = rng.sample(MODELS, 2)
        lines.append(f"x{b},{a},{c},invalid,h1,c1,AB")
    for p in range(big_prompts):  # judge h1 in category c1 only: other selections have none
        group = rng.sample(MODELS, rng.choice([3, 4]))
        for i, a in enumerate(group):
            for c in group[i + 1:]:
                lines.append(f"t{p},{a},{c},{rng.choice(['A', 'B', 'tie'])},h1,c1,AB")
    if invalid_third:  # valid m0-m1 verdicts and an invalid m1-m2 one: a graph of three models
        lines += ["z,m0,m1,A,h2,c2,AB", "z,m1,m0,B,h2,c2,BA", "z,m2,m1,invalid,h2,c2,AB"]
    return lines


@pytest.mark.parametrize("seed, big_prompts, invalid_third", [
    (1, 0, False), (2, 0, True), (3, 4, False), (4, 4, True)])
def test_cycle_context_from_votes_equals_the_graph_read(empty_store, tmp_path, seed, big_prompts,
                                                        invalid_third):
    (tmp_path / "log.csv").write_text("\n".join(_log(random.Random(seed), big_prompts=big_prompts,
                                                     invalid_third=invalid_third)) + "\n")
    import_files(empty_store, [tmp_path / "log.csv"], "log")
    seen = set()
    for judge in (None, "h1", "h2"):
        for category in (None, "c1", "c2"):
            v = votes(store_vote_rows(empty_store, "log", judge=judge, category=category))
            old = cycle_context(empty_store, "log", judge, category)
            new = cycle_context(empty_store, "log", judge, category, votes=v)
            assert graphs_over_one_pair(empty_store, "log", judge, category, v) == (old is None)
            seen.add(old is None)
            if old is None:
                assert new is None
                continue
            assert new is not None and new.stack.keys.equals(old.stack.keys)
            assert new.stack.T == old.stack.T and new.stack.models == old.stack.models
    # a log of one-pair graphs has no context in any selection; a 3-model graph (one seen only through its
    # invalid verdict included) gives the selections holding it one
    assert seen == ({True} if not (big_prompts or invalid_third) else {True, False})


def test_cycle_context_from_votes_on_vicuna80(shipped_store):
    for judge in (None, "gpt-4"):
        v = votes(store_vote_rows(shipped_store, "vicuna80", judge=judge))
        assert not graphs_over_one_pair(shipped_store, "vicuna80", judge, None, v)
        old = cycle_context(shipped_store, "vicuna80", judge, None)
        new = cycle_context(shipped_store, "vicuna80", judge, None, votes=v)
        assert new.stack.keys.equals(old.stack.keys)


def _brute(key, lo, hi, n):
    seen = [set() for _ in range(n)]
    for k, a, b in zip(key.tolist(), lo.tolist(), hi.tolist(), strict=True):
        seen[a].add(k)
        seen[b].add(k)
    return np.array([len(s) for s in seen], dtype=np.int64)


@settings(max_examples=80, deadline=None)
@given(hs.integers(1, 8), hs.lists(hs.tuples(hs.integers(0, 40), hs.integers(0, 7), hs.integers(0, 7)),
                                   max_size=60), hs.booleans())
def test_distinct_per_model_equals_a_set_count(n, rows, wide):
    rows = [(k, min(a, b) % n, max(a, b) % n) for k, a, b in rows if a % n != b % n]
    base = np.uint64(2**63 + 12345) if wide else np.uint64(0)  # keys above 2**63 too
    key = np.array([base + np.uint64(k) for k, _, _ in rows], dtype=np.uint64)
    lo = np.array([a for _, a, _ in rows], dtype=np.int64)
    hi = np.array([b for _, _, b in rows], dtype=np.int64)
    np.testing.assert_array_equal(_distinct_per_model(key, lo, hi, n), _brute(key, lo, hi, n))


def test_distinct_per_model_on_a_log_with_few_repeats():
    rng = np.random.default_rng(5)
    n, size = 30, 20_000
    key = rng.integers(0, 2**63, size=size, dtype=np.int64).astype(np.uint64)
    key[rng.choice(size, 300, replace=False)] = key[rng.choice(size, 300, replace=False)]  # repeats
    lo = rng.integers(0, n - 1, size=size)
    hi = lo + 1 + rng.integers(0, n - 1 - lo)
    got = _distinct_per_model(key, lo, hi, n)
    np.testing.assert_array_equal(got, _brute(key, lo, hi, n))
    assert (got < np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)).any()  # repeats counted once


@pytest.mark.parametrize("judge", [None, "h1"])
def test_pair_counts_participation_equals_a_set_count(empty_store, tmp_path, judge):
    """``Votes.pair_counts``' graphs and prompts per model and its graph total (from one sort per key array,
    kept on the object: ``KeyRuns``) equal plain set counts, on a log with repeats, both orders and two
    judges (prompts then span two graphs); a subset taken after the sorts were kept is counted from its own
    keys, and a pickled copy carries no sort."""
    import pickle

    lines = _log(random.Random(11), big_prompts=3, invalid_third=True)
    lines += [f"d{p},m{p},m{p + 1},A,{j},c1,AB" for p in range(4) for j in ("h1", "h2")]  # a prompt, 2 judges
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    import_files(empty_store, [tmp_path / "log.csv"], "log")
    v = votes(store_vote_rows(empty_store, "log", judge=judge))
    for _ in range(2):  # the second time from the kept sorts
        pc = v.pair_counts()
        np.testing.assert_array_equal(pc.n_graphs, _brute(v.graph, v.lo, v.hi, v.n))
        np.testing.assert_array_equal(pc.n_prompts, _brute(v.prompt, v.lo, v.hi, v.n))
        assert pc.n_graph_total == v.n_graphs_total() == len(set(v.graph.tolist()))
    assert (pc.n_graphs < pc.votes).any() and (pc.n_prompts <= pc.n_graphs).all()
    if judge is None:
        assert (pc.n_prompts < pc.n_graphs).any()  # two judges' graphs of one prompt counted once
    half = v.take(np.arange(len(v)) % 2 == 0)
    sub = half.pair_counts()
    np.testing.assert_array_equal(sub.n_graphs, _brute(half.graph, half.lo, half.hi, half.n))
    assert sub.n_graph_total == len(set(half.graph.tolist()))
    assert "_key_runs" not in pickle.loads(pickle.dumps(v)).__dict__


def test_a_graph_of_one_vote_and_an_invalid_verdict_of_another_pair(empty_store, tmp_path):
    """A graph whose only vote is m0-m1 and whose third model only an invalid m1-m2 verdict names: no vote
    repeats its graph, so only the invalid verdict shows it is over two pairs (the votes' sort alone would
    call every graph one-pair)."""
    lines = ["prompt_id,model_a,model_b,winner,judge", "z,m0,m1,A,h", "z,m2,m1,invalid,h"]
    lines += [f"b{i},m{i % 3},m{3 + i % 2},{'AB'[i % 2]},h" for i in range(20)]
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    import_files(empty_store, [tmp_path / "log.csv"], "log")
    v = votes(store_vote_rows(empty_store, "log"))
    assert v.graph_runs().all_distinct  # one vote per graph
    assert not graphs_over_one_pair(empty_store, "log", None, None, v)
    old = cycle_context(empty_store, "log", None, None)
    new = cycle_context(empty_store, "log", None, None, votes=v)
    assert old is not None and new is not None and new.stack.keys.equals(old.stack.keys)


@settings(max_examples=120, deadline=None)
@given(hs.lists(hs.integers(0, 2**64 - 1), min_size=0, max_size=200), hs.lists(hs.integers(0, 2**64 - 1),
                                                                               max_size=12),
       hs.integers(0, 12), hs.sampled_from(["uint64", "int64"]))
def test_holds_equals_set_membership(keys, extra, shared, dtype):
    """Keys over the whole 64-bit range (above 2**63 for uint64, negative for int64), values drawn from the
    keys and beside them, often few enough for the sieve (8 keys per value), sometimes not."""
    cast = (lambda k: k) if dtype == "uint64" else (lambda k: k - 2**63)
    key = np.array([cast(k) for k in keys], dtype=dtype)
    values = np.unique(np.array([cast(k) for k in keys[:shared] + extra], dtype=dtype))
    members = set(values.tolist())
    expected = np.array([k in members for k in key.tolist()], dtype=bool)
    np.testing.assert_array_equal(holds(key, values), expected)


def test_holds_on_a_million_keys_with_values_sharing_their_low_bits():
    """The battle-log case (a million hash keys, a few thousand repeated) plus values whose low 22 bits equal
    some keys' without being those keys (the sieve passes them; the search must refuse them)."""
    rng = np.random.default_rng(11)
    key = rng.integers(0, 2**63, size=1_000_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    near = key[rng.choice(key.size, 2_000, replace=False)] ^ np.uint64(1 << 40)  # same low bits, other keys
    values = np.unique(np.concatenate([key[rng.choice(key.size, 3_000, replace=False)], near]))
    got = holds(key, values)
    np.testing.assert_array_equal(got, np.isin(key, values))
    assert 2_900 <= int(got.sum()) <= 3_000


def _contract_votes(rows, policy):
    """Votes by the module's contract, row by row in plain Python: the verdicts of one graph, voter and pair
    shown lo-first pair up in source order with those shown hi-first; the rest, and every verdict of unknown
    order, are votes of their own. (lo, hi, outcome, first row) per vote, in the order of their first rows."""
    from engine.graphs.stack import combine_counts

    a_first = [int(a) < int(b) for a, b in zip(rows.a, rows.b, strict=True)]
    pts = [0 if w == TIE else (1 if (w == A_WINS) == f else -1)
           for w, f in zip(rows.winner, a_first, strict=True)]
    groups: dict = {}
    votes_: list[list[int]] = []
    for i in range(len(rows)):
        lo, hi = sorted((int(rows.a[i]), int(rows.b[i])))
        if rows.order[i] == 0:
            votes_.append([i])
            continue
        lo_first = (rows.order[i] == 1) == a_first[i]
        g = groups.setdefault((int(rows.graph[i]), int(rows.voter[i]), lo, hi), ([], []))
        g[0 if lo_first else 1].append(i)
    for lo_side, hi_side in groups.values():
        k = min(len(lo_side), len(hi_side))
        votes_ += [[x, y] for x, y in zip(lo_side[:k], hi_side[:k], strict=True)]
        votes_ += [[x] for x in lo_side[k:] + hi_side[k:]]
    out = []
    for members in sorted(votes_, key=min):
        o = [pts[m] for m in members]
        c = combine_counts(np.array([o.count(1)]), np.array([o.count(-1)]), np.array([o.count(0)]), policy)
        first = min(members)
        lo, hi = sorted((int(rows.a[first]), int(rows.b[first])))
        out.append((lo, hi, int(c[0]), first))
    return out


@settings(max_examples=150, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 2), hs.integers(0, 1), hs.integers(0, 3), hs.integers(1, 3),
                          hs.integers(0, 2)), min_size=1, max_size=40),
       hs.booleans(), hs.sampled_from(["plurality", "net", "unanimous"]))
def test_votes_follow_the_contract_with_and_without_orders(draws, no_orders, policy):
    """``votes`` against the contract on logs with repeats of one (graph, voter, pair) in both orders, in one,
    and with no order at all (then every verdict is a vote of its own: the battle-log shortcut)."""
    from engine.rankers.votes import VoteRows

    pairs = [(0, 1), (1, 0), (0, 2), (2, 1)]
    a = np.array([pairs[p][0] for _, _, p, _, _ in draws], dtype=np.int16)
    b = np.array([pairs[p][1] for _, _, p, _, _ in draws], dtype=np.int16)
    order = np.array([0 if no_orders else o for _, _, _, _, o in draws], dtype=np.int8)
    rows = VoteRows(("m0", "m1", "m2"), a=a, b=b, winner=np.array([w for *_, w, _ in draws], dtype=np.int8),
                    order=order, graph=np.array([g for g, *_ in draws], dtype=np.uint64),
                    prompt=np.array([g for g, *_ in draws], dtype=np.uint64),
                    voter=np.array([v for _, v, *_ in draws], dtype=np.uint64))
    got = votes(rows, policy)
    assert list(zip(got.lo.tolist(), got.hi.tolist(), got.outcome.tolist(), got.row.tolist(),
                    strict=True)) == _contract_votes(rows, policy)


def test_a_log_without_orders_reads_no_voter_key(empty_store, tmp_path):
    """The voter key (annotator, battle id) only tells apart verdicts of known presentation order: a
    selection without one (orders only on an invalid verdict, or only under another judge) reads none, and
    its votes are those of distinct voters; the selection with orders reads them (two battles of one pair and
    prompt shown both ways stay two votes each)."""
    from dataclasses import replace

    lines = ["prompt_id,model_a,model_b,winner,judge,order,battle_id"]
    for p in range(30):
        lines += [f"p{p},m0,m1,A,h1,,b{p}", f"p{p},m1,m0,B,h1,,c{p}", f"p{p},m2,m1,invalid,h1,AB,d{p}"]
        lines += [f"p{p},m0,m1,A,h2,AB,e{p}", f"p{p},m1,m0,tie,h2,BA,f{p}"]
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    import_files(empty_store, [tmp_path / "log.csv"], "log")
    rows = store_vote_rows(empty_store, "log", judge="h1")
    assert len(rows) == 60 and not rows.voter.any() and not rows.order.any()
    distinct = replace(rows, voter=np.arange(1, len(rows) + 1, dtype=np.uint64))
    got, want = votes(rows), votes(distinct)
    for f in ("lo", "hi", "outcome", "graph", "prompt", "row"):
        np.testing.assert_array_equal(getattr(got, f), getattr(want, f))
    with_orders = store_vote_rows(empty_store, "log", judge="h2")
    assert with_orders.voter.all() and len(np.unique(with_orders.voter)) == 60
    assert len(votes(with_orders)) == 60  # e and f battles: different voters, never paired
    assert len(votes(store_vote_rows(empty_store, "log"))) == 120
