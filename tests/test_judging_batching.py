"""Planning local forward passes (engine/judging/batching.py), checked against brute force."""

from __future__ import annotations

import random

import pytest

from engine.judging.batching import budget_batches, common_prefix, padded_tokens, prefix_groups


def test_budget_batches_cover_every_request_once_longest_first_under_the_budget():
    rng = random.Random(3)
    for _ in range(200):
        lengths = [rng.randint(1, 300) for _ in range(rng.randint(1, 40))]
        budget, extra = rng.randint(50, 2000), rng.choice([0, 8, 64])
        batches = budget_batches(lengths, budget, extra=extra)
        flat = [i for b in batches for i in b]
        assert sorted(flat) == list(range(len(lengths)))
        assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
        for b in batches:
            cost = len(b) * (max(lengths[i] for i in b) + extra)
            assert cost == padded_tokens(len(b), lengths[b[0]], extra)
            assert cost <= budget or len(b) == 1
        # greedy is tight: the next request would not have fitted in the batch before it
        for b in batches[:-1]:
            assert (len(b) + 1) * (lengths[b[0]] + extra) > budget


def test_budget_batches_hand_worked():
    assert budget_batches([10, 30, 20, 5], 60) == [[1, 2], [0, 3]]  # 2*30 = 60; then 10, 5: 2*10
    assert budget_batches([100, 10], 50) == [[0], [1]]  # a request over the budget goes alone
    with pytest.raises(ValueError):
        budget_batches([1], 0)


def _cost(ids, groups):
    return sum(p + sum(len(ids[i]) - p for i in m) for p, m in groups)


def test_prefix_groups_are_real_common_prefixes_and_never_cost_more():
    rng = random.Random(7)
    for _ in range(200):
        heads = [[rng.randint(0, 3) for _ in range(rng.randint(0, 30))] for _ in range(3)]
        ids = [rng.choice(heads) + [rng.randint(0, 3) for _ in range(rng.randint(1, 30))] for _ in range(12)]
        groups = prefix_groups(ids, min_prefix=4)
        assert sorted(i for _, m in groups for i in m) == list(range(len(ids)))
        for p, m in groups:
            assert (p == 0) == (len(m) == 1)
            assert all(p <= len(ids[i]) - 1 for i in m)
            if p:
                assert all(ids[i][:p] == ids[m[0]][:p] for i in m) and p >= 4
        assert _cost(ids, groups) <= sum(len(x) for x in ids)


def test_prefix_groups_hand_worked_two_orders_and_shared_first_answers():
    # a system/question head H (20 tokens), answers X, Y, Z (10 tokens each): the orders of a pair
    h = list(range(100, 120))
    x, y, z = [1] * 10, [2] * 10, [3] * 10
    two = [h + x + y, h + y + x]
    assert prefix_groups(two, min_prefix=16) == [(20, [0, 1])]
    assert prefix_groups(two, min_prefix=21) == [(0, [0]), (0, [1])]  # a short prefix is not shared
    # round robin of three (xy, xz, yx, yz, zx, zy): xy and xz share H + x (30 tokens); yx shares
    # only H (20) with them, and 2*20 > 1*30, so it joins at 20, and so do the rest: one group of 6
    # at 20 costs 20 + 6*20 = 140, three groups of 2 at 30 would cost 3*(30 + 2*10) = 150
    rr = [h + a + b for a in (x, y, z) for b in (x, y, z) if a != b]
    assert common_prefix(rr[0], rr[1]) == 30 and common_prefix(rr[1], rr[2]) == 20
    groups = prefix_groups(rr, min_prefix=16)
    assert groups == [(20, [0, 1, 2, 3, 4, 5])] and _cost(rr, groups) == 140
    # with a longer head per first answer (x 40 tokens), the pairs of a first answer stay together
    x4 = [1] * 40
    rr4 = [h + x4 + y, h + x4 + z, h + y + x4, h + z + x4]
    # xy, xz share 60; then yx shares 20 with them: 2*20 < 1*60, a new group; yx and zx share 20
    assert prefix_groups(rr4, min_prefix=16) == [(60, [0, 1]), (20, [2, 3])]
