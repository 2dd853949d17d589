"""``python -m engine calls``: what the model-call cache holds, and the spend so far."""

from __future__ import annotations

import argparse

from engine.cli._common import add_format, store_from_args, write_frame
from engine.judging.cache import call_summary


def register(sub) -> None:
    """Add ``calls`` (cache summary with estimated cost, or ``--runs``) to the parser."""
    p = sub.add_parser(
        "calls",
        help="summarise the cached model calls (counts, tokens, cost)",
        description="Summarise the model-call cache per backend and model (calls, tokens, estimated cost), "
        "or with --runs list the judge, generate and perturb runs and their status.",
    )
    p.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="USD per 1M prompt,completion tokens for a model (repeatable)",
    )
    p.add_argument(
        "--runs",
        action="store_true",
        help="list the judge/generate/perturb runs instead (status: running, done, failed-calls, failed, "
             "interrupted)",
    )
    add_format(p)
    p.set_defaults(func=run)


def _prices(items: list[str]) -> dict[str, tuple[float, float]]:
    from engine.errors import LensError

    out = {}
    for it in items:
        model, _, nums = it.rpartition("=")
        try:
            pin, pout = (float(x) for x in nums.split(","))
        except ValueError:
            raise LensError(f"--price {it!r} should look like MODEL=IN,OUT (USD per 1M tokens).") from None
        out[model] = (pin, pout)
    return out


def run(args: argparse.Namespace) -> int:
    """Print the call cache's totals per model and template, or the recorded runs; exit status."""
    store = store_from_args(args, ensure_default=False)
    try:
        if args.runs:
            from engine.judging.persist import mark_interrupted, run_table

            mark_interrupted(store)  # runs whose process was killed show as interrupted, not running
            df = run_table(store)
        else:
            df = call_summary(store, _prices(args.price))
        write_frame(df, args.format)
        return 0
    finally:
        store.close()
