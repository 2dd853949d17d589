"""Issue 23 bug 12: a store file cut short is one sentence, never DuckDB's IOException and a traceback.

DuckDB writes its file as three 4 KiB headers and whole blocks; a file cut inside a block (a copy or a
download stopped early, a crash or a full disk while writing) is refused when it is opened, with the
numbers of the cut; one cut exactly at a block's edge opens, and the first query that reads a lost
block ends the command with the same kind of sentence (exit 2). The expected numbers are computed here
from the file's bytes, independently of ``engine.store.connection``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import run_engine
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.store.connection import Store, StoreError, header_block_size, truncation

HEADERS = 3 * 4096


def whole_or_why(path: Path) -> str | None:
    return truncation(path, header_block_size(path))


def block_size(path: Path) -> int:
    """The block size written in the first database header (bytes 40-48 of the block at 4096)."""
    return int.from_bytes(path.read_bytes()[4096 + 40:4096 + 48], "little")


def cut(source: Path, target: Path, keep: int) -> Path:
    target.write_bytes(source.read_bytes()[:keep])
    return target


def test_stores_written_by_every_kind_of_change_are_whole(tmp_path, shipped_db):
    """No false alarm: a store after imports, a delete, a checkpoint and a second open is whole blocks."""
    path = tmp_path / "lens.duckdb"
    Store(path).close()
    assert whole_or_why(path) is None
    shutil.copyfile(shipped_db, path)
    assert whole_or_why(path) is None
    csv = tmp_path / "v.csv"
    csv.write_text("prompt_id,model_a,model_b,winner\n1,a,b,A\n2,b,c,tie\n", encoding="utf-8")
    for args in (["import", str(csv), "--dataset", "small"], ["datasets", "delete", "small", "--yes"]):
        run_engine(["--db", str(path), *args])
        assert whole_or_why(path) is None, args
    con = duckdb.connect(str(path))
    con.execute("CHECKPOINT")
    con.close()
    assert whole_or_why(path) is None and (path.stat().st_size - HEADERS) % block_size(path) == 0


@pytest.fixture(scope="module")
def store_bytes(tmp_path_factory) -> tuple[Path, int, int]:
    from engine.ingest.shipped import open_store

    path = tmp_path_factory.mktemp("whole") / "lens.duckdb"
    open_store(path).close()
    return path, path.stat().st_size, block_size(path)


@settings(max_examples=25, deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_every_cut_inside_a_block_is_named_with_its_numbers(store_bytes, tmp_path_factory, share):
    source, size, block = store_bytes
    keep = int(share * size)
    target = cut(source, tmp_path_factory.mktemp("cut") / "cut.duckdb", keep)
    reason = whole_or_why(target)
    if keep < HEADERS:
        assert reason == f"the file is {keep:,} bytes, shorter than DuckDB's {HEADERS:,} bytes of headers"
    elif (keep - HEADERS) % block:
        assert reason == (f"the file is {keep:,} bytes and ends {(keep - HEADERS) % block:,} bytes into one "
                          f"of its {block:,}-byte blocks")
    else:
        assert reason is None
    if keep >= 12 and reason is not None:  # under 12 bytes there is no DuckDB mark: "not a DuckDB database"
        with pytest.raises(StoreError, match="^Cannot open the store at .*: it is damaged \\(the file is "):
            Store(target, lock_wait_s=0)


def test_the_cli_says_so_in_one_sentence_and_leaves_the_file_as_it_was(store_bytes, tmp_path):
    source, size, block = store_bytes
    keep = HEADERS + 3 * block + 1234
    target = cut(source, tmp_path / "cut.duckdb", keep)
    before = target.read_bytes()
    proc = run_engine(["--db", target, "leaderboard"])
    assert proc.returncode == 2 and not proc.stdout
    assert proc.stderr == (
        f"error: Cannot open the store at {target}: it is damaged (the file is {keep:,} bytes and ends 1,234 "
        f"bytes into one of its {block:,}-byte blocks; a copy or download cut short, a crash or a full disk "
        "while it was written leave a file so); restore it from a copy, or give another file with --db or "
        "$LENS_DB.\n")
    assert target.read_bytes() == before


def test_a_cut_at_a_block_edge_ends_the_command_that_reads_it_in_one_sentence(store_bytes, tmp_path):
    source, size, block = store_bytes
    blocks = (size - HEADERS) // block
    target = cut(source, tmp_path / "edge.duckdb", HEADERS + block * (blocks // 2))
    done = run_engine(["--db", str(target), "graphs"])  # every verdict column of every graph
    assert done.returncode == 2, done.stderr[-800:]
    assert done.stderr.startswith(f"error: Cannot read the store at {target}: it is damaged (IO Error: Could "
                                  "not read enough bytes")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_an_overwritten_block_ends_the_command_that_reads_it_in_one_sentence(store_bytes, tmp_path):
    """A block whose bytes no longer match its checksum (overwritten in place): the file is whole
    blocks, opens, and the read of that block is the sentence quoting DuckDB's checksum error."""
    source, size, block = store_bytes
    data = bytearray(source.read_bytes())
    start = HEADERS + block * ((size - HEADERS) // block // 2) + 100  # the block the edge cut above loses
    data[start:start + 4096] = b"\xff" * 4096
    target = tmp_path / "overwritten.duckdb"
    target.write_bytes(bytes(data))
    # every column of every verdict (``graphs`` reads only the graph columns now, and this block holds others)
    done = run_engine(["--db", str(target), "datasets", "export", "vicuna80", str(tmp_path / "out.csv")])
    assert done.returncode == 2, done.stderr[-800:]
    assert done.stderr.startswith(f"error: Cannot read the store at {target}: it is damaged (Corrupt "
                                  "database file: computed checksum ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "out.csv").exists()  # no half-written export
