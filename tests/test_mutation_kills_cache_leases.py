"""The judge-call cache (mutation pass survivors): the persisted call key's canonical form, a stored
call read back field for field, a renewed lease holding off another owner, and the cost estimate;
each against a hand-written value or the write it reads back."""

from __future__ import annotations

import hashlib

import pytest

from engine.judging.backends import ChatRequest, ChatResult, Decoding
from engine.judging.cache import CallCache, call_key, call_rows, call_summary


def _req(text: str) -> ChatRequest:
    return ChatRequest((("user", text),), Decoding(), "pairwise", 1)


def test_the_call_key_is_the_sha256_of_the_canonical_request():
    # keys are stored in users' stores: the canonical form (keys sorted at every level, no spaces,
    # UTF-8 as is) written out by hand; any other serialisation would re-pay every cached call
    payload = (
        '{"backend":"openai","decoding":{"max_tokens":512,"max_tokens_field":"max_tokens","seed":0,'
        '"temperature":0.0,"top_logprobs":0,"top_p":null},"messages":[["user","é q"]],"model":"m",'
        '"server":"http://h:1/v1","template":["pairwise",1]}'
    )
    expected = hashlib.sha256(payload.encode("utf-8")).hexdigest()
    assert call_key("openai", "m", _req("é q"), "http://h:1/v1") == expected


def test_a_stored_call_reads_back_as_it_was_written(empty_store):
    cache = CallCache(empty_store)
    results = {
        "k-zero": ChatResult("[[A]]", None, 0, 0, 0.0, 1),
        "k-some": ChatResult("[[B]]", ({"A": -0.5},), 11, 7, 0.25, 3),
    }
    calls = [(k, _req(k), r) for k, r in results.items()]
    cache.put_rows(call_rows(calls, "openai", "m", None, None))
    assert CallCache(empty_store).get_many(list(results)) == results


def test_a_renewed_lease_still_holds_off_another_owner(empty_store):
    first, second = CallCache(empty_store), CallCache(empty_store)
    claimed, held = first.claim(["k1", "k2"])
    assert (claimed, held) == ({"k1", "k2"}, set())
    first.renew()
    assert second.claim(["k1", "k2", "k3"]) == ({"k3"}, {"k1", "k2"})
    first.release(["k1"])
    assert second.claim(["k1", "k2"]) == ({"k1"}, {"k2"})


def test_the_cost_estimate_is_tokens_times_the_price_per_million(empty_store):
    cache = CallCache(empty_store)
    calls = [(f"k{i}", _req(f"q{i}"), ChatResult("x", None, 1000 * (i + 1), 10 * (i + 1))) for i in range(3)]
    cache.put_rows(call_rows(calls, "openai", "m", None, None))
    summary = call_summary(empty_store, {"m": (2.5, 10.0)})
    pt, ct = 1000 * (1 + 2 + 3), 10 * (1 + 2 + 3)
    assert summary["prompt_tokens"].sum() == pt
    assert summary["est_cost_usd"].sum() == pytest.approx(pt * 2.5 / 1e6 + ct * 10.0 / 1e6, rel=1e-12)
    assert call_summary(empty_store)["est_cost_usd"].sum() == 0.0
