"""The exact minimum feedback arc set (engine.graphs.min_fas), PGED's ``fas="exact"`` and the diagnose
``fas`` / ``fas-graphs`` tables, each against brute force: every vertex order, every arc subset, loops."""

from __future__ import annotations

import io
import itertools
import math
from contextlib import redirect_stderr, redirect_stdout

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.__main__ import main
from engine.diagnostics import diagnose
from engine.errors import LensError
from engine.graphs.denoise import denoise, greedy_fas_order
from engine.graphs.min_fas import exact_descendants_batch, min_fas_batch
from engine.graphs.stack import build_stack
from engine.rankers import rank
from engine.rankers.graph_batch import pged_batch
from engine.rankers.objects import RANKER_OBJECTS
from engine.rankers.params import parse_ranker_params
from engine.rankers.pged import pged
from tests.test_rankers_data import bt_verdicts, verdict_frame

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


@st.composite
def weighted_digraphs(draw, max_n: int = 6, max_w: int = 3):
    """Random weighted digraphs: both directions of a pair may carry weight, some vertices isolated."""
    n = draw(st.integers(1, max_n))
    cells = draw(st.lists(st.integers(0, max_w), min_size=n * n, max_size=n * n))
    w = np.array(cells, dtype=np.float64).reshape(n, n)
    np.fill_diagonal(w, 0.0)
    return w


def orders_brute(w: np.ndarray) -> tuple[float, list[tuple[int, ...]]]:
    """(least backward weight, every order of the vertices reaching it), over all n! orders."""
    n = w.shape[0]
    cost = {}
    for p in itertools.permutations(range(n)):
        pos = np.empty(n, dtype=np.int64)
        pos[list(p)] = np.arange(n)
        cost[p] = float(w[pos[:, None] > pos[None, :]].sum())
    best = min(cost.values())
    return best, [p for p, c in cost.items() if c == best]


def min_sets_brute(w: np.ndarray) -> list[frozenset]:
    """Every minimum-weight arc set whose removal leaves a DAG, over all subsets of the arcs."""
    arcs = list(zip(*np.nonzero(w > 0), strict=True))
    best, sets = math.inf, []
    for r in range(len(arcs) + 1):
        for sub in itertools.combinations(arcs, r):
            g = nx.DiGraph([a for a in arcs if a not in sub])
            if not nx.is_directed_acyclic_graph(g):
                continue
            c = float(sum(w[a] for a in sub))
            if c < best:
                best, sets = c, [frozenset(sub)]
            elif c == best:
                sets.append(frozenset(sub))
    return sets


def descendants_nx(w: np.ndarray, removed) -> np.ndarray:
    n = w.shape[0]
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(a for a in zip(*np.nonzero(w > 0), strict=True) if a not in removed)
    return np.array([len(nx.descendants(g, v)) for v in range(n)], dtype=np.float64)


@SETTINGS
@given(weighted_digraphs())
def test_minimum_weight_count_and_representative_order_against_every_order(w):
    m = min_fas_batch(w[None])
    best, optimal = orders_brute(w)
    assert m.solved[0] and m.weight[0] == pytest.approx(best)
    active = np.flatnonzero((w > 0).any(axis=0) | (w > 0).any(axis=1))
    n, k = w.shape[0], active.size
    # the DP counts orders of the vertices with arcs; each places the n - k isolated ones anywhere
    assert m.count[0] * math.perm(n, n - k) == len(optimal)
    # the representative: the first optimal order (by vertex index) of the vertices with arcs
    restricted = sorted({tuple(v for v in p if v in set(active.tolist())) for p in optimal})
    assert tuple(m.order[0][:k]) == restricted[0]
    back = m.removed[0]
    assert float(w[back].sum()) == pytest.approx(best) and int(back.sum()) == m.n_arcs[0]
    assert nx.is_directed_acyclic_graph(nx.DiGraph(list(zip(*np.nonzero((w > 0) & ~back), strict=True))))


@settings(max_examples=30, deadline=None, derandomize=True)
@given(weighted_digraphs(max_n=5, max_w=2))
def test_descendants_average_every_minimum_arc_set_found_among_all_arc_subsets(w):
    if (w > 0).sum() > 10:  # 2^10 subsets at most per example
        w = np.triu(w) + np.tril(w, -1) * (np.tril(w, -1) > 1)
    sets = min_sets_brute(w)
    desc, n_sets, rep, solved = exact_descendants_batch(w[None])
    assert solved[0] and not rep[0] and n_sets[0] == len(sets)
    expect = np.mean([descendants_nx(w, s) for s in sets], axis=0)
    np.testing.assert_allclose(desc[0], expect)
    # the name rule: the representative order's DAG, one of the minimum sets
    d_rep, _, rep_used, _ = exact_descendants_batch(w[None], max_sets=0)
    assert not rep_used[0]
    np.testing.assert_allclose(d_rep[0], descendants_nx(w, set(zip(*np.nonzero(
        min_fas_batch(w[None]).removed[0]), strict=True))))


