"""Bad CLI input found by the user audit: each is refused with exit 2 and one sentence on stderr
(no traceback), and the accepted spellings give the numbers the library gives for the same values."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_inprocess import run_engine

from engine.errors import LensError
from engine.graphs.stack import build_stack
from engine.rankers import rank
from engine.rankers.elo import elo_ratings, stack_outcomes
from engine.ranking.leaderboard import leaderboard


def run_cli(db, *args):
    """``python -m engine --db DB ARGS`` (in this process): exit code, stdout, stderr."""
    done = run_engine(["--db", db, *args])
    return done.returncode, done.stdout, done.stderr


def refused(db, *args) -> str:
    """Run a command that must be refused; return its one error sentence."""
    rc, out, err = run_cli(db, *args)
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.mark.parametrize("args, words", [
    (("--ranker", "elo", "--param", "k=abc"), ("k='abc'", "not a number")),
    (("--ranker", "elo", "--param", "scale=abc"), ("scale='abc'", "not a number")),
    (("--ranker", "elo", "--param", "base=x"), ("base='x'", "not a number")),
    (("--ranker", "elo", "--param", "k=0"), ("k=", "greater than 0")),
    (("--ranker", "elo", "--param", "k=-4"), ("k=", "greater than 0")),
    (("--ranker", "elo", "--param", "base=1"), ("base=", "greater than 1")),
    (("--ranker", "elo", "--param", "scale=0"), ("scale=", "greater than 0")),
    (("--param", "soft=maybe"), ("soft='maybe'", "yes/no")),
    (("--param", "alpha=abc"), ("alpha='abc'", "not a number")),
    (("--param", "alpha=-0.5"), ("alpha=", "0 or more")),
    (("--param", "alpha=nan"), ("alpha=", "finite")),
    (("--ranker", "davidson", "--param", "alpha=-1"), ("alpha=", "davidson", "0 or more")),
    (("--ranker", "rank-centrality", "--param", "alpha=-1"), ("alpha=", "0 or more")),
    (("--ranker", "elo", "--param", "alpha=1"), ("no parameter 'alpha'", "k, base, scale, init, seed")),
    (("--ranker", "winrate", "--param", "x=1"), ("no parameter 'x'", "no parameters")),
    (("--ranker", "kemeny", "--param", "exact_max=many"), ("exact_max='many'", "whole number")),
    (("--ranker", "kemeny", "--param", "weights=2"), ("--judge-weight",)),
    (("--judge-weight", "gpt-4=2"), ("--judge-weight", "bt ranker takes no judge weights")),
    (("--ranker", "elo", "--param", "order=bogus"), ("order='bogus'", "time, input, prompt")),
    (("--param", "on_degenerate=bogus"), ("on_degenerate='bogus'", "regularize, raise")),
    (("--ranker", "davidson", "--param", "on_degenerate=x"), ("on_degenerate='x'", "regularize, raise")),
])
def test_bad_ranker_parameters_are_one_sentence(shipped_db, args, words):
    line = refused(shipped_db, "leaderboard", *args)
    for w in words:
        assert w in line, line


def test_compare_checks_parameters_per_ranker(shipped_db):
    line = refused(shipped_db, "compare", "--ranker", "bt", "--ranker", "elo", "--param", "k=8")
    assert "bt ranker has no parameter 'k'" in line


def test_library_refuses_out_of_range_parameters(shipped_store):
    st = build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    with pytest.raises(LensError, match="alpha=-1 of davidson must be 0 or more"):
        rank(st, "davidson", alpha=-1)
    with pytest.raises(LensError, match="soft='no' of bt is not true or false"):
        rank(st, "bt", soft="no")
    with pytest.raises(LensError, match="base=1 of elo must be greater than 1"):
        rank(st, "elo", base=1)


def test_soft_no_means_off_and_soft_yes_means_on(shipped_db, shipped_store):
    """The shipped store has no judge probabilities: soft BT must refuse, plain BT must run. Before the
    fix ``soft=no`` was a non-empty string, so truthy, and turned soft BT on."""
    plain = leaderboard(shipped_store, "vicuna80", judge="gpt-4").scores
    for word in ("no", "false", "0", "NO"):
        rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--param", f"soft={word}",
                               "--format", "json")
        assert rc == 0, err
        got = {r["model"]: r["score"] for r in json.loads(out)["table"]}
        np.testing.assert_allclose([got[m] for m in plain.index], plain.to_numpy(), atol=1e-9)
    for word in ("yes", "true", "1"):
        line = refused(shipped_db, "leaderboard", "--judge", "gpt-4", "--param", f"soft={word}")
        assert "judge probabilities" in line


def test_elo_parameters_reach_the_ranker(shipped_db, shipped_store):
    """k=8 base=2 scale=100 from text give the ratings of the sequential loop run with those numbers."""
    rc, out, err = run_cli(
        shipped_db,
        "leaderboard",
        "--judge",
        "gpt-4",
        "--ranker",
        "elo",
        "--param",
        "k=8",
        "--param",
        "base=2",
        "--param",
        "scale=100",
        "--param",
        "order=prompt",
        "--format",
        "json",
    )
    assert rc == 0, (
        err
    )  # order=prompt: graph key order, the order of stack_outcomes (the default is source order)
    st = build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    i, j, s = stack_outcomes(st)
    r = elo_ratings(i, j, s, st.n, k=8.0, base=2.0, scale=100.0)
    expect = dict(zip(st.models, r - r.mean(), strict=True))
    got = {row["model"]: row["score"] for row in json.loads(out)["table"]}
    np.testing.assert_allclose([got[m] for m in st.models], [expect[m] for m in st.models], atol=1e-9)
    # the printed score is the rating less the initial 1000 (updates are zero-sum), and the note says so
    np.testing.assert_allclose(r.mean(), 1000.0, atol=1e-9)
    assert any("score = rating - 1000" in note for note in json.loads(out)["notes"]), out


@pytest.mark.parametrize("args", [
    ("leaderboard", "--keep-k", "5", "--mu", "-1"),
    ("leaderboard", "--keep-k", "5", "--mu", "nan"),
    ("compare", "--keep-k", "5", "--mu", "-0.5"),
    ("compare", "--keep-k", "5", "--mu", "inf"),
    ("experiment", "keep-k", "--dataset", "vicuna80", "--reference", "arena", "--mu", "-1"),
    ("experiment", "baselines", "--dataset", "vicuna80", "--reference", "arena", "--mu", "-1"),
    ("experiment", "mu", "--dataset", "vicuna80", "--reference", "arena", "--mus", "0.1,-2,10"),
])
def test_negative_or_nonfinite_mu_is_refused(shipped_db, args):
    line = refused(shipped_db, *args)
    assert "must be a finite number, 0 or more" in line and ("--mus" in line) == ("--mus" in args)


def test_mu_zero_keeps_the_graphs_with_fewest_bad_3_cycles(shipped_db, shipped_store):
    """mu = 0 is allowed: keep-K then ranks graphs by C3_bad alone (brute-force count per graph)."""
    rc, out, err = run_cli(shipped_db, "leaderboard", "--judge", "gpt-4", "--keep-k", "5", "--mu", "0",
                           "--show-kept", "--format", "json")
    assert rc == 0, err
    kept = json.loads(out)["kept"]
    st = build_stack(shipped_store.verdicts("vicuna80", judge="gpt-4"))
    strict = st.adj & ~st.adj.transpose(0, 2, 1)
    n = st.n
    c3_bad = []
    for t in range(st.T):  # directed 3-cycles over edges i→j (win or tie) with at least one strict edge
        a, s, c = st.adj[t], strict[t], 0
        for i in range(n):
            for j in range(n):
                for k in range(n):
                    if (
                        i < j
                        and i < k
                        and j != k
                        and a[i, j]
                        and a[j, k]
                        and a[k, i]
                        and (s[i, j] or s[j, k] or s[k, i])
                    ):
                        c += 1
        c3_bad.append(c)
    assert len(kept) == 5
    pool = st.keys["variant_kind"].isin(["original", "paraphrase"]).to_numpy()
    worst_kept = max(row["score"] for row in kept)
    assert worst_kept == sorted(np.asarray(c3_bad)[pool])[4]


def test_compare_reference_truth_on_a_synthetic_dataset(db_path):
    """compare --reference truth uses the stored ground truth: the distances equal scipy's Spearman
    and Kendall between the leaderboard scores and the true strengths ((1 - rho) / 2, (1 - tau) / 2)."""
    from scipy.stats import kendalltau, spearmanr

    from engine.ingest.synthetic import synthetic_truth
    from engine.store.connection import Store

    rc, _, err = run_cli(
        db_path,
        "simulate",
        "synthetic",
        "--name",
        "syn",
        "--models",
        "8",
        "--categories",
        "2",
        "--prompts",
        "3",
        "--paraphrases",
        "1",
        "--samples",
        "1",
        "--bad-rate",
        "0.6",
    )
    assert rc == 0, err
    rc, out, err = run_cli(db_path, "compare", "--dataset", "syn", "--reference", "truth", "--format", "json")
    assert rc == 0, err
    (row,) = json.loads(out)
    store = Store(db_path)
    try:
        scores = leaderboard(store, "syn").scores
        truth = synthetic_truth(store, "syn").reindex(scores.index)
    finally:
        store.close()
    assert row["n_shared"] == 8
    assert row["spearman_distance"] == pytest.approx((1 - spearmanr(scores, truth).statistic) / 2, abs=1e-9)
    assert row["kendall"] == pytest.approx((1 - kendalltau(scores, truth).statistic) / 2, abs=1e-9)
    line = refused(db_path, "compare", "--dataset", "syn", "--reference", "truth", "--model-map", "m.csv")
    assert "--model-map does not apply" in line


def test_compare_reference_truth_without_a_truth_is_one_sentence(shipped_db):
    line = refused(shipped_db, "compare", "--reference", "truth")
    assert "'vicuna80' has none" in line
    assert "no dataset 'nope'" in refused(shipped_db, "compare", "--dataset", "nope", "--reference", "truth")


VICUNA_JUDGES = "bard, claude, gpt-3.5-turbo, gpt-4, human, vicuna-13b"


@pytest.mark.parametrize("args, option", [
    (("leaderboard", "--judge", "gpt4"), "--judge"),
    (("compare", "--judge", "gpt4"), "--judge"),
    (("graphs", "--dataset", "vicuna80", "--judge", "gpt4"), "--judge"),
    (("triads", "--dataset", "vicuna80", "--prompt-id", "1", "--judge", "gpt4"), "--judge"),
    (("diagnose", "--dataset", "vicuna80", "--judge", "claude", "--judge", "gpt4"), "--judge"),
    (("diagnose", "--dataset", "vicuna80", "--table", "agreement", "--reference", "nobody"), "--reference"),
    (("experiment", "mu", "--dataset", "vicuna80", "--reference", "arena", "--judge", "gpt4"), "--judge"),
])
def test_unknown_judge_lists_the_datasets_judges(shipped_db, shipped_store, args, option):
    line = refused(shipped_db, *args)
    judges = ", ".join(sorted(shipped_store.verdicts("vicuna80")["judge"].unique()))
    assert judges == VICUNA_JUDGES
    assert f"({option}); its judges are {judges}." in line


def _has_cyclic_triad(adj: np.ndarray) -> bool:
    """Brute force over triples: a triad admits no ranking when it holds a directed 3-cycle of
    win-or-tie edges other than an all-tie triangle (cycle, tied-ends, unchained-ties)."""
    n = adj.shape[0]
    tie = adj & adj.T
    for i in range(n):
        for j in range(n):
            for k in range(n):
                if (len({i, j, k}) == 3 and adj[i, j] and adj[j, k] and adj[k, i]
                        and not (tie[i, j] and tie[j, k] and tie[k, i])):
                    return True
    return False


@pytest.mark.parametrize("fmt, expect", [
    ("csv", "model_a,model_b,model_c,kind\n"),
    ("json", "[]\n"),
    ("table", "model_a  model_b  model_c  kind\n(no rows)\n"),
])
def test_triads_of_an_acyclic_graph_print_an_empty_table(shipped_db, shipped_store, fmt, expect):
    v = shipped_store.verdicts("vicuna80", judge="bard")
    st = build_stack(v[v["prompt_id"] == "13"])
    assert st.T == 1 and not _has_cyclic_triad(st.adj[0])
    rc, out, err = run_cli(
        shipped_db, "triads", "--dataset", "vicuna80", "--prompt-id", "13", "--judge", "bard", "--format", fmt
    )
    assert rc == 0, err
    assert out == expect


@pytest.mark.parametrize("fmt, expect", [
    ("csv", "judge_1,judge_2,items,agreement,kappa\n"),
    ("json", "[]\n"),
    ("table", "judge_1  judge_2  items  agreement  kappa\n(no rows)\n"),
])
def test_agreement_of_a_single_judge_has_no_pairs(shipped_db, fmt, expect):
    """One judge gives C(1, 2) = 0 judge pairs: a header and no rows, never pandas' 'Empty DataFrame'."""
    rc, out, err = run_cli(
        shipped_db,
        "diagnose",
        "--dataset",
        "vicuna80",
        "--table",
        "agreement",
        "--judge",
        "gpt-4",
        "--format",
        fmt,
        "--no-cache",
    )
    assert rc == 0, err
    assert out == expect and "Empty DataFrame" not in out


