"""AlpacaEval's length-controlled win rate (engine/ranking/length_control.py) against an independent fit
of the same GLM: features built here from the annotation records (Python ``len``, pandas' sample
standard deviation), the penalised objective minimised by scipy's L-BFGS-B on w = u - v (u, v >= 0),
folds drawn by GroupKFold's rule written out (groups in reverse order, each to the lightest fold), C
chosen by the summed held-out cross-entropy. The real check against alpaca_eval's own code and its
published numbers is bench/check_alpaca_eval.py (docs/notes/lc-24.md)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from engine.__main__ import main
from engine.ingest.importer import validate_file
from engine.ranking.length_control import fit_length_control, folds, l1_logistic

CS = np.logspace(-4, 4, 10)


def reference_fit(X: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """argmin ||w||_1 + C * sum CE(y, sigmoid(X w)) by cases: on each closed quadrant the L1 norm is
    linear, so the objective (divided by C) is smooth there; minimise it on each quadrant with scipy's
    L-BFGS-B under the quadrant's bounds and take the smallest of the four minima."""
    best, best_val = np.zeros(2), math.inf
    for sign in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        s = np.array(sign, dtype=float)

        def smooth(w, s=s):
            z = X @ w
            q = 1 / (1 + np.exp(-z))
            return (s @ w) / C + np.sum(np.logaddexp(0, z) - y * z), s / C + X.T @ (q - y)

        bounds = [(0, None) if v > 0 else (None, 0) for v in sign]
        res = minimize(smooth, s * 1e-3, jac=True, method="L-BFGS-B", bounds=bounds,
                       options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 5000})
        if res.fun < best_val:
            best, best_val = res.x, res.fun
    return best


def group_k_fold(m: int, k: int = 5) -> np.ndarray:
    """GroupKFold's assignment of m groups of equal size: the groups from last to first, each to the
    fold holding the fewest so far (the first such fold)."""
    load, fold = np.zeros(k), np.zeros(m, dtype=int)
    for g in range(m - 1, -1, -1):
        f = int(np.argmin(load))
        fold[g], load[f] = f, load[f] + 1
    return fold


def reference_lc(records: list[dict]) -> tuple[float, float]:
    """(LC win rate, win rate) of generator_2 against generator_1 from AlpacaEval-shaped records."""
    df = pd.DataFrame(records)
    pref = df["preference"].astype(float).replace({0.0: 1.5})
    y = (pref - 1).to_numpy()
    delta = df["output_2"].str.len() - df["output_1"].str.len()
    x = np.tanh((delta / delta.std()).to_numpy())
    keep = np.isfinite(y)
    X, yy = np.column_stack([x[keep], np.ones(keep.sum())]), y[keep]
    fold = group_k_fold(len(yy))
    scores = []
    for C in CS:
        total = 0.0
        for k in range(5):
            w = reference_fit(X[fold != k], yy[fold != k], C)
            q = np.clip(1 / (1 + np.exp(-X[fold == k] @ w)), 1e-15, 1 - 1e-15)
            t = yy[fold == k]
            total += -np.mean(t * np.log(q) + (1 - t) * np.log(1 - q))
        scores.append(total)
    w = reference_fit(X, yy, CS[int(np.argmin(scores))])
    return 1 / (1 + math.exp(-w[1])), float(np.nanmean(y))


def records(seed: int, n: int = 60, model: str = "alpha", base: str = "ref") -> list[dict]:
    """Invented AlpacaEval annotations: the model's answers longer or shorter than the baseline's (some
    with non-ASCII characters, so bytes and characters differ), soft preferences that lean towards the
    longer answer, a few hard 1 / 2, draws written 1.5 and 0, one missing."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        la, lb = 5 + (37 * i) % 400, int(rng.integers(5, 900))  # the baseline's answer: one per question
        logit = 0.8 * math.tanh((lb - la) / 300) + rng.normal(0, 1) - 0.3
        pref = 1 + 1 / (1 + math.exp(-logit))
        r = rng.random()
        pref = 1.0 if r < 0.05 else 2.0 if r < 0.1 else 1.5 if r < 0.13 else 0 if r < 0.16 else pref
        out.append({"instruction": f"Question {i}?", "output_1": "b" * la,
                    "output_2": ("é" if i % 3 == 0 else "a") * lb, "generator_1": base,
                    "generator_2": model, "annotator": "judge", "preference": None if i == 7 else pref})
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_the_fit_matches_an_independent_glm(seed):
    recs = records(seed)
    df = pd.DataFrame(recs)
    y = (df["preference"].astype(float).replace({0.0: 1.5}) - 1).to_numpy()
    delta = (df["output_2"].str.len() - df["output_1"].str.len()).to_numpy(float)
    fit = fit_length_control(y, delta)
    lc, _ = reference_lc(recs)
    assert fit is not None and fit.n_fitted == len(recs) - 1
    assert fit.lc_win_rate == pytest.approx(lc, abs=1e-6)


def test_folds_follow_group_k_folds_greedy_rule():
    for m in (5, 6, 9, 61, 805):
        assert folds(m).tolist() == group_k_fold(m).tolist()


def test_the_solver_reaches_the_penalised_optimum_at_each_c():
    rng = np.random.default_rng(5)
    X = np.column_stack([np.tanh(rng.normal(0, 1.5, 80)), np.ones(80)])
    y = 1 / (1 + np.exp(-(1.3 * X[:, 0] - 0.4 + rng.normal(0, 1, 80))))
    for C in CS:
        assert l1_logistic(X, y, float(C)) == pytest.approx(reference_fit(X, y, float(C)), abs=2e-6)


@pytest.fixture
def lc_db(tmp_path, shipped_db_copy):
    """Two models' annotation files against the baseline ``ref``, imported through the CLI into a copy of
    the session's shipped store (on a new file `import` would first import the shipped datasets)."""
    db = shipped_db_copy
    files = []
    for seed, model in ((11, "alpha"), (12, "beta")):
        path = tmp_path / f"{model}.json"
        path.write_text(json.dumps(records(seed, model=model)))
        files.append(path)
    assert main(["--db", str(db), "import", "--dataset", "ae", *map(str, files)]) == 0
    return db, files


