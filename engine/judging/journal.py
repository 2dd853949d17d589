"""Paid calls that could not be stored: a JSON-lines journal beside the store, filed in next time.

A judge run writes each finished call into the store's call cache at once. When it cannot (another
process kept the store past the lock wait, the disk is full), the calls it has paid for are appended
to ``<store>.calls-<host>-<pid>.jsonl`` instead (one ``judge_calls`` row per line, flushed and
fsynced), the run stops with one sentence, and the next run on that store files every journal whose
writer is gone into the cache (duplicates ignored) and deletes it. No paid call is lost or paid
twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from engine.judging.liveness import me, same_process_alive


def journal_dir_and_prefix(store_path: Path) -> tuple[Path, str]:
    """The folder and file-name prefix of every process's call journal for one store file."""
    return store_path.parent, f"{store_path.name}.calls-"


def journal_path(store_path: Path) -> Path:
    """This process's journal for the store at ``store_path``."""
    host, pid, started = me()
    folder, prefix = journal_dir_and_prefix(Path(store_path))
    stamp = int(started) if started is not None else 0
    return folder / f"{prefix}{host}-{pid}-{stamp}.jsonl"


def append(path: Path, rows: list[dict]) -> None:
    """Append ``judge_calls`` rows to the journal and make them durable (fsync)."""
    with open(path, "a", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def _writer_alive(path: Path) -> bool:
    """The journal's writer (host-pid-start in its name) is this host's live process other than us."""
    host, pid, _started = me()
    try:
        whost, wpid, wstamp = path.name.rsplit(".", 1)[0].rsplit("calls-", 1)[1].rsplit("-", 2)
        wpid_i, wstamp_f = int(wpid), float(wstamp)
    except ValueError:
        return False
    if whost != host or wpid_i == pid:
        return False
    return same_process_alive(wpid_i, wstamp_f or None) if wstamp_f else same_process_alive(wpid_i, None)


def pending(store_path: Path) -> list[Path]:
    """Journals of this store that nobody is writing any more (ready to be filed)."""
    folder, prefix = journal_dir_and_prefix(Path(store_path))
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(f"{prefix}*.jsonl") if not _writer_alive(p))


def read_rows(path: Path) -> list[dict]:
    """The rows of one journal; a line cut short by a crash mid-write is skipped."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return rows


def file_pending(store_path: Path, put_rows) -> int:
    """File every pending journal into the cache with ``put_rows(rows)``, deleting each one once its
    rows are committed; returns the number of rows filed."""
    n = 0
    for path in pending(store_path):
        rows = read_rows(path)
        put_rows(rows)
        n += len(rows)
        path.unlink(missing_ok=True)
    return n
