"""PGED (paper 002): ensemble graphs, denoise by greedy weighted feedback arc set, rank by descendants.

Graph ensemble (Section 3.2): w_E(u, v) = sum over graphs of alpha_t * [u beat v in graph t] (strict
wins; ties are ignored as in Section 4). Denoising: Algorithm 1 (engine.graphs.denoise). Graph to ranking
(Section 3.4): desc(v) = number of vertices reachable from v in the DAG, higher first, ties broken by
model name.

Delta ties (``delta_ties``). Algorithm 1 picks "a" vertex of largest weighted out-minus-in degree and
leaves ties open; they are common (per question on vicuna80 with every judge pooled, 64 of 80
ensembles have one). ``"average"`` (default): the descendant counts are averaged over every way of
breaking those ties, each equally likely (``engine.graphs.denoise.expected_descendants_batch``), so no
model gains from its name: two prompts that are both the cycle a > b > c > a give a, b and c equal
scores. ``"name"``: the literal reading with the tie going to the first model by name (the earlier
behaviour). Either way the DAG returned for display (``extras["graph"]``, ``removed``, the arc
counts in ``details``) is Algorithm 1 with ties to the first name: one representative of the tied
choices, which is the one place names still matter (besides listing equal scores by name).

Two modes:

- ``mode="per-prompt"`` (default; the paper's model-ranking procedure, Section 4.2 with Algorithm 2):
  for every question (dataset, prompt_id, turn) the graphs of its judges and variants are ensembled,
  denoised and turned into a ranking R_q over the models compared in that question; the rankings are
  then aggregated by a rank-ensemble method of Appendix Q (``aggregate``): ``weight-score`` (default;
  eq. 7-8, the method the paper uses to represent its ablation), ``kemeny`` (eq. 9, exact for
  n <= 12) or ``pairwise-majority`` (eq. 11 read as Copeland on the majority relation). Models tied
  on descendants inside a question share the average of their positions (``prompt_ties="average"``,
  default) so that a name never earns points; ``prompt_ties="name"`` is the paper's literal
  lexicographic tie-break inside each question. Models with equal final scores share a rank; the
  order listed (``extras["order"]``) shows them by name.
- ``mode="global"``: one ensemble over every graph of the selection, denoised once, ranked by
  descendant count (the earlier behaviour; what the inspector shows for one graph either way).

``extras``: ``order`` (the total order), ``graph`` (the denoised DAG; in per-prompt mode the weighted
sum of every question's DAG), ``ensemble``, ``removed`` ((winner, loser, weight) summed over
questions) and, per prompt, ``prompt_descendants`` (question × model descendant counts).
"""

from __future__ import annotations

import weakref

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.denoise import (
    DELTA_TIES,
    TIE_RTOL,
    denoise,
    denoise_batch,
    descendant_counts_batch,
    expected_descendants_batch,
)
from engine.graphs.min_fas import (
    EXACT_FAS_MAX_N,
    MAX_ENUMERATED_ORDERS,
    exact_descendants_batch,
    min_fas_batch,
)
from engine.graphs.stack import GraphStack
from engine.rankers.base import (
    RankResult,
    adjacency_frame,
    check_stack,
    distinct_rows,
    ordered_ranks_batch,
    register,
    series,
)
from engine.rankers.kemeny import kemeny_scores_batch
from engine.rankers.simple import graph_weights

