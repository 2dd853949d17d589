"""PNT (paper 001, eq. 2 and App. B.1) on top of engine.graphs.triads, soft tie band, and the B.5 heatmap."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from engine.diagnostics.nontransitivity import (
    gap_heatmap,
    pattern_summary,
    pnt_summary,
    pnt_triples,
    read_win_rates,
    soft_stack,
)
from engine.errors import LensError
from engine.graphs.stack import GraphStack, build_stack

SYM = {">": 0, "~": 1, "<": 2}
# Paper 001, Appendix B.1, the 14 non-transitive patterns as (A vs B, B vs C, A vs C). Items 11 and
# 12 are printed as (<, >, >) and (<, >, ~), which are transitive (B > A > C; B > A ~ C); the list is
# otherwise closed under swapping > and <, and the mirrors of items 4 and 3 are missing, so those
# two items are read as (<, ~, >) and (<, ~, ~).
PAPER_14 = [
    (">", ">", "~"), (">", ">", "<"), (">", "~", "~"), (">", "~", "<"), ("~", ">", "~"), ("~", ">", "<"),
    ("~", "~", ">"), ("~", "~", "<"), ("~", "<", ">"), ("~", "<", "~"), ("<", "~", ">"), ("<", "~", "~"),
    ("<", "<", ">"), ("<", "<", "~"),
]


def keys(T):
    return pd.DataFrame(
        {
            "dataset": "d",
            "judge": "j",
            "prompt_id": [str(t) for t in range(T)],
            "variant": 0,
            "turn": 1,
            "category": "c",
            "variant_kind": "original",
            "n_verdicts": 3,
            "n_invalid": 0,
        }
    )


def triangle(codes) -> np.ndarray:
    """3-vertex adjacency for outcomes of (0 vs 1, 1 vs 2, 0 vs 2)."""
    a = np.zeros((3, 3), dtype=bool)
    for (i, j), c in zip([(0, 1), (1, 2), (0, 2)], codes, strict=True):
        a[i, j] = c in (">", "~")
        a[j, i] = c in ("<", "~")
    return a


def has_bad_3cycle(a: np.ndarray) -> bool:
    """Independent criterion: a directed 3-cycle of A that is not made of ties only."""
    for x, y, z in ((0, 1, 2), (0, 2, 1)):
        if a[x, y] and a[y, z] and a[z, x] and not (a[y, x] and a[z, y] and a[x, z]):
            return True
    return False


def test_all_27_patterns_and_the_papers_14():
    combos = list(itertools.product(">~<", repeat=3))
    adj = np.stack([triangle(c) for c in combos])
    stack = GraphStack(("A", "B", "C"), adj, np.ones_like(adj), keys(len(combos)))
    t = pnt_triples(stack).sort_values("graph")
    nontrans = {combos[g] for g in t.loc[~t["transitive"], "graph"]}
    assert nontrans == set(PAPER_14) and len(nontrans) == 14
    assert nontrans == {c for c in combos if has_bad_3cycle(triangle(c))}
    s = pnt_summary(stack)
    assert s["pnt"].iloc[0] == pytest.approx(14 / 27)
    assert s["cycle"].iloc[0] == 2 and s["tied_ends"].iloc[0] + s["unchained_ties"].iloc[0] == 12
    # an all-tie triangle is consistent
    assert t.loc[t["graph"] == combos.index(("~", "~", "~")), "transitive"].item()


def test_pnt_against_direct_count_on_random_graphs():
    rng = np.random.default_rng(0)
    T, n = 40, 6
    outcome = rng.choice(4, size=(T, n, n), p=[0.1, 0.4, 0.35, 0.15])  # missing, i>j, j>i, tie
    iu, ju = np.triu_indices(n, 1)
    adj = np.zeros((T, n, n), dtype=bool)
    obs = np.zeros((T, n, n), dtype=bool)
    o = outcome[:, iu, ju]
    adj[:, iu, ju] = (o == 1) | (o == 3)
    adj[:, ju, iu] = (o == 2) | (o == 3)
    obs[:, iu, ju] = obs[:, ju, iu] = o > 0
    k = keys(T)
    k["judge"] = np.where(np.arange(T) < 20, "j1", "j2")
    stack = GraphStack(tuple("abcdef"), adj, obs, k)
    want = {"j1": [0, 0], "j2": [0, 0]}
    for t in range(T):
        for tri in itertools.combinations(range(n), 3):
            if all(obs[t, x, y] for x, y in itertools.combinations(tri, 2)):
                sub = adj[t][np.ix_(tri, tri)]
                want[k["judge"][t]][0] += 1
                want[k["judge"][t]][1] += has_bad_3cycle(sub)
    s = pnt_summary(stack).set_index("judge")
    for j, (tot, bad) in want.items():
        assert s.loc[j, "triples"] == tot and s.loc[j, "nontransitive"] == bad
    per_triple = pnt_summary(stack, by=("judge", "model_a", "model_b", "model_c"))
    assert per_triple.groupby("judge")["nontransitive"].sum().to_dict() == {j: w[1] for j, w in want.items()}


def soft_verdicts(probs: dict[tuple[str, str], float], prompt="p") -> pd.DataFrame:
    rows = [(prompt, a, b, p) for (a, b), p in probs.items()]
    v = pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "prob_a"])
    v["winner"] = np.where(v["prob_a"] > 0.5, "A", "B")
    for c, val in {"dataset": "d", "judge": "j", "variant": 0, "turn": 1, "category": "c",
                   "variant_kind": "original", "order": "AB"}.items():
        v[c] = val
    return v


def test_soft_tie_band():
    # x>y (0.9), y vs z 0.51 (a tie inside 0.475-0.525), x vs z 0.49 (a tie too) → x>y, y~z, x~z
    v = soft_verdicts({("x", "y"): 0.9, ("y", "z"): 0.51, ("x", "z"): 0.49})
    stack = build_stack(v)
    s = pnt_triples(stack, source="soft")
    assert not s["transitive"].item() and s["kind"].item() == "unchained-ties"  # two ties that do not chain
    # a narrow band makes the same probabilities x>y, y>z, z>x: a strict cycle
    s2 = pnt_triples(stack, source="soft", tie_band=(0.5, 0.5))
    assert s2["kind"].item() == "cycle"
    # a band that also covers 0.9 makes all three pairs ties: consistent
    s3 = pnt_triples(stack, source="soft", tie_band=(0.05, 0.95))
    assert s3["kind"].item() == "all-tie" and s3["transitive"].item()
    ss = soft_stack(stack, (0.475, 0.525))
    i = {m: k for k, m in enumerate(ss.models)}
    assert ss.adj[0, i["y"], i["z"]] and ss.adj[0, i["z"], i["y"]]  # tie
    assert ss.adj[0, i["x"], i["y"]] and not ss.adj[0, i["y"], i["x"]]
    # the hard verdicts of the same rows (0.51 → A, 0.49 → B) read x>y, y>z, z>x
    hard = pnt_triples(stack, source="hard")
    assert hard["kind"].item() == "cycle"  # x>y, y>z (0.51 → A), z>x (0.49 → B)


def test_heatmap_cells_and_smoothing():
    # three models with fixed win rates; one graph, a strict cycle: every ordered triple has PNT 1
    v = soft_verdicts({("x", "y"): 0.9, ("y", "z"): 0.9, ("x", "z"): 0.1})
    stack = build_stack(v)
    wr = pd.Series({"x": 0.8, "y": 0.45, "z": 0.15})
    h = gap_heatmap(stack, win_rates=wr, grid=4, sigma=0.0)
    # span 0.65 → edges -0.65, -0.325, 0, 0.325, 0.65 (centres ±0.1625, ±0.4875);
    # orientation (x, y, z): gaps (0.35, 0.30) → cell (3, 2)
    assert h["triples"].sum() == 6
    cell = h[np.isclose(h["gap_ab"], 0.4875) & np.isclose(h["gap_bc"], 0.1625)]
    assert cell["triples"].item() == 1 and cell["pnt"].item() == 1.0
    # (x, z, y): gaps 0.65 (the top edge belongs to the last cell) and -0.30 → cell (3, 1)
    cell = h[np.isclose(h["gap_ab"], 0.4875) & np.isclose(h["gap_bc"], -0.1625)]
    assert cell["triples"].item() == 1
    assert h["sntd"].dropna().gt(0).all()
    smooth = gap_heatmap(stack, win_rates=wr, grid=4, sigma=1.0)
    assert np.allclose(smooth["pnt"].dropna(), 1.0)  # a constant field stays constant


def test_patterns_table_counts_each_b1_pattern():
    # every one of the 27 outcome patterns once, as 27 graphs of one judge: each of the 14 numbered
    # non-transitive patterns is counted exactly once, in the paper's order
    combos = list(itertools.product(">~<", repeat=3))
    adj = np.stack([triangle(c) for c in combos])
    k = keys(len(combos))
    k["judge"] = "j"
    stack = GraphStack(("A", "B", "C"), adj, np.ones_like(adj), k)
    t = pattern_summary(stack)
    assert t["pnt_pattern"].tolist() == list(range(1, 15)) and (t["triples"] == 1).all()
    assert t["outcomes"].tolist() == ["A{}B, B{}C, A{}C".format(*p) for p in PAPER_14]
    assert t["share_of_triples"].sum() == pytest.approx(14 / 27)
    assert t.loc[t["kind"] == "cycle", "pnt_pattern"].tolist() == [2, 13]
    # on random graphs the per-pattern counts add up to PNT's non-transitive triples, per judge
    rng = np.random.default_rng(2)
    T, n = 30, 5
    o = rng.choice(3, size=(T, n, n))
    iu, ju = np.triu_indices(n, 1)
    a = np.zeros((T, n, n), dtype=bool)
    a[:, iu, ju] = o[:, iu, ju] != 1
    a[:, ju, iu] = o[:, iu, ju] != 0
    kk = keys(T)
    kk["judge"] = np.where(np.arange(T) % 2, "j1", "j2")
    st = GraphStack(tuple("abcde"), a, np.ones_like(a), kk)
    pats = pattern_summary(st).groupby("judge")["triples"].sum()
    pnt = pnt_summary(st).set_index("judge")["nontransitive"]
    assert pats.to_dict() == pnt.to_dict()
    # and by hand for one triple-pattern: strict cycles a>b>c>a with a < b < c in name order (pattern 2)
    want = sum(
        1
        for t in range(T)
        for x, y, z in itertools.combinations(range(n), 3)
        if a[t, x, y] and not a[t, y, x] and a[t, y, z] and not a[t, z, y] and a[t, z, x] and not a[t, x, z]
    )
    got = pattern_summary(st, by=("dataset",))
    assert got.loc[got["pnt_pattern"] == 2, "triples"].item() == want


def two_judge_verdicts():
    """j1: one strict cycle x>y>z>x; j2: the transitive x>y>z; both on the same prompt."""
    cyc = soft_verdicts({("x", "y"): 0.9, ("y", "z"): 0.9, ("x", "z"): 0.1}).assign(judge="j1")
    lin = soft_verdicts({("x", "y"): 0.9, ("y", "z"): 0.9, ("x", "z"): 0.9}).assign(judge="j2")
    return pd.concat([cyc, lin], ignore_index=True)


def test_heatmap_keeps_judges_apart():
    v = two_judge_verdicts()
    wr = {"x": 0.8, "y": 0.5, "z": 0.2}
    h = gap_heatmap(build_stack(v), win_rates=wr, grid=5, sigma=0.0)
    assert set(h["judge"]) == {"j1", "j2"} and len(h) == 2 * 25
    for judge, want in (("j1", 1.0), ("j2", 0.0)):  # mixed judges would give 0.5 in every cell
        g = h[h["judge"] == judge]
        assert g["triples"].sum() == 6
        assert np.allclose(g["pnt"].dropna(), want) and g["pnt"].notna().sum() == (g["triples"] > 0).sum()
    # the centre cell of an odd grid is exactly 0 (not 2.8e-17), and so is every centre that should be
    centres = np.linspace(-0.6, 0.6, 6)
    centres = (centres[:-1] + centres[1:]) / 2
    assert sorted(set(h["gap_ab"])) == pytest.approx(sorted(centres))
    assert (h["gap_ab"] == 0.0).sum() == 2 * 5 and not np.signbit(h.loc[h["gap_ab"] == 0.0, "gap_ab"]).any()
    # default win rates are each judge's own: j2 alone gives the same grid as j2 inside the pair
    alone = gap_heatmap(build_stack(v[v["judge"] == "j2"]), grid=7, sigma=1.0)
    inside = gap_heatmap(build_stack(v), grid=7, sigma=1.0)
    pd.testing.assert_frame_equal(inside[inside["judge"] == "j2"].reset_index(drop=True), alone)
    # j2's own win rates by hand: x 2/2, y 1/2, z 0/2 → span 1, edges −1, −5/7, …, 3/7, 5/7, 1;
    # orientation (x, y, z) has gaps (0.5, 0.5): the cell [3/7, 5/7)², centre 4/7
    cell = alone[np.isclose(alone["gap_ab"], 4 / 7) & np.isclose(alone["gap_bc"], 4 / 7)]
    assert cell["triples"].item() == 1


def test_win_rate_file_is_checked():
    good = pd.DataFrame({"model": ["x", "y", "z"], "win_rate": ["57.5", "30", "5.8"]})
    s = read_win_rates(good)
    assert s.to_dict() == {"x": 57.5, "y": 30.0, "z": 5.8}
    for frame, needle in (
        (pd.DataFrame({"name": ["x"], "win_rate": [1]}), "lacks model"),
        (pd.DataFrame({"model": ["x", "y"], "win_rate": ["0.5", "high"]}), "line 3"),
        (pd.DataFrame({"model": ["x", "x"], "win_rate": [0.5, 0.4]}), "appears twice"),
    ):
        with pytest.raises(LensError, match=needle):
            read_win_rates(frame)
    v = two_judge_verdicts()
    with pytest.raises(LensError, match="No win rate for model"):
        gap_heatmap(build_stack(v), win_rates={"x": 1.0, "y": 0.5})
