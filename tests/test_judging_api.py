"""The API judging path end to end: real openai client → scripted local HTTP server → DuckDB.

Expected verdicts are recomputed here from the answer texts by the server's documented rules
(longer answer wins, scores from lengths, p = len(first) / (len(first) + len(second))).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI, score_of

from engine.errors import LensError
from engine.graphs.stack import build_stack
from engine.judging.backends import AuthenticationFailed
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.persist import write_answers, write_prompts
from engine.judging.pipeline import judge_run, load_inputs
from engine.judging.protocols import TIE_BAND
from engine.judging.runner import Runner

REPO = Path(__file__).resolve().parent.parent
MODELS = ["alpaca-13b", "gpt-4", "llama-13b"]


def judge_cmd(db, dataset: str, base_url: str, *extra: str, models: str = "gpt-4,llama-13b,alpaca-13b",
              model: str = "fake-judge", limit: str = "1") -> list[str]:
    """A `judge` command line on MT-Bench (one question per category) against an OpenAI-compatible
    server, CSV out, no progress bar; ``extra`` adds options."""
    return [
        sys.executable,
        "-m",
        "engine",
        "--db",
        str(db),
        "judge",
        "--dataset",
        dataset,
        "--inputs",
        "mt_bench",
        "--models",
        models,
        "--limit",
        limit,
        "--backend",
        "openai",
        "--base-url",
        base_url,
        "--model",
        model,
        "--no-progress",
        "--format",
        "csv",
        *extra,
    ]


def _runner(store, server, **kw):
    kw.setdefault("concurrency", 4)
    kw.setdefault("backoff_s", 0.01)
    return Runner(store, OpenAIBackend("fake-judge", base_url=server.base_url, api_key="k"), **kw)


def _answers(store, dataset):
    a = store.answer_texts(dataset)
    return {(r.prompt_id, r.variant, r.model): r.text for r in a.itertuples()}


def _length_winner(a: str, b: str) -> str:
    return "A" if len(a) > len(b) else "B" if len(b) > len(a) else "tie"


def test_swapped_on_mt_bench_matches_rule_and_rerun_is_free(empty_store):
    n_prompts, n_answers = load_inputs(empty_store, "mtb", "mt_bench", models=MODELS, limit_per_category=1)
    assert (n_prompts, n_answers) == (8, 24)  # 8 categories × 1 prompt, 3 models
    with FakeOpenAI() as srv:
        rep = judge_run(empty_store, "mtb", _runner(empty_store, srv), protocol="swapped", judge="fake")
        assert (rep.pairs, rep.verdicts, rep.invalid) == (24, 48, 0)
        assert (rep.stats.made, rep.stats.cached, srv.total) == (48, 0, 48)
        v = empty_store.verdicts("mtb")
        text = _answers(empty_store, "mtb")
        for r in v.itertuples():
            ta, tb = text[(r.prompt_id, 0, r.model_a)], text[(r.prompt_id, 0, r.model_b)]
            assert r.winner == _length_winner(ta, tb)
        assert sorted(v["order"].value_counts().to_dict().items()) == [("AB", 24), ("BA", 24)]
        # rerun: every call is cached, the server sees nothing, and verdicts are replaced, not doubled
        rep2 = judge_run(empty_store, "mtb", _runner(empty_store, srv), protocol="swapped", judge="fake")
        assert (rep2.stats.made, rep2.stats.cached, srv.total) == (0, 48, 48)
        assert len(empty_store.verdicts("mtb")) == 48
    stack = build_stack(empty_store.verdicts("mtb"))
    assert stack.adj.shape == (8, 3, 3)


def _synthetic(store, dataset, questions: dict[str, str]):
    write_prompts(
        store,
        dataset,
        pd.DataFrame(
            {"prompt_id": list(questions), "turn": 1, "category": "x", "text": list(questions.values())}
        ),
    )
    rows = []
    for pid in questions:
        for m, t in (
            ("m1", "short"),
            ("m2", "a much longer answer " * 3),
            ("m3", "medium size answer " * 30),
        ):
            rows.append({"prompt_id": pid, "turn": 1, "model": m, "text": t})
    write_answers(store, dataset, pd.DataFrame(rows))


def test_retries_garbage_and_invalid_storage(empty_store):
    _synthetic(
        empty_store,
        "syn",
        {"p-rate": "RATE429 question", "p-flaky": "FLAKY500 question", "p-junk": "GARBAGE question"},
    )
    with FakeOpenAI() as srv:
        r = _runner(empty_store, srv, max_retries=3)
        rep = judge_run(empty_store, "syn", r, protocol="single", judge="fake")
        # 3 pairs per prompt; the 429 prompt costs one extra attempt per call, the 500 prompt two
        assert rep.stats.retries == 3 * 1 + 3 * 2
        assert srv.statuses[429] == 3 and srv.statuses[500] == 6 and srv.statuses[200] == 9
        v = empty_store.verdicts("syn")
        junk = v[v["prompt_id"] == "p-junk"]
        assert len(junk) == 3 and set(junk["winner"]) == {"invalid"}
        assert junk["explanation"].str.contains("rather not choose").all()  # raw text kept
        ok = v[v["prompt_id"] != "p-junk"]
        assert set(ok["winner"]) <= {"A", "B"} and len(ok) == 6
        text = _answers(empty_store, "syn")
        for r in ok.itertuples():  # whatever order the seeded coin showed, the verdict maps back
            assert r.winner == _length_winner(
                text[(r.prompt_id, 0, r.model_a)], text[(r.prompt_id, 0, r.model_b)]
            )
        assert set(v["order"]) <= {"AB", "BA"}
        attempts = empty_store.cursor().execute("SELECT max(attempts) FROM judge_calls").fetchone()[0]
        assert attempts == 3


def test_retries_exhausted_store_no_verdict(empty_store):
    _synthetic(empty_store, "syn", {"p-flaky": "FLAKY500 question"})
    with FakeOpenAI() as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv, max_retries=1), protocol="single")
        assert rep.stats.failed == 3 and rep.verdicts == 0 and srv.statuses[500] == 6
        assert rep.status == "failed-calls"
        assert empty_store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0] == 0
        # a later run with more patience completes every call (the server now answers 200)
        rep2 = judge_run(empty_store, "syn", _runner(empty_store, srv, max_retries=3), protocol="single")
        assert (rep2.stats.made, rep2.verdicts) == (3, 3)
    runs = empty_store.cursor().execute("SELECT status FROM judge_runs ORDER BY run_id").fetchall()
    assert runs == [("failed-calls",), ("done",)]


def test_authentication_error_stops_clearly(empty_store):
    _synthetic(empty_store, "syn", {"p1": "question"})
    with FakeOpenAI(api_key="right") as srv:
        runner = Runner(
            empty_store, OpenAIBackend("j", base_url=srv.base_url, api_key="wrong"), concurrency=2
        )
        with pytest.raises(AuthenticationFailed, match="refused the API key"):
            judge_run(empty_store, "syn", runner, protocol="single")
        assert isinstance(AuthenticationFailed("x"), LensError)
        assert srv.statuses[429] == srv.statuses[500] == 0 and srv.statuses[401] <= 3
        assert empty_store.cursor().execute("SELECT status FROM judge_runs").fetchone()[0] == "failed"


def test_concurrency_limit_is_respected(empty_store):
    _synthetic(empty_store, "syn", {"p1": "q1", "p2": "q2", "p3": "q3"})
    with FakeOpenAI(delay_s=0.15) as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv, concurrency=3), protocol="swapped")
        assert rep.stats.made == 18
        assert 2 <= srv.max_inflight <= 3


def test_hybrid_falls_back_to_scores_when_orders_disagree(empty_store):
    _synthetic(empty_store, "syn", {"p-ok": "plain question", "p-bias": "BIASED question"})
    with FakeOpenAI() as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv), protocol="hybrid", judge="h")
        # plain: both orders agree (length rule, never a tie here) → no scoring; biased: A then A →
        # disagree → each answer scored once (3 answers; the cache dedupes the same answer across pairs)
        assert rep.stats.made == 2 * 6 + 3
        v = empty_store.verdicts("syn")
        text = _answers(empty_store, "syn")
        for r in v.itertuples():
            ta, tb = text[(r.prompt_id, 0, r.model_a)], text[(r.prompt_id, 0, r.model_b)]
            if r.prompt_id == "p-ok":
                assert r.winner == _length_winner(ta, tb)
            else:
                sa, sb = score_of(ta), score_of(tb)
                assert r.winner == ("A" if sa > sb else "B" if sb > sa else "tie")
        assert len(v) == 6 and v["order"].isna().all()


def test_hybrid_unparsable_output_is_stored_invalid_with_its_text_never_a_tie(empty_store):
    """Hybrid: orders disagree and a score reply has no valid 1-5 tag (``[[s+5]]``), or nothing
    parses at all (GARBAGE): each pair is one ``invalid`` row carrying the raw replies."""
    _synthetic(empty_store, "syn", {"p-bad": "BADSCORE question", "p-junk": "GARBAGE question"})
    with FakeOpenAI() as srv:
        rep = judge_run(empty_store, "syn", _runner(empty_store, srv), protocol="hybrid", judge="h")
        # 2 prompts × 3 pairs × 2 orders, then every answer scored once per prompt (3 + 3)
        assert (rep.stats.made, rep.verdicts, rep.invalid) == (12 + 6, 6, 6)
    v = empty_store.verdicts("syn")
    assert len(v) == 6 and set(v["winner"]) == {"invalid"}
    text = _answers(empty_store, "syn")
    for r in v[v["prompt_id"] == "p-bad"].itertuples():
        # BA says [[A]] = model_b: the orders disagree; the score replies are stored as written
        assert r.explanation.startswith("orders disagree (AB: A, BA: B); unparsable score")
        bad_a = score_of(text[("p-bad", 0, r.model_a)]) + 5
        bad_b = score_of(text[("p-bad", 0, r.model_b)]) + 5
        assert f"--- A ---\nJudging by length alone. Score: [[{bad_a}]]" in r.explanation
        assert f"--- B ---\nJudging by length alone. Score: [[{bad_b}]]" in r.explanation
    for r in v[v["prompt_id"] == "p-junk"].itertuples():
        assert r.explanation.startswith("orders disagree (AB: invalid, BA: invalid); unparsable score")
        assert r.explanation.count("I would rather not choose") == 2
    g = build_stack(v)  # no invalid verdict reaches a graph as a tie
    assert int(g.invalid_only["n_invalid"].sum()) == 6 and g.keys.empty


def test_soft_preference_from_logprobs_averages_both_orders(empty_store):
    _synthetic(empty_store, "syn", {"p1": "question one"})
    with FakeOpenAI() as srv:
        judge_run(empty_store, "syn", _runner(empty_store, srv), protocol="soft", judge="s")
    v = empty_store.verdicts("syn")
    text = _answers(empty_store, "syn")
    assert len(v) == 3
    for r in v.itertuples():
        la, lb = len(text[("p1", 0, r.model_a)]), len(text[("p1", 0, r.model_b)])
        # P_AB = la/(la+lb); P_BA(first=B) = lb/(la+lb); mean(P_AB, 1 - P_BA) = la/(la+lb)
        assert r.prob_a == pytest.approx(la / (la + lb), abs=1e-9)
        expected = "A" if r.prob_a > TIE_BAND[1] else "B" if r.prob_a < TIE_BAND[0] else "tie"
        assert r.winner == expected
    # an API reports only its top k: the letters the soft unit asks for are not sent, not stored and
    # not in the key, so calls cached before the local backend could report them are still hits
    decodings = {d for (d,) in empty_store.cursor().execute("SELECT decoding FROM judge_calls").fetchall()}
    assert len(decodings) == 1 and "logprob_tokens" not in decodings.pop()
    assert all("logprob_tokens" not in body for body in srv.bodies)


def test_swim_uses_log_comparisons(empty_store):
    models = ["alpaca-13b", "claude-v1", "gpt-3.5-turbo", "gpt-4", "llama-13b", "vicuna-13b-v1.3"]
    load_inputs(empty_store, "mtb", "mt_bench", models=models, categories=["writing"], limit_per_category=2)
    with FakeOpenAI() as srv:
        rep = judge_run(
            empty_store, "mtb", _runner(empty_store, srv), protocol="single", schedule="swim", seed=3
        )
    comps = rep.swim.comparisons
    # newcomers meet ceil(max(log2 s, 1)) ranked models for s = 1..5: 1+1+2+2+3 = 9 of the 15 pairs
    assert len(comps) == 9 and len({frozenset(c) for c in comps}) == 9
    assert rep.pairs == 9 * 2 and srv.total == 18
    assert list(rep.swim.join_order[:1]) != [] and set(rep.swim.join_order) == set(models)
    for k, (p, _x) in enumerate(comps):
        assert p in rep.swim.join_order[1:]
        assert k == 0 or rep.swim.join_order.index(p) >= rep.swim.join_order.index(comps[k - 1][0])


def test_cli_judge_and_calls(tmp_path):
    db = tmp_path / "cli.duckdb"
    with FakeOpenAI() as srv:
        cmd = [
            "--db",
            str(db),
            "judge",
            "--dataset",
            "cli",
            "--inputs",
            "mt_bench",
            "--models",
            "gpt-4,llama-13b",
            "--categories",
            "math,coding",
            "--limit",
            "1",
            "--backend",
            "openai",
            "--base-url",
            srv.base_url,
            "--model",
            "fake-judge",
            "--no-progress",
            "--format",
            "csv",
            "--price-in",
            "1000",
            "--price-out",
            "2000",
        ]
        out = run_engine(cmd)
        assert out.returncode == 0, out.stderr
        row = pd.read_csv(pd.io.common.StringIO(out.stdout)).iloc[0]
        assert (row.pairs, row.verdicts, row.calls_made) == (2, 4, 4)
        calls = run_engine(
            [
                "--db",
                str(db),
                "calls",
                "--format",
                "csv",
                "--price",
                "fake-judge=1000,2000",
            ],
        )
        df = pd.read_csv(pd.io.common.StringIO(calls.stdout))
        assert df["calls"].sum() == 4
        assert df["est_cost_usd"].sum() == pytest.approx(row.est_cost_usd, rel=1e-6)
        bad = run_engine(
            cmd[:5]
            + [
                "--protocol",
                "hybrid",
                "--backend",
                "openai",
                "--model",
                "j",
                "--base-url",
                srv.base_url,
                "--template",
                "nosuch",
            ],
        )
        assert (
            bad.returncode == 2
            and bad.stderr.startswith("error: There is no template 'nosuch'")
            and "Traceback" not in bad.stderr
        )


@pytest.mark.parametrize("kill_after", [1, 20, 44])
def test_kill_and_resume_has_no_duplicate_and_no_lost_call(tmp_path, kill_after):
    """SIGKILL once the server has seen ``kill_after`` of the 48 requests (first call, middle, near
    the end), then rerun: nothing doubled, nothing lost, every verdict the length rule's."""
    db = tmp_path / "kill.duckdb"
    with FakeOpenAI(delay_s=0.05) as srv:
        cmd = judge_cmd(db, "k", srv.base_url, "--protocol", "swapped", "--concurrency", "2")
        unique = 8 * 3 * 2  # prompts × pairs × orders
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while srv.total < kill_after and time.time() < deadline:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        seen_first = srv.total
        assert kill_after <= seen_first < unique
        from engine.store.connection import Store

        with Store(db) as st:
            in_store = {r[0] for r in st.cursor().execute("SELECT call_key FROM judge_calls").fetchall()}
        journaled = {json.loads(line)["call_key"] for j in tmp_path.glob("kill.duckdb.calls-*.jsonl")
                     for line in j.read_text().splitlines()}  # fmt: skip
        # every answered call is in the store or in the killed run's journal (issue 23, bug 5): only
        # the calls in flight at the kill (at most --concurrency 2) are lost and made again
        stored = len(in_store | journaled)
        assert seen_first - 2 <= stored <= seen_first
        srv.delay_s = 0.0  # the slow replies only kept the kill inside the run; the resume needs none
        out = run_engine(cmd[3:])  # the resume: the killed process was the second one
        assert out.returncode == 0, out.stderr
        row = pd.read_csv(pd.io.common.StringIO(out.stdout)).iloc[0]
        assert row.calls_cached == stored and row.calls_made == unique - stored
        assert srv.total == seen_first + (unique - stored)
    with Store(db) as st:
        n_calls = st.cursor().execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
        v = st.verdicts("k")
        runs = st.cursor().execute("SELECT status, calls_made FROM judge_runs ORDER BY run_id").fetchall()
    assert n_calls == (unique, unique)
    # the killed run was left 'running'; the next start marked it interrupted
    assert runs == [("interrupted", 0), ("done", unique - stored)]
    assert len(v) == unique and not v.duplicated(["prompt_id", "model_a", "model_b", "order"]).any()
    with Store(db) as st:
        text = _answers(st, "k")
    for r in v.itertuples():  # the resumed dataset is the right one, not only the right size
        assert r.winner == _length_winner(
            text[(r.prompt_id, 0, r.model_a)], text[(r.prompt_id, 0, r.model_b)]
        )


