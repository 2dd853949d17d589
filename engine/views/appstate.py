"""The app's shared state: the cache key of a sidebar choice, and one slider move's engine work.

The sidebar (dataset, judge, category, ranker) is shared by every page; its choices come from
``engine.store.datasets.dataset_choices`` and its reference from ``engine.ranking.reference.reference_for``.
Every cached result in the app is keyed by ``CacheKey`` — the dataset's version counter plus the
parameters — so an import, rename or delete (which bump or drop the version) can never serve a
stale result. ``SliderContext`` holds what every keep-K / mu move of one selection shares; keep-K
itself is ``engine.graphs.truncation.keep_k_scores`` and ``keep_k_index``, as in the CLI and the curves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from engine.store.connection import Store

if TYPE_CHECKING:  # the heavy imports stay lazy: the app's first page loads without them
    import numpy as np
    import pandas as pd

    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack
    from engine.rankers.votes import Votes

def __getattr__(name: str):
    """``DENSE_CELL_LIMIT``, read by the app's pages here, lives in engine.graphs.stack (imported on
    first use so this module stays light)."""
    if name == "DENSE_CELL_LIMIT":
        from engine.graphs.stack import DENSE_CELL_LIMIT

        return DENSE_CELL_LIMIT
    raise AttributeError(name)


ALL = "(all)"
"""The sidebar's 'no filter' choice for judge and category."""


@dataclass(frozen=True)
class CacheKey:
    """Everything a cached page result depends on; hashable, so it keys ``st.cache_data``."""

    dataset: str
    version: int
    judge: str | None
    category: str | None

    @classmethod
    def of(cls, store: Store, dataset: str, judge: str | None, category: str | None) -> CacheKey:
        """The key for the sidebar's current choice; ``ALL`` means no filter (``None``). The version is the
        dataset's stamp (``engine.store.datasets.dataset_versions``: the file is not opened while it is
        unchanged)."""
        from engine.store.datasets import stamped_version

        return cls(
            dataset,
            stamped_version(store, dataset),
            None if judge in (None, ALL) else judge,
            None if category in (None, ALL) else category,
        )


def with_reference(table: pd.DataFrame, reference: pd.Series | None) -> pd.DataFrame:
    """Add ``ref_rank`` (rank on the reference among the mapped models) and ``ref_diff`` = rank here
    among the same models − ref_rank (positive: lower here than on the reference); competition
    ranks (1 = best, equal values share the smallest rank)."""
    import numpy as np
    import pandas as pd

    out = table.copy()
    if reference is None:
        return out
    models = out["model"].to_numpy(dtype=object)
    ratings = reference.to_dict()
    mapped = np.array([m in ratings for m in models])
    ref = np.array([ratings[m] for m in models[mapped]], dtype=np.float64)
    here = out["score"].to_numpy(np.float64)[mapped]

    def comp_rank(x: np.ndarray) -> np.ndarray:
        return 1 + (x[None, :] > x[:, None]).sum(axis=1)

    ref_rank = np.full(len(out), -1, dtype=np.int64)
    diff = np.zeros(len(out), dtype=np.int64)
    ref_rank[mapped] = comp_rank(ref)
    diff[mapped] = comp_rank(here) - ref_rank[mapped]
    # nullable integers built with their mask (NA where unmapped): a ``.loc`` assignment of NA cost more than
    # the rest of a slider move's board on a six-model table (bench/app_roundtrip.py)
    out["ref_rank"] = pd.arrays.IntegerArray(np.where(mapped, ref_rank, 0), ~mapped)
    out["ref_diff"] = pd.arrays.IntegerArray(np.where(mapped, diff, 0), ~mapped)
    return out


@dataclass(frozen=True)
class AppBoard:
    """A leaderboard as the app shows it: the table (with cycle and reference columns), the
    engine's params, and the distances to the reference (empty without one)."""

    table: pd.DataFrame
    params: dict
    distances: dict
    reference_note: str


