"""Judging inputs: MT-Bench questions and model answers from ``data/mt_bench`` (or a like folder).

Reads FastChat's ``question.jsonl`` (question_id, category, turns) and ``model_answer/<model>.jsonl``
(question_id, model_id, choices[0].turns) into tidy frames: one row per (prompt, turn) and per
(prompt, turn, model). Only turn 1 is judged by default: a turn-2 answer depends on each model's
own turn-1 answer, which a single pairwise prompt does not show.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from engine.errors import LensError
from engine.store.connection import DATA_DIR

MT_BENCH_DIR = DATA_DIR / "mt_bench"


def resolve_inputs(name_or_path: str) -> Path:
    """``mt_bench`` (the shipped folder) or a path to a folder laid out like it."""
    p = Path(name_or_path)
    if not p.is_dir():
        p = DATA_DIR / name_or_path
    if not (p / "question.jsonl").is_file():
        raise LensError(
            f"No question.jsonl in {name_or_path!r}; give 'mt_bench' or a folder laid out like data/mt_bench."
        )
    return p


def _jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as exc:  # JSONDecodeError, or a number json will not convert (ValueError)
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise LensError(f"{path.name} line {i} is not valid JSON ({why}).") from exc
    return rows


def read_questions(folder: Path, turns: tuple[int, ...] = (1,)) -> pd.DataFrame:
    """prompt_id, turn, category, text for the chosen turns."""
    out = []
    for i, q in enumerate(_jsonl(folder / "question.jsonl"), 1):
        if "question_id" not in q or not isinstance(q.get("turns"), list):
            raise LensError(f"question.jsonl line {i} lacks question_id or turns.")
        for t in turns:
            if t <= len(q["turns"]):
                out.append(
                    {
                        "prompt_id": str(q["question_id"]),
                        "turn": t,
                        "category": q.get("category"),
                        "text": q["turns"][t - 1],
                    }
                )
    return pd.DataFrame(out, columns=["prompt_id", "turn", "category", "text"])


def available_models(folder: Path) -> list[str]:
    """Models that have an answer file in a FastChat-style folder (``model_answer/*.jsonl``), sorted."""
    return sorted(p.stem for p in (folder / "model_answer").glob("*.jsonl"))


def read_answers(
    folder: Path, models: list[str] | None = None, turns: tuple[int, ...] = (1,)
) -> pd.DataFrame:
    """prompt_id, turn, model, text for the chosen models (default: all in model_answer/)."""
    have = available_models(folder)
    models = models or have
    unknown = [m for m in models if m not in have]
    if unknown:
        raise LensError(f"No answers for model {unknown[0]!r} in {folder}; available: {', '.join(have)}.")
    out = []
    for m in models:
        for i, a in enumerate(_jsonl(folder / "model_answer" / f"{m}.jsonl"), 1):
            try:
                turns_text = a["choices"][0]["turns"]
                qid = str(a["question_id"])
            except (KeyError, IndexError, TypeError) as exc:
                raise LensError(f"{m}.jsonl line {i} lacks question_id or choices[0].turns.") from exc
            for t in turns:
                if t <= len(turns_text):
                    out.append({"prompt_id": qid, "turn": t, "model": m, "text": turns_text[t - 1]})
    return pd.DataFrame(out, columns=["prompt_id", "turn", "model", "text"])


def select_prompts(
    questions: pd.DataFrame, categories: list[str] | None, limit_per_category: int | None
) -> pd.DataFrame:
    """Keep the chosen categories and at most ``limit_per_category`` prompts of each (in file order)."""
    q = questions
    if categories:
        unknown = sorted(set(categories) - set(q["category"]))
        if unknown:
            raise LensError(
                f"No category {unknown[0]!r} in the questions; known: "
                f"{', '.join(sorted(set(q['category'])))}."
            )
        q = q[q["category"].isin(categories)]
    if limit_per_category is not None:
        keep = (
            q.drop_duplicates("prompt_id")
            .groupby("category", sort=False)
            .head(limit_per_category)["prompt_id"]
        )
        q = q[q["prompt_id"].isin(set(keep))]
    return q.reset_index(drop=True)
