"""Arena-Hard judgment files: one record per (question, model) with two games against a baseline.

Game 1 shows the baseline as assistant A and the model as B; game 2 swaps them. Each game becomes
one verdict with ``model_a = model`` and ``model_b = baseline`` (order BA for game 1, AB for game
2). The score's strength is kept in ``strength`` (2 for ``>>``, 1 for ``>``); a missing score
(the judge's label could not be parsed) is an invalid verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from engine.ingest.formats._common import PROBLEM, pick

USED = frozenset({"uid", "question_id", "judge", "model", "baseline", "games", "category", "tstamp"})
SCORES: dict[str, tuple[str, int | None]] = {
    "A>>B": ("A", 2), "A>B": ("A", 1), "A=B": ("tie", None), "B=A": ("tie", None),
    "B>A": ("B", 1), "B>>A": ("B", 2),
}
"""Score label → (which shown assistant won, strength), before mapping shown A/B to the models."""


def matches(keys: set[str]) -> bool:
    """An Arena-Hard judgment record: a ``model`` and its ``games`` list."""
    return {"model", "games"} <= keys and bool({"uid", "question_id"} & keys)


def _judgment_text(game: Mapping):
    j = game.get("judgment")
    if isinstance(j, Mapping):
        j = j.get("answer", json.dumps(j, ensure_ascii=False))
    return j


def rows(rec: Mapping, line: int) -> list[dict]:
    """One judgment record → one verdict per game (two normally)."""
    model, baseline = rec.get("model"), rec.get("baseline")
    games = rec.get("games")
    common = {"prompt_id": pick(rec, "uid", "question_id"), "model_a": model, "model_b": baseline,
              "judge": rec.get("judge"), "category": rec.get("category"), "tstamp": rec.get("tstamp")}
    if baseline is None:
        return [{**common, PROBLEM: "the record has no baseline field (Arena-Hard v0.1 files name the "
                                    "baseline in their configuration; add a baseline field to each record)"}]
    if not isinstance(games, list) or not games:
        return [{**common, PROBLEM: "the record has no games"}]
    out = []
    for k, game in enumerate(games[:2]):
        row = {**common, "order": "BA" if k == 0 else "AB"}
        if not isinstance(game, Mapping):
            out.append({**row, PROBLEM: f"game {k + 1} is not a JSON object"})
            continue
        score = game.get("score")
        row["explanation"] = _judgment_text(game)
        if score is None:
            out.append({**row, "winner": "invalid"})
            continue
        label = str(score).strip().replace(" ", "")
        if label not in SCORES:
            out.append(
                {
                    **row,
                    PROBLEM: f"game {k + 1} score {score!r} is not one of A>>B, A>B, A=B, B>A, B>>A or null",
                }
            )
            continue
        shown, strength = SCORES[label]
        # game 1: shown A is the baseline (model_b); game 2: shown A is the model (model_a)
        winner = shown if shown == "tie" or k == 1 else {"A": "B", "B": "A"}[shown]
        out.append({**row, "winner": winner, "strength": strength})
    if len(games) > 2:
        out.append({**common, PROBLEM: f"the record has {len(games)} games; Arena-Hard records have two"})
    return out
