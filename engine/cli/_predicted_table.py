"""``diagnose --table predicted``: the win probabilities a ranker's fit predicts for every ordered pair of
models beside the observed win fractions (engine.views.matrix_view.predicted_pairs, the Cycles page's
matrices). Not a command of its own: engine/cli/diagnose.py parses the options and hands over here."""

from __future__ import annotations

import argparse
import sys

from engine.cli._common import check_judges, store_from_args, write_frame
from engine.store.schema import DEFAULT_DATASET


def run(args: argparse.Namespace) -> int:
    """``--table predicted``: rank the selection as ``leaderboard`` does (no bootstrap), then list the fit's
    predicted win probability of every ordered pair beside the observed win fraction."""
    from engine.graphs.buckets import build_buckets
    from engine.ranking.board import BoardSpec
    from engine.ranking.board_notes import board_notes
    from engine.ranking.leaderboard import leaderboard
    from engine.views.matrix_view import check_predicted_size, predicted_pairs

    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        check_judges(store, args.dataset, args.judge)
        judge = args.judge[0] if args.judge and len(args.judge) == 1 else args.judge
        stack = build_buckets(store.verdicts(args.dataset, judge=judge), policy=args.policy)
        check_predicted_size(len(stack.models))
        board = leaderboard(store, args.dataset, BoardSpec(ranker=args.ranker or "bt", policy=args.policy),
                            judge=judge)
    finally:
        store.close()
    table = predicted_pairs(stack, board)
    write_frame(table, args.format)
    for line in board_notes(board):  # e.g. the virtual ties a fit without an MLE added: they shape every cell
        sys.stderr.write(f"note: {line}\n")
    return 0
