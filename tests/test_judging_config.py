"""Run configuration: template selection from the command line, judge names that carry template
versions, answer truncation (recorded), and what the call cache keys on.

Expected values are worked out by hand from the scripted server's rules (longer answer wins, so a
cut changes the verdict in a known way) and from the rules the docstrings state.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from conftest import run_engine
from judging_fake_openai import FakeOpenAI, sections

from engine.judging.backends import ChatRequest, Decoding
from engine.judging.cache import call_key
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.persist import write_answers, write_prompts
from engine.judging.pipeline import judge_run
from engine.judging.protocols import ProtocolConfig, cut, default_judge_name
from engine.judging.runner import Runner
from engine.store.connection import Store

REPO = Path(__file__).resolve().parent.parent
SCORE_V2 = '''kind = "score"
user = """Score the answer from 1 to 5 and finish with [[n]].

=== QUESTION ===
{{question}}

=== ANSWER ===
{{answer}}"""
'''
PARAPHRASE_V2 = '''kind = "paraphrase"
user = """Produce {{k}} different rewordings, same meaning. Reply with a JSON array holding exactly {{k}} strings.

<<<TEXT
{{text}}
TEXT>>>"""
'''  # noqa: E501 - a template's text, its first line as a user writes it


def test_default_judge_name_carries_non_default_templates(tmp_path):
    (tmp_path / "pairwise.v2.toml").write_text(
        'kind = "pairwise"\nuser = "{{question}} {{answer_a}} {{answer_b}}"\n'
    )
    (tmp_path / "score.v2.toml").write_text(SCORE_V2)
    base = ProtocolConfig.default(tmp_path)
    assert [default_judge_name("m", p, base) for p in ("single", "swapped", "hybrid", "soft")] == [
        "m:single",
        "m:swapped",
        "m:hybrid",
        "m:soft",
    ]
    v2 = ProtocolConfig.default(tmp_path, pairwise="pairwise@2")
    assert default_judge_name("m", "swapped", v2) == "m:swapped:pairwise@2"
    assert default_judge_name("m", "soft", v2) == "m:soft"  # soft renders the soft template only
    s2 = ProtocolConfig.default(tmp_path, score="score@2")
    assert default_judge_name("m", "hybrid", s2) == "m:hybrid:pairwise@1+score@2"
    assert default_judge_name("m", "swapped", s2) == "m:swapped"


def test_call_key_covers_every_decoding_field_and_the_backend_identity():
    req = ChatRequest((("user", "hi"),), Decoding(), "pairwise", 1)
    keys = {
        call_key("openai", "m", req),
        call_key("openai", "m", ChatRequest(req.messages, Decoding(top_p=1.0), "pairwise", 1)),
        call_key("openai", "m", ChatRequest(req.messages, Decoding(temperature=None), "pairwise", 1)),
        call_key("openai", "m", ChatRequest(req.messages, Decoding(seed=None), "pairwise", 1)),
        call_key(
            "openai",
            "m",
            ChatRequest(req.messages, Decoding(max_tokens_field="max_completion_tokens"), "pairwise", 1),
        ),
        call_key("transformers[cpu,float32]", "m", req),
        call_key("transformers[cuda,bfloat16]", "m", req),
    }
    assert len(keys) == 7


def test_cut_and_truncated_answers_change_what_the_judge_sees(empty_store):
    assert (
        cut("abcdef", 4) == ("abcd", 6)
        and cut("abc", 4) == ("abc", None)
        and cut("abc", None) == ("abc", None)
    )
    answers = {"m1": "short", "m2": "a much longer answer " * 3, "m3": "medium size answer " * 30}
    write_prompts(
        empty_store, "t", pd.DataFrame({"prompt_id": ["p"], "turn": 1, "category": "x", "text": ["q"]})
    )
    write_answers(
        empty_store,
        "t",
        pd.DataFrame([{"prompt_id": "p", "turn": 1, "model": m, "text": t} for m, t in answers.items()]),
    )
    cfg = ProtocolConfig.default(max_answer_chars=40, single_order="AB")
    with FakeOpenAI() as srv:
        runner = Runner(empty_store, OpenAIBackend("fake", base_url=srv.base_url, api_key="k"))
        rep = judge_run(empty_store, "t", runner, protocol="single", cfg=cfg, judge="j")
        shown = [sections(b["messages"][-1]["content"]) for b in srv.bodies]
    # the judge saw at most 40 characters of each answer, the first 40
    for s in shown:
        for key in ("ANSWER A", "ANSWER B"):
            assert len(s[key]) <= 40 and any(t.startswith(s[key]) for t in answers.values())
    assert rep.truncated == 3  # m2 (63 chars) and m3 (570 chars) are cut; every pair has one of them
    v = empty_store.verdicts("t").set_index(["model_a", "model_b"])
    # longer-answer-wins on the cut texts: 5 < 40 → B, 5 < 40 → B, 40 = 40 → tie (uncut, m3 would win)
    assert v.loc[("m1", "m2"), "winner"] == "B" and v.loc[("m1", "m3"), "winner"] == "B"
    assert v.loc[("m2", "m3"), "winner"] == "tie"
    assert v.loc[("m2", "m3"), "explanation"].endswith(
        "[truncated: answer of m2 cut to 40 of 63 characters; answer of m3 cut to 40 of 570 characters]"
    )
    assert "[truncated: answer of m2 cut to 40 of 63 characters]" in v.loc[("m1", "m2"), "explanation"]
    runs = empty_store.cursor().execute("SELECT truncated_pairs, params FROM judge_runs").fetchall()
    assert runs[0][0] == 3


def test_cli_selects_score_and_paraphrase_templates_and_user_versions_need_asking(tmp_path):
    tdir = tmp_path / "templates"
    tdir.mkdir()
    (tdir / "score.v2.toml").write_text(SCORE_V2)
    (tdir / "paraphrase.v2.toml").write_text(PARAPHRASE_V2)
    db = tmp_path / "t.duckdb"
    answers = {"m1": "short", "m2": "x" * 900}  # scores 1 and 3 by the server's length rule
    with Store(db) as st:
        # a position-biased question: both orders say [[A]], so hybrid falls back to 1-5 scores
        write_prompts(
            st, "t", pd.DataFrame({"prompt_id": ["p"], "turn": 1, "category": "x", "text": ["BIASED q"]})
        )
        write_answers(
            st,
            "t",
            pd.DataFrame([{"prompt_id": "p", "turn": 1, "model": m, "text": t} for m, t in answers.items()]),
        )
    base = ["--db", str(db)]
    with FakeOpenAI() as srv:
        be = [
            "--base-url",
            srv.base_url,
            "--model",
            "fake",
            "--no-progress",
            "--format",
            "csv",
            "--templates",
            str(tdir),
        ]
        runs = []
        for extra in ([], ["--score-template", "score@2"]):
            cmd = base + ["judge", "--dataset", "t", "--protocol", "hybrid", *be, *extra]
            out = run_engine(cmd)
            assert out.returncode == 0, out.stderr
            runs.append(pd.read_csv(pd.io.common.StringIO(out.stdout)).iloc[0])
        per = run_engine(
            base + ["perturb", "--dataset", "t", "-k", "2", "--paraphrase-template", "paraphrase@2", *be],
        )
        assert per.returncode == 0, per.stderr
    # the user's score v2 was not used until asked for; the second run reuses the cached pairwise calls
    assert [r.judge for r in runs] == ["fake:hybrid", "fake:hybrid:pairwise@1+score@2"]
    assert [(r.calls_made, r.calls_cached) for r in runs] == [(4, 0), (2, 2)]
    with Store(db) as st:
        used = (
            st.cursor()
            .execute(
                "SELECT template_id, template_version, count(*) FROM judge_calls GROUP BY ALL ORDER BY ALL"
            )
            .fetchall()
        )
        v = st.verdicts("t")
    assert used == [
        ("equivalence", 1, 1),
        ("pairwise", 1, 2),
        ("paraphrase", 2, 1),
        ("score", 1, 2),
        ("score", 2, 2),
    ]
    assert list(v["winner"]) == ["B", "B"] and list(v["judge"]) == [r.judge for r in runs]
