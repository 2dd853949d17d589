"""Judge protocols: how one pair of answers becomes verdict rows.

Each protocol is a *unit* per pair (see ``runner``): a generator that yields the requests it needs,
receives their results, maybe asks again, and returns the pair's rows. The runner drives all pairs
through one pool, so the hybrid protocol's scoring calls overlap with other pairs' first calls.

- ``single``: one pairwise prompt; one row. The presentation order is a seeded coin flip per pair
  (``single_order="random"``, the default) or always model_a first (``"AB"``), recorded in ``order``.
- ``swapped``: the pairwise prompt in both orders; two rows (``AB`` and ``BA``), each mapped back to
  the models' identities. The graph builder combines them (agree → that winner, disagree → tie), as
  README.md, "Data format", says; paper 002, Appendix P, and paper 001, Section 3.4 (position switching).
- ``hybrid``: both orders; if they agree that verdict stands, else each answer is scored 1–5 on its
  own and the higher score wins, equal scores a tie (paper 000, Appendix C.1). One row.
- ``soft``: a one-letter prompt in both orders; prob_a is the mean of P(A better) read from the
  verdict tokens' logprobs over the two orders (paper 001, Sections 3.1 and 3.3); the hard winner
  uses paper 001's tie band 0.475 ≤ prob_a ≤ 0.525. One row. The requests name the letters
  (``Decoding.logprob_tokens``): a local model reports them from its logits wherever they rank, so
  its prob_a is always defined; an API's top k may list neither letter, and then the row is invalid.

Answers longer than ``max_answer_chars`` (default 12,000 characters, as paper 000 does) are cut to
that length before they go into a prompt; the row's explanation then ends with a note saying which
answer was cut and from how many characters. Unparsable outputs give ``invalid`` rows carrying the
raw text, never ties. Calls that failed after all retries give no row (a rerun makes them), so
nothing false is stored.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from engine.errors import LensError
from engine.judging.backends import ChatRequest, ChatResult, Decoding
from engine.judging.parsing import parse_score, parse_verdict, soft_preference
from engine.judging.templates import Template, get_template, parse_template_ref

PROTOCOLS = ("single", "swapped", "hybrid", "soft")
TIE_BAND = (0.475, 0.525)
MAX_ANSWER_CHARS = 12_000
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
    max_answer_chars: int | None = MAX_ANSWER_CHARS  # None: never cut

    @classmethod
    def default(
        cls,
        user_dir=None,
        pairwise: str = "pairwise",
        version: int | None = None,
        *,
        score: str = "score",
        soft: str = "soft",
        **kw,
    ) -> ProtocolConfig:
        """Templates by reference (``id`` or ``id@version``); ``version`` applies to ``pairwise``."""
        pid, pver = parse_template_ref(pairwise)
        sid, sver = parse_template_ref(score)
        fid, fver = parse_template_ref(soft)
        return cls(
            pairwise=get_template(
                pid, version if version is not None else pver, kind="pairwise", user_dir=user_dir
            ),
            score=get_template(sid, sver, kind="score", user_dir=user_dir),
            soft=get_template(fid, fver, kind="soft", user_dir=user_dir),
            **kw,
        )

    def templates_for(self, protocol: str) -> list[Template]:
        """The templates ``protocol`` renders."""
        return {
            "single": [self.pairwise],
            "swapped": [self.pairwise],
            "hybrid": [self.pairwise, self.score],
            "soft": [self.soft],
        }[protocol]


def default_judge_name(model: str, protocol: str, cfg: ProtocolConfig) -> str:
    """``<model>:<protocol>``, plus ``:<id>@<version>`` of each template used unless all are shipped v1.

    So a run with ``pairwise@2`` (or a user template) never overwrites the rows of a v1 run.
    """
    used = cfg.templates_for(protocol)
    if all(t.shipped and t.version == 1 for t in used):
        return f"{model}:{protocol}"
    return f"{model}:{protocol}:{'+'.join(t.ref for t in used)}"


def cut(text: str, limit: int | None) -> tuple[str, int | None]:
    """``text`` cut to ``limit`` characters, and its original length when it was cut (else None)."""
    if limit is None or len(text) <= limit:
        return text, None
    return text[:limit], len(text)


class _Cut:
    """The pair's answers as shown to the judge (cut to the limit) and the note recording any cut."""

    def __init__(self, job: PairJob, limit: int | None):
        self.a, la = cut(job.answer_a, limit)
        self.b, lb = cut(job.answer_b, limit)
        notes = [
            f"answer of {m} cut to {limit} of {n} characters"
            for m, n in ((job.model_a, la), (job.model_b, lb))
            if n is not None
        ]
        self.note = f"\n[truncated: {'; '.join(notes)}]" if notes else ""


def truncated_pairs(jobs: list[PairJob], limit: int | None) -> int:
    """How many pairs have at least one answer longer than ``limit``."""
    if limit is None:
        return 0
    return sum(len(j.answer_a) > limit or len(j.answer_b) > limit for j in jobs)


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


def _hard(res: ChatResult | None, swapped: bool, t: Template) -> str | None:
    if res is None:
        return None
    v = parse_verdict(res.text, t.tag_map)
    if v is None:
        return None
    return _SWAP[v] if swapped else v


def shown_second(job: PairJob, seed: int) -> bool:
    """Seeded coin flip per pair instance: True means model_a is shown second (order ``BA``)."""
    key = f"{seed}|{job.prompt_id}|{job.variant}|{job.turn}|{job.model_a}|{job.model_b}"
    return hashlib.sha256(key.encode("utf-8")).digest()[0] & 1 == 1


