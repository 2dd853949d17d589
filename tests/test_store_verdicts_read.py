"""nits39: ``Store.verdicts`` converts DuckDB's Arrow result column by column (``_frame_by_columns``: 0.61 GB
where ``.df()`` and ``astype`` took 1.02 GB for the graph columns of a million verdicts). The frame is the
one the old read made (``.df()`` of the same SQL, then the same dtypes: written out here), bit for bit, on
the shipped store's every dataset and on a store whose columns separate the conversions: missing cells in
every nullable column (texts, integers, floats), categories all missing, several judges, variants and
turns, every column and a few, with and without filters, and a selection with no row."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.store.schema import STYLE_COLUMNS, VERDICT_COLUMNS, VERDICT_DTYPES
from engine.store.sql import params
from tests.seam_data import store_of_frames


def old_read(store, dataset, columns=None, **filters) -> pd.DataFrame:
    """The read before nits39: ``.df()`` of the same query, then the columns' dtypes."""
    rel = store.verdict_relation(dataset, **filters)
    keep = ("verdict_id", *(VERDICT_COLUMNS if columns is None else
                            [c for c in (*VERDICT_COLUMNS, *STYLE_COLUMNS) if c in set(columns)]))
    all_types = VERDICT_DTYPES | dict.fromkeys(STYLE_COLUMNS, "float64")
    cols = ", ".join(f'"{c}"' for c in keep)
    df = store.cursor().execute(f"SELECT {cols} FROM {rel} ORDER BY verdict_id", params(rel)).df()
    return df.astype({"verdict_id": "int64", **{c: t for c, t in all_types.items() if c in keep}})


FRAMES = {
    "gaps": pd.DataFrame({
        "prompt_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
        "model_a": ["a", "b", "a", "c", "b", "a"], "model_b": ["b", "c", "c", "b", "c", "b"],
        "winner": ["A", "tie", "B", "A", "invalid", "B"],
        "judge": ["j1", "j2", "j1", "j2", "j1", "j2"],
        "category": ["x", None, "y", None, None, "x"],
        "variant": [0, 1, 0, 0, 2, 0], "turn": [1, 1, 2, 1, 1, 1],
        "order": ["AB", None, "BA", "AB", None, None],
        "prob_a": [0.7, None, 0.2, None, None, 0.5],
        "strength": [1, None, 2, None, 2, None],
        "tstamp": [1.5, None, 2.5, 3.5, None, None],
        "explanation": ["why", None, "", "because", None, "x"],
    }),
    "nocat": pd.DataFrame({"prompt_id": ["q1", "q2"], "model_a": ["a", "a"], "model_b": ["b", "c"],
                           "winner": ["A", "B"], "judge": ["j", "j"]}),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = store_of_frames(tmp_path_factory.mktemp("verdicts_read"), FRAMES)
    yield s
    s.close()


@pytest.mark.parametrize("columns", [None, ["prompt_id", "winner", "prob_a"],
                                     ["judge", "strength", "tstamp"]])
@pytest.mark.parametrize("filters", [{}, {"judge": "j2"}, {"category": "x"}, {"judge": "nobody"},
                                     {"valid_only": True}])
def test_the_read_is_the_old_read(store, columns, filters):
    for dataset in ("gaps", "nocat"):
        got = store.verdicts(dataset, columns=columns, **filters)
        pd.testing.assert_frame_equal(got, old_read(store, dataset, columns, **filters), check_exact=True)
        assert isinstance(got.index, pd.RangeIndex)


def test_the_shipped_datasets_read_as_before(shipped_db):
    from engine.store.connection import Store

    with Store(shipped_db) as store:
        read = [d for d in store.datasets()["name"] if d != "chatbot_arena_2024_08_14"]  # that one: counts
        for dataset in read:
            pd.testing.assert_frame_equal(store.verdicts(dataset), old_read(store, dataset), check_exact=True)
    assert "vicuna80" in read
