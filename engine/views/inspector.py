"""The prompt inspector's views: one tournament graph, its bad triads, what denoising changed, and
the verdicts, rationales and answers behind one triad.

A *graph view* restricts one graph of a GraphStack to the models compared in it, lists its
non-transitive triads (``engine.graphs.triads``) with a readable shape, counts the bad triads through
every pair and model (the edge and node load the drawing shows), and compares the graph with
its PGED and ELSPR denoised versions pair by pair. A *triad view* groups the stored verdicts of
the triad's three pairs by pair: the combined outcome (the graph's edge) with the reason it
came out that way, each verdict with its presentation order and rationale, and the answers.
The pages only render these objects; every rule lives here and is tested against the stored
verdicts.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError

TRIAD_KINDS: dict[str, str] = {
    "cycle": "a strict cycle: a > b, b > c, yet c > a",
    "tied-ends": "a strict chain a > b > c whose ends tie (a ~ c)",
    "unchained-ties": "two ties that do not chain into a tie: a ~ b and b ~ c, yet a > c",
}
"""The non-transitive triad kinds (paper 001, App. B.1, up to relabelling), for the legend."""

DENOISERS: dict[str, str] = {
    "PGED": "pged",
    "ELSPR": "elspr",
}
"""Label → ranker name of the rankers whose result carries a denoised graph (papers 002, 004)."""

CHANGES: tuple[str, ...] = (
    "kept", "removed", "re-oriented", "made a tie", "tie resolved", "tie kept", "tie set aside", "added",
)
"""How a pair's relation moved from the input graph to the denoised one (see ``pair_changes``)."""


def shape(a: str, b: str, c: str, kind: str) -> str:
    """The triad in the orientation ``engine.graphs.triads`` gives it, as a line of text."""
    if kind == "cycle":
        return f"{a} > {b} > {c} > {a}"
    if kind == "tied-ends":
        return f"{a} > {b} > {c}, yet {a} ~ {c}"
    if kind == "unchained-ties":
        return f"{a} ~ {b} ~ {c}, yet {a} > {c}"
    return f"{a}, {b}, {c} ({kind})"


def relations(adj: np.ndarray, observed: np.ndarray | None = None) -> np.ndarray:
    """(m, m) int8 codes of every ordered pair: 1 i beat j, -1 j beat i, 0 tie, 9 no relation.

    Without ``observed`` a pair is related when it has an edge (a denoised graph)."""
    a = np.asarray(adj, dtype=bool)
    both, fwd, back = a & a.T, a & ~a.T, ~a & a.T
    out = np.full(a.shape, 9, dtype=np.int8)
    out[fwd], out[back], out[both] = 1, -1, 0
    if observed is not None:
        out[~np.asarray(observed, dtype=bool)] = 9
    np.fill_diagonal(out, 9)
    return out


def _change(before: int, after: int) -> str | None:
    if before == 9:
        return None if after == 9 else "added"
    if before == 0:
        return {0: "tie kept", 9: "tie set aside"}.get(after, "tie resolved")
    if after == before:
        return "kept"
    return {9: "removed", 0: "made a tie"}.get(after, "re-oriented")


def pair_changes(adj: np.ndarray, observed: np.ndarray, after: np.ndarray) -> pd.DataFrame:
    """One row per unordered pair i < j related before or after denoising.

    Columns: i, j, before, after (codes of ``relations`` from i's side) and change, one of
    ``CHANGES``: a strict edge kept, removed (no edge after), re-oriented (the other way) or made a
    tie; a tie kept, resolved into a strict edge or set aside (PGED uses strict wins only); a pair
    not compared before that the denoiser orders ("added").
    """
    rb, ra = relations(adj, observed), relations(after)
    i, j = np.triu_indices(rb.shape[0], 1)
    rows = [(int(x), int(y), int(rb[x, y]), int(ra[x, y]), _change(int(rb[x, y]), int(ra[x, y])))
            for x, y in zip(i, j, strict=True)]
    frame = pd.DataFrame([r for r in rows if r[4] is not None], columns=["i", "j", "before", "after", "change"])
    return frame.astype({"i": np.int64, "j": np.int64, "before": np.int64, "after": np.int64, "change": object})


