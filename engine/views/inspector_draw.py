"""The prompt inspector's drawing: one graph before and after denoising as vis-network panels, the
chosen triad and the bad-triad load marked, and for a large graph the subgraph that matters
(``focus_models``, ``restrict_view``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.views.inspector import Denoised, GraphView, relations


def _triad_pairs(view: GraphView, index: int | None) -> set[frozenset[int]]:
    if index is None or not 0 <= int(index) < len(view.triads):
        return set()
    ia, ib, ic = (int(v) for v in view.triads.iloc[int(index)][["ia", "ib", "ic"]])
    return {frozenset((ia, ib)), frozenset((ib, ic)), frozenset((ia, ic))}


def _nodes(view: GraphView, positions, chosen: set[int], load: bool) -> list[dict]:
    from engine.views.graph_html import NODE, NODE_MUTED, VIOLET, node

    top = max(int(view.node_bad.max()) if len(view.node_bad) else 0, 1)
    out = []
    for k, name in enumerate(view.models):
        bad = int(view.node_bad[k])
        title = f"{name}: on {bad} of the {len(view.triads)} bad triads"
        size = 12 + (10 * bad / top if load else 4)
        color = VIOLET if k in chosen else (NODE_MUTED if chosen else NODE)
        out.append(
            node(
                k,
                name,
                positions[k],
                color=color,
                size=size + (4 if k in chosen else 0),
                title=title,
                border="#3b1f99" if k in chosen else None,
            )
        )
    return out


def before_panel(view: GraphView, index: int | None = None):
    """The input graph: edge colour and width grow with the bad triads through the pair; the
    chosen triad (``index``) is violet and thick while everything else is muted."""
    from engine.views.graph_html import GREY, VIOLET, Panel, circle_positions, edge, red_shade

    positions = circle_positions(view.order)
    chosen_pairs = _triad_pairs(view, index)
    chosen = {v for p in chosen_pairs for v in p}
    top = max(int(view.pair_bad.max()) if view.pair_bad.size else 0, 1)
    rel = relations(view.adj, view.observed)
    edges: list[dict] = []
    front: list[dict] = []
    m = len(view.models)
    for i in range(m):
        for j in range(i + 1, m):
            code = int(rel[i, j])
            if code == 9:
                continue
            x, y = (i, j) if code >= 0 else (j, i)
            names = view.models
            bad = int(view.pair_bad[i, j])
            what = f"{names[x]} tied {names[y]}" if code == 0 else f"{names[x]} beat {names[y]}"
            title = f"{what} · on {bad} bad triad(s)"
            if frozenset((i, j)) in chosen_pairs:
                front.append(
                    edge(x, y, color=VIOLET, width=5, title=title, arrow=code != 0, dashes=code == 0)
                )
                continue
            color = red_shade(bad / top) if bad else GREY
            width = 1 + 5 * bad / top if bad else 1
            edges.append(edge(x, y, color=color, width=width, title=title, arrow=code != 0, dashes=code == 0,
                              opacity=0.3 if chosen_pairs else 0.9))
    title = (f"Before denoising · {len(view.triads)} bad triad(s) · "
             f"{view.n_strict} strict edges, {view.n_ties} ties")
    return Panel(title, _nodes(view, positions, chosen, load=True), edges + front)


def after_panel(view: GraphView, label: str, index: int | None = None):
    """A denoised graph on the same layout: unchanged pairs grey; what the denoiser changed in teal
    (dark and thick: re-oriented; dark: made a tie; light: a tie resolved into a win; faint dotted:
    a pair never compared that it ordered); PGED's removed edges dotted orange in their old
    direction and the ties it set aside faded; the chosen triad's pairs are violet."""
    from engine.views.graph_html import (
        FAINT,
        GREY,
        ORANGE,
        TEAL,
        TEAL_FAINT,
        TEAL_LIGHT,
        VIOLET,
        Panel,
        circle_positions,
        edge,
    )

    d = view.denoised[label]
    positions = circle_positions(view.order)
    chosen_pairs = _triad_pairs(view, index)
    chosen = {v for p in chosen_pairs for v in p}
    names = view.models
    edges: list[dict] = []
    front: list[dict] = []
    for i, j, before, after, change in d.changes.itertuples(index=False):
        on_triad = frozenset((i, j)) in chosen_pairs
        rel = before if after == 9 else after  # draw the new relation, or the old one when gone
        x, y = (i, j) if rel >= 0 else (j, i)
        was = {
            1: f"{names[i]} beat {names[j]}",
            -1: f"{names[j]} beat {names[i]}",
            0: "a tie",
            9: "not compared",
        }
        title = f"{change}: {was[before]}" + ("" if change in ("kept", "tie kept") else f" → {was[after]}")
        tie = rel == 0
        style: dict[str, Any]
        if change in ("kept", "tie kept"):
            style = {"color": GREY, "width": 1.2, "opacity": 0.35 if chosen_pairs else 0.9}
        elif change == "removed":
            style = {"color": ORANGE, "width": 2.2, "dashes": [3, 5]}
        elif change == "tie set aside":
            style = {"color": FAINT, "width": 1.0, "dashes": True, "opacity": 0.9}
        elif change == "re-oriented":
            style = {"color": TEAL, "width": 3.2}
        elif change == "made a tie":
            style = {"color": TEAL, "width": 2.2}
        elif change == "tie resolved":
            style = {"color": TEAL_LIGHT, "width": 1.8}
        else:  # added: a pair never compared, ordered by the denoiser
            style = {"color": TEAL_FAINT, "width": 1.5, "dashes": [2, 4]}
        if on_triad:
            style = {**style, "color": VIOLET if change in ("kept", "tie kept") else style["color"],
                     "width": max(style["width"], 4.5), "opacity": 1.0}
        e = edge(x, y, title=title, arrow=not tie, **{"dashes": tie, **style})
        (front if on_triad else edges).append(e)
    c = d.counts
    if label == "PGED":
        title = f"After PGED · {c['removed']} strict edge(s) removed · {c['tie set aside']} tie(s) set aside"
    else:
        title = (f"After ELSPR · {c['re-oriented']} re-oriented · {c['tie resolved']} tie(s) resolved"
                 + (f" · {c['added']} added" if c["added"] else ""))
    return Panel(title, _nodes(view, positions, chosen, load=False), edges + front)


