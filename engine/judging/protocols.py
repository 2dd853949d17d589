"""Judge protocols: how one pair of answers becomes verdict rows, batched over many pairs.

- ``single``: one pairwise prompt; one row. The presentation order is a seeded coin flip per pair
  (``single_order="random"``, the default) or always model_a first (``"AB"``), recorded in ``order``.
- ``swapped``: the pairwise prompt in both orders; two rows (``AB`` and ``BA``), each mapped back to
  the models' identities. The graph builder combines them (agree → that winner, disagree → tie), as
  DESIGN.md says; paper 002, Appendix P, and paper 001, Section 3.3.
- ``hybrid``: both orders; if they agree that verdict stands, else each answer is scored 1–5 on its
  own and the higher score wins, equal scores a tie (paper 000, Appendix C.1). One row.
- ``soft``: a one-letter prompt in both orders; prob_a is the mean of P(A better) read from the
  verdict tokens' logprobs over the two orders (paper 001, Sections 3.1 and 3.3); the hard winner
  uses paper 001's tie band 0.475 ≤ prob_a ≤ 0.525. One row.

Unparsable outputs give ``invalid`` rows carrying the raw text, never ties. Calls that failed
after all retries give no row (a rerun makes them), so nothing false is stored.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import pandas as pd

from ..errors import LensError
from .backends import ChatRequest, ChatResult, Decoding
from .parsing import parse_score, parse_verdict, soft_preference
from .runner import Runner
from .templates import Template, get_template

PROTOCOLS = ("single", "swapped", "hybrid", "soft")
TIE_BAND = (0.475, 0.525)
_SWAP = {"A": "B", "B": "A", "tie": "tie"}
ROW_COLUMNS = [
    "prompt_id",
    "variant",
    "variant_kind",
    "turn",
    "category",
    "model_a",
    "model_b",
    "winner",
    "order",
    "prob_a",
    "explanation",
]


@dataclass(frozen=True)
class PairJob:
    """One comparison to judge: a prompt instance and two models' answers to it."""

    prompt_id: str
    variant: int
    turn: int
    category: str | None
    variant_kind: str
    question: str
    model_a: str
    model_b: str
    answer_a: str
    answer_b: str


@dataclass(frozen=True)
class ProtocolConfig:
    """Templates and decoding for a protocol; defaults are the shipped templates, greedy decoding."""

    pairwise: Template
    score: Template
    soft: Template
    decoding: Decoding = Decoding(max_tokens=256)
    soft_decoding: Decoding = Decoding(max_tokens=3, top_logprobs=10)
    score_decoding: Decoding = Decoding(max_tokens=192)
    single_order: str = "random"  # or "AB"
    seed: int = 0

    @classmethod
    def default(
        cls, user_dir=None, pairwise: str = "pairwise", version: int | None = None, **kw
    ) -> ProtocolConfig:
        return cls(
            pairwise=get_template(pairwise, version, kind="pairwise", user_dir=user_dir),
            score=get_template("score", kind="score", user_dir=user_dir),
            soft=get_template("soft", kind="soft", user_dir=user_dir),
            **kw,
        )


def _pair_request(t: Template, dec: Decoding, q: str, first: str, second: str) -> ChatRequest:
    return ChatRequest(t.render(question=q, answer_a=first, answer_b=second), dec, t.id, t.version)


def _row(job: PairJob, winner: str, order: str | None, prob_a: float | None, explanation: str | None) -> dict:
    return {
        "prompt_id": job.prompt_id,
        "variant": job.variant,
        "variant_kind": job.variant_kind,
        "turn": job.turn,
        "category": job.category,
        "model_a": job.model_a,
        "model_b": job.model_b,
        "winner": winner,
        "order": order,
        "prob_a": prob_a,
        "explanation": explanation,
    }


def _both_orders(
    jobs: list[PairJob], cfg: ProtocolConfig, runner: Runner, t: Template, dec: Decoding, desc: str
):
    reqs = []
    for j in jobs:
        reqs.append(_pair_request(t, dec, j.question, j.answer_a, j.answer_b))
        reqs.append(_pair_request(t, dec, j.question, j.answer_b, j.answer_a))
    res = runner.call(reqs, desc=desc)
    return res[0::2], res[1::2]


def _hard(res: ChatResult | None, swapped: bool) -> str | None:
    if res is None:
        return None
    v = parse_verdict(res.text)
    if v is None:
        return None
    return _SWAP[v] if swapped else v


def shown_second(job: PairJob, seed: int) -> bool:
    """Seeded coin flip per pair instance: True means model_a is shown second (order ``BA``)."""
    key = f"{seed}|{job.prompt_id}|{job.variant}|{job.turn}|{job.model_a}|{job.model_b}"
    return hashlib.sha256(key.encode("utf-8")).digest()[0] & 1 == 1


