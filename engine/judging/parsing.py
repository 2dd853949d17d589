"""Reading model outputs: bracketed verdicts, 1–5 scores, JSON arrays, and soft preferences.

Every parser returns ``None`` when the text holds nothing valid; callers store such outputs as
``invalid`` with their raw text, never as a tie. When a text contains several verdict tags (a judge
that restates the format before answering), the last valid one counts.
"""

from __future__ import annotations

import json
import math
import re

_VERDICT = re.compile(r"\[\[\s*(A|B|C|TIE)\s*\]\]|\[\s*(A|B|C|TIE)\s*\]", re.IGNORECASE)
_SCORE = re.compile(r"\[\[\s*([1-5])\s*\]\]|\[\s*([1-5])\s*\]")
_TO_WINNER = {"A": "A", "B": "B", "C": "tie", "TIE": "tie"}


def parse_verdict(text: str | None) -> str | None:
    """The last bracketed verdict in ``text`` as ``A``, ``B`` or ``tie``; ``[[C]]``/``[C]`` mean tie."""
    if not text:
        return None
    found = _VERDICT.findall(text)
    if not found:
        return None
    double, single = found[-1]
    return _TO_WINNER[(double or single).upper()]


def parse_score(text: str | None) -> int | None:
    """The last bracketed score 1–5 in ``text`` (``[[4]]`` or ``[4]``)."""
    if not text:
        return None
    found = _SCORE.findall(text)
    if not found:
        return None
    double, single = found[-1]
    return int(double or single)


def parse_json_array(text: str | None, length: int | None = None) -> list | None:
    """The JSON array in ``text`` (code fences and surrounding words allowed); ``length`` if exact.

    Tries the whole text, then the outermost ``[...]`` span. Returns ``None`` for anything else,
    including an array of the wrong length.
    """
    if not text:
        return None
    candidates = [text.strip()]
    lo, hi = text.find("["), text.rfind("]")
    if 0 <= lo < hi:
        candidates.append(text[lo : hi + 1])
    for c in candidates:
        try:
            val = json.loads(c)
        except ValueError:
            continue
        if isinstance(val, list) and (length is None or len(val) == length):
            return val
    return None


def _letter(token: str) -> str | None:
    t = token.strip().strip("[]*\"'").strip().upper()
    return t if t in ("A", "B") else None


def soft_preference(top_logprobs: tuple[dict[str, float], ...] | list | None) -> float | None:
    """P(A better) from the first generated position whose top tokens include the letter A or B.

    The probabilities of the A-tokens and B-tokens at that position (spellings like ``" A"`` pooled)
    are renormalised over the two letters: a softmax over the verdict tokens, as in paper 001,
    Section 3.1. A letter missing from the top-k list gets at most the smallest listed probability,
    so the result is a bound, not exactly 0 or 1. ``None`` when no position lists either letter.
    """
    if not top_logprobs:
        return None
    for step in top_logprobs:
        mass = {"A": 0.0, "B": 0.0}
        for tok, lp in step.items():
            letter = _letter(tok)
            if letter is not None:
                mass[letter] += math.exp(lp)
        if mass["A"] == 0.0 and mass["B"] == 0.0:
            continue
        floor = math.exp(min(step.values()))
        a = mass["A"] or floor
        b = mass["B"] or floor
        return a / (a + b)
    return None
