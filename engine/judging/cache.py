"""The DuckDB call cache: every model call is stored once, keyed by a hash of what was asked.

The key is sha256 over the canonical JSON of (backend identity, model, template id, template
version, rendered messages, decoding parameters and, for a server backend, the server), so a rerun
finds each call it already made and a changed template, model, decoding parameter or server makes a
new call. The backend identity is its name plus whatever changes its numbers: ``openai``, or
``transformers[cpu,float32]`` / ``transformers[cuda,bfloat16]`` for the local backend, so CPU
results are never reused on a GPU. The server is the sorted list of base URLs without credentials
(``server_label``): one ``--model`` name on two different servers may be two different models, so
they do not share outputs; replicas named together in one ``--base-url`` list share one key. Calls
stored before the server was part of the key (``server`` NULL) are still found by their old key.

Before a run makes a call it *claims* it (``claim``: a row in ``judge_call_leases`` naming the run's
process, renewed while it runs), in one transaction with the check that nobody stored or claimed it
yet; another run that needs the same call (any dataset) waits for it to appear in the cache instead
of paying for it again. A lease whose owner died (same host: its pid and start time, see
``liveness``) or that was not renewed in time (another host) can be taken over.

Completed calls are committed in groups (``put_rows``, one transaction; the runner writes the calls
that finish within ``Runner.record_every_s`` of each other together), each already in the run's
journal from the moment it was answered (``journal``), so a run killed at any moment (SIGKILL) keeps
every answered call (the rerun files the journal) and none twice; only a call still in flight is
made again by the rerun.

With ``shards=True`` (``judge --call-shards``) completed calls go to the process's own Parquet shard
beside the store instead of ``judge_calls``, and are filed into it when the run ends; lookups read
the shards first. ``engine.judging.shards`` gives the rules that keep every call paid once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import uuid
from typing import TYPE_CHECKING

import duckdb
import pandas as pd
import pyarrow as pa

from engine.judging.backends import ChatRequest, ChatResult
from engine.judging.call_rows import (
    call_totals,
    claim_calls,
    insert_calls,
    release_leases,
    renew_leases,
    stored_calls,
)
from engine.judging.liveness import me, owner_name, same_process_alive
from engine.store.connection import Store, StoreError

if TYPE_CHECKING:
    from engine.judging.shards import CallShards

LEASE_S = 120.0  # a claim not renewed for this long (its owner on another host stopped) lapses

STORE_MEMORY_LIMIT = "512MB"
"""DuckDB's memory cap on a store a cache writes to (``Store.limit_memory``): each write and lookup
scans the cached keys, and DuckDB's default buffer pool (80 % of the machine's memory) would keep every
block it read, growing with the cache; with the cap a judge run's memory stays bounded whatever the
cache's size (docs/notes/i29mem-29.md)."""


