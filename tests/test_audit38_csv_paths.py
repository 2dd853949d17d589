"""audit38: ``write_csv``'s fast paths (an Arrow scan picks the cells ``neutralise_cell`` may change; rows
written in pandas' chunks where no cell holds a carriage return) write the same text as the per-cell,
per-row writer they replace (written out here as the reference), on frames that separate the paths:
formula characters first, carriage returns and line breaks inside cells and in a column name, numbers and
bytes mixed into a text column, missing cells of every kind, string and categorical columns."""

from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd
import pytest

from engine.ingest.csv_cells import _RowEnds, neutralise_cell, write_csv


def per_cell(frame: pd.DataFrame) -> str:
    """The writer before audit38: every text cell through ``neutralise_cell``, one write per row with a
    ``\\r\\n`` terminator turned into ``\\n``."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or isinstance(out[col].dtype, pd.StringDtype | pd.CategoricalDtype):
            out[col] = out[col].astype(object).map(neutralise_cell)
    out.columns = [neutralise_cell(c) if isinstance(c, str) else c for c in out.columns]
    buf = io.StringIO()
    out.to_csv(_RowEnds(buf), index=False, lineterminator="\r\n")
    return buf.getvalue()


CELLS = ["=1+1", "+3", "-2", "-x", "@a", "\tt", "\rr", "'q", "", "a\rb", "a\nb", "a\r\nb", "plain", "é=",
         "1e5", "-1.5", None, np.nan, pd.NA]
MIXED = [*CELLS, 3, 2.5, b"=x", np.str_("=z")]


def _frame(rng: random.Random) -> pd.DataFrame:
    n = rng.randint(0, 25)
    cols: dict[str, object] = {}
    for k in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        if kind == 0:  # texts and missing cells only (the Arrow scan)
            cols[f"c{k}"] = pd.Series([rng.choice(CELLS) for _ in range(n)], dtype=object)
        elif kind == 1:  # numbers and bytes mixed in (the per-cell scan)
            cols[f"c{k}"] = pd.Series([rng.choice(MIXED) for _ in range(n)], dtype=object)
        elif kind == 2:
            texts = [rng.choice(["=a", "b", "\rx", None]) for _ in range(n)]
            cols[f"c{k}"] = pd.Series(texts, dtype="string")
        elif kind == 3:
            cols[f"c{k}"] = pd.Series([rng.choice(["=a", "b", "c"]) for _ in range(n)], dtype="category")
        else:
            cols[f"c{k}"] = np.arange(n) * 0.5
    names = list(cols)
    if rng.random() < 0.2:
        names[0] = rng.choice(["=h", "a\rb", "x"])
    return pd.DataFrame(dict(zip(names, cols.values(), strict=True)))


@pytest.mark.parametrize("seed", range(3))
def test_write_csv_writes_the_per_cell_writers_text(seed):
    rng = random.Random(seed)
    for _ in range(150):
        frame = _frame(rng)
        before = frame.copy(deep=True)
        assert write_csv(frame) == per_cell(frame), frame
        pd.testing.assert_frame_equal(frame, before)  # nits39: the writer's shallow copy leaves it as it was


def test_a_carriage_return_keeps_its_quotes_and_plain_ids_are_untouched():
    frame = pd.DataFrame({"prompt_id": [f"q{i}" for i in range(2000)] + ["=x", "a\rb"],
                          "n": range(2002)})
    text = write_csv(frame)
    assert text == per_cell(frame)
    assert "'=x," in text and '"a\rb",' in text and text.count("\n") == 2003
    plain = frame.iloc[:2001]
    assert write_csv(plain) == per_cell(plain)


OTHER_KINDS = {  # object and categorical columns with no text, or numbers beside None (the review's)
    "dates": pd.Series([pd.Timestamp("2020-01-01")], dtype=object),
    "date and NaT": pd.Series([pd.Timestamp("2020-01-01"), pd.NaT], dtype=object),
    "ints and None": pd.Series([1, None], dtype=object),
    "a timedelta": pd.Series([pd.Timedelta(seconds=1).to_pytimedelta()], dtype=object),
    "categorical dates": pd.Series(pd.Categorical([pd.Timestamp("2020-01-01")])),
}


@pytest.mark.parametrize("kind", list(OTHER_KINDS))
def test_columns_of_other_kinds_are_written_as_the_per_cell_writer_wrote_them(kind):
    """A column the text scan cannot read as texts (dates, numbers with None, durations) goes through the
    per-cell map as before, whose result pandas formats by its own dtype rules: ``2020-01-01``, not
    ``2020-01-01 00:00:00``; ``1.0`` beside an empty cell, not ``1``."""
    frame = pd.DataFrame({"c": OTHER_KINDS[kind], "t": ["=x"] * len(OTHER_KINDS[kind])})
    assert write_csv(frame) == per_cell(frame)


@pytest.mark.parametrize("kind", ["string", "large_string", "string_view", "dictionary"])
def test_arrow_text_columns_are_neutralised_as_object_text_is(kind):
    """An ``ArrowDtype`` text column is written as the per-cell writer writes the same cells in an object
    column: formula characters neutralised, a carriage return quoted (both were written raw before)."""
    import pyarrow as pa

    types = {"string": pa.string(), "large_string": pa.large_string(), "string_view": pa.string_view(),
             "dictionary": pa.dictionary(pa.int32(), pa.string())}
    cells = [c for c in CELLS if isinstance(c, str)] + [None]
    frame = pd.DataFrame({"c": pd.Series(cells, dtype=pd.ArrowDtype(types[kind])), "n": range(len(cells))})
    objects = pd.DataFrame({"c": pd.Series(cells, dtype=object), "n": range(len(cells))})
    text = write_csv(frame)
    assert text == per_cell(objects)
    assert "'=1+1," in text and '"a\rb",' in text
