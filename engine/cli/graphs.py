"""``graphs``: one row per tournament graph with its cycle counts, draw rate and largest SCC."""

from __future__ import annotations

import argparse
import sys

from ..errors import LensError
from ..graphs import COMBINE_POLICIES, DEFAULT_POLICY, build_stack
from ..schema import DEFAULT_DATASET
from ..structure import graph_table
from ..truncation import truncation_scores
from ._common import add_format, check_judges, store_from_args, write_frame

COLUMNS = (
    "judge", "prompt_id", "variant", "turn", "category", "n_models",
    "c3", "c4", "c3_tie", "c4_tie", "c3_bad", "c4_bad", "draw_rate", "largest_scc",
    "variant_kind", "n_pairs", "n_verdicts", "n_invalid", "policy",
)
"""README.md's graphs columns up to ``largest_scc``, then extra columns (``s_mu`` last with --mu)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "graphs",
        help="per-graph cycle counts (C3, C4, tie and bad), draw rate and largest SCC",
        description="One row per graph (judge, prompt, variant, turn) of a dataset: the counts of "
        "paper 000 App. A.2, the draw rate and the size of the largest strongly connected component.",
    )
    p.add_argument("--dataset", required=True, help="a stored dataset (see python -m engine datasets)")
    p.add_argument("--judge", help="only this judge's graphs")
    p.add_argument("--category", help="only graphs of this category")
    p.add_argument("--policy", choices=tuple(COMBINE_POLICIES), default=DEFAULT_POLICY,
                   help="how several verdicts on one pair in one graph combine")
    p.add_argument("--mu", type=float,
                   help="also print the truncation score s_mu = c3_bad + mu * c4_bad (paper 000, Section 4.1 and Appendix A.2)")
    add_format(p)
    p.set_defaults(func=run)


def load_stack(args: argparse.Namespace, *, prompt_id: str | None = None):
    """The GraphStack the command's filters select; a LensError when they select nothing."""
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        check_judges(store, args.dataset, args.judge)
        verdicts = store.verdicts(args.dataset, judge=args.judge, category=getattr(args, "category", None))
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
    stack = build_stack(verdicts, policy=args.policy)
    if stack.T == 0:
        n_inv = int(stack.invalid_only["n_invalid"].sum())
        extra = f" (only {n_inv} invalid judge output{'s' if n_inv != 1 else ''})" if n_inv else ""
        raise LensError(f"There are no valid verdicts for {what}{extra}.")
    return stack


def invalid_only_note(stack) -> str | None:
    """One line about keys whose verdicts were all invalid (not graphs, so not in the table)."""
    k = len(stack.invalid_only)
    if not k:
        return None
    n_inv = int(stack.invalid_only["n_invalid"].sum())
    return (f"note: {k} graph{' has' if k == 1 else 's have'} only invalid verdicts ({n_inv}) "
            f"and {'is' if k == 1 else 'are'} not in the table")


def run(args: argparse.Namespace) -> int:
    stack = load_stack(args)
    table = graph_table(stack)
    table["policy"] = stack.policy
    columns = list(COLUMNS)
    if args.mu is not None:
        table["s_mu"] = truncation_scores(table, mu=args.mu)
        columns.append("s_mu")
    note = invalid_only_note(stack)
    if note:
        print(note, file=sys.stderr)
    write_frame(table[columns], args.format)
    return 0
