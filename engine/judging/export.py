"""The requests a judge run would send, written to a file instead of sent (``judge --export-requests``).

For batch inference on another engine (vLLM's offline batch runner, Ray Data's LLM processor, a
provider's batch API): the run's units are stepped exactly as ``Drive`` steps them, through this
store's call cache, and every request that is not cached yet is written as one row, keyed as the run
keys it. The other engine answers the rows; ``calls --import`` files the answers (``text``, or the
chat-completions ``response`` as the engine returned it) under the same keys, and the ``judge`` run
with the same flags then finds every call cached. A protocol whose later calls depend on earlier
replies (hybrid's score calls when the two orders disagree) exports its first calls; after their
import, a second export holds the calls that follow, and an export with no rows means the run will ask
nothing.

Nothing is sent and nothing is written to the store: no run is recorded, no call leased, no verdict
stored. The file is written next to its final name and renamed into place, so a failed export never
leaves a half-written file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import LensError
from engine.judging.backends import ChatRequest
from engine.judging.openai_backend import request_kwargs
from engine.judging.runner import Runner

EXPORT_COLUMNS = ("call_key", "backend", "model", "server", "template_id", "template_version", "messages",
                  "decoding", "body")
"""One exported request: its cache key, the request columns ``calls --import`` reads back (the key is
recomputed from them and must match), and ``body``: the chat-completions request as JSON, exactly as
``--backend openai`` would send it (model, messages, the decoding parameters that are set)."""

Unit = Generator[list[ChatRequest], list, Any]
"""A protocol's unit (``engine.judging.protocols.make_unit``): yields requests, receives their results."""

STEP_UNITS = 4096
"""Units stepped per cache look-up (one query per round of their requests)."""


@dataclass
class ExportReport:
    """What an export found: ``requests`` written (distinct calls), units (pairs) whose every call is
    cached already, and units waiting on at least one exported call."""

    requests: int
    units_cached: int
    units_waiting: int


def pending_requests(runner: Runner, units: Iterable[Unit], report: ExportReport
                     ) -> Iterator[list[tuple[str, ChatRequest]]]:
    """Step ``units`` (protocol generators), STEP_UNITS at a time, through ``runner``'s cache: a unit whose
    requests are all cached receives their results and goes on to its next requests; a unit with any
    request not cached stops there. Yields, per group of units, the (key, request as sent) of the calls
    not cached and not yielded before, in first-asked order; counts the units into ``report``. Only the
    keys yielded so far are kept, so memory follows one group, not the run."""
    seen: set[str] = set()
    it = iter(units)
    while chunk := [u for _, u in zip(range(STEP_UNITS), it, strict=False)]:
        pending: dict[str, ChatRequest] = {}
        live: list[tuple[Unit, list | None]] = [(u, None) for u in chunk]
        while live:
            asked = []
            for gen, send in live:
                try:
                    reqs = next(gen) if send is None else gen.send(send)
                except StopIteration:
                    report.units_cached += 1
                    continue
                reqs = [runner.normalise(q) for q in reqs]
                asked.append((gen, reqs, [runner.key(q) for q in reqs]))
            keys = sorted({k for _, _, ks in asked for k in ks})
            reqs_of = {k: q for _, reqs, ks in asked for k, q in zip(ks, reqs, strict=True)}
            legacy = (
                {k: lk for k in keys if (lk := runner.legacy_key(reqs_of[k])) is not None}
                if keys and runner.legacy_lookups() else {}
            )
            hits = runner.cache.get_many(keys, legacy) if keys else {}
            live = []
            for gen, reqs, ks in asked:
                if all(k in hits for k in ks):
                    live.append((gen, [hits[k] for k in ks]))
                    continue
                report.units_waiting += 1
                for k, q in zip(ks, reqs, strict=True):
                    if k not in hits and k not in seen:
                        pending.setdefault(k, q)
        seen.update(pending)
        report.requests += len(pending)
        yield list(pending.items())


def export_rows(runner: Runner, pending: Iterable[tuple[str, ChatRequest]]) -> list[dict]:
    """The file's rows (EXPORT_COLUMNS) for ``pending``; the decoding is written as the cache stores
    it, so ``calls --import`` recomputes the same key."""
    model, backend, server = runner.backend.model, runner.identity, runner.server
    return [{
        "call_key": key,
        "backend": backend,
        "model": model,
        "server": server,
        "template_id": req.template_id,
        "template_version": int(req.template_version),
        "messages": req.messages_json(),
        "decoding": json.dumps(req.decoding.as_dict(), sort_keys=True),
        "body": json.dumps(request_kwargs(model, req), ensure_ascii=False),
    } for key, req in pending]


@contextmanager
def export_file(path: Path) -> Iterator[Callable[[list[dict]], None]]:
    """A writer of row batches to ``path``, Parquet (``.parquet``) or JSON lines (``.jsonl``), checked
    before any work: the rows go to a temporary file beside ``path``, renamed into place when the block
    ends without an error and removed when it does not."""
    path = Path(path)
    name = path.name.lower()
    if not name.endswith((".parquet", ".jsonl")):
        raise LensError(f"--export-requests {path}: write a .parquet or a .jsonl file.")
    if not path.parent.is_dir():
        raise LensError(f"--export-requests {path}: there is no folder {path.parent}.")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if name.endswith(".jsonl"):
            with open(tmp, "w", encoding="utf-8") as f:
                yield lambda rows: f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            schema = pa.schema([(c, pa.int32() if c == "template_version" else pa.string())
                                for c in EXPORT_COLUMNS])
            with pq.ParquetWriter(tmp, schema) as writer:  # an empty export still writes the schema
                yield lambda rows: writer.write_table(pa.Table.from_pylist(rows, schema=schema))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def export_requests(runner: Runner, units: Iterable[Unit], path: Path) -> ExportReport:
    """Write the calls ``units`` would make and ``runner``'s cache does not hold to ``path``, one group
    of units at a time."""
    report = ExportReport(0, 0, 0)
    with export_file(path) as write:
        for pending in pending_requests(runner, units, report):
            if pending:
                write(export_rows(runner, pending))
    return report
