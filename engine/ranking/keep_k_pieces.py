"""Keep-K for a count ranker over a stored selection read in pieces of whole graphs
(``Store.verdict_pieces``), so ``leaderboard --keep-k`` holds one piece's graphs at a time whatever the
dataset's size.

The first pass builds each piece's graphs, counts their bad cycles and the cycles their compared pairs could
carry, and keeps only the pool's graphs that can hold a cycle (the only ones keep-K can keep; on a battle
log, a few among a million two-model graphs), with the counts the notes need of the others. Keep-K then
scores and keeps as ``keep_k_graphs`` does (``keep_k_scores`` over those graphs: the same coverage reference,
the same pool, ``kept_by_scores``: the same K, table and notes). The second pass reads every column of the
kept graphs' verdicts only; their vote rows are coded over the whole selection's models and carry its
invalid count, as the rows of every verdict cut to the kept graphs did."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.frames import pd
from engine.graphs.buckets import buckets_from_cells
from engine.graphs.cycles import cycle_capacity, cycle_counts
from engine.graphs.stack import GRAPH_COLUMNS, graph_cells
from engine.graphs.truncation import DEFAULT_SCORE, KeptGraphs, keep_k_scores, keep_pool, kept_by_scores

if TYPE_CHECKING:
    from engine.ranking.board import BoardSpec
    from engine.store.connection import Store

PIECE_ROWS = 250_000
"""Verdicts read at a time (whole graphs per piece)."""

KEPT_PROMPTS_BY_NAME = 2_000
"""The kept graphs' verdicts are read by prompt id in one query up to this many prompts, else in pieces."""

KEY = ["judge", "prompt_id", "variant", "turn"]
"""A graph's key within one dataset."""


@dataclass(frozen=True)
class KeptInPieces:
    """What keep-K over pieces found: ``kept`` (``KeptGraphs``: its ``table`` names the kept graphs; its
    ``index`` counts positions among the pool's graphs that can hold a cycle, not among every graph), the
    kept graphs' ``verdicts`` (every column, by verdict id), and of the whole selection its ``models`` (of the
    valid verdicts, sorted), ``judges`` and ``n_invalid`` verdicts."""

    kept: KeptGraphs
    verdicts: pd.DataFrame
    models: tuple[str, ...]
    judges: list[str]
    n_invalid: int


def keep_k_in_pieces(store: Store, dataset: str, spec: BoardSpec, *, judge=None, category=None,
                     rows: int | None = None) -> KeptInPieces:
    """Keep-K of ``spec`` (keep_k, mu, per_category, pool, policy) over the selection, read ``rows``
    verdicts at a time (default ``PIECE_ROWS``); a LensError, as the whole read's, where the selection has
    no valid verdict or keep-K nothing to keep."""
    size = PIECE_ROWS if rows is None else rows
    keys, counts, caps = [], [], []
    n_rows = n_invalid = n_graphs = n_no_cycle = 0
    judges: set[str] = set()
    models: set[str] = set()
    empty_keys = None
    for verdicts in store.verdict_pieces(dataset, rows=size, judge=judge, category=category,
                                         columns=GRAPH_COLUMNS):
        invalid = (verdicts["winner"] == "invalid").to_numpy()
        n_rows += len(verdicts)
        n_invalid += int(invalid.sum())
        judges.update(verdicts["judge"].dropna().unique().tolist())
        models.update(verdicts["model_a"].to_numpy()[~invalid].tolist())
        models.update(verdicts["model_b"].to_numpy()[~invalid].tolist())
        graphs = buckets_from_cells(graph_cells(verdicts, policy=spec.policy))
        del verdicts
        if empty_keys is None or graphs.T:
            empty_keys = graphs.keys.iloc[:0]
        if graphs.T == 0:
            continue
        c, cap = cycle_counts(graphs), cycle_capacity(graphs)
        pos, outside_cycles = keep_pool(graphs.keys, cap, spec.pool)
        n_graphs += graphs.T
        n_no_cycle += outside_cycles
        keys.append(graphs.keys.iloc[pos])
        counts.append(c.iloc[pos])
        caps.append(cap.iloc[pos])
    if n_rows == n_invalid or empty_keys is None:
        what = ", ".join(f"{k} {v!r}" for k, v in (("judge", judge), ("category", category)) if v is not None)
        raise LensError(f"Dataset {dataset!r} has no valid verdict{' for ' + what if what else ''}.")
    pool_keys = pd.concat(keys, ignore_index=True) if keys else empty_keys.reset_index(drop=True)
    pool_counts = pd.concat(counts, ignore_index=True) if counts else pd.DataFrame(
        {c: np.zeros(0, np.int64) for c in ("c3_bad", "c4_bad")})
    pool_caps = pd.concat(caps, ignore_index=True) if caps else pd.DataFrame(
        {c: np.zeros(0, np.int64) for c in ("cap3", "cap4")})
    scored = keep_k_scores(pool_keys, pool_counts, pool_caps, pool=spec.pool, mu=spec.mu, score=DEFAULT_SCORE,
                           pos=np.arange(len(pool_keys)))
    kept = kept_by_scores(pool_keys, pool_counts, replace(scored, n_no_cycle=n_no_cycle),
                          int(spec.keep_k or 0), per_category=spec.per_category, pool=spec.pool,
                          score=DEFAULT_SCORE, n_graphs=n_graphs)
    # the whole selection's winners and pairs checked, as the vote read of every verdict did (a Parquet file
    # read in place may have changed since it was attached): after keep-K's own refusals, as before
    from engine.ranking.vote_query import check_winners

    check_winners(store.cursor(), store.verdict_relation(dataset, judge=judge, category=category))
    return KeptInPieces(kept, _kept_verdicts(store, dataset, kept.table, judge, category, size),
                        tuple(sorted(models)), sorted(judges), n_invalid)


def _kept_verdicts(store: Store, dataset: str, table: pd.DataFrame, judge, category,
                   rows: int) -> pd.DataFrame:
    """Every column of the verdicts of the graphs ``table`` names, in verdict-id order (the whole read's)."""
    want = pd.MultiIndex.from_frame(table[KEY].astype({"variant": "int64", "turn": "int64"}))
    prompts = set(table["prompt_id"])
    parts = []
    # a few kept prompts are read by name (one scan); many, in pieces (each piece a scan of the selection)
    reads = ([store.verdicts(dataset, judge=judge, category=category, prompt_id=sorted(prompts))]
             if len(prompts) <= KEPT_PROMPTS_BY_NAME and not any(pd.isna(p) for p in prompts) else
             store.verdict_pieces(dataset, rows=rows, judge=judge, category=category))
    for verdicts in reads:
        maybe = verdicts[verdicts["prompt_id"].isin(prompts)]
        if len(maybe):
            at = pd.MultiIndex.from_frame(maybe[KEY].astype({"variant": "int64", "turn": "int64"}))
            parts.append(maybe[at.isin(want)])
    if not parts:
        return store.verdicts(dataset, judge=judge, category=category).iloc[:0]
    return pd.concat(parts).sort_values("verdict_id", kind="stable").reset_index(drop=True)
