"""Issue 23, bugs 5 and 6: the run's call journal (engine.judging.journal.CallJournal) holds every
answered call the store does not yet hold, at every instant, and stays as small as those calls even
when some are always waiting (a long run at full concurrency), instead of growing with the run."""

from __future__ import annotations

import json

from engine.judging import journal


def _row(i: int) -> dict:
    return {"call_key": f"k{i:05d}", "text": "x" * 500}


def _keys_on_disk(j: journal.CallJournal) -> set[str]:
    assert j.path is not None
    return {json.loads(line)["call_key"] for line in j.path.read_text().splitlines()}


def test_the_journal_always_holds_the_unstored_calls_and_stays_small(tmp_path, monkeypatch):
    """3,000 calls arrive one at a time, each stored 8 arrivals later (so 8 are always unstored, as
    with --concurrency 8): the file always holds those 8, and never grows past the compaction limit
    plus one call. Planted: without the rewrite in ``stored`` the file grows to all 3,000 calls
    (1.5 MB) and the test fails."""
    monkeypatch.setattr(journal, "COMPACT_CHARS", 20_000)
    monkeypatch.setenv("LENS_JOURNAL_DIR", str(tmp_path / "second"))
    j = journal.CallJournal(tmp_path / "s.duckdb")
    lag, biggest = 8, 0
    for i in range(3000):
        j.record([_row(i)])
        if i >= lag:
            j.stored([_row(i - lag)["call_key"]])
        on_disk = _keys_on_disk(j)
        unstored = {f"k{n:05d}" for n in range(max(0, i - lag + 1), i + 1)}
        assert unstored <= on_disk and j.unstored == len(unstored)
        biggest = max(biggest, j.path.stat().st_size)
    assert j.path.parent == tmp_path  # beside the store
    assert biggest < 20_000 + 2 * len(json.dumps(_row(0)))
    j.stored([_row(i)["call_key"] for i in range(3000 - lag, 3000)])
    assert j.path.stat().st_size == 0
    j.close()
    assert not list(tmp_path.glob("*.jsonl")) and journal.pending(tmp_path / "s.duckdb") == []


def test_a_location_that_fails_hands_its_rows_to_the_next(tmp_path, monkeypatch):
    """The first location stops taking rows (its folder replaced by a file: a real OSError from the
    kernel); the unstored rows written there and the new ones all land in the second location, the
    first file is removed, and pending() finds the moved journal for the next run."""
    second = tmp_path / "second"
    monkeypatch.setenv("LENS_JOURNAL_DIR", str(second))
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    j = journal.CallJournal(store_dir / "s.duckdb")
    j.record([_row(0), _row(1)])
    first = j.path
    assert first is not None and first.parent == store_dir
    j._fh.close()  # the open file goes; the folder cannot hold a new one
    j._fh = None
    first.unlink()
    store_dir.rmdir()
    store_dir.write_text("not a folder")
    j.record([_row(2)])
    assert j.path is not None and j.path.parent == second and j.moved_because is not None
    assert _keys_on_disk(j) == {"k00000", "k00001", "k00002"}
    j.close()  # three unstored calls: kept for the next run
    assert journal.pending(store_dir / "s.duckdb") == [j.path]