def test_batch_of_mixed_sizes_matches_one_graph_at_a_time_and_relabelling_permutes():
    rng = np.random.default_rng(5)
    n = 8
    w = rng.integers(0, 3, size=(12, n, n)).astype(np.float64) * (rng.random((12, n, n)) < 0.45)
    w[:, np.arange(n), np.arange(n)] = 0.0
    w[3, 5:, :] = 0.0
    w[3, :, 5:] = 0.0  # three isolated vertices
    w[7] = 0.0  # no arc at all
    whole = exact_descendants_batch(w)
    m = min_fas_batch(w)
    for g in range(12):
        one = exact_descendants_batch(w[g:g + 1])
        np.testing.assert_allclose(whole[0][g], one[0][0])
        assert whole[1][g] == one[1][0]
        assert m.weight[g] == pytest.approx(min_fas_batch(w[g:g + 1]).weight[0])
    perm = rng.permutation(n)
    wp = w[:, perm][:, :, perm]  # vertex i of wp is vertex perm[i] of w
    np.testing.assert_allclose(exact_descendants_batch(wp)[0], whole[0][:, perm])
    assert m.weight[7] == 0 and whole[1][7] == 1 and (whole[0][7] == 0).all()


def test_above_the_limit_nothing_is_solved_and_the_rest_is():
    w = np.zeros((2, 5, 5))
    for i in range(5):
        w[0, i, (i + 1) % 5] = 1.0  # a 5-cycle: 5 vertices with arcs
    w[1, 0, 1] = w[1, 1, 2] = w[1, 2, 0] = 1.0  # a 3-cycle
    desc, _, _, solved = exact_descendants_batch(w, max_n=4)
    assert solved.tolist() == [False, True] and np.isnan(desc[0]).all()
    m = min_fas_batch(w, max_n=4)
    assert m.solved.tolist() == [False, True] and np.isnan(m.weight[0]) and m.weight[1] == 1.0


def test_greedy_is_never_below_the_minimum_and_misses_it_on_some_tournaments():
    rng = np.random.default_rng(11)
    gaps = []
    for _ in range(150):
        n = 7
        up = rng.random((n, n)) < 0.5
        w = np.triu(up, 1) | np.triu(~up, 1).T  # a random tournament
        w = w.astype(np.float64)
        greedy = float(denoise(w).removed.sum())
        exact = min_fas_batch(w[None]).weight[0]
        assert greedy >= exact
        gaps.append(greedy - exact)
    assert max(gaps) >= 1  # the heuristic does lose somewhere, which is why the exact option exists


def _stack(seed: int = 0, n_prompts: int = 5):
    theta = np.array([0.4, 0.2, 0.0, -0.1, -0.3])
    frames = [
        bt_verdicts(theta, n_prompts, seed=seed + k, tie_nu=0.3, pairs_per_prompt=8).assign(judge=f"j{k}")
        for k in range(3)
    ]
    return build_stack(pd.concat(frames, ignore_index=True))


def sets_from_orders(w: np.ndarray) -> list[frozenset]:
    """Every minimum arc set as the distinct backward sets of the optimal orders among all n!."""
    out = set()
    for p in orders_brute(w)[1]:
        pos = {v: i for i, v in enumerate(p)}
        out.add(frozenset((u, v) for u, v in zip(*np.nonzero(w > 0), strict=True) if pos[u] > pos[v]))
    return list(out)


def _exact_twin(stack, delta_ties: str = "average", g=None, m=None) -> np.ndarray:
    """Per-prompt PGED with the minimum set, by loops: ensemble per question (graph weights ``g``), every
    minimum arc set from all n! orders (average) or the first optimal order (name), networkx
    descendants, average ranks within the question, weight-score points (question weights ``m``)."""
    from scipy.stats import rankdata

    groups: dict = {}
    for t, key in enumerate(stack.keys[["dataset", "prompt_id", "turn"]].itertuples(index=False)):
        groups.setdefault(tuple(key), []).append(t)
    g = np.ones(stack.T) if g is None else np.asarray(g, dtype=np.float64)
    points = np.zeros(stack.n)
    for q, ts in enumerate(groups.values()):
        w = np.einsum("t,tij->ij", g[ts], stack.wins[ts].astype(np.float64))
        present = sorted(set(np.flatnonzero(stack.observed[[t for t in ts if g[t] > 0]].any(axis=(0, 2)))))
        if not present:
            continue
        if delta_ties == "average":
            desc = np.mean([descendants_nx(w, s) for s in sets_from_orders(w)], axis=0)
        else:
            active = [v for v in range(stack.n) if (w[v] > 0).any() or (w[:, v] > 0).any()]
            best = min(tuple(v for v in p if v in active) for p in orders_brute(w)[1])
            pos = {v: i for i, v in enumerate(best)}
            removed = {(u, v) for u, v in zip(*np.nonzero(w > 0), strict=True) if pos[u] > pos[v]}
            desc = descendants_nx(w, removed)
        r = rankdata([-desc[v] for v in present], method="average")
        for v, rv in zip(present, r, strict=True):
            points[v] += (1.0 if m is None else m[q]) * (len(present) - rv + 1)
    return points


