"""Readers for the judgment files of the field's tools: source records → canonical verdict rows.

Each tool module maps one source record (a dict of the file's own fields) to one or more rows named
in the canonical vocabulary (``prompt_id, model_a, model_b, winner, judge, order, prob_a, …`` plus
``battle_id, tstamp, strength``); a row that cannot be a verdict carries a reason under
``_problem``. Pure functions, no I/O: ``engine/ingest/verdict_files.py`` reads the container (JSON Lines,
JSON array, CSV, Parquet) and hands the records here. ``detect_tool`` picks a tool from the fields
of the first readable record; ``--format NAME`` names it instead.

May import: ``engine.errors`` only (pure record mapping).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from engine.ingest.formats import alpaca_eval, arena, arena_hard, evalica, fastchat
from engine.ingest.formats._common import PROBLEM


@dataclass(frozen=True)
class ToolFormat:
    """One tool's file format: how to recognise a record, how to map it, which fields it reads."""

    name: str
    title: str
    matches: Callable[[set[str]], bool]
    rows: Callable[[Mapping, int], list[dict]]
    used: frozenset[str]


TOOLS: tuple[ToolFormat, ...] = (
    ToolFormat(
        "fastchat-pair",
        "FastChat MT-Bench pairwise judgments",
        fastchat.pair_matches,
        fastchat.pair_rows,
        fastchat.PAIR_USED,
    ),
    ToolFormat("arena-hard", "Arena-Hard judgments", arena_hard.matches, arena_hard.rows, arena_hard.USED),
    ToolFormat(
        "alpaca-eval", "AlpacaEval annotations", alpaca_eval.matches, alpaca_eval.rows, alpaca_eval.USED
    ),
    ToolFormat("arena", "Chatbot Arena battle log", arena.matches, arena.rows, arena.USED),
    ToolFormat(
        "mtbench-human",
        "MT-Bench human judgments",
        fastchat.human_matches,
        fastchat.human_rows,
        fastchat.HUMAN_USED,
    ),
    ToolFormat(
        "evalica", "evalica / LLMFAO left-right comparisons", evalica.matches, evalica.rows, evalica.USED
    ),
)
"""Checked in this order; the first whose ``matches`` accepts the record's fields wins."""

TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in TOOLS)
_BY_NAME = {t.name: t for t in TOOLS}


def tool(name: str) -> ToolFormat:
    """The tool format called ``name``."""
    return _BY_NAME[name]


def detect_tool(records: Sequence) -> str | None:
    """The tool whose fields the first dict among ``records`` has (keys compared lower-cased)."""
    first = next((r for r in records if isinstance(r, Mapping) and "raw_text" not in r), None)
    if first is None:
        return None
    return detect_fields(first)


def detect_fields(fields) -> str | None:
    """The tool whose record fields these are (names compared lower-cased), or None."""
    keys = {str(k).strip().lower() for k in fields}
    return next((t.name for t in TOOLS if t.matches(keys)), None)


def _lower_keys(rec: Mapping) -> Mapping:
    return {str(k).strip().lower(): v for k, v in rec.items()}


def _is_lower(rec: Mapping) -> bool:
    return all(isinstance(k, str) and k == k.strip().lower() for k in rec)


@dataclass
class Expanded:
    """Canonical rows made from source records, each with the record's line, fields and problem."""

    rows: list[dict]
    lines: list[int]
    origs: list
    problems: list[str | None]
    dropped: list[str]


def expand(name: str, records: Sequence, lines: Sequence[int], problems: Sequence[str | None]) -> Expanded:
    """Map every source record through tool ``name``; a record that could not be parsed stays one
    row with its parse problem. Also lists the source fields the tool does not read."""
    fmt = tool(name)
    out = Expanded([], [], [], [], [])
    seen: dict[str, None] = {}
    lower = None  # decided on the first record: the files we read have one set of field names
    for rec, line, prob in zip(records, lines, problems, strict=True):
        if prob is not None or not isinstance(rec, Mapping):
            out.rows.append({})
            out.lines.append(line)
            out.origs.append(rec)
            out.problems.append(prob or "the record is not a JSON object")
            continue
        if len(seen) < 200:
            for k in rec:
                seen.setdefault(str(k), None)
        if lower is None:
            lower = _is_lower(rec)
        made = fmt.rows(rec if lower else _lower_keys(rec), line) or [
            {PROBLEM: "the record holds no verdict"}
        ]
        for row in made:
            reason = row.pop(PROBLEM, None)
            out.rows.append(row)
            out.lines.append(line)
            out.origs.append(rec)
            out.problems.append(reason)
    out.dropped = [k for k in seen if k.strip().lower() not in fmt.used]
    return out


__all__ = ["TOOLS", "TOOL_NAMES", "ToolFormat", "Expanded", "detect_fields", "detect_tool", "expand", "tool"]
