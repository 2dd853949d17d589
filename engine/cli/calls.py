"""``python -m engine calls``: what the model-call cache holds, and the spend so far; filing call shards
(``--merge-shards``) and importing calls made by another engine (``--import``) into it."""

from __future__ import annotations

import argparse

from engine.cli._common import add_format, store_from_args, write_frame
from engine.errors import LensError
from engine.judging.cache import call_summary


def add_call_shards_arg(p: argparse.ArgumentParser) -> None:
    """``--call-shards`` for ``judge``: several judge processes on one store (engine.judging.shards)."""
    p.add_argument(
        "--call-shards",
        action="store_true",
        help="write finished calls to this process's Parquet shard beside the store (<store>.shards/) and "
             "file them into the cache when the run ends, so several judge processes share one store "
             "without taking turns on its write lock (calls --merge-shards files a killed run's shards)",
    )
    p.add_argument(
        "--keep-shards",
        action="store_true",
        help="with --call-shards: leave this run's shard files for one writer (calls --merge-shards, once "
             "every process has finished) instead of filing them when the run ends; the calls in them are "
             "cache hits meanwhile. Several processes then never wait for each other's filing",
    )


SHARD_VERDICT_FLUSH = (100_000, 30.0)
"""With --call-shards, a judge run writes its verdicts every 100,000 pairs or 30 s, whichever comes
first, instead of every 16 pairs or 2 s: each write takes the store's one write lock, which the other
processes sharing the store wait for (measured: docs/notes/i29shards-29.md). A kill loses no call
(they are in the shards and the journal); a rerun stores the missing verdicts from the cache."""


def check_shard_args(args: argparse.Namespace) -> None:
    """``--keep-shards`` means something only with ``--call-shards``: one sentence otherwise."""
    if getattr(args, "keep_shards", False) and not getattr(args, "call_shards", False):
        raise LensError("--keep-shards keeps this run's call shards: give --call-shards too.")


def shard_run_options(args: argparse.Namespace) -> dict:
    """``judge_run`` keywords for a ``--call-shards`` run (the verdict flush above), else none."""
    if not getattr(args, "call_shards", False):
        return {}
    return {"flush_every": SHARD_VERDICT_FLUSH[0], "flush_every_s": SHARD_VERDICT_FLUSH[1]}


def register(sub) -> None:
    """Add ``calls`` (cache summary with estimated cost, ``--runs``, ``--merge-shards``, ``--import``)."""
    p = sub.add_parser(
        "calls",
        help="summarise the cached model calls (counts, tokens, cost)",
        description="Summarise the model-call cache per backend and model (calls, tokens, estimated cost), "
        "or with --runs list the judge, generate and perturb runs and their status; --merge-shards files "
        "the call shards of judge --call-shards runs into the cache, --import files (request, response) "
        "rows made by another engine.",
    )
    p.add_argument(
        "--price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="USD per 1M prompt,completion tokens for a model (repeatable)",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--runs",
        action="store_true",
        help="list the judge/generate/perturb runs instead (status: running, done, failed-calls, failed, "
             "interrupted)",
    )
    what.add_argument(
        "--merge-shards",
        action="store_true",
        help="file every call shard beside the store (<store>.shards/*.parquet) into the cache and remove "
             "them",
    )
    what.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        help="file (request, response) rows from a Parquet or JSON-lines FILE into the cache: columns "
             "backend, model, template_id, template_version, messages, decoding, text (optional call_key, "
             "server, top_logprobs, prompt_tokens, completion_tokens, latency_s, attempts)",
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
    """Print the call cache's totals per model and template, or the recorded runs, or what a merge or
    an import filed; exit status."""
    import pandas as pd

    store = store_from_args(args, ensure_default=False)
    try:
        if args.runs:
            from engine.judging.persist import mark_interrupted, run_table

            mark_interrupted(store)  # runs whose process was killed show as interrupted, not running
            df = run_table(store)
        elif args.merge_shards:
            from engine.judging.shards import merge

            df = pd.DataFrame({"calls_filed": [merge(store)]})
        elif args.import_file:
            from pathlib import Path

            from engine.judging.shards import import_calls

            read, new = import_calls(store, Path(args.import_file))
            df = pd.DataFrame({"rows_read": [read], "calls_filed": [new], "not_new": [read - new]})
        else:
            df = call_summary(store, _prices(args.price))
        write_frame(df, args.format)
        return 0
    finally:
        store.close()
