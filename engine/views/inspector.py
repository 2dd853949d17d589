"""The prompt inspector's views: one tournament graph, its bad triads, what denoising changed, and
the verdicts, rationales and answers behind one triad.

A *graph view* restricts one graph of a GraphStack to the models compared in it, lists its
non-transitive triads (``engine.graphs.triads``) with a readable shape, counts the bad triads through
every pair and model (the edge and node load the drawing shows), and compares the graph with
its PGED and ELSPR denoised versions pair by pair. A *triad view* groups the stored verdicts of
the triad's three pairs by pair: the combined outcome (the graph's edge) with the reason it
came out that way, each verdict with its presentation order and rationale, and the answers.
The pages only render these objects; every rule lives here and is tested against the stored
verdicts. This module holds the graph view, the prompt choice and the denoise diff;
``engine.views.inspector_triads`` the triad view and ``engine.views.inspector_draw`` the drawing.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.errors import LensError

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack


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
    frame = pd.DataFrame(
        [r for r in rows if r[4] is not None], columns=["i", "j", "before", "after", "change"]
    )
    return frame.astype(
        {"i": np.int64, "j": np.int64, "before": np.int64, "after": np.int64, "change": object}
    )


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
            f"PGED ranks from strict wins only (paper 002), so the {c['tie set aside'] + c['tie kept']} "
            "tie(s) "
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
        """Pairs of the graph with a strict winner."""
        r = relations(self.adj, self.observed)
        return int((r == 1).sum())

    @property
    def n_ties(self) -> int:
        """Pairs of the graph that tied."""
        r = relations(self.adj, self.observed)
        return int((r == 0).sum() // 2)


def graph_view(stack: GraphStack | GraphBuckets, t: int) -> GraphView:
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
            after = np.asarray(
                graph.reindex(index=list(models), columns=list(models)).fillna(0).to_numpy(), dtype=bool
            )
            changes = pair_changes(adj, obs, after)
            counts = {c: int((changes["change"] == c).sum()) for c in CHANGES}
            denoised[label] = Denoised(label, after, changes, counts, _denoise_note(label, counts, n_strict))
    key = {k: (v.item() if hasattr(v, "item") else v) for k, v in stack.key_of(t).items()}
    return GraphView(t, key, models, adj, obs, tri, pair_bad, node_bad, order, denoised, stack.policy)


def graph_turns(stack: GraphStack | GraphBuckets, prompt_id: str, variant: int, judge: str) -> dict[int, int]:
    """turn → position in ``stack`` of the graphs of (prompt, variant, judge), turns ascending (one entry
    but on multi-turn data such as MT-Bench's two turns). The (prompt, variant, judge) → turns index is
    built once per stack (a million graphs are not scanned on every click)."""

    def make():
        keys = stack.keys.reset_index(drop=True)
        frame = pd.DataFrame({"p": keys["prompt_id"].astype(str), "v": keys["variant"].astype(int),
                              "j": keys["judge"].astype(str), "turn": keys["turn"].astype(int),
                              "t": np.arange(len(keys))})
        frame = frame.sort_values(["turn", "t"], kind="stable")
        again = frame.duplicated(["p", "v", "j"])
        first = frame[~again]
        firsts = dict(zip(zip(first["p"].tolist(), first["v"].tolist(), first["j"].tolist(), strict=True),
                          first["t"].tolist(), strict=True))
        turns: dict[tuple, dict[int, int]] = {}  # only the keys with later turns: none on one-turn data
        if again.any():
            multi = frame.groupby(["p", "v", "j"], sort=False)["turn"].transform("size") > 1
            for p, v, j, turn, t in frame[multi].itertuples(index=False):
                turns.setdefault((p, v, j), {}).setdefault(int(turn), int(t))
        return firsts, turns

    firsts, turns = _once(stack, "graph_turns", make)
    key = (str(prompt_id), int(variant), str(judge))
    hit = firsts.get(key)
    if hit is None:
        raise LensError(
            f"The selection has no graph for prompt {prompt_id}, variant {variant}, judge {judge}."
        )
    return turns.get(key) or {int(stack.keys["turn"].iloc[hit]): int(hit)}


def graph_position(stack: GraphStack | GraphBuckets, prompt_id: str, variant: int, judge: str,
                   turn: int | None = None) -> int:
    """Position in ``stack`` of the graph of (prompt, variant, judge) at ``turn``; its first turn when
    ``turn`` is None or not one of the graph's turns (``graph_turns``)."""
    turns = graph_turns(stack, prompt_id, variant, judge)
    if turn is not None and int(turn) in turns:
        return int(turns[int(turn)])
    return int(next(iter(turns.values())))


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


class ChoiceTree(Mapping):
    """prompt_id → {variant → judges with a graph} (the inspector's pickers), held as arrays: at a
    million prompts a dict of dicts took seconds to build and seconds more to cut to one judge, while a
    page reads one prompt's entry. Iterates prompts in natural order (q2 before q10); an entry lists
    variants by number and each variant's judges in the stack's order, as the dict it replaces did.
    ``judges``: every judge in that walk's order of first appearance. A prompt is found by a binary
    search over the ids in code-point order (no dict of a million ids)."""

    def __init__(self, prompts: np.ndarray, rank: np.ndarray, variant: np.ndarray, judge: np.ndarray,
                 by_text: np.ndarray | None = None):
        # rows (one per prompt, variant and judge) sorted by (prompt's natural rank, variant, stack order);
        # by_text: the natural ranks of the prompts in code-point order of their ids
        self._prompts = np.asarray(prompts, dtype=object)
        self._by_text = (np.argsort(self._prompts, kind="stable") if by_text is None
                         else np.asarray(by_text, dtype=np.int64))
        self._sorted = self._prompts[self._by_text]
        self._rank, self._variant, self._judge = rank, variant, judge
        self._start = np.searchsorted(rank, np.arange(len(self._prompts) + 1))
        self._cuts: dict[str, ChoiceTree] = {}

    @classmethod
    def of(cls, prompt: list[str], variant: list[int], judge: list[str]) -> ChoiceTree:
        """From (prompt, variant, judge) rows without repeats, in the stack's order."""
        from engine.views.labels import natural_sorted

        prompts = natural_sorted(dict.fromkeys(prompt))
        where = {p: i for i, p in enumerate(prompts)}
        rank = np.fromiter((where[p] for p in prompt), dtype=np.int64, count=len(prompt))
        return cls._sorted_rows(np.asarray(prompts, dtype=object), rank, np.asarray(variant, dtype=np.int64),
                                np.asarray(judge, dtype=object))

    @classmethod
    def of_indexed(cls, first_seen: np.ndarray, text_rank: np.ndarray, row_prompt: np.ndarray,
                   variant: np.ndarray, judge: np.ndarray) -> ChoiceTree:
        """``of`` from rows whose prompts are already numbered: ``first_seen`` the distinct ids in order of
        first appearance, ``text_rank`` each one's position in code-point order, ``row_prompt`` each row's
        index into ``first_seen`` (rows in the stack's order; ``engine.store.graph_keys``): the same tree
        without a dict over the ids."""
        from engine.views.labels import natural_order

        first_seen = np.asarray(first_seen, dtype=object)
        natural = natural_order(first_seen)  # natural position -> first-seen index (ties: first seen first)
        rank_of = np.empty(len(natural), dtype=np.int64)
        rank_of[natural] = np.arange(len(natural))
        by_text = np.empty(len(natural), dtype=np.int64)
        by_text[np.asarray(text_rank, dtype=np.int64)] = rank_of
        return cls._sorted_rows(first_seen[natural], rank_of[np.asarray(row_prompt, dtype=np.int64)],
                                np.asarray(variant, dtype=np.int64), np.asarray(judge, dtype=object), by_text)

    @classmethod
    def _sorted_rows(cls, prompts: np.ndarray, rank: np.ndarray, variant: np.ndarray, judge: np.ndarray,
                     by_text: np.ndarray | None = None) -> ChoiceTree:
        order = np.lexsort((np.arange(len(rank)), variant, rank))
        return cls(prompts, rank[order], variant[order], judge[order], by_text)

    def _find(self, prompt: object) -> int | None:
        """The natural rank of ``prompt`` (None when no graph has it)."""
        if not isinstance(prompt, str) or not len(self._sorted):
            return None
        k = int(np.searchsorted(self._sorted, prompt))
        if k < len(self._sorted) and self._sorted[k] == prompt:
            return int(self._by_text[k])
        return None

    def __getitem__(self, prompt: str) -> dict[int, list[str]]:
        i = self._find(prompt)
        if i is None:
            raise KeyError(prompt)
        lo, hi = self._start[i], self._start[i + 1]
        out: dict[int, list[str]] = {}
        for v, j in zip(self._variant[lo:hi].tolist(), self._judge[lo:hi].tolist(), strict=True):
            out.setdefault(v, []).append(j)
        return out

    def __contains__(self, prompt: object) -> bool:
        return self._find(prompt) is not None

    def __iter__(self):
        return iter(self._prompts.tolist())

    def __len__(self) -> int:
        return len(self._prompts)

    @property
    def judges(self) -> list[str]:
        """Every judge, first seen walking prompts, variants and each variant's judges in order."""
        return list(pd.unique(self._judge))

    def judged_by(self, judge: str) -> ChoiceTree:
        """The prompts and variants ``judge`` has a graph of (each kept variant with all its judges);
        computed once per tree and judge (the page asks on every rerun)."""
        if judge not in self._cuts:
            self._cuts[judge] = self._cut(judge)
        return self._cuts[judge]

    def _cut(self, judge: str) -> ChoiceTree:
        from engine.graphs.distinct import distinct_sorted

        if not len(self._rank):
            return self
        pair = np.r_[True, (self._rank[1:] != self._rank[:-1]) | (self._variant[1:] != self._variant[:-1])]
        pair_id = np.cumsum(pair) - 1
        has = np.zeros(int(pair_id[-1]) + 1, dtype=bool)
        has[pair_id[self._judge == judge]] = True
        keep = has[pair_id]
        if keep.all():  # the judge has a graph of every prompt and variant (one judge): the same tree
            return self
        kept_ranks = distinct_sorted(self._rank[keep])
        new_rank = np.searchsorted(kept_ranks, self._rank[keep])
        kept = np.zeros(len(self._prompts), dtype=bool)
        kept[kept_ranks] = True
        renumber = np.cumsum(kept) - 1
        by_text = self._by_text[kept[self._by_text]]
        return ChoiceTree(self._prompts[kept_ranks], new_rank, self._variant[keep], self._judge[keep],
                          renumber[by_text])


def graph_choices(stack: GraphStack | GraphBuckets) -> ChoiceTree:
    """prompt_id → variant → judges with a graph (the inspector's pickers, a ``ChoiceTree``): prompts in
    natural order (q2 before q10), variants by number, judges in the stack's order. Computed once per
    stack."""

    def make():
        keys = stack.keys
        frame = pd.DataFrame({"p": keys["prompt_id"].astype(str), "v": keys["variant"].astype(int),
                              "j": keys["judge"].astype(str)}).drop_duplicates()  # first seen: stack order
        return ChoiceTree.of(frame["p"].tolist(), frame["v"].tolist(), frame["j"].tolist())

    return _once(stack, "graph_choices", make)


def variant_names(stack: GraphStack | GraphBuckets) -> dict[tuple[str, int], str]:
    """(prompt_id, variant) → "original" / "paraphrase k" / "sample k"
    (``engine.views.labels.variant_labels``);
    computed once per stack."""
    from engine.views.labels import variant_labels

    def make():
        keys = stack.keys.reset_index(drop=True)
        names = variant_labels(keys)
        return dict(zip(zip(keys["prompt_id"].astype(str).tolist(), keys["variant"].astype(int).tolist(),
                            strict=True), names.astype(str).tolist(), strict=True))

    return _once(stack, "variant_names", make)


def prompt_variant_names(stack: GraphStack | GraphBuckets, prompt_id: str) -> dict[int, str]:
    """variant → its name, for one prompt: ``variant_names`` restricted to ``prompt_id`` (a name counts
    only that prompt's variants, so its keys alone give it), without naming every graph's variant;
    computed once per stack and prompt."""
    from engine.views.labels import variant_labels

    def make():
        keys = stack.keys
        mine = keys[(keys["prompt_id"].astype(str) == str(prompt_id)).to_numpy()].reset_index(drop=True)
        names = variant_labels(mine)
        return dict(zip(mine["variant"].astype(int).tolist(), names.astype(str).tolist(), strict=True))

    return _once(stack, f"variant names of {prompt_id}", make)


def question_text(prompts: pd.DataFrame, prompt_id: str, variant: int, turn: int) -> str | None:
    """The stored question of one graph (``Store.prompt_texts`` rows), or None."""
    hit = prompts[(prompts["prompt_id"].astype(str) == str(prompt_id)) & (prompts["variant"] == variant)
                  & (prompts["turn"] == turn)]
    if hit.empty or not isinstance(hit.iloc[0]["text"], str):
        return None
    return hit.iloc[0]["text"]


def prompt_menu(
    graphs: pd.DataFrame, prompts: pd.DataFrame | None, mu: float = 1.0, width: int = 60,
    judge: str | None = None,
) -> pd.DataFrame:
    """The inspector's prompt picker: one row per prompt with its bad triads and S_mu summed over its
    graphs (``judge``'s graphs only when given: the judge whose graph the inspector draws, so the label
    counts what the drawing shows; else every judge), each of the prompt's variants and turns, the
    start of its question, and a label; worst first (highest S_mu, then most bad triads, then natural
    prompt order)."""
    from engine.views.labels import natural_key

    if judge is not None:
        graphs = graphs[graphs["judge"].astype(str) == judge]
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
    s_mu, bad, pid = (
        per["s_mu"].to_numpy(np.float64),
        per["bad_triads"].to_numpy(np.float64),
        per["prompt_id"].tolist(),
    )
    order = sorted(range(len(per)), key=lambda i: (-s_mu[i], -bad[i], natural_key(pid[i])))
    per = per.iloc[order].reset_index(drop=True)

    def label(r) -> str:
        text = r.text if len(r.text) <= width else r.text[: width - 1] + "…"
        s = f"{r.s_mu:g}"
        n = int(r.bad_triads)
        head = f"{r.prompt_id} · {n} bad triad{'' if n == 1 else 's'} · S_μ {s}"
        return head + (f" · {text}" if text else "")

    per["label"] = [label(r) for r in per.itertuples(index=False)]
    return per


MENU_MAX = 1_000
"""The most prompts the inspector's picker lists; a browser cannot take a menu of a million, so a
larger selection lists its worst and opens any other by its id."""


def judged_by(tree: Mapping, judge: str) -> Mapping:
    """``graph_choices``'s tree cut to the prompts and variants ``judge`` has a graph of (a ChoiceTree's
    cut is computed once per tree and judge)."""
    if isinstance(tree, ChoiceTree):
        return tree.judged_by(judge)
    out = {p: {v: js for v, js in vs.items() if judge in js} for p, vs in tree.items()}
    return {p: vs for p, vs in out.items() if vs}


def prompt_options(
    menu: pd.DataFrame, tree: dict, limit: int | None = None
) -> tuple[list[str], dict[str, str], int]:
    """(options, labels, total): the worst ``limit`` (default ``MENU_MAX``) prompts of ``menu`` that have a
    graph in ``tree`` (then prompts without a menu row), their picker labels, and how many prompts there
    are in all."""
    limit = MENU_MAX if limit is None else limit
    ids = [p for p in menu["prompt_id"].tolist() if p in tree]
    if len(ids) < min(limit, len(tree)):
        listed = set(ids)  # then prompts without a menu row, in the tree's order, as many as fit
        ids += list(itertools.islice((p for p in tree if p not in listed), limit - len(ids)))
    shown = ids[:limit]
    label = dict(zip(menu["prompt_id"].head(len(shown) + limit).tolist(),
                     menu["label"].head(len(shown) + limit).tolist(), strict=True))
    return shown, {p: label.get(p, p) for p in shown}, len(tree)
