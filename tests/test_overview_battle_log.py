"""Issue 25, friction 8: ``diagnose --table overview`` on a battle log (one pair per prompt, no graph with
three models) printed no rows, and so dropped the kappa against human that ``--table agreement``
computes. Every judge now gets its row: no triples, and the numbers that apply to battles (first-position
win rates, agreement and Cohen's kappa against the reference), checked here by direct counting."""

from __future__ import annotations

import io
import shutil

import numpy as np
import pandas as pd
from conftest import run_engine

LABELS = ("A", "B", "tie")


def battle_log(seed: int = 7, n: int = 60) -> pd.DataFrame:
    """Human and gpt-4 verdicts on the same battles: one pair of five models per prompt, shown A first."""
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(5)]
    rows = []
    for p in range(n):
        a, b = rng.choice(models, 2, replace=False)
        human = str(rng.choice(LABELS, p=[0.5, 0.35, 0.15]))
        judge = human if rng.random() < 0.7 else str(rng.choice(LABELS))
        for name, winner in (("human", human), ("gpt-4", judge)):
            rows.append({"prompt_id": f"q{p}", "model_a": a, "model_b": b, "winner": winner, "judge": name,
                         "order": "AB"})
    return pd.DataFrame(rows)


def by_model(v: pd.DataFrame) -> pd.Series:
    """Each verdict as the outcome for the pair's model first by name (the agreement table's labels:
    about the models, not the positions): "lo", "hi" or "tie"."""
    lo = v[["model_a", "model_b"]].min(axis=1)
    winner = v["model_a"].where(v["winner"] == "A", v["model_b"])
    return pd.Series(np.where(v["winner"] == "tie", "tie", np.where(winner == lo, "lo", "hi")), index=v.index)


def cohen_kappa(x: pd.Series, y: pd.Series) -> float:
    """Cohen's kappa of two raters over the same items, from the share of equal labels and the product
    of the two raters' label frequencies."""
    observed = float((x.to_numpy() == y.to_numpy()).mean())
    expected = sum(float((x == k).mean()) * float((y == k).mean()) for k in ("lo", "hi", "tie"))
    return (observed - expected) / (1 - expected)


def test_overview_of_a_battle_log_has_a_row_per_judge_with_what_applies(tmp_path, shipped_db):
    log = battle_log()
    path = tmp_path / "battles.csv"
    log.to_csv(path, index=False)
    db = tmp_path / "lens.duckdb"
    shutil.copyfile(shipped_db, db)  # a first command on a new file would import the shipped datasets
    run_engine(["--db", db, "import", path, "--dataset", "battles"], check=True)
    done = run_engine(["--db", db, "diagnose", "--dataset", "battles", "--table", "overview",
                       "--format", "csv"], check=True)
    table = pd.read_csv(io.StringIO(done.stdout)).set_index("judge")
    assert sorted(table.index) == ["gpt-4", "human"]  # the old overview printed no row at all
    assert (table["triples"] == 0).all() and table["pnt"].isna().all()
    by_judge = {j: g.reset_index(drop=True) for j, g in log.groupby("judge")}
    for judge, v in by_judge.items():
        first = int((v["winner"] == "A").sum())
        decisive = int((v["winner"] != "tie").sum())
        assert table.loc[judge, "first_win_rate"] == first / len(v)
        assert np.isclose(table.loc[judge, "first_win_rate_decisive"], first / decisive)
    human, gpt4 = by_model(by_judge["human"]), by_model(by_judge["gpt-4"])
    assert table.loc["gpt-4", "items_vs_human"] == len(human)
    assert np.isclose(table.loc["gpt-4", "agreement_vs_human"], float((human == gpt4).mean()))
    assert np.isclose(table.loc["gpt-4", "kappa_vs_human"], cohen_kappa(gpt4, human))
    agreement = run_engine(["--db", db, "diagnose", "--dataset", "battles", "--table", "agreement",
                            "--format", "csv"], check=True)
    pair = pd.read_csv(io.StringIO(agreement.stdout)).iloc[0]
    assert np.isclose(pair["kappa"], table.loc["gpt-4", "kappa_vs_human"])  # one number in both tables