@pytest.mark.parametrize("delta_ties", ["average", "name"])
def test_pged_exact_per_prompt_matches_a_loop_twin(delta_ties):
    stack = _stack()
    res = rank(stack, "pged", fas="exact", delta_ties=delta_ties)
    np.testing.assert_allclose(res.scores.to_numpy(), _exact_twin(stack, delta_ties))
    assert "minimum feedback arc set" in res.details["fas"]
    assert res.details["n_prompts_fas_greedy_fallback"] == 0
    # the shown DAGs are minimum sets: their removed weight is the sum of the questions' minima
    greedy = rank(stack, "pged")
    assert res.details["removed_weight"] <= greedy.details["removed_weight"]


def test_pged_exact_global_mode_and_batched_bootstrap_agree_with_single_fits():
    stack = _stack(seed=3)
    res = rank(stack, "pged", mode="global", fas="exact")
    w = stack.wins.sum(axis=0).astype(np.float64)
    expect = np.mean([descendants_nx(w, s) for s in sets_from_orders(w)], axis=0)
    np.testing.assert_allclose(res.scores.to_numpy(), expect)
    assert res.details["removed_weight"] == pytest.approx(min_fas_batch(w[None]).weight[0])
    rng = np.random.default_rng(0)
    c = rng.multinomial(stack.T, np.full(stack.T, 1 / stack.T), size=3)
    batch = pged_batch(stack, c, mode="global", fas="exact")[0]
    for b in range(3):
        idx = np.repeat(np.arange(stack.T), c[b])
        single = rank(stack.subset(idx), "pged", mode="global", fas="exact").scores.to_numpy()
        np.testing.assert_allclose(batch[b], single, err_msg=f"global draw {b}")
    # per prompt, graph draws: each question's ensemble weighted by its graphs' draws, the question by
    # their mean draw count (engine.rankers.graph_batch.pged_batch), here by loops
    q_of_t = stack.keys.groupby(["dataset", "prompt_id", "turn"], sort=True).ngroup().to_numpy()
    batch = pged_batch(stack, c, mode="per-prompt", fas="exact")[0]
    for b in range(3):
        m = np.bincount(q_of_t, weights=c[b]) / np.bincount(q_of_t)
        np.testing.assert_allclose(batch[b], _exact_twin(stack, g=c[b], m=m), err_msg=f"per-prompt draw {b}")


def test_pged_exact_above_the_limit_uses_the_greedy_and_says_so():
    n = 22  # one prompt, a 22-cycle plus chords: 22 models with arcs, above the limit of 20
    rows = [("p", f"m{i:02d}", f"m{(i + 1) % n:02d}", "A") for i in range(n)]
    rows += [("p", f"m{i:02d}", f"m{(i + 3) % n:02d}", "A") for i in range(0, n, 2)]
    stack = build_stack(verdict_frame(rows))
    exact, greedy = rank(stack, "pged", fas="exact"), rank(stack, "pged")
    assert exact.details["n_prompts_fas_greedy_fallback"] == 1
    pd.testing.assert_series_equal(exact.scores, greedy.scores)
    text = " ".join(RANKER_OBJECTS["pged"].notes(exact.details, {}))
    assert "1 ensemble(s) had more models with arcs than the exact limit and used the greedy instead" in text
    glob = rank(stack, "pged", mode="global", fas="exact")
    assert glob.details["fas_greedy_fallback"] is True


def test_fas_parameter_is_checked_in_one_sentence():
    assert parse_ranker_params("pged", ["fas=exact"]) == {"fas": "exact"}
    refusal = r"^Ranker parameter fas='optimal' of pged is not one of greedy, exact\.$"
    with pytest.raises(LensError, match=refusal):
        parse_ranker_params("pged", ["fas=optimal"])
    with pytest.raises(LensError, match=r"^Unknown PGED fas 'optimal'; choose greedy or exact\.$"):
        pged(_stack(), fas="optimal")