def test_simulate_recovery_refuses_oversized_runs(db_path):
    """Default t = 3:63:4 is 16 odd values summing to (3 + 63) · 16 / 2 = 528; n = 300, 1000 replicates is
    300² · 1000 · 528 = 4.752e10 units, and the largest count under 5e9 is floor(5e9 / (300² · 528)) = 105."""
    line = refused(db_path, "simulate", "recovery", "--n", "300", "--reps", "1000")
    assert "4.75e+10" in line and "use --reps 105 or fewer" in line and "--no-limit" in line
    from engine.cli.simulate import check_recovery_size

    ts = list(range(3, 64, 4))
    check_recovery_size(300, ts, 105)
    with pytest.raises(LensError, match="--reps 105 or fewer"):
        check_recovery_size(300, ts, 106)
    assert "lower --n or the t values" in refused(
        db_path, "simulate", "recovery", "--n", "3000", "--t", "999999", "--reps", "1"
    )


def test_simulate_recovery_no_limit_runs_the_same_curve(db_path, monkeypatch):
    """With the limit lowered to 1000 units, n = 5, t = 3,5, 10 reps (25 · 10 · 8 = 2000) is refused with
    floor(1000 / 200) = 5 replicates; --no-limit runs it and prints the library's curve."""
    import engine.cli.simulate as sim
    from engine.experiments.simulate import MODELS, recovery_curve

    monkeypatch.setattr(sim, "CLI_MAX_WORK", 1000.0)
    args = ("simulate", "recovery", "--n", "5", "--t", "3,5", "--reps", "10", "--format", "json")
    assert "use --reps 5 or fewer" in refused(db_path, *args)
    rc, out, err = run_cli(db_path, *args, "--no-limit")
    assert rc == 0, err
    got = json.loads(out)
    expect = recovery_curve(5, 0.25, [3, 5], 10, 20260324, MODELS)
    np.testing.assert_allclose([r["prob"] for r in got], expect["prob"].to_numpy())


