"""Keep-K truncation against a direct sort (paper 000, Section 3.1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.graphs.key_order import key_order
from engine.graphs.truncation import select_keep_k, truncation_scores


def _keys(prompt_ids, categories=None, variants=None):
    n = len(prompt_ids)
    return pd.DataFrame({
        "dataset": ["d"] * n, "judge": ["j"] * n, "prompt_id": [str(p) for p in prompt_ids],
        "variant": variants if variants is not None else [0] * n, "turn": [1] * n,
        "category": categories if categories is not None else ["c"] * n,
    })


def _direct(scores, keys, k):
    """Slow twin: Python sort by (score, natural key)."""
    def nat(p):
        try:
            return (0, float(p), "")
        except ValueError:
            return (1, 0.0, p)
    rows = sorted(range(len(scores)), key=lambda i: (scores[i], keys.dataset[i], keys.judge[i],
                                                      nat(keys.prompt_id[i]), keys.variant[i], keys.turn[i]))
    return sorted(rows[:k])


def test_scores_general_form():
    c = pd.DataFrame({"c3_bad": [3, 0, 1], "c4_bad": [2, 5, 0]})
    assert truncation_scores(c, mu=0.5).tolist() == [4.0, 2.5, 1.0]
    assert truncation_scores(c, lam3=2.0, lam4=1.0).tolist() == [8.0, 5.0, 2.0]
    assert truncation_scores(c, mu=0.5, lam4=3.0).tolist() == [9.0, 15.0, 1.0]  # lam4 wins over mu
    with pytest.raises(LensError, match="c4_bad"):
        truncation_scores(c[["c3_bad"]])
    # any real weights (the paper's λ ∈ ℝ²): scores may be negative
    assert truncation_scores(c, mu=-1).tolist() == [1.0, -5.0, 1.0]
    assert truncation_scores(c, lam3=-2.0, lam4=0.5).tolist() == [-5.0, 2.5, -2.0]
    for bad in (float("nan"), float("inf"), "x"):
        with pytest.raises(LensError, match="truncation weight"):
            truncation_scores(c, mu=bad)


def test_keep_k_matches_direct_sort_with_many_ties():
    rng = np.random.default_rng(0)
    for _trial in range(30):
        n = int(rng.integers(1, 60))
        ids = rng.permutation(n * 2)[:n]
        ids = [str(i) if i % 5 else f"q{i}" for i in ids]
        keys = _keys(ids, variants=list(rng.integers(0, 3, n)))
        scores = rng.integers(0, 4, n).astype(float)  # many equal scores
        for k in {1, n, int(rng.integers(1, n + 1))}:
            sel = select_keep_k(scores, keys, k)
            assert sel.index.tolist() == _direct(scores, keys, k)
            assert sel.threshold == scores[sel.index].max()
            # nothing outside the selection scores strictly below the threshold
            out = np.setdiff1d(np.arange(n), sel.index)
            assert (scores[out] >= sel.threshold).all()


def test_natural_prompt_id_order():
    keys = _keys(["10", "2", "1", "b", "a"])
    assert key_order(keys).tolist() == [2, 1, 0, 4, 3]
    sel = select_keep_k(np.zeros(5), keys, 2)
    assert sel.index.tolist() == [1, 2]  # prompts "1" and "2", not "1" and "10"


def test_per_category_matches_per_group_sort():
    rng = np.random.default_rng(1)
    n = 90
    cats = list(rng.choice(["x", "y", "z"], n))
    keys = _keys(list(range(n)), categories=cats)
    scores = rng.integers(0, 6, n).astype(float)
    sel = select_keep_k(scores, keys, 4, per_category=True)
    expect = []
    for c in ["x", "y", "z"]:
        rows = [i for i in range(n) if cats[i] == c]
        sub = keys.iloc[rows].reset_index(drop=True)
        expect += [rows[j] for j in _direct(scores[rows], sub, 4)]
        assert sel.threshold[c] == max(scores[rows[j]] for j in _direct(scores[rows], sub, 4))
    assert sel.index.tolist() == sorted(expect)


def test_invalid_k_is_one_sentence():
    keys = _keys([1, 2, 3], categories=["a", "a", "b"])
    for bad in (0, -1, 2.5, "x"):
        with pytest.raises(LensError, match="K must"):
            select_keep_k(np.zeros(3), keys, bad)


def test_k_above_a_group_keeps_it_all_and_says_so():
    keys = _keys([1, 2, 3, 4, 5], categories=["a", "a", "a", "b", "c"])
    scores = np.array([3.0, 1.0, 2.0, 0.0, 5.0])
    sel = select_keep_k(scores, keys, 2, per_category=True)
    assert sel.index.tolist() == [1, 2, 3, 4]  # a: the 2 smallest; b and c: all they have
    assert sel.capped == {"b": 1, "c": 1} and "b keeps all 1" in sel.note
    assert sel.threshold.to_dict() == {"a": 2.0, "b": 0.0, "c": 5.0}
    whole = select_keep_k(scores, keys, 9)
    assert whole.index.tolist() == [0, 1, 2, 3, 4] and whole.capped == {"the pool": 5}
    assert select_keep_k(scores, keys, 5).capped == {} and select_keep_k(scores, keys, 5).note == ""


def test_negative_weights_order_by_score_then_key():
    c = pd.DataFrame({"c3_bad": [2, 0, 1, 3, 0], "c4_bad": [0, 4, 1, 6, 1]})
    keys = _keys(["3", "1", "10", "2", "20"])
    s = truncation_scores(c, lam3=1.0, lam4=-0.5)  # [2, -2, 0.5, 0, -0.5]
    assert s.tolist() == [2.0, -2.0, 0.5, 0.0, -0.5]
    assert select_keep_k(s, keys, 3).index.tolist() == sorted([1, 4, 3])
    assert select_keep_k(s, keys, 3).threshold == 0.0
    tied = truncation_scores(c, lam3=0.0, lam4=0.0)  # all zero: the key decides (1 < 2 < 3 < 10 < 20)
    assert select_keep_k(tied, keys, 3).index.tolist() == _direct(tied, keys, 3) == [0, 1, 3]


def _stack_with_kinds(seed=0, n=5, prompts=6):
    """Random tournaments: per prompt an original, two paraphrases and two sampling replicates."""
    from engine.graphs.stack import GraphStack

    rng = np.random.default_rng(seed)
    rows, adj = [], []
    for q in range(prompts):
        for v, kind in enumerate(["original", "paraphrase", "paraphrase", "sample", "sample"]):
            a = np.zeros((n, n), bool)
            iu, ju = np.triu_indices(n, 1)
            fwd = rng.random(iu.size) < 0.6
            a[iu[fwd], ju[fwd]] = True
            a[ju[~fwd], iu[~fwd]] = True
            adj.append(a)
            rows.append({"dataset": "d", "judge": "j", "prompt_id": str(q + 1), "variant": v, "turn": 1,
                         "category": "c" + str(q % 2), "variant_kind": kind})
    adj = np.array(adj)
    obs = np.ones_like(adj)
    obs[:, range(n), range(n)] = False
    return GraphStack(tuple(f"m{i}" for i in range(n)), adj, obs, pd.DataFrame(rows))


def test_keep_k_graphs_pools_table_and_threshold():
    from engine.graphs.cycles import cycle_counts
    from engine.graphs.truncation import keep_k_graphs

    st = _stack_with_kinds()
    counts = cycle_counts(st)
    kinds = st.keys["variant_kind"].to_numpy()
    for pool, allowed in (("perturbed", {"original", "paraphrase"}), ("sampling", {"original", "sample"}),
                          ("all", {"original", "paraphrase", "sample"})):
        for mu, lam3 in ((1.0, 1.0), (-0.5, 2.0)):
            s = truncation_scores(counts, mu=mu, lam3=lam3)
            res = keep_k_graphs(st, 7, mu=mu, lam3=lam3, pool=pool)
            pos = np.flatnonzero(np.isin(kinds, list(allowed)))
            direct = pos[_direct(s[pos], st.keys.iloc[pos].reset_index(drop=True), 7)]
            assert res.index.tolist() == sorted(direct.tolist()) and res.n_pool == pos.size
            assert set(kinds[res.index]) <= allowed
            t = res.table
            assert t["score"].tolist() == sorted(t["score"]) and res.threshold == t["score"].max()
            assert np.allclose(t["score"], lam3 * t["c3_bad"] + mu * t["c4_bad"])
            # the table lists the kept graphs in (score, natural key) order
            ordered = sorted(res.index, key=lambda i: (s[i], int(st.keys.prompt_id[i]), st.keys.variant[i]))
            assert list(zip(t.prompt_id, t.variant, strict=True)) == [
                (st.keys.prompt_id[i], st.keys.variant[i]) for i in ordered]
    res = keep_k_graphs(st, 4, per_category=True, pool="all")
    assert res.table.groupby("category").size().to_dict() == {"c0": 4, "c1": 4}
    big = keep_k_graphs(st, 500, pool="perturbed")
    assert big.index.size == 18 and "keeps all 18" in big.note and "12 graph(s) outside" in big.note


def test_default_pool_never_keeps_sampling_replicates():
    from engine.graphs.stack import build_stack
    from engine.graphs.truncation import keep_k_graphs
    from engine.ingest.synthetic import SyntheticParams, generate

    d = generate(SyntheticParams(n_models=6, categories=2, prompts=10, paraphrases=4, samples=4, seed=1))
    st = build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan))
    res = keep_k_graphs(st, 150)  # more than the 2 × 10 × 5 originals and paraphrases
    assert (res.table["variant_kind"] != "sample").all() and res.index.size == 100 and res.n_pool == 100
    assert (keep_k_graphs(st, 150, pool="all").table["variant_kind"] == "sample").any()


def test_leaderboard_cli_per_category_caps_small_categories(shipped_db, capsys):
    import io

    import choix

    from engine.__main__ import main
    from engine.graphs.cycles import cycle_counts
    from engine.graphs.stack import build_stack
    from engine.store.connection import Store

    assert main(["--db", str(shipped_db), "leaderboard", "--dataset", "vicuna80", "--judge", "gpt-4",
                 "--keep-k", "5", "--per-category", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("model")
    with Store(shipped_db) as store:
        st = build_stack(store.verdicts("vicuna80", judge="gpt-4"))
    sel = select_keep_k(truncation_scores(cycle_counts(st)), st.keys, 5, per_category=True)
    sizes = st.keys["category"].value_counts()
    assert sel.capped == {c: int(m) for c, m in sizes.items() if m < 5} and sel.capped  # math has 3 graphs
    assert sel.index.size == int(np.minimum(sizes, 5).sum())
    W, T = st.win_tie_matrices(sel.index)
    ref = choix.ilsr_pairwise_dense(W + 0.5 * T, tol=1e-12, max_iter=100_000)
    got = table["score"].reindex(list(st.models)).to_numpy()
    np.testing.assert_allclose(got, ref - ref.mean(), atol=1e-6)
