"""Data page uploads of issue 23: a row the reader refuses is shown as rejected, never as "Every row is
valid" (bug 1: a JSON Lines line over the longest row was dropped and the page said every row was
valid), and a file of thousands of header columns is one error box, with no select box offering them
(bug 14: 19 select boxes of 400,000 options hung the browser tab)."""

from __future__ import annotations

import json

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import own_app_at, unescape_md  # noqa: F401

from engine.ingest.limits import COLUMNS_MAX, LINE_MAX_BYTES

ROW = {"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A"}


def test_a_line_over_the_longest_row_is_a_rejected_row_on_the_page(own_app_at):
    long = json.dumps({**ROW, "prompt_id": "long", "explanation": "z" * (LINE_MAX_BYTES + 1024)})
    data = "\n".join([json.dumps({**ROW, "prompt_id": "p1"}), long, json.dumps({**ROW, "prompt_id": "p3"})])
    at = own_app_at("app_pages/6_data.py")
    at.file_uploader(key="data_upload").set_value(("long.jsonl", (data + "\n").encode(), "application/json"))
    at.run()
    assert [e.message for e in at.exception] == []
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Rows read"], metrics["Valid rows"], metrics["Rejected rows"]) == ("3", "2", "1")
    assert not [s.value for s in at.success if "Every row is valid" in s.value]
    rejected = next(d.value for d in at.dataframe if "reason" in d.value.columns)
    assert rejected["source_line"].tolist() == [2] and "longer than" in rejected["reason"][0]


def test_a_header_wider_than_the_limit_is_one_error_and_no_select_box_lists_it(own_app_at):
    width = COLUMNS_MAX * 5
    header = ["prompt_id", "model_a", "model_b", "winner", *(f"c{i}" for i in range(width - 4))]
    data = (",".join(header) + "\n" + ",".join(["p1", "a", "b", "A", *[""] * (width - 4)]) + "\n").encode()
    at = own_app_at("app_pages/6_data.py")
    at.file_uploader(key="data_upload").set_value(("wide.csv", data, "text/csv")).run()
    assert [e.message for e in at.exception] == []
    errors = [unescape_md(e.value) for e in at.error]
    assert len(errors) == 1 and f"has {width:,} columns; a verdict file may have at most {COLUMNS_MAX:,}" \
        in errors[0]
    assert max((len(s.options) for s in at.selectbox), default=0) <= COLUMNS_MAX + 1
    assert not [m for m in at.metric]  # nothing validated, nothing offered to import


def test_the_rejected_rows_table_gives_the_reason_the_width(own_app_at):
    """Audit 37: the line number and the reason split the page's width evenly, so at 1280 px a reason of
    the longest kind (a winner value, with every accepted value listed) reached the frame's edge. The line
    column is narrow and the reason wide; every reason names its row's line."""
    rows = ["prompt_id,model_a,model_b,winner", "p1,a,b,A", "p2,a,b,left", "p3,a,a,A"]
    at = own_app_at("app_pages/6_data.py")
    at.file_uploader(key="data_upload").set_value(("bad.csv", ("\n".join(rows) + "\n").encode(), "text/csv"))
    at.run()
    assert [e.message for e in at.exception] == []
    frame = next(d for d in at.dataframe if "reason" in d.value.columns)
    assert frame.value["source_line"].tolist() == [3, 4]
    assert frame.value["reason"][0].startswith("winner value 'left' is not one of")
    widths = {c: cfg.get("width") for c, cfg in json.loads(frame.proto.columns).items()}
    assert (widths["source_line"], widths["reason"]) == ("small", "large")