def inspector_html(view: GraphView, label: str, index: int | None = None, height_px: int = 430) -> str:
    """The before / after page of one graph (engine.views.graph_html), with triad ``index`` highlighted."""
    from engine.views.graph_html import network_page

    panels = [before_panel(view, index)]
    if label in view.denoised:
        panels.append(after_panel(view, label, index))
    return network_page(panels, height_px)


# ---------------------------------------------------------------------------- large graphs

FOCUS_LIMIT = 25
"""Graphs with more models than this are drawn as the subgraph that matters (see ``focus_models``)."""


def focus_models(view: GraphView, index: int | None = None, limit: int = FOCUS_LIMIT) -> list[int]:
    """The models drawn for a large graph: every model when there are at most ``limit``; otherwise the
    chosen triad's three, then the models on the most bad triads (then by name), up to ``limit``; a
    graph without bad triads shows its first ``limit`` models in the layout order."""
    m = len(view.models)
    if m <= limit:
        return list(range(m))
    chosen: list[int] = []
    if index is not None and 0 <= int(index) < len(view.triads):
        chosen = [int(v) for v in view.triads.iloc[int(index)][["ia", "ib", "ic"]]]
    ranked = sorted(range(m), key=lambda k: (-int(view.node_bad[k]), view.models[k]))
    rest = [k for k in ranked if view.node_bad[k] > 0 and k not in chosen]
    keep = chosen + rest[: max(0, limit - len(chosen))]
    if not keep:
        keep = list(view.order[:limit])
    return sorted(set(keep))


def restrict_view(view: GraphView, keep: list[int]) -> GraphView:
    """``view`` over the models ``keep`` (view indices): adjacency, loads, layout order and the denoised
    graphs restricted to them. Triads keep their rows (so a triad's number stays the same); the ones
    with a model left out get indices -1 and are not drawn."""
    keep = sorted(int(k) for k in keep)
    new = {old: i for i, old in enumerate(keep)}
    idx = np.asarray(keep, dtype=np.int64)
    tri = view.triads.copy()
    for col in ("ia", "ib", "ic"):
        tri[col] = tri[col].map(lambda v: new.get(int(v), -1)).astype(np.int64)
    denoised = {}
    for label, d in view.denoised.items():
        ch = d.changes[d.changes["i"].isin(keep) & d.changes["j"].isin(keep)].copy()
        ch["i"], ch["j"] = ch["i"].map(new), ch["j"].map(new)
        denoised[label] = Denoised(
            d.label, d.adj[np.ix_(idx, idx)], ch.reset_index(drop=True), d.counts, d.note
        )
    order = tuple(new[k] for k in view.order if k in new)
    return GraphView(
        view.t,
        view.key,
        tuple(view.models[k] for k in keep),
        view.adj[np.ix_(idx, idx)],
        view.observed[np.ix_(idx, idx)],
        tri,
        view.pair_bad[np.ix_(idx, idx)],
        view.node_bad[idx],
        order,
        denoised,
        view.policy,
    )


def focus_summary(view: GraphView, keep: list[int]) -> str:
    """One sentence on what a focused drawing leaves out (empty when every model is drawn)."""
    m = len(view.models)
    if len(keep) >= m:
        return ""
    out = sorted(set(range(m)) - set(keep))
    rel = relations(view.adj, view.observed)
    inside = set(keep)
    hidden_edges = sum(1 for i in range(m) for j in range(i + 1, m)
                       if rel[i, j] != 9 and not (i in inside and j in inside))
    on_bad = sum(1 for k in out if view.node_bad[k] > 0)
    return (f"{m} models: drawn are the {len(keep)} on the most bad triads (the chosen triad's included); "
            f"{len(out)} others are left out ({on_bad} of them on some bad triad), with the {hidden_edges} "
            "compared pairs that involve them.")


