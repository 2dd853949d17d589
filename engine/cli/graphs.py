"""``graphs``: one row per tournament graph with its cycle counts, draw rate and largest SCC."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import numpy as np

from engine.cli._common import add_format, check_judges, store_from_args, write_frame
from engine.errors import LensError
from engine.graphs.buckets import build_buckets
from engine.graphs.cycles import cycle_capacity
from engine.graphs.stack import COMBINE_POLICIES, DEFAULT_POLICY, GRAPH_COLUMNS, build_stack
from engine.graphs.structure import graph_table
from engine.graphs.truncation import DEFAULT_SCORE, SCORES, can_hold_cycle, graph_scores
from engine.store.schema import DEFAULT_DATASET

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack

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
        # only the columns graphs are built from (GRAPH_COLUMNS), not the rationales and sources
        verdicts = store.verdicts(args.dataset, judge=args.judge, category=getattr(args, "category", None),
                                  columns=GRAPH_COLUMNS)
    finally:
        store.close()
    what = f"dataset {args.dataset!r}"
    if args.judge is not None:
        what += f", judge {args.judge!r}"
    if getattr(args, "category", None) is not None:
        what += f", category {args.category!r}"
    if prompt_id is not None:
        verdicts = verdicts[verdicts["prompt_id"] == prompt_id]
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


def invalid_only_note(stack: GraphStack | GraphBuckets) -> str | None:
    """One line about keys whose verdicts were all invalid (not graphs, so not in the table)."""
    k = len(stack.invalid_only)
    if not k:
        return None
    n_inv = int(stack.invalid_only["n_invalid"].sum())
    return (f"note: {k} graph{' has' if k == 1 else 's have'} only invalid verdicts ({n_inv}) "
            f"and {'is' if k == 1 else 'are'} not in the table")


def no_cycle_note(k: int, total: int) -> str | None:
    """One line about graphs whose compared pairs cannot carry a cycle (counts 0 by construction)."""
    if not k:
        return None
    return (
        f"note: {k} of {total} graph{'s' if total != 1 else ''} cannot hold a cycle (fewer than 3 models, or "
        "no "
        "compared triple): their cycle counts are 0 by construction, not a measurement (no coverage, no s_mu)"
    )


def run(args: argparse.Namespace) -> int:
    """Build the selected graphs and print their cycle counts and structure; exit status."""
    stack = load_stack(args, bucketed=True)
    table = graph_table(stack)
    table["policy"] = stack.policy
    capacity = cycle_capacity(stack)
    holds = can_hold_cycle(capacity)
    s_mu, table["coverage"] = graph_scores(table, capacity, mu=1.0 if args.mu is None else args.mu,
                                           score=args.score, among=np.flatnonzero(holds))
    columns = list(COLUMNS)
    if args.mu is not None:
        table["s_mu"] = np.where(holds, s_mu, np.nan)  # no score where no cycle fits
        columns.append("s_mu")
    for note in (invalid_only_note(stack), no_cycle_note(int((~holds).sum()), stack.T)):
        if note:
            print(note, file=sys.stderr)
    write_frame(table[columns], args.format)
    return 0
