"""The view helpers behind the audit fixes, against brute force, hand-worked examples and peers
(collections.Counter, numpy.histogram, plain sorting, the store's own rows)."""

from __future__ import annotations

import collections
import itertools
import math

import numpy as np
import pandas as pd
import pytest

from engine.views.cycles_view import integer_histogram
from engine.views.dataview import datasets_view, file_name, without_paths
from engine.views.labels import natural_sorted, variant_labels
from engine.views.theory_view import LIVE_WORK, MAX_WORK, lab_plan, lab_work
from engine.views.truncation_view import MIN_Y_SPAN, format_s_mu, y_range


def test_without_paths_keeps_names_only():
    assert without_paths("The store at /srv/my data/lens.duckdb is busy.", ["/srv/my data/lens.duckdb"]) == \
        "The store at lens.duckdb is busy."
    assert without_paths("no mapping (expected /work/x/data/mappings/a.models.csv).") == \
        "no mapping (expected a.models.csv)."
    assert without_paths("2 files: /a/b/one.csv, /c/two.jsonl…") == "2 files: one.csv, two.jsonl…"
    assert without_paths(r"cannot read C:\Users\me\f.csv") == "cannot read f.csv"
    untouched = "see http://127.0.0.1:8501/a/b; and/or C3/C4 = 0.5"
    assert without_paths(untouched) == untouched
    assert file_name("/tmp/x/up.csv") == file_name(r"C:\x\up.csv") == file_name("up.csv") == "up.csv"
    ds = pd.DataFrame({"name": ["a", "b"], "source": ["/home/u/runs/v.csv", None], "description": ["", "d"]})
    assert datasets_view(ds)["source"].tolist() == ["v.csv", "—"]


@pytest.mark.parametrize("mu", [0.01, 0.1, 0.316, 3.16])
def test_format_s_mu_three_significant_digits_for_fractional_mu(mu):
    for c3, c4 in itertools.product([0, 1, 7, 40, 84], [0, 1, 9, 150, 700]):
        value = c3 + mu * c4
        text = format_s_mu(value, mu)
        assert "e" not in text
        if value == 0:
            assert text == "0"
        elif value < 1000:  # three significant digits: the same number %.3g rounds to
            assert float(text) == pytest.approx(float(f"{value:.3g}"), rel=1e-12)
        else:
            assert text == str(round(value))


@pytest.mark.parametrize("mu", [1.0, 3.0, 100.0])
def test_format_s_mu_whole_numbers_for_integral_mu(mu):
    for c3, c4 in itertools.product([0, 5, 84], [0, 3, 612]):
        assert format_s_mu(c3 + mu * c4, mu) == str(int(c3 + mu * c4))


def test_y_range_covers_the_data_and_never_collapses():
    flat = pd.DataFrame(
        {"mean": [0.12] * 5, "ci_low": [0.12] * 5, "ci_high": [0.12] * 5, "point": [0.12] * 5}
    )
    lo, hi = y_range(flat)
    assert hi - lo == pytest.approx(MIN_Y_SPAN) and (lo + hi) / 2 == pytest.approx(0.12)
    zero = flat * 0
    assert y_range(zero) == [0.0, pytest.approx(MIN_Y_SPAN)]  # a distance is never drawn below 0
    wide = pd.DataFrame(
        {"mean": [0.1, 0.4], "ci_low": [0.05, 0.3], "ci_high": [0.2, 0.6], "point": [0.1, 0.5]}
    )
    lo, hi = y_range(wide)
    assert lo == pytest.approx(0.05 - 0.0275) and hi == pytest.approx(0.6 + 0.0275)


def test_lab_work_and_plan_against_a_written_out_grid():
    def brute(n, t_max, reps):
        ts = {int(2 * math.floor((x - 1) / 2) + 1) for x in np.linspace(1, t_max, 25)}
        return n * n * reps * sum(ts)

    for n, t, r in [(3, 5, 100), (10, 121, 200), (30, 399, 800), (17, 77, 400)]:
        assert lab_work(n, t, r) == brute(n, t, r)
    assert lab_plan(10, 121, 200).mode == "live"  # the page's opening setting
    for n, t, r in itertools.product([3, 10, 20, 30], [5, 121, 399], [100, 200, 400, 800]):
        w, plan = brute(n, t, r), lab_plan(n, t, r)
        assert plan.mode == ("live" if w <= LIVE_WORK else "button" if w <= MAX_WORK else "refused")
        if plan.mode == "refused":
            fits = [x for x in (100, 200, 400, 800) if brute(n, t, x) <= MAX_WORK]
            assert (f"use at most {max(fits)} replicates" in plan.text) if fits else ("lower n" in plan.text)


def test_natural_order_and_variant_labels_by_hand():
    assert natural_sorted(["q10", "q2", "q1", "10", "9", "b", "A", "q2a"]) == [
        "9",
        "10",
        "A",
        "b",
        "q1",
        "q2",
        "q2a",
        "q10",
    ]
    keys = pd.DataFrame({
        "prompt_id": ["1"] * 7 + ["2", "2", "3"],
        "variant": [0, 1, 2, 3, 4, 5, 6, 0, 3, 2],
        "variant_kind": ["original", "paraphrase", "paraphrase", "sample", "sample", "sample", "paraphrase",
                         "original", "sample", None],
    })
    assert variant_labels(keys).tolist() == [
        "original",
        "paraphrase 1",
        "paraphrase 2",
        "sample 1",
        "sample 2",
        "sample 3",
        "paraphrase 3",
        "original",
        "sample 1",
        "paraphrase 1",
    ]


def test_integer_histogram_matches_counter_and_numpy():
    rng = np.random.default_rng(3)
    for counts in (rng.poisson(2.5, 200), np.array([0, 0, 5]), np.array([3])):
        k, n = integer_histogram(counts)
        c = collections.Counter(counts.tolist())
        assert k.tolist() == list(range(max(c) + 1)) and n.tolist() == [c.get(i, 0) for i in k]
        ref, _ = np.histogram(counts, bins=np.arange(-0.5, counts.max() + 1.5))
        assert n.tolist() == ref.tolist()


def test_own_truth_follows_a_rename_and_refuses_other_verdicts(empty_store):
    from engine.ingest import importer as ingest
    from engine.ingest.synthetic import SyntheticParams, synthetic_truth, write_synthetic
    from engine.ranking.reference import own_truth, reference_for

    write_synthetic(empty_store, "syn", SyntheticParams(n_models=5, categories=1, prompts=3, paraphrases=0,
                                                        samples=0), replace=False)
    truth = synthetic_truth(empty_store, "syn")
    ingest.rename_dataset(empty_store, "syn", "renamed")
    got, note = reference_for("renamed", None, empty_store)
    pd.testing.assert_series_equal(got, truth)
    assert note == "ground truth of the synthetic dataset, 5 models"
    assert own_truth(empty_store, "syn") == (None, "not a synthetic dataset")
    # a synthetic dataset whose stored truth does not name its models (rows from other verdicts)
    with empty_store.transaction() as tx:
        tx.execute("UPDATE synthetic_truth SET model = model || '-old' WHERE dataset = 'renamed'")
    got, note = reference_for("renamed", None, empty_store)
    assert got is None and "does not name 5 of its models" in note and "match no reference name" in note