def _subparser(parser, *names):
    import argparse

    for name in names:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[name]
    return parser


def test_simulate_options_say_what_they_are_and_their_default():
    from engine.__main__ import build_parser

    root = build_parser()
    for name in ("recovery", "mallows", "synthetic"):
        for a in _subparser(root, "simulate", name)._actions:
            if a.dest == "help":
                continue
            assert a.help, (name, a.dest)
            if a.default not in (None, False):
                assert f"default {a.default}" in a.help, (name, a.dest, a.help)
    for cmd in ("leaderboard", "compare", "diagnose", "graphs", "triads"):  # the README: commands that read
        (ds,) = [a for a in _subparser(root, cmd)._actions if a.dest == "dataset"]
        assert "default vicuna80" in ds.help and ds.default == "vicuna80" and not ds.required
    for exp in ("baselines", "keep-k", "mu"):
        acts = {a.dest: a for a in _subparser(root, "experiment", exp)._actions}
        assert acts["dataset"].help and "default 100" in acts["resamples"].help


@pytest.mark.parametrize("group, choices", [("simulate", "recovery, mallows or synthetic"),
                                            ("experiment", "baselines, keep-k or mu")])
def test_a_command_group_without_subcommand_lists_the_choices(db_path, group, choices):
    assert (
        refused(db_path, group) == f"error: {group} needs one of {choices}; see python -m engine {group} -h."
    )