# -- units: one generator per pair -----------------------------------------------------------------
def unit_single(job: PairJob, cfg: ProtocolConfig):
    """One call per pair in one presentation order (seeded random or always AB); one row."""
    if cfg.single_order not in ("random", "AB"):
        raise LensError(f"single_order must be 'random' or 'AB', not {cfg.single_order!r}.")
    c = _Cut(job, cfg.max_answer_chars)
    flip = cfg.single_order == "random" and shown_second(job, cfg.seed)
    first, second = (c.b, c.a) if flip else (c.a, c.b)
    (r,) = yield [_pair_request(cfg.pairwise, cfg.decoding, job.question, first, second)]
    if r is None:
        return []
    return [
        _row(job, _hard(r, flip, cfg.pairwise) or "invalid", "BA" if flip else "AB", None, r.text + c.note)
    ]


def _both(job: PairJob, c: _Cut, t: Template, dec: Decoding) -> list[ChatRequest]:
    return [_pair_request(t, dec, job.question, c.a, c.b), _pair_request(t, dec, job.question, c.b, c.a)]


def unit_swapped(job: PairJob, cfg: ProtocolConfig):
    """Both presentation orders asked; one row per order, so position bias stays visible."""
    c = _Cut(job, cfg.max_answer_chars)
    r1, r2 = yield _both(job, c, cfg.pairwise, cfg.decoding)
    rows = []
    if r1 is not None:
        rows.append(_row(job, _hard(r1, False, cfg.pairwise) or "invalid", "AB", None, r1.text + c.note))
    if r2 is not None:
        rows.append(_row(job, _hard(r2, True, cfg.pairwise) or "invalid", "BA", None, r2.text + c.note))
    return rows


def unit_hybrid(job: PairJob, cfg: ProtocolConfig):
    """Both orders; if they agree one row, else each answer scored alone and the scores decide."""
    c = _Cut(job, cfg.max_answer_chars)
    r1, r2 = yield _both(job, c, cfg.pairwise, cfg.decoding)
    if r1 is None or r2 is None:
        return []  # a failed call: no row; a rerun completes it
    v1, v2 = _hard(r1, False, cfg.pairwise), _hard(r2, True, cfg.pairwise)
    if v1 is not None and v1 == v2:
        return [_row(job, v1, None, None, f"both orders: {v1}\n--- AB ---\n{r1.text}{c.note}")]
    t, dec = cfg.score, cfg.score_decoding
    sa, sb = yield [
        ChatRequest(t.render(question=job.question, answer=c.a), dec, t.id, t.version),
        ChatRequest(t.render(question=job.question, answer=c.b), dec, t.id, t.version),
    ]
    if sa is None or sb is None:
        return []
    a, b = parse_score(sa.text, t.tag_map), parse_score(sb.text, t.tag_map)
    head = f"orders disagree (AB: {v1 or 'invalid'}, BA: {v2 or 'invalid'})"
    texts = f"\n--- A ---\n{sa.text}\n--- B ---\n{sb.text}{c.note}"
    if a is None or b is None:
        return [_row(job, "invalid", None, None, f"{head}; unparsable score{texts}")]
    winner = "A" if a > b else "B" if b > a else "tie"
    return [_row(job, winner, None, None, f"{head}; scores A={a}, B={b}{texts}")]


def soft_winner(prob_a: float, band: tuple[float, float] = TIE_BAND) -> str:
    """Hard label from a soft preference: inside the tie band (inclusive) is a tie."""
    if prob_a > band[1]:
        return "A"
    if prob_a < band[0]:
        return "B"
    return "tie"


def unit_soft(job: PairJob, cfg: ProtocolConfig):
    """Both orders with token probabilities; one row whose prob_a is the two orders' P(A wins) averaged."""
    if cfg.soft_decoding.top_logprobs < 2:
        raise LensError("The soft protocol needs top_logprobs of at least 2.")
    c = _Cut(job, cfg.max_answer_chars)
    letters = cfg.soft.tag_map
    # a local model reports the letters' logprobs wherever they rank (from its logits), so prob_a
    # is always the softmax over the verdict tokens; an API gives only its top k
    dec = replace(cfg.soft_decoding, logprob_tokens=tuple(sorted(letters)))
    r1, r2 = yield _both(job, c, cfg.soft, dec)
    if r1 is None or r2 is None:
        return []
    p1, p2 = soft_preference(r1.top_logprobs, letters), soft_preference(r2.top_logprobs, letters)
    if p1 is None or p2 is None:
        return [
            _row(
                job,
                "invalid",
                None,
                None,
                f"no A/B token probabilities\n--- AB ---\n{r1.text}\n--- BA ---\n{r2.text}{c.note}",
            )
        ]
    p = min(1.0, max(0.0, (p1 + (1.0 - p2)) / 2.0))
    return [
        _row(job, soft_winner(p), None, p, f"P(A) shown first {p1:.4f}; shown second {1.0 - p2:.4f}{c.note}")
    ]


_UNITS = {"single": unit_single, "swapped": unit_swapped, "hybrid": unit_hybrid, "soft": unit_soft}


def make_unit(protocol: str, job: PairJob, cfg: ProtocolConfig):
    """The runner unit that judges ``job`` with ``protocol`` and returns its verdict rows."""
    if protocol not in _UNITS:
        raise LensError(f"Unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}.")
    return _UNITS[protocol](job, cfg)


