"""Leaderboard and Truncation pages: counts recomputed with pandas, cycle scores with networkx."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import (  # noqa: F401
    app,
    app_at,
    assert_clean,
    bad_triads_bruteforce,
    combined_outcomes,
    graph_digraph,
    judge_of,
)

PAPER_JUDGE = "gpt-4"
"""Truncation tests use one judge's graphs, as paper 000 does (the app opens on all judges)."""


def _win_loss_tie(pairs: pd.DataFrame) -> pd.DataFrame:
    """wins / losses / ties per model over the given graphs' combined outcomes (pandas only)."""
    rows = []
    for lo, hi, out in pairs[["lo", "hi", "outcome"]].itertuples(index=False):
        if out == "tie":
            rows += [(lo, 0, 0, 1), (hi, 0, 0, 1)]
        else:
            w, loser = (lo, hi) if out == "lo" else (hi, lo)
            rows += [(w, 1, 0, 0), (loser, 0, 1, 0)]
    df = pd.DataFrame(rows, columns=["model", "wins", "losses", "ties"])
    return df.groupby("model").sum()


def _bad_cycles(g: nx.DiGraph, length: int) -> int:
    """Directed simple cycles of ``length`` that are not made of tie edges only (networkx)."""
    n = 0
    for cyc in nx.simple_cycles(g, length_bound=length):
        if len(cyc) != length:
            continue
        ring = list(zip(cyc, cyc[1:] + cyc[:1], strict=True))
        if not all(g.has_edge(b, a) for a, b in ring):
            n += 1
    return n


def test_leaderboard_counts_and_cycle_columns(app, shipped_store):
    assert_clean(app)
    table = app.dataframe[0].value.set_index("model")
    judge = judge_of(app)
    verdicts = shipped_store.verdicts("vicuna80", judge=judge)
    pairs = combined_outcomes(verdicts)
    # one vote per judge and annotator on a pair of a graph (several human raters: several votes)
    votes = combined_outcomes(
        verdicts.assign(judge=verdicts["judge"] + "|" + verdicts["annotator"].fillna(""))
    )
    expect = _win_loss_tie(votes)
    assert (table[["wins", "losses", "ties"]].sort_index() == expect.sort_index()).all().all()
    per_model = {m: 0 for m in table.index}
    for _, g in pairs.groupby(["judge", "prompt_id", "variant", "turn"]):
        for tri in bad_triads_bruteforce(graph_digraph(g)):
            for m in tri:
                per_model[m] += 1
    assert table["bad_triads"].to_dict() == per_model
    # rows in the ranker's order: rank and score agree going down (rank (UB) need not, issue 25)
    assert list(table["rank"]) == sorted(table["rank"])
    assert list(table["score"]) == sorted(table["score"], reverse=True)
    # the interval as +x / -y: both parts non-negative (the score lies inside its interval)
    parts = table["interval"].str.extract(r"^\+([0-9.]+) / -([0-9.]+)$").astype(float)
    assert parts.notna().all().all() and (parts >= 0).all().all()
    # votes and prompts per model, recomputed from the vote units above
    assert (table["votes"] == table[["wins", "losses", "ties"]].sum(axis=1)).all()
    per_prompt = pd.concat([pairs[["prompt_id", "lo"]].rename(columns={"lo": "m"}),
                            pairs[["prompt_id", "hi"]].rename(columns={"hi": "m"})]).drop_duplicates()
    assert table["n_prompts"].sort_index().tolist() == per_prompt.groupby("m").size().sort_index().tolist()
    assert {b.label for b in app.get("download_button")} == {"Download CSV", "Download JSON"}


def test_keep_k_slider_reranks_on_the_k_most_consistent_graphs(app, shipped_store):
    from engine.ranking.reference import reference_for_dataset

    app.selectbox(key="judge").set_value(PAPER_JUDGE).run()  # truncation is per judge (paper 000)
    all_graphs = app.dataframe[0].value.set_index("model")  # the Leaderboard page: every graph
    at = app.switch_page("app_pages/2_truncation.py").run()
    assert_clean(at)
    judge = judge_of(at)
    pairs = combined_outcomes(shipped_store.verdicts("vicuna80", judge=judge))
    n_graphs = pairs.groupby(["judge", "prompt_id", "variant", "turn"]).ngroups
    # opens on half the pool (paper 000 keeps 25 of each category's 50 graphs), not on every graph
    assert at.slider(key="keep_k").value == round(n_graphs / 2)
    before = at.dataframe[0].value.set_index("model")
    mapped = set(reference_for_dataset("vicuna80").index)
    assert (before["ref_rank"] == "—").sum() == len(set(before.index) - mapped) > 0
    assert before.loc[sorted(mapped & set(before.index)), "ref_diff"].str.match(r"^[+-]\d+$").all()

    mu = float(at.select_slider(key="mu").value)
    scores = {}
    for key, g in pairs.groupby(["judge", "prompt_id", "variant", "turn"]):
        dg = graph_digraph(g)
        scores[key] = _bad_cycles(dg, 3) + mu * _bad_cycles(dg, 4)
    s = np.sort(np.array(list(scores.values())))
    k = next(
        k for k in range(10, len(s)) if s[k - 1] < s[k] and k != round(n_graphs / 2)
    )  # no tie at the cut
    at.slider(key="keep_k").set_value(k).run()
    assert_clean(at)
    after = at.dataframe[0].value.set_index("model")
    kept = {key for key, v in scores.items() if v < s[k]}
    assert len(kept) == k
    mask = [
        key in kept
        for key in pairs[["judge", "prompt_id", "variant", "turn"]].itertuples(index=False, name=None)
    ]
    expect = _win_loss_tie(pairs[mask])
    assert (after[["wins", "losses", "ties"]].sort_index() == expect.sort_index()).all().all()
    assert not after["score"].sort_index().equals(before["score"].sort_index())
    all_rank = all_graphs["score"].rank(ascending=False, method="min")  # bt: no equal scores here
    change = (all_rank - after["rank"]).sort_index()
    assert after["rank_change"].sort_index().astype(int).tolist() == change.astype(int).tolist()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs kept"] == f"{k} of {len(scores)}"
    assert metrics["Models whose rank changed"] == str(int((change != 0).sum()))
    # the K survives a visit to another page
    at = at.switch_page("app_pages/3_cycles.py").run()
    at = at.switch_page("app_pages/2_truncation.py").run()
    assert at.slider(key="keep_k").value == k


