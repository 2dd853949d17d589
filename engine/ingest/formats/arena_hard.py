"""Arena-Hard judgment files: one record per (question, model) with two games against a baseline.

Game 1 shows the baseline as assistant A and the model as B; game 2 swaps them. Each game becomes
one verdict with ``model_a = model`` and ``model_b = baseline`` (order BA for game 1, AB for game
2). The score's strength is kept in ``strength`` (2 for ``>>``, 1 for ``>``); a missing score
(the judge's label could not be parsed) is an invalid verdict.

Arena-Hard v0.1 records (``question_id, model, judge, games``) carry no baseline: the run's
configuration names it. Their games are mapped all the same, each row refused with
``MISSING_BASELINE`` unless the import names the baseline (``import --baseline NAME``:
``name_baseline`` fills it in). A record's own ``baseline`` field always wins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from engine.ingest.formats._common import PROBLEM, pick

USED = frozenset({"uid", "question_id", "judge", "model", "baseline", "games", "category", "tstamp"})
SCORES: dict[str, tuple[str, int | None]] = {
    "A>>B": ("A", 2), "A>B": ("A", 1), "A=B": ("tie", None), "B=A": ("tie", None),
    "B>A": ("B", 1), "B>>A": ("B", 2),
    "A<<B": ("B", 2), "A<B": ("B", 1), "B<A": ("A", 1), "B<<A": ("A", 2),
}
"""Score label → (which shown assistant won, strength), before mapping shown A/B to the models. The
``<`` spellings are the same verdicts written the other way round; arena-hard-auto v2's show_result
counts them (its v0.1 dropped them)."""


MISSING_BASELINE = (
    "the record has no baseline field (Arena-Hard v0.1 files name the baseline in their configuration; "
    "import with --baseline NAME)"
)


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
                    PROBLEM: f"game {k + 1} score {score!r} is not one of A>>B, A>B, A=B, B>A, B>>A (or "
                             "A<<B, A<B, B<A, B<<A) or null",
                }
            )
            continue
        shown, strength = SCORES[label]
        # game 1: shown A is the baseline (model_b); game 2: shown A is the model (model_a)
        winner = shown if shown == "tie" or k == 1 else {"A": "B", "B": "A"}[shown]
        out.append({**row, "winner": winner, "strength": strength})
    if len(games) > 2:
        out.append({**common, PROBLEM: f"the record has {len(games)} games; Arena-Hard records have two"})
    if baseline is None:  # every game row waits for the baseline's name (``name_baseline``)
        out = [r if r.get(PROBLEM) else {**r, PROBLEM: MISSING_BASELINE} for r in out]
    return out


def name_baseline(model_b: list, problems: list, baseline: str) -> tuple[list, list]:
    """The ``model_b`` cells and problems of mapped rows with ``baseline`` put where a record had none
    (``import --baseline``): each row refused only for that is a verdict again."""
    filled = [baseline if m is None else m for m in model_b]
    return filled, [None if p == MISSING_BASELINE else p for p in problems]