@dataclass(frozen=True, eq=False)
class Denoised:
    """One denoiser's graph over a view's models and how it differs from the input graph."""

    label: str
    adj: np.ndarray
    changes: pd.DataFrame
    counts: dict[str, int]
    note: str


def _denoise_note(label: str, counts: dict[str, int], n_strict: int) -> str:
    c = counts
    if label == "PGED":
        return (
            f"PGED ranks from strict wins only (paper 002), so the {c['tie set aside'] + c['tie kept']} tie(s) "
            f"are set aside (drawn faded); to break every cycle it removed {c['removed']} of the "
            f"{n_strict} strict edges (a feedback arc set)."
        )
    return (
        f"ELSPR re-orders the models inside each strongly connected component by their win count "
        f"(paper 004): {c['re-oriented']} strict edge(s) re-oriented, {c['tie resolved']} tie(s) resolved, "
        f"{c['made a tie']} edge(s) made a tie, {c['added']} pair(s) added; "
        f"{c['kept'] + c['tie kept']} pair(s) unchanged."
    )


@dataclass(frozen=True, eq=False)
class GraphView:
    """One graph of a stack, restricted to the models compared in it.

    ``models``: those models in stack order; ``adj`` / ``observed``: (m, m) over them;
    ``triads``: its non-transitive triads (model_a, model_b, model_c, kind, shape, and the view
    indices ia, ib, ic); ``pair_bad`` (m, m) and ``node_bad`` (m,): bad triads through each pair
    and model; ``order``: model indices by Copeland score in this graph (wins + ½ ties, best
    first, then by name), the drawing's layout order; ``denoised``: label → Denoised.
    """

    t: int
    key: dict
    models: tuple[str, ...]
    adj: np.ndarray
    observed: np.ndarray
    triads: pd.DataFrame
    pair_bad: np.ndarray
    node_bad: np.ndarray
    order: tuple[int, ...]
    denoised: dict[str, Denoised]
    policy: str

    @property
    def n_strict(self) -> int:
        r = relations(self.adj, self.observed)
        return int((r == 1).sum())

    @property
    def n_ties(self) -> int:
        r = relations(self.adj, self.observed)
        return int((r == 0).sum() // 2)


def graph_view(stack, t: int) -> GraphView:
    """The inspector's view of graph ``t`` of ``stack`` (a GraphStack, or GraphBuckets: then only
    graph ``t`` is laid out, over its own models; see GraphView)."""
    import dataclasses

    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.triads import cyclic_triads
    from engine.rankers import rank

    t = int(t)
    if not 0 <= t < stack.T:
        raise LensError(f"There is no graph {t}; the selection holds {stack.T}.")
    if isinstance(stack, GraphBuckets):
        return dataclasses.replace(graph_view(stack.one(t), 0), t=t)
    present = np.flatnonzero(stack.observed[t].any(axis=1))
    models = tuple(stack.models[i] for i in present)
    adj = stack.adj[t][np.ix_(present, present)]
    obs = stack.observed[t][np.ix_(present, present)]
    pos = {m: k for k, m in enumerate(models)}

    tri = cyclic_triads(stack, t).reset_index(drop=True)
    tri = tri[["model_a", "model_b", "model_c", "kind"]].astype(str)
    tri["shape"] = [shape(*row) for row in tri.itertuples(index=False)]
    for col, name in (("ia", "model_a"), ("ib", "model_b"), ("ic", "model_c")):
        tri[col] = tri[name].map(pos).astype(np.int64)

    m = len(models)
    pair_bad = np.zeros((m, m), dtype=np.int64)
    node_bad = np.zeros(m, dtype=np.int64)
    for a, b, c in tri[["ia", "ib", "ic"]].itertuples(index=False):
        for x, y in ((a, b), (b, c), (a, c)):
            pair_bad[x, y] += 1
            pair_bad[y, x] += 1
        node_bad[[a, b, c]] += 1

    rel = relations(adj, obs)
    copeland = (rel == 1).sum(axis=1) + 0.5 * (rel == 0).sum(axis=1)
    order = tuple(sorted(range(m), key=lambda k: (-copeland[k], models[k])))

    denoised = {}
    if m >= 2:
        sub = stack.subset([t]).restrict_models(list(models))
        n_strict = int((rel == 1).sum())
        for label, name in DENOISERS.items():
            graph = rank(sub, name).extras["graph"]
            after = np.asarray(graph.reindex(index=list(models), columns=list(models)).fillna(0).to_numpy(), dtype=bool)
            changes = pair_changes(adj, obs, after)
            counts = {c: int((changes["change"] == c).sum()) for c in CHANGES}
            denoised[label] = Denoised(label, after, changes, counts, _denoise_note(label, counts, n_strict))
    key = {k: (v.item() if hasattr(v, "item") else v) for k, v in stack.key_of(t).items()}
    return GraphView(t, key, models, adj, obs, tri, pair_bad, node_bad, order, denoised, stack.policy)


def graph_position(stack, prompt_id: str, variant: int, judge: str) -> int:
    """Position in ``stack`` of the graph of (prompt, variant, judge); its first turn when several."""
    keys = stack.keys.reset_index(drop=True)
    hit = keys[(keys["prompt_id"].astype(str) == str(prompt_id)) & (keys["variant"].astype(int) == int(variant))
               & (keys["judge"].astype(str) == str(judge))]
    if hit.empty:
        raise LensError(f"The selection has no graph for prompt {prompt_id}, variant {variant}, judge {judge}.")
    return int(hit.sort_values("turn").index[0])


_PER_GRAPHS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _once(graphs, name: str, make):
    """``make()``, computed once per graphs object (the app holds one per selection, read-only):
    the pickers below walk every graph key, seconds on a million-graph battle log."""
    try:
        per = _PER_GRAPHS.setdefault(graphs, {})
    except TypeError:  # not weak-referenceable or not hashable: compute every time
        return make()
    if name not in per:
        per[name] = make()
    return per[name]


def graph_choices(stack) -> dict[str, dict[int, list[str]]]:
    """prompt_id → variant → judges with a graph (the inspector's pickers): prompts in natural order
    (q2 before q10), variants by number, judges in the stack's order. Computed once per stack."""
    from engine.views.labels import natural_sorted

    def make():
        keys = stack.keys
        frame = pd.DataFrame({"p": keys["prompt_id"].astype(str), "v": keys["variant"].astype(int),
                              "j": keys["judge"].astype(str)}).drop_duplicates()  # first seen: stack order
        out: dict[str, dict[int, list[str]]] = {}
        for p, v, j in zip(frame["p"].tolist(), frame["v"].tolist(), frame["j"].tolist(), strict=True):
            out.setdefault(p, {}).setdefault(v, []).append(j)
        return {p: dict(sorted(out[p].items())) for p in natural_sorted(out)}

    return _once(stack, "graph_choices", make)


def variant_names(stack) -> dict[tuple[str, int], str]:
    """(prompt_id, variant) → "original" / "paraphrase k" / "sample k" (``engine.views.labels.variant_labels``);
    computed once per stack."""
    from engine.views.labels import variant_labels

    def make():
        keys = stack.keys.reset_index(drop=True)
        names = variant_labels(keys)
        return dict(zip(zip(keys["prompt_id"].astype(str).tolist(), keys["variant"].astype(int).tolist(),
                            strict=True), names.astype(str).tolist(), strict=True))

    return _once(stack, "variant_names", make)


def question_text(prompts: pd.DataFrame, prompt_id: str, variant: int, turn: int) -> str | None:
    """The stored question of one graph (``Store.prompt_texts`` rows), or None."""
    hit = prompts[(prompts["prompt_id"].astype(str) == str(prompt_id)) & (prompts["variant"] == variant)
                  & (prompts["turn"] == turn)]
    if hit.empty or not isinstance(hit.iloc[0]["text"], str):
        return None
    return hit.iloc[0]["text"]


# ---------------------------------------------------------------------------- one triad's verdicts


@dataclass(frozen=True)
class VerdictLine:
    """One stored verdict on a pair: who was shown first, what the judge said, and why."""

    first: str | None
    second: str | None
    winner: str | None
    outcome: str
    rationale: str | None
    verdict_id: int | None

    @property
    def shown(self) -> str:
        if self.first is None:
            return "presentation order not recorded"
        return f"{self.first} shown first (Assistant 1), {self.second} second (Assistant 2)"


@dataclass(frozen=True)
class PairView:
    """One pair of a triad: the combined outcome (the graph's edge), why, and its verdicts."""

    a: str
    b: str
    result: str
    reason: str
    verdicts: tuple[VerdictLine, ...]

    @property
    def result_text(self) -> str:
        return "tie" if self.result == "tie" else f"{self.result} wins"

    @property
    def heading(self) -> str:
        return f"{self.a} vs {self.b}: {self.reason} → {self.result_text}"


@dataclass(frozen=True)
class TriadView:
    """A triad of a graph view with its three pairs' verdicts and the three answers."""

    models: tuple[str, str, str]
    kind: str
    shape: str
    explanation: str
    pairs: tuple[PairView, PairView, PairView]
    answers: dict[str, str | None]


def _verdict_line(row) -> VerdictLine:
    a, b, w, order = row["model_a"], row["model_b"], row["winner"], row["order"]
    order = None if order is None or order is pd.NA or (isinstance(order, float) and np.isnan(order)) else str(order)
    first, second = {"AB": (a, b), "BA": (b, a)}.get(order, (None, None))
    winner = {"A": a, "B": b, "tie": "tie"}.get(w)
    outcome = ("tie" if winner == "tie" else f"{winner} wins") if winner else "unparsable judge output (not counted)"
    why = row.get("explanation")
    why = why if isinstance(why, str) and why.strip() else None
    vid = row.get("verdict_id")
    return VerdictLine(first, second, winner, outcome, why, None if pd.isna(vid) else int(vid))


def _reason(lines: list[VerdictLine]) -> str:
    """Why the verdicts on one pair combine as they do (plurality: no unique most frequent → tie)."""
    valid = [v for v in lines if v.winner is not None]
    if not valid:
        return "no valid verdict"
    if len(valid) == 1:
        return "one verdict"
    outcomes = [v.winner for v in valid]
    orders = {v.first for v in valid if v.first is not None}
    both_orders = len(valid) == 2 and len(orders) == 2
    if len(set(outcomes)) == 1:
        return "both orders agree" if both_orders else f"{len(valid)} verdicts agree"
    if both_orders:
        return "orders disagree"
    counts = pd.Series(outcomes).value_counts()
    return "verdicts split " + ", ".join(f"{n}× {'tie' if o == 'tie' else o}" for o, n in counts.items())


def graph_verdicts(verdicts: pd.DataFrame, key: dict) -> pd.DataFrame:
    """The stored verdicts (invalid ones included) of the graph with ``key`` (judge, prompt, variant, turn)."""
    v = verdicts
    mask = ((v["judge"].astype(str) == str(key["judge"])) & (v["prompt_id"].astype(str) == str(key["prompt_id"]))
            & (v["variant"] == key["variant"]) & (v["turn"] == key["turn"]))
    return v[mask]


def triad_view(view: GraphView, index: int, verdicts: pd.DataFrame, answers: pd.DataFrame | None = None) -> TriadView:
    """Triad ``index`` of ``view``: its pairs (in the triad's orientation) with their verdicts.

    ``verdicts``: stored verdict rows (any superset of the graph's); ``answers``:
    ``Store.answer_texts`` rows (model, variant, turn, text) or None.
    """
    if not 0 <= int(index) < len(view.triads):
        raise LensError(f"There is no triad {index}; this graph has {len(view.triads)}.")
    row = view.triads.iloc[int(index)]
    a, b, c = str(row["model_a"]), str(row["model_b"]), str(row["model_c"])
    mine = graph_verdicts(verdicts, view.key)
    if "verdict_id" in mine.columns:
        mine = mine.sort_values("verdict_id")
    pos = {m: k for k, m in enumerate(view.models)}
    rel = relations(view.adj, view.observed)
    pairs = []
    for x, y in ((a, b), (b, c), (a, c)):
        on = mine[((mine["model_a"] == x) & (mine["model_b"] == y)) | ((mine["model_a"] == y) & (mine["model_b"] == x))]
        lines = [_verdict_line(r) for _, r in on.iterrows()]
        code = int(rel[pos[x], pos[y]])
        result = {1: x, -1: y, 0: "tie"}.get(code, "not compared")
        pairs.append(PairView(x, y, result, _reason(lines), tuple(lines)))
    texts: dict[str, str | None] = {m: None for m in (a, b, c)}
    if answers is not None and len(answers):
        ans = answers[(answers["variant"] == view.key["variant"]) & (answers["turn"] == view.key["turn"])]
        for m, txt in ans[["model", "text"]].itertuples(index=False):
            if m in texts and isinstance(txt, str):
                texts[m] = txt
    kind = str(row["kind"])
    return TriadView((a, b, c), kind, str(row["shape"]), TRIAD_KINDS.get(kind, kind), tuple(pairs), texts)


# ---------------------------------------------------------------------------- drawing


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
        out.append(node(k, name, positions[k], color=color, size=size + (4 if k in chosen else 0), title=title,
                        border="#3b1f99" if k in chosen else None))
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
    edges, front = [], []
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
                front.append(edge(x, y, color=VIOLET, width=5, title=title, arrow=code != 0, dashes=code == 0))
                continue
            color = red_shade(bad / top) if bad else GREY
            width = 1 + 5 * bad / top if bad else 1
            edges.append(edge(x, y, color=color, width=width, title=title, arrow=code != 0, dashes=code == 0,
                              opacity=0.3 if chosen_pairs else 0.9))
    title = f"Before denoising · {len(view.triads)} bad triad(s) · {view.n_strict} strict edges, {view.n_ties} ties"
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
    edges, front = [], []
    for i, j, before, after, change in d.changes.itertuples(index=False):
        on_triad = frozenset((i, j)) in chosen_pairs
        rel = before if after == 9 else after  # draw the new relation, or the old one when gone
        x, y = (i, j) if rel >= 0 else (j, i)
        was = {1: f"{names[i]} beat {names[j]}", -1: f"{names[j]} beat {names[i]}", 0: "a tie", 9: "not compared"}
        title = f"{change}: {was[before]}" + ("" if change in ("kept", "tie kept") else f" → {was[after]}")
        tie = rel == 0
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
        denoised[label] = Denoised(d.label, d.adj[np.ix_(idx, idx)], ch.reset_index(drop=True), d.counts, d.note)
    order = tuple(new[k] for k in view.order if k in new)
    return GraphView(view.t, view.key, tuple(view.models[k] for k in keep), view.adj[np.ix_(idx, idx)],
                     view.observed[np.ix_(idx, idx)], tri, view.pair_bad[np.ix_(idx, idx)], view.node_bad[idx],
                     order, denoised, view.policy)


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


def prompt_menu(graphs: pd.DataFrame, prompts: pd.DataFrame | None, mu: float = 1.0, width: int = 60) -> pd.DataFrame:
    """The inspector's prompt picker: one row per prompt with its bad triads and S_mu summed over its
    graphs (every judge and variant of the selection), the start of its question, and a label;
    worst first (highest S_mu, then most bad triads, then natural prompt order)."""
    from engine.views.labels import natural_key

    g = graphs.assign(prompt_id=graphs["prompt_id"].astype(str),
                      s_mu=graphs["c3_bad"].astype(float) + mu * graphs["c4_bad"].astype(float))
    per = g.groupby("prompt_id", sort=False).agg(bad_triads=("c3_bad", "sum"), s_mu=("s_mu", "sum"),
                                                 graphs=("c3_bad", "size")).reset_index()
    texts: dict[str, str] = {}
    if prompts is not None and len(prompts):
        first = prompts.assign(prompt_id=prompts["prompt_id"].astype(str)).sort_values(["variant", "turn"])
        for p, t in first.drop_duplicates("prompt_id")[["prompt_id", "text"]].itertuples(index=False):
            if isinstance(t, str):
                texts[p] = " ".join(t.split())
    per["text"] = [texts.get(p, "") for p in per["prompt_id"]]
    order = sorted(range(len(per)), key=lambda i: (-per["s_mu"].iat[i], -per["bad_triads"].iat[i],
                                                   natural_key(per["prompt_id"].iat[i])))
    per = per.iloc[order].reset_index(drop=True)

    def label(r) -> str:
        text = r.text if len(r.text) <= width else r.text[: width - 1] + "…"
        s = f"{r.s_mu:g}"
        return f"{r.prompt_id} · {int(r.bad_triads)} bad triads · S_μ {s}" + (f" · {text}" if text else "")

    per["label"] = [label(r) for r in per.itertuples(index=False)]
    return per
