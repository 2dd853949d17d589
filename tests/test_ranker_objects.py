"""Each ranker is one object: its batched bootstrap equals its refit, and nothing outside
``engine/rankers/`` decides by comparing a ranker's name to a string literal.

The batched bootstrap (``Ranker.batched_bootstrap``) is checked against the slow way: for every resample
row of draw counts, ``rank`` on the stack with graph t repeated c[t] times. The stack has several judges,
prompts, turns and paraphrase variants, so judge weights, per-prompt grouping and repeated graphs all
matter (a stack of one judge and one variant cannot tell a per-graph from a per-prompt weighting).
"""

from __future__ import annotations

import ast
import itertools

import numpy as np
import pandas as pd
import pytest
from conftest import REPO

from engine.graphs.stack import KEY_COLUMNS, GraphStack
from engine.rankers import RANKER_OBJECTS, ranker_object
from engine.rankers.votes import A_WINS, VoteRows
from engine.ranking.bootstrap import bootstrap, graph_weights, pattern_weights, refit_samples
from engine.ranking.count_board import ordered_votes


def mixed_stack(seed: int = 5, n: int = 5) -> GraphStack:
    """Graphs over n models from 3 judges x 4 prompts x 2 turns x 2 variants (some dropped), with ties,
    missing pairs and duplicated graphs; every model is compared in every graph (so no resample leaves
    a model undefined, which the refit would refuse)."""
    rng = np.random.default_rng(seed)
    rows = [
        k
        for k in itertools.product(
            ("j1", "j2", "j3"), ("p0", "p1", "p2", "p3"), (1, 2), ("original", "para1")
        )
        if rng.random() < 0.7
    ]
    T = len(rows)
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    for t in range(T):
        o = rng.choice(4, size=iu.size, p=[0.4, 0.35, 0.15, 0.1])  # i wins, j wins, tie, not compared
        o[: n - 1] = np.where(o[: n - 1] == 3, 2, o[: n - 1])  # pairs (0, k) always compared: everyone plays
        adj[t, iu, ju] = (o == 0) | (o == 2)
        adj[t, ju, iu] = (o == 1) | (o == 2)
    adj[1] = adj[0]  # identical graphs, so pattern pooling has something to pool
    adj[4] = adj[0]
    observed = adj | adj.swapaxes(1, 2)
    keys = pd.DataFrame(rows, columns=["judge", "prompt_id", "turn", "variant"])
    keys["dataset"] = "d"
    keys["category"] = "c"
    keys["variant_kind"] = np.where(keys["variant"] == "original", "original", "paraphrase")
    keys = keys[list(KEY_COLUMNS)]
    keys["n_verdicts"], keys["n_invalid"] = 1, 0
    return GraphStack(tuple(f"m{i}" for i in range(n)), adj, observed, keys)


WEIGHTS = {"j1": 2.0, "j2": 0.5, "j3": 1.0}

CASES = [
    ("bt", {}),
    ("bt", {"scale": "elo", "alpha": 0.5}),
    ("davidson", {}),
    ("davidson", {"scale": "elo"}),
    ("winrate", {}),
    ("copeland", {}),
    ("copeland", {"normalize": True}),
    ("scorewin", {}),
    ("rank-centrality", {}),
    ("majority", {}),
    ("majority", {"ties": "edge", "normalize": True}),
    ("borda", {}),
    ("borda", {"normalize": True, "weights": WEIGHTS}),
    ("pairwise-majority", {}),
    ("pairwise-majority", {"normalize": True, "weights": WEIGHTS}),
    ("kemeny", {}),
    ("kemeny", {"source": "rankings", "weights": WEIGHTS}),
    ("elspr", {}),
    ("elspr", {"alpha": 0.5}),
    ("pged", {}),
    ("pged", {"weights": WEIGHTS, "aggregate": "kemeny"}),
    ("pged", {"mode": "global", "weights": WEIGHTS}),
]


def per_question(ranker: str, params: dict) -> bool:
    """Per-prompt PGED: it ranks each question (prompt, turn) on its own, then aggregates the questions."""
    return ranker == "pged" and params.get("mode", "per-prompt") == "per-prompt"


def refit_drawn_prompts_apart(stack: GraphStack, ranker: str, weights: np.ndarray, params: dict):
    """The slow way for a ranker that aggregates per question, under prompt resampling: a prompt drawn k
    times is k questions (copy i of it holds the i-th copy of each of its graphs), so each copy is
    ranked on its own and counted once; ``stack.subset`` alone would merge the copies into one question."""
    from engine.rankers import rank

    rows, rank_rows = [], []
    for b in range(weights.shape[0]):
        idx = np.repeat(np.arange(stack.T), weights[b])
        copy = np.concatenate([np.arange(k) for k in weights[b]]) if idx.size else idx
        sub = stack.subset(idx)
        sub.keys["prompt_id"] = [f"{p}#{i}" for p, i in zip(sub.keys["prompt_id"], copy, strict=True)]
        res = rank(sub, ranker, **params)
        rows.append(res.scores.reindex(list(stack.models)).to_numpy(np.float64))
        rank_rows.append(res.ranks.reindex(list(stack.models)).to_numpy(np.int64))
    return np.vstack(rows), np.vstack(rank_rows)


