"""audit38: the agreement table of a one-judge selection is decided in SQL before any verdict is read
(``engine.diagnostics._single_judge_agreement``). Against the table computed from the verdicts (the
frame path, which never takes the shortcut) on selections that separate the paths: one judge, a judge
filter leaving one of two, a judge whose verdicts are all invalid beside a valid one, the judge named as
its own reference, a reference it does not hold, by category, and two judges (computed as before); the
shortcut reads no verdict, the others do."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.diagnostics import diagnose
from tests.seam_data import store_of_frames


def _rows(judges: dict[str, str]) -> pd.DataFrame:
    """Three prompts x three pairs per judge; ``judges`` maps a judge to its winner ("mixed": varied)."""
    rows = []
    for judge, how in judges.items():
        for p in range(3):
            for k, (a, b) in enumerate((("m1", "m2"), ("m2", "m3"), ("m1", "m3"))):
                winner = ("model_a", "model_b", "tie")[(p + k) % 3] if how == "mixed" else how
                rows.append({"prompt_id": f"p{p}", "model_a": a, "model_b": b, "winner": winner,
                             "judge": judge, "category": f"c{p % 2}"})
    return pd.DataFrame(rows)


DATA = {
    "one": _rows({"j1": "mixed"}),
    "two": _rows({"j1": "mixed", "j2": "model_a"}),
    "dead": _rows({"j1": "mixed", "j2": "invalid"}),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = store_of_frames(tmp_path_factory.mktemp("agreement"), DATA)
    yield s
    s.close()


CASES = [  # (dataset, judge, params, the shortcut answers)
    ("one", None, {}, True),
    ("one", "j1", {}, True),
    ("one", None, {"by_category": True}, True),
    ("one", None, {"reference": "j1"}, True),
    ("one", None, {"reference": "human"}, False),  # a (j1, human) row of 0 items
    ("two", "j2", {}, True),
    ("two", ["j1"], {"by_category": True}, True),
    ("two", None, {}, False),
    ("two", None, {"by_category": True}, False),
    ("dead", None, {}, False),  # two judges named, one with no valid verdict: no row and no note
]


@pytest.mark.parametrize(("dataset", "judge", "params", "short"), CASES)
def test_the_sql_answer_is_the_verdicts_answer(store, monkeypatch, dataset, judge, params, short):
    frame = store.verdicts(dataset)
    expected = diagnose(frame, dataset, judge=judge, table="agreement", **params)
    reads = []
    real = type(store).verdicts
    monkeypatch.setattr(type(store), "verdicts", lambda self, *a, **k: reads.append(a) or real(self, *a, **k))
    got = diagnose(store, dataset, judge=judge, table="agreement", **params)
    pd.testing.assert_frame_equal(got, expected)
    assert got.attrs.get("notes") == expected.attrs.get("notes")
    assert bool(reads) is not short
    if short:
        assert got.empty and "single judge" in got.attrs["notes"][0]


@pytest.mark.parametrize(("dataset", "judge"), [("one", None), ("two", "j2"), ("two", None)])
def test_an_unknown_policy_is_refused_on_both_paths_with_one_sentence(store, dataset, judge):
    """nits39: the one-judge shortcut answered before the policy was checked; both paths refuse it alike."""
    frame = store.verdicts(dataset)
    with pytest.raises(ValueError) as from_frame:
        diagnose(frame, dataset, judge=judge, table="agreement", policy="mode")
    with pytest.raises(ValueError) as from_store:
        diagnose(store, dataset, judge=judge, table="agreement", policy="mode")
    assert str(from_store.value) == str(from_frame.value)
    assert str(from_frame.value) == "Unknown combine policy 'mode'; choose one of plurality, net, unanimous."
