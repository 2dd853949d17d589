"""Data page, import form: the options that say what a file leaves unsaid — its judge (prefilled with a
name from the file when the file names none), columns with one value for every row (``--set``), and the
baseline of Arena-Hard v0.1 judgment files (``--baseline``). The engine decides the names and checks the
values (``engine/ingest/constant_columns.py``); this module only draws the widgets."""

from __future__ import annotations

import hashlib

import streamlit as st

from app_pages._lens import or_stop
from engine.ingest.constant_columns import SETTABLE, parse_set, suggested_judge

JUDGE_KEY = "data_judge"


def judge_input(box, data: bytes | None, filename: str | None, columns: list[str], tool: str | None,
                fmt: str | None = None) -> str:
    """The "Judge of this file" box in ``box``; a newly uploaded file that names no judge fills the box with
    the name its file gives, unless the user typed a name of their own (an earlier file's filled-in name is
    replaced). A format picked by hand (``fmt``; None: detect) is the file's as much as its bytes: picking
    another suggests again, for the file as that format reads it. Returns the name ('' = the file's own
    judge field)."""
    if data is not None and filename is not None:
        digest = hashlib.sha256(data + filename.encode() + f"\0{fmt}".encode()).hexdigest()
        if st.session_state.get("_data_judge_for") != digest:
            st.session_state["_data_judge_for"] = digest
            typed = st.session_state.get(JUDGE_KEY, "").strip()
            if not typed or typed == st.session_state.get("_data_judge_filled"):
                default = suggested_judge(filename, columns, tool, data, fmt) or ""
                st.session_state[JUDGE_KEY] = st.session_state["_data_judge_filled"] = default
    return box.text_input(
        "Judge of this file",
        key=JUDGE_KEY,
        placeholder="from the file",
        help="Every row of the file goes under this judge. Filled in from the file's name when the file "
        "names no judge; empty: the file's judge field, and rows without one under the file's name.",
    ).strip()


def set_and_baseline(tool: str | None) -> tuple[dict[str, str], str | None]:
    """The "Same value in every row" box (COLUMN=VALUE, comma-separated) and, for an Arena-Hard file, the
    baseline box; each value checked as the command line checks it (an error box when bad)."""
    s1, s2 = st.columns(2)
    text = s1.text_input(
        "Same value in every row",
        key="data_set",
        placeholder="order=AB, judge=human",
        help=f"COLUMN=VALUE, comma-separated, for {', '.join(SETTABLE)}: replaces the file's own values in "
        "that column (the report says how many). order=AB states that model_a was shown first.",
    )
    sets = or_stop(parse_set, [v for v in text.split(",") if v.strip()], "Same value in every row:")
    baseline = None
    if tool == "arena-hard":
        baseline = s2.text_input(
            "Baseline model",
            key="data_baseline",
            placeholder="e.g. gpt-4-0314",
            help="Arena-Hard v0.1 judgment files name their baseline only in the run's configuration; "
            "a record's own baseline field wins.",
        ).strip() or None
    return sets, baseline
