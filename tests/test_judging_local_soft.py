"""The local judge's soft protocol and budgeted passes on the real SmolLM2-135M (CPU, offline): one
forward pass per prompt with shared prefixes reused equals a plain forward pass per prompt, budgeted
generation equals one-at-a-time, and the stored soft verdicts equal the three-token generation path.
(Split from test_judging_local.py; the two files run on one worker, one after the other, and share the
loaded model: tests/conftest.py ONE_WORKER.)
"""

from __future__ import annotations

import pytest
from conftest import SMOL_QUESTIONS

from engine.judging.backends import ChatRequest, Decoding
from engine.judging.pipeline import judge_run, load_inputs
from engine.judging.protocols import ProtocolConfig
from engine.judging.runner import Runner


def _mt_bench_soft_requests(cfg, n_prompts: int, chars: int, per_prompt: int = 6) -> list[ChatRequest]:
    """The soft prompts of a round robin over three MT-Bench models, both orders (answers cut): the
    first ``per_prompt`` of each question's six."""
    from dataclasses import replace

    from engine.judging import inputs as inp
    from engine.judging.schedule import round_robin_pairs

    folder = inp.resolve_inputs("mt_bench")
    q = inp.read_questions(folder)
    models = ["alpaca-13b", "gpt-4", "llama-13b"]
    text = {(r.prompt_id, r.model): r.text[:chars] for r in inp.read_answers(folder, models).itertuples()}
    dec = replace(cfg.soft_decoding, logprob_tokens=("A", "B"), max_tokens=1)
    t = cfg.soft
    orders = [(x, y) for a, b in round_robin_pairs(models) for x, y in ((a, b), (b, a))][:per_prompt]
    return [
        ChatRequest(
            t.render(question=p.text, answer_a=text[(p.prompt_id, x)], answer_b=text[(p.prompt_id, y)]),
            dec,
            t.id,
            t.version,
        )
        for p in list(q.itertuples())[:n_prompts]
        for x, y in orders
    ]