def judge_single(jobs, cfg, runner) -> list[dict]:
    if cfg.single_order not in ("random", "AB"):
        raise LensError(f"single_order must be 'random' or 'AB', not {cfg.single_order!r}.")
    flips = [cfg.single_order == "random" and shown_second(j, cfg.seed) for j in jobs]
    reqs = [
        _pair_request(
            cfg.pairwise,
            cfg.decoding,
            j.question,
            *((j.answer_b, j.answer_a) if f else (j.answer_a, j.answer_b)),
        )
        for j, f in zip(jobs, flips, strict=True)
    ]
    res = runner.call(reqs, "single")
    return [
        _row(j, _hard(r, f) or "invalid", "BA" if f else "AB", None, r.text)
        for j, f, r in zip(jobs, flips, res, strict=True)
        if r is not None
    ]


def judge_swapped(jobs, cfg, runner) -> list[dict]:
    ab, ba = _both_orders(jobs, cfg, runner, cfg.pairwise, cfg.decoding, "swapped")
    rows = []
    for j, r1, r2 in zip(jobs, ab, ba, strict=True):
        if r1 is not None:
            rows.append(_row(j, _hard(r1, False) or "invalid", "AB", None, r1.text))
        if r2 is not None:
            rows.append(_row(j, _hard(r2, True) or "invalid", "BA", None, r2.text))
    return rows


def judge_hybrid(jobs, cfg, runner) -> list[dict]:
    ab, ba = _both_orders(jobs, cfg, runner, cfg.pairwise, cfg.decoding, "hybrid: both orders")
    rows, fallback = [], []
    for j, r1, r2 in zip(jobs, ab, ba, strict=True):
        if r1 is None or r2 is None:
            continue  # a failed call: no row; a rerun completes it
        v1, v2 = _hard(r1, False), _hard(r2, True)
        if v1 is not None and v1 == v2:
            rows.append(_row(j, v1, None, None, f"both orders: {v1}\n--- AB ---\n{r1.text}"))
        else:
            fallback.append((j, v1, v2, r1))
    if fallback:
        t, dec = cfg.score, cfg.score_decoding
        reqs = []
        for j, *_ in fallback:
            reqs.append(ChatRequest(t.render(question=j.question, answer=j.answer_a), dec, t.id, t.version))
            reqs.append(ChatRequest(t.render(question=j.question, answer=j.answer_b), dec, t.id, t.version))
        res = runner.call(reqs, desc="hybrid: scoring")
        for (j, v1, v2, _r1), sa, sb in zip(fallback, res[0::2], res[1::2], strict=True):
            if sa is None or sb is None:
                continue
            a, b = parse_score(sa.text), parse_score(sb.text)
            head = f"orders disagree (AB: {v1 or 'invalid'}, BA: {v2 or 'invalid'})"
            if a is None or b is None:
                rows.append(
                    _row(
                        j,
                        "invalid",
                        None,
                        None,
                        f"{head}; unparsable score\n--- A ---\n{sa.text}\n--- B ---\n{sb.text}",
                    )
                )
                continue
            winner = "A" if a > b else "B" if b > a else "tie"
            rows.append(
                _row(
                    j,
                    winner,
                    None,
                    None,
                    f"{head}; scores A={a}, B={b}\n--- A ---\n{sa.text}\n--- B ---\n{sb.text}",
                )
            )
    return rows


def soft_winner(prob_a: float, band: tuple[float, float] = TIE_BAND) -> str:
    """Hard label from a soft preference: inside the tie band (inclusive) is a tie."""
    if prob_a > band[1]:
        return "A"
    if prob_a < band[0]:
        return "B"
    return "tie"


def judge_soft(jobs, cfg, runner) -> list[dict]:
    if cfg.soft_decoding.top_logprobs < 2:
        raise LensError("The soft protocol needs top_logprobs of at least 2.")
    ab, ba = _both_orders(jobs, cfg, runner, cfg.soft, cfg.soft_decoding, "soft")
    rows = []
    for j, r1, r2 in zip(jobs, ab, ba, strict=True):
        if r1 is None or r2 is None:
            continue
        p1, p2 = soft_preference(r1.top_logprobs), soft_preference(r2.top_logprobs)
        if p1 is None or p2 is None:
            rows.append(
                _row(
                    j,
                    "invalid",
                    None,
                    None,
                    f"no A/B token probabilities\n--- AB ---\n{r1.text}\n--- BA ---\n{r2.text}",
                )
            )
            continue
        p = min(1.0, max(0.0, (p1 + (1.0 - p2)) / 2.0))
        rows.append(
            _row(j, soft_winner(p), None, p, f"P(A) shown first {p1:.4f}; shown second {1.0 - p2:.4f}")
        )
    return rows


_DISPATCH = {"single": judge_single, "swapped": judge_swapped, "hybrid": judge_hybrid, "soft": judge_soft}


def run_protocol(protocol: str, jobs: list[PairJob], cfg: ProtocolConfig, runner: Runner) -> pd.DataFrame:
    """Judge ``jobs`` with ``protocol``; verdict rows (ROW_COLUMNS) for every pair whose calls completed."""
    if protocol not in _DISPATCH:
        raise LensError(f"Unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}.")
    rows = _DISPATCH[protocol](jobs, cfg, runner) if jobs else []
    return pd.DataFrame(rows, columns=ROW_COLUMNS)


def with_decoding(cfg: ProtocolConfig, **changes) -> ProtocolConfig:
    """A config whose pairwise decoding has ``changes`` applied (e.g. max_tokens)."""
    return replace(cfg, decoding=replace(cfg.decoding, **changes))