def test_perturb_keeps_checked_rewrites_with_lineage_then_generate_answers(empty_store):
    from engine.judging.generate import generate_answers
    from engine.judging.paraphrase import lineage, perturb
    from engine.judging.templates import get_template

    load_inputs(empty_store, "p", "mt_bench", models=["gpt-4"], categories=["writing"], limit_per_category=2)
    with FakeOpenAI() as srv:
        runner = _runner(empty_store, srv)
        rep = perturb(empty_store, "p", runner, 3, get_template("paraphrase"), get_template("equivalence"))
        # the checker says YES to candidates 1 and 3 of 3: two variants per prompt
        assert (rep.prompts, rep.candidates, rep.accepted) == (2, 6, 4) and srv.total == 4
        prompts = empty_store.prompt_texts("p")
        para = prompts[prompts["variant_kind"] == "paraphrase"]
        assert sorted(para["variant"]) == [1, 1, 2, 2] and (para["parent_variant"] == 0).all()
        for r in para.itertuples():
            orig = prompts[(prompts["prompt_id"] == r.prompt_id) & (prompts["variant"] == 0)]["text"].iloc[0]
            assert r.text == f"{orig} (rewording {2 * r.variant - 1})"
        lin = lineage(empty_store, "p")
        assert list(lin["candidate_index"]) == [0, 2, 0, 2]
        keys = set(empty_store.cursor().execute("SELECT call_key FROM judge_calls").df()["call_key"])
        assert set(lin["generator_call"]) | set(lin["check_call"]) <= keys
        # rerun: cached, same variants, nothing doubled
        rep2 = perturb(empty_store, "p", runner, 3, get_template("paraphrase"), get_template("equivalence"))
        assert rep2.accepted == 4 and srv.total == 4 and len(empty_store.prompt_texts("p")) == 6
        out = generate_answers(
            empty_store, "p", runner, get_template("answer"), model_name="target", variants=[1, 2]
        )
        assert len(out) == 4 and srv.total == 8
        ans = empty_store.answer_texts("p")
        assert len(ans[ans["model"] == "target"]) == 4


