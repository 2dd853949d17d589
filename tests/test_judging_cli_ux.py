"""What the judging commands tell a user when something is wrong: a server nobody listens on, no API
key and no URL, calls that failed for good, an unknown dataset, and the help text.

Real parts only: the scripted OpenAI-compatible server (tests/judging_fake_openai.py), a loopback
port that was bound and closed again (so nothing listens there: connection refused), the real
``openai`` client, and the ``python -m engine`` command line (in this process: tests/conftest.py run_engine).
Each expected count follows from the
rules written next to it (concurrency 1, so calls go one at a time in a known order).
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI

from engine.judging.backends import ChatRequest, ServerUnreachable
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.persist import write_answers, write_prompts
from engine.judging.pipeline import judge_run
from engine.judging.runner import Runner
from engine.store.connection import Store

REPO = Path(__file__).resolve().parent.parent
ANSWERS = (("m1", "short"), ("m2", "a much longer answer " * 3), ("m3", "medium size answer " * 30))


def _dead_url() -> str:
    """A loopback URL with nothing listening (the port was free a moment ago and is closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _synthetic(store, dataset: str, questions: dict[str, str], answers=ANSWERS) -> None:
    write_prompts(
        store,
        dataset,
        pd.DataFrame(
            {"prompt_id": list(questions), "turn": 1, "category": "x", "text": list(questions.values())}
        ),
    )
    if answers:
        rows = [{"prompt_id": p, "turn": 1, "model": m, "text": t} for p in questions for m, t in answers]
        write_answers(store, dataset, pd.DataFrame(rows))


def _runs(db: Path) -> pd.DataFrame:
    with Store(db) as store:
        return store.cursor().execute("SELECT * FROM judge_runs ORDER BY run_id").df()


def _cli(db: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_engine(["--db", str(db), *args], env=env)


# -- 1. an unreachable server stops the run ----------------------------------------------------------


def test_unreachable_server_stops_after_three_calls_and_cached_pairs_still_count(empty_store):
    _synthetic(empty_store, "syn", {"p1": "q1", "p2": "q2", "p3": "q3"})
    with FakeOpenAI() as srv:  # first, the m1-m2 pairs with a live server: 3 prompts x 1 call (single)
        live = Runner(empty_store, OpenAIBackend("fake", base_url=srv.base_url, api_key="k"))
        judge_run(empty_store, "syn", live, protocol="single", models=["m1", "m2"])
        assert live.stats.made == 3
    dead = srv.base_url  # the same server, now stopped (the server is part of a call's key)
    runner = Runner(
        empty_store,
        OpenAIBackend("fake", base_url=dead, api_key="k"),
        concurrency=1,
        max_retries=2,
        backoff_s=0.01,
    )
    with pytest.raises(ServerUnreachable) as err:
        judge_run(empty_store, "syn", runner, protocol="single")
    msg = str(err.value)
    assert msg.startswith(f"Cannot reach {dead}: connection refused (the first 3 calls all failed after 3 ")
    assert msg.endswith("check --base-url.") and msg.count(". ") == 0  # one sentence
    # 9 pairs: the 3 m1-m2 ones come from the cache, then calls go one at a time; the 3rd failure
    # (each after 1 + 2 attempts) trips the breaker and the other 3 are never sent
    s = runner.stats
    assert (s.cached, s.made, s.failed, s.retries, s.unreachable) == (3, 0, 3, 6, 3)
    runs = (
        empty_store.cursor().execute("SELECT status, calls_cached, calls_failed FROM judge_runs").fetchall()
    )
    assert runs == [("done", 0, 0), ("failed", 3, 3)]
    v = empty_store.verdicts("syn")
    assert len(v) == 3 and set(zip(v["model_a"], v["model_b"], strict=True)) <= {("m1", "m2"), ("m2", "m1")}


def test_a_host_name_that_does_not_resolve_is_named_as_the_cause(empty_store):
    url = "http://no-such-host.invalid/v1"  # .invalid never resolves (RFC 2606)
    runner = Runner(empty_store, OpenAIBackend("m", base_url=url, api_key="k"), concurrency=1, max_retries=0)
    reqs = [ChatRequest((("user", f"q{i}"),)) for i in range(5)]
    with pytest.raises(ServerUnreachable, match=r"^Cannot reach http://no-such-host\.invalid/v1: the host"):
        runner.call(reqs)
    assert (runner.stats.failed, runner.stats.made, runner.stats.retries) == (3, 0, 0)


def test_the_breaker_stays_off_once_a_call_succeeded(empty_store):
    """Two servers taken in turn, one dead: with concurrency 1 and no retries, attempts alternate
    live, dead, live, ... so of 9 calls the odd-numbered 5 succeed and 4 fail, and since a call
    succeeded first the run goes on to the end (failed-calls, not a stop)."""
    _synthetic(empty_store, "syn", {"p1": "q1", "p2": "q2", "p3": "q3"})
    dead = _dead_url()
    with FakeOpenAI() as srv:
        backend = OpenAIBackend("fake", base_url=f"{srv.base_url},{dead}", api_key="k")
        runner = Runner(empty_store, backend, concurrency=1, max_retries=0)
        rep = judge_run(empty_store, "syn", runner, protocol="single")
        assert srv.total == 5
    s = runner.stats
    assert (s.made, s.failed, s.unreachable, rep.status) == (5, 4, 4, "failed-calls")
    sentence = s.failure_sentence()
    assert sentence.startswith("4 calls failed after all retries (5 made, 0 cached), the last with: ")
    assert f"cannot reach {dead}: connection refused" in sentence


def test_cli_unreachable_server_is_one_sentence_exit_2_and_a_failed_run(tmp_path):
    db, dead = tmp_path / "dead.duckdb", _dead_url()
    out = _cli(
        db, "judge", "--dataset", "d", "--inputs", "mt_bench", "--models", "gpt-4,llama-13b",
        "--limit", "1", "--base-url", dead, "--model", "m", "--api-key", "k", "--no-progress",
        "--concurrency", "1", "--max-retries", "1", "--backoff", "0.01",
    )  # fmt: skip
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == (
        f"error: Cannot reach {dead}: connection refused (the first 3 calls all failed after 2 attempts "
        "each and none succeeded); start the server or check --base-url.\n"
    )
    runs = _runs(db)
    assert list(runs["status"]) == ["failed"] and int(runs["calls_failed"].iloc[0]) == 3


def _no_openai_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}


def test_cli_no_key_and_no_url_is_refused_before_anything_is_written(tmp_path):
    db = tmp_path / "nokey.duckdb"
    env = _no_openai_env()
    out = _cli(db, "judge", "--dataset", "d", "--inputs", "mt_bench", "--limit", "1", "--model", "m", env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    for needle in ("OPENAI_API_KEY", "--api-key", "--base-url"):
        assert needle in out.stderr
    with Store(db) as store:
        assert not store.has_dataset("d")  # --inputs was not loaded
        assert store.cursor().execute("SELECT count(*) FROM judge_runs").fetchone() == (0,)
    # a key alone (api.openai.com) or a URL alone (a local server) is enough to build the backend
    OpenAIBackend("m", api_key="k")
    OpenAIBackend("m", base_url="http://127.0.0.1:1/v1")


def test_cli_failed_calls_end_with_a_sentence_naming_count_and_cause(tmp_path):
    """generate on two prompts, one of which the server always answers with a 500: with 1 retry
    that call fails after 2 attempts, the other is made; exit 1 and one warning line."""
    db = tmp_path / "fail.duckdb"
    with Store(db) as store:
        _synthetic(store, "g", {"p1": "plain question", "p2": "FAILME question"}, answers=())
    with FakeOpenAI(fail_if="FAILME") as srv:
        out = _cli(
            db, "generate", "--dataset", "g", "--base-url", srv.base_url, "--model", "fake",
            "--no-progress", "--concurrency", "1", "--max-retries", "1", "--backoff", "0.01",
            "--format", "csv",
        )  # fmt: skip
        assert srv.total == 1 + 2
    assert out.returncode == 1
    assert out.stderr == (
        "warning: 1 call failed after all retries (1 made, 0 cached), the last with: gave up after 2 "
        "attempts: server error 500; run the same command again to retry only the failed ones.\n"
    )
    runs = _runs(db)
    assert list(runs["status"]) == ["failed-calls"] and int(runs["calls_failed"].iloc[0]) == 1


def test_cli_replies_without_a_verdict_are_said_and_a_run_of_none_exits_1(tmp_path):
    """The fake server answers a GARBAGE question with no verdict tag: 'single' judges 3 pairs per prompt.
    Two prompts, one of them GARBAGE: 3 of 6 verdicts invalid, said in one warning, exit 0. A dataset of
    GARBAGE only: all 3 invalid, exit 1; run again, every call comes from the cache and it says so again."""
    db = tmp_path / "junk.duckdb"
    with Store(db) as store:
        _synthetic(store, "mixed", {"p1": "plain question", "p2": "GARBAGE question"})
        _synthetic(store, "junk", {"p1": "another GARBAGE question"})  # not a call of "mixed"
    args = ("--base-url", "", "--model", "fake", "--api-key", "k", "--protocol", "single", "--no-progress",
            "--concurrency", "1", "--format", "csv")
    with FakeOpenAI() as srv:
        run = [a if a else srv.base_url for a in args]
        out = _cli(db, "judge", "--dataset", "mixed", *run)
        assert out.returncode == 0, out.stderr
        assert out.stderr == (
            "warning: 3 of 6 verdicts of this run are invalid: the judge's reply held no verdict its "
            "protocol reads (the template's tags); they are stored as invalid with the reply's text, left "
            "out of every ranking, and the replies are cached, so running the same command again does not "
            "ask again (another template or decoding option does).\n")
        for attempt in (1, 2):
            out = _cli(db, "judge", "--dataset", "junk", *run)
            assert out.returncode == 1 and out.stderr.startswith("warning: all verdicts of this run are "
                                                                 "invalid: "), out.stderr
            assert out.stderr.count("\n") == 1
            row = pd.read_csv(__import__("io").StringIO(out.stdout)).iloc[0]
            assert (int(row["verdicts"]), int(row["invalid"])) == (3, 3)
            assert int(row["calls_cached"]) == (0 if attempt == 1 else 3)
    with Store(db) as store:
        v = store.verdicts("mixed")
        assert (v["winner"] == "invalid").sum() == 3
        assert set(v[v["prompt_id"] == "p2"]["winner"]) == {"invalid"}


# -- 2. an unknown dataset, or one without prompt texts, is refused before a run is recorded ---------


@pytest.mark.parametrize("command", ["perturb", "generate", "judge"])
def test_unknown_dataset_is_refused_with_the_known_ones_and_no_run(tmp_path, command):
    db = tmp_path / "ds.duckdb"
    with Store(db) as store:
        _synthetic(store, "beta", {"p1": "q1"})
        _synthetic(store, "alpha", {"p1": "q1"})
    out = _cli(db, command, "--dataset", "nope", "--base-url", "http://127.0.0.1:1/v1", "--model", "m")
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert out.stderr == (
        f"error: There is no dataset named 'nope' in {db}; known datasets: alpha, beta.\n"
    )  # the names as the store lists them: sorted
    assert _runs(db).empty


def test_a_dataset_without_prompt_texts_is_refused(tmp_path):
    """'v' holds only variant 0 prompts with no verdicts: generate --variants 3 finds nothing to
    answer, and a dataset row with no prompts at all has nothing to paraphrase."""
    from engine.store.writes import create_dataset

    db = tmp_path / "np.duckdb"
    with Store(db) as store:
        _synthetic(store, "v", {"p1": "q1"})
        with store.transaction() as cur:
            create_dataset(cur, "bare", description="no prompts", source="test")
    common = ["--base-url", "http://127.0.0.1:1/v1", "--model", "m"]
    out = _cli(db, "perturb", "--dataset", "bare", *common)
    assert out.returncode == 2 and out.stderr == (
        "error: Dataset 'bare' has no prompt texts of variant 0 to paraphrase; load prompts with judge "
        "--inputs, or choose a dataset that has them.\n"
    )
    out = _cli(db, "generate", "--dataset", "v", "--variants", "3", *common)
    assert out.returncode == 2 and out.stderr.startswith(
        "error: Dataset 'v' has no prompt texts of variant 3 "
    )
    out = _cli(db, "generate", "--dataset", "v", "--variants", "1,x", *common)
    assert out.returncode == 2 and out.stderr == (
        "error: --variants should be comma-separated whole numbers such as 0,1, not '1,x'.\n"
    )
    assert _runs(db).empty


# -- 3. help ------------------------------------------------------------------------------------------


def _subparsers() -> dict:
    from engine.__main__ import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices


@pytest.mark.parametrize("command", ["judge", "generate", "perturb", "calls"])
def test_each_judging_command_has_a_one_sentence_description(command):
    desc = _subparsers()[command].description
    assert desc and desc[0].isupper() and desc.endswith(".") and desc.count(". ") == 0
    assert "\n" not in desc


def test_seed_means_the_schedule_in_judge_and_the_model_seed_in_generate_and_perturb():
    from engine.cli.judge import _UNSET

    subs = _subparsers()
    common = ["--dataset", "d", "--seed", "7"]
    j = subs["judge"].parse_args(common)
    assert (j.seed, j.decoding_seed) == (7, _UNSET)  # the schedule; the request seed stays at its default
    j = subs["judge"].parse_args([*common, "--decoding-seed", "3"])
    assert (j.seed, j.decoding_seed) == (7, 3)
    for command in ("generate", "perturb"):
        a = subs[command].parse_args(common)
        assert a.decoding_seed == 7 and not hasattr(a, "seed")
    helps = {
        c: {o: act.help for act in subs[c]._actions for o in act.option_strings}
        for c in ("judge", "generate")
    }
    assert "schedule seed" in helps["judge"]["--seed"] and "--decoding-seed" in helps["judge"]["--seed"]
    assert "sampling seed" in helps["judge"]["--decoding-seed"]
    assert "--seed is the same option" in helps["generate"]["--seed"]
    assert "--seed" not in helps["judge"]["--decoding-seed"]
    out = run_engine(["generate", "--help"])
    assert out.returncode == 0 and "model's sampling seed" in " ".join(out.stdout.split())
