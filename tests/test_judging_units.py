"""Parsing, templates, the call cache, verdict replacement and the schedulers, each checked
against a value computed another way (hand-written expectations, choix, brute force)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from engine.errors import LensError
from engine.judging.backends import ChatRequest, ChatResult, Decoding
from engine.judging.cache import CallCache, call_key
from engine.judging.parsing import parse_json_array, parse_score, parse_verdict, soft_preference
from engine.judging.persist import write_verdicts
from engine.judging.protocols import ROW_COLUMNS, soft_winner
from engine.judging.schedule import bt_scores, round_robin_pairs, swim
from engine.judging.templates import get_template, list_templates, parse_template_ref


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Use [[A]] or [[B]]. I pick [[B]]", "B"),
        ("Final:\n[[TIE]]", "tie"),
        ("[[B]] at first, then on reflection [[A]]", "A"),
        # only the exact, case-sensitive tags the shipped template asks for count
        ("Use arr[c] here", None),
        ("[[A]] is my verdict. Note B's code uses dp[b] wrongly.", "A"),
        ("verdict: [A]", None),
        ("[[tie]]", None),
        ("[[a]]", None),
        ("Final: [[C]]", None),
        ("[[ A ]]", None),
        ("A is better.", None),
        ("[[D]]", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_verdict_takes_last_exact_tag(text, expected):
    assert parse_verdict(text) == expected
    assert parse_verdict(text, get_template("pairwise").tag_map) == expected  # the template's own tags


def test_a_template_declares_its_tags_and_the_parser_uses_them(tmp_path):
    (tmp_path / "mtb.v1.toml").write_text(
        'kind = "pairwise"\nuser = "{{question}} {{answer_a}} {{answer_b}}"\n'
        '[tags]\n"[[A]]" = "A"\n"[[B]]" = "B"\n"[[C]]" = "tie"\n'
    )
    t = get_template("mtb", user_dir=tmp_path)
    assert t.tag_map == {"[[A]]": "A", "[[B]]": "B", "[[C]]": "tie"}
    assert parse_verdict("I pick [[C]]", t.tag_map) == "tie"
    assert parse_verdict("I pick [[TIE]]", t.tag_map) is None  # not one of this template's tags
    assert parse_verdict("I pick [[C]]") is None  # nor of the shipped one
    (tmp_path / "bad.v1.toml").write_text(
        'kind = "pairwise"\nuser = "x"\n[tags]\n"[[A]]" = "A"\n"[[X]]" = "x"\n'
    )
    with pytest.raises(LensError, match="tags must mean A, B, tie"):
        list_templates(tmp_path)


def test_parse_score_and_json_array():
    assert parse_score("maybe [[2]] ... final [[5]]") == 5
    assert parse_score("[[6]] or [0]") is None
    assert parse_score("[4] out of five") is None and parse_score("score: [[ 4 ]]") is None
    assert parse_score("arr[3] then [[3]]") == 3
    assert parse_json_array('```json\n["a", "b"]\n```', 2) == ["a", "b"]
    assert parse_json_array('Sure: ["YES","NO","YES"] done', 3) == ["YES", "NO", "YES"]
    assert parse_json_array('["a"]', 2) is None
    assert parse_json_array("not json [", None) is None


def test_soft_preference_is_a_softmax_over_the_letters():
    la, lb = math.log(0.6), math.log(0.3)
    assert soft_preference(({"A": la, " B": lb, "x": math.log(0.1)},)) == pytest.approx(0.6 / 0.9)
    # the letters appear only at the second position: the first one is skipped
    assert soft_preference(({"[[": -0.1, "The": -3.0}, {"B": la, "A": lb})) == pytest.approx(0.3 / 0.9)
    # a letter missing from the top list is bounded by the smallest listed probability
    assert soft_preference(({"A": math.log(0.9), "z": math.log(0.01)},)) == pytest.approx(0.9 / 0.91)
    assert soft_preference(({"x": -1.0},)) is None and soft_preference(None) is None
    # the article " a" is not the letter A: only whole tokens, case-sensitive, count
    top = {"The": -0.5, " a": -1.0, " B": -2.0, "A": -3.0}
    assert soft_preference((top,)) == pytest.approx(math.exp(-3) / (math.exp(-3) + math.exp(-2)))
    assert soft_preference(
        ({" b": -0.1, "a": -0.2, "Apple": -0.3, "[[B]]": -1.0, "A": -2.0},)
    ) == pytest.approx(math.exp(-2) / (math.exp(-2) + math.exp(-1)))
    assert [soft_winner(p) for p in (0.53, 0.525, 0.5, 0.475, 0.47)] == ["A", "tie", "tie", "tie", "B"]


def test_templates_render_select_and_user_dir(tmp_path):
    t = get_template("pairwise")
    msgs = t.render(question="What is {x}?", answer_a="{{answer_b}}", answer_b="b")
    assert msgs[0][0] == "system" and "What is {x}?" in msgs[1][1]
    assert "{{answer_b}}" in msgs[1][1]  # values are inserted once, never re-expanded
    with pytest.raises(LensError, match="needs a value for 'answer_b'"):
        t.render(question="q", answer_a="a")
    (tmp_path / "pairwise.v2.toml").write_text(
        'kind = "pairwise"\nuser = "Q: {{question}} A: {{answer_a}} B: {{answer_b}}"\n'
    )
    # a user file with a shipped id and a higher version is used only when asked for by version
    assert get_template("pairwise", user_dir=tmp_path).version == 1
    assert get_template("pairwise", user_dir=tmp_path).shipped
    assert get_template("pairwise", 2, user_dir=tmp_path).version == 2
    assert not get_template("pairwise", 2, user_dir=tmp_path).shipped
    (tmp_path / "mine.v1.toml").write_text('kind = "answer"\nuser = "{{question}}"\n')
    (tmp_path / "mine.v3.toml").write_text('kind = "answer"\nuser = "Q: {{question}}"\n')
    assert get_template("mine", user_dir=tmp_path).version == 3  # a user-only id: its highest version
    assert parse_template_ref("pairwise@2") == ("pairwise", 2)
    (tmp_path / "score.v1.toml").write_text('kind = "score"\nuser = "x"\n')
    with pytest.raises(LensError, match="exists twice"):
        list_templates(tmp_path)
    with pytest.raises(LensError, match="is a score template"):
        get_template("score", kind="pairwise")


def test_call_key_changes_with_every_part():
    req = ChatRequest((("user", "hi"),), Decoding(), "pairwise", 1)
    base = call_key("openai", "m", req)
    assert base == call_key("openai", "m", ChatRequest((("user", "hi"),), Decoding(), "pairwise", 1))
    variants = [
        call_key("transformers", "m", req),
        call_key("openai", "m2", req),
        call_key("openai", "m", ChatRequest((("user", "hi!"),), Decoding(), "pairwise", 1)),
        call_key("openai", "m", ChatRequest((("user", "hi"),), Decoding(max_tokens=5), "pairwise", 1)),
        call_key("openai", "m", ChatRequest((("user", "hi"),), Decoding(), "pairwise", 2)),
        call_key("openai", "m", ChatRequest((("user", "hi"),), Decoding(), "other", 1)),
    ]
    assert len({base, *variants}) == 7


def test_soft_letters_are_keyed_only_for_a_backend_that_reports_them(empty_store):
    """The soft unit asks for its letters' logprobs (``logprob_tokens``). An API backend cannot
    report them, so the runner drops the field: its key is the canonical JSON of the six decoding
    fields, exactly as before the field existed (recomputed here by hand), and old cached calls
    still hit. For the local backend the letters change what is stored, so they change the key."""
    import hashlib
    import json

    from engine.judging.openai_backend import OpenAIBackend
    from engine.judging.runner import Runner

    dec = Decoding(max_tokens=3, top_logprobs=10, logprob_tokens=("A", "B"))
    req = ChatRequest((("user", "hi"),), dec, "soft", 1)
    canonical = {
        "backend": "openai",
        "model": "m",
        "template": ["soft", 1],
        "messages": [["user", "hi"]],
        "decoding": {
            "temperature": 0.0, "max_tokens": 3, "top_p": None, "top_logprobs": 10, "seed": 0,
            "max_tokens_field": "max_tokens",
        },
    }  # fmt: skip
    def by_hand(doc: dict) -> str:
        return hashlib.sha256(
            json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
        ).hexdigest()

    api = Runner(empty_store, OpenAIBackend("m", base_url="http://user:SECRET@127.0.0.1:9/v1/", api_key="k"))
    # the server (without its credentials or trailing slash) is part of the key; the pre-040 key is not
    assert api.key(req) == by_hand({**canonical, "server": "http://127.0.0.1:9/v1"})
    assert api.legacy_key(req) == by_hand(canonical)
    assert api.normalise(req).decoding.logprob_tokens == ()
    plain = ChatRequest((("user", "hi"),), Decoding(max_tokens=3, top_logprobs=10), "soft", 1)
    local = "transformers[cpu,float32]"
    assert call_key(local, "m", req) != call_key(local, "m", plain)
    assert dec.as_dict()["logprob_tokens"] == ["A", "B"] and "logprob_tokens" not in plain.decoding.as_dict()


def test_cache_round_trip_and_no_double_insert(empty_store):
    cache = CallCache(empty_store)
    req = ChatRequest((("user", "hi"),), Decoding(top_logprobs=2), "soft", 1)
    res = ChatResult("A", ({"A": -0.1, "B": -2.3},), 10, 1, 0.5)
    k = call_key("openai", "m", req)
    cache.put(k, "openai", "m", req, res, None)
    cache.put(k, "openai", "m", req, res, None)
    got = cache.get_many([k, "missing"])
    assert list(got) == [k] and got[k].top_logprobs == res.top_logprobs and got[k].text == "A"
    assert empty_store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0] == 1
    # several calls in one transaction: the repeated key is ignored, the stored values read back
    more = [ChatRequest((("user", f"q{i}"),), Decoding(), "pairwise", 1) for i in range(3)]
    batch = [
        (call_key("openai", "m", r), r, ChatResult(f"t{i}", None, i, 2 * i, 0.25, 1 + i))
        for i, r in enumerate(more)
    ]
    cache.put_many(batch + [(k, req, ChatResult("other", None))], "openai", "m", 7)
    got = cache.get_many([b[0] for b in batch] + [k])
    assert [got[b[0]] for b in batch] == [b[2] for b in batch] and got[k].text == "A"
    rows = (
        empty_store.cursor()
        .execute("SELECT count(*), count(run_id), sum(run_id) FROM judge_calls")
        .fetchone()
    )
    assert rows == (4, 3, 21)


def test_write_verdicts_replaces_a_pairs_rows(empty_store):
    def rows(winners):
        return pd.DataFrame(
            [
                {
                    "prompt_id": "1",
                    "variant": 0,
                    "variant_kind": "original",
                    "turn": 1,
                    "category": "c",
                    "model_a": "x",
                    "model_b": "y",
                    "winner": w,
                    "order": o,
                    "prob_a": None,
                    "explanation": "t",
                }
                for w, o in winners
            ],
            columns=ROW_COLUMNS,
        )

    write_verdicts(empty_store, "d", "j", rows([("A", "AB"), ("B", "BA")]), source="s")
    v0 = empty_store.dataset_version("d")
    write_verdicts(empty_store, "d", "j", rows([("tie", "AB"), ("invalid", "BA")]), source="s")
    v = empty_store.verdicts("d")
    assert sorted(v["winner"]) == ["invalid", "tie"] and empty_store.dataset_version("d") > v0
    write_verdicts(empty_store, "d", "other-judge", rows([("A", "AB")]), source="s")
    assert len(empty_store.verdicts("d")) == 3


def _random_verdicts(models, seed, n=300):
    rng = np.random.default_rng(seed)
    strength = dict(zip(models, rng.normal(size=len(models)), strict=True))
    rows = []
    for _ in range(n):
        a, b = rng.choice(models, 2, replace=False)
        p = 1 / (1 + math.exp(strength[b] - strength[a]))
        u = rng.random()
        rows.append(
            {"model_a": a, "model_b": b, "winner": "tie" if abs(u - p) < 0.05 else ("A" if u < p else "B")}
        )
    return pd.DataFrame(rows)


def test_bt_scores_match_choix_on_half_ties():
    choix = pytest.importorskip("choix")
    models = ["a", "b", "c", "d", "e"]
    v = _random_verdicts(models, seed=1)
    ours = bt_scores(models, v, prior=0.0)
    idx = {m: i for i, m in enumerate(models)}
    data = []  # doubled counts: a win twice, a tie once each way (same MLE as W + T/2)
    for r in v.itertuples():
        i, j = idx[r.model_a], idx[r.model_b]
        if r.winner == "A":
            data += [(i, j), (i, j)]
        elif r.winner == "B":
            data += [(j, i), (j, i)]
        else:
            data += [(i, j), (j, i)]
    ref = choix.ilsr_pairwise(len(models), data, alpha=0.0, max_iter=10_000, tol=1e-12)
    np.testing.assert_allclose(ours, ref - ref.mean(), atol=1e-6)


def test_round_robin_and_swim_counts():
    models = [f"m{i}" for i in range(9)]
    assert round_robin_pairs(models) == list(combinations(models, 2))
    calls = []

    def judge_pair(p, x):
        calls.append((p, x))
        return pd.DataFrame([{"model_a": p, "model_b": x, "winner": "A" if p > x else "B"}])

    res = swim(models, judge_pair, seed=7)
    expected = sum(math.ceil(max(math.log2(s), 1)) for s in range(1, 9))
    assert len(calls) == expected == len(res.comparisons)
    # every opponent had joined before the newcomer, and no pair is judged twice
    pos = {m: i for i, m in enumerate(res.join_order)}
    assert all(pos[x] < pos[p] for p, x in res.comparisons)
    assert len({frozenset(c) for c in res.comparisons}) == len(res.comparisons)
    assert set(res.scores.index) == set(models)
    assert res.comparisons == swim(models, judge_pair, seed=7).comparisons  # seeded: reproducible


def test_swim_picks_the_closest_bt_score_after_the_first_opponent():
    models = [f"m{i}" for i in range(8)]
    rng = np.random.default_rng(0)
    strength = dict(zip(models, rng.normal(size=8), strict=True))

    def judge_pair(p, x):  # 5 prompts, noisy but deterministic given the pair
        r = np.random.default_rng(abs(hash((p, x))) % 2**32)
        pw = 1 / (1 + math.exp(strength[x] - strength[p]))
        return pd.DataFrame(
            [{"model_a": p, "model_b": x, "winner": "A" if r.random() < pw else "B"} for _ in range(5)]
        )

    cache = {}

    def memo(p, x):
        cache.setdefault((p, x), judge_pair(p, x))
        return cache[(p, x)]

    res = swim(models, memo, seed=11)
    # replay: after a newcomer's first (random) opponent, each next opponent must be the ranked model
    # (not yet met) whose BT score, fitted on all verdicts so far, is closest to the newcomer's
    seen = []
    for k, (p, o) in enumerate(res.comparisons):
        first = k == 0 or res.comparisons[k - 1][0] != p
        if not first:
            ranked = list(res.join_order[: res.join_order.index(p)])
            group = ranked + [p]
            beta = dict(zip(group, bt_scores(group, pd.concat(seen, ignore_index=True)), strict=True))
            met = {x for q, x in res.comparisons[:k] if q == p}
            best = min((m for m in ranked if m not in met), key=lambda m: (abs(beta[m] - beta[p]), m))
            assert o == best
        seen.append(cache[(p, o)])


def test_single_protocol_order_flip_is_seeded_and_balanced():
    from engine.judging.protocols import PairJob, shown_second

    jobs = [PairJob(str(i), 0, 1, None, "original", "q", "a", "b", "x", "y") for i in range(400)]
    flips = [shown_second(j, 0) for j in jobs]
    assert flips == [shown_second(j, 0) for j in jobs]  # reproducible
    assert flips != [shown_second(j, 1) for j in jobs]  # the seed matters
    assert 160 <= sum(flips) <= 240  # about half (binomial(400, 1/2): ±4 sd)


def test_start_run_refuses_a_clashing_run_of_a_live_process(empty_store):
    """A run left ``running`` by another live process (a real one here) blocks only a run that
    would make the same calls (same kind, dataset, backend, model) or a second perturb of the
    dataset; once that process is gone the run is marked interrupted and nothing is refused."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    from engine.judging.persist import RunInProgress, start_run

    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        host = socket.gethostname()
        with empty_store.transaction() as cur:
            for kind, model in (("judge", "m"), ("perturb", "x")):
                cur.execute(
                    "INSERT INTO judge_runs (kind, dataset, backend, model, params, pid, host)"
                    " VALUES (?, 'd', 'openai', ?, '{}', ?, ?)",
                    [kind, model, other.pid, host],
                )
        fine = [
            ("judge", "d", "openai", "m2"),  # another model: other calls
            ("judge", "e", "openai", "m"),  # another dataset
            ("generate", "d", "openai", "m"),  # another kind: other templates
            ("judge", "d", "transformers", "m"),  # another backend
        ]
        for args in fine:
            start_run(empty_store, *args, None, {})
        for args, run_id in ((("judge", "d", "openai", "m"), 1), (("perturb", "d", "openai", "y"), 2)):
            with pytest.raises(
                RunInProgress, match=rf"^Run {run_id} \({args[0]} of dataset 'd' .*process {other.pid}\)"
            ):
                start_run(empty_store, *args, None, {})
        n = empty_store.cursor().execute("SELECT count(*) FROM judge_runs").fetchone()[0]
        assert n == 2 + len(fine)  # the refused runs were not recorded
    finally:
        os.kill(other.pid, signal.SIGKILL)
        other.wait()
    run_id = start_run(empty_store, "judge", "d", "openai", "m", None, {})
    status = dict(empty_store.cursor().execute("SELECT run_id, status FROM judge_runs").fetchall())
    assert status[1] == status[2] == "interrupted" and status[run_id] == "running"
