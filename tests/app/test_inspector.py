"""engine.views.inspector and engine.views.graph_html: the graph view against brute force (pandas plurality +
enumeration, networkx for SCCs and acyclicity), the triad view against the stored verdicts, and
the drawing's HTML (no external resource, the chosen triad highlighted, payloads kept as text)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd
import pytest

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import bad_triads_bruteforce, combined_outcomes, graph_digraph

from engine.graphs.stack import build_stack
from engine.views.graph_html import ORANGE, VIOLET, network_page, page_panels, vis_network_js
from engine.views.inspector import graph_choices, graph_position, graph_view, pair_changes, question_text
from engine.views.inspector_draw import inspector_html
from engine.views.inspector_triads import triad_view

PAYLOAD = "<script>window.__xss=1</script><img src=x onerror=window.__xss=1>"


def _verdicts(seed: int, n_prompts: int = 8) -> pd.DataFrame:
    """Random verdicts, two per pair (both orders) on most pairs, a few pairs never compared."""
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(5)] + [f"x {PAYLOAD}"]
    rows = []
    for p in range(n_prompts):
        for a, b in itertools.combinations(models, 2):
            if rng.random() < 0.1:
                continue
            for first, second in ((a, b), (b, a))[: 1 + int(rng.random() < 0.8)]:
                rows.append({"prompt_id": f"p{p}", "model_a": first, "model_b": second, "order": "AB",
                             "winner": rng.choice(["A", "B", "tie"], p=[0.4, 0.35, 0.25]),
                             "explanation": f"why {first} {second}"})
    df = pd.DataFrame(rows)
    df["dataset"], df["judge"], df["variant"], df["turn"], df["variant_kind"] = "d", "j", 0, 1, "original"
    df["category"], df["prob_a"] = "c", np.nan
    df["verdict_id"] = np.arange(len(df))
    return df


def _relation(pairs: pd.DataFrame, x: str, y: str) -> str:
    """'>' when x beat y in the combined outcomes, '<' when y beat x, '~' for a tie."""
    lo, hi = min(x, y), max(x, y)
    out = pairs[(pairs["lo"] == lo) & (pairs["hi"] == hi)]["outcome"].iloc[0]
    if out == "tie":
        return "~"
    return ">" if (out == "lo") == (x == lo) else "<"


@pytest.mark.parametrize("seed", [0, 1])
def test_graph_view_matches_bruteforce(seed):
    v = _verdicts(seed)
    stack = build_stack(v)
    all_pairs = combined_outcomes(v)
    for t in range(stack.T):
        view = graph_view(stack, t)
        pairs = all_pairs[all_pairs["prompt_id"] == view.key["prompt_id"]]
        g = graph_digraph(pairs)
        assert set(view.models) == set(g.nodes)
        expected = bad_triads_bruteforce(g)
        triads = view.triads
        assert {
            frozenset(r) for r in triads[["model_a", "model_b", "model_c"]].itertuples(index=False)
        } == expected
        pos = {m: k for k, m in enumerate(view.models)}
        for a, b in itertools.combinations(view.models, 2):
            assert view.pair_bad[pos[a], pos[b]] == sum({a, b} <= tri for tri in expected)
        for m in view.models:
            assert view.node_bad[pos[m]] == sum(m in tri for tri in expected)
        for a, b, c, kind in triads[["model_a", "model_b", "model_c", "kind"]].itertuples(index=False):
            rel = (_relation(pairs, a, b), _relation(pairs, b, c), _relation(pairs, a, c))
            assert rel == {"cycle": (">", ">", "<"), "tied-ends": (">", ">", "~"),
                           "unchained-ties": ("~", "~", ">")}[kind]
        # layout order: Copeland score in this graph (wins + half ties), best first, then by name
        score = {
            m: sum(
                {">": 1.0, "~": 0.5, "<": 0.0}[_relation(pairs, m, o)]
                for o in g.nodes
                if o != m and (min(m, o), max(m, o)) in set(zip(pairs["lo"], pairs["hi"], strict=True))
            )
            for m in view.models
        }
        assert [view.models[k] for k in view.order] == sorted(view.models, key=lambda m: (-score[m], m))


def test_pair_changes_hand_example():
    # 0 > 1 kept; 0 > 2 re-oriented; 1 > 2 removed; 0 ~ 3 resolved; 1 ~ 3 kept; 2 ~ 3 set aside;
    # 3 > 4 made a tie; 0, 4 never compared but ordered after
    adj = np.zeros((5, 5), dtype=bool)
    obs = np.zeros((5, 5), dtype=bool)
    for i, j in ((0, 1), (0, 2), (1, 2), (3, 4)):
        adj[i, j] = True
        obs[i, j] = obs[j, i] = True
    for i, j in ((0, 3), (1, 3), (2, 3)):
        adj[i, j] = adj[j, i] = True
        obs[i, j] = obs[j, i] = True
    after = np.zeros((5, 5), dtype=bool)
    after[0, 1] = after[2, 0] = after[3, 0] = after[1, 3] = after[3, 1] = True
    after[3, 4] = after[4, 3] = True
    after[0, 4] = True
    out = pair_changes(adj, obs, after).set_index(["i", "j"])["change"].to_dict()
    assert out == {(0, 1): "kept", (0, 2): "re-oriented", (1, 2): "removed", (0, 3): "tie resolved",
                   (1, 3): "tie kept", (2, 3): "tie set aside", (3, 4): "made a tie", (0, 4): "added"}


def test_denoised_graphs_follow_their_definitions():
    stack = build_stack(_verdicts(4))
    for t in range(stack.T):
        view = graph_view(stack, t)
        strict = view.adj & ~view.adj.T & view.observed
        # PGED: a DAG inside the strict wins; the removed edges are exactly the strict edges it dropped
        p = view.denoised["PGED"]
        assert nx.is_directed_acyclic_graph(nx.DiGraph(list(zip(*np.nonzero(p.adj), strict=True))))
        assert not (p.adj & ~strict).any()
        removed = {(i, j) if strict[i, j] else (j, i) for i, j in
                   p.changes.loc[p.changes["change"] == "removed", ["i", "j"]].itertuples(index=False)}
        assert removed == set(zip(*np.nonzero(strict & ~p.adj), strict=True))
        n_ties = int((view.adj & view.adj.T & view.observed).sum() // 2)
        assert p.counts["tie set aside"] == n_ties
        # ELSPR: inside a strongly connected component pairs are ordered by out-degree (equal → tie),
        # every other relation is kept (networkx SCCs; a tie is two edges)
        e = view.denoised["ELSPR"]
        g = nx.DiGraph()
        g.add_nodes_from(range(len(view.models)))
        g.add_edges_from(zip(*np.nonzero(view.adj & view.observed), strict=True))
        comp = {v: k for k, c in enumerate(nx.strongly_connected_components(g)) for v in c}
        outdeg = dict(g.out_degree())
        for i, j in itertools.combinations(range(len(view.models)), 2):
            if comp[i] == comp[j]:
                want = (outdeg[i] >= outdeg[j], outdeg[j] >= outdeg[i])
            else:
                want = (
                    bool(view.adj[i, j] and view.observed[i, j]),
                    bool(view.adj[j, i] and view.observed[i, j]),
                )
            assert (bool(e.adj[i, j]), bool(e.adj[j, i])) == want


def test_triad_view_groups_the_stored_verdicts(shipped_store):
    verdicts = shipped_store.verdicts("vicuna80", judge="gpt-4")
    stack = build_stack(verdicts)
    pairs = combined_outcomes(verdicts)
    choices = graph_choices(stack)
    # natural order: vicuna80's prompt ids are whole numbers, so 2 comes before 10
    assert list(choices) == sorted(set(stack.keys["prompt_id"].astype(str)), key=int)
    checked = 0
    for prompt in list(choices)[:4]:
        t = graph_position(stack, prompt, 0, "gpt-4")
        view = graph_view(stack, t)
        answers = shipped_store.answer_texts("vicuna80", prompt)
        mine = pairs[pairs["prompt_id"] == prompt]
        raw = verdicts[verdicts["prompt_id"] == prompt]
        for k in range(len(view.triads)):
            tv = triad_view(view, k, verdicts, answers)
            a, b, c = tv.models
            assert [(p.a, p.b) for p in tv.pairs] == [(a, b), (b, c), (a, c)]
            for p in tv.pairs:
                rows = raw[((raw["model_a"] == p.a) & (raw["model_b"] == p.b))
                           | ((raw["model_a"] == p.b) & (raw["model_b"] == p.a))]
                assert len(p.verdicts) == len(rows) == 2
                # shipped verdicts: order AB, so the first-shown answer is model_a
                want = sorted((r.model_a, {"A": r.model_a, "B": r.model_b, "tie": "tie"}.get(r.winner, ""))
                              for r in rows.itertuples())
                assert sorted((line.first, line.winner or "") for line in p.verdicts) == want
                rel = _relation(mine, p.a, p.b)
                assert p.result == {">": p.a, "<": p.b, "~": "tie"}[rel]
                valid = [line.winner for line in p.verdicts if line.winner is not None]
                if len(valid) == 1:  # the other verdict is an unparsable judge output
                    assert p.reason == "one verdict"
                else:
                    assert p.reason == ("both orders agree" if len(set(valid)) == 1 else "orders disagree")
                assert p.heading == f"{p.a} vs {p.b}: {p.reason} → {p.result_text}"
                assert all(line.rationale == r for line, r in
                           zip(p.verdicts, rows.sort_values("verdict_id")["explanation"], strict=True))
            for m in tv.models:
                assert tv.answers[m] == answers.loc[answers["model"] == m, "text"].iloc[0]
            checked += 1
    assert checked > 20


def test_question_text_and_missing():
    prompts = pd.DataFrame({"prompt_id": ["1", "1"], "variant": [0, 1], "turn": [1, 1], "text": ["q0", None]})
    assert question_text(prompts, "1", 0, 1) == "q0"
    assert question_text(prompts, "1", 1, 1) is None and question_text(prompts, "2", 0, 1) is None


def test_inspector_html_is_self_contained_and_highlights_the_triad():
    stack = build_stack(_verdicts(2))
    t = next(t for t in range(stack.T) if len(graph_view(stack, t).triads))
    view = graph_view(stack, t)
    page = inspector_html(view, "PGED", 0)
    # offline: vis-network inlined once, nothing fetched (no CDN, Bootstrap or link tags)
    assert page.count(vis_network_js()[:200]) == 1
    low = page.lower()
    assert (
        "<link" not in low and "<script src" not in low and "jsdelivr" not in low and "bootstrap" not in low
    )
    assert len(page) < 600_000
    # payload names only inside JSON with escaped angle brackets
    assert "<script>window.__xss" not in page and "<img src=x" not in page
    before, after = page_panels(page)
    names = {n["id"]: n["label"] for n in before["nodes"]}
    assert set(names.values()) == set(view.models)
    # every compared pair drawn once; strict as arrows, ties dashed without an arrow
    rel = view.adj & view.observed
    drawn = {frozenset((e["from"], e["to"])): e for e in before["edges"]}
    assert len(drawn) == len(before["edges"]) == int((view.observed.sum()) // 2)
    for e in before["edges"]:
        i, j = e["from"], e["to"]
        tie = bool(rel[i, j] and rel[j, i])
        assert e["arrows"]["to"]["enabled"] == (not tie) and bool(e["dashes"]) == tie
        assert rel[i, j]
    ia, ib, ic = (int(x) for x in view.triads.iloc[0][["ia", "ib", "ic"]])
    chosen = {frozenset((ia, ib)), frozenset((ib, ic)), frozenset((ia, ic))}
    for key, e in drawn.items():
        if key in chosen:
            assert e["color"]["color"] == VIOLET and e["width"] >= 4
        else:
            assert e["color"]["color"] != VIOLET and e["color"]["opacity"] < 0.5
    # bad-triad load: width grows with the number of bad triads through the pair
    widths = {k: e["width"] for k, e in drawn.items() if k not in chosen}
    loads = {k: view.pair_bad[tuple(k)] for k in widths}
    ordered = sorted(widths, key=lambda k: loads[k])
    assert all(widths[a] <= widths[b] for a, b in itertools.pairwise(ordered))
    # after PGED: removed edges orange in their old direction, ties it set aside not as live edges
    p = view.denoised["PGED"]
    orange = {(e["from"], e["to"]) for e in after["edges"] if e["color"]["color"] == ORANGE}
    strict = view.adj & ~view.adj.T & view.observed
    assert orange == set(zip(*np.nonzero(strict & ~p.adj), strict=True)) - {
        (i, j) for i, j in itertools.permutations((ia, ib, ic), 2)}
    assert before["title"].startswith(f"Before denoising · {len(view.triads)} bad triad")
    assert after["title"].startswith(f"After PGED · {p.counts['removed']} strict edge(s) removed")


def test_network_page_escapes_every_string():
    from engine.views.graph_html import Panel, edge, node

    page = network_page([Panel(PAYLOAD, [node(0, PAYLOAD, (0, 0), color="#000", size=3, title=PAYLOAD)],
                               [edge(0, 0, color="#000", width=1, title=PAYLOAD)])])
    assert "<script>window" not in page and "</script><img" not in page
    assert page_panels(page)[0]["title"] == PAYLOAD and page_panels(page)[0]["nodes"][0]["label"] == PAYLOAD