def test_cli_perturb_generate_and_runs(tmp_path):
    db = tmp_path / "pg.duckdb"
    base = ["--db", str(db)]
    with FakeOpenAI() as srv:
        be = [
            "--backend",
            "openai",
            "--base-url",
            srv.base_url,
            "--model",
            "fake",
            "--no-progress",
            "--format",
            "csv",
        ]
        load = run_engine(
            base
            + [
                "judge",
                "--dataset",
                "pg",
                "--inputs",
                "mt_bench",
                "--models",
                "gpt-4,llama-13b",
                "--categories",
                "stem",
                "--limit",
                "1",
                *be,
            ],
        )
        assert load.returncode == 0, load.stderr
        per = run_engine(
            base + ["perturb", "--dataset", "pg", "-k", "2", *be],
        )
        assert per.returncode == 0, per.stderr
        row = pd.read_csv(pd.io.common.StringIO(per.stdout)).iloc[0]
        assert (row.prompts, row.candidates, row.accepted) == (1, 2, 1)
        gen = run_engine(
            base + ["generate", "--dataset", "pg", "--variants", "1", "--as-model", "gpt-4", *be],
        )
        assert gen.returncode == 0, gen.stderr
        assert pd.read_csv(pd.io.common.StringIO(gen.stdout)).iloc[0].answers == 1
        runs = run_engine(
            base + ["calls", "--runs", "--format", "csv"],
        )
        df = pd.read_csv(pd.io.common.StringIO(runs.stdout))
        assert list(df["kind"]) == ["judge", "perturb", "generate"] and set(df["status"]) == {"done"}
        assert list(df["calls_made"]) == [2, 2, 1]