MODES = ("per-prompt", "global")
AGGREGATES = ("weight-score", "kemeny", "pairwise-majority")
PROMPT_TIES = ("average", "name")
FAS_METHODS = ("greedy", "exact")
FAS_TEXT = {
    "greedy": "greedy feedback arc set (paper 002, Algorithm 1)",
    "exact": f"minimum feedback arc set (exact subset DP, graphs of at most {EXACT_FAS_MAX_N} models with "
             "arcs; larger ones use the greedy)",
}
QUESTION_KEY = ("dataset", "prompt_id", "turn")
EXACT_TIES_TEXT = {
    "average": "several minimum feedback arc sets: descendant counts averaged over every minimum set "
               "(exact; when over 2048 orders: the order with ties to the first name); name-independent",
    "name": "several minimum feedback arc sets: the optimal order with ties to the first model by name",
}
DISPLAY_TEXT = {
    "greedy": "Algorithm 1 with delta ties to the first model by name (one of the tied choices)",
    "exact": "a minimum feedback arc set: the optimal order with ties to the first model by name",
}
DELTA_TIES_TEXT = {
    "average": "Algorithm 1's delta ties broken uniformly at random, descendant counts averaged over every "
               "tie path (exact; more than 2048 paths: tied candidates taken together); name-independent",
    "name": "Algorithm 1's delta ties to the first model by name (the literal reading; name-dependent)",
}
AGGREGATE_TEXT = {
    "weight-score": "weight score (paper 002, App. Q eq. 7-8): sum over questions of l_q - r_q + 1, 0 when "
                    "absent",
    "kemeny": "Kemeny (paper 002, App. Q eq. 9): the order with most agreements with the per-question "
              "rankings",
    "pairwise-majority": "pairwise majority (paper 002, App. Q eq. 11): pairs where most per-question "
                         "rankings put the model above, + half the draws, among pairs some question ranked",
}


PGED_MAX_MODELS = 150
"""The most models PGED ranks. Algorithm 1's delta-tie paths (up to ``MAX_TIE_PATHS`` per ensemble)
each carry (n, n) arrays through n greedy steps, so one ensemble costs up to 2048 * n^3 operations and
2048 * n^2 cells: at 150 models about 0.4 GB per array and seconds per question."""

PGED_ENSEMBLE_CELL_LIMIT = 50_000_000
"""The most question x model x model cells of the per-question ensembles (float64: 0.4 GB each)."""


def check_pged_size(n: int, keys: pd.DataFrame, mode: str = "per-prompt") -> None:
    """Refuse, in one sentence and before any ensemble exists, a selection beyond ``PGED_MAX_MODELS``
    models or, per prompt, beyond ``PGED_ENSEMBLE_CELL_LIMIT`` question x model x model cells."""
    if n > PGED_MAX_MODELS:
        raise LensError(
            f"PGED ranks at most {PGED_MAX_MODELS} models (its denoising costs up to 2048 * n^3 steps per "
            f"ensemble), and this selection has {n:,}; choose a ranker fitted from counts (bt, davidson, "
            "elo, winrate, ...) or a smaller selection."
        )
    if mode != "per-prompt":
        return
    cols = [c for c in QUESTION_KEY if c in keys.columns]
    n_q = int(keys.groupby(cols, dropna=False, observed=True).ngroups) if cols else len(keys)
    if n_q * n * n > PGED_ENSEMBLE_CELL_LIMIT:
        raise LensError(
            f"Per-prompt PGED would hold {n_q:,} question ensembles over {n} models ({n_q * n * n:,} cells, "
            f"more than {PGED_ENSEMBLE_CELL_LIMIT:,}); use --param mode=global, a ranker fitted from counts, "
            "or a smaller selection."
        )


def question_ids(stack: GraphStack) -> tuple[np.ndarray, pd.DataFrame]:
    """(T,) question index per graph (a question = dataset, prompt_id, turn) and the question keys."""
    cols = [c for c in QUESTION_KEY if c in stack.keys.columns]
    if not cols:
        return np.arange(stack.T), pd.DataFrame(index=range(stack.T))
    codes = stack.keys.groupby(cols, sort=True, dropna=False, observed=True).ngroup().to_numpy(np.int64)
    first = pd.Series(np.arange(stack.T)).groupby(codes).first().to_numpy()
    return codes, stack.keys.iloc[first][cols].reset_index(drop=True)