def call_key(backend: str, model: str, req: ChatRequest, server: str | None = None) -> str:
    """sha256 hex of the canonical request; the same request always gets the same key.

    ``backend`` is the backend's ``identity`` (stored in ``judge_calls.backend``); ``server`` the
    server backend's ``server_label`` (``None`` for a local backend, and for the pre-040 key).
    """
    doc = {
        "backend": backend,
        "model": model,
        "template": [req.template_id, int(req.template_version)],
        "messages": [[r, c] for r, c in req.messages],
        "decoding": req.decoding.as_dict(),
    }
    if server is not None:
        doc["server"] = server
    payload = json.dumps(
        doc,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _result_from_row(text, top, ptok, ctok, latency, attempts) -> ChatResult:
    return ChatResult(
        text=text or "",
        top_logprobs=tuple(json.loads(top)) if top else None,
        prompt_tokens=int(ptok or 0),
        completion_tokens=int(ctok or 0),
        latency_s=float(latency or 0.0),
        attempts=int(attempts or 1),
    )


_RESULT_FIELDS = ("text", "top_logprobs", "prompt_tokens", "completion_tokens", "latency_s", "attempts")

CALL_COLUMNS = [
    "call_key",
    "backend",
    "model",
    "template_id",
    "template_version",
    "messages",
    "decoding",
    "text",
    "top_logprobs",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "attempts",
    "run_id",
    "server",
]


def call_rows(
    calls: list[tuple[str, ChatRequest, ChatResult]],
    backend: str,
    model: str,
    run_id: int | None,
    server: str | None = None,
) -> list[dict]:
    """``judge_calls`` rows (CALL_COLUMNS) for completed calls ``(key, request, result)``."""
    return [
        {
            "call_key": key,
            "backend": backend,
            "model": model,
            "template_id": req.template_id,
            "template_version": int(req.template_version),
            "messages": req.messages_json(),
            "decoding": json.dumps(req.decoding.as_dict(), sort_keys=True),
            "text": res.text,
            "top_logprobs": json.dumps(list(res.top_logprobs)) if res.top_logprobs is not None else None,
            "prompt_tokens": int(res.prompt_tokens),
            "completion_tokens": int(res.completion_tokens),
            "latency_s": float(res.latency_s),
            "attempts": int(res.attempts),
            "run_id": run_id,
            "server": server,
        }
        for key, req, res in calls
    ]


CALL_SCHEMA = pa.schema(
    [
        ("call_key", pa.string()),
        ("backend", pa.string()),
        ("model", pa.string()),
        ("template_id", pa.string()),
        ("template_version", pa.int64()),
        ("messages", pa.string()),
        ("decoding", pa.string()),
        ("text", pa.string()),
        ("top_logprobs", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("attempts", pa.int64()),
        ("run_id", pa.int64()),
        ("server", pa.string()),
    ]
)
assert CALL_SCHEMA.names == CALL_COLUMNS


class CallCache:
    """Reads and writes ``judge_calls`` and this cache's leases in ``judge_call_leases``.

    Each ``CallCache`` is one lease owner (its process plus a random token, so two runners in one
    process do not mistake each other's claims for their own)."""

    def __init__(self, store: Store, *, shards: bool = False, keep_shards: bool = False):
        self.store = store
        if str(store.path) != ":memory:":
            store.limit_memory(STORE_MEMORY_LIMIT)
        self.owner = f"{owner_name()}:{uuid.uuid4().hex[:8]}"
        # judge --call-shards: finished calls go to this process's Parquet shard, not the store
        # (engine.judging.shards explains the lookup order and lease rules this relies on)
        self.shards: CallShards | None = None
        if shards and str(store.path) != ":memory:":
            from engine.judging.shards import CallShards

            self.shards = CallShards(store.path, keep=keep_shards)
        self._reader: CallShards | None = None  # a run without shards reading other runs' shard files
        self._in_flight: set[str] = set()  # keys claimed and neither answered nor given up (renewed)

    @property
    def keeps_shards(self) -> bool:
        """This run leaves its shard files for one writer (``judge --keep-shards``)."""
        return self.shards is not None and self.shards.keep

    def _shard_files(self) -> CallShards | None:
        """Where shard files are read: this run's shards, or for a run without ``--call-shards`` a reader
        of the files other runs left beside the store (a ``--keep-shards`` run leaves them until one writer
        files them, and their calls are paid for); None while no shard folder exists."""
        if self.shards is not None or self._reader is not None:
            return self.shards or self._reader
        if str(self.store.path) == ":memory:":
            return None
        from engine.judging.shards import CallShards, shard_folder

        if shard_folder(self.store.path).is_dir():
            self._reader = CallShards(self.store.path)
        return self._reader

    def get_many(self, keys: list[str], legacy: dict[str, str] | None = None) -> dict[str, ChatResult]:
        """The cached results among ``keys`` (missing keys are absent from the dict).

        ``legacy`` maps a key to the key the same request had before the server was part of it: a
        key not found is looked up by its legacy key among calls stored without a server."""
        if not keys:
            return {}
        found: dict[str, ChatResult] = {}
        files = self._shard_files()
        if files is not None:  # shards first: a shard file goes only once the store holds its rows
            found = {k: _result_from_row(*(r[c] for c in _RESULT_FIELDS))
                     for k, r in files.lookup(keys).items()}
            keys = [k for k in keys if k not in found]
            if not keys:
                return found
        return found | {r[0]: _result_from_row(*r[1:]) for r in stored_calls(self.store, keys, legacy)}

    def put(
        self, key: str, backend: str, model: str, req: ChatRequest, res: ChatResult, run_id: int | None
    ) -> None:
        """Store one completed call, committed at once (a duplicate key is ignored, not doubled)."""
        self.put_many([(key, req, res)], backend, model, run_id)

    def put_many(
        self,
        calls: list[tuple[str, ChatRequest, ChatResult]],
        backend: str,
        model: str,
        run_id: int | None,
        server: str | None = None,
    ) -> None:
        """Store completed calls ``(key, request, result)`` in one transaction (duplicates ignored)
        and drop this owner's claims on them."""
        if calls:
            self.put_rows(call_rows(calls, backend, model, run_id, server))

    def put_rows(self, rows: list[dict]) -> None:
        """Insert ``judge_calls`` rows (CALL_COLUMNS dicts) in one transaction; duplicates ignored."""
        if not rows:
            return
        if self.shards is not None:  # the lease stays until the rows are filed into the store
            self.shards.append(rows)
            # out of the renewed set only once written (a failed append leaves them in flight, renewed)
            self._in_flight.difference_update(str(r["call_key"]) for r in rows)
            if self.shards.due():
                with contextlib.suppress(StoreError, duckdb.Error, OSError):  # a busy store: next time
                    self.shards.merge_mine(self.store)
            return
        # an Arrow table with the column types stated (a pandas frame of these rows costs about half
        # again as much CPU to build and scan)
        insert_calls(self.store, pa.Table.from_pylist(rows, schema=CALL_SCHEMA), self.owner)
        self._in_flight.difference_update(str(r["call_key"]) for r in rows)

    # -- leases ---------------------------------------------------------------------------------
    def claim(self, keys: list[str]) -> tuple[set[str], set[str]]:
        """Claim the calls ``keys`` for this owner: (claimed, held) where *held* are stored already or
        claimed by a live owner, in one transaction. A lease whose owner is gone or lapsed is taken."""
        if not keys:
            return set(), set()
        host, pid, started = me()
        now = time.time()

        took_lapsed = False

        def lapsed(lhost: str, lpid: int, lstarted: float | None, expires: float) -> bool:
            nonlocal took_lapsed
            gone = expires < now or (lhost == host and not same_process_alive(int(lpid), lstarted))
            took_lapsed |= gone
            return gone

        mine, held = claim_calls(self.store, keys, self.owner, (host, pid, started), now + LEASE_S, lapsed)
        if took_lapsed and mine and self._shard_files() is not None:
            # a lapsed lease's owner may have written the call to its shard before it died, or ended
            # with --keep-shards (its shards wait for one writer): the call is paid for, not to be paid again
            done = set(self.get_many(mine))
            if done:
                self.release(sorted(done))
                mine, held = [k for k in mine if k not in done], held | done
        self._in_flight.update(mine)
        return set(mine), held

    def renew(self) -> None:
        """Push this owner's leases ``LEASE_S`` into the future (called while the run goes on).

        With shards, only the leases of calls in flight: a call answered into a shard file keeps its lease
        until it is filed (``engine.judging.shards``) but needs no renewal. When that lease lapses, a run
        that takes it looks the call up again before paying (``claim``), and every cache reads the shard
        files first, so the call is found there (tests/test_call_shards.py). Renewing them rewrote up to
        ``KEPT_FILE_EVERY_CALLS`` leases of a ``--keep-shards`` run every ``renew_s``, under the store's
        lock."""
        keys = None if self.shards is None else sorted(self._in_flight)
        renew_leases(self.store, self.owner, time.time() + LEASE_S, keys)

    def release(self, keys: list[str] | None = None) -> None:
        """Drop this owner's leases on ``keys`` (calls it gave up), or all of them (the run ended):
        other runs may then make those calls. With shards, the end of the run first files this
        process's shard files into the store (which drops their leases); a ``--keep-shards`` run keeps
        its shard calls' leases until a writer files them."""
        if keys is None:
            self._in_flight.clear()
        else:
            self._in_flight.difference_update(keys)
        if keys is None and self.shards is not None:
            if self.shards.keep:  # its shard calls keep their leases (unrenewed) until filed
                release_leases(self.store, self.owner, keep=self.shards.own_keys())
                return
            self.shards.merge_mine(self.store)
        release_leases(self.store, self.owner, None if keys is None else list(keys))


def call_summary(store: Store, prices: dict[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """What the cache holds: calls and tokens per backend, model and template, with estimated cost.

    ``prices`` maps a model to (USD per 1M prompt tokens, USD per 1M completion tokens); models
    without a price get cost 0 (local models, or unknown prices).
    """
    df = call_totals(store)
    prices = prices or {}
    df["est_cost_usd"] = [
        (pt * prices.get(m, (0.0, 0.0))[0] + ct * prices.get(m, (0.0, 0.0))[1]) / 1e6
        for m, pt, ct in zip(df["model"], df["prompt_tokens"], df["completion_tokens"], strict=True)
    ]
    return df
