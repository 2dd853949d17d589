"""``head-to-head``: two models' meetings in a dataset, one row per judge and prompt, with the counts and
the win rate as a note (``engine.views.head_to_head`` computes them; this module only prints)."""

from __future__ import annotations

import argparse
import sys

from engine.cli._common import add_format, check_judges, store_from_args, write_frame
from engine.errors import LensError
from engine.store.datasets import require_dataset
from engine.store.schema import DEFAULT_DATASET
from engine.views.head_to_head import (
    OUTCOMES,
    Matchup,
    Summary,
    meeting_table,
    outcome_label,
    prompts_phrase,
    summary,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``head-to-head`` (two models' meetings, judge by judge) to the parser."""
    p = subparsers.add_parser(
        "head-to-head",
        help="two models' meetings: each judge's verdicts on every prompt where they met",
        description="One row per meeting (one judge's verdicts on the two models for one prompt): the "
        "verdict counts from model A's side, the result with A shown first and with B shown first, and "
        "the outcome (a_wins, b_wins, tie; inconsistent when the judge saw both orders and they "
        "disagree; invalid when no verdict was valid). The counts and A's win rate (wins + ties / 2 over "
        "the valid verdicts, as the leaderboard counts it) go to stderr as a note. The app's "
        "Head-to-head page shows the same with the answers and rationales.",
    )
    p.add_argument("--dataset", default=DEFAULT_DATASET,
                   help=f"a stored dataset (default {DEFAULT_DATASET}, the shipped one)")
    p.add_argument("--model-a", required=True, dest="model_a",
                   help="the model from whose side results are read")
    p.add_argument("--model-b", required=True, dest="model_b", help="its opponent")
    p.add_argument("--judge", help="only this judge's verdicts (default: every judge)")
    p.add_argument("--category", help="only verdicts of this category")
    p.add_argument("--outcome", action="append", choices=OUTCOMES,
                   help="only meetings with this outcome (repeatable; default: every outcome)")
    p.add_argument("--limit", type=int, help="print at most this many meetings")
    p.add_argument("--offset", type=int, default=0, help="skip this many meetings first (default 0)")
    add_format(p)
    p.set_defaults(func=run)


def summary_sentence(m: Matchup, s: Summary) -> str:
    """The counts in one sentence: prompts, meetings by outcome, verdicts and A's win rate."""
    plural = {"tie": "ties", "inconsistent": "with the orders disagreeing",
              "invalid": "without a valid verdict"}
    meets = ", ".join(f"{n:,} {plural.get(o) or outcome_label(o, m.model_a, m.model_b)}"
                      for o, n in s.meetings.items() if n)
    v = s.verdicts
    rate = "no valid verdict" if s.win_rate is None else f"{m.model_a}'s win rate {s.win_rate:.3f}"
    ties = f"{v['tie']:,} tie{'s' if v['tie'] != 1 else ''}"
    return (
        f"{m.model_a} vs {m.model_b}: {prompts_phrase(s.prompts, s.prompt_ids)}, {s.n_meetings:,} meetings "
        f"({meets or 'none'}); "
        f"verdicts {v['a_wins']:,} {m.model_a} wins, {v['b_wins']:,} {m.model_b} wins, {ties}, "
        f"{v['invalid']:,} invalid; {rate}."
    )


def _check_model(store, dataset: str, model: str, option: str) -> None:
    """Refuse a model the dataset's verdicts never name (its stored rows, or an attached dataset's files, or
    its pair counts: ``dataset_models``), listing some that they do."""
    from engine.store.datasets import dataset_models

    known = dataset_models(store, dataset)
    if known and model not in known:
        shown = sorted(known)
        listing = ", ".join(shown[:12]) + (f" and {len(shown) - 12} more" if len(shown) > 12 else "")
        raise LensError(f"Dataset {dataset!r} has no model {model!r} ({option}); its models are {listing}.")


def run(args: argparse.Namespace) -> int:
    """Print the meetings of --model-a and --model-b; the counts as a note on stderr; exit status."""
    if args.limit is not None and args.limit < 0 or args.offset < 0:
        raise LensError("--limit and --offset must not be negative.")
    store = store_from_args(args)
    require_dataset(store, args.dataset)
    check_judges(store, args.dataset, args.judge)
    _check_model(store, args.dataset, args.model_a, "--model-a")
    _check_model(store, args.dataset, args.model_b, "--model-b")
    m = Matchup(args.dataset, args.model_a, args.model_b, args.judge, args.category)
    s = summary(store, m)
    if s.n_meetings == 0:
        print(f"note: {args.model_a} and {args.model_b} never met in this selection.", file=sys.stderr)
    else:
        print(f"note: {summary_sentence(m, s)}", file=sys.stderr)
    table = meeting_table(store, m, args.outcome, offset=args.offset, limit=args.limit)
    write_frame(table, args.format)
    return 0