def check_delta_ties(delta_ties: str, fas: str = "greedy") -> None:
    """Refuse an unknown ``delta_ties`` or ``fas`` with one sentence listing the choices."""
    if delta_ties not in DELTA_TIES:
        raise LensError(f"Unknown delta_ties {delta_ties!r}; choose {' or '.join(DELTA_TIES)}.")
    if fas not in FAS_METHODS:
        raise LensError(f"Unknown PGED fas {fas!r}; choose {' or '.join(FAS_METHODS)}.")


def ensemble_descendants(
    w: np.ndarray, delta_ties: str, fas: str = "greedy"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(G, n, n) ensembles → (descendant counts (G, n) float, tie paths (G,), grouped fallback (G,) bool,
    greedy fallback (G,) bool).

    ``fas="greedy"``: Algorithm 1, its delta ties by ``delta_ties``; tie paths = the paths averaged over
    (1: no tie), grouped = more than 2048 paths. ``fas="exact"``: the DAG of a minimum feedback arc set
    (engine.graphs.min_fas); with ``delta_ties="average"`` the counts are averaged over every minimum
    arc set (tie paths = their number; grouped = enumerating them needed more than 2048 orders, so the
    representative order was used), with ``"name"`` the representative order (ties to the first name).
    Ensembles with more than ``EXACT_FAS_MAX_N`` models with arcs use the greedy, flagged in the last
    array.
    """
    check_delta_ties(delta_ties, fas)
    w = np.asarray(w, dtype=np.float64)
    G = w.shape[0]
    greedy = np.zeros(G, dtype=bool)
    if fas == "exact":
        desc, paths, grouped, solved = exact_descendants_batch(w, max_sets=0 if delta_ties == "name" else
                                                                MAX_ENUMERATED_ORDERS)
        if delta_ties == "name":
            paths, grouped = np.ones(G, dtype=np.int64), np.zeros(G, dtype=bool)
        greedy = ~solved
        if not greedy.any():
            return desc, paths, grouped, greedy
        d_g, p_g, o_g, _ = ensemble_descendants(w[greedy], delta_ties)
        desc[greedy], paths[greedy], grouped[greedy] = d_g, p_g, o_g
        return desc, paths, grouped, greedy
    if delta_ties == "average":
        return (*expected_descendants_batch(w), greedy)
    _, dag, _ = denoise_batch(w)
    return (
        descendant_counts_batch(dag).astype(np.float64),
        np.ones(G, dtype=np.int64),
        np.zeros(G, dtype=bool),
        greedy,
    )


def denoise_display(w: np.ndarray, fas: str = "greedy") -> tuple[np.ndarray, np.ndarray]:
    """The DAGs shown to users for (G, n, n) ensembles: (DAG weights (G, n, n), removed arcs (G, n, n)
    bool). Greedy: Algorithm 1 with delta ties to the first name; exact: the minimum feedback arc set of
    the representative order (ties to the first name), the greedy's above ``EXACT_FAS_MAX_N`` models."""
    w = np.array(w, dtype=np.float64)
    n = w.shape[1]
    w[:, np.arange(n), np.arange(n)] = 0.0
    _, dag, removed = denoise_batch(w)
    if fas != "exact":
        return dag, removed
    m = min_fas_batch(w)
    removed = np.where(m.solved[:, None, None], m.removed, removed)
    return np.where(removed, 0.0, w), removed


def pged_from_weights(
    w: np.ndarray, models: tuple[str, ...], delta_ties: str = "average", fas: str = "greedy"
) -> RankResult:
    """PGED steps 2-3 on one ensemble weight matrix (row beats column): the global mode."""
    w = np.asarray(w, dtype=np.float64)
    desc_g, paths_g, grouped_g, greedy_g = ensemble_descendants(w[None], delta_ties, fas)
    desc, paths, grouped, greedy = desc_g[0], int(paths_g[0]), bool(grouped_g[0]), bool(greedy_g[0])
    dag_g, removed_g = denoise_display(w[None], fas)
    dag, removed_mask = dag_g[0], removed_g[0]
    order = final_order(models, desc, None)
    removed = [
        (models[i], models[j], float(w[i, j])) for i, j in zip(*np.nonzero(removed_mask), strict=True)
    ]
    exact_shown = fas == "exact" and not greedy
    details = {
        "mode": "global: one ensemble over every graph, denoised once",
        "score": "descendant count in the denoised DAG (paper 002, eq. 5); ties broken by model name",
        "fas": FAS_TEXT[fas],
        "fas_greedy_fallback": greedy,
        "delta_ties": EXACT_TIES_TEXT[delta_ties] if exact_shown else DELTA_TIES_TEXT[delta_ties],
        "n_tie_paths": None if grouped else paths,
        "tie_fallback": grouped,
        "display_graph": DISPLAY_TEXT["exact" if exact_shown else "greedy"],
        "n_removed_arcs": len(removed),
        "removed_weight": float(np.where(removed_mask, w, 0.0).sum()),
        "total_weight": float(w.sum() - np.trace(w)),
    }
    if not exact_shown:
        details["greedy_sequence"] = [models[i] for i in denoise(w).order]
    extras = {
        "graph": adjacency_frame(models, dag),
        "ensemble": adjacency_frame(models, w),
        "removed": removed,
        "order": order,
    }
    return RankResult("pged", series(models, desc), details, extras)


def distinct_ensembles(wq: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct (ensemble, presence) pair, its index for every row): a battle log's
    one-pair questions hold a few hundred distinct ensembles among tens of thousands, and every step of
    a question's ranking reads only its own ensemble and presence, so equal rows rank equally.

    Read through each row's nonzero entries only (a one-pair question fills 2 of its n^2 cells): rows are
    grouped by two random projections of those entries, then every row is checked entry for entry
    against its group's first row (the same cells, values and present models); where any check fails
    (two different rows projected alike), the dense rows are grouped byte for byte
    (``engine.rankers.base.distinct_rows``). So rows share a group only when they are equal."""
    G = wq.shape[0]
    flat = np.asarray(wq, dtype=np.float64).reshape(G, -1)
    shown = np.asarray(present, dtype=bool).reshape(G, -1)
    row, cell = np.nonzero(flat)  # row by row, cells in order
    value = flat[row, cell]
    p_row, p_model = np.nonzero(shown)
    proj = np.random.default_rng(0x9ED).standard_normal((2, flat.shape[1] + shown.shape[1]))
    h = np.stack([np.bincount(row, value * pk[cell], minlength=G)
                  + np.bincount(p_row, pk[flat.shape[1] + p_model], minlength=G) for pk in proj], axis=1)
    _, first, inverse = np.unique(h, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    rep = first[inverse]
    if _same_entries(row, cell, value, G, rep) and _same_entries(p_row, p_model, None, G, rep):
        return first, inverse
    return distinct_rows(np.concatenate([flat, shown.astype(np.float64)], axis=1))


def _same_entries(row: np.ndarray, col: np.ndarray, value: np.ndarray | None, G: int,
                  rep: np.ndarray) -> bool:
    """Whether every row g of a sparse matrix (its entries ``row``, ``col``, ``value`` row by row, columns
    in order; ``value`` None: all ones) holds exactly the entries of row ``rep[g]``."""
    count = np.bincount(row, minlength=G)
    if not np.array_equal(count, count[rep]):
        return False
    start = np.cumsum(count) - count
    other = start[rep[row]] + (np.arange(row.size) - start[row])  # the same entry of the group's first row
    return bool(np.array_equal(col, col[other]) and (value is None or np.array_equal(value, value[other])))


def prompt_rankings(
    wq: np.ndarray, present: np.ndarray, prompt_ties: str = "average", delta_ties: str = "average",
    display: bool = False, fas: str = "greedy",
) -> tuple:
    """Per-question PGED rankings for (G, n, n) ensemble weights and (G, n) presence masks.

    Returns (points (G, n) = l - r + 1 for present models, 0 otherwise (eq. 7), above (G, n, n) bool =
    ranked strictly above, both present, descendant counts (G, n) (averaged over delta-tie paths with
    ``delta_ties="average"``), tie paths (G,), grouped fallback (G,), greedy fallback of ``fas="exact"``
    (G,)), plus with ``display`` the name-rule DAGs (G, n, n) and removed arcs (G, n, n) shown to users.
    """
    G, n, _ = wq.shape
    first, inverse = distinct_ensembles(wq, present)
    if first.size < G:  # equal ensembles give equal rankings: rank each distinct one once
        once = prompt_rankings(wq[first], present[first], prompt_ties, delta_ties, display, fas)
        return tuple(x[inverse] for x in once)
    desc, paths, grouped, greedy = ensemble_descendants(wq, delta_ties, fas)
    both = present[:, :, None] & present[:, None, :]
    gap = desc[:, None, :] - desc[:, :, None]  # gap[g, i, j] = desc_j - desc_i
    tol = TIE_RTOL * np.maximum(1.0, np.maximum(np.abs(desc[:, None, :]), np.abs(desc[:, :, None])))
    higher = (gap > tol) & both  # higher[g, i, j]: j has more descendants than i
    same = (np.abs(gap) <= tol) & both & ~np.eye(n, dtype=bool)
    if prompt_ties == "average":
        r = 1.0 + higher.sum(axis=2) + 0.5 * same.sum(axis=2)
    elif prompt_ties == "name":
        before = same & (np.arange(n)[None, None, :] < np.arange(n)[None, :, None])
        r = 1.0 + higher.sum(axis=2) + before.sum(axis=2)
    else:
        raise LensError(f"Unknown prompt_ties {prompt_ties!r}; choose {' or '.join(PROMPT_TIES)}.")
    length = present.sum(axis=1, keepdims=True)
    points = np.where(present, length - r + 1.0, 0.0)
    above = (r[:, :, None] < r[:, None, :]) & both
    if not display:
        return points, above, desc, paths, grouped, greedy
    dag, removed = denoise_display(wq, fas)
    return points, above, desc, paths, grouped, greedy, dag, removed


def aggregate_rankings(
    points: np.ndarray, above: np.ndarray, m: np.ndarray, aggregate: str, exact_max: int = 12
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Aggregate per-question rankings with question weights m (B, Q) → (scores (B, n), orders, counts).

    ``points`` (Q, n) and ``above`` (Q, n, n) are fixed rankings, or (B, Q, n) / (B, Q, n, n) when the
    rankings differ per resample. Orders (B, n) are returned for Kemeny only.
    """
    m = np.asarray(m, dtype=np.float64)
    per_b = points.ndim == 3
    if aggregate == "weight-score":
        score = np.einsum("bq,bqn->bn", m, points) if per_b else m @ points
        return score, None, None
    C = np.einsum("bq,bqij->bij", m, above.astype(np.float64)) if per_b else np.einsum(
        "bq,qij->bij", m, above.astype(np.float64))
    if aggregate == "kemeny":
        scores, orders, _, counts = kemeny_scores_batch(C, exact_max)
        return scores, orders, counts
    if aggregate == "pairwise-majority":
        n = C.shape[1]
        ranked = (C + C.swapaxes(1, 2)) > 0
        won = (C > C.swapaxes(1, 2)).sum(axis=2)
        drawn = ((C == C.swapaxes(1, 2)) & ranked & ~np.eye(n, dtype=bool)).sum(axis=2)
        return won + 0.5 * drawn, None, None
    raise LensError(f"Unknown PGED aggregate {aggregate!r}; choose {', '.join(AGGREGATES)}.")


def prompt_ensembles(
    stack: GraphStack, g: np.ndarray, q_of_t: np.ndarray, n_q: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-question ensembles for graph weights g (B, T): weights (B, Q, n, n) and presence (B, Q, n).

    One sparse product: rows (b, q), columns graphs t of question q, values g[b, t], times each graph's
    wins as a sparse (T, n * n) matrix (a battle log's graph holds one pair of its n^2 cells, so the
    product reads its few wins, not n^2 zeros per graph; each sum still adds its nonzero terms in graph
    order, so the weights are those of the dense product to the bit: the skipped terms are +0.0). A
    model is present in a question when a graph of it with positive weight compared the model.
    """
    from scipy import sparse  # here, not at the top: scipy.sparse costs the plain leaderboard's start ~0.5 s

    n, T = stack.n, stack.T
    g = np.asarray(g, dtype=np.float64)
    B = g.shape[0]
    rows = (np.arange(B)[:, None] * n_q + q_of_t[None, :]).ravel()
    cols = np.tile(np.arange(T), B)
    mix = sparse.csr_matrix((g.ravel(), (rows, cols)), shape=(B * n_q, T))
    t, i, j = np.nonzero(stack.wins)
    wins = sparse.csr_matrix((np.ones(t.size), (t, i * n + j)), shape=(T, n * n))
    seen_t, seen_m = np.nonzero(stack.observed.any(axis=2))
    seen = sparse.csr_matrix((np.ones(seen_t.size), (seen_t, seen_m)), shape=(T, n))
    wq = (mix @ wins).toarray().reshape(B, n_q, n, n)
    pres = ((mix > 0).astype(np.float64) @ seen).toarray().reshape(B, n_q, n) > 0
    return wq, pres


_LAST_RANKINGS: list[tuple] = []
"""The per-question rankings of the last per-prompt point fit: (the stack, weakly; its graph weights; the
ranking words; points; above). A bootstrap whose resamples keep each question's rankings fixed (prompt
resampling, or one graph per question) reads the very rankings the point fit of the same stack and
weights just computed, instead of building the B = 1 ensembles and ranking them again."""


def _keep_rankings(stack: GraphStack, alpha: np.ndarray, words: tuple, points: np.ndarray,
                   above: np.ndarray) -> None:
    """Keep the point fit's per-question rankings (read-only) for ``_kept_rankings``; one entry, dropped
    with its stack."""
    points, above = np.array(points), np.array(above)
    points.setflags(write=False)
    above.setflags(write=False)
    _LAST_RANKINGS[:] = [(weakref.ref(stack), np.array(alpha, dtype=np.float64), words, points, above)]


def _kept_rankings(stack: GraphStack, alpha: np.ndarray,
                   words: tuple) -> tuple[np.ndarray, np.ndarray] | None:
    """(points, above) of the last point fit when it ranked this very stack with equal graph weights and
    ranking words, else None."""
    last = _LAST_RANKINGS[:]
    if not last:
        return None
    ref, kept_alpha, kept_words, points, above = last[0]
    same_weights = kept_alpha.tobytes() == np.asarray(alpha, dtype=np.float64).tobytes()  # bit for bit
    if ref() is not stack or kept_words != words or not same_weights:
        return None
    return points, above


def pged_per_prompt_scores(
    stack: GraphStack,
    alpha: np.ndarray,
    m: np.ndarray,
    *,
    aggregate: str,
    prompt_ties: str,
    exact_max: int = 12,
    g: np.ndarray | None = None,
    chunk_cells: int = 20_000_000,
    delta_ties: str = "average",
    fas: str = "greedy",
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-prompt PGED scores for B weightings at once; returns (scores (B, n), Kemeny orders or None).

    ``m`` (B, Q): question weights of the aggregation (bootstrap multiplicities). ``g`` (B, T): graph
    weights of the per-question ensembles; None means ``alpha`` for every row, so one set of
    per-question rankings serves all B (the ensembles only change by a positive factor per question,
    which Algorithm 1, the minimum feedback arc set and the descendant counts ignore).
    """
    q_of_t = question_ids(stack)[0]
    n_q = int(q_of_t.max()) + 1 if q_of_t.size else 0
    n = stack.n
    m = np.asarray(m, dtype=np.float64)
    if g is None:
        kept = _kept_rankings(stack, alpha, (prompt_ties, delta_ties, fas))
        if kept is None:
            wq, pres = prompt_ensembles(stack, np.asarray(alpha, dtype=np.float64)[None], q_of_t, n_q)
            points, above, *_ = prompt_rankings(wq[0], pres[0], prompt_ties, delta_ties, fas=fas)
        else:
            points, above = kept
        score, orders, _ = aggregate_rankings(points, above, m, aggregate, exact_max)
        return score, orders
    B = g.shape[0]
    step = max(1, chunk_cells // max(1, n_q * n * n))
    score_rows: list[np.ndarray] = []
    order_rows: list[np.ndarray | None] = []
    for b0 in range(0, B, step):
        gb = g[b0:b0 + step] * np.asarray(alpha, dtype=np.float64)[None]
        nb = gb.shape[0]
        wq, pres = prompt_ensembles(stack, gb, q_of_t, n_q)
        points, above, *_ = prompt_rankings(
            wq.reshape(nb * n_q, n, n), pres.reshape(nb * n_q, n), prompt_ties, delta_ties, fas=fas
        )
        s, o, _ = aggregate_rankings(points.reshape(nb, n_q, n), above.reshape(nb, n_q, n, n), m[b0:b0 + nb],
                                     aggregate, exact_max)
        score_rows.append(s)
        order_rows.append(o)
    chunk_orders = [o for o in order_rows if o is not None]  # every chunk has orders (kemeny) or none
    return np.vstack(score_rows), (np.vstack(chunk_orders) if chunk_orders else None)


def final_order(models: tuple[str, ...], score: np.ndarray, kemeny_order: np.ndarray | None) -> list[str]:
    """The order listed: Kemeny's representative order, else score descending (ties within the tolerance
    of ``ranks_from_scores``) with equal scores listed by model name; models with equal scores still
    share a rank (``RankResult.ranks``)."""
    if kemeny_order is not None:
        return [models[i] for i in kemeny_order]
    pos = ordered_ranks_batch(np.asarray(score, dtype=np.float64)[None], models)[0]
    return [models[i] for i in np.argsort(pos)]


def pged_per_prompt(
    stack: GraphStack, alpha: np.ndarray, *, aggregate: str, prompt_ties: str, exact_max: int,
    delta_ties: str = "average", fas: str = "greedy",
) -> RankResult:
    """The paper's model-ranking PGED: per-question ensemble → Algorithm 1 (or the minimum feedback arc
    set, ``fas="exact"``) → ranking → rank ensemble."""
    models = stack.models
    q_of_t, qkeys = question_ids(stack)
    n_q = len(qkeys)
    wq, pres = prompt_ensembles(stack, alpha[None], q_of_t, n_q)
    wq, pres = wq[0], pres[0]
    points, above, desc, paths, grouped, greedy, dag, removed = prompt_rankings(
        wq, pres, prompt_ties, delta_ties, display=True, fas=fas
    )
    _keep_rankings(stack, alpha, (prompt_ties, delta_ties, fas), points, above)
    score, orders, counts = aggregate_rankings(points, above, np.ones((1, n_q)), aggregate, exact_max)
    score = score[0]
    order = final_order(models, score, None if orders is None else orders[0])
    removed_w = np.where(removed, wq, 0.0).sum(axis=0)
    removed_list = sorted(
        (
            (models[i], models[j], float(removed_w[i, j]))
            for i, j in zip(*np.nonzero(removed.any(axis=0)), strict=True)
        ),
        key=lambda e: (-e[2], e[0], e[1]),
    )
    label = (
        [" / ".join(str(v) for v in row) for row in qkeys.itertuples(index=False)] if qkeys.shape[1] else None
    )
    details: dict[str, object] = {
        "mode": "per-prompt: one ensemble per question (its judges and variants), denoised, ranked, then "
                "aggregated (paper 002, Section 4.2)",
        "aggregate": aggregate,
        "score": AGGREGATE_TEXT[aggregate],
        "prompt_ties": (
            "models tied on descendants within a question share the average of their positions"
            if prompt_ties == "average"
            else "ties on descendants within a question broken by model name (paper 002, eq. 6)"
        ),
        "final_tie_break": "none: equal scores share a rank (the order shown lists them by model name"
        + ("; Kemeny scores averaged over the co-optimal orders)" if aggregate == "kemeny" else ")"),
        "fas": FAS_TEXT[fas],
        "delta_ties": EXACT_TIES_TEXT[delta_ties] if fas == "exact" else DELTA_TIES_TEXT[delta_ties],
        "n_prompts_with_delta_ties": int(((paths > 1) | grouped).sum()),
        "n_prompts_tie_fallback": int(grouped.sum()),
        "display_graph": "per question, " + DISPLAY_TEXT[fas] + ", summed",
        "n_prompts": n_q,
        "n_prompts_with_cycles_removed": int(removed.any(axis=(1, 2)).sum()),
        "n_removed_arcs": int(removed.sum()),
        "removed_weight": float(removed_w.sum()),
        "total_weight": float(wq.sum()),
    }
    if fas == "exact":
        details["n_prompts_fas_greedy_fallback"] = int(greedy.sum())
    if aggregate == "kemeny" and counts is not None:
        details["co_optimal_orders"] = None if np.isnan(counts[0]) else int(counts[0])
    extras = {
        "graph": adjacency_frame(models, dag.sum(axis=0)),
        "ensemble": adjacency_frame(models, wq.sum(axis=0)),
        "removed": removed_list,
        "order": order,
        "prompt_descendants": pd.DataFrame(np.where(pres, desc, np.nan), columns=list(models), index=label),
    }
    return RankResult("pged", series(models, score), details, extras)


@register("pged", "PGED: per-prompt graph ensemble, feedback-arc-set denoising (greedy, or exact with "
                  "fas=exact), rank ensemble (paper 002)")
def pged(
    stack: GraphStack,
    *,
    weights: np.ndarray | dict | None = None,
    mode: str = "per-prompt",
    aggregate: str = "weight-score",
    prompt_ties: str = "average",
    delta_ties: str = "average",
    exact_max: int = 12,
    fas: str = "greedy",
) -> RankResult:
    """PGED (paper 002): per-graph rankings from feedback-arc-set denoising (``fas``: ``greedy``, the
    paper's Algorithm 1, or ``exact``, a minimum set), combined by ``aggregate``."""
    check_stack(stack, "pged")
    check_delta_ties(delta_ties, fas)
    check_pged_size(stack.n, stack.keys, mode)
    if mode not in MODES:
        raise LensError(f"Unknown PGED mode {mode!r}; choose {' or '.join(MODES)}.")
    if aggregate not in AGGREGATES:
        raise LensError(f"Unknown PGED aggregate {aggregate!r}; choose {', '.join(AGGREGATES)}.")
    if prompt_ties not in PROMPT_TIES:
        raise LensError(f"Unknown prompt_ties {prompt_ties!r}; choose {' or '.join(PROMPT_TIES)}.")
    alpha = graph_weights(stack, weights)
    if mode == "global":
        w = np.einsum("t,tij->ij", alpha, stack.wins.astype(np.float64))
        res = pged_from_weights(w, stack.models, delta_ties, fas)
        return RankResult(
            res.ranker, res.scores, {**res.details, "weighted": weights is not None}, res.extras
        )
    res = pged_per_prompt(stack, alpha, aggregate=aggregate, prompt_ties=prompt_ties, exact_max=exact_max,
                          delta_ties=delta_ties, fas=fas)
    return RankResult(res.ranker, res.scores, {**res.details, "weighted": weights is not None}, res.extras)
