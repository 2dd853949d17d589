"""The API path under bad conditions: malformed 200 replies, client timeouts, Retry-After, jitter,
stops that cut a backoff short, an unknown model, the parameters actually sent, the in-flight
peak above 32, the run status, and one overall progress bar.

Every expected count is worked out from the scripted server's rules (tests/judging_fake_openai.py):
which prompt fails how often, and hence how many attempts, retries, failures and rows there must be.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI

from engine.errors import LensError
from engine.judging.backends import AuthenticationFailed, ChatRequest, Decoding, ModelNotFound
from engine.judging.openai_backend import OpenAIBackend, retry_after_s
from engine.judging.persist import write_answers, write_prompts
from engine.judging.pipeline import judge_run
from engine.judging.runner import Runner

REPO = Path(__file__).resolve().parent.parent
ANSWERS = (("m1", "short"), ("m2", "a much longer answer " * 3), ("m3", "medium size answer " * 30))


def _synthetic(store, dataset, questions: dict[str, str]):
    write_prompts(
        store,
        dataset,
        pd.DataFrame(
            {"prompt_id": list(questions), "turn": 1, "category": "x", "text": list(questions.values())}
        ),
    )
    rows = [{"prompt_id": pid, "turn": 1, "model": m, "text": t} for pid in questions for m, t in ANSWERS]
    write_answers(store, dataset, pd.DataFrame(rows))


def _runner(store, srv, model="fake", timeout_s=120.0, **kw):
    kw.setdefault("concurrency", 4)
    kw.setdefault("backoff_s", 0.01)
    return Runner(store, OpenAIBackend(model, base_url=srv.base_url, api_key="k", timeout_s=timeout_s), **kw)


def _status(store) -> list[str]:
    return list(store.cursor().execute("SELECT status FROM judge_runs ORDER BY run_id").df()["status"])


def _length_winner(a: str, b: str) -> str:
    return "A" if len(a) > len(b) else "B" if len(b) > len(a) else "tie"


def test_malformed_200_replies_are_retried_then_counted_as_failed_calls(empty_store):
    _synthetic(
        empty_store,
        "syn",
        {"p-html": "NONJSON question", "p-empty": "NOCHOICES question", "p-once": "ONCEBAD question"},
    )
    with FakeOpenAI() as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv, max_retries=2), protocol="single")
        # 3 pairs per prompt. NONJSON and NOCHOICES: every attempt malformed → 3 attempts, failed.
        # ONCEBAD: one malformed attempt, then a good reply.
        assert (rep.stats.failed, rep.stats.made) == (6, 3)
        assert rep.stats.retries == 6 * 2 + 3 * 1
        assert srv.statuses[200] == 6 * 3 + 3 * 2 and srv.total == 24
    v = empty_store.verdicts("syn")
    assert set(v["prompt_id"]) == {"p-once"} and len(v) == 3  # failed calls store no row, never a tie
    text = {r.model: r.text for r in empty_store.answer_texts("syn").itertuples() if r.prompt_id == "p-once"}
    assert all(r.winner == _length_winner(text[r.model_a], text[r.model_b]) for r in v.itertuples())
    assert rep.status == "failed-calls" and _status(empty_store) == ["failed-calls"]
    errors = " ".join(rep.stats.errors)
    assert "not JSON" in errors and "no choices" in errors


def test_client_timeout_retries_then_fails_cleanly(empty_store):
    _synthetic(empty_store, "syn", {"p-slow": "SLOW question", "p-fast": "quick question"})
    with FakeOpenAI(slow_s=3.0) as srv:
        runner = _runner(empty_store, srv, timeout_s=0.3, max_retries=1, concurrency=6)
        rep = judge_run(empty_store, "syn", runner, protocol="single")
        # the fast prompt's 3 calls succeed (so the stall detector stays off); the slow prompt's 3 are
        # each sent twice (the first attempt and one retry), each attempt timing out
        assert (rep.stats.failed, rep.stats.made, rep.stats.retries) == (3, 3, 3)
        slow = [n for body, n in _by_question(srv).items() if "SLOW" in body]
        assert srv.total == 9 and slow == [2, 2, 2]
    assert "no complete reply" in rep.stats.errors[0] and "within 0.3 s" in rep.stats.errors[0]
    assert set(empty_store.verdicts("syn")["prompt_id"]) == {"p-fast"} and _status(empty_store) == [
        "failed-calls"
    ]
    assert empty_store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0] == 3


def _by_question(srv) -> dict[str, int]:
    """Requests per distinct message body (the server counts them by a hash; here by the text)."""
    from collections import Counter

    return dict(Counter(b["messages"][-1]["content"] for b in srv.bodies))


def test_retry_after_is_honoured_and_backoff_has_jitter(empty_store):
    _synthetic(empty_store, "syn", {"p-wait": "RETRYAFTER question", "p-flaky": "FLAKY500 question"})
    with FakeOpenAI(retry_after="1") as srv:
        runner = _runner(empty_store, srv, backoff_s=0.2, max_backoff_s=10.0, concurrency=6)
        rep = judge_run(empty_store, "syn", runner, protocol="single")
        assert (rep.stats.made, rep.stats.failed, srv.statuses[429], srv.statuses[500]) == (6, 0, 3, 6)
    delays = sorted(rep.stats.delays)
    # RETRYAFTER: 3 calls wait the server's 1 s (+ at most 10 % jitter) instead of our 0.1-0.2 s
    waited = [d for d in delays if d >= 1.0]
    assert len(waited) == 3 and all(d <= 1.1 for d in waited)
    # FLAKY500: attempt 1 waits in [0.1, 0.2] (half to all of 0.2 s), attempt 2 in [0.2, 0.4]
    first, second = delays[:3], delays[3:6]
    assert all(0.1 <= d <= 0.2 for d in first) and all(0.2 <= d <= 0.4 for d in second)
    assert len(set(first)) == 3  # jittered: no two retries wait the same time


def test_backoff_delay_matches_its_formula():
    r = Runner.__new__(Runner)  # only the delay arithmetic, no store needed
    r.backoff_s, r.max_backoff_s, r.max_retry_after_s = 0.5, 3.0, 300.0
    r._rng, r._lock = random.Random(7), __import__("threading").Lock()
    ref = random.Random(7)
    for attempt in (1, 2, 3, 4, 5):
        base = min(3.0, 0.5 * 2 ** (attempt - 1))
        assert r.backoff_delay(attempt, None) == pytest.approx(base * (0.5 + 0.5 * ref.random()))
    assert r.backoff_delay(1, 20.0) == pytest.approx(20.0 + ref.random() * 1.0)
    assert r.backoff_delay(1, 5000.0) == pytest.approx(300.0 + ref.random() * 1.0)  # capped


def test_retry_after_header_forms():
    assert retry_after_s({"retry-after-ms": "250"}) == pytest.approx(0.25)
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after": "soon"}) is None and retry_after_s({}) is None
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= retry_after_s({"retry-after": when}) <= 31


def test_authentication_stop_ends_backoff_sleeps_at_once(empty_store):
    _synthetic(empty_store, "syn", {"p-auth": "AUTH401 SLOW question", "p-flaky": "FLAKY500 question"})
    with FakeOpenAI(slow_s=0.5) as srv:
        # the FLAKY500 calls fail at once and would sleep 30-60 s; the 401s arrive 0.5 s later
        runner = _runner(empty_store, srv, backoff_s=60.0, max_backoff_s=60.0, concurrency=6)
        with pytest.raises(AuthenticationFailed, match="refused the API key"):
            judge_run(empty_store, "syn", runner, protocol="single")
        assert runner.stats.waits_cut_short == 3 and runner.stats.retries == 3
        assert sorted(srv.seen.values()) == [1] * 6  # no FLAKY500 call was sent a second time
    assert _status(empty_store) == ["failed"]


def test_unknown_model_stops_the_run_with_one_sentence(empty_store, tmp_path):
    _synthetic(empty_store, "syn", {"p1": "q1", "p2": "q2", "p3": "q3"})
    with FakeOpenAI() as srv:
        runner = _runner(empty_store, srv, model="missing-model", concurrency=2)
        with pytest.raises(
            ModelNotFound, match=r"404 for model 'missing-model'.*check --model and --base-url"
        ):
            judge_run(empty_store, "syn", runner, protocol="swapped")
        assert isinstance(ModelNotFound("x"), LensError)
        assert len(srv.bodies) <= 2  # stopped after the first replies, not once per each of 18 calls
        assert runner.stats.failed == 0
        db = tmp_path / "nf.duckdb"
        cmd = ["--db", str(db), "judge", "--dataset", "nf"]
        cmd += ["--inputs", "mt_bench", "--models", "gpt-4,llama-13b", "--limit", "1", "--no-progress"]
        cmd += ["--base-url", srv.base_url, "--model", "missing-model"]
        out = run_engine(cmd)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("error: The server at") and out.stderr.count("\n") == 1


def test_only_set_decoding_parameters_are_sent(empty_store, tmp_path):
    with FakeOpenAI() as srv:
        backend = OpenAIBackend("fake", base_url=srv.base_url, api_key="k")
        msgs = (("user", "hello"),)
        backend.complete([ChatRequest(msgs)])
        backend.complete(
            [
                ChatRequest(
                    msgs,
                    Decoding(
                        temperature=None, seed=None, max_tokens=77, max_tokens_field="max_completion_tokens"
                    ),
                )
            ]
        )
        first, second = srv.bodies
        assert set(first) == {"model", "messages", "temperature", "max_tokens", "seed"}
        assert (first["temperature"], first["max_tokens"], first["seed"]) == (0.0, 512, 0)
        assert set(second) == {"model", "messages", "max_completion_tokens"}
        assert second["max_completion_tokens"] == 77
        # the same through the CLI: flags for a reasoning model
        db = tmp_path / "dec.duckdb"
        cmd = ["--db", str(db), "judge", "--dataset", "d"]
        cmd += ["--inputs", "mt_bench", "--models", "gpt-4,llama-13b", "--categories", "math", "--limit", "1"]
        cmd += ["--base-url", srv.base_url, "--model", "fake", "--no-progress", "--format", "csv"]
        cmd += ["--temperature", "none", "--top-p", "0.9", "--decoding-seed", "none"]
        cmd += ["--max-tokens-field", "max_completion_tokens", "--max-tokens", "300"]
        out = run_engine(cmd)
        assert out.returncode == 0, out.stderr
        sent = srv.bodies[2:]
    assert len(sent) == 2  # one pair, both orders
    for b in sent:
        assert set(b) == {"model", "messages", "top_p", "max_completion_tokens"}
        assert (b["top_p"], b["max_completion_tokens"]) == (0.9, 300)
    from engine.store.connection import Store

    with Store(db) as st:
        recorded = st.cursor().execute("SELECT DISTINCT decoding FROM judge_calls").fetchall()
    assert [json.loads(r[0]) for r in recorded] == [
        {
            "max_tokens": 300,
            "max_tokens_field": "max_completion_tokens",
            "seed": None,
            "temperature": None,
            "top_logprobs": 0,
            "top_p": 0.9,
        }
    ]


def test_in_flight_peak_reaches_a_limit_above_32(empty_store):
    _synthetic(empty_store, "syn", {f"p{i:02d}": f"question {i}" for i in range(20)})
    with FakeOpenAI(hold=48, hold_timeout_s=5.0) as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv, concurrency=48), protocol="single")
        # 20 prompts × 3 pairs = 60 calls; the first 48 are held until 48 are open at once
        assert rep.stats.made == 60 and srv.max_inflight == 48
    assert len(empty_store.verdicts("syn")) == 60


def test_one_progress_bar_for_the_whole_run(tmp_path):
    db = tmp_path / "bar.duckdb"
    with FakeOpenAI() as srv:
        cmd = ["--db", str(db), "judge", "--dataset", "bar"]
        cmd += ["--inputs", "mt_bench", "--models", "gpt-4,llama-13b,alpaca-13b", "--limit", "1"]
        cmd += ["--base-url", srv.base_url, "--model", "fake", "--format", "csv", "--concurrency", "8"]
        out = run_engine(cmd)
    assert out.returncode == 0, out.stderr
    frames = [f for f in out.stderr.replace("\n", "\r").split("\r") if f.strip()]
    assert frames and all(f.startswith("judge (swapped)") for f in frames)  # one bar, no per-chunk bars
    assert all("/24" in f for f in frames)  # 8 prompts × 3 pairs, known up front (hence an ETA)
    last = frames[-1]
    assert "24/24" in last and "made=48" in last and "cached=0" in last and "failed=0" in last
    assert "tokens=" in last and "cost=$" in last


def test_a_runaway_reply_is_cut_to_the_text_limit_and_stored_invalid_with_its_text(empty_store):
    """A reply over the store's text limit (1 MiB) is cut with a stated marker: the call cache and the
    verdict hold at most the limit, and the verdict tag past the cut leaves it invalid, never a tie."""
    from engine.ingest.limits import TEXT_MAX_CHARS

    _synthetic(empty_store, "syn", {"p-huge": "HUGE question"})
    with FakeOpenAI(huge_chars=TEXT_MAX_CHARS + 5000) as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv), protocol="single")
    assert (rep.stats.made, rep.stats.failed) == (3, 0)
    lengths = empty_store.cursor().execute("SELECT length(text) FROM judge_calls").fetchall()
    assert [n for (n,) in lengths] == [TEXT_MAX_CHARS] * 3
    v = empty_store.verdicts("syn")
    assert list(v["winner"]) == ["invalid"] * 3
    assert all("reply cut here" in e and len(e) <= TEXT_MAX_CHARS + 1000 for e in v["explanation"])


# -- finished calls are stored in groups ------------------------------------------------------------


def _one_call_units(n: int, stored_when_done: list[int], store):
    """``n`` units of one distinct request each; each, when it gets its result, notes how many calls
    the store holds (a result must reach its unit only once its call is stored)."""
    def unit(i: int):
        (res,) = yield [ChatRequest((("user", f"question {i}"),), Decoding(max_tokens=8))]
        stored_when_done.append(store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0])
        return res

    return [unit(i) for i in range(n)]


@pytest.mark.parametrize(("record_every_s", "concurrency", "groups"), [(60.0, 4, 1), (0.0, 1, 40)])
def test_finished_calls_are_stored_in_groups_before_their_units_go_on(
    empty_store, monkeypatch, record_every_s, concurrency, groups
):
    """40 one-call units: with a long group window, every call is stored in one transaction once
    nothing is left in flight or ready to send; with none (one call in flight at a time), one
    transaction per call. Either way no unit sees its result before its call is stored, and every
    call is stored once."""
    from engine.judging.cache import CallCache

    writes: list[int] = []
    put_rows = CallCache.put_rows
    monkeypatch.setattr(
        CallCache, "put_rows", lambda self, rows: (writes.append(len(rows)), put_rows(self, rows))
    )
    seen: list[int] = []
    with FakeOpenAI(delay_s=0.02) as srv:
        runner = _runner(empty_store, srv, concurrency=concurrency, record_every_s=record_every_s)
        runner.drive(_one_call_units(40, seen, empty_store))
        assert srv.total == 40
    assert sum(writes) == 40 and len(writes) == groups
    # each unit, when it got its result, found its call (and every call written with it) stored
    written = [sum(writes[: k + 1]) for k in range(len(writes))]
    assert len(seen) == 40 and all(n in written for n in seen) and seen == sorted(seen)
    n, distinct = (
        empty_store.cursor().execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
    )
    assert n == distinct == 40


def test_an_interrupted_run_stores_the_calls_that_had_finished(empty_store):
    """Ctrl-C (KeyboardInterrupt) while finished calls wait for their group's write: they are stored
    on the way out, with the calls that were in flight (nothing new is sent; those end first), so
    every call the server answered is stored and none is paid for again by the next run."""
    seen: list[int] = []
    units = _one_call_units(80, seen, empty_store)

    def interrupted():
        # the first pull takes Drive.PULL = 64 units; the next comes after the first wait for a
        # finished call, with at least that call waiting for its group's write
        yield from units[:64]
        raise KeyboardInterrupt

    with FakeOpenAI(delay_s=0.02) as srv:
        runner = _runner(empty_store, srv, concurrency=4, record_every_s=60.0)
        with pytest.raises(KeyboardInterrupt):
            runner.drive(interrupted())
        answered = srv.total
        stored = empty_store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0]
        assert seen == []  # the group window had not passed: no unit got a result
        assert answered >= 1  # the interruption came after at least one call had finished
        assert stored == answered  # the finished calls and those in flight, none lost
        assert runner.stats.made == answered
        # the next run of the same 64 units pays only for the calls the server never answered
        again = _runner(empty_store, srv, concurrency=4)
        again.drive(_one_call_units(64, [], empty_store))
        assert (again.stats.cached, again.stats.made) == (answered, 64 - answered)
        assert srv.total == 64


@pytest.mark.parametrize("record_every_s", [60.0, 0.25])
def test_a_request_asked_again_while_its_call_waits_to_be_stored_is_not_paid_twice(
    empty_store, record_every_s
):
    """128 distinct requests, then the same 128 again: the second copies start (Drive pulls 64 units
    at a time) after the first have finished but, with a group window, before they are stored; they
    wait for the stored call instead of sending it again."""
    reqs = [ChatRequest((("user", f"question {i}"),), Decoding(max_tokens=8)) for i in range(128)]
    with FakeOpenAI(delay_s=0.02) as srv:
        runner = _runner(empty_store, srv, concurrency=4, record_every_s=record_every_s)
        got = runner.call(reqs + reqs)
        assert srv.total == 128
    assert runner.stats.made == 128
    if record_every_s > 10:  # nothing stored before the end: every second copy waited for its first
        assert runner.stats.cached == 0
    assert [g.text for g in got[:128]] == [g.text for g in got[128:]]
    assert empty_store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0] == 128
