"""Small helpers shared by the tool readers: picking a field, a time as epoch seconds, conversation turns."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence

BATTLE_ID_FIELDS: tuple[str, ...] = ("battle_id", "num", "id", "uid")
"""Fields that name one battle / vote in the sources we know, most specific first."""

HUMAN_PREFIXES: tuple[str, ...] = ("author_", "expert_", "arena_user")
"""Judge values of MT-Bench human judgments and Arena logs that name a person, not a model."""

PROBLEM = "_problem"
"""Key of a canonical row that carries the reason the source record cannot give a verdict."""


def pick(rec: Mapping, *names: str):
    """The first present, non-empty field among ``names`` (records reach the readers with lower-cased
    keys)."""
    for name in names:
        v = rec.get(name)
        if v is not None and v != "" and not (isinstance(v, float) and math.isnan(v)):
            return v
    return None


def battle_id(rec: Mapping):
    """The record's own battle / vote id, or None."""
    return pick(rec, *BATTLE_ID_FIELDS)


def is_human(judge) -> bool:
    """True for a judge value that names a person (``author_3``, ``expert_12``, ``arena_user_…``)."""
    return isinstance(judge, str) and judge.lower().startswith(HUMAN_PREFIXES)


def turn_texts(conversation, turn) -> tuple[str | None, str | None]:
    """(question, answer) of turn ``turn`` (1-based) of an OpenAI-style message list; None when absent."""
    if not isinstance(conversation, Sequence) or isinstance(conversation, str):
        return None, None
    try:
        t = int(turn) if turn is not None else 1
    except (TypeError, ValueError):
        t = 1
    users = [m.get("content") for m in conversation if isinstance(m, Mapping) and m.get("role") == "user"]
    bots = [m.get("content") for m in conversation if isinstance(m, Mapping) and m.get("role") == "assistant"]
    q = users[t - 1] if 0 < t <= len(users) else None
    a = bots[t - 1] if 0 < t <= len(bots) else None
    return (q if isinstance(q, str) else None), (a if isinstance(a, str) else None)


def text_id(text: str) -> str:
    """A short stable id for a prompt that has only its text (first 12 hex digits of its sha256)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def record_id(prefix: str, rec: Mapping) -> str:
    """A prompt id for a record that has none: a hash of its whole content, so that a record repeated
    exactly lands on the same prompt (and is counted as a repeat) while any other gets its own."""
    return prefix + text_id(json.dumps(rec, sort_keys=True, default=str, ensure_ascii=False))
