"""The style-controlled leaderboard and sandwich intervals on the board (engine/ranking/style_board.py,
``leaderboard --style-control`` / ``--ci``): the board's numbers against the independent scipy fit of
tests/test_style_bt.py on battles read straight from the verdict frame, the plain board's ranks, the
sandwich columns against the direct per-battle formula, and the refusals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.rankers.bt import ELO_FACTOR
from engine.rankers.votes import votes as make_votes
from engine.ranking.board import BoardSpec
from engine.ranking.count_board import leaderboard_from_votes
from engine.ranking.style_board import NO_FEATURES, leaderboard_from_style_rows
from engine.ranking.vote_query import frame_vote_rows
from engine.style.features import STYLE_COLUMNS
from tests.conftest import run_engine
from tests.test_sandwich import fd_hessian, incidence
from tests.test_style_bt import battles, reference_fit

Z95 = 1.959963984540054


def arena_frame(seed: int = 0, n: int = 5, N: int = 500, missing: float = 0.0, verbose: int | None = None
                ) -> pd.DataFrame:
    """Arena-like verdicts (each its own vote, model_a as shown) with per-side counts; a share of rows
    without counts; ``verbose``: a model that wins by length."""
    n, a, b, y, counts = battles(seed=seed, n=n, N=N, verbose=verbose)
    names = np.array([f"model-{chr(ord('a') + k)}" for k in range(n)])
    frame = pd.DataFrame({
        "judge": "human", "prompt_id": [f"q{k}" for k in range(N)], "variant": 0, "turn": 1,
        "model_a": names[a], "model_b": names[b],
        "winner": np.where(y == 1, "A", np.where(y == 0, "B", "tie")),
        "source_file": "arena.jsonl", "source_line": np.arange(1, N + 1),
    })
    rng = np.random.default_rng(seed + 100)
    gone = rng.random(N) < missing
    for k, c in enumerate(STYLE_COLUMNS):
        frame[c] = np.where(gone, np.nan, counts[:, k])
    return frame


def frame_battles(frame: pd.DataFrame):
    """(models, a, b, y, counts) read from the frame by hand, rows with all eight counts only."""
    keep = frame[list(STYLE_COLUMNS)].notna().all(axis=1).to_numpy()
    f = frame[keep]
    models = sorted(set(f["model_a"]) | set(f["model_b"]))
    code = {m: i for i, m in enumerate(models)}
    a = f["model_a"].map(code).to_numpy()
    b = f["model_b"].map(code).to_numpy()
    y = f["winner"].map({"A": 1.0, "B": 0.0, "tie": 0.5}).to_numpy()
    return models, a, b, y, f[list(STYLE_COLUMNS)].to_numpy(np.float64)


def test_style_board_equals_the_independent_fit_and_compares_with_the_plain_board():
    """Kills: ties read as a win, a battle oriented lo-first instead of as shown, the plain ranks taken from
    the controlled scores, rank_change with the wrong sign."""
    frame = arena_frame(seed=1, missing=0.1, verbose=2)
    rows = frame_vote_rows(frame, order_by="input", style=True)
    board = leaderboard_from_style_rows(rows, BoardSpec())
    models, a, b, y, counts = frame_battles(frame)
    theta, beta = reference_fit(len(models), a, b, y, counts)
    got = board.table.set_index("model")
    np.testing.assert_allclose(got.loc[models, "score"].to_numpy(), theta, atol=1e-6)
    st = board.params["style"]
    np.testing.assert_allclose([st["features"][f]["beta"] for f in ("tokens", "headers", "lists", "bold")],
                               beta, atol=1e-6)
    assert st["n_votes_without_features"] == int(frame[list(STYLE_COLUMNS)].isna().any(axis=1).sum()) > 0
    plain = leaderboard_from_votes(make_votes(rows.take(np.isfinite(rows.style).all(axis=1))), BoardSpec())
    np.testing.assert_array_equal(got.loc[models, "rank_plain"].to_numpy(),
                                  plain.table.set_index("model").loc[models, "rank"].to_numpy())
    np.testing.assert_array_equal(got["rank_change"], got["rank_plain"] - got["rank"])
    assert got.loc["model-c", "rank_change"] == -1  # the verbose model falls once length is controlled
    assert list(board.table["rank"]) == sorted(board.table["rank"])
    assert board.params["ci_method"] == "sandwich"
    assert (board.table["ci_low"] < board.table["score"]).all()
    assert (board.table["score"] < board.table["ci_high"]).all()


def test_style_board_elo_scale_and_bootstrap():
    frame = arena_frame(seed=2)
    rows = frame_vote_rows(frame, order_by="input", style=True)
    log = leaderboard_from_style_rows(rows, BoardSpec()).table.set_index("model")
    elo_spec = BoardSpec(ranker_params={"scale": "elo"})
    elo = leaderboard_from_style_rows(rows, elo_spec).table.set_index("model")
    log = log.loc[elo.index]  # differences and widths: the Elo-like scale's offset plays no part
    np.testing.assert_allclose(elo["score"] - elo["score"].mean(),
                               (log["score"] - log["score"].mean()) * ELO_FACTOR, atol=1e-9)
    np.testing.assert_allclose(elo["ci_high"] - elo["score"], (log["ci_high"] - log["score"]) * ELO_FACTOR,
                               rtol=1e-9)
    boot = leaderboard_from_style_rows(rows, BoardSpec(ci="bootstrap", bootstrap=8, seed=3))
    assert boot.params["ci_method"] == "bootstrap" and boot.params["bootstrap_unit"] == "vote"
    t = boot.table
    assert t["ci_low"].notna().all() and (t["ci_low"] <= t["ci_high"]).all()
    assert t["rank_low"].notna().all()


def test_no_features_is_one_sentence_and_partial_features_are_counted():
    frame = arena_frame(seed=4)
    for c in STYLE_COLUMNS:
        frame[c] = np.nan
    with pytest.raises(LensError, match="No verdict of this selection carries style features"):
        leaderboard_from_style_rows(frame_vote_rows(frame, style=True), BoardSpec())
    assert "\n" not in NO_FEATURES


def test_plain_bt_sandwich_columns_equal_the_direct_formula():
    """``--ci sandwich`` for plain BT: score -/+ 1.96 * the per-battle sandwich (Hessian by finite
    differences, 1e-5 x battles on its diagonal). Kills: the interval on the wrong scale with
    scale=elo, z of a one-sided interval, a regularised fit given intervals."""
    frame = arena_frame(seed=6)
    v = make_votes(frame_vote_rows(frame, order_by="input"))
    models, a, b, y, _ = frame_battles(frame)
    U = incidence(len(models), a, b)

    def grad(w):
        return -U.T @ (y - 1 / (1 + np.exp(-(U @ w))))

    for scale, factor in (("log", 1.0), ("elo", ELO_FACTOR)):
        board = leaderboard_from_votes(v, BoardSpec(ci="sandwich", ranker_params={"scale": scale}))
        t = board.table.set_index("model")
        score = t.loc[models, "score"].to_numpy()
        theta = (score - score.mean()) / factor  # sum-zero log strengths, whatever the scale's offset
        H = fd_hessian(grad, theta) + 1e-5 * len(y) * np.eye(len(models))
        p = 1 / (1 + np.exp(-(U @ theta)))
        Hi = np.linalg.inv(H)
        se = np.sqrt(np.diag(Hi @ (U.T @ (U * ((y - p) ** 2)[:, None])) @ Hi))
        got = t.loc[models]
        np.testing.assert_allclose(got["ci_high"].to_numpy() - score, Z95 * se * factor, rtol=1e-6)
        np.testing.assert_allclose(score - got["ci_low"].to_numpy(), Z95 * se * factor, rtol=1e-6)
        assert board.params["ci_method"] == "sandwich" and board.params["level"] == 0.95
    # a model that never loses: the MLE (and its sandwich) does not exist; no interval is claimed
    frame.loc[frame["model_a"] == "model-a", "winner"] = "A"
    frame.loc[frame["model_b"] == "model-a", "winner"] = "B"
    board = leaderboard_from_votes(make_votes(frame_vote_rows(frame)), BoardSpec(ci="sandwich"))
    assert board.table["ci_low"].isna().all() and board.params["sandwich_not_estimable"]


@pytest.mark.parametrize("args, words", [
    (["--ci", "sandwich", "--ranker", "elo"], "needs the Bradley-Terry likelihood"),
    (["--ci", "sandwich", "--bootstrap", "10"], "sandwich intervals need none"),
    (["--style-control", "--ranker", "borda"], "needs the Bradley-Terry likelihood"),
    (["--style-control", "--keep-k", "5"], "does not combine with --keep-k"),
    (["--style-control", "--ci", "bootstrap"], "needs --bootstrap B"),
    (["--style-weighting", "none"], "give --style-control too"),
    (["--style-control", "--param", "soft=true"], "soft=true"),
])
def test_cli_refusals_are_one_sentence_before_the_store_opens(tmp_path, args, words):
    out = run_engine(["--db", str(tmp_path / "never.duckdb"), "leaderboard", *args])
    assert out.returncode == 2
    assert words in out.stderr and out.stderr.count("\n") == 1
    assert not (tmp_path / "never.duckdb").exists()


def test_cli_sandwich_json_and_csv_on_the_shipped_dataset(shipped_db):
    out = run_engine(["--db", str(shipped_db), "leaderboard", "--ci", "sandwich", "--format", "json"])
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    assert obj["ci_method"] == "sandwich"
    row = obj["table"][0]
    assert row["ci_low"] < row["score"] < row["ci_high"] and "rank_low" not in row
    csv = run_engine(["--db", str(shipped_db), "leaderboard", "--ci", "sandwich", "--format", "csv"])
    header = csv.stdout.splitlines()[0]
    assert header.startswith("rank,model,score,ci_low,ci_high,") and "rank_low" not in header
    assert "intervals: sandwich" in csv.stderr


def test_cli_style_control_on_an_imported_file_with_count_columns(tmp_path):
    """The whole path: a verdict file with explicit per-side count columns, imported, then
    ``leaderboard --style-control --format json``: scores and beta equal the scipy fit on the file's own
    rows; a dataset without any count says what is missing in one sentence."""
    frame = arena_frame(seed=9, N=300, verbose=1)
    flat = frame[["prompt_id", "model_a", "model_b", "winner", *STYLE_COLUMNS]]
    flat.to_csv(tmp_path / "battles.csv", index=False)
    db = str(tmp_path / "lens.duckdb")
    assert run_engine(["--db", db, "import", str(tmp_path / "battles.csv"), "--dataset", "b"]).returncode == 0
    out = run_engine(["--db", db, "leaderboard", "--dataset", "b", "--style-control", "--format", "json"])
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)
    models, a, b, y, counts = frame_battles(frame)
    theta, beta = reference_fit(len(models), a, b, y, counts)
    got = pd.DataFrame(obj["table"]).set_index("model")
    np.testing.assert_allclose(got.loc[models, "score"].to_numpy(), theta, atol=1e-6)
    np.testing.assert_allclose([obj["style"]["features"][f]["beta"] for f in ("tokens", "headers", "lists",
                                                                               "bold")], beta, atol=1e-6)
    assert obj["ci_method"] == "sandwich" and {"rank_plain", "rank_change"} <= set(got.columns)
    flat[["prompt_id", "model_a", "model_b", "winner"]].to_csv(tmp_path / "plain.csv", index=False)
    assert run_engine(["--db", db, "import", str(tmp_path / "plain.csv"), "--dataset", "p"]).returncode == 0
    out = run_engine(["--db", db, "leaderboard", "--dataset", "p", "--style-control"])
    assert out.returncode == 2 and "carries style features" in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.parametrize("ci", ["sandwich", "bootstrap"])
def test_a_feature_that_never_varies_gets_no_interval_and_a_note(shipped_db, ci):
    """vicuna80's gpt-4 math answers hold no header and no bold text: those two features take one value
    over every vote, so their beta (the ridge's 0) has no interval (was: [+0.0000, +0.0000], a certain
    zero), while the varying ones keep theirs; the note names the two. Kills a planted check that never
    finds a constant feature (both cases fail)."""
    args = ["--db", str(shipped_db), "leaderboard", "--judge", "gpt-4", "--category", "math",
            "--style-control", "--ci", ci] + (["--bootstrap", "30"] if ci == "bootstrap" else [])
    out = run_engine(args + ["--format", "json"])
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout)["params"]["style"]
    feats = st["features"]
    assert sorted(st["constant_features"]) == ["bold", "headers"]
    for f, v in feats.items():
        if f in ("bold", "headers"):
            assert v["beta"] == 0.0 and v["ci_low"] is None and v["ci_high"] is None and v["se"] is None
        else:
            assert v["ci_low"] < v["ci_high"]
    text = run_engine(args + ["--format", "csv"])
    assert "headers, bold take(s) one value over every fitted vote" in text.stderr
    assert "headers +0.0000 (no interval)" in text.stderr
