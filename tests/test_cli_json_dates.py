"""nits39: ``--format json`` writes every time with the precision the data has (``engine.cli._common
.json_date_unit``): read back, each ISO string is the time that was written, to the last digit, on frames
whose finest time is a second, a millisecond, a microsecond or a nanosecond (date columns of several units,
with a zone, missing times, times in an object column beside texts), and on the store's own ``TIMESTAMP``
(microseconds) through ``python -m engine datasets --format json``. Before, every time was cut to the
second."""

from __future__ import annotations

import datetime
import io
import json

import pandas as pd
import pytest

from engine.cli._common import write_frame
from tests.cli_inprocess import run_engine
from tests.seam_data import store_of_frames

T = pd.Timestamp
FRAMES = {  # (the frame, the one unit the whole frame's times are written in)
    "seconds": (pd.DataFrame({"t": [T("2020-01-01 00:00:01"), pd.NaT], "n": [1, 2]}), "s"),
    "seconds unit": (pd.DataFrame({"t": pd.Series([T("2021-05-06 07:08:09")]).astype("datetime64[s]")}), "s"),
    "milliseconds": (pd.DataFrame({"t": [T("2020-01-01 00:00:01"), T("2020-01-01 00:00:01.5")]}), "ms"),
    "microseconds": (pd.DataFrame({"t": [T("2020-01-01 00:00:00.123456")], "u": [T("2020-01-01")]}), "us"),
    "nanoseconds": (pd.DataFrame({"t": [T("2020-01-01 00:00:00.000000001")]}), "ns"),
    "with a zone": (pd.DataFrame({"t": [T("2020-01-01 00:00:01.25", tz="Europe/Paris")]}), "ms"),
    "objects": (pd.DataFrame({"o": pd.Series([T("2020-01-01 00:00:00.000002"), "x", None], dtype=object)}),
                "us"),
    "python datetimes": (pd.DataFrame({"o": pd.Series([datetime.datetime(2020, 1, 1, 0, 0, 0, 7000)],
                                                      dtype=object)}), "ms"),
}
DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _as_utc(value) -> pd.Timestamp:
    stamp = T(value)
    return stamp.tz_convert("UTC").tz_localize(None) if stamp.tzinfo is not None else stamp


@pytest.mark.parametrize("name", list(FRAMES))
def test_json_times_read_back_as_written(name):
    frame, unit = FRAMES[name]
    buf = io.StringIO()
    write_frame(frame, "json", buf)
    rows = json.loads(buf.getvalue())
    for col in frame.columns:
        for row, value in zip(rows, frame[col], strict=True):
            if isinstance(value, datetime.datetime) and not pd.isna(value):
                text = row[col]
                assert _as_utc(text) == _as_utc(value), (col, text, value)
                fraction = text.rstrip("Z").partition(".")[2]
                assert len(fraction) == DIGITS[unit], text  # one unit for the frame, no wider than needed
            elif pd.isna(value):
                assert row[col] is None
            else:
                assert row[col] == value


def test_the_datasets_listing_gives_the_stored_microseconds(tmp_path):
    frame = pd.DataFrame({"prompt_id": ["p1"], "model_a": ["a"], "model_b": ["b"], "winner": ["model_a"],
                          "judge": ["j"]})
    store = store_of_frames(tmp_path, {"d1": frame, "d2": frame})
    with store.transaction() as tx:
        for name, time in (("d1", "2026-01-02 03:04:05.123456"), ("d2", "2026-01-02 03:04:06")):
            tx.execute("UPDATE datasets SET updated_at = CAST(? AS TIMESTAMP) WHERE name = ?", [time, name])
    stored = dict(store.cursor().execute("SELECT name, updated_at FROM datasets").fetchall())
    store.close()
    out = run_engine(["--db", tmp_path / "lens.duckdb", "datasets", "--format", "json"], check=True).stdout
    shown = {r["name"]: datetime.datetime.fromisoformat(r["updated_at"]) for r in json.loads(out)}
    assert {k: shown[k] for k in stored} == stored
    assert shown["d1"].microsecond == 123456


def test_a_missing_time_in_an_object_column_does_not_change_the_precision_written():
    """NaT is a datetime too (its nanosecond is NaN): one among whole-second times leaves them whole
    seconds (review of round 39: it made every time nanoseconds)."""
    when = datetime.datetime(2026, 11, 27, 18, 21, 25)
    frame = pd.DataFrame({"at": pd.Series([when, pd.NaT, when.replace(second=26)], dtype=object)})
    out = io.StringIO()
    write_frame(frame, "json", out)
    written = [r["at"] for r in json.loads(out.getvalue())]
    assert written == ["2026-11-27T18:21:25", None, "2026-11-27T18:21:26"]
