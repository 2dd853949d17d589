"""Reading model outputs: verdict tags, 1–5 scores, JSON arrays, and soft preferences.

Parsers accept only the exact tags a template asks for, case-sensitive: by default ``[[A]]``,
``[[B]]`` and ``[[TIE]]`` for a verdict, ``[[1]]`` … ``[[5]]`` for a score, and the bare letters
``A`` / ``B`` for a soft preference; a template may declare its own (``Template.tags``). So
``arr[c]``, ``dp[b]`` or the article "a" never count as a verdict. Every parser returns ``None``
when the text holds nothing valid; callers store such outputs as ``invalid`` with their raw text,
never as a tie. When a text holds several tags (a judge that restates the format before
answering), the last one counts.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import TypeVar

VERDICT_TAGS: dict[str, str] = {"[[A]]": "A", "[[B]]": "B", "[[TIE]]": "tie"}
T = TypeVar("T")  # what a tag means: a verdict (str) or a score (int)
SCORE_TAGS: dict[str, int] = {f"[[{i}]]": i for i in range(1, 6)}
SOFT_LETTERS: dict[str, str] = {"A": "A", "B": "B"}
TOKEN_WRAPPING = " \t\r\n[]*\"'"  # stripped from a token before it is compared with a letter


@functools.lru_cache(maxsize=64)
def _tag_regex(tags: tuple[str, ...]) -> re.Pattern[str]:
    # longest first, so "[[A]]" wins over a "[A]" inside it when a template declares both
    return re.compile("|".join(re.escape(t) for t in sorted(tags, key=len, reverse=True)))


def last_tag(text: str | None, tags: Mapping[str, T]) -> T | None:
    """The meaning of the last exact occurrence of any key of ``tags`` in ``text`` (case-sensitive)."""
    if not text or not tags:
        return None
    found = _tag_regex(tuple(tags)).findall(text)
    return tags[found[-1]] if found else None


def parse_verdict(text: str | None, tags: Mapping[str, str] | None = None) -> str | None:
    """The last verdict tag in ``text`` as ``A``, ``B`` or ``tie`` (default tags: VERDICT_TAGS)."""
    return last_tag(text, VERDICT_TAGS if tags is None else tags)


def parse_score(text: str | None, tags: Mapping[str, int] | None = None) -> int | None:
    """The last score tag in ``text`` (default: ``[[1]]`` … ``[[5]]``)."""
    v = last_tag(text, SCORE_TAGS if tags is None else tags)
    return None if v is None else int(v)


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


def soft_preference(
    top_logprobs: tuple[dict[str, float], ...] | list | None, letters: Mapping[str, str] | None = None
) -> float | None:
    """P(A better) from the first generated position whose top tokens include the letter A or B.

    A token counts as a letter only when, with surrounding whitespace, brackets, asterisks and
    quotes stripped, it is exactly one of ``letters`` (default ``A`` → A, ``B`` → B; case-sensitive,
    so the article " a" is not the letter A). The probabilities of each letter's spellings at that
    position are pooled and renormalised over the two letters: a softmax over the verdict tokens, as
    in paper 001, Section 3.1. A letter missing from the top-k list gets at most the smallest listed
    probability, so the result is a bound, not exactly 0 or 1. ``None`` when no position lists either.
    """
    if not top_logprobs:
        return None
    letters = SOFT_LETTERS if letters is None else letters
    for step in top_logprobs:
        mass = {"A": 0.0, "B": 0.0}
        for tok, lp in step.items():
            letter = letters.get(tok.strip(TOKEN_WRAPPING))
            if letter in mass:
                mass[letter] += math.exp(lp)
        if mass["A"] == 0.0 and mass["B"] == 0.0:
            continue
        floor = math.exp(min(step.values()))
        a = mass["A"] or floor
        b = mass["B"] or floor
        return a / (a + b)
    return None
