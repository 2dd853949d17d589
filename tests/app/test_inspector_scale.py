"""The inspector at scale: the prompt picker (worst first, with text) against brute-force counts, and
the focused drawing of a 40-model graph checked against the full graph with networkx."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pandas as pd

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import app, bad_triads_bruteforce, combined_outcomes, graph_digraph  # noqa: F401

from engine.views.inspector import graph_view, prompt_menu
from engine.views.inspector_draw import FOCUS_LIMIT, focus_models, focus_summary, restrict_view


def test_prompt_menu_worst_first_with_text(shipped_store):
    from engine.graphs.stack import build_stack
    from engine.views.viz import cycle_overview

    verdicts = shipped_store.verdicts("vicuna80", judge="gpt-4")
    ov = cycle_overview(build_stack(verdicts))
    menu = prompt_menu(ov.graphs, shipped_store.prompt_texts("vicuna80"))
    pairs = combined_outcomes(verdicts)
    brute = {str(p): len(bad_triads_bruteforce(graph_digraph(g))) for p, g in pairs.groupby("prompt_id")}
    assert menu.set_index("prompt_id")["bad_triads"].to_dict() == brute
    s = menu["s_mu"].to_numpy()
    assert (np.diff(s) <= 0).all()  # worst first
    first = menu.iloc[0]
    n = first["bad_triads"]
    assert first["label"].startswith(f"{first['prompt_id']} · {n} bad triad{'' if n == 1 else 's'} · S_μ ")
    texts = shipped_store.prompt_texts("vicuna80")
    q = (
        texts[(texts["prompt_id"].astype(str) == first["prompt_id"])]
        .sort_values(["variant", "turn"])
        .iloc[0]["text"]
    )
    assert " ".join(q.split())[:30] in first["label"]


def _big_graph(n: int = 40):
    """A 40-model tournament: a strict order except for a 3-cycle among m05, m17, m30 and a tie
    contradiction among m10, m11, m12; some pairs never compared."""
    from engine.graphs.stack import build_stack

    names = [f"m{i:02d}" for i in range(n)]
    rows = []
    for i, j in itertools.combinations(range(n), 2):
        if (i * 7 + j) % 5 == 0:
            continue  # never compared
        rows.append((names[i], names[j], "A"))
    flip = {("m05", "m30"), ("m10", "m12")}
    rows = [
        (
            a,
            b,
            "B" if (a, b) == ("m05", "m30") else ("tie" if (a, b) in {("m10", "m11"), ("m11", "m12")} else w),
        )
        for a, b, w in rows
        if (a, b) not in flip or (a, b) == ("m05", "m30")
    ]
    rows += [
        ("m05", "m17", "A"),
        ("m17", "m30", "A"),
        ("m10", "m12", "A"),
        ("m10", "m11", "tie"),
        ("m11", "m12", "tie"),
    ]
    df = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]).drop_duplicates(
        ["model_a", "model_b"], keep="last"
    )
    df["prompt_id"], df["dataset"], df["judge"], df["variant"], df["turn"] = "p", "d", "j", 0, 1
    df["category"], df["variant_kind"], df["prob_a"] = "c", "original", np.nan
    return build_stack(df), df


def test_focus_on_a_40_model_graph():
    stack, df = _big_graph()
    view = graph_view(stack, 0)
    assert len(view.models) == 40 > FOCUS_LIMIT
    g = nx.DiGraph()
    for a, b, w in df[["model_a", "model_b", "winner"]].itertuples(index=False):
        if w in ("A", "tie"):
            g.add_edge(a, b)
        if w in ("B", "tie"):
            g.add_edge(b, a)
    brute = bad_triads_bruteforce(g)
    assert len(view.triads) == len(brute) > 0
    on_bad = sorted({m for tri in brute for m in tri})
    for idx in (None, 0, len(view.triads) - 1):
        keep = focus_models(view, idx)
        names = [view.models[k] for k in keep]
        assert len(keep) <= FOCUS_LIMIT
        if idx is not None:
            assert set(view.triads.iloc[idx][["model_a", "model_b", "model_c"]]) <= set(names)
        if len(on_bad) <= FOCUS_LIMIT:
            assert sorted(names) == on_bad
        sub = restrict_view(view, keep)
        assert sub.models == tuple(names)
        full = pd.DataFrame(view.adj, index=view.models, columns=view.models)
        assert (sub.adj == full.loc[names, names].to_numpy()).all()
        hidden = sum(1 for a, b in itertools.combinations(view.models, 2)
                     if (g.has_edge(a, b) or g.has_edge(b, a)) and not (a in names and b in names))
        assert f"the {hidden} compared pairs" in focus_summary(view, keep)
    assert focus_summary(view, list(range(40))) == ""


def test_prompt_picker_lists_the_worst_and_opens_any_other_by_id(shipped_store, app, monkeypatch):
    """Above MENU_MAX prompts the picker lists the worst MENU_MAX (same order as the full menu) and a
    typed id opens any other prompt; below it, every prompt is listed."""
    import engine.views.inspector as insp
    from engine.graphs.stack import build_stack
    from engine.views.viz import cycle_overview

    verdicts = shipped_store.verdicts("vicuna80", judge="gpt-4")
    stack = build_stack(verdicts)
    menu = prompt_menu(cycle_overview(stack).graphs, shipped_store.prompt_texts("vicuna80"))
    tree = insp.graph_choices(stack)
    options, labels, total = insp.prompt_options(menu, tree, limit=5)
    assert total == len(tree) == 80 and options == menu["prompt_id"].tolist()[:5]
    assert labels == dict(zip(menu["prompt_id"][:5], menu["label"][:5], strict=True))
    assert insp.prompt_options(menu, tree)[0] == menu["prompt_id"].tolist()  # 80 < MENU_MAX: all listed

    monkeypatch.setattr(insp, "MENU_MAX", 5)
    at = app.switch_page("app_pages/4_inspector.py").run(timeout=120)
    assert not at.exception
    picker = next(s for s in at.selectbox if s.label == "Prompt")
    assert len(picker.options) == 5
    listed = {o.split(" · ")[0] for o in picker.options}  # a label starts with its prompt id
    other = next(p for p in reversed(list(tree)) if p not in listed)
    at = at.text_input(key="insp_prompt_id").input(other).run(timeout=120)
    picker = next(s for s in at.selectbox if s.label == "Prompt")
    assert picker.value == other and len(picker.options) == 6 and not at.exception
    at = at.text_input(key="insp_prompt_id").input("no-such-prompt").run(timeout=120)
    assert any("No graph of this selection has that prompt id" in w.value for w in at.warning)