def test_cli_lc_win_rate_from_stored_texts_equals_the_fit_on_the_records(lc_db, capsys):
    db, files = lc_db
    capsys.readouterr()
    assert main(["--db", str(db), "leaderboard", "--dataset", "ae", "--baseline", "ref", "--length-control",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    table = {r["model"]: r for r in out["table"]}
    for path in files:  # the records' own lengths (Python len) and preferences, the fit checked above
        df = pd.DataFrame(json.loads(path.read_text()))
        y = (df["preference"].astype(float).replace({0.0: 1.5}) - 1).to_numpy()
        fit = fit_length_control(y, (df["output_2"].str.len() - df["output_1"].str.len()).to_numpy(float))
        row = table[df["generator_2"].iloc[0]]
        assert row["lc_win_rate"] == pytest.approx(fit.lc_win_rate, abs=1e-9)
        assert row["win_rate_vs_baseline"] == pytest.approx(np.nanmean(y), abs=1e-9)
    assert table["ref"]["lc_win_rate"] == table["ref"]["win_rate_vs_baseline"] == 0.5
    assert out["params"]["length_control"]["baseline"] == "ref"
    assert any("instruction-difficulty" in n for n in out["notes"])


@pytest.mark.parametrize("argv, says", [
    (["--length-control"], "give --baseline MODEL too"),
    (["--baseline", "nobody", "--length-control"], "'nobody'"),  # named by whichever part reads it first
])
def test_cli_refuses_length_control_without_a_known_baseline(lc_db, capsys, argv, says):
    db, _ = lc_db
    assert main(["--db", str(db), "leaderboard", "--dataset", "ae", *argv]) == 2
    assert says in capsys.readouterr().err


def test_cli_refuses_length_control_without_answer_texts(tmp_path, shipped_db_copy, capsys):
    db, path = shipped_db_copy, tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner\n1,ref,x,A\n2,ref,x,B\n")
    assert main(["--db", str(db), "import", "--dataset", "plain", str(path)]) == 0
    assert main(["--db", str(db), "leaderboard", "--dataset", "plain", "--baseline", "ref",
                 "--length-control"]) == 2
    assert "needs the answer texts of both sides" in capsys.readouterr().err


def test_alpaca_eval_preference_zero_is_a_draw(tmp_path):
    recs = [{"instruction": f"q{i}", "output_1": "x", "output_2": "y", "generator_1": "ref",
             "generator_2": "m", "annotator": "j", "preference": p}
            for i, p in enumerate((0, 1, 2, 1.5, 0.0))]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(recs))
    rep = validate_file(path, dataset="d")
    assert rep.n_rejected == 0
    assert rep.good["winner"].tolist() == ["tie", "A", "B", "tie", "tie"]
    assert rep.good["prob_a"].tolist() == [0.5, 1.0, 0.0, 0.5, 0.5]
    recs[1]["preference"] = 0.5
    path.write_text(json.dumps(recs))
    rep = validate_file(path, dataset="d")
    assert rep.n_rejected == 1 and "outside [1, 2]" in rep.rejected["reason"].iloc[0]


def test_sides_swapped_in_the_file_give_the_same_numbers(tmp_path, capsys):
    """Every other annotation written with the baseline second (outputs swapped, preference mirrored):
    the model's LC win rate and win rate are those of the file as written, and a model with fewer than
    five verdicts against the baseline gets no LC win rate but a note."""
    recs = records(21)
    swapped = [r if i % 2 else {**r, "generator_1": r["generator_2"], "generator_2": r["generator_1"],
                                 "output_1": r["output_2"], "output_2": r["output_1"],
                                 "preference": r["preference"] if r["preference"] in (None, 0, 1.5)
                                 else 3 - r["preference"]}
               for i, r in enumerate(recs)]
    few = [{**r, "generator_2": "gamma"} for r in recs[:4]]
    tables = []
    for name, data in (("plain", recs), ("swapped", swapped + few)):
        path, db = tmp_path / f"{name}.json", tmp_path / f"{name}.duckdb"
        path.write_text(json.dumps(data))
        assert main(["--db", str(db), "import", "--dataset", "ae", str(path)]) == 0
        capsys.readouterr()
        assert main(["--db", str(db), "leaderboard", "--dataset", "ae", "--baseline", "ref",
                     "--length-control", "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        tables.append(({r["model"]: r for r in out["table"]}, out["notes"]))
    (plain, _), (mixed, notes) = tables
    for col in ("lc_win_rate", "win_rate_vs_baseline"):
        assert mixed["alpha"][col] == pytest.approx(plain["alpha"][col], abs=1e-9)
    assert mixed["gamma"]["lc_win_rate"] is None
    assert any("no LC win rate for gamma (fewer than 5" in n for n in notes)
