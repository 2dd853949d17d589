"""``compare``: distances (Spearman, Kendall, footrule, Chebyshev) between leaderboards and a reference."""

from __future__ import annotations

import argparse

import pandas as pd

from ..errors import LensError
from ..leaderboard import compare_to_reference, leaderboard
from ..rankers import RANKERS
from ..reference import DEFAULT_REFERENCE, load_mapping, load_reference, map_reference
from ..schema import DEFAULT_DATASET
from ._common import add_format, store_from_args, write_frame
from .leaderboard import add_selection, ranker_params

COLUMNS = ("judge", "ranker", "spearman", "kendall", "footrule", "chebyshev", "n_shared", "n_graphs", "models")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compare", help="ranking distances of leaderboards to a reference ranking",
        description="Rank a dataset and print the normalised Spearman, Kendall tau, footrule and Chebyshev "
        "distances to a reference (paper 000, Section 4.1, Appendix C.2), on the models both rank.",
    )
    add_selection(p)
    p.add_argument("--reference", default=str(DEFAULT_REFERENCE),
                   help="LMArena per-category JSON or leaderboard CSV (default: the shipped 2025-03-07 JSON)")
    p.add_argument("--reference-category", help="category of a JSON reference (default: full)")
    p.add_argument("--ranker", action="append", choices=sorted(RANKERS),
                   help="ranker(s) to compare (repeatable; default bt)")
    p.add_argument("--per-judge", action="store_true", help="one row per judge of the dataset")
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ref = map_reference(load_reference(args.reference, args.reference_category), load_mapping(args.dataset))
    if len(ref) < 2:
        raise LensError(f"Fewer than two models of dataset {args.dataset!r} appear in the reference {args.reference}.")
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    rows = []
    try:
        if args.per_judge:
            judges = sorted(store.verdicts(args.dataset, category=args.category)["judge"].dropna().unique())
        else:
            judges = [args.judge]
        for judge in judges:
            for ranker in args.ranker or ["bt"]:
                board = leaderboard(
                    store, args.dataset, judge=judge, category=args.category, ranker=ranker,
                    keep_k=args.keep_k, mu=args.mu, per_category=args.per_category, pool=args.pool, policy=args.policy,
                    ranker_params=ranker_params(args),
                )
                d = compare_to_reference(board, ref)
                rows.append({"judge": judge if judge is not None else "all", "ranker": ranker,
                             "n_graphs": board.n_graphs, **d})
    finally:
        store.close()
    write_frame(pd.DataFrame(rows, columns=list(COLUMNS)), args.format)
    return 0
