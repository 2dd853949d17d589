"""The resampling protocols of paper 000 (Section 4.1, Appendix A.3) as one parameterised engine.

Each protocol is a *source pool* per category plus a *draw rule*; every draw is a multiset of graphs
whose W and T (paper 000, eq. 3-4) are fitted by a ranker and compared with a reference ranking:

"Every graph" below means the perturbed pool: originals and paraphrases (sampling replicates only
ever enter the ``sample`` protocol).

==============  ===========================================  ==========================================
protocol        pool (per category)                          draw (each of ``resamples`` outer draws)
==============  ===========================================  ==========================================
trunc           the ``keep`` graphs of smallest S_mu          ``draw`` of them without replacement
sample          the same, on originals + sampling replicates  ``draw`` without replacement
notrunc_boot    every graph                                   as many as the pool, with replacement
scorewin        every graph                                   ``scorewin_draw`` without replacement;
                                                              Copeland on the majority graph
random          ``random_pool`` graphs of the category (all    ``random_reps`` subsets of ``random_draw``
                when it has no more; else a fresh random      of the pool without replacement,
                ``random_pool``-subset per outer resample)    distances averaged
single          original prompts only, keep-K with the K      ``single_draw`` without replacement
                that is best (macro) on that reduced pool
==============  ===========================================  ==========================================

When a pool is smaller than what a rule asks for, the rule takes the whole pool and the row says
so (``degenerate`` with a note): e.g. on data without paraphrases the trunc pool of 25 is the
10 originals, and every draw of 20 is the whole pool, so the interval has width zero. A cell
whose pool is *empty* (``sample`` in a category without sampling replicates, ``single`` without
originals, …) is NaN with a note naming it, and the macro row averages the other categories
(``n_categories`` says over how many). Bradley-Terry fits that stop before the solver's
convergence test is met are counted per cell (``bt_nonconverged``) and named in the note.

Truncation scores come from the graphs as judged, over every model; models without a reference
rating are dropped afterwards, for ranking and distances only.

Random numbers (paper 000 uses seed 20260324): ``engine.experiments.draws`` (a generator per cell;
common random numbers for the keep→draw protocols trunc, sample and single). The sensitivity curves
(``engine.experiments.curves``) use the same numbers, so their K = 25 point with draw 20 is the
Trunc25→20 cell exactly. Keep-K is ``engine.graphs.truncation.keep_k_index``.

This module defines the protocols (parameters, labels, each cell's pool and draws);
``engine.experiments.protocol_runs`` fits them and summarises (``run_protocols``, ``table2``).

Speed: a draw is a row of weights over its pool's graphs; ``weights @ W~`` gives every W~ of a cell
at once, identical W~ are fitted once, and every Bradley-Terry fit is warm-started from the fit on
the cell's whole kept pool (``engine.rankers.bt``; the solution does not depend on the start).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.errors import LensError
from engine.experiments.draws import (
    DEFAULT_SEED,
    bootstrap_weights,
    by_key,
    check_seed,
    keep_draw_job_weights,
    random_pool_weights,
    rng_for,
    subset_weights,
)
from engine.graphs.key_order import key_rank
from engine.graphs.stack import GraphStack
from engine.graphs.truncation import (
    check_weights,
    is_original,
    is_sample,
    keep_k_index,
    keep_k_scores,
)

PROTOCOLS: tuple[str, ...] = ("trunc", "sample", "notrunc_boot", "scorewin", "random", "single")
MACRO = "macro"


@dataclass(frozen=True)
class ProtocolParams:
    """Sizes of every protocol; the defaults are paper 000's (Section 4.1, Appendix A.2-A.3)."""

    keep: int = 25
    draw: int = 20
    scorewin_draw: int = 40
    random_draw: int = 20
    random_reps: int = 10
    random_pool: int = 50
    """Graphs of a category Random draws its subsets from (paper 000: the 50-graph category pool)."""
    single_draw: int = 20
    resamples: int = 100
    seed: int = DEFAULT_SEED
    mu: float = 1.0
    lam3: float = 1.0
    lam4: float | None = None
    copeland_tie: float = 1.0
    """Copeland credit for an exact majority (a bidirectional edge): 1 = out-degree of the majority graph."""

    def validate(self) -> ProtocolParams:
        """The parameters, each refused in one sentence unless a whole number ≥ 1."""
        for name in (
            "keep",
            "draw",
            "scorewin_draw",
            "random_draw",
            "random_reps",
            "random_pool",
            "single_draw",
            "resamples",
        ):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise LensError(f"The protocol parameter {name} must be a whole number ≥ 1; got {v!r}.")
        check_seed(self.seed)
        check_weights(self.mu, self.lam3, self.lam4)
        if not np.isfinite(float(self.copeland_tie)):
            raise LensError(
                f"The score-of-win tie credit must be a finite number; got {self.copeland_tie!r}."
            )
        return self


