"""Nothing lost in silence (issue 23, what must be true 2): for every reader, every row read is stored,
rejected with its line, or held back, and the counts add up: ``read = stored + rejected + held back``.

Hypothesis draws files of good rows, rows planted bad in one way each, blank lines (not rows) and
unreadable lines, and writes them as CSV, JSON Lines, a JSON array and Parquet; the expected counts
come from the drawing (what was planted), the stored count from the store itself (SQL on the real
DuckDB file). For the tools' formats (engine/ingest/formats) a file is drawn from the records of the
fixture of that tool, repeated and shuffled, with unreadable records between them; the rows a record
gives are counted by validating that record alone (a second path), and the whole file must give
their sum.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.ingest.importer import store_report, validate_file
from engine.ingest.verdicts import validate_bytes
from engine.store.connection import Store

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"

GOOD = {"prompt_id": "p", "model_a": "alpha", "model_b": "beta", "winner": "A", "prob_a": "0.7",
        "tstamp": "1700000000"}
PLANTED = {  # one way each to be a rejected row
    "same model": {"model_b": "alpha"},
    "unknown winner": {"winner": "maybe"},
    "no prompt": {"prompt_id": ""},
    "blank name": {"model_a": "\u3164"},
    "look-alike": {"model_a": "\u0430lpha"},
    "prob_a out of range": {"prob_a": "1.5"},
    "tstamp out of range": {"tstamp": "1e20"},
}
KINDS = ["good", *PLANTED, "blank", "unreadable"]
"""What a drawn line is: a valid row, a row planted bad, a blank line (no row), a line no reader can
parse (text formats only)."""
COLUMNS = list(GOOD)


def _row(kind: str, k: int) -> dict:
    return {**GOOD, "prompt_id": f"p{k}", **PLANTED.get(kind, {})}


def _write(path: Path, fmt: str, kinds: list[str]) -> None:
    """The drawn lines as a file of ``fmt`` (blank and unreadable lines only where the format has lines)."""
    if fmt == "csv":
        lines = [",".join(COLUMNS)]
        for k, kind in enumerate(kinds):
            lines.append("" if kind == "blank" else "x,y" if kind == "unreadable"
                         else ",".join(_row(kind, k).values()))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text("".join(
            "\n" if kind == "blank" else "{not json\n" if kind == "unreadable"
            else json.dumps(_row(kind, k)) + "\n" for k, kind in enumerate(kinds)), encoding="utf-8")
    elif fmt == "json":  # an element that is not an object stands for the unreadable line
        path.write_text(json.dumps([[1] if kind == "unreadable" else _row(kind, k)
                                    for k, kind in enumerate(kinds)]), encoding="utf-8")
    else:
        pq.write_table(pa.Table.from_pylist([_row(kind, k) for k, kind in enumerate(kinds)]), path)


def _stored(store: Store, dataset: str) -> int:
    table = store.datasets().set_index("name")
    return int(table.loc[dataset, "verdicts"]) if dataset in table.index else 0


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    s = Store(tmp_path_factory.mktemp("counts") / "s.duckdb")
    yield s
    s.close()


def _check_sum(store: Store, rep, dataset: str, skip: bool, read: int, good: int) -> None:
    """The report's counts, the store's count and the printed sum all agree with the drawing."""
    assert (rep.rows_read, rep.n_good, rep.n_rejected) == (read, good, read - good)
    result = store_report(store, rep, dataset, skip_invalid=skip)
    stored = _stored(store, dataset)
    assert result.rows_stored == stored
    assert stored == (good if (skip or rep.n_rejected == 0) and good else 0)
    assert result.rows_read == result.rows_stored + result.rows_rejected + result.rows_held
    assert result.summary().startswith(f"read {read} = stored {stored} + rejected {read - good}")
    if result.rows_held:
        assert f"+ held back {result.rows_held} " in result.summary()


_draws = iter(range(10**9))


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json", "parquet"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=25), skip=st.booleans())
@example(kinds=[*KINDS, "good"], skip=True)  # every kind at least once, whatever the draw
@example(kinds=["unreadable", "good", "blank", "same model"], skip=False)
def test_every_container_reader_adds_up(tmp_path: Path, store: Store, fmt: str, kinds: list[str], skip: bool):
    if fmt in ("json", "parquet"):
        kinds = [k for k in kinds if k != "blank"] or ["good"]
    if fmt == "parquet":
        kinds = [k for k in kinds if k != "unreadable"] or ["good"]
    if all(k == "blank" for k in kinds):
        kinds = [*kinds, "good"]
    path = tmp_path / f"v{next(_draws)}.{fmt}"
    _write(path, fmt, kinds)
    read = sum(k != "blank" for k in kinds)
    good = kinds.count("good")
    rep = validate_file(path, dataset="d", fmt=fmt)
    _check_sum(store, rep, f"d{path.stem}", skip, read, good)


TOOL_FILES = {
    "fastchat-pair": "gpt-4_pair.jsonl",
    "mtbench-human": "human_judgments.jsonl",
    "arena-hard": "alpha.jsonl",
    "arena": "arena_conversations.jsonl",
    "alpaca-eval": "annotations.json",
    "evalica": "llmfao-comparisons.csv",
}


def _records(tool: str) -> tuple[str, list[str]]:
    """The fixture's header (CSV) or '' and its records, each as the text that writes it."""
    text = (FIX / TOOL_FILES[tool]).read_text(encoding="utf-8")
    if tool == "alpaca-eval":
        return "", [json.dumps(r) for r in json.loads(text)]
    lines = [x for x in text.splitlines() if x.strip()]
    return (lines[0], lines[1:]) if tool == "evalica" else ("", lines)