def test_several_base_urls_share_the_load(empty_store):
    _synthetic(empty_store, "syn", {"p1": "q1", "p2": "q2"})
    with FakeOpenAI() as s1, FakeOpenAI() as s2:
        backend = OpenAIBackend("fake", base_url=f"{s1.base_url},{s2.base_url}", api_key="k")
        rep = judge_run(empty_store, "syn", Runner(empty_store, backend, concurrency=1), protocol="swapped")
        assert rep.stats.made == 12 and (s1.total, s2.total) == (6, 6)


def test_the_store_is_readable_while_a_judge_run_writes_to_it(tmp_path):
    """`judge` lets go of the DuckDB file between its writes, so another process (the app) can
    read the growing dataset during the run; the reader sees verdicts before the run ends.

    The reader reads every 0.1 s while the run writes; from the 41st of the 48 calls (so at
    least 16 pairs are done, their verdicts due within the writer's 2 s), the server holds the rest until a
    read has seen them, so a read inside the run does not depend on the machine's speed (the run's replies
    took 0.25 s each before, about 14 s of waiting)."""
    from engine.store.connection import Store

    db = tmp_path / "live.duckdb"
    unique = 8 * 3 * 2  # prompts × pairs × orders
    with FakeOpenAI(delay_s=0.02, gate_after=40) as srv:
        cmd = judge_cmd(db, "live", srv.base_url, "--protocol", "swapped", "--concurrency", "2")
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen_during_run = []
        deadline = time.time() + 120
        try:
            while proc.poll() is None and time.time() < deadline:
                if db.exists() and srv.total >= 4:
                    store = Store(db, keep_open=False, lock_wait_s=30)
                    with store.session():
                        n = (
                            store.cursor()
                            .execute("SELECT count(*) FROM verdicts WHERE dataset = 'live'")
                            .fetchone()[0]
                        )
                        status = store.cursor().execute("SELECT max(status) FROM judge_runs").fetchone()[0]
                    if proc.poll() is None and status == "running":
                        seen_during_run.append(n)
                        if n > 0:
                            srv.gate.set()  # a read inside the run saw verdicts: let it finish
                time.sleep(0.1)
        finally:
            srv.gate.set()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert seen_during_run, "the store could not be read while the run was going"
    assert max(seen_during_run) > 0 and min(seen_during_run) < unique  # partial results, read mid-run
    with Store(db) as st:
        assert len(st.verdicts("live")) == unique


