"""The judge report from verdict counts grouped in the store (``judge_report_of_counts``, what the Judges page
and ``judge_report_of_store`` use) equals ``judge_report`` on the frame of every verdict, exactly, on data
that separates the paths' choices: a reference (``human``) that judged items the other judges did not and
the other way round, two judges whose families own some models (self-preference on part of the items),
judges who never judged in both orders, ties, repeats, invalid verdicts, an order-less verdict, two
categories, a judge with invalid verdicts only."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from engine.diagnostics.judge_counts import judge_counts
from engine.diagnostics.judge_report import judge_report, judge_report_of_counts
from engine.ingest.importer import import_files
from engine.store.graph_tally import graph_count
from engine.views.judges_view import graphs_of_three_models

MODELS = ["m1", "m2", "gpt35", "gpt-4o", "claude", "xm3", "vicuna"]


def _rows(seed: int) -> list[str]:
    rng = random.Random(seed)
    lines = ["prompt_id,model_a,model_b,winner,judge,category,order"]
    for p in range(70):
        cat = rng.choice(["c1", "c2"])
        judges = rng.sample(["human", "m-judge", "gpt-4"], rng.choice([1, 2, 3]))  # items some judges skip
        pairs = [tuple(rng.sample(MODELS, 2)) for _ in range(rng.choice([1, 2, 3]))]
        for judge in judges:
            for a, b in pairs:
                for _ in range(rng.choice([1, 1, 2])):  # repeats
                    order = rng.choice(["AB", "BA", ""] if judge != "gpt-4" else ["AB"])  # gpt-4: one order
                    winner = rng.choice(["A", "B", "tie", "A", "B", "invalid"])
                    lines.append(f"p{p},{a},{b},{winner},{judge},{cat},{order}")
    lines.append("q,m1,m2,invalid,silent,c1,AB")  # a judge with invalid verdicts only
    return lines


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_report_of_counts_equals_the_frame_path(empty_store, tmp_path, seed):
    (tmp_path / "v.csv").write_text("\n".join(_rows(seed)) + "\n")
    import_files(empty_store, [tmp_path / "v.csv"], "mix")
    for category in (None, "c1"):
        big = graphs_of_three_models(empty_store, "mix", category)
        n = graph_count(empty_store, "mix", category=category)
        old = judge_report(empty_store.verdicts("mix", category=category), big_graphs=big, n_graphs=n)
        new = judge_report_of_counts(empty_store, "mix", category, judge_counts(empty_store, "mix", category),
                                     big_graphs=big, n_graphs=n)
        pd.testing.assert_frame_equal(new, old, check_exact=True)
        assert new.attrs == old.attrs
        assert old["self_win_rate_ref"].notna().any() and old["kappa_as_shown"].notna().any()
        assert old["first_win_rate"].notna().any() and (old["judge"] == "silent").any()


def _self_preference_by_hand(v: pd.DataFrame, reference: str) -> dict[str, tuple]:
    """Per judge with a valid verdict: (verdicts, own share, the reference's share on the same items), one
    verdict at a time in plain Python."""
    from engine.diagnostics.judge_report import family

    rows = [r for r in v.itertuples() if r.winner != "invalid"]
    out = {}
    for judge in sorted({r.judge for r in rows}):
        fam = family(judge)

        def scored(r, fam=fam):
            lo, hi = sorted((r.model_a, r.model_b))
            if (family(lo) == fam) == (family(hi) == fam):
                return None
            if r.winner == "tie":
                return (r.prompt_id, lo, hi), 0.5
            winner = r.model_a if r.winner == "A" else r.model_b
            return (r.prompt_id, lo, hi), float(family(winner) == fam)

        mine = [s for r in rows if r.judge == judge and (s := scored(r)) is not None]
        items = {item for item, _ in mine}
        theirs = [x for r in rows if r.judge == reference and (s := scored(r)) is not None
                  for item, x in [s] if item in items] if judge != reference and mine else []
        out[judge] = (len(mine), sum(x for _, x in mine) / len(mine) if mine else None,
                      sum(theirs) / len(theirs) if theirs else None)
    return out


def test_self_preference_equals_a_count_by_hand(empty_store, tmp_path):
    """The shared second half (``self_preference_of_cells``) against a per-verdict count: both report paths
    run it, so only this check sees it count the reference's verdicts outside the judge's items."""
    from engine.diagnostics.judge_report import self_preference
    from engine.diagnostics.verdict_pairs import verdict_outcomes

    (tmp_path / "v.csv").write_text("\n".join(_rows(4)) + "\n")
    import_files(empty_store, [tmp_path / "v.csv"], "mix")
    v = empty_store.verdicts("mix")
    table = self_preference(verdict_outcomes(v), "human")
    hand = _self_preference_by_hand(v, "human")
    assert list(table["judge"]) == sorted(hand)
    for row in table.itertuples():
        n, own, ref = hand[row.judge]
        assert row.self_verdicts == n
        assert (pd.isna(row.self_win_rate) and own is None) or row.self_win_rate == own
        assert (pd.isna(row.self_win_rate_ref) and ref is None) or row.self_win_rate_ref == ref
    assert table["self_win_rate_ref"].notna().sum() >= 2
