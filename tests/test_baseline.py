"""Win rate against a baseline (Arena-Hard's score, ``engine/ranking/baseline.py``).

Each number is checked against one computed another way: the closed form of a star design (every
battle against the baseline: the fitted win rate is the weighted share of points won) and a direct
unpenalised logistic-regression fit (scipy) of Arena-Hard v0.1's doubled-battle design on data where
models also meet each other. Files are Arena-Hard judgment records (``uid, judge, model, baseline,
games``), written here with a seeded generator; the first eleven records of a public Arena-Hard v0.1
judgment file (ids and scores as published, judgment texts left out) are in
tests/fixtures/formats/arena_hard_v01_excerpt.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from engine.cli.leaderboard import BASELINE_BOARD_NOTE
from engine.ingest.importer import import_files
from engine.ingest.shipped_counts import ARENA_COUNTS_DATASET
from engine.ranking.baseline import baseline_leaderboard, battle_votes
from engine.ranking.board import BoardSpec
from engine.ranking.vote_query import store_vote_rows
from engine.store.connection import Store
from tests.conftest import run_engine

FIX = Path(__file__).resolve().parent / "fixtures" / "formats"
LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
POINTS_SHOWN_A = {"A>>B": (1.0, 3), "A>B": (1.0, 1), "A=B": (0.5, 1), "B>A": (0.0, 1), "B>>A": (0.0, 3)}
"""Per label: the points of the assistant shown as A, and how many battles the label is (>>: 3)."""


def arena_hard_records(seed: int, models=("m1", "m2", "m3"), baseline="base", n_q=40, null_share=0.05):
    """Arena-Hard judgment records: per model and question, game 1 shows the baseline as A, game 2
    the model as A; labels drawn with a per-model lean so the models differ."""
    rng = np.random.default_rng(seed)
    out = []
    for k, m in enumerate(models):
        lean = np.array([1.0, 2.0, 2.0, 2.0, 1.0]) * np.exp(np.array([-2, -1, 0, 1, 2]) * (k - 1) * 0.4)
        p = lean / lean.sum()
        for q in range(n_q):
            games = []
            for _ in range(2):
                label = None if rng.random() < null_share else str(rng.choice(LABELS, p=p))
                games.append({"score": label, "judgment": {"answer": f"[[{label}]]"}})
            out.append({"uid": f"q{q}", "category": "hard", "judge": "j", "model": m, "baseline": baseline,
                        "games": games})
    return out


def write_jsonl(path: Path, recs) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def closed_form(recs, weight: int = 3) -> dict[str, float]:
    """Star design: the MLE win rate of each model against the baseline is its weighted share of points
    (a >> counts ``weight`` times, a tie half), over both games; null scores dropped."""
    pts: dict[str, list[float]] = {}
    for r in recs:
        for k, g in enumerate(r["games"]):
            if g["score"] is None:
                continue
            a_pts, times = POINTS_SHOWN_A[g["score"]]
            times = weight if times == 3 else 1
            model_pts = 1.0 - a_pts if k == 0 else a_pts  # game 1: the baseline is shown as A
            pts.setdefault(r["model"], []).extend([model_pts] * times)
    return {m: float(np.mean(v)) for m, v in pts.items()}


def board_for(store, path: Path, baseline="base", **spec):
    import_files(store, [path], "ah")
    return baseline_leaderboard(store, "ah", BoardSpec(**spec), baseline)


def rates(board) -> dict[str, float]:
    return dict(zip(board.table["model"], board.table["baseline_win_rate"], strict=True))


def test_star_design_win_rate_is_the_weighted_share_of_points(empty_store, tmp_path):
    recs = arena_hard_records(1)
    board = board_for(empty_store, write_jsonl(tmp_path / "j.jsonl", recs))
    got, want = rates(board), closed_form(recs, 3)
    assert got["base"] == 0.5
    for m in ("m1", "m2", "m3"):
        assert got[m] == pytest.approx(want[m], abs=1e-9), m
    assert board.params["decisive_weight"] == 3 and board.params["baseline"] == "base"
    # the three models differ (the data is not degenerate) and the board's order follows the win rates
    assert len({round(got[m], 6) for m in ("m1", "m2", "m3")}) == 3


def test_decisive_weight_one_counts_a_strong_verdict_once(empty_store, tmp_path):
    recs = arena_hard_records(2)
    import_files(empty_store, [write_jsonl(tmp_path / "j.jsonl", recs)], "ah")
    board = baseline_leaderboard(empty_store, "ah", BoardSpec(), "base", decisive_weight=1)
    want = closed_form(recs, 1)
    for m, r in rates(board).items():
        if m != "base":
            assert r == pytest.approx(want[m], abs=1e-9)
    assert closed_form(recs, 1) != closed_form(recs, 3)  # the weight matters on this data


def test_the_real_excerpt_matches_arena_hard_counting(empty_store):
    """Eleven records of a public Arena-Hard v0.1 judgment file (gpt-3.5-turbo-0125 against gpt-4-0314):
    the model's points, a >> three times, a tie half: 4 of 34 battles (1.5 + 0.5 in the first five
    records' 14, 2 in the next six's 20)."""
    recs = [json.loads(line) for line in (FIX / "arena_hard_v01_excerpt.jsonl").read_text().splitlines()]
    import_files(empty_store, [FIX / "arena_hard_v01_excerpt.jsonl"], "ah")
    board = baseline_leaderboard(empty_store, "ah", BoardSpec(), "gpt-4-0314")
    assert closed_form(recs) == pytest.approx({"gpt-3.5-turbo-0125": 4 / 34})
    assert rates(board)["gpt-3.5-turbo-0125"] == pytest.approx(4 / 34, abs=1e-9)
    assert board.params["n_votes"] == 34 and board.params["n_verdicts_valid"] == 22


def logistic_win_rates(battles, baseline: str) -> dict[str, float]:
    """Arena-Hard v0.1's fit, written out: every battle twice, a tie once as a win and once as a loss,
    columns +ln 10 / -ln 10 for the two sides, an unpenalised logistic regression (here with the
    baseline's coefficient held at 0, which only fixes the free shift), win rate 1 / (1 + 10^(c_b - c_m))."""
    models = sorted({m for a, b, _ in battles for m in (a, b)})
    free = [m for m in models if m != baseline]
    col = {m: k for k, m in enumerate(free)}
    X, Y = [], []
    for copy in (0, 1):
        for a, b, outcome in battles:
            row = np.zeros(len(free))
            if a in col:
                row[col[a]] += np.log(10.0)
            if b in col:
                row[col[b]] -= np.log(10.0)
            X.append(row)
            Y.append(1.0 if outcome == "a" or (outcome == "tie" and copy == 0) else 0.0)
    X, Y = np.array(X), np.array(Y)

    def loss(c):
        z = X @ c
        return float(np.sum(np.logaddexp(0.0, z) - Y * z)), X.T @ (1.0 / (1.0 + np.exp(-z)) - Y)

    c = minimize(loss, np.zeros(len(free)), jac=True, method="BFGS", options={"gtol": 1e-11}).x
    return {baseline: 0.5, **{m: float(1.0 / (1.0 + 10.0 ** (-c[col[m]]))) for m in free}}


def test_matches_a_direct_logistic_regression_where_models_also_meet(empty_store, tmp_path):
    """Not a star: the non-baseline models also meet each other (verdict rows with strength), so the
    fit couples them; the win rates equal an independent logistic-regression fit of the same battles."""
    rng = np.random.default_rng(5)
    models = ["base", "m1", "m2", "m3"]
    skill = {"base": 0.0, "m1": 0.6, "m2": -0.4, "m3": 0.2}
    rows, battles = [], []
    for k in range(300):
        a, b = rng.choice(models, 2, replace=False)
        pa = 1.0 / (1.0 + np.exp(skill[b] - skill[a]))
        u = rng.random()
        winner = "tie" if u < 0.15 else ("A" if u < 0.15 + 0.85 * pa else "B")
        strength = "" if winner == "tie" else str(int(rng.random() < 0.3) + 1)
        rows.append(f"p{k},{a},{b},{winner},j,{strength}")
        times = 3 if strength == "2" else 1
        battles += [(a, b, {"A": "a", "B": "b", "tie": "tie"}[winner])] * times
    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner,judge,strength\n" + "\n".join(rows) + "\n")
    import_files(empty_store, [path], "mix")
    board = baseline_leaderboard(empty_store, "mix", BoardSpec(), "base")
    got, want = rates(board), logistic_win_rates(battles, "base")
    for m in models:
        assert got[m] == pytest.approx(want[m], abs=1e-6), m
    # scale=elo reads the same strengths (400 log10 units): the same win rates
    elo = baseline_leaderboard(empty_store, "mix", BoardSpec(ranker_params={"scale": "elo"}), "base")
    for m in models:
        assert rates(elo)[m] == pytest.approx(got[m], abs=1e-12)


def test_each_game_is_its_own_battle(empty_store, tmp_path):
    """An Arena-Hard record's two games on one pair and prompt are two battles, never one combined vote:
    a win and a tie are 1.5 points of 2 (the default vote pairing would make them one tie)."""
    recs = [{"uid": "q1", "judge": "j", "model": "m", "baseline": "base",
             "games": [{"score": "B>A"}, {"score": "A=B"}]},
            {"uid": "q2", "judge": "j", "model": "m", "baseline": "base",
             "games": [{"score": "A>B"}, {"score": "A>B"}]}]
    import_files(empty_store, [write_jsonl(tmp_path / "j.jsonl", recs)], "ah")
    rows = store_vote_rows(empty_store, "ah", need_strength=True)
    assert len(battle_votes(rows, 3)) == 4
    board = baseline_leaderboard(empty_store, "ah", BoardSpec(), "base")
    assert rates(board)["m"] == pytest.approx(2.5 / 4, abs=1e-9)


def test_bootstrap_interval_resamples_battles_and_brackets_the_point(empty_store, tmp_path):
    recs = arena_hard_records(3, n_q=30)
    board = board_for(empty_store, write_jsonl(tmp_path / "j.jsonl", recs), bootstrap=200, seed=4)
    t = board.table.set_index("model")
    assert board.params["bootstrap_unit"] == "vote"
    assert t.loc["base", "baseline_ci_low"] == t.loc["base", "baseline_ci_high"] == 0.5
    for m in ("m1", "m2", "m3"):
        lo, hi, p = t.loc[m, "baseline_ci_low"], t.loc[m, "baseline_ci_high"], t.loc[m, "baseline_win_rate"]
        assert lo < p < hi and hi - lo < 0.5
    # the interval is the percentile interval of the resampled win rate: a second path from the samples
    boot = board.bootstrap
    s = boot.samples
    b = list(boot.models).index("base")
    for m in ("m1", "m2", "m3"):
        k = list(boot.models).index(m)
        w = 1.0 / (1.0 + np.exp(s[:, b] - s[:, k]))
        assert [t.loc[m, "baseline_ci_low"], t.loc[m, "baseline_ci_high"]] == pytest.approx(
            list(np.quantile(w, [0.025, 0.975])), abs=1e-12)


def test_cli_adds_the_columns_and_refuses_bad_choices(tmp_path, shipped_db_copy):
    db = str(shipped_db_copy)  # `import` on a new file would first import the shipped datasets
    path = write_jsonl(tmp_path / "j.jsonl", arena_hard_records(6, n_q=10))
    run_engine(["--db", db, "import", str(path), "--dataset", "ah"], check=True)
    out = run_engine(["--db", db, "leaderboard", "--dataset", "ah", "--baseline", "base", "--format", "json"])
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert list(obj["table"][0])[-1] == "baseline_win_rate"  # appended at the end; no interval without B
    assert obj["params"]["baseline"] == "base" and obj["params"]["decisive_weight"] == 3
    assert any(n.startswith("battles:") for n in obj["notes"])
    # the board is the battle fit: said once, and never the pair-count dataset's unit note (a verdict dataset)
    assert obj["notes"].count(BASELINE_BOARD_NOTE) == 1
    assert not any("pair counts" in n for n in obj["notes"]), obj["notes"]
    plain = json.loads(run_engine(["--db", db, "leaderboard", "--dataset", "ah", "--format", "json"]).stdout)
    assert BASELINE_BOARD_NOTE not in plain["notes"]
    counts = run_engine(["--db", db, "leaderboard", "--dataset", ARENA_COUNTS_DATASET, "--format", "json"])
    assert any("pair counts" in n for n in json.loads(counts.stdout)["notes"])  # that note where it belongs
    once = run_engine(["--db", db, "leaderboard", "--dataset", "ah", "--baseline", "base", "--param",
                       "decisive_weight=1", "--format", "json"])
    assert json.loads(once.stdout)["params"]["decisive_weight"] == 1
    for args, words in (
        (["--baseline", "nobody"], "has no valid verdict"),
        (["--param", "decisive_weight=3"], "give --baseline MODEL too"),
        (["--baseline", "base", "--param", "decisive_weight=0"], "1 or more"),
        (["--baseline", "base", "--ranker", "winrate"], "use --ranker bt"),
        (["--baseline", "base", "--keep-k", "3"], "does not combine with --keep-k"),
    ):
        r = run_engine(["--db", db, "leaderboard", "--dataset", "ah", *args])
        assert r.returncode == 2 and words in r.stderr, (args, r.stderr)
        assert r.stderr.count("\n") == 1  # one sentence


def test_v01_records_without_baseline_import_with_baseline_model(tmp_path, shipped_db_copy):
    """The excerpt in Arena-Hard v0.1's original layout (question_id, model, judge, games; the baseline
    only in the run's configuration): refused without --baseline, the same board with it (and with the
    older spelling --baseline-model, kept as an alias)."""
    v01 = []
    for line in (FIX / "arena_hard_v01_excerpt.jsonl").read_text().splitlines():
        r = json.loads(line)
        v01.append({"question_id": r["uid"], "model": r["model"], "judge": r["judge"], "games": r["games"]})
    path = write_jsonl(tmp_path / "gpt-3.5-turbo-0125.jsonl", v01)
    db = str(shipped_db_copy)  # `import` on a new file would first import the shipped datasets
    refused = run_engine(["--db", db, "import", str(path), "--dataset", "v01"])
    assert refused.returncode == 2 and "import with --baseline NAME" in refused.stderr
    ok = run_engine(["--db", db, "import", str(path), "--dataset", "v01", "--baseline", "gpt-4-0314"])
    assert ok.returncode == 0, ok.stderr
    alias = run_engine(["--db", db, "import", str(path), "--dataset", "v01-alias", "--baseline-model",
                        "gpt-4-0314"])
    assert alias.returncode == 0, alias.stderr
    out = run_engine(["--db", db, "leaderboard", "--dataset", "v01", "--baseline", "gpt-4-0314", "--format",
                      "json"])
    got = {r["model"]: r["baseline_win_rate"] for r in json.loads(out.stdout)["table"]}
    assert got == pytest.approx({"gpt-3.5-turbo-0125": 4 / 34, "gpt-4-0314": 0.5}, abs=1e-9)
    csv = tmp_path / "v.csv"
    csv.write_text("prompt_id,model_a,model_b,winner\np1,a,b,A\n")
    wrong = run_engine(["--db", db, "import", str(csv), "--dataset", "c", "--baseline-model", "b"])
    assert wrong.returncode == 2 and "Arena-Hard judgment records" in wrong.stderr
    with Store(db) as s:
        a, b = (s.verdicts(d).drop(columns=["verdict_id", "dataset"]) for d in ("v01", "v01-alias"))
    assert len(a) == 22 and a.equals(b)


def test_the_win_rates_read_whatever_fit_the_board_used(empty_store, tmp_path):
    """``board_from_votes`` swaps the fit (a style-controlled one will): here a BT fit on the Elo scale,
    whose strengths give the same win rates through ``Ranker.to_log``."""
    from dataclasses import replace

    from engine.ranking.count_board import leaderboard_from_votes

    recs = arena_hard_records(8)
    import_files(empty_store, [write_jsonl(tmp_path / "j.jsonl", recs)], "ah")
    seen = []

    def elo_fit(votes, spec, extra_params):
        seen.append(len(votes))
        return leaderboard_from_votes(votes, replace(spec, ranker_params={"scale": "elo"}),
                                      extra_params=extra_params)

    board = baseline_leaderboard(empty_store, "ah", BoardSpec(), "base", board_from_votes=elo_fit)
    assert seen == [board.params["n_votes"]] and board.params["ranker_params"] == {"scale": "elo"}
    want = closed_form(recs, 3)
    for m in ("m1", "m2", "m3"):
        assert rates(board)[m] == pytest.approx(want[m], abs=1e-9)


def test_a_model_no_verdict_links_to_the_baseline_is_left_off(empty_store, tmp_path):
    """Two components (base-m1 and m2-m3): fitted together, the virtual ties that make the fit exist
    would move m1 too (0.656 instead of 2/3) and give m2, m3 numbers from those ties alone; so the fit
    covers the baseline's component, m1's win rate is its share of points, and a note names m2, m3."""
    from engine.ranking.baseline import baseline_notes

    path = tmp_path / "v.csv"
    path.write_text("prompt_id,model_a,model_b,winner\n" + "".join(
        f"p{k},{a},{b},{w}\n" for k, (a, b, w) in enumerate(
            [("base", "m1", "A"), ("base", "m1", "B"), ("m1", "base", "A"), ("m2", "m3", "A"),
             ("m3", "m2", "tie")])))
    import_files(empty_store, [path], "two")
    board = baseline_leaderboard(empty_store, "two", BoardSpec(), "base")
    assert rates(board) == pytest.approx({"base": 0.5, "m1": 2 / 3}, abs=1e-9)
    assert board.params["baseline_unlinked"] == ["m2", "m3"]
    assert any("links m2, m3 to base; left off the board" in n for n in baseline_notes(board))


def test_less_than_labels_are_the_same_verdicts_written_the_other_way(empty_store, tmp_path):
    """arena-hard-auto v2 maps A<B to B>A and A<<B to B>>A (and B<A, B<<A likewise): the same board."""
    flip = {"A>>B": "B<<A", "A>B": "B<A", "B>A": "A<B", "B>>A": "A<<B"}
    recs = arena_hard_records(9, n_q=20, null_share=0.0)
    written = [{**r, "games": [{"score": flip.get(g["score"], g["score"])} for g in r["games"]]}
               for r in recs]
    assert any(g["score"].count("<") for r in written for g in r["games"])
    import_files(empty_store, [write_jsonl(tmp_path / "lt.jsonl", written)], "lt")
    board = baseline_leaderboard(empty_store, "lt", BoardSpec(), "base")
    want = closed_form(recs, 3)
    for m in ("m1", "m2", "m3"):
        assert rates(board)[m] == pytest.approx(want[m], abs=1e-9)


def test_verdicts_without_strength_count_once_by_default(empty_store, tmp_path):
    """No verdict carries a strength (a plain verdict file): decisive_weight defaults to 1 and the win
    rate is the plain share of points; the same file with a strength column defaults to 3."""
    from engine.ranking.baseline import baseline_notes

    plain = tmp_path / "plain.csv"
    plain.write_text("prompt_id,model_a,model_b,winner\np1,m,base,A\np2,m,base,B\np3,base,m,B\np4,m,base,tie\n")
    graded = tmp_path / "graded.csv"
    graded.write_text("prompt_id,model_a,model_b,winner,strength\np1,m,base,A,2\np2,m,base,B,1\n"
                      "p3,base,m,B,1\np4,m,base,tie,\n")
    import_files(empty_store, [plain], "plain")
    import_files(empty_store, [graded], "graded")
    once = baseline_leaderboard(empty_store, "plain", BoardSpec(), "base")
    assert once.params["decisive_weight"] == 1 and rates(once)["m"] == pytest.approx(2.5 / 4, abs=1e-9)
    assert any("every verdict counts once" in n for n in baseline_notes(once))
    thrice = baseline_leaderboard(empty_store, "graded", BoardSpec(), "base")
    assert thrice.params["decisive_weight"] == 3 and rates(thrice)["m"] == pytest.approx(4.5 / 6, abs=1e-9)


def test_the_star_baseline_is_the_model_in_every_vote():
    """``star_baseline`` against a brute force over the votes (the model each of them includes), on a star,
    a star with one battle off it, two models, two centres, and a complete design."""
    import itertools

    import pandas as pd

    from engine.views.baseline_view import star_baseline

    def board(pairs: list[tuple[str, str]]) -> pd.DataFrame:
        models = sorted({m for p in pairs for m in p})
        return pd.DataFrame({"model": models, "votes": [sum(m in p for p in pairs) for m in models]})

    def brute(pairs: list[tuple[str, str]]) -> str | None:
        models = sorted({m for p in pairs for m in p})
        every = [m for m in models if all(m in p for p in pairs)]
        return every[0] if len(models) >= 3 and len(every) == 1 else None

    star = [("base", m) for m in ("m1", "m2", "m3") for _ in range(4)]
    cases = {
        "star": star,
        "star and one more": [*star, ("m1", "m2")],
        "two models": [("a", "b")] * 5,
        "complete": list(itertools.combinations("abcd", 2)) * 2,
        "star, a model judged twice as often": [*star, ("m2", "base"), ("m2", "base")],
    }
    got = {name: star_baseline(board(pairs)) for name, pairs in cases.items()}
    assert got == {name: brute(pairs) for name, pairs in cases.items()}
    assert got["star"] == "base" and got["star and one more"] is None
    assert star_baseline(pd.DataFrame({"model": ["a", "b", "c"]})) is None  # no vote counts: a panel's fit
