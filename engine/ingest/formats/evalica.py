"""evalica / LLMFAO comparison tables: ``left, right, winner`` (winner ``left`` / ``right`` /
``tie``; evalica's ``X`` / ``Y`` / ``Draw`` too), optionally with a ``prompt`` and a comparison ``id`` (LLMFAO
also has ``model_x,
model_y``: numeric model ids, not kept). ``left`` is model_a; the order shown is not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.ingest.formats._common import battle_id, pick, record_id

FIELDS = frozenset({"left", "right", "winner"})
USED = FIELDS | {"id", "prompt", "prompt_id", "judge", "annotator", "worker", "category", "tstamp"}
WINNERS = {"left": "A", "right": "B", "tie": "tie", "draw": "tie", "x": "A", "y": "B"}
"""LLMFAO writes left / right / tie; evalica's own outcome names are X, Y and Draw."""


def matches(keys: set[str]) -> bool:
    """A left/right comparison row (and not a canonical model_a/model_b file)."""
    return FIELDS <= keys and "model_a" not in keys


def rows(rec: Mapping, line: int) -> list[dict]:
    """One comparison → one verdict; without a prompt column each comparison is its own prompt."""
    bid = battle_id(rec)
    prompt = pick(rec, "prompt_id", "prompt")
    raw = rec.get("winner")
    key = raw.strip().lower() if isinstance(raw, str) else None
    return [{
        "prompt_id": prompt if prompt is not None else (bid if bid is not None else record_id("row-", rec)),
        "model_a": rec.get("left"),
        "model_b": rec.get("right"),
        "winner": WINNERS.get(key, raw) if key else raw,
        "judge": pick(rec, "judge"),
        "annotator": pick(rec, "annotator", "worker"),
        "category": pick(rec, "category"),
        "battle_id": bid,
        "tstamp": pick(rec, "tstamp"),
    }]
