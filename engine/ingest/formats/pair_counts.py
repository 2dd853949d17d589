"""Pair-count files: aggregated outcomes per model pair, the shape LMArena and leaderbot publish.

One row per pair: ``model_a, model_b, wins_a, wins_b, ties`` and optionally ``both_bad`` (ties the rater
judged bad on both sides; the count rankers count them as ties, as a battle log's ``tie (bothbad)``
is counted). A file is recognised by these column names (compared lower-cased, outer spaces dropped).
There is no prompt, no judge and no single verdict: such a file is a dataset of counts, not verdicts.

Pure names and checks only; ``engine.ingest.pair_count_files`` reads the containers.
"""

from __future__ import annotations

from collections.abc import Iterable

COUNT_COLUMNS: tuple[str, ...] = ("wins_a", "wins_b", "ties")
"""The count columns every pair-count file has, in the order they are stored."""
NAME_COLUMNS: tuple[str, ...] = ("model_a", "model_b")
REQUIRED: tuple[str, ...] = (*NAME_COLUMNS, *COUNT_COLUMNS)
OPTIONAL: tuple[str, ...] = ("both_bad",)
COLUMNS: tuple[str, ...] = (*REQUIRED, *OPTIONAL)
"""Every column a pair-count file may hold that is read; any other column is listed as not read."""


def normalised(fields: Iterable[object]) -> dict[str, str]:
    """The file's own column names keyed by their lower-cased, stripped spelling."""
    return {str(f).strip().lower(): str(f) for f in fields}


def matches(fields: Iterable[object]) -> bool:
    """Whether a file with these columns is a pair-count file (all of ``REQUIRED`` present)."""
    have = normalised(fields)
    return all(c in have for c in REQUIRED)


def missing(fields: Iterable[object]) -> list[str]:
    """The required columns the file lacks, in ``REQUIRED`` order."""
    have = normalised(fields)
    return [c for c in REQUIRED if c not in have]