RESAMPLES = [
    (r, p, u) for r, p in CASES for u in ("graph", "prompt") if not (per_question(r, p) and u == "graph")
]
"""Every case under both units, but per-prompt PGED under graph resampling: a question whose graphs are
drawn unequally often has no refit (the batched form weights it by its graphs' mean draw count, a
definition, not a shortcut)."""


@pytest.mark.parametrize("ranker,params,unit", RESAMPLES,
                         ids=[f"{r}-{'-'.join(p) or 'default'}-{u}" for r, p, u in RESAMPLES])
def test_batched_bootstrap_equals_the_refit_of_every_resample(ranker, params, unit):
    stack = mixed_stack()
    obj = ranker_object(ranker)
    rng = np.random.default_rng(11)
    weights = (pattern_weights(stack, 6, rng) if unit == "graph" and obj.pools_identical_graphs(params)
               else graph_weights(stack, 6, rng, unit))
    out = obj.batched_bootstrap(stack, weights, params)
    assert out is not None, f"{ranker} {params} lost its batched form"
    scores, _, _, how = out
    if per_question(ranker, params):
        slow, slow_ranks = refit_drawn_prompts_apart(stack, ranker, weights, params)
    else:
        slow, slow_ranks, _, _ = refit_samples(stack, ranker, weights, params)
    tol = 1e-6 * max(1.0, float(np.nanmax(np.abs(slow))))  # Newton solvers stop at ~1e-8 of the scale
    np.testing.assert_allclose(scores, slow, rtol=1e-6, atol=tol, err_msg=f"{ranker} {params}: {how}")
    if ranker in ("pged", "kemeny"):  # exact scores: the batched ranks are the refits' shared ranks too
        from engine.rankers.base import ranks_from_scores_batch

        np.testing.assert_array_equal(ranks_from_scores_batch(scores), slow_ranks)


def test_every_ranker_is_covered_and_only_sequential_or_soft_fits_refit():
    """Every registered ranker has a case above; the ones without a batched form say so by their object."""
    assert {r for r, _ in CASES} | {"elo", "panel"} == set(RANKER_OBJECTS)  # panel: intervals from its fit
    stack = mixed_stack()
    w = graph_weights(stack, 3, np.random.default_rng(0))
    assert ranker_object("elo").batched_bootstrap(stack, w, {}) is None
    assert ranker_object("panel").batched_bootstrap(stack, w, {}) is None
    assert ranker_object("bt").batched_bootstrap(stack, w, {"soft": True}) is None
    assert ranker_object("davidson").batched_bootstrap(stack, w, {"scale": "prob"}) is None
    res = bootstrap(stack, "elo", B=3, seed=0)
    assert res.method == "one refit per resample"


def test_pattern_pooling_draws_the_graph_law_and_bootstrap_uses_it_for_bt():
    """The pooled draw puts each pattern's count on its first graph; BT's batched bootstrap then equals
    the refit on the same counts (the sums do not care which copy of a pattern carries the count)."""
    stack = mixed_stack()
    c = pattern_weights(stack, 50, np.random.default_rng(3))
    assert (c.sum(axis=1) == stack.T).all()
    assert (c[:, 1] == 0).all() and (c[:, 4] == 0).all()  # copies of graph 0 carry nothing
    res = bootstrap(stack, "bt", B=4, seed=2)
    again = pattern_weights(stack, 4, np.random.default_rng(2))
    slow, _, _, _ = refit_samples(stack, "bt", again, {})
    np.testing.assert_allclose(res.samples, slow, rtol=1e-7, atol=1e-7)
    assert res.method == "batched: multinomial graph weights, one matrix product, one batched Newton fit"


def test_elo_reads_votes_in_the_order_its_object_states():
    """One rule for Elo's order (``Ranker.vote_order``): given order, else time when a timestamp exists,
    else input; order=time without timestamps says so. Other rankers have no order."""
    elo, bt = ranker_object("elo"), ranker_object("bt")
    assert bt.vote_order({}, lambda: True) is None
    assert elo.vote_order({}, lambda: True)[0] == "time"
    assert elo.vote_order({}, lambda: False)[0] == "input"
    assert elo.vote_order({"order": "prompt"}, lambda: True)[0] == "prompt"
    order, words = elo.vote_order({"order": "time"}, lambda: False)
    assert order == "input" and words.endswith("order=time asked, but no verdict has a timestamp")
    from engine.ranking.board import BoardSpec

    two = np.arange(2, dtype=np.uint64)
    rows = VoteRows(
        ("a", "b"),
        a=np.array([0, 1]),
        b=np.array([1, 0]),
        winner=np.array([A_WINS, A_WINS]),
        order=np.zeros(2, dtype=np.int8),
        graph=two,
        prompt=two,
        voter=two,
        when=np.full(2, np.nan),
    )
    v = ordered_votes(rows, BoardSpec(ranker="elo", ranker_params={"order": "time"}))
    assert v.order_used.endswith("order=time asked, but no verdict has a timestamp")


