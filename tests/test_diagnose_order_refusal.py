"""The position and stress tables refuse a selection without a recorded presentation order before reading
its verdicts (``engine.diagnostics._refuse_unordered_store``): the SQL test must give the same answer as
``has_known_order`` on the verdicts it would have read, on data that separates them (no order column,
orders only on invalid verdicts, orders for one judge only, a judge filter), and a refused table reads no
verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.diagnostics import diagnose
from engine.diagnostics.verdict_pairs import has_known_order
from engine.errors import LensError
from tests.seam_data import store_of_frames


def _rows(orders: dict[str, list[str | None]], winners: list[str]) -> pd.DataFrame:
    rows = []
    for judge, judge_orders in orders.items():
        for i, (order, winner) in enumerate(zip(judge_orders, winners, strict=True)):
            a, b = ("m1", "m2") if i % 2 == 0 else ("m2", "m3")
            rows.append({"prompt_id": f"p{i // 2}", "model_a": a, "model_b": b, "winner": winner,
                         "judge": judge, "order": order})
    return pd.DataFrame(rows)


CASES = {
    # no order anywhere
    "none": _rows({"j1": [None] * 4, "j2": [None] * 4}, ["model_a", "model_b", "tie", "model_a"]),
    # orders on invalid verdicts only: nothing usable
    "invalid_only": _rows({"j1": ["AB", None, "BA", None]}, ["invalid", "model_a", "invalid", "model_b"]),
    # one judge records orders, the other does not
    "one_judge": _rows({"j1": ["AB", "BA", "AB", "BA"], "j2": [None] * 4},
                       ["model_a", "model_b", "model_a", "tie"]),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = store_of_frames(tmp_path_factory.mktemp("order"), CASES)
    yield s
    s.close()


@pytest.mark.parametrize("table", ["position", "stress"])
@pytest.mark.parametrize(("dataset", "judge"), [("none", None), ("invalid_only", None), ("one_judge", None),
                                                ("one_judge", "j1"), ("one_judge", "j2"),
                                                ("one_judge", ["j2"])])
def test_the_refusal_is_the_verdicts_own_answer_and_reads_none(store, monkeypatch, table, dataset, judge):
    known = has_known_order(store.verdicts(dataset, judge=judge))
    reads = []
    real = type(store).verdicts
    monkeypatch.setattr(type(store), "verdicts", lambda self, *a, **k: reads.append(a) or real(self, *a, **k))
    if known:
        try:
            diagnose(store, dataset, judge=judge, table=table)
        except LensError as exc:  # stress on too few pairs says so, after reading: not the order sentence
            assert "shown first" not in str(exc)
        assert reads, "an ordered selection is read and diagnosed"
    else:
        with pytest.raises(LensError, match="records which answer was shown first"):
            diagnose(store, dataset, judge=judge, table=table)
        assert not reads, "a selection with no order is refused before its verdicts are read"


def test_a_selection_with_no_verdict_keeps_its_own_sentence(store):
    with pytest.raises(LensError, match="There are no verdicts for judge nobody"):
        diagnose(store, "one_judge", judge="nobody", table="position")