def _plain_next_token_logprobs(smol, req: ChatRequest):
    """log-softmax of the next-token logits after one prompt alone: a plain forward pass (transformers
    applies the output layer to the last position only, as that is the one read)."""
    import torch

    ids = smol.tokenizer.apply_chat_template(
        req.message_dicts(), add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    with torch.inference_mode():
        return torch.log_softmax(smol.lm(**ids, logits_to_keep=1).logits[0, -1].double(), -1)


def test_soft_passes_with_shared_prefixes_equal_plain_forward_passes(smol, monkeypatch):
    """8 soft prompts (2 questions x the first 4 of their 3 pairs x 2 orders): one budgeted call with
    prefix reuse gives the letters' logprobs of a plain forward pass over each prompt alone (to 1e-4),
    the same first token, and no pass of more than one row over the budget.

    Answers are cut to 30 characters (200 until issue 26's second round: about 30 % fewer tokens,
    as the template and the question make most of each prompt); 4 prompts a question (6 until round 39:
    each prompt's plain pass cost ~0.5 s of CPU); the passes keep their shape: two prefix groups of four
    (one per question), each split by the budget into a pass of three rows of two lengths and a pass of
    one, so a cache reused across groups, a cache changed by its first pass, and left padding are all
    still exercised."""
    import torch

    reqs = _mt_bench_soft_requests(ProtocolConfig.default(), 2, 30, per_prompt=4)
    budget = 500
    monkeypatch.setattr(smol, "token_budget", budget)
    monkeypatch.setattr(smol, "passes", [])
    monkeypatch.setattr(smol, "prefix_tokens_saved", 0)
    monkeypatch.setattr(smol, "tokens_in", 0)
    got = smol.complete(reqs)
    assert smol.prefix_tokens_saved > 0  # prefixes were reused
    assert [rows for rows, _ in smol.passes] == [1, 3, 1, 1, 3, 1]  # the shape the docstring relies on
    lengths = [len(x) for x in smol._token_ids(reqs)]
    assert len(set(lengths[:3])) > 1 and len(set(lengths[4:7])) > 1  # each 3-row pass is left-padded
    assert any(rows > 1 for rows, _ in smol.passes)  # and several prompts shared a pass
    assert all(tokens <= budget or rows == 1 for rows, tokens in smol.passes)
    # the tokens fed to the model (counted from the passes' inputs) are the prompts' tokens less
    # the prefix tokens not recomputed (counted from the groups)
    assert smol.tokens_in == sum(lengths) - smol.prefix_tokens_saved < sum(lengths)
    spell = smol.spellings(("A", "B"))
    for req, res in zip(reqs, got, strict=True):
        lp = _plain_next_token_logprobs(smol, req)
        assert res.completion_tokens == 1 and len(res.top_logprobs) == 1
        assert res.text == smol.tokenizer.decode([int(lp.argmax())], skip_special_tokens=True)
        for text, ids in spell.items():
            assert res.top_logprobs[0][text] == pytest.approx(float(torch.logsumexp(lp[ids], -1)), abs=1e-4)
    # without the prefix cache: the same numbers, from plain budgeted passes (the first question's four
    # prompts: a left-padded pass of three rows and one of one; all eight cost a third of this test's CPU)
    monkeypatch.setattr(smol, "prefix_cache", False)
    monkeypatch.setattr(smol, "passes", [])
    plain = smol.complete(reqs[:4])
    assert [rows for rows, _ in smol.passes] == [3, 1]
    for a, b in zip(got[:4], plain, strict=True):
        assert a.text == b.text
        for k in spell:
            assert a.top_logprobs[0][k] == pytest.approx(b.top_logprobs[0][k], abs=1e-4)


def test_generation_passes_respect_the_budget_and_equal_one_at_a_time(smol, smol_alone, monkeypatch):
    reqs = [ChatRequest((("user", q),), Decoding(max_tokens=6)) for q in SMOL_QUESTIONS]
    single = smol_alone(reqs)
    lengths = [len(x) for x in smol._token_ids(reqs)]
    budget = 3 * (max(lengths) + 6)  # at most three rows of the longest, plus their new tokens
    monkeypatch.setattr(smol, "token_budget", budget)
    monkeypatch.setattr(smol, "passes", [])
    out = smol.complete(reqs)
    assert [r.text for r in out] == single
    assert len(smol.passes) >= 2 and sum(rows for rows, _ in smol.passes) == len(reqs)
    assert all(tokens <= budget for _, tokens in smol.passes)


def test_soft_verdicts_equal_the_three_token_generation_path(smol, empty_store):
    """The soft run (one forward pass per prompt, prefixes reused) stores the verdicts that today's
    path gives: generate 3 tokens with the letters at each step, read the first position. Answers are
    cut to 60 characters (500 before issue 24, 250 before issue 26's second round: the length is not
    what is compared, and each of the 18 prompts costs a forward pass of the model on one CPU thread)."""
    from engine.judging.parsing import soft_preference
    from engine.judging.protocols import soft_winner

    load_inputs(
        empty_store,
        "one",
        "mt_bench",
        models=["alpaca-13b", "gpt-4", "llama-13b"],
        categories=["writing"],
        limit_per_category=1,
    )
    chars = 60
    cfg = ProtocolConfig.default(max_answer_chars=chars)
    rep = judge_run(empty_store, "one", Runner(empty_store, smol), protocol="soft", cfg=cfg, judge="s")
    assert (rep.pairs, rep.invalid, rep.stats.made) == (3, 0, 6)
    decs = empty_store.cursor().execute("SELECT DISTINCT decoding FROM judge_calls").fetchall()
    assert len(decs) == 1 and '"max_tokens": 1' in decs[0][0]
    v = empty_store.verdicts("one")
    prompts, answers = empty_store.prompt_texts("one"), empty_store.answer_texts("one")
    q = prompts.iloc[0]["text"]
    text = {m: t[:chars] for m, t in zip(answers["model"], answers["text"], strict=True)}
    old = Decoding(max_tokens=3, top_logprobs=10, logprob_tokens=("A", "B"))
    for r in v.itertuples():
        ab, ba = smol._generate(
            [
                ChatRequest(cfg.soft.render(question=q, answer_a=x, answer_b=y), old, "soft", 1)
                for x, y in ((text[r.model_a], text[r.model_b]), (text[r.model_b], text[r.model_a]))
            ]
        )
        p = (
            soft_preference(ab.top_logprobs, cfg.soft.tag_map)
            + 1
            - soft_preference(ba.top_logprobs, cfg.soft.tag_map)
        ) / 2
        assert r.prob_a == pytest.approx(p, abs=1e-4) and r.winner == soft_winner(p)


def test_the_prefix_cache_goes_by_the_keyword_transformers_names_with_the_same_numbers(smol, monkeypatch):
    """The shared prefix's keys and values reach the model under the keyword the installed transformers
    names (``cache`` from 5.2x; ``past_key_values`` before, and deprecated since, with a FutureWarning):
    no deprecation warning is raised, and the letters' logits after two prompts that continue a cached
    prefix are bit for bit those of the deprecated keyword's pass (the same DynamicCache object). A
    keyword the model does not know would be swallowed by its ``**kwargs`` and the prefix not seen: the
    third comparison, against a pass over each whole prompt, catches that (to 1e-4)."""
    import inspect
    import warnings

    import torch

    from engine.judging.local_backend import cache_keyword

    assert cache_keyword(smol.lm) == (
        "cache" if "cache" in inspect.signature(smol.lm.forward).parameters else "past_key_values"
    )
    reqs = [ChatRequest((("user", q),), Decoding(max_tokens=1)) for q in SMOL_QUESTIONS[:2]]
    a, b = smol._token_ids(reqs)
    p = next(k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)  # the shared prefix
    assert p >= 16
    monkeypatch.setattr(smol, "passes", [])

    def last_logits():
        with torch.inference_mode():
            return smol._last_logits([a[p:], b[p:]], p, smol._prefix_cache(a[:p]))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new = last_logits()
    assert not [w for w in caught if "past_key_values" in str(w.message)], [str(w.message) for w in caught]
    monkeypatch.setattr(smol, "_cache_kw", "past_key_values")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        old = last_logits()
    assert torch.equal(new, old)
    with torch.inference_mode():
        whole = [smol.lm(input_ids=torch.tensor([x]), logits_to_keep=1).logits[0, -1] for x in (a, b)]
    for got, want in zip(new, whole, strict=True):
        assert torch.allclose(torch.log_softmax(got.double(), -1), torch.log_softmax(want.double(), -1),
                              atol=1e-4)
