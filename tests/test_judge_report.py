"""The judge report (engine.diagnostics.judge_report, ``diagnose --table judges``): kappa as shown against
scikit-learn's Cohen's kappa on labels paired by hand, length bias and self-preference against loops over
the verdicts, the reused columns against the tables they come from, and the CLI's refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.diagnostics import agreement, overview, position
from engine.diagnostics.judge_report import family, judge_report
from tests.conftest import run_engine

MODELS = ("gpt-a", "llama-b", "claude-c", "qwen-d")


def verdicts(seed: int = 0) -> pd.DataFrame:
    """Two LLM judges (one of the gpt family) and a human on every pair of 4 models in 30 prompts, each
    judging each pair once per presentation order (model_a always shown first; the BA order is the
    swapped row), with a side bias and ties; a few verdicts invalid."""
    rng = np.random.default_rng(seed)
    strength = {"gpt-a": 0.8, "llama-b": 0.3, "claude-c": 0.0, "qwen-d": -0.6}
    rows = []
    for judge, side, own in (("gpt-judge", 0.3, 0.6), ("llama-judge", -0.2, 0.0), ("human", 0.0, 0.0)):
        for prompt in range(30):
            for i, a in enumerate(MODELS):
                for b in MODELS[i + 1:]:
                    for first, second in ((a, b), (b, a)):
                        d = strength[first] - strength[second] + side
                        d += own * ((family(first) == family(judge)) - (family(second) == family(judge)))
                        u = rng.random()
                        p = 1 / (1 + np.exp(-d))
                        winner = "tie" if u < 0.1 else ("A" if rng.random() < p else "B")
                        rows.append({"dataset": "d", "judge": judge, "prompt_id": str(prompt), "variant": 0,
                                     "turn": 1, "category": "c", "variant_kind": "original", "model_a": first,
                                     "model_b": second, "winner": winner, "order": "AB", "prob_a": np.nan,
                                     "annotator": judge})
    v = pd.DataFrame(rows)
    v.loc[rng.choice(len(v), 5, replace=False), "winner"] = "invalid"
    return v


def lengths() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    rows = [{"prompt_id": str(p), "variant": 0, "turn": 1, "model": m, "length": int(rng.integers(50, 60))}
            for p in range(30) for m in MODELS]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def report():
    return judge_report(verdicts(), lengths=lengths())


def test_kappa_as_shown_equals_sklearn_on_labels_paired_by_hand(report):
    """Kills: kappa as shown read from the labels by model (the two kappas would be equal), pairing the
    two judges' cells without the presentation order."""
    from sklearn.metrics import cohen_kappa_score

    v = verdicts()
    v = v[v["winner"] != "invalid"]
    label = np.where(v["winner"] == "tie", "tie", np.where(v["winner"] == "A", "first", "second"))
    cell = v["prompt_id"] + "|" + v["model_a"] + "|" + v["model_b"]  # model_a is the one shown first
    lab = pd.DataFrame({"judge": v["judge"], "cell": cell, "label": label})
    ref = lab[lab["judge"] == "human"].set_index("cell")["label"]
    for judge in ("gpt-judge", "llama-judge"):
        mine = lab[lab["judge"] == judge].set_index("cell")["label"]
        both = mine.index.intersection(ref.index)
        want = cohen_kappa_score(mine[both], ref[both])
        row = report.set_index("judge").loc[judge]
        assert row["items_shown_vs_ref"] == len(both)
        assert row["kappa_as_shown"] == pytest.approx(want, abs=1e-12)
        assert row["kappa_as_shown"] != pytest.approx(row["kappa_by_model"], abs=1e-3)


