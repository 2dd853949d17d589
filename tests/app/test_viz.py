"""engine.viz: escaping, the pyvis graph's edges, and the Cycles page frames against brute force."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pandas as pd

from engine.graphs import build_stack
from engine.viz import (
    category_participation,
    cycle_overview,
    edge_lists,
    escape_md,
    text_block,
    tournament_html,
    triad_edge_set,
)

PAYLOAD = "<script>window.__xss=1</script><img src=x onerror=window.__xss=1>"


def _random_verdicts(seed: int, n_models: int = 5, n_prompts: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(n_models)]
    rows = []
    for p in range(n_prompts):
        for a, b in itertools.combinations(models, 2):
            if rng.random() < 0.15:
                continue  # an incomplete graph
            rows.append({"prompt_id": str(p), "model_a": a, "model_b": b,
                         "winner": rng.choice(["A", "B", "tie"], p=[0.4, 0.4, 0.2]),
                         "category": "c1" if p % 2 else "c2"})
    df = pd.DataFrame(rows)
    df["dataset"], df["judge"], df["variant"], df["turn"], df["variant_kind"] = "d", "j", 0, 1, "original"
    df["prob_a"] = np.nan
    return df


def test_escape_md_and_text_block_render_no_markup():
    out = escape_md(PAYLOAD + " **bold** [x](y)")
    assert "<" not in out and ">" not in out
    assert "\\*\\*bold\\*\\*" in out and "\\[x\\]\\(y\\)" in out
    block = text_block("line one\n# not a heading\n<b>x</b>")
    assert block.split("  \n") == ["line one", "\\# not a heading", "&lt;b&gt;x&lt;/b&gt;"]


def test_tournament_html_has_every_edge_and_no_raw_payload():
    adj = np.zeros((4, 4), dtype=bool)
    adj[0, 1] = adj[1, 2] = adj[2, 0] = True  # a strict 3-cycle
    adj[0, 3] = adj[3, 0] = True  # a tie
    adj[3, 2] = True
    names = [PAYLOAD, "b", "c", "d"]
    page = tournament_html(names, adj, highlight=triad_edge_set([(0, 1, 2)]), removed=[(2, 0)])
    assert "<script>window.__xss" not in page and "<img src=x" not in page
    nodes = json.loads(re.search(r"nodes = new vis\.DataSet\((.*?)\);\n", page).group(1))
    edges = json.loads(re.search(r"edges = new vis\.DataSet\((.*?)\);\n", page).group(1))
    assert nodes[0]["label"] == PAYLOAD  # shown as text by vis.js, escaped only for the script block
    strict, ties = edge_lists(adj)
    assert len(strict) == 4 and ties == [(0, 3)]
    drawn = {(e["from"], e["to"]): e for e in edges}
    # (2, 0) is removed: drawn once, dotted, not as a live edge
    assert set(drawn) == {(0, 1), (1, 2), (3, 2), (0, 3), (2, 0)}
    assert drawn[(2, 0)]["label"] == "removed"
    assert drawn[(0, 3)]["dashes"] is True and drawn[(0, 1)]["color"] != drawn[(3, 2)]["color"]


def test_cycle_overview_matches_bruteforce():
    v = _random_verdicts(3)
    stack = build_stack(v)
    ov = cycle_overview(stack)
    n = stack.n
    pair = np.zeros((n, n), dtype=int)
    on_bad = np.zeros((stack.T, n), dtype=bool)
    for t in range(stack.T):
        a = stack.adj[t]
        for i, j, k in itertools.combinations(range(n), 3):
            bad = False
            for x, y, z in ((i, j, k), (i, k, j)):
                if a[x, y] and a[y, z] and a[z, x] and not (a[y, x] and a[z, y] and a[x, z]):
                    bad = True
            if bad:
                for p, q in ((i, j), (j, k), (i, k)):
                    pair[p, q] += 1
                    pair[q, p] += 1
                on_bad[t, [i, j, k]] = True
    assert (ov.per_pair.to_numpy() == pair).all()
    assert ov.total_bad_triads == pair.sum() // 6
    present = stack.observed.any(axis=2)
    cats = stack.keys["category"].to_numpy()
    for c in ("c1", "c2"):
        sel = cats == c
        expect = (on_bad[sel] & present[sel]).sum(axis=0) / present[sel].sum(axis=0)
        assert np.allclose(ov.category_rates.loc[c].to_numpy(), expect)
    assert category_participation(stack, on_bad.astype(int)).shape == (2, n)
    assert ov.graphs["link"].iloc[0].startswith("prompt-inspector?dataset=d&judge=j&prompt_id=")