def _cyclic_verdicts() -> pd.DataFrame:
    """Two judges over random 6-model prompts: many graphs with cycles, some with more than one."""
    rng = np.random.default_rng(7)
    models = [f"m{i}" for i in range(6)]
    rows = {"j1": [], "j2": []}
    for out in rows.values():
        for p in range(14):
            for a, b in itertools.combinations(models, 2):
                if rng.random() < 0.85:
                    out.append((f"p{p}", a, b, rng.choice(["A", "B", "A", "B", "tie"])))
    return pd.concat([verdict_frame(r, judge=j) for j, r in rows.items()], ignore_index=True)


def test_fas_graphs_table_against_loops_and_summary_against_the_rows():
    v = _cyclic_verdicts()
    table = diagnose(v, table="fas-graphs")
    stack = build_stack(v)
    assert len(table) == stack.T
    for t in range(stack.T):
        key = stack.keys.iloc[t]
        row = table[(table["judge"] == key["judge"]) & (table["prompt_id"] == key["prompt_id"])].iloc[0]
        w = stack.wins[t].astype(np.float64)
        present = np.flatnonzero(stack.observed[t].any(axis=1))
        sub = w[np.ix_(present, present)]
        order = greedy_fas_order(sub)
        pos = np.empty(len(order), dtype=np.int64)
        pos[list(order)] = np.arange(len(order))
        greedy = int(((sub > 0) & (pos[:, None] > pos[None, :])).sum())
        minimum = int(orders_brute(sub)[0]) if greedy else 0  # unit weights: the least backward arcs
        assert (row["models"], row["arcs"], row["greedy_removed"], row["min_removed"], row["excess"]) == (
            len(present), int(w.sum()), greedy, minimum, greedy - minimum)
    summary = diagnose(v, table="fas")
    assert summary["judge"].tolist() == ["j1", "j2"]
    for _, s in summary.iterrows():
        rows = table[table["judge"] == s["judge"]]
        assert s["graphs"] == len(rows) and s["cyclic"] == int((rows["greedy_removed"] > 0).sum())
        assert s["greedy_above_min"] == int((rows["excess"] > 0).sum())
        assert s["excess_total"] == int(rows["excess"].sum()) and s["excess_max"] == int(rows["excess"].max())
    assert (summary["greedy_above_min"] > 0).any()  # the data is cyclic enough for the greedy to lose


def test_fas_table_above_the_limit_leaves_the_minimum_empty_and_counts_it():
    from engine.diagnostics.fas_gap import fas_gap_note, fas_gap_summary, fas_gap_table
    from engine.graphs.buckets import build_buckets

    arcs = (("m0", "m1"), ("m1", "m2"), ("m2", "m0"), ("m0", "m3"))
    small_cycles = verdict_frame([(f"q{p}", a, b, "A") for p in range(3) for a, b in arcs], judge="j3")
    v = pd.concat([_cyclic_verdicts(), small_cycles], ignore_index=True)  # 6-model graphs and 4-model ones
    full, small = fas_gap_table(build_buckets(v)), fas_gap_table(build_buckets(v), max_n=5)
    stack = build_stack(v)
    active = [int(((stack.wins[t]).any(axis=0) | (stack.wins[t]).any(axis=1)).sum()) for t in range(stack.T)]
    cyclic = full["greedy_removed"].to_numpy() > 0
    big = (np.array(active) > 5) & cyclic
    assert big.any() and (~big & cyclic).any()
    assert small["min_removed"].isna().to_numpy().tolist() == big.tolist()
    assert small["excess"].isna().to_numpy().tolist() == big.tolist()
    kept = ~big
    assert small["min_removed"][kept].tolist() == full["min_removed"][kept].tolist()
    assert fas_gap_summary(small)["above_limit"].sum() == big.sum()
    said = f"{int(big.sum())} cyclic graph(s) have more than 5 models with arcs and no exact minimum"
    assert said in fas_gap_note(small, 5)


def test_diagnose_fas_cli_prints_the_summary_and_one_sentence(shipped_db):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(["--db", str(shipped_db), "diagnose", "--dataset", "vicuna80", "--table", "fas-graphs",
                   "--judge", "human", "--format", "csv", "--no-cache"])
    assert rc == 0
    table = pd.read_csv(io.StringIO(out.getvalue()))
    cyclic = table[table["greedy_removed"] > 0]
    above = cyclic[cyclic["excess"] > 0]
    lo, hi = int(above["excess"].min()), int(above["excess"].max())
    said = f"than the minimum on {len(above)} of {len(cyclic)} cyclic graphs ({lo}-{hi} more)"
    assert said in err.getvalue()
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        rc = main(["--db", str(shipped_db), "diagnose", "--table", "fas-graphs", "--by", "category"])
    assert rc == 2 and "cannot be grouped" in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