def label(protocol: str, p: ProtocolParams) -> str:
    """The paper's short name of a protocol cell, with the sizes actually asked for."""
    return {
        "trunc": f"Trunc{p.keep}→{p.draw}",
        "sample": f"Sample{p.keep}→{p.draw}",
        "notrunc_boot": "NoTrunc boot",
        "scorewin": f"ScoreWin{p.scorewin_draw}",
        "random": f"Random{p.random_pool}→{p.random_draw}×{p.random_reps}",
        "single": f"Single→{p.single_draw}",
    }[protocol]


BT_FIT = "bt"
"""A job fitted by half-tie Bradley-Terry (one warm-started batch, ``batch_fits.bt_scores_info``)."""
COPELAND_FIT = "copeland_majority"
"""A job fitted by Copeland on the strict-win majority graph (ScoreWin,
``batch_fits.copeland_majority_batch``)."""
PROTOCOL_FITS = (BT_FIT, COPELAND_FIT)
"""The fits a protocol job names in ``Job.ranker`` (the protocols' own batched kernels, not the
registry's)."""


@dataclass(frozen=True)
class Job:
    """One (protocol, category) cell: ``weights`` (rows, P) over the graphs at stack positions ``cols``."""

    protocol: str
    category: str
    cols: np.ndarray  # (P,) stack positions
    weights: np.ndarray  # (rows, P) multiplicities
    reps: int  # rows averaged per outer resample (random), else 1
    ranker: str
    n_pool: int
    n_keep: int
    n_draw: int
    note: str
    T: int

    @property
    def empty(self) -> bool:
        """No graph to draw from: the cell is NaN and stays out of the macro average."""
        return self.weights.shape[1] == 0 or self.n_keep == 0

    @property
    def counts(self) -> np.ndarray:
        """(rows, T) multiplicities over every graph of the stack."""
        out = np.zeros((self.weights.shape[0], self.T))
        out[:, self.cols] = self.weights
        return out


def rated_columns(stack: GraphStack, models: tuple[str, ...] | list[str]) -> np.ndarray:
    """Positions of ``models`` (the reference-rated ones, in their order) among the stack's models: every
    model is ranked, the distances read these columns of the fitted scores."""
    where = {m: i for i, m in enumerate(stack.models)}
    return np.array([where[m] for m in models], dtype=np.int64)


def category_positions(stack: GraphStack) -> dict[str, np.ndarray]:
    """Category → positions of its graphs in ``stack`` (categories sorted; missing ones as "(none)")."""
    cats = stack.keys["category"].astype("string").fillna("(none)").to_numpy(dtype=object)
    return {c: np.flatnonzero(cats == c) for c in sorted(set(cats))}


def pool_note(pool_size: int, keep: int | None, draw: int, replace_: bool) -> tuple[int, int, str]:
    """(kept, drawn, note): how many graphs a protocol keeps and draws from a pool this size, and why
    fewer."""
    kept = pool_size if keep is None else min(keep, pool_size)
    notes = []
    if keep is not None and keep > pool_size:
        notes.append(f"pool has {pool_size} < keep {keep}")
    n_draw = draw if replace_ else min(draw, kept)
    if not replace_ and draw >= kept:
        notes.append("each draw is the whole kept pool (no resampling spread)")
    return kept, n_draw, "; ".join(notes)


def keep_scores(stack: GraphStack, p: ProtocolParams) -> np.ndarray:
    """Each graph's keep-K score as ``engine.graphs.truncation.keep_k_scores`` scores it for the CLI, the app
    and the curves (coverage-normalised S_mu, reference capacity over the perturbed pool's graphs that can
    hold a cycle, else over all such graphs); the raw S_mu where all graphs compare the same pairs."""
    from engine.graphs.cycles import cycle_capacity, cycle_counts

    counts, capacity = cycle_counts(stack), cycle_capacity(stack)
    scored = keep_k_scores(stack.keys, counts, capacity, pool="perturbed", mu=p.mu, lam3=p.lam3, lam4=p.lam4)
    if scored.pos.size == 0:  # no perturbed graph can hold a cycle: the sampling cells still rank theirs
        scored = keep_k_scores(stack.keys, counts, capacity, pool="all", mu=p.mu, lam3=p.lam3, lam4=p.lam4)
    return scored.scores