def _tool_file(tool: str, header: str, parts: list[str]) -> bytes:
    if tool == "alpaca-eval":
        return ("[" + ",".join(parts) + "]").encode()
    return ((header + "\n" if header else "") + "\n".join(parts) + "\n").encode()


UNREADABLE = {"alpaca-eval": "[1]", "evalica": "a,b"}
"""A record the tool's container cannot read as one: an element that is not an object (JSON array),
a short row (CSV); a line that is not JSON for the JSON Lines tools."""


@functools.cache
def _alone(tool: str, header: str, rec: str) -> tuple[int, int]:
    """Rows read and valid rows of one record validated as a file of its own."""
    rep = validate_bytes(_tool_file(tool, header, [rec]), TOOL_FILES[tool], dataset="d", fmt=tool)
    return rep.rows_read, rep.n_good


@pytest.mark.parametrize("tool", list(TOOL_FILES))
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(min_value=-1, max_value=50), min_size=1, max_size=12), skip=st.booleans())
@example(picks=[-1, *range(8), -1], skip=True)  # every record of the fixture and unreadable ones
def test_every_tool_reader_adds_up(store: Store, tool: str, picks: list[int], skip: bool):
    header, records = _records(tool)
    chosen = [None if p < 0 else records[p % len(records)] for p in picks]  # None: an unreadable record
    if all(c is None for c in chosen):
        chosen.append(records[0])
    parts = [UNREADABLE.get(tool, "{oops") if c is None else c for c in chosen]
    alone = {rec: _alone(tool, header, rec) for rec in set(c for c in chosen if c is not None)}
    read = sum(1 if c is None else alone[c][0] for c in chosen)
    good = sum(0 if c is None else alone[c][1] for c in chosen)
    rep = validate_bytes(_tool_file(tool, header, parts), TOOL_FILES[tool], dataset="d", fmt=tool)
    assert rep.format == tool
    _check_sum(store, rep, f"t{next(_draws)}", skip, read, good)


def test_the_drawings_cover_every_planted_kind_and_a_reader_sees_each():
    """The planted rows are each rejected on their own (else the sums above could hold by luck)."""
    kinds = list(PLANTED)
    frame = pd.DataFrame([_row(k, i) for i, k in enumerate(kinds)])
    rep = validate_bytes(frame.to_csv(index=False).encode(), "p.csv", dataset="d")
    assert rep.n_good == 0 and rep.n_rejected == len(kinds)
