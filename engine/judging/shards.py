"""Call shards: several judge processes share one call cache without taking the store's write lock
for every group of calls, and rows made by another engine enter the cache.

DuckDB lets one process at a time write a store file, and a judge run writes its finished calls
every quarter second: several runs on one store would take turns on that lock (each turn opens the
file, about 45 ms of CPU). With ``judge --call-shards`` a run instead appends each group of finished
calls to a Parquet file of its own in ``<store>.shards/`` beside the store (``CallShards.append``:
written to a hidden temporary name and renamed, so a file either holds the whole group or does not
exist), and the rows are filed into ``judge_calls`` by one writer: the run itself when it ends
(its own files), or ``calls --merge-shards`` (every file, e.g. those of a killed run). Filing is one
transaction per batch of files, after which the files are removed; a kill between the two files
them again next time, and a key already stored is ignored, so nothing is ever stored twice.

Filing is most of what a sharded run does under the store's lock (about half of 0.30 ms a call on a
16-core machine, docs/notes/gpu-39.md), so four runs that each file their own at their end queue behind
each other. ``judge --keep-shards`` (``CallShards(keep=True)``) leaves the filing to ``calls
--merge-shards`` once every run has finished: the run neither files its files nor other runs' left-behind
ones, and at its end keeps the leases of the calls in its files (below), dropping the rest.

What keeps a call from being paid twice is the cache's existing leases (``judge_call_leases``,
``CallCache.claim``), with two rules for shards:

- a lookup reads the shard files first and the store second (``CallCache.get_many``): a file is
  removed only after its rows are committed to the store, so a call stored anywhere is found;
- a run does not drop its lease on a call it wrote to a shard: the lease goes when the call is filed
  into the store (same transaction). The run renews only the leases of its calls in flight
  (``CallCache.renew``), so the lease of a call in its shard lapses like that of a dead owner, and a
  call in a shard may then be unleased (another run took the lapsed lease, found the call in the shard
  and let it go). What holds always: every claim follows a lookup (shards first), and the run that
  takes a lapsed lease looks the taken calls up again before paying (``CallCache.claim``), so a call in
  a shard is never made again.

``read_import`` reads rows of (request, response) written by another engine (e.g. Ray Data's LLM
batch processor with vLLM, writing Parquet) for ``calls --import``: the request columns as
``judge_calls`` stores them and the reply's ``text``. Each row's key is computed from its request
exactly as a judge run computes it (``cache.call_key``), so an imported call is a cache hit for the
run that would have asked it, and a row whose own ``call_key`` disagrees is refused with its number.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pandas as pd

from engine.errors import LensError
from engine.judging.backends import ChatRequest, Decoding
from engine.judging.liveness import me, same_process_alive
from engine.store.call_shards import SHARD_COLUMNS, file_call_frame, file_parquet_calls
from engine.store.connection import Store

_TYPES = (("call_key", "string"), ("backend", "string"), ("model", "string"), ("template_id", "string"),
          ("template_version", "int64"), ("messages", "string"), ("decoding", "string"), ("text", "string"),
          ("top_logprobs", "string"), ("prompt_tokens", "int64"), ("completion_tokens", "int64"),
          ("latency_s", "float64"), ("attempts", "int64"), ("run_id", "int64"), ("server", "string"))
"""A shard file's columns and their Arrow types: ``judge_calls``'s (engine.store.call_shards.SHARD_COLUMNS).
pyarrow is imported only when a shard is written or read, so a run without shards never loads it."""


def _schema():
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in _TYPES])


FILE_EVERY_CALLS = 50_000
"""A run files its own shard files into the store once they hold this many calls (one turn on the
store's write lock per 50,000 calls), so neither its files nor any reader's index of them grows with
the length of the run."""

KEPT_FILE_EVERY_CALLS = 250_000
"""The same for a ``--keep-shards`` run, whose filing is left to one writer once every process has
finished: it files its own files only past this many calls (each process's index of every shard's keys,
about 100 bytes a call, stays bounded), so a run of the usual size never takes the store's lock to file."""

SHARD_PULL_UNITS = 4096
"""Units a ``--call-shards`` run starts per cache lookup and claim (the driver's default is 64): each
lookup and each claim is a turn on the store's lock, which every process sharing the store waits
for, so a sharded run takes 64 times fewer (4 processes on 16 cores spent a fifth of their time waiting
for that lock at 1024: docs/notes/gpu-39.md)."""

MERGE_FILES = 64
"""Shard files filed per transaction (each holds at most one group of a run's calls, <= 512 rows)."""

IMPORT_BATCH = 10_000
"""Imported rows read, checked and filed per transaction (memory stays bounded for any file size)."""

_WRITER = re.compile(r"^\.?(?P<host>.+)-(?P<pid>\d+)-(?P<stamp>\d+)\.[0-9a-f]{8}\.\d+\.parquet(\.tmp)?$")


def shard_folder(store_path: Path) -> Path:
    """The folder beside the store that holds every process's shard files."""
    store_path = Path(store_path).absolute()
    return store_path.parent / f"{store_path.name}.shards"


class CallShards:
    """One process's shard writer (``append``) and its reader of every shard file (``lookup``)."""

    def __init__(self, store_path: Path, *, keep: bool = False):
        self.folder = shard_folder(store_path)
        self.keep = keep  # judge --keep-shards: filed by one writer later, not by this run
        host, pid, started = me()
        self.prefix = f"{host}-{pid}-{int(started or 0)}.{uuid.uuid4().hex[:8]}"
        self.mine: list[Path] = []  # this writer's files not yet filed into the store
        self.unfiled = 0  # calls in those files
        self._seq = 0
        self._keys_of: dict[Path, list[str]] = {}  # every shard file seen -> its call keys
        self._file_of: dict[str, Path] = {}  # call key -> the shard file holding it
        self._lock = threading.Lock()

    def append(self, rows: list[dict]) -> Path | None:
        """Write ``rows`` (``judge_calls`` rows) as one new shard file of this writer; its path."""
        if not rows:
            return None
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([{c: r.get(c) for c in SHARD_COLUMNS} for r in rows], schema=_schema())
        with self._lock:
            self._seq += 1
            final = self.folder / f"{self.prefix}.{self._seq:06d}.parquet"
            tmp = self.folder / f".{final.name}.tmp"
            self.folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, tmp)
            os.replace(tmp, final)  # the whole group appears at once, or nothing
            self.mine.append(final)
            self.unfiled += len(rows)
            self._index(final, [str(r["call_key"]) for r in rows])
        return final

    def due(self) -> bool:
        """This writer's files hold ``FILE_EVERY_CALLS`` calls or more (``KEPT_FILE_EVERY_CALLS`` for a
        run that keeps its shards): time to file them."""
        return self.unfiled >= (KEPT_FILE_EVERY_CALLS if self.keep else FILE_EVERY_CALLS)

    def own_keys(self) -> set[str]:
        """The call keys in this writer's files not yet filed into the store."""
        with self._lock:
            return {k for path in self.mine for k in self._keys_of.get(path, ())}

    def files(self) -> list[Path]:
        """Every complete shard file in the folder (any writer's), oldest name first."""
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("*.parquet") if not p.name.startswith("."))

    def _index(self, path: Path, keys: list[str]) -> None:
        self._keys_of[path] = keys
        for k in keys:
            self._file_of[k] = path

    def _refresh(self) -> None:
        """Learn the keys of shard files written since the last look; forget files filed meanwhile."""
        now = set(self.files())
        for gone in set(self._keys_of) - now:
            for k in self._keys_of.pop(gone):
                if self._file_of.get(k) == gone:
                    del self._file_of[k]
        for path in sorted(now - set(self._keys_of)):
            try:
                keys = file_keys(path)
            except FileNotFoundError:  # filed and removed since the listing: the store has its rows
                continue
            self._index(path, keys)

    def lookup(self, keys: Sequence[str]) -> dict[str, dict]:
        """The shard rows (``judge_calls`` columns) of those ``keys`` some shard file holds."""
        import pyarrow.parquet as pq

        with self._lock:
            self._refresh()
            by_file: dict[Path, list[str]] = {}
            for k in dict.fromkeys(keys):
                if (path := self._file_of.get(k)) is not None:
                    by_file.setdefault(path, []).append(k)
        found: dict[str, dict] = {}
        for path, wanted in by_file.items():
            try:
                table = pq.read_table(path, filters=[("call_key", "in", wanted)])
            except FileNotFoundError:  # filed meanwhile: the caller's store lookup comes next and finds it
                continue
            for row in table.to_pylist():
                found.setdefault(row["call_key"], row)
        return found

    def merge_mine(self, store: Store) -> int:
        """File this writer's own shard files into the store (the end of its run); calls filed. Their keys
        come from this writer's index (``append`` made it), so no file is read but by the filing itself."""
        with self._lock:
            mine, self.mine, unfiled, self.unfiled = self.mine, [], self.unfiled, 0
            keys_of = {p: self._keys_of[p] for p in mine if p in self._keys_of}
        try:
            return merge(store, mine, keys_of=keys_of)
        except BaseException:
            with self._lock:
                self.mine = [p for p in mine if p.exists()] + self.mine
                self.unfiled += unfiled if self.mine else 0
            raise


