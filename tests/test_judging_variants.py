"""Paraphrase variants stay stable across perturb reruns (answers and verdicts refer to them).

The scripted server rewrites a text k ways as "<text> (rewording i)", i = 1..k, and its checker says
YES to odd-numbered candidates. So with k = 3 the accepted rewrites are 1 and 3 (variants 1 and 2),
with k = 1 only rewording 1 (already variant 1), with k = 5 rewordings 1, 3 and 5 (the last new).
"""

from __future__ import annotations

import pandas as pd
from judging_fake_openai import FakeOpenAI

from engine.judging.generate import generate_answers
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.paraphrase import lineage, perturb
from engine.judging.pipeline import judge_run, load_inputs
from engine.judging.runner import Runner
from engine.judging.templates import get_template

GEN, CHK, ANS = get_template("paraphrase"), get_template("equivalence"), get_template("answer")


def _runner(store, srv, model="fake", **kw):
    kw.setdefault("backoff_s", 0.01)
    return Runner(store, OpenAIBackend(model, base_url=srv.base_url, api_key="k"), **kw)


def _snapshot(store, ds):
    p = store.prompt_texts(ds)[["prompt_id", "variant", "turn", "variant_kind", "text"]]
    a = store.answer_texts(ds)[["prompt_id", "variant", "model", "text"]]
    v = store.verdicts(ds)[
        ["verdict_id", "prompt_id", "variant", "model_a", "model_b", "winner", "explanation"]
    ]
    return p.reset_index(drop=True), a.reset_index(drop=True), v.reset_index(drop=True)


def test_perturb_reruns_never_renumber_or_rewrite_variants(empty_store):
    st = empty_store
    load_inputs(st, "p", "mt_bench", models=["gpt-4"], categories=["writing"], limit_per_category=2)
    orig = {r.prompt_id: r.text for r in st.prompt_texts("p").itertuples()}
    with FakeOpenAI() as srv:
        rep3 = perturb(st, "p", _runner(st, srv), 3, GEN, CHK)
        assert (rep3.accepted, rep3.added) == (4, 4)
        # two targets answer variants 1 and 2, and a judge compares them
        for name in ("target-a", "target-b"):
            generate_answers(st, "p", _runner(st, srv, model=name), ANS, model_name=name, variants=[1, 2])
        judge_run(st, "p", _runner(st, srv), protocol="swapped", models=["target-a", "target-b"], judge="j")
        before = _snapshot(st, "p")
        assert len(before[2]) == 2 * 2 * 2  # 2 prompts × variants 1, 2 × both orders

        rep1 = perturb(st, "p", _runner(st, srv), 1, GEN, CHK)
        assert (rep1.accepted, rep1.added) == (2, 0)  # rewording 1 is variant 1 already
        after = _snapshot(st, "p")
        for b, a in zip(before, after, strict=True):
            pd.testing.assert_frame_equal(b, a)  # variant 2, its answers and verdicts all remain

        rep5 = perturb(st, "p", _runner(st, srv), 5, GEN, CHK)
        assert (rep5.accepted, rep5.added) == (6, 2)
        prompts = st.prompt_texts("p")
        para = prompts[prompts["variant_kind"] == "paraphrase"]
        expected = {
            (pid, v): f"{orig[pid]} (rewording {i})" for pid in orig for v, i in ((1, 1), (2, 3), (3, 5))
        }
        assert {(r.prompt_id, r.variant): r.text for r in para.itertuples()} == expected
        lin = lineage(st, "p")
        assert list(lin["variant"]) == [1, 2, 3, 1, 2, 3] and list(lin["candidate_index"]) == [0, 2, 4] * 2
        kept = _snapshot(st, "p")
        pd.testing.assert_frame_equal(before[1], kept[1])
        pd.testing.assert_frame_equal(before[2], kept[2])

    # a failed equivalence check (every attempt a 500) changes nothing, nor does a failed generation
    for k, fail_if in ((4, "candidate rewordings"), (6, "Produce 6 different")):
        with FakeOpenAI(fail_if=fail_if) as srv:
            runner = _runner(st, srv, max_retries=1)
            rep = perturb(st, "p", runner, k, GEN, CHK)
            assert rep.added == 0 and runner.stats.failed == 2
        for b, a in zip(kept, _snapshot(st, "p"), strict=True):
            pd.testing.assert_frame_equal(b, a)


def test_new_variant_numbers_skip_numbers_used_by_answers_or_verdicts(empty_store):
    st = empty_store
    load_inputs(st, "p", "mt_bench", models=["gpt-4"], categories=["writing"], limit_per_category=1)
    pid = st.prompt_texts("p")["prompt_id"].iloc[0]
    # an answer to variant 7 whose prompt row is gone (e.g. from an older tool): 7 must not be reused
    st.cursor().execute("INSERT INTO answers VALUES ('p', ?, 7, 1, 'x', 'old answer')", [pid])
    with FakeOpenAI() as srv:
        rep = perturb(st, "p", _runner(st, srv), 3, GEN, CHK)
    assert sorted(rep.variants["variant"]) == [8, 9]


def test_perturb_names_its_columns_so_a_later_migration_cannot_shift_them(empty_store):
    """A migration that adds a column to prompts or variant_lineage (here: one with a default, added
    last) must leave perturb's rows intact: a positional INSERT ... SELECT would fail on the column
    count, or with a column in the middle put each value under the wrong name."""
    st = empty_store
    load_inputs(st, "p", "mt_bench", models=["gpt-4"], categories=["writing"], limit_per_category=1)
    orig = {r.prompt_id: r.text for r in st.prompt_texts("p").itertuples()}
    st.cursor().execute("ALTER TABLE prompts ADD COLUMN note VARCHAR DEFAULT 'later migration'")
    st.cursor().execute("ALTER TABLE variant_lineage ADD COLUMN reviewed BOOLEAN DEFAULT false")
    with FakeOpenAI() as srv:
        rep = perturb(st, "p", _runner(st, srv), 3, GEN, CHK)
    assert (rep.accepted, rep.added) == (2, 2)  # rewordings 1 and 3 (odd ones pass the check)
    para = st.prompt_texts("p").query("variant_kind == 'paraphrase'")
    pid = next(iter(orig))
    assert {(r.variant, r.text, r.parent_variant, r.note) for r in para.itertuples()} == {
        (1, f"{orig[pid]} (rewording 1)", 0, "later migration"),
        (2, f"{orig[pid]} (rewording 3)", 0, "later migration"),
    }
    lin = lineage(st, "p")
    assert list(lin["candidate_index"]) == [0, 2] and list(lin["reviewed"]) == [False, False]
