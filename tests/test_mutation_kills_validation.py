"""Row validation (engine.ingest.normalise) at its edges (mutation pass survivors): the variant's
default and the variant kind it implies, prob_a's closed range and strength's two values; each row's
expected verdict written out from the file format's rules, row by row."""

from __future__ import annotations

import numpy as np

from engine.ingest.normalise import normalise_rows
from engine.ingest.raw_rows import RawRows


def normalise(records: list[dict]):
    keys = list(dict.fromkeys(k for r in records for k in r))
    cols = {k: [r.get(k) for r in records] for k in keys}
    n = len(records)
    raw = RawRows(cols, records, ["f.jsonl"] * n, list(range(1, n + 1)), [None] * n)
    frame, reasons, _ = normalise_rows(raw, "d", None, None)
    return frame, list(reasons)


BASE = {"prompt_id": "p", "model_a": "a", "model_b": "b", "winner": "A"}


def test_variant_defaults_to_zero_and_its_kind_follows_it():
    cases = [
        ({}, 0, "original"),
        ({"variant": 0}, 0, "original"),
        ({"variant": 1}, 1, "paraphrase"),
        ({"variant": 2}, 2, "paraphrase"),
        ({"variant": 3, "variant_kind": "sample"}, 3, "sample"),
        ({"variant": 0, "variant_kind": "paraphrase"}, 0, "paraphrase"),
    ]
    frame, reasons = normalise([{**BASE, **extra} for extra, _, _ in cases])
    assert reasons == [None] * len(cases)
    assert frame["variant"].tolist() == [v for _, v, _ in cases]
    assert frame["variant_kind"].tolist() == [k for _, _, k in cases]


def test_prob_a_is_checked_against_the_closed_unit_interval():
    probs = [0.0, 0.25, 0.5, 1.0, -0.01, 1.01, -1.0, 2.0]
    frame, reasons = normalise([{**BASE, "prob_a": p} for p in probs])
    ok = [0.0 <= p <= 1.0 for p in probs]
    assert [r is None for r in reasons] == ok
    assert all("outside [0, 1]" in r for r, good in zip(reasons, ok, strict=True) if not good)
    np.testing.assert_array_equal(frame["prob_a"].to_numpy()[ok], np.array(probs)[ok])


def test_strength_is_one_or_two():
    values = [1, 2, 1.0, 2.0, 0, 3, 1.5]
    frame, reasons = normalise([{**BASE, "strength": s} for s in values])
    ok = [s in (1, 2) for s in values]
    assert [r is None for r in reasons] == ok
    assert all("is not 1 or 2" in r for r, good in zip(reasons, ok, strict=True) if not good)
    assert frame["strength"].iloc[:4].tolist() == [1, 2, 1, 2]