def _writer_gone(name: str) -> bool:
    """The shard file's writer (host-pid-start in its name) is a process of this host that is gone."""
    m = _WRITER.match(name)
    if m is None:
        return False
    host, pid, _started = me()
    if m["host"] != host or int(m["pid"]) == pid:
        return False
    stamp = float(m["stamp"])
    return not same_process_alive(int(m["pid"]), stamp or None)


def file_keys(path: Path) -> list[str]:
    """The call keys a shard file holds (its key column alone)."""
    import pyarrow.parquet as pq

    return [str(k) for k in pq.read_table(path, columns=["call_key"]).column(0).to_pylist()]


def files_keys(paths: Sequence[Path]):
    """The call keys the shard files hold, as one Arrow column read as one dataset (no Python string per key;
    64 files of 512 calls: 0.03-0.04 s of CPU, file by file with ``file_keys`` 0.04-0.07 s)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    if not paths:
        return pa.chunked_array([], pa.string())
    table = ds.dataset([str(p) for p in paths], format="parquet").to_table(columns=["call_key"])
    return table.column(0).cast(pa.string())


def merge(store: Store, files: Sequence[Path] | None = None, *,
          keys_of: dict[Path, list[str]] | None = None) -> int:
    """File shard ``files`` (default: every complete one beside ``store``) into ``judge_calls``,
    ``MERGE_FILES`` files a transaction, removing each batch's files once it is committed; returns the
    number of calls that were new to the store. A dead writer's half-written temporary file (killed
    while writing; its calls are in that run's journal) is removed. Each batch's keys (to drop their
    leases) come from ``keys_of`` (a writer's index of its own files) or are read from the files' key column
    before the store's lock is taken: under it each file is read once (``file_parquet_calls``)."""
    import pyarrow as pa

    folder = shard_folder(store.path)
    if files is None:
        files = sorted(p for p in folder.glob("*.parquet") if not p.name.startswith(".")) \
            if folder.is_dir() else []
        for tmp in folder.glob(".*.parquet.tmp") if folder.is_dir() else []:
            if _writer_gone(tmp.name):
                tmp.unlink(missing_ok=True)
    n = 0
    files = [p for p in files if p.exists()]
    known = keys_of or {}
    for i in range(0, len(files), MERGE_FILES):
        batch = files[i:i + MERGE_FILES]
        read = files_keys([p for p in batch if p not in known])
        keys = pa.chunked_array([pa.array([k for p in batch if p in known for k in known[p]], pa.string()),
                                 *read.chunks], pa.string())
        n += file_parquet_calls(store, [str(p) for p in batch], keys)
        for p in batch:  # committed: a kill before this line files them again, as duplicates
            p.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty
    return n


def merge_left_behind(store: Store) -> int:
    """File the shard files of writers that are gone (killed on this host; their file names say which
    process wrote them) into the store: every run does this before its first lookup, as it files
    journals, so a run without ``--call-shards`` never pays again for a call a killed run left in a
    shard. A live writer's files are left to it (it files them when it ends); another host's files to
    ``calls --merge-shards``. Calls filed."""
    folder = shard_folder(store.path)
    if str(store.path) == ":memory:" or not folder.is_dir():
        return 0
    return merge(store, [p for p in sorted(folder.glob("*.parquet")) if _writer_gone(p.name)])


# -- import of (request, response) rows from another engine ---------------------------------------
IMPORT_REQUIRED = ("backend", "model", "template_id", "template_version", "messages", "decoding", "text")
IMPORT_OPTIONAL = ("call_key", "server", "top_logprobs", "prompt_tokens", "completion_tokens", "latency_s",
                   "attempts", "response")
"""``text`` may be replaced by ``response``: the chat-completions reply as the other engine returned it
(a JSON object or its text; an OpenAI batch-output ``response`` with ``status_code`` and ``body`` too),
read exactly as a live call's reply is read (text, top logprobs, token counts)."""


def _batches(path: Path) -> Iterator[pd.DataFrame]:
    """``path``'s rows in frames of ``IMPORT_BATCH`` (Parquet by its row groups, JSON lines by lines)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = path.name.lower()
    if name.endswith(".parquet"):
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise LensError(f"{path} cannot be read as Parquet: {exc}.") from None
        cols = set(pf.schema_arrow.names)
        _check_columns(path, cols)
        keep = [c for c in (*IMPORT_REQUIRED, *IMPORT_OPTIONAL) if c in cols]
        for batch in pf.iter_batches(batch_size=IMPORT_BATCH, columns=keep):
            yield batch.to_pandas()
    elif name.endswith((".jsonl", ".json")):
        try:
            reader = pd.read_json(path, lines=True, chunksize=IMPORT_BATCH, dtype=False)
            first = True
            for frame in reader:
                if first:
                    _check_columns(path, set(frame.columns))
                    first = False
                yield frame
        except ValueError as exc:
            raise LensError(f"{path} is not JSON lines (one object per line): {exc}.") from None
    else:
        raise LensError(f"{path}: import reads Parquet (.parquet) or JSON lines (.jsonl) files.")


def _check_columns(path: Path, cols: set[str]) -> None:
    missing = [c for c in IMPORT_REQUIRED if c not in cols and not (c == "text" and "response" in cols)]
    if missing:
        raise LensError(f"{path} has no column {', '.join(missing)}; an imported call needs "
                        f"{', '.join(IMPORT_REQUIRED)} (optional: {', '.join(IMPORT_OPTIONAL)}).")


def _messages_json(value) -> str:
    """The messages as ``judge_calls`` stores them (JSON list of role/content), from a JSON string or
    a list of role/content objects (the shape a Parquet writer gives a list of structs)."""
    msgs = json.loads(value) if isinstance(value, str) else [dict(m) for m in value]
    if not isinstance(msgs, list) or not all(isinstance(m, dict) and {"role", "content"} <= set(m)
                                             for m in msgs):
        raise ValueError("messages must be a list of {role, content} objects")
    return json.dumps([{"role": str(m["role"]), "content": str(m["content"])} for m in msgs],
                      ensure_ascii=False)


def _decoding(value) -> Decoding:
    d = json.loads(value) if isinstance(value, str) else dict(value)
    if not isinstance(d, dict):
        raise ValueError("decoding must be an object of decoding parameters")
    if "logprob_tokens" in d:
        d["logprob_tokens"] = tuple(d["logprob_tokens"] or ())
    try:
        return Decoding(**d)
    except TypeError as exc:
        raise ValueError(f"decoding has an unknown parameter ({exc})") from None


def _reply_columns(response) -> dict:
    """text, top_logprobs (as the cache stores them) and token counts of a chat-completions reply, read
    as a live call's reply is read (``read_completion_json``); ``ValueError`` saying why not."""
    from engine.judging.backends import RetryableError
    from engine.judging.openai_backend import read_completion_json

    doc = response
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError:
            raise ValueError("response is not JSON") from None
    if isinstance(doc, dict) and "body" in doc and "choices" not in doc:  # an OpenAI batch-output response
        if doc.get("status_code") not in (None, 200):
            raise ValueError(f"response has status {doc.get('status_code')}, not a reply")
        doc = doc["body"]
    try:
        res = read_completion_json(doc, 0.0)
    except RetryableError as exc:
        raise ValueError(str(exc).replace("the server's reply", "response")) from None
    return {"text": res.text, "prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens,
            "top_logprobs": None if res.top_logprobs is None else json.dumps(list(res.top_logprobs))}


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)