def test_a_command_line_builds_only_its_command_and_parses_as_the_full_parser():
    """`python -m engine CMD` registers only CMD's module (it starts faster): its help and its parsed
    options equal the full parser's for every command; help, a typo or no command get every command."""
    import argparse
    import pkgutil

    from engine import cli as cli_pkg
    from engine.__main__ import build_parser, command_module

    full = build_parser()
    (action,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    modules = [m.name for m in pkgutil.iter_modules(cli_pkg.__path__) if not m.name.startswith("_")]
    assert len(action.choices) == len(modules) >= 15  # every command module registers exactly one command
    for cmd in action.choices:
        module = command_module(["--db", "x.duckdb", "--lock-wait=3", cmd, "--format", "csv"])
        assert module is not None, cmd
        (one,) = [a for a in build_parser(module)._actions if isinstance(a, argparse._SubParsersAction)]
        assert list(one.choices) == [cmd]
        assert one.choices[cmd].format_help() == action.choices[cmd].format_help()
    assert command_module(["import", "v.csv"]) == "imports"
    for argv in (
        [],
        ["--help"],
        ["-h", "leaderboard"],
        ["--db", "leaderboard"],
        ["leaderbord"],
        ["_common"],
        ["imports"],
    ):
        assert command_module(argv) is None, argv
    argv = ["--db", "s.duckdb", "leaderboard", "--judge", "gpt-4", "--ranker", "davidson", "--keep-k", "5"]
    assert vars(build_parser(command_module(argv)).parse_args(argv)) == vars(full.parse_args(argv))
