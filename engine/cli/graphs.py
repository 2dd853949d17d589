"""``graphs``: one row per tournament graph with its cycle counts, draw rate and largest SCC."""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from dataclasses import dataclass

import numpy as np

from engine.cli._common import add_format, check_judges, store_from_args, write_frames
from engine.errors import LensError
from engine.graphs.buckets import build_buckets
from engine.graphs.cycles import cycle_capacity
from engine.graphs.stack import COMBINE_POLICIES, DEFAULT_POLICY, GRAPH_COLUMNS, build_stack
from engine.graphs.structure import graph_table
from engine.graphs.truncation import DEFAULT_SCORE, SCORES, can_hold_cycle, graph_scores
from engine.store.schema import DEFAULT_DATASET

COLUMNS = (
    "judge", "prompt_id", "variant", "turn", "category", "n_models",
    "c3", "c4", "c3_tie", "c4_tie", "c3_bad", "c4_bad", "draw_rate", "largest_scc",
    "variant_kind", "n_pairs", "n_verdicts", "n_invalid", "coverage", "policy",
)
"""README.md's graphs columns up to ``largest_scc``, then extra columns (``s_mu`` last with --mu)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``graphs`` (one row per tournament graph) and its filters to the parser."""
    p = subparsers.add_parser(
        "graphs",
        help="per-graph cycle counts (C3, C4, tie and bad), draw rate and largest SCC",
        description="One row per graph (judge, prompt, variant, turn) of a dataset: the counts of "
        "paper 000 App. A.2, the draw rate and the size of the largest strongly connected component.",
    )
    p.add_argument(
        "--dataset",
        default=DEFAULT_DATASET,
        help=f"a stored dataset (default {DEFAULT_DATASET}, the shipped one; see python -m engine datasets)",
    )
    p.add_argument("--judge", help="only this judge's graphs")
    p.add_argument("--category", help="only graphs of this category")
    p.add_argument("--policy", choices=tuple(COMBINE_POLICIES), default=DEFAULT_POLICY,
                   help="how several verdicts on one pair in one graph combine")
    p.add_argument(
        "--mu",
        type=float,
        help="also print the truncation score s_mu = c3_bad + mu * c4_bad (paper 000, Section 4.1 and "
             "Appendix A.2), "
        "scaled by coverage unless --score raw",
    )
    p.add_argument("--score", choices=tuple(SCORES), default=DEFAULT_SCORE,
                   help="with --mu: " + "; ".join(f"{k}: {v}" for k, v in SCORES.items()))
    add_format(p)
    p.set_defaults(func=run)


def load_stack(args: argparse.Namespace, *, prompt_id: str | None = None, bucketed: bool = False):
    """The GraphStack the command's filters select (``bucketed``: as engine.graphs.buckets.GraphBuckets,
    each graph over its own models); a LensError when they select nothing."""
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        check_judges(store, args.dataset, args.judge)
        # only the columns graphs are built from (GRAPH_COLUMNS), not the rationales and sources, and one
        # prompt's rows in SQL (not every verdict of a million-battle log read to keep a few)
        verdicts = store.verdicts(args.dataset, judge=args.judge, category=getattr(args, "category", None),
                                  columns=GRAPH_COLUMNS, prompt_id=prompt_id)
    finally:
        store.close()
    what = _selection(args)
    if prompt_id is not None:
        what += f", prompt {prompt_id!r}"
        for col in ("variant", "turn"):
            value = getattr(args, col, None)
            if value is not None:
                verdicts = verdicts[verdicts[col] == value]
                what += f", {col} {value}"
    stack = (build_buckets if bucketed else build_stack)(verdicts, policy=args.policy)
    if stack.T == 0:
        n_inv = int(stack.invalid_only["n_invalid"].sum())
        extra = f" (only {n_inv} invalid judge output{'s' if n_inv != 1 else ''})" if n_inv else ""
        raise LensError(f"There are no valid verdicts for {what}{extra}.")
    return stack


def no_cycle_note(k: int, total: int) -> str | None:
    """One line about graphs whose compared pairs cannot carry a cycle (counts 0 by construction)."""
    if not k:
        return None
    return (
        f"note: {k} of {total} graph{'s' if total != 1 else ''} cannot hold a cycle (fewer than 3 models, or "
        "no "
        "compared triple): their cycle counts are 0 by construction, not a measurement (no coverage, no s_mu)"
    )


PIECE_ROWS = 250_000
"""Verdicts ``graphs`` reads at a time (``Store.verdict_pieces``: whole graphs per piece), so its memory stays
that of a piece's graphs whatever the dataset's size."""