@dataclass(frozen=True, eq=False)
class SliderContext:
    """What every keep-K / mu move of one selection shares, computed once per selection.

    ``stack``: the selection's graphs as ``engine.graphs.buckets.GraphBuckets`` (each graph over its
    own models, so a battle log of T one-pair graphs costs T·4 cells, not T·n²); ``counts``: per-graph
    cycle counts (of the graphs as judged); ``part_graph`` / ``part_model`` / ``part_bad`` /
    ``part_present``: one entry per (graph of at least 3 models, model of that graph): the bad triads
    through the model and whether it was compared there (the sparse form of a (T, n) table; graphs
    of fewer than 3 models hold no triad and have no entry); ``pool_pos``: the graphs keep-K chooses
    from (``pool``: perturbed = originals + paraphrases, the paper's Trunc pool and the CLI's
    default; sampling replicates and graphs that cannot hold a cycle stay out); ``capacity``:
    engine.graphs.cycles.cycle_capacity (keep-K's coverage score); ``n_no_cycle``: pool graphs left out for
    holding no cycle. ``tie_rank`` (each graph's position in graph-key order, keep-K's tie-break, the
    costly key sort) is computed on the first keep-K move. The pool's order by S_mu (``ordering``) is
    computed once per mu, so a keep-K move at a mu seen before costs a prefix, a subset, the ranker and
    the bootstrap (bench/app_latency.py, bench/app_roundtrip.py).
    """

    stack: GraphBuckets
    counts: pd.DataFrame
    part_graph: np.ndarray
    part_model: np.ndarray
    part_bad: np.ndarray
    part_present: np.ndarray
    pool_pos: np.ndarray | None = None
    pool: str = "all"
    capacity: pd.DataFrame | None = None
    n_no_cycle: int = 0
    _orders: dict = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, graphs: GraphStack | GraphBuckets, pool: str = "perturbed") -> SliderContext:
        """The context of a GraphStack or GraphBuckets; the keep-K pool is
        ``engine.graphs.truncation.keep_pool`` (graphs that cannot hold a cycle stay out, ``n_no_cycle``)."""
        import numpy as np

        from engine.graphs.buckets import as_buckets
        from engine.graphs.cycles import cycle_capacity, cycle_counts, vertex_cycle_counts
        from engine.graphs.truncation import keep_pool

        b = as_buckets(graphs)
        capacity = cycle_capacity(b)
        pool_pos, n_no_cycle = keep_pool(b.keys, capacity, pool)
        g, m, bad, pres = [np.zeros(0, np.int64)] * 3 + [np.zeros(0, bool)]
        parts = []
        for bk in b.at_least(3):
            seen = bk.observed.any(axis=2)
            seen &= (seen.sum(axis=1) >= 3)[:, None]  # cycle_share over graphs that can hold a triad
            vb = vertex_cycle_counts(bk.adj)["c3_bad"]
            r, c = np.nonzero(seen | (vb > 0))
            parts.append((bk.graph[r], bk.members[r, c], vb[r, c].astype(np.int64), seen[r, c]))
        if parts:
            g, m, bad, pres = (np.concatenate(x) for x in zip(*parts, strict=True))
        return cls(b, cycle_counts(b), g, m, bad, pres, pool_pos, pool, capacity, n_no_cycle)

    @cached_property
    def tie_rank(self) -> np.ndarray:
        """Each graph's position in graph-key order (``engine.graphs.key_order.key_rank``)."""
        from engine.graphs.key_order import key_rank

        return key_rank(self.stack.keys)

    @property
    def n_pool(self) -> int:
        """How many graphs keep-K chooses from."""
        return int(self.stack.T if self.pool_pos is None else len(self.pool_pos))

    def kept(self, keep_k: int | None, mu: float) -> tuple[np.ndarray, float | None]:
        """Positions of the K pool graphs of smallest S_mu, scored and kept as the CLI and the curves do
        (``engine.graphs.truncation.keep_k_scores`` then ``keep_k_index``), sorted, and the threshold S_K;
        every graph of the selection (pool or not) when K is None."""
        import numpy as np

        from engine.graphs.truncation import check_k, no_cycle_refusal

        if keep_k is None:
            return np.arange(self.stack.T), None
        if self.n_pool == 0 and self.n_no_cycle:
            raise no_cycle_refusal(self.pool, self.n_no_cycle)
        k = check_k(keep_k, self.n_pool)
        order, scores = self.ordering(mu)
        idx = np.sort(order[:k])
        return idx, float(scores[idx].max())

    def ordering(self, mu: float) -> tuple[np.ndarray, np.ndarray]:
        """(the pool's positions from the smallest S_mu up, every graph's score), computed once per mu.

        Keep-K at this mu is the sorted first K of the order: the order is ``keep_k_index``'s own
        (``keep_k_scores``' scores, ties by graph-key order), so every prefix is the graphs
        ``keep_k_index(scores, tie_rank, K, among=pool)`` keeps (tests/app/test_slider_paths.py)."""
        import numpy as np

        from engine.graphs.truncation import keep_k_order, keep_k_scores

        got = self._orders.get(float(mu))
        if got is None:
            pos = np.arange(self.stack.T) if self.pool_pos is None else np.asarray(self.pool_pos)
            scored = keep_k_scores(self.stack.keys, self.counts, self.capacity, pool=self.pool, mu=mu,
                                   pos=pos)
            order = keep_k_order(scored.scores, self.tie_rank, scored.pos)
            if len(self._orders) >= 64:  # mu comes from the page's 17 steps; bounded whatever the caller
                self._orders.clear()
            got = self._orders[float(mu)] = (order, np.asarray(scored.scores))
        return got


_GRAPH_HASHES: dict[int, tuple[SliderContext, np.ndarray]] = {}