def test_display_scale_comes_from_the_ranker_object():
    from engine.rankers.bt import ELO_FACTOR
    from engine.views.leaderboard_view import elo_factor

    assert elo_factor("bt") == elo_factor("davidson") == ELO_FACTOR == pytest.approx(400 / np.log(10))
    assert elo_factor("elo") == 1.0
    assert all(elo_factor(r) is None for r in RANKER_OBJECTS if r not in ("bt", "davidson", "elo"))


# --- no name comparisons outside engine/rankers -----------------------------------------------------

NOT_RANKERS = {"proto"}
"""Variables compared to words that happen to be ranker names but name something else: ``proto`` is a
resampling protocol of paper 000's Table 2 (one of them is called ScoreWin)."""


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def name_comparisons(source: str, names: set[str]) -> list[str]:
    """Comparisons (``==``, ``!=``, ``in``, ``not in``) of something to a literal ranker name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(isinstance(s, ast.Name) and s.id in NOT_RANKERS for s in sides):
            continue
        if any(v in names for s in sides for v in _literals(s)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_name_check_sees_a_planted_comparison():
    names = set(RANKER_OBJECTS)
    assert name_comparisons("if ranker == 'bt':\n    pass\n", names)
    assert name_comparisons("x = r in ('kemeny', 'pged')\n", names)
    assert name_comparisons("y = obj.name != 'elo'\n", names)
    assert not name_comparisons("if proto == 'scorewin':\n    pass\n", names)
    assert not name_comparisons("if scale == 'log':\n    pass\n", names)


def test_no_code_outside_rankers_compares_a_ranker_name_to_a_literal():
    """A ranker's behaviour is asked of its object (``counts``, ``sequential``, ``ordered``, ``counting``,
    ``elo_factor``, ``batched_bootstrap``, ``vote_order``), never decided by its name elsewhere."""
    names = set(RANKER_OBJECTS) | {"copeland_majority"}
    paths = [*(REPO / "engine").rglob("*.py"), *(REPO / "app_pages").rglob("*.py"), REPO / "app.py"]
    offenders = []
    for path in paths:
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("engine/rankers/"):
            continue
        offenders += [f"{rel}:{hit}" for hit in name_comparisons(path.read_text(encoding="utf-8"), names)]
    assert offenders == []


def test_elo_ranks_votes_that_leave_a_model_without_a_vote():
    """A model without a vote (after keep-K, or a filter) is left off the board, and Elo still reads its
    votes by the right models: on fa0c159 the counts were renumbered but the votes were not (IndexError,
    ``leaderboard --ranker elo --keep-k 15`` on vicuna80). Checked against Elo over all three models,
    where the voteless model never moves: the score differences of the other two are the same."""
    from engine.rankers.elo import elo_ratings
    from engine.rankers.votes import B_WINS, TIE, votes
    from engine.ranking.count_board import leaderboard_from_votes

    winners = np.array([A_WINS, B_WINS, A_WINS, TIE, A_WINS, A_WINS])
    k = np.arange(winners.size, dtype=np.uint64)
    rows = VoteRows(
        ("a", "b", "c"),
        a=np.ones(winners.size, dtype=np.int16),
        b=np.full(winners.size, 2, dtype=np.int16),
        winner=winners,
        order=np.zeros(winners.size, dtype=np.int8),
        graph=k,
        prompt=k,
        voter=k,
    )
    board = leaderboard_from_votes(votes(rows), ranker="elo", ranker_params={"k": 16.0})
    assert board.params["dropped_models"] == ["a"]
    s = np.where(winners == A_WINS, 1.0, np.where(winners == TIE, 0.5, 0.0))
    r = elo_ratings(np.ones(s.size, dtype=np.int64), np.full(s.size, 2), s, 3, k=16.0, base=10.0, scale=400.0,
                    init=1000.0)
    got = board.scores
    assert got["b"] - got["c"] == pytest.approx(r[1] - r[2], abs=1e-12)
    assert got["b"] > got["c"]


def test_board_notes_ask_the_object_for_the_prompt_unit_words():
    """Per-prompt PGED's own unit is prompts, and its note says so; another ranker resampling prompts
    because it was told to gets the plain sentence."""
    from engine.ranking.board_notes import board_notes
    from engine.ranking.leaderboard import leaderboard_from_stack

    stack = mixed_stack()
    pged = leaderboard_from_stack(stack, ranker="pged", bootstrap=3, seed=1)
    borda = leaderboard_from_stack(stack, ranker="borda", bootstrap=3, seed=1, bootstrap_unit="prompt")
    assert pged.params["bootstrap_unit"] == borda.params["bootstrap_unit"] == "prompt"
    assert (
        "bootstrap: resampled prompts (all graphs of a prompt together), 3 times (per-prompt PGED's own "
        "unit)."
        in board_notes(pged)
    )
    assert "bootstrap: resampled prompts (all graphs of a prompt together), 3 times." in board_notes(borda)
