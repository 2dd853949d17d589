"""After a disk-full import the space the store's file holds is reported (issue 23, bug 16).

Before: a failed import grew the store's file to fill the disk and the sentence said only that the
disk was full; the next 3-row import was refused as disk full too, with nothing to say why. Now the
sentence gives the file's size, the part of it that is unused blocks the failed write left (DuckDB
keeps them in the file), and the disk's free space; each number is checked against ``os.stat``,
DuckDB's own ``pragma_database_size`` and ``shutil.disk_usage`` read after the failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from engine.errors import LensError
from engine.ingest.importer import store_report, validate_file
from engine.ingest.staging import _size
from engine.store.connection import Store


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs (needs root and mount); skipped where it cannot be made."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _rows(n: int) -> bytes:
    """A CSV of ``n`` verdicts whose explanations do not compress (random hex)."""
    lines = [f"p{i},m{i % 29},n{i % 31},A,{os.urandom(30).hex()}" for i in range(n)]
    return ("prompt_id,model_a,model_b,winner,explanation\n" + "\n".join(lines) + "\n").encode()


def test_the_space_a_failed_import_leaves_is_reported(small_disk):
    """The audit's sequence: a small import, one that fills the disk (its row groups written to the
    file before the commit fails), then a 3-row import that finds the disk as full."""
    db = small_disk / "lens.duckdb"
    store = Store(db)

    def space_now() -> tuple[str, str, str, str]:
        """The four numbers the sentence must give, read from the file system and DuckDB itself."""
        size, wal = db.stat().st_size, Path(f"{db}.wal").stat().st_size
        block, used = store.cursor().execute(
            "SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
        free = shutil.disk_usage(small_disk).free
        return _size(size), _size(wal), _size(max(size - block * used, 0)), _size(free)

    refusals = []  # (sentence, the space read right after it)
    try:
        assert store_report(store, validate_file(_rows(3), "s.csv", dataset="s"), "s").status == "stored"
        with pytest.raises(LensError) as info:
            store_report(store, validate_file(_rows(250_000), "big.csv", dataset="big"), "big")
        refusals.append((str(info.value), space_now()))
        # the 3-row import after it: refused with the same sentence when DuckDB finds no room, or stored
        # whole where the log's allocated pages still take it (it depends on the file's layout, which
        # migration 070's columns changed); never half-written
        count = "SELECT count(*) FROM verdicts WHERE dataset = 'next'"
        try:
            store_report(store, validate_file(_rows(3), "next.csv", dataset="next"), "next")
        except LensError as exc:
            refusals.append((str(exc), space_now()))
            assert store.cursor().execute(count).fetchone()[0] == 0
        else:
            assert store.cursor().execute(count).fetchone()[0] == 3
    finally:
        store.close()
    for msg, space in refusals:
        m = re.search(r"the store's file is (.+?) and its log (.+?), (.+?) of the file unused blocks that "
                      r"failed writes left \(the file keeps them\), and the disk has (.+?) free; free", msg)
        assert m, msg  # old: "... (the store is unchanged); free some space and import again."
        assert m.groups() == space
        assert "\n" not in msg