def graph_hashes(ctx: SliderContext) -> np.ndarray:
    """The 64-bit graph keys (``engine.ranking.vote_query.GRAPH_HASH``) of the context's graphs, computed
    once."""
    from engine.ranking.vote_query import key_hashes

    got = _GRAPH_HASHES.get(id(ctx))
    if got is None or got[0] is not ctx:
        got = (ctx, key_hashes(ctx.stack.keys))
        if len(_GRAPH_HASHES) > 16:
            _GRAPH_HASHES.clear()
        _GRAPH_HASHES[id(ctx)] = got
    return got[1]


def model_cycle_columns(table: pd.DataFrame, ctx: SliderContext, idx: np.ndarray) -> pd.DataFrame:
    """``bad_triads`` and ``cycle_share`` per model over the graphs at ``idx`` (see with_model_cycles),
    summed from the context's sparse (graph, model) entries."""
    import numpy as np

    n = ctx.stack.n
    chosen = np.zeros(ctx.stack.T, dtype=bool)
    chosen[np.asarray(idx, dtype=np.int64)] = True
    at_idx = chosen[ctx.part_graph]
    model, bad, pres = ctx.part_model[at_idx], ctx.part_bad[at_idx], ctx.part_present[at_idx]
    seen = np.bincount(model[pres], minlength=n)
    on_bad = np.bincount(model[pres & (bad > 0)], minlength=n)
    share = np.divide(on_bad, seen, out=np.full(n, np.nan), where=seen > 0)
    bad_sum = np.bincount(model, weights=bad, minlength=n)
    pos = {m: i for i, m in enumerate(ctx.stack.models)}
    at = table["model"].map(pos).to_numpy()
    out = table.copy()
    out["bad_triads"] = bad_sum[at].astype(np.int64)
    out["cycle_share"] = share[at]
    return out


def ranked_stack(ctx: SliderContext, idx: np.ndarray, ranker: str) -> GraphStack:
    """The graphs at ``idx`` as one dense GraphStack (over the selection's models), for a ranker that
    reads whole graphs; a LensError first when the dense stack or the ranker's own cost would exceed
    its stated limit (``engine.rankers.objects.Ranker.check_size``)."""
    from engine.rankers import ranker_object

    sub = ctx.stack.subset(idx)
    ranker_object(ranker).check_size(sub.n, sub.keys, {})
    return sub.dense()


def app_leaderboard(
    ctx: SliderContext | GraphStack | GraphBuckets,
    *,
    ranker: str,
    keep_k: int | None,
    mu: float,
    bootstrap: int,
    seed: int,
    reference: pd.Series | None = None,
    reference_note: str = "",
    extra_params: dict | None = None,
    votes: Votes | None = None,
) -> AppBoard:
    """One slider move's engine work: keep-K by S_mu, rank, bootstrap CIs, cycle and reference columns.

    ``ctx`` is a SliderContext (or a GraphStack / GraphBuckets, wrapped on the fly). With ``votes`` (the
    selection's
    ``engine.rankers.votes.Votes``) a count ranker ranks the votes of the kept graphs
    (``engine.ranking.count_board.leaderboard_from_votes``, the CLI's count path); otherwise
    ``engine.ranking.leaderboard.leaderboard_from_stack`` ranks the kept graphs. ``params`` name the
    truncation.
    """
    import numpy as np

    from engine.rankers import ranker_object
    from engine.ranking.count_board import leaderboard_from_votes
    from engine.ranking.leaderboard import compare_to_reference, leaderboard_from_stack

    if not isinstance(ctx, SliderContext):
        ctx = SliderContext.of(ctx)
    idx, threshold = ctx.kept(keep_k, mu)
    params = {
        "keep_k": keep_k,
        "mu": mu if keep_k is not None else None,
        "per_category": False if keep_k else None,
        "pool": ctx.pool if keep_k is not None else None,
        "threshold": threshold,
        "n_graphs_pool": ctx.n_pool if keep_k is not None else ctx.stack.T,
        **(extra_params or {}),
    }
    if votes is not None and ranker_object(ranker).counts:
        kept_votes = votes if keep_k is None else votes.take(np.isin(votes.graph, graph_hashes(ctx)[idx]))
        board = leaderboard_from_votes(kept_votes, ranker=ranker, bootstrap=bootstrap, seed=seed,
                                       extra_params={**params, "n_graphs": len(idx)})
    else:
        board = leaderboard_from_stack(
            ranked_stack(ctx, idx, ranker), ranker=ranker, bootstrap=bootstrap, seed=seed, extra_params=params
        )
    table = board.table
    if not {"votes", "n_prompts"} <= set(table.columns):  # a table without the engine's vote columns
        from engine.views.leaderboard_view import with_participation

        table = with_participation(table, ctx.stack.subset(idx).dense())
    table = with_reference(model_cycle_columns(table, ctx, idx), reference)
    dist = {} if reference is None else compare_to_reference(board, reference)
    return AppBoard(table, board.params, dist, reference_note)