def import_rows(frame: pd.DataFrame, path: Path, first_row: int) -> pd.DataFrame:
    """``judge_calls`` rows (SHARD_COLUMNS) for imported (request, response) rows, each keyed as a run
    asking that request would key it; ``LensError`` naming the first bad row (1-based)."""
    from engine.judging.cache import call_key

    out = []
    for i, row in enumerate(frame.to_dict("records")):
        where = f"{path} row {first_row + i}"
        try:
            for c in IMPORT_REQUIRED:
                if not _present(row.get(c)) and c != "text":
                    raise ValueError(f"{c} is empty")
            if _present(row.get("response")) and not isinstance(row.get("text"), str):
                row = {**row, **_reply_columns(row["response"])}
            if not isinstance(row.get("text"), str):
                raise ValueError("text (the reply) is missing")
            messages = _messages_json(row["messages"])
            dec = _decoding(row["decoding"])
            req = ChatRequest(tuple((m["role"], m["content"]) for m in json.loads(messages)), dec,
                              str(row["template_id"]), int(row["template_version"]))
            server = str(row["server"]) if _present(row.get("server")) else None
            key = call_key(str(row["backend"]), str(row["model"]), req, server)
        except (ValueError, TypeError, LensError) as exc:
            raise LensError(f"{where}: {exc}; nothing was imported.") from None
        given = row.get("call_key")
        if _present(given) and str(given) != key:
            raise LensError(f"{where}: its call_key {str(given)[:12]}... is not the key of its request "
                            f"({key[:12]}...); the request columns were changed after the key was made, "
                            "so the reply cannot be trusted for this request.")

        def num(c: str, default, kind, row=row):
            return kind(row[c]) if _present(row.get(c)) else default

        top = row.get("top_logprobs")  # JSON text, or a list as a Parquet writer keeps it
        top_json = (top if isinstance(top, str) or top is None or not _present(top)
                    else json.dumps(list(top)))
        out.append({
            "call_key": key, "backend": str(row["backend"]), "model": str(row["model"]),
            "template_id": req.template_id, "template_version": req.template_version,
            "messages": messages, "decoding": json.dumps(dec.as_dict(), sort_keys=True), "text": row["text"],
            "top_logprobs": top_json,
            "prompt_tokens": num("prompt_tokens", 0, int),
            "completion_tokens": num("completion_tokens", 0, int),
            "latency_s": num("latency_s", 0.0, float), "attempts": num("attempts", 1, int),
            "run_id": None, "server": server,
        })
    return pd.DataFrame(out, columns=list(SHARD_COLUMNS)).astype(
        {"top_logprobs": "object", "run_id": "Int64", "server": "object"})


def import_calls(store: Store, path: Path) -> tuple[int, int]:
    """File the (request, response) rows of ``path`` into the call cache, ``IMPORT_BATCH`` rows a
    transaction; (rows read, calls new to the store). Every row is checked (a first pass over the file)
    before any is filed, so a bad row stops the import with nothing imported."""
    path = Path(path)
    if not path.is_file():
        raise LensError(f"There is no file {path} to import calls from.")
    read = 0
    for frame in _batches(path):
        import_rows(frame, path, read + 1)
        read += len(frame)
    read = new = 0
    for frame in _batches(path):
        rows = import_rows(frame, path, read + 1)
        read += len(frame)
        new += file_call_frame(store, rows)
    return read, new