def test_two_judge_processes_on_one_store(tmp_path):
    """Two `judge` processes on one store file: a second run making the same calls (same dataset,
    backend and model) is refused with one sentence and writes nothing, so no call is paid twice;
    a run with another judge model on the same dataset goes ahead beside it, both finish, and the
    store holds each (model, messages) call once."""
    from engine.store.connection import Store

    db = tmp_path / "two.duckdb"
    unique = 8 * 3 * 2  # prompts × pairs × orders
    with FakeOpenAI() as srv:

        def cmd(model: str, limit: str = "1") -> list[str]:
            return judge_cmd(db, "two", srv.base_url, "--protocol", "swapped", "--concurrency", "2",
                             model=model, limit=limit)

        def models_seen() -> set[str]:
            with srv.lock:
                return {body["model"] for body in srv.bodies}

        srv.gate.clear()  # replies wait until both runs are under way
        first = subprocess.Popen(
            cmd("judge-a"), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.time() + 240  # generous: three interpreters start on a possibly busy machine
        while "judge-a" not in models_seen() and time.time() < deadline:  # recorded and calling
            time.sleep(0.01)
        # the same calls again, with --limit 2 so that any input it wrote would show as 16 prompts
        same = subprocess.run(
            cmd("judge-a", limit="2"), cwd=REPO, capture_output=True, text=True, timeout=120
        )
        other = subprocess.Popen(
            cmd("judge-b"), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        while "judge-b" not in models_seen() and time.time() < deadline:
            time.sleep(0.01)
        # both were running side by side (the gate holds their replies for up to five minutes)
        assert first.poll() is None and other.poll() is None, (first.poll(), other.poll())
        srv.gate.set()
        out_first, err_first = first.communicate(timeout=120)
        out_other, err_other = other.communicate(timeout=120)
    assert same.returncode == 2 and same.stdout == ""
    lines = same.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: Run 1 (judge of dataset 'two' with openai model 'judge-a'"
    )
    assert "still running on this store" in lines[0] and "Traceback" not in same.stderr
    assert first.returncode == 0, err_first
    assert other.returncode == 0, err_other
    a = pd.read_csv(pd.io.common.StringIO(out_first)).iloc[0]
    b = pd.read_csv(pd.io.common.StringIO(out_other)).iloc[0]
    assert (a.status, a.calls_made, a.verdicts) == ("done", unique, unique)
    assert (b.status, b.calls_made, b.verdicts) == ("done", unique, unique)
    # the server saw every (model, messages) exactly once: 2 models × 48 calls, nothing repeated
    sent = pd.Series([(body["model"], str(body["messages"])) for body in srv.bodies])
    assert len(sent) == 2 * unique and not sent.duplicated().any()
    with Store(db) as st:
        cur = st.cursor()
        assert cur.execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone() == (
            96,
            96,
        )
        assert cur.execute("SELECT count(*) FROM prompts WHERE dataset = 'two'").fetchone()[0] == 8
        runs = cur.execute("SELECT model, status FROM judge_runs ORDER BY model").fetchall()
        v = st.verdicts("two")
    assert runs == [("judge-a", "done"), ("judge-b", "done")]  # the refused run left no row
    assert len(v) == 2 * unique
    assert not v.duplicated(["judge", "prompt_id", "model_a", "model_b", "order"]).any()


def test_calls_counts_tokens_and_cost_match_the_store_and_the_server(tmp_path):
    """`calls` and `calls --runs` against a direct SQL count, the fake server's own counts and
    token rules (prompt tokens len(user) // 4, completion max(1, len(text) // 4)), and the prices."""
    from engine.store.connection import Store

    db = tmp_path / "calls.duckdb"
    hawaii = "travel blog post about a recent trip to Hawaii"  # prompt 81 only: 3 pairs × 2 orders fail

    def judge(url: str) -> subprocess.CompletedProcess:
        return run_engine(
            judge_cmd(db, "c", url, "--max-retries", "1", "--backoff", "0.01", "--price-in", "1000",
                      "--price-out", "2000")[3:],
        )  # fmt: skip

    def engine(*args: str) -> pd.DataFrame:
        out = run_engine(["--db", str(db), *args, "--format", "csv"])
        assert out.returncode == 0, out.stderr
        return pd.read_csv(pd.io.common.StringIO(out.stdout))

    with FakeOpenAI(fail_if=hawaii) as bad:
        first = judge(bad.base_url)
    with FakeOpenAI(port=bad.port) as good:  # the same address (the server is part of a call's key)
        second = judge(good.base_url)
    assert first.returncode == 1 and second.returncode == 0, second.stderr
    r1 = pd.read_csv(pd.io.common.StringIO(first.stdout)).iloc[0]
    r2 = pd.read_csv(pd.io.common.StringIO(second.stdout)).iloc[0]
    assert (r1.status, r1.calls_made, r1.calls_cached, r1.calls_failed) == ("failed-calls", 42, 0, 6)
    assert (r2.status, r2.calls_made, r2.calls_cached, r2.calls_failed) == ("done", 6, 42, 0)
    assert bad.statuses == {200: 42, 500: 12} and good.statuses == {200: 6}  # 6 calls × 2 attempts
    runs = engine("calls", "--runs")
    assert runs[["status", "calls_made", "calls_cached", "calls_failed"]].values.tolist() == [
        ["failed-calls", 42, 0, 6],
        ["done", 6, 42, 0],
    ]
    summary = engine("calls", "--price", "fake-judge=1000,2000")
    with Store(db) as st:
        sql = (
            st.cursor()
            .execute("SELECT count(*), sum(prompt_tokens), sum(completion_tokens) FROM judge_calls")
            .fetchone()
        )
        stored = st.cursor().execute("SELECT messages, text FROM judge_calls").fetchall()
    # the server's token rule applied to what was asked and answered
    ptok = sum(len(json.loads(m)[-1]["content"]) // 4 for m, _ in stored)
    ctok = sum(max(1, len(t) // 4) for _, t in stored)
    assert len(summary) == 1 and summary.iloc[0][
        ["calls", "prompt_tokens", "completion_tokens"]
    ].tolist() == [
        48,
        ptok,
        ctok,
    ]
    assert sql == (48, ptok, ctok)
    assert r1.calls_made + r2.calls_made == bad.statuses[200] + good.statuses[200] == 48
    cost = (ptok * 1000 + ctok * 2000) / 1e6
    assert summary.iloc[0]["est_cost_usd"] == pytest.approx(cost, rel=1e-9)
    assert r1.est_cost_usd + r2.est_cost_usd == pytest.approx(cost, abs=2e-6)  # each rounded to 1e-6


def test_a_run_on_shipped_mt_bench_answers_keeps_their_model_map(tmp_path):
    """``judge --dataset my-run --inputs mt_bench``: the dataset keeps the shipped MT-Bench model map as its
    own (it placed 2 of the 6 models on the reference: the others' names differ from the Arena's), so
    ``datasets map`` places every judged model as the shipped map says, as a dataset named mt_bench is placed
    through the shipped map by its name. Only the load that creates the dataset keeps it: a cleared map
    stays cleared, and a map the dataset already has is left as it is."""
    import io

    from engine.ranking.reference import load_mapping
    from engine.store.connection import Store

    db = tmp_path / "lens.duckdb"
    six = "gpt-4,claude-v1,gpt-3.5-turbo,vicuna-13b-v1.3,alpaca-13b,llama-13b"
    shipped = load_mapping("mt_bench").set_index("model")["arena_model"].fillna("")
    with FakeOpenAI() as srv:
        for name in ("my-run", "mt_bench"):
            out = run_engine(judge_cmd(db, name, srv.base_url, "--protocol", "single", models=six)[3:])
            assert out.returncode == 0, out.stderr
        placed = {}
        for name in ("my-run", "mt_bench"):
            table = pd.read_csv(io.StringIO(run_engine(["--db", str(db), "datasets", "map", name, "--format",
                                                        "csv"], check=True).stdout))
            placed[name] = dict(zip(table["model"], table["reference_model"].fillna(""), strict=True))
        assert placed["my-run"] == placed["mt_bench"] == {m: shipped[m] for m in six.split(",")}
        with Store(db) as store:  # kept once: a map is there now (and mt_bench reaches it by its name)
            from engine.judging.inputs import MT_BENCH_DIR
            from engine.judging.pipeline import keep_shipped_map

            assert not keep_shipped_map(store, "my-run", MT_BENCH_DIR)
            assert not keep_shipped_map(store, "mt_bench", MT_BENCH_DIR)
        run_engine(["--db", str(db), "datasets", "map", "my-run", "--clear"], check=True)
        again = run_engine(judge_cmd(db, "my-run", srv.base_url, "--protocol", "single", models=six)[3:])
        assert again.returncode == 0, again.stderr
        with Store(db) as store:  # a cleared map stays cleared: only a dataset the load creates gets it
            from engine.store.model_maps import stored_map

            assert stored_map(store, "my-run").empty
        (tmp_path / "own.csv").write_text("model,arena_model\ngpt-4,gpt-4-0613\n")
        run_engine(judge_cmd(db, "mine", srv.base_url, "--protocol", "single", models="gpt-4,llama-13b")[3:],
                   check=True)
        run_engine(["--db", str(db), "datasets", "map", "mine", str(tmp_path / "own.csv")], check=True)
        run_engine(judge_cmd(db, "mine", srv.base_url, "--protocol", "single", models="gpt-4,llama-13b")[3:],
                   check=True)
        with Store(db) as store:
            from engine.store.model_maps import stored_map

            assert stored_map(store, "mine").to_dict("records") == [{"model": "gpt-4",
                                                                       "reference_model": "gpt-4-0613"}]


def test_turn_two_is_judged_on_its_conversation(tmp_path):
    """``judge --turn 2 --inputs mt_bench``: one verdict per prompt (8 categories x 1, one pair, single), all
    of turn 2. Every request shows the whole conversation: both questions (the first before the second) and,
    in each answer section, one model's own turn-1 answer before its turn-2 answer (read independently from
    data/mt_bench's files); each stored winner is the model the fake server's rule (the longer answer
    section) picks for that request."""
    import json as jsonlib

    from judging_fake_openai import sections

    from engine.judging.inputs import MT_BENCH_DIR
    from engine.store.connection import Store

    two = ["gpt-4", "llama-13b"]
    questions = {str(q["question_id"]): q["turns"] for q in map(jsonlib.loads,
                 (MT_BENCH_DIR / "question.jsonl").read_text().splitlines()) if q}
    answers = {(m, str(a["question_id"])): a["choices"][0]["turns"] for m in two
               for a in map(jsonlib.loads,
                            (MT_BENCH_DIR / "model_answer" / f"{m}.jsonl").read_text().splitlines())}
    db = tmp_path / "lens.duckdb"
    with FakeOpenAI() as srv:
        out = run_engine(judge_cmd(db, "t2", srv.base_url, "--protocol", "single", "--turn", "2",
                                   models=",".join(two))[3:])
        assert out.returncode == 0, out.stderr
        bodies = list(srv.bodies)
    want = {}
    for body in bodies:
        s = sections(body["messages"][-1]["content"])
        (qid,) = [q for q, t in questions.items() if t[1] in s["QUESTION"]]
        assert s["QUESTION"].index(questions[qid][0]) < s["QUESTION"].index(questions[qid][1])
        side = {}
        for name in ("ANSWER A", "ANSWER B"):
            (side[name],) = [m for m in two if answers[(m, qid)][1] in s[name]]
            first, second = answers[(side[name], qid)]
            assert s[name].index(first) < s[name].index(second)
        a, b = s["ANSWER A"], s["ANSWER B"]
        want[qid] = side["ANSWER A"] if len(a) > len(b) else side["ANSWER B"] if len(b) > len(a) else "tie"
    with Store(db) as store:
        v = store.verdicts("t2")
    assert len(v) == len(bodies) == 8 and set(v["turn"]) == {2}
    got = {r.prompt_id: (r.model_a if r.winner == "A" else r.model_b if r.winner == "B" else "tie")
           for r in v.itertuples()}
    assert got == want


def test_a_later_turn_leaves_out_what_its_conversation_lacks_and_refuses_what_it_cannot_do(empty_store,
                                                                                          tmp_path):
    """``build_jobs(turn=2)`` judges a prompt only where it has both questions and both models answered both
    turns (one prompt lacks its first question, one model its first answer on another); SWIM, a replay and a
    turn below 1 are refused in one sentence each."""
    from engine.judging.pipeline import build_jobs

    write_prompts(empty_store, "c", pd.DataFrame({
        "prompt_id": ["p1", "p1", "p2", "p3", "p3"], "turn": [1, 2, 2, 1, 2], "category": "x",
        "text": ["q1a", "q1b", "q2b", "q3a", "q3b"]}))
    write_answers(empty_store, "c", pd.DataFrame(
        [{"prompt_id": p, "turn": t, "model": m, "text": f"{m}-{p}-{t}"} for p in ("p1", "p2", "p3")
         for t in (1, 2) for m in ("m1", "m2") if not (p == "p3" and m == "m2" and t == 1)]))
    jobs = build_jobs(empty_store, "c", models=["m1", "m2"], turn=2)
    assert [(j.prompt_id, j.turn) for j in jobs] == [("p1", 2)]
    job = jobs[0]
    assert job.question.index("q1a") < job.question.index("q1b")
    assert job.answer_a.index(f"{job.model_a}-p1-1") < job.answer_a.index(f"{job.model_a}-p1-2")
    assert job.model_b not in job.answer_a and f"{job.model_b}-p1-2" in job.answer_b
    # turn 1: p2 has no first question, p3 no first answer of m2
    assert [(j.prompt_id, j.turn) for j in build_jobs(empty_store, "c", models=["m1", "m2"])] == [("p1", 1)]
    db = str(empty_store.path)
    empty_store.close()
    server = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k"]
    for args, sentence in (
        (["--dataset", "c", "--turn", "2", "--schedule", "swim"], "works with the round-robin schedule"),
        (["--dataset", "c", "--inputs", "mt_bench", "--turn", "0"], "--turn must be 1 or more, not 0."),
        (["--dataset", "out", "--turn", "2", "--backend", "replay", "--from-dataset", "c", "--select",
          "random", "--budget", "2"], "a replay answers with the source's stored verdicts"),
    ):
        out = run_engine(["--db", db, "judge", *args, *server])
        assert out.returncode == 2 and sentence in out.stderr and out.stderr.count("\n") == 1, out.stderr