def test_length_bias_and_self_preference_equal_loops_over_the_verdicts(report):
    """Kills: the shorter answer's wins counted, ties in the length share, a tie counted as a loss (or
    a win) for the own-family model, the reference's share taken over items the judge never judged."""
    v = verdicts()
    v = v[v["winner"] != "invalid"]
    ln = lengths().set_index(["prompt_id", "model"])["length"]
    by_judge = report.set_index("judge")
    for judge in ("gpt-judge", "llama-judge", "human"):
        won, total = 0, 0
        for r in v[v["judge"] == judge].itertuples():
            la, lb = ln[(r.prompt_id, r.model_a)], ln[(r.prompt_id, r.model_b)]
            if r.winner == "tie" or la == lb:
                continue
            total += 1
            won += (la > lb) == (r.winner == "A")
        assert by_judge.loc[judge, "length_verdicts"] == total
        assert by_judge.loc[judge, "longer_wins"] == pytest.approx(won / total, abs=1e-12)

    def own_share(rows, fam):
        scores = []
        for r in rows.itertuples():
            own_a, own_b = family(r.model_a) == fam, family(r.model_b) == fam
            if own_a == own_b:
                continue
            if r.winner == "tie":
                scores.append(0.5)
            else:
                scores.append(float((r.winner == "A") == own_a))
        return np.mean(scores), len(scores)

    mine, n = own_share(v[v["judge"] == "gpt-judge"], "gpt")
    theirs, _ = own_share(v[v["judge"] == "human"], "gpt")  # the human judged every item the judge did
    row = by_judge.loc["gpt-judge"]
    assert row["family"] == "gpt" and row["self_verdicts"] == n
    assert row["self_win_rate"] == pytest.approx(mine, abs=1e-12)
    assert row["self_win_rate_ref"] == pytest.approx(theirs, abs=1e-12)
    assert row["self_preference"] == pytest.approx(mine - theirs, abs=1e-12) and row["self_preference"] > 0.05


def test_reused_columns_are_the_tables_they_come_from(report):
    """Agreement, kappa by model, first-position rates and PNT are the agreement, position and overview
    tables' own numbers (one owner each)."""
    v = verdicts()
    ag = agreement.agreement(v, reference="human").set_index("judge_1")
    pos = position.position_table(v).set_index("judge")
    ov = overview(v, reference="human").set_index("judge")
    r = report.set_index("judge")
    for judge in ("gpt-judge", "llama-judge"):
        assert r.loc[judge, "agreement_vs_ref"] == ag.loc[judge, "agreement"]
        assert r.loc[judge, "kappa_by_model"] == ag.loc[judge, "kappa"]
    for judge in ("gpt-judge", "llama-judge", "human"):
        assert r.loc[judge, "first_win_rate"] == pos.loc[judge, "first_win_rate"]
        assert r.loc[judge, "pnt"] == ov.loc[judge, "pnt"]
        assert 0 <= r.loc[judge, "graph_cycle_rate"] <= 1
    assert (report["reference"] == "human").all()


def test_without_a_human_there_is_no_reference_and_a_note_says_so():
    v = verdicts()
    rep = judge_report(v[v["judge"] != "human"])
    assert rep["reference"].isna().all() and rep["kappa_as_shown"].isna().all()
    assert any("No reference judge" in n for n in rep.attrs["notes"])
    assert any("no answer texts" in n for n in rep.attrs["notes"])


def test_family_name_rule():
    assert [family(x) for x in ("gpt-4", "gpt35", "GPT-3.5-turbo", "claude-3-opus", "vicuna-13b", "7b")] == [
        "gpt", "gpt", "gpt", "claude", "vicuna", "b"]


def test_diagnose_table_judges_cli(shipped_db):
    """On vicuna80 (texts stored, human votes): one row per judge, human the reference, lengths measured."""
    got = run_engine(["--db", str(shipped_db), "diagnose", "--dataset", "vicuna80", "--table", "judges",
                      "--no-cache", "--format", "json"], check=True)
    rows = pd.DataFrame(json.loads(got.stdout))
    assert sorted(rows["judge"]) == ["bard", "claude", "gpt-3.5-turbo", "gpt-4", "human", "vicuna-13b"]
    assert (rows["reference"] == "human").all()
    assert rows.set_index("judge").loc["gpt-4", "length_verdicts"] > 0


@pytest.mark.parametrize("extra, words", [
    (["--judge", "gpt-4", "--judge", "gpt-4"], "twice"),
    (["--reference", "nobody"], "nobody"),
    (["--by", "judge"], "cannot be grouped"),
])
def test_diagnose_table_judges_refusals(shipped_db, extra, words):
    got = run_engine(["--db", str(shipped_db), "diagnose", "--dataset", "vicuna80", "--table", "judges",
                      "--no-cache", *extra])
    assert got.returncode == 2, got.stderr
    assert words in got.stderr and "Traceback" not in got.stderr
    assert len([x for x in got.stderr.strip().splitlines() if x.strip()]) == 1
