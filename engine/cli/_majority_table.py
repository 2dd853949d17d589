"""``diagnose --table majority``: the model-level majority tournament of a selection and its Condorcet
cycles (``engine.diagnostics.majority_tournament``), on verdicts or pair counts alike. Not cached: one
pass over the selection's pair counts."""

from __future__ import annotations

import argparse
import sys

from engine.cli._common import write_frame

CYCLES_NOTED = 5
"""How many of the best supported Condorcet 3-cycles the notes name."""


def run(args: argparse.Namespace) -> int:
    """Print the per-model majority table; the summary and the best supported 3-cycles as notes on stderr."""
    from engine.cli._common import store_from_args
    from engine.diagnostics.majority_tournament import majority_tournament, summary_sentences
    from engine.ranking.pair_count_board import selection_pair_counts
    from engine.store.schema import DEFAULT_DATASET

    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        judge = args.judge[0] if args.judge and len(args.judge) == 1 else args.judge
        pc = selection_pair_counts(store, args.dataset, judge=judge, policy=args.policy)
    finally:
        store.close()
    mt = majority_tournament(pc)
    for sentence in summary_sentences(mt.summary()):
        print(f"note: {sentence}", file=sys.stderr)
    for c in mt.cycles(CYCLES_NOTED).itertuples(index=False):
        print(f"note: cycle {c.a} > {c.b} ({c.share_ab:.3f}) > {c.c} ({c.share_bc:.3f}) > {c.a} "
              f"({c.share_ca:.3f}), at least {c.fewest_battles:,.0f} votes on each pair", file=sys.stderr)
    write_frame(mt.per_model(), args.format)
    return 0
