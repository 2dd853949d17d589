"""Issue 25, friction 8: a command-line error is one sentence, and every default a help text states is
the default the parser or the code uses.

Before: an argparse error printed 9-13 lines of usage before its sentence, and ``leaderboard --help`` said
keep-K keeps "the smallest S_mu" where it ranks by the coverage-scaled score."""

from __future__ import annotations

import argparse
import re

import pytest
from conftest import run_engine

from engine.__main__ import build_parser
from engine.cli._parser import stated_default
from engine.cli.leaderboard import keep_k_options
from engine.graphs.truncation import DEFAULT_SCORE, SCORES
from engine.ranking.board import BoardSpec


@pytest.mark.parametrize("argv, command", [
    (["leaderboard", "--bogus"], "leaderboard"),
    (["leaderboard", "--format", "foo"], "leaderboard"),
    (["leaderboard", "--keep-k", "three"], "leaderboard"),
    (["diagnose", "--table", "nope"], "diagnose"),
    (["experiment", "baselines", "--reference"], "experiment baselines"),
    (["import"], "import"),
    (["import-texts"], "import-texts"),
    (["head-to-head", "--model-a", "x"], "head-to-head"),
    (["head-to-head", "--model-a", "x", "--model-b", "y", "--outcome", "nope"], "head-to-head"),
    (["datasets", "map"], "datasets map"),
    (["datasets", "attach", "x"], "datasets attach"),
    (["datasets", "attach", "x", "y", "--format", "fastchat-pair"], "datasets attach"),
    (["leaderbord"], ""),
    ([], ""),
])
def test_a_parse_error_is_one_sentence_and_exit_2(argv, command):
    done = run_engine(argv)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # the old parser printed the usage block first
    assert lines[0].startswith("error: ") and "usage:" not in done.stderr
    assert lines[0].endswith(f"; see python -m engine{' ' + command if command else ''} --help."), lines[0]
    assert done.stdout == ""


def test_help_still_shows_the_usage():
    done = run_engine(["leaderboard", "--help"])
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m engine leaderboard")


def _leaf_parsers(parser: argparse.ArgumentParser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path), parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_parsers(child, (*path, name))


def _states(help_text: str, value) -> bool:
    """The help names ``value`` as the default: "default VALUE" (numbers compared as numbers), or the
    value followed in the same clause by "default" (a choice marked "(default)")."""
    for said in re.findall(r"default:? ([^\s;,)]+)", help_text):
        if said == str(value):
            return True
        number = re.fullmatch(r"-?[0-9.]+(e-?[0-9]+)?", said)
        if isinstance(value, (int, float)) and number and float(said) == float(value):
            return True
    return re.search(rf"\b{re.escape(str(value))}\b[^;]*\bdefault\b", help_text, re.IGNORECASE) is not None


def test_every_option_with_a_default_states_the_parsers_default():
    """Every option of every command whose default is a plain value shows that value in --help."""
    checked = 0
    for command, parser in _leaf_parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not stated_default(action) or not action.help:
                continue
            shown = formatter._expand_help(action)
            assert _states(shown, action.default), (command, action.option_strings, action.default, shown)
            checked += 1
    assert checked > 60


def test_a_stated_default_the_code_resolves_is_the_codes():
    """Options whose parser default is None and whose code picks the value: the help says that value."""
    lb = {a.dest: a for a in dict(_leaf_parsers(build_parser()))["leaderboard"]._actions}
    parsed = build_parser().parse_args(["leaderboard", "--keep-k", "5"])
    mu, _, pool = keep_k_options(parsed)
    assert f"default {mu:g}" in lb["mu"].help
    assert re.search(rf"{pool} = [^=]*default", lb["pool"].help)
    assert lb["ranker"].default == BoardSpec.ranker
    compare = {a.dest: a for a in dict(_leaf_parsers(build_parser()))["compare"]._actions}
    assert f"default {BoardSpec.ranker}" in compare["ranker"].help


def test_keep_k_help_names_the_score_keep_k_ranks_by():
    """keep-K ranks by the coverage-scaled score by default; the help said "the smallest S_mu"."""
    keep_k = {a.dest: a for a in dict(_leaf_parsers(build_parser()))["leaderboard"]._actions}["keep_k"].help
    assert DEFAULT_SCORE == "coverage" and SCORES["coverage"] in keep_k and "scaled by coverage" in keep_k
