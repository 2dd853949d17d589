"""``leaderboard --method ppr|human-only|proxy-only``: prediction-powered rank-sets (issue 28, point 1).

The options live here so ``leaderboard`` keeps one line each for registering and dispatching them; the
estimator is imported only when ``--method`` is given (plain ``leaderboard`` starts without it).
"""

from __future__ import annotations

import argparse
import json
import sys

from engine.errors import LensError

PPR_OPTIONS = ("human", "proxy", "alpha", "ignore_ties", "human_n", "ppr_variance")
"""The options that only ``--method`` reads (refused without it)."""


def add_ppr_options(p: argparse.ArgumentParser) -> None:
    """--method, --human, --proxy, --alpha, --ignore-ties."""
    p.add_argument("--method", choices=("ppr", "human-only", "proxy-only"),
                   help="rank-sets instead of the ranker's table: ppr = prediction-powered ranking (a few "
                   "--human verdicts anchor each --proxy judge's many; Chatzi et al. 2024), human-only or "
                   "proxy-only (the one-judge baselines); prints model, rank_set_low, rank_set_high, "
                   "win_rate, std_error per proxy")
    p.add_argument("--human", metavar="JUDGE",
                   help="with --method: the judge whose preferences are the truth")
    p.add_argument("--proxy", metavar="JUDGE[,JUDGE]",
                   help="with --method: the judge(s) with verdicts on many battles (one block each)")
    p.add_argument("--alpha", type=float,
                   help="with --method: the rank-sets miss the true ranking with probability at most alpha "
                   "(default 0.05)")
    p.add_argument("--human-n", type=int, metavar="N",
                   help="with --method ppr: use only N of the battles both judges judged (drawn with "
                   "--seed), "
                   "the proxy's verdicts on the others count as unlabelled: the few-labels setting on a "
                   "dataset where the human judged every battle")
    p.add_argument("--ppr-variance", choices=("paper", "per-model"),
                   help="with --method: paper = the authors' covariance (each set's residual products over "
                   "its battles squared; the default), per-model = over each model's battle counts (the "
                   "variance of a per-model win rate; wider, and it held its coverage where paper's did not)")
    p.add_argument("--ignore-ties", action="store_true",
                   help="with --method: drop tie verdicts (default: a tie is a win for neither model)")


RANKER_ONLY = {"judge": "--judge", "category": "--category", "keep_k": "--keep-k",
               "bootstrap": "--bootstrap", "baseline": "--baseline", "style_control": "--style-control",
               "length_control": "--length-control", "show_kept": "--show-kept", "param": "--param",
               "judge_weight": "--judge-weight"}
"""Leaderboard options of the ranker's table that mean nothing to the rank-sets (refused with --method)."""


def refuse_ppr_options_without_method(args: argparse.Namespace) -> bool:
    """--human / --proxy / --alpha / --ignore-ties without --method, or a ranker-table option with it:
    one sentence. False when nothing is refused (so ``leaderboard`` can test it inline)."""
    given = [f"--{o.replace('_', '-')}" for o in PPR_OPTIONS if getattr(args, o, None) not in (None, False)]
    if given and args.method is None:
        raise LensError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} read by --method "
                        "ppr|human-only|proxy-only; give --method too.")
    if args.method is not None:
        extra = [flag for dest, flag in RANKER_ONLY.items()
                 if getattr(args, dest, None) not in (None, False, 0)]
        if extra:
            raise LensError(f"{extra[0]} shapes the ranker's table, which --method {args.method} replaces by "
                            "rank-sets; leave it out.")
    return False


def run_ppr(args: argparse.Namespace) -> int:
    """Print the rank-set table (csv, json or table) and its notes (stderr, or in the JSON)."""
    from engine.cli._common import check_judges, store_from_args, write_frame, write_json
    from engine.ranking.board import plain_values
    from engine.ranking.ppr_board import check_alpha, ppr_board
    from engine.store.datasets import require_dataset
    from engine.store.schema import DEFAULT_DATASET

    alpha = check_alpha(0.05 if args.alpha is None else args.alpha)
    proxies = [p.strip() for p in (args.proxy or "").split(",") if p.strip()]
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        require_dataset(store, args.dataset)
        named = ([args.human] if args.human else []) + proxies
        for judge, option in ((j, "--human" if j == args.human else "--proxy") for j in named):
            check_judges(store, args.dataset, judge, option)
        board = ppr_board(store, args.dataset, method=args.method, human=args.human, proxies=proxies,
                          alpha=alpha, ignore_ties=args.ignore_ties, human_n=args.human_n, seed=args.seed,
                          variance=args.ppr_variance or "paper")
    finally:
        store.close()
    if args.format == "json":
        rows = json.loads(board.table.to_json(orient="records", double_precision=15))
        write_json(plain_values({"params": board.params, "notes": board.notes, "rows": rows}))
        return 0
    write_frame(board.table, args.format)
    for line in board.notes:
        sys.stderr.write(f"note: {line}\n")
    return 0
