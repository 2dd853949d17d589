"""Leaderboard and Truncation pages: counts recomputed with pandas, cycle scores with networkx."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd
from apphelpers import app, assert_clean, bad_triads_bruteforce, combined_outcomes, graph_digraph  # noqa: F401


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
        ring = list(zip(cyc, cyc[1:] + cyc[:1]))
        if not all(g.has_edge(b, a) for a, b in ring):
            n += 1
    return n


def test_leaderboard_counts_and_cycle_columns(app, shipped_store):
    assert_clean(app)
    table = app.dataframe[0].value.set_index("model")
    judge = app.session_state["judge"]
    pairs = combined_outcomes(shipped_store.verdicts("vicuna80", judge=judge))
    expect = _win_loss_tie(pairs)
    assert (table[["wins", "losses", "ties"]].sort_index() == expect.sort_index()).all().all()
    per_model = {m: 0 for m in table.index}
    for _, g in pairs.groupby(["prompt_id", "variant", "turn"]):
        for tri in bad_triads_bruteforce(graph_digraph(g)):
            for m in tri:
                per_model[m] += 1
    assert table["bad_triads"].to_dict() == per_model
    assert list(table["rank"]) == sorted(table["rank"])
    assert (table["ci_low"] <= table["score"] + 1e-9).all() and (table["score"] <= table["ci_high"] + 1e-9).all()
    assert {b.label for b in app.get("download_button")} == {"Download CSV", "Download JSON"}


def test_keep_k_slider_reranks_on_the_k_most_consistent_graphs(app, shipped_store):
    at = app.switch_page("pages/2_truncation.py").run()
    assert_clean(at)
    judge = at.session_state["judge"]
    pairs = combined_outcomes(shipped_store.verdicts("vicuna80", judge=judge))
    mu = float(at.select_slider(key="mu").value)
    scores = {}
    for key, g in pairs.groupby(["prompt_id", "variant", "turn"]):
        dg = graph_digraph(g)
        scores[key] = _bad_cycles(dg, 3) + mu * _bad_cycles(dg, 4)
    s = np.sort(np.array(list(scores.values())))
    k = next(k for k in range(10, len(s)) if s[k - 1] < s[k])  # a K with no tie at the cut
    before = at.dataframe[0].value.set_index("model")
    at.slider(key="keep_k").set_value(k).run()
    assert_clean(at)
    after = at.dataframe[0].value.set_index("model")
    kept = {key for key, v in scores.items() if v < s[k]}
    assert len(kept) == k
    mask = [key in kept for key in pairs[["prompt_id", "variant", "turn"]].itertuples(index=False, name=None)]
    expect = _win_loss_tie(pairs[mask])
    assert (after[["wins", "losses", "ties"]].sort_index() == expect.sort_index()).all().all()
    assert not after["score"].sort_index().equals(before["score"].sort_index())
    change = (before["rank"] - after["rank"]).sort_index()
    assert after["rank_change"].sort_index().astype(int).tolist() == change.astype(int).tolist()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Graphs kept"] == f"{k} of {len(scores)}"
    assert metrics["Models whose rank changed"] == str(int((change != 0).sum()))


def test_every_ranker_renders(app):
    from engine.rankers import RANKERS

    for name in ("davidson", "copeland", "pged", "elspr"):
        assert name in RANKERS
        app.selectbox(key="ranker").set_value(name).run()
        assert_clean(app)
        table = app.dataframe[0].value
        assert len(table) == 9 and set(itertools.chain(table["rank"])) <= set(range(1, 10))
