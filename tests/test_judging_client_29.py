"""Issue 29, the fast judge client: the loop client (engine/judging/async_http.py) against the
``openai`` package's client on the same scripted server (tests/judging_fake_openai.py), the store
opened per tick rather than per lookup, the journal when no location is left, and the bad inputs
of ``--base-url`` and ``--concurrency``.

The two clients are two paths to one answer: the same requests must give the same call keys, texts,
log-probabilities and verdicts (the server's rules fix them: the longer answer wins; soft letters
with p = len(first) / (len(first) + len(second))).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd

from engine.errors import LensError
from engine.judging import journal
from engine.judging.backends import ChatRequest, Decoding
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.persist import write_answers, write_prompts
from engine.judging.pipeline import judge_run
from engine.judging.runner import Runner
from engine.store.connection import Store

ANSWERS = (("m1", "short"), ("m2", "a much longer answer " * 3), ("m3", "medium size answer " * 30))


def _dataset(store, questions: int = 6) -> None:
    qs = {f"p{i}": f"question {i}" for i in range(questions)}
    prompts = pd.DataFrame({"prompt_id": list(qs), "turn": 1, "category": "x", "text": list(qs.values())})
    write_prompts(store, "d", prompts)
    rows = [{"prompt_id": p, "turn": 1, "model": m, "text": t} for p in qs for m, t in ANSWERS]
    write_answers(store, "d", pd.DataFrame(rows))


def _calls(store) -> pd.DataFrame:
    return (
        store.cursor()
        .execute("SELECT call_key, text, top_logprobs, prompt_tokens, completion_tokens FROM judge_calls")
        .df()
        .sort_values("call_key", ignore_index=True)
    )


@pytest.mark.parametrize("protocol", ["swapped", "soft"])
def test_the_loop_client_and_the_sdk_client_store_the_same_calls_and_verdicts(tmp_path, protocol):
    """Fails if the loop client reads a reply differently from the SDK (planted: the soft letters'
    log-probabilities taken from ``logprob`` instead of ``top_logprobs``; the usage's token counts
    swapped), or keys a call differently (the cache would then pay each call twice across clients)."""
    got = {}
    with FakeOpenAI() as srv:
        for sdk in (False, True):
            store = Store(tmp_path / f"{sdk}.duckdb")
            _dataset(store)
            backend = OpenAIBackend("fake", base_url=srv.base_url, api_key="k", sdk=sdk)
            rep = judge_run(store, "d", Runner(store, backend, concurrency=8), protocol=protocol)
            got[sdk] = (_calls(store), store.verdicts("d").sort_values(["prompt_id", "model_a", "model_b"]))
            assert rep.stats.made == len(got[sdk][0]) > 0 and rep.stats.failed == 0
            backend.close()
    (calls_loop, v_loop), (calls_sdk, v_sdk) = got[False], got[True]
    pd.testing.assert_frame_equal(calls_loop, calls_sdk)
    cols = ["prompt_id", "model_a", "model_b", "winner", "prob_a"]
    pd.testing.assert_frame_equal(v_loop[cols].reset_index(drop=True), v_sdk[cols].reset_index(drop=True))
    text = dict(ANSWERS)
    if protocol == "soft":  # the server's rule, worked out here: p(A) = len(first) / (len(both))
        for r in v_loop.itertuples():
            a, b = len(text[r.model_a]), len(text[r.model_b])
            p_ab, p_ba = a / (a + b), b / (a + b)
            assert math.isclose(r.prob_a, (p_ab + 1 - p_ba) / 2, rel_tol=1e-9)
    else:
        for r in v_loop.itertuples():
            longer = "A" if len(text[r.model_a]) > len(text[r.model_b]) else "B"
            assert r.winner == longer


def test_a_run_opens_the_store_a_few_times_not_once_per_lookup(tmp_path, monkeypatch):
    """A store that lets go of its file between writes (as the judge CLI opens it) pays about 90 ms of
    CPU to open and close it. 1,200 one-call units, with no time-based group window: the store is
    opened for a handful of ticks, each doing all that is due in one session. Fails on main, which
    opened it twice per 64 units pulled (a lookup and a claim, each its own session): 38 times."""
    connects = []
    real = Store._connect
    monkeypatch.setattr(Store, "_connect", lambda self: (connects.append(1), real(self))[1])
    store = Store(tmp_path / "s.duckdb", keep_open=False)
    reqs = [ChatRequest((("user", f"question {i}"),), Decoding(max_tokens=8)) for i in range(1200)]
    with FakeOpenAI() as srv:
        backend = OpenAIBackend("fake", base_url=srv.base_url, api_key="k")
        runner = Runner(store, backend, concurrency=8, record_every_s=60.0)
        connects.clear()
        got = runner.call(reqs)
        assert srv.total == 1200
        backend.close()
    assert all(g is not None for g in got) and runner.stats.made == 1200
    assert len(connects) <= 12, len(connects)
    with store.session():
        stored = store.cursor().execute("SELECT count(DISTINCT call_key) FROM judge_calls").fetchone()[0]
    assert stored == 1200


def test_a_journal_with_no_location_left_says_so_on_every_later_write(tmp_path):
    """Every location failed once: the next write must again be ``JournalUnwritable`` (the runner
    notes it and the store still gets the calls), not an IndexError that ends the run with a
    traceback (what main did, seen when a full disk outlasted a longer group window)."""
    jr = journal.CallJournal(tmp_path / "s.duckdb")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    jr.places = [blocker / "j.jsonl"]  # a file where the folder should be: every write fails
    row = {"call_key": "k1", "text": "x"}
    with pytest.raises(journal.JournalUnwritable):
        jr.record([row])
    with pytest.raises(journal.JournalUnwritable):
        jr.record([{**row, "call_key": "k2"}])


@pytest.mark.parametrize(
    ("urls", "sentence"),
    [
        ("{u},{u}/", "is named twice in --base-url; name each server once."),
        ("{u},localhost:9/v1", "does not start with http:// or https:// and a host."),
    ],
)
def test_a_bad_base_url_list_is_one_sentence_and_nothing_is_sent(tmp_path, urls, sentence):
    """A duplicate (the same server twice would get twice its share and its calls two keys' worth of
    confusion) or a malformed URL: exit 2, one line, no request reaches the server, nothing stored."""
    with FakeOpenAI() as srv:
        out = run_engine(judge_cmd(tmp_path / "b.duckdb", "b", urls.format(u=srv.base_url))[3:])
        assert srv.total == 0
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].endswith(sentence), out.stderr


@pytest.mark.parametrize("concurrency", ["0", "-3"])
def test_concurrency_below_one_is_one_sentence(tmp_path, concurrency):
    with FakeOpenAI() as srv:
        cmd = judge_cmd(tmp_path / "c.duckdb", "c", srv.base_url, "--concurrency", concurrency)
        out = run_engine(cmd[3:])
        assert srv.total == 0
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and lines == ["error: Concurrency must be at least 1."], out.stderr


def test_the_loop_client_refuses_duplicate_servers_before_any_call():
    with pytest.raises(LensError, match="named twice"):
        OpenAIBackend("m", base_url=["http://h:1/v1", "http://h:1/v1/"], api_key="k")
