"""Synthetic datasets: stored through ingest, flagged synthetic, truth known, truncation helps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.experiments.protocol_runs import run_protocols
from engine.experiments.protocols import MACRO, ProtocolParams
from engine.graphs.cycles import cycle_counts
from engine.graphs.stack import build_stack
from engine.ingest.synthetic import SyntheticParams, generate, synthetic_truth, write_synthetic

SMALL = SyntheticParams(n_models=8, categories=2, prompts=10, paraphrases=4, samples=4, seed=7)


def test_generate_is_seeded_and_shaped():
    a, b = generate(SMALL), generate(SMALL)
    pd.testing.assert_frame_equal(a.verdicts, b.verdicts)
    n_graphs = 2 * 10 * 9
    assert len(a.verdicts) == n_graphs * 8 * 7 // 2
    assert set(a.verdicts.variant_kind) == {"original", "paraphrase", "sample"}
    assert (a.verdicts.groupby(["prompt_id", "variant"]).size() == 28).all()
    c = generate(SyntheticParams(n_models=8, categories=2, prompts=10, seed=8))
    assert not a.verdicts["winner"].equals(c.verdicts["winner"])


def test_confused_graphs_have_more_bad_cycles():
    d = generate(SMALL)
    st = build_stack(d.verdicts.assign(dataset="s", turn=1, prob_a=np.nan))
    keys = st.keys.merge(d.graphs, on=["prompt_id", "variant"], how="left")
    c3 = cycle_counts(st)["c3_bad"].to_numpy()
    conf = keys["confused"].to_numpy(bool)
    assert c3[conf].mean() > 2 * c3[~conf].mean()


def test_written_through_ingest_flagged_and_truncation_helps(empty_store):
    res = write_synthetic(empty_store, "syn-small", SMALL)
    assert res.status == "stored" and res.rows_stored == 2 * 10 * 9 * 28
    ds = empty_store.datasets().set_index("name")
    assert bool(ds.loc["syn-small", "synthetic"]) and "SYNTHETIC" in ds.loc["syn-small", "description"]
    truth = synthetic_truth(empty_store, "syn-small")
    assert truth.equals(generate(SMALL).truth.sort_values(ascending=False))
    st = build_stack(empty_store.verdicts("syn-small"))
    p = ProtocolParams(resamples=40)
    f = run_protocols(st, truth, ("trunc", "notrunc_boot", "random"), p)
    m = f[(f.category == MACRO) & (f.distance == "spearman")].set_index("protocol")["mean"]
    # measured at seed 7 (40 resamples): trunc 0.002, notrunc 0.049, random 0.054; require ≥ 1.5x better
    assert m["trunc"] * 1.5 < m["notrunc_boot"] and m["trunc"] * 1.5 < m["random"]


def test_a_refused_synthetic_write_says_why_in_one_sentence(empty_store):
    """Appending the same generated rows again is refused by the importer (the same file twice);
    write_synthetic passes the importer's own reason on (on fa0c159 it read ``result.problem``, a
    field ImportResult does not have, and raised AttributeError instead)."""
    from engine.errors import LensError

    tiny = SyntheticParams(n_models=3, categories=1, prompts=2, seed=1)
    write_synthetic(empty_store, "tiny", tiny)
    with pytest.raises(LensError) as err:
        write_synthetic(empty_store, "tiny", tiny, replace=False)
    assert str(err.value) == (
        "The synthetic dataset 'tiny' was not stored: tiny.csv is already in dataset 'tiny' "
        "(imported as tiny.csv); importing the same file twice would count every verdict "
        "twice: use --replace to replace the dataset."
    )
    assert empty_store.dataset_revision("tiny") == 1  # nothing of the refused write was stored


def test_truth_of_a_real_dataset_is_refused(empty_store):
    from engine.errors import LensError

    with pytest.raises(LensError, match="no stored ground truth"):
        synthetic_truth(empty_store, "vicuna80")


def test_cli_synthetic_then_baselines_end_to_end(tmp_path, capsys):
    import io

    from cli_inprocess import run_engine

    from engine.__main__ import main
    from engine.store.connection import Store

    db = tmp_path / "cli.duckdb"
    base = ["python", "-m", "engine", "--db", str(db)]
    assert (
        main(
            [
                "--db",
                str(db),
                "simulate",
                "synthetic",
                "--name",
                "s",
                "--models",
                "6",
                "--categories",
                "2",
                "--prompts",
                "4",
                "--paraphrases",
                "2",
                "--samples",
                "1",
                "--seed",
                "5",
            ]
        )
        == 0
    )
    assert "stored 480" in capsys.readouterr().out  # 2 categories × 4 prompts × 4 instances × 15 pairs
    cmd = [
        *base,
        "experiment",
        "baselines",
        "--dataset",
        "s",
        "--reference",
        "truth",
        "--protocols",
        "trunc,notrunc_boot",
        "--keep",
        "6",
        "--draw",
        "4",
        "--resamples",
        "10",
        "--format",
        "csv",
    ]
    out = run_engine(cmd[3:], check=True).stdout
    frame = pd.read_csv(io.StringIO(out))
    with Store(db) as store:
        st = build_stack(store.verdicts("s"))
        direct = run_protocols(st, synthetic_truth(store, "s"), ("trunc", "notrunc_boot"),
                               ProtocolParams(keep=6, draw=4, resamples=10, seed=20260324))
    assert np.allclose(frame["mean"].to_numpy(), direct["mean"].to_numpy())
    assert main(cmd[3:]) == 0  # again: served from the cache, same bytes
    assert capsys.readouterr().out == out
    rc = main(
        ["--db", str(db), "experiment", "keep-k", "--dataset", "s", "--reference", "truth", "--ks", "1:x"]
    )
    err = capsys.readouterr().err
    assert rc == 2 and err.strip().count("\n") == 0 and "1:x" in err


def test_cli_scorewin_tie_and_mu_pool_options(tmp_path, capsys):
    import io

    from engine.__main__ import main
    from engine.experiments.curves import mu_curve
    from engine.store.connection import Store

    db = tmp_path / "cli.duckdb"
    p = SyntheticParams(n_models=6, categories=2, prompts=4, paraphrases=2, samples=2, seed=6)
    with Store(db) as store:
        write_synthetic(store, "s", p)
    base = ["--db", str(db), "experiment"]
    frames = {}
    for tie in ("1", "0.5"):
        assert (
            main(
                [
                    *base,
                    "baselines",
                    "--dataset",
                    "s",
                    "--reference",
                    "truth",
                    "--protocols",
                    "scorewin",
                    "--scorewin-draw",
                    "5",
                    "--scorewin-tie",
                    tie,
                    "--resamples",
                    "30",
                    "--format",
                    "csv",
                ]
            )
            == 0
        )
        frames[tie] = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert main([*base, "mu", "--dataset", "s", "--reference", "truth", "--mus", "0.1,1,10", "--k", "5",
                 "--pooled", "--pool", "sampling", "--resamples", "6", "--format", "csv"]) == 0
    mu_frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    with Store(db) as store:
        st = build_stack(store.verdicts("s"))
        truth = synthetic_truth(store, "s")
    for tie in ("1", "0.5"):
        direct = run_protocols(st, truth, ("scorewin",), ProtocolParams(scorewin_draw=5, resamples=30,
                                                                        copeland_tie=float(tie)))
        np.testing.assert_allclose(frames[tie]["mean"], direct["mean"], atol=1e-12)
    assert not np.allclose(frames["1"]["mean"], frames["0.5"]["mean"])  # exact majorities do occur here
    direct = mu_curve(st, truth, [0.1, 1.0, 10.0], k=5, per_category=False, pool="sampling", resamples=6)
    np.testing.assert_allclose(mu_frame["mean"], direct["mean"], atol=1e-12)
    assert set(mu_frame["category"]) == {"all"} and (mu_frame["n_kept"] == 5).all()


def test_judge_probabilities_leave_every_verdict_unchanged():
    """prob_a comes from its own stream: the verdicts with soft=True are the verdicts without it."""
    for seed in (7, 20260324):
        hard = generate(SyntheticParams(n_models=6, categories=2, prompts=3, samples=1, seed=seed)).verdicts
        soft = generate(SyntheticParams(n_models=6, categories=2, prompts=3, samples=1, seed=seed, soft=True,
                                        soft_noise=1.3)).verdicts
        assert "prob_a" not in hard.columns and soft["prob_a"].between(0, 1).all()
        pd.testing.assert_frame_equal(soft.drop(columns="prob_a"), hard)


def test_judge_probabilities_are_calibrated_for_the_shown_order():
    """With no logit noise, P(A wins | not a tie) = prob_a (the verdict's own law): binned observed
    win rates of the answer shown first match the mean prob_a of the bin within 4 standard errors."""
    v = generate(
        SyntheticParams(n_models=10, categories=4, prompts=10, seed=3, soft=True, soft_noise=0.0)
    ).verdicts
    v = v[v.winner != "tie"]
    bins = pd.cut(v.prob_a, np.linspace(0, 1, 11))
    for _, g in v.groupby(bins, observed=True):
        if len(g) < 200:
            continue
        p = g.prob_a.mean()
        assert abs((g.winner == "A").mean() - p) < 4 * np.sqrt(p * (1 - p) / len(g)) + 0.01


def test_probabilities_consistent_in_odds_without_noise_have_zero_sntd(empty_store):
    """Stored through ingest; SNTD (engine.diagnostics.sntd) is 0 when every graph's probabilities come
    from one strength vector (noise 0), and positive with pair-level noise."""
    from engine.diagnostics import diagnose

    means = {}
    for noise in (0.0, 0.8):
        name = f"soft-{noise}"
        write_synthetic(empty_store, name, SyntheticParams(n_models=5, categories=1, prompts=3, paraphrases=1,
                                                           samples=0, seed=2, soft=True, soft_noise=noise))
        st = build_stack(empty_store.verdicts(name))
        assert st.soft is not None and not np.isnan(st.soft[st.observed]).any()
        means[noise] = float(diagnose(empty_store, name, table="sntd")["sntd_mean"].iloc[0])
    assert means[0.0] == pytest.approx(0.0, abs=1e-9) and means[0.8] > 1e-3
    with pytest.raises(Exception, match="soft_noise"):
        SyntheticParams(soft=True, soft_noise=-1).validate()


def test_cli_random_pool_option_matches_the_library(tmp_path, capsys):
    import io

    from engine.__main__ import main
    from engine.store.connection import Store

    db = tmp_path / "cli.duckdb"
    # 12 graphs/category
    p = SyntheticParams(n_models=6, categories=2, prompts=4, paraphrases=2, samples=0, seed=9)
    with Store(db) as store:
        write_synthetic(store, "s", p)
        st, truth = build_stack(store.verdicts("s")), synthetic_truth(store, "s")
    assert (
        main(
            [
                "--db",
                str(db),
                "experiment",
                "baselines",
                "--dataset",
                "s",
                "--reference",
                "truth",
                "--protocols",
                "random,sample",
                "--random-pool",
                "6",
                "--random-draw",
                "4",
                "--random-reps",
                "2",
                "--resamples",
                "5",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    frame = pd.read_csv(io.StringIO(capsys.readouterr().out))
    direct = run_protocols(st, truth, ("random", "sample"),
                           ProtocolParams(random_pool=6, random_draw=4, random_reps=2, resamples=5))
    np.testing.assert_allclose(frame["mean"], direct["mean"], atol=1e-12)  # NaN == NaN here
    assert set(frame.loc[frame.protocol == "random", "label"]) == {"Random6→4×2"}
    assert frame.loc[frame.protocol == "sample", "mean"].isna().all()  # no sampling replicates anywhere
    assert main(["--db", str(db), "experiment", "baselines", "--dataset", "s", "--reference", "truth",
                 "--random-pool", "0"]) == 2
    assert "random_pool" in capsys.readouterr().err


def test_cli_soft_flags_store_the_library_probabilities(tmp_path, capsys):
    """simulate synthetic --soft --soft-noise writes the prob_a of SyntheticParams(soft=True, ...)."""
    from engine.__main__ import main
    from engine.store.connection import Store

    db = tmp_path / "soft.duckdb"
    assert (
        main(
            [
                "--db",
                str(db),
                "simulate",
                "synthetic",
                "--name",
                "s",
                "--models",
                "5",
                "--categories",
                "1",
                "--prompts",
                "3",
                "--paraphrases",
                "1",
                "--samples",
                "0",
                "--seed",
                "3",
                "--soft",
                "--soft-noise",
                "0.8",
            ]
        )
        == 0
    )
    want = generate(
        SyntheticParams(
            n_models=5, categories=1, prompts=3, paraphrases=1, samples=0, seed=3, soft=True, soft_noise=0.8
        )
    ).verdicts
    store = Store(db)
    try:
        got = store.verdicts("s")
    finally:
        store.close()
    key = ["prompt_id", "variant", "model_a", "model_b"]
    merged = got.merge(want, on=key, suffixes=("", "_want"))
    assert len(merged) == len(want) == len(got)
    np.testing.assert_allclose(
        merged["prob_a"].to_numpy(float), merged["prob_a_want"].to_numpy(float), rtol=1e-12
    )
    assert (
        main(["--db", str(db), "simulate", "synthetic", "--name", "t", "--soft", "--soft-noise", "-1"]) == 2
    )
    assert "soft_noise must be a finite number" in capsys.readouterr().err