def run(args: argparse.Namespace) -> int:
    """Build the selected graphs and print their cycle counts and structure; exit status.

    Two passes, so no more than a piece of verdicts and its graphs is held: the first builds each piece's
    graphs and counts, kept in a temporary file, and finds the largest cycle capacity the coverage scaling
    needs (``graph_scores``: the best-covered graph of all); the second reads them back, scores them and
    writes them out. Nothing is written before every piece is read (an error leaves no half table)."""
    columns = list(COLUMNS) + (["s_mu"] if args.mu is not None else [])
    with tempfile.TemporaryFile(prefix="lens-graphs-") as held:
        seen = _count_pieces(args, held)
        if seen.T == 0:
            extra = (f" (only {seen.n_invalid} invalid judge output{'s' if seen.n_invalid != 1 else ''})"
                     if seen.n_invalid else "")
            raise LensError(f"There are no valid verdicts for {_selection(args)}{extra}.")
        notes = (_invalid_only_line(seen.invalid_keys, seen.n_invalid), no_cycle_note(seen.no_cycle, seen.T))
        for note in notes:
            if note:
                print(note, file=sys.stderr)
        held.seek(0)
        tables = (_scored(table, seen.reference, args)[columns] for table in _read_back(held, seen.pieces))
        write_frames(tables, args.format)
    return 0


@dataclass
class _Seen:
    """What the first pass of ``graphs`` found over every piece."""

    T: int = 0  # noqa: N815 - the papers' name for the number of graphs
    pieces: int = 0
    invalid_keys: int = 0
    n_invalid: int = 0
    no_cycle: int = 0
    reference: tuple[float, float] = (0.0, 0.0)


def _selection(args: argparse.Namespace) -> str:
    """The command's selection in words (its LensError's subject)."""
    what = f"dataset {args.dataset!r}"
    if args.judge is not None:
        what += f", judge {args.judge!r}"
    if getattr(args, "category", None) is not None:
        what += f", category {args.category!r}"
    return what


def _count_pieces(args: argparse.Namespace, held) -> _Seen:
    """The first pass: each piece's graphs and counts pickled into ``held``, and the totals."""
    seen = _Seen()
    r3 = r4 = 0
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        check_judges(store, args.dataset, args.judge)
        for verdicts in store.verdict_pieces(args.dataset, rows=PIECE_ROWS, judge=args.judge,
                                             category=args.category, columns=GRAPH_COLUMNS):
            graphs = build_buckets(verdicts, policy=args.policy)
            del verdicts
            seen.invalid_keys += len(graphs.invalid_only)
            seen.n_invalid += int(graphs.invalid_only["n_invalid"].sum())
            if graphs.T == 0:
                continue
            table = graph_table(graphs)
            table["policy"] = graphs.policy
            capacity = cycle_capacity(graphs)
            holds = can_hold_cycle(capacity)
            table["cap3"], table["cap4"], table["holds"] = capacity["cap3"], capacity["cap4"], holds
            r3 = max(r3, int(capacity["cap3"].to_numpy()[holds].max(initial=0)))
            r4 = max(r4, int(capacity["cap4"].to_numpy()[holds].max(initial=0)))
            seen.T += graphs.T
            seen.no_cycle += int((~holds).sum())
            seen.pieces += 1
            pickle.dump(table, held, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        store.close()
    seen.reference = (float(r3), float(r4))
    return seen


def _read_back(held, pieces: int):
    """The first pass's tables, one at a time, from the temporary file it wrote them to."""
    for _ in range(pieces):
        yield pickle.load(held)  # noqa: S301 - the file this process wrote a moment ago


def _scored(table, reference: tuple[float, float], args: argparse.Namespace):
    """One piece's table with its coverage (and s_mu with --mu) against every piece's largest capacity."""
    holds = table.pop("holds").to_numpy()
    capacity = table[["cap3", "cap4"]]
    s_mu, table["coverage"] = graph_scores(table, capacity, mu=1.0 if args.mu is None else args.mu,
                                           score=args.score, reference=reference)
    if args.mu is not None:
        table["s_mu"] = np.where(holds, s_mu, np.nan)  # no score where no cycle fits
    return table


def _invalid_only_line(k: int, n_inv: int) -> str | None:
    """One line about the ``k`` keys whose ``n_inv`` verdicts were all invalid (not graphs, so not in the
    table)."""
    if not k:
        return None
    return (f"note: {k} graph{' has' if k == 1 else 's have'} only invalid verdicts ({n_inv}) "
            f"and {'is' if k == 1 else 'are'} not in the table")
