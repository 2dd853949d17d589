"""AlpacaEval annotation files: a JSON list of ``instruction, output_1, generator_1, output_2,
generator_2, annotator, preference``.

``preference`` is 1 (output_1 better), 2 (output_2 better), 1.5 (a draw) or any number between (a
weighted annotator's expected preference); 0 is an older way of writing a draw (AlpacaEval's own win
rate and length-controlled GLM read it as 1.5, and its older annotation files carry it). Each record
is one verdict with ``model_a = generator_1``; the soft preference is kept as ``prob_a = 2 -
preference`` and the hard winner beside it (A below 1.5, B above, tie at 1.5). A missing preference
is an invalid verdict. The order shown to the annotator is not in the file (AlpacaEval may randomise
it), so it stays unknown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from engine.ingest.formats._common import PROBLEM, text_id

FIELDS = frozenset({"instruction", "generator_1", "generator_2", "preference"})
USED = FIELDS | {"output_1", "output_2", "annotator", "dataset"}
DRAW = 1.5
"""The preference of a draw; a stored 0 means the same."""


def matches(keys: set[str]) -> bool:
    """An AlpacaEval annotation: two generators and a preference for one instruction."""
    return FIELDS <= keys


def hard_winner(preference: float) -> str:
    """The winner a preference in [1, 2] stands for."""
    return "A" if preference < 1.5 else "B" if preference > 1.5 else "tie"


def rows(rec: Mapping, line: int) -> list[dict]:
    """One annotation → one verdict; the prompt id is a hash of the instruction text."""
    instruction = rec.get("instruction")
    row = {
        "prompt_id": text_id(instruction) if isinstance(instruction, str) and instruction.strip() else None,
        "model_a": rec.get("generator_1"),
        "model_b": rec.get("generator_2"),
        "judge": rec.get("annotator"),
        "category": rec.get("dataset"),
        "question": instruction,
        "answer_a": rec.get("output_1"),
        "answer_b": rec.get("output_2"),
    }
    pref = rec.get("preference")
    if pref is None or (isinstance(pref, float) and math.isnan(pref)):
        return [{**row, "winner": "invalid"}]
    try:
        p = float(pref)
    except (TypeError, ValueError):
        return [{**row, PROBLEM: f"preference {pref!r} is not a number"}]
    if p == 0.0:
        p = DRAW
    if not 1.0 <= p <= 2.0:
        return [{**row, PROBLEM: f"preference {pref!r} is outside [1, 2] (and not 0, a draw)"}]
    return [{**row, "winner": hard_winner(p), "prob_a": 2.0 - p}]