def build_jobs(stack: GraphStack, protocols: tuple[str, ...], p: ProtocolParams, single_k: int | None = None,
               scores: np.ndarray | None = None) -> list[Job]:
    """The draws of every (protocol, category) cell as weight matrices over the cell's pool.

    ``scores``: keep-K score of the stack's graphs (default ``keep_scores`` on ``stack``; ``run_protocols``
    passes the scores of the graphs before models were dropped). Seeds: see the module docstring.
    """
    cats = category_positions(stack)
    scores = keep_scores(stack, p) if scores is None else scores
    krank = key_rank(stack.keys)
    orig, samp = is_original(stack.keys), is_sample(stack.keys)
    T, R = stack.T, p.resamples
    jobs: list[Job] = []
    for proto in protocols:
        if proto not in PROTOCOLS:
            raise LensError(f"Unknown protocol {proto!r}; choose from {', '.join(PROTOCOLS)}.")
        for cat, allpos in cats.items():
            pos = by_key(allpos[~samp[allpos]], krank)  # the perturbed pool: originals + paraphrases
            empty = "no original or paraphrased prompts"
            if proto in ("trunc", "sample", "single"):
                if proto == "trunc":
                    pool, k, draw, note0 = pos, p.keep, p.draw, ""
                elif proto == "sample":  # the original prompt's sampling replicates (and the original)
                    has = samp[allpos].any()
                    pool = allpos[orig[allpos] | samp[allpos]] if has else allpos[:0]
                    k, draw, note0, empty = p.keep, p.draw, "", "no sampling replicates"
                else:
                    pool, draw = pos[orig[pos]], p.single_draw
                    k = single_k if single_k is not None else p.keep
                    note0, empty = f"K={k}", "no original prompts"
                kept, m, note = pool_note(pool.size, k, draw, False)
                cols, w = keep_draw_job_weights(
                    pool, keep_k_index(scores, krank, k, among=pool), m, krank, p.seed, cat, R
                )
                note = "; ".join(x for x in (note0, note) if x)
                jobs.append(Job(proto, cat, cols, w, 1, BT_FIT, pool.size, kept, m, note, T))
            elif proto == "notrunc_boot":
                w = bootstrap_weights(rng_for(p.seed, proto, cat), pos.size, R)
                jobs.append(Job(proto, cat, pos, w, 1, BT_FIT, pos.size, pos.size, pos.size, "", T))
            elif proto == "scorewin":
                kept, m, note = pool_note(pos.size, None, p.scorewin_draw, False)
                w = subset_weights(rng_for(p.seed, proto, cat), pos.size, p.scorewin_draw, R)
                jobs.append(Job(proto, cat, pos, w, 1, COPELAND_FIT, pos.size, kept, m, note, T))
            else:  # random
                kept, m, note = pool_note(min(pos.size, p.random_pool), None, p.random_draw, False)
                w = random_pool_weights(rng_for(p.seed, proto, cat), pos.size, p.random_pool, p.random_draw,
                                        R, p.random_reps)
                if 0 < pos.size < p.random_pool:
                    note = "; ".join(
                        x for x in (f"category pool has {pos.size} < {p.random_pool} graphs", note) if x
                    )
                elif pos.size > p.random_pool:
                    note = "; ".join(
                        x for x in (f"a random {p.random_pool} of {pos.size} graphs per resample", note) if x
                    )
                jobs.append(Job(proto, cat, pos, w, p.random_reps, BT_FIT, pos.size, kept, m, note, T))
            if jobs[-1].empty:
                jobs[-1] = replace(
                    jobs[-1], note=f"{label(proto, p)} / {cat}: empty pool ({empty}); left out of the macro"
                )
    return jobs


__all__ = [
    "MACRO",
    "PROTOCOLS",
    "Job",
    "ProtocolParams",
    "build_jobs",
    "category_positions",
    "keep_scores",
    "rated_columns",
    "label",
    "pool_note",
]