def test_protocol_table_stays_until_mu_changes(app_at):
    at = app_at("app_pages/2_truncation.py", judge=PAPER_JUDGE)  # the protocols compare one judge's graphs
    # the expander is drawn once opened: a slider move does not re-send its caption and button unseen
    assert "protocol_go" not in [b.key for b in at.button]
    at.session_state["protocol_open"] = True
    at.run()
    at.button(key="protocol_go").click().run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "no spread" in d.value.columns)
    # vicuna80: about ten original prompts per category, so every truncation cell has no spread, and
    # the table says why
    trunc = table.set_index("protocol").iloc[0]
    n_cats = int(trunc["no spread"].split(" of ")[1])
    assert trunc["no spread"] == f"{n_cats} of {n_cats}" and "< keep 25" in trunc["why"]
    # a visit to another page drops the expander's state; the table computed for this μ opens it again
    at = at.switch_page("app_pages/3_cycles.py").run()
    at = at.switch_page("app_pages/2_truncation.py").run()
    assert_clean(at)
    assert any("no spread" in d.value.columns for d in at.dataframe)
    at.slider(key="keep_k").set_value(12).run()
    assert any("no spread" in d.value.columns for d in at.dataframe)  # a K move keeps it
    at.select_slider(key="mu").set_value(0.1).run()
    assert_clean(at)
    assert not any("no spread" in d.value.columns for d in at.dataframe)  # it depends on μ
    assert at.button(key="protocol_go") is not None


def test_every_ranker_renders(app):
    from engine.rankers import RANKERS

    for name in ("davidson", "copeland", "pged", "elspr"):
        assert name in RANKERS
        app.selectbox(key="ranker").set_value(name).run()
        assert_clean(app)
        table = app.dataframe[0].value
        assert len(table) == 9 and set(itertools.chain(table["rank_ub"])) <= set(range(1, 10))


def test_keep_k_curve_at_all_graphs_matches_choix_and_scipy(app_at, shipped_store):
    import choix
    from scipy.stats import spearmanr

    from engine.ranking.reference import reference_for_dataset

    at = app_at("app_pages/2_truncation.py")
    assert_clean(at)
    from curve_svg_read import page_curves

    curve = page_curves(at)[0]  # keep-K, first
    assert curve["root"]["data-x"] == "k"
    # each marker carries its row's point estimate (the "all kept graphs" fit)
    ks = np.array([m["x"] for m in curve["markers"]])
    ys = np.array([m["point"] for m in curve["markers"]])
    judge = judge_of(at)
    pairs = combined_outcomes(shipped_store.verdicts("vicuna80", judge=judge))
    assert ks[-1] == pairs.groupby(["judge", "prompt_id", "variant", "turn"]).ngroups

    ref = reference_for_dataset("vicuna80")
    # every model of the graphs is fitted (issue 25: as compare and the leaderboard rank); the distance
    # reads the order of the reference-rated ones
    models = sorted(set(pairs["lo"]) | set(pairs["hi"]))
    pos = {m: i for i, m in enumerate(models)}
    w = np.zeros((len(models), len(models)))
    for lo, hi, out in pairs[["lo", "hi", "outcome"]].itertuples(index=False):
        i, j = pos[lo], pos[hi]
        if out == "lo":
            w[i, j] += 1
        elif out == "hi":
            w[j, i] += 1
        else:
            w[i, j] += 0.5
            w[j, i] += 0.5
    # choix: comp_mat[i, j] = number of times i beat j
    strength = choix.ilsr_pairwise_dense(w, alpha=0.0, tol=1e-12, max_iter=10_000)
    rated = [i for i, m in enumerate(models) if m in ref.index]
    assert len(rated) < len(models)  # the judge's graphs hold models the reference does not rate
    rho = spearmanr(strength[rated], ref.reindex([models[i] for i in rated]).to_numpy()).statistic
    assert abs(ys[-1] - (1 - rho) / 2) < 1e-9
