"""Chatbot Arena battle logs as published (``clean_battle_*.json``, the conversation dumps):
``model_a, model_b, winner, judge, turn, anony, language, tstamp`` and perhaps ``question_id``,
``num``, ``conversation_a/b``.

Every record is one vote by a person: judge ``human``, the voter id (the file's ``judge``) as the
annotator, the time kept in ``tstamp`` and the battle's own id (``num``, ``battle_id``, ``id``,
``uid``) in ``battle_id``, the style counts of ``conv_metadata`` (``engine.style.given``) with the
verdict. Every battle has order ``AB``: the Arena shows ``model_a``'s answer first (on the left), so
the log's position bias can be read like a judge's. Without a ``question_id`` each battle is its own
prompt (the battle id, else ``battle-`` and a hash of the record, so an exact repeat lands on the same
prompt).
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.ingest.formats._common import battle_id, pick, record_id, turn_texts

FIELDS = frozenset({"model_a", "model_b", "winner"})
TIMES = frozenset({"tstamp", "timestamp"})
"""The battle's time: ``tstamp`` (epoch seconds, the older logs) or ``timestamp`` (an ISO date, LMArena's
later releases such as arena-human-preference-140k)."""
MARKERS = frozenset({"anony", "language", "conv_metadata", "conversation_a"})
USED = FIELDS | TIMES | {"question_id", "judge", "turn", "num", "battle_id", "id", "uid", "conversation_a",
                         "conversation_b", "category", "conv_metadata"}


def matches(keys: set[str]) -> bool:
    """Battle fields with a time stamp and one of the Arena's own fields."""
    return FIELDS <= keys and bool(TIMES & keys) and bool(MARKERS & keys)


def rows(rec: Mapping, line: int) -> list[dict]:
    """One battle → one verdict."""
    bid = battle_id(rec)
    qid = pick(rec, "question_id")
    voter = pick(rec, "judge")
    turn = rec.get("turn")
    q, a = turn_texts(rec.get("conversation_a"), turn)
    q2, b = turn_texts(rec.get("conversation_b"), turn)
    return [{
        "prompt_id": qid if qid is not None else (bid if bid is not None else record_id("battle-", rec)),
        "model_a": rec.get("model_a"),
        "model_b": rec.get("model_b"),
        "winner": rec.get("winner"),
        "order": "AB",
        "judge": "human",
        "annotator": voter,
        "turn": turn,
        "category": pick(rec, "category"),
        "battle_id": bid,
        "tstamp": pick(rec, "tstamp", "timestamp"),
        "conv_metadata": rec.get("conv_metadata"),
        "question": q if q is not None else q2,
        "answer_a": a,
        "answer_b": b,
    }]
