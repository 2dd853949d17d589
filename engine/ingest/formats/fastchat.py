"""FastChat MT-Bench files: pairwise LLM judgments (``model_judgment/*_pair.jsonl``) and the human
judgments (``model_a, model_b, winner, judge, turn, conversation_a/b``).

Pairwise: one record holds two games on the same two answers. Game 1 showed ``model_1`` first,
game 2 showed ``model_2`` first; both winners are already written as ``model_1`` / ``model_2`` /
``tie`` / ``error``. Each game becomes one verdict with ``model_a = model_1`` (order AB for game
1, BA for game 2), the judge's text as its explanation, and ``error`` as an invalid verdict.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.ingest.formats._common import is_human, pick, turn_texts

PAIR_FIELDS = frozenset({"question_id", "model_1", "model_2", "g1_winner", "g2_winner"})
PAIR_USED = PAIR_FIELDS | {"judge", "g1_judgment", "g2_judgment", "turn", "tstamp", "category"}
_PAIR_WINNERS = {"model_1": "A", "model_2": "B", "tie": "tie", "error": "invalid"}

HUMAN_FIELDS = frozenset({"model_a", "model_b", "winner", "conversation_a", "conversation_b"})
HUMAN_USED = HUMAN_FIELDS | {"question_id", "judge", "turn", "category"}


def pair_matches(keys: set[str]) -> bool:
    """A FastChat pairwise judgment record has both games' winners."""
    return PAIR_FIELDS <= keys


def pair_judge(judge) -> str | None:
    """``judge`` is ``[model, prompt name]``; the verdicts' judge is the model (the prompt name
    differs by turn: pair-v2 vs pair-v2-multi-turn, and would split one judge in two)."""
    if isinstance(judge, list | tuple):
        return str(judge[0]) if judge else None
    return judge


def pair_rows(rec: Mapping, line: int) -> list[dict]:
    """One pairwise record → two verdicts (game 1 order AB, game 2 order BA)."""
    common = {
        "prompt_id": rec.get("question_id"),
        "model_a": rec.get("model_1"),
        "model_b": rec.get("model_2"),
        "judge": pair_judge(rec.get("judge")),
        "turn": rec.get("turn"),
        "category": rec.get("category"),
        "tstamp": rec.get("tstamp"),
    }
    out = []
    for game, order in (("g1", "AB"), ("g2", "BA")):
        raw = rec.get(f"{game}_winner")
        key = raw.strip().lower() if isinstance(raw, str) else None
        out.append({**common, "order": order, "winner": _PAIR_WINNERS.get(key, raw) if key else raw,
                    "explanation": rec.get(f"{game}_judgment")})
    return out


def human_matches(keys: set[str]) -> bool:
    """MT-Bench human judgments: battle fields plus both conversations, and no time stamp (the
    Arena logs have one)."""
    return HUMAN_FIELDS <= keys and "tstamp" not in keys and "anony" not in keys


def human_rows(rec: Mapping, line: int) -> list[dict]:
    """One human (or GPT-4) judgment → one verdict; a person's id becomes the annotator of judge
    ``human``; the turn's question and both answers are kept for the inspector."""
    judge = rec.get("judge")
    turn = rec.get("turn")
    q, a = turn_texts(rec.get("conversation_a"), turn)
    q2, b = turn_texts(rec.get("conversation_b"), turn)
    return [{
        "prompt_id": rec.get("question_id"),
        "model_a": rec.get("model_a"),
        "model_b": rec.get("model_b"),
        "winner": rec.get("winner"),
        "judge": "human" if is_human(judge) else judge,
        "annotator": judge if is_human(judge) else None,
        "turn": turn,
        "category": pick(rec, "category"),
        "question": q if q is not None else q2,
        "answer_a": a,
        "answer_b": b,
    }]
