"""The shapes of the files that hold prompt and answer texts beside a verdict file: one source record →
prompt rows, answer rows, or a reason it gives none.

Texts often live apart from the verdicts (issue 25, point 5): FastChat's MT-Bench and Arena-Hard keep the
questions in ``question.jsonl`` and each model's answers in ``model_answer/<model>.jsonl``; LLMFAO keeps
its prompts in ``prompts.jsonl``, its answers in ``results.jsonl`` and model ids in ``models.jsonl``;
AlpacaEval keeps one ``outputs`` JSON per model. Each shape is recognised from the fields of a file's
first record and maps a record to rows keyed the way the verdict readers key theirs, so that texts land
on the verdicts' prompts and models:

- ``questions`` (FastChat / Arena-Hard v0.1 ``question.jsonl``): ``question_id, turns[, category]``; one
  prompt row per turn (turn k is ``turns[k-1]``, a string or an object with ``content``).
- ``model-answers`` (FastChat / Arena-Hard ``model_answer/<model>.jsonl``): ``question_id, choices``;
  one answer row per turn of ``choices[0].turns``. The model is the file's name without ``.jsonl``, as
  FastChat and Arena-Hard name a model when they judge these files (the ``model_id`` inside may differ:
  MT-Bench's ``vicuna-13b-v1.3.jsonl`` says ``vicuna-13b-hao-0515``).
- ``arena-hard-questions`` / ``arena-hard-answers`` (Arena-Hard since its 2025 rewrite, v0.1 and v2.0
  alike): ``uid, prompt[, category]`` and ``uid, messages`` (turn k is the k-th ``assistant`` message,
  its ``content`` a string or an object with ``answer``); the model, again, is the file's name.
- ``llmfao-prompts`` (``prompts.jsonl``): ``id, text, slug``; the prompt id is ``id`` (LLMFAO's
  comparison files name it in their ``prompt`` column), its ``type`` the category.
- ``llmfao-models`` (``models.jsonl``): ``id, name, api_id``; no texts, the map from numeric model id
  to the model ``name`` the comparison files use.
- ``llmfao-results`` (``results.jsonl``): ``prompt, model, result``; the model is the record's ``name``,
  else ``models.jsonl``'s name for its numeric ``model``.
- ``alpaca-outputs`` (AlpacaEval outputs): ``instruction, output, generator[, dataset]``; no prompt id
  in the file, so the id is the hash of the instruction that the AlpacaEval annotation reader gives the
  same instruction (``_common.text_id``); one prompt row and one answer row per record.
- ``prompts`` / ``answers`` (ours): ``prompt_id, text[, category, turn, variant]`` and ``prompt_id,
  model, text[, turn, variant]``.

Pure functions, no I/O (``engine.ingest.text_files`` reads the containers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from engine.ingest.formats._common import text_id
from engine.ingest.limits import INT_MAX, NAME_MAX_CHARS, TEXT_MAX_CHARS
from engine.ingest.raw_rows import cell_text

Rows = tuple[list[dict], list[dict]]
"""(prompt rows, answer rows) of one record: prompt rows have prompt_id, variant, turn, category, text;
answer rows prompt_id, variant, turn, model, text."""


class BadRecord(ValueError):
    """A record of a recognised shape that gives no usable text; its message is the reason (a clause)."""


@dataclass(frozen=True)
class TextShape:
    """One file shape: its name, how it is recognised, and how a record maps to text rows."""

    name: str
    title: str
    matches: Callable[[set[str]], bool]
    rows: Callable[[Mapping, str, Mapping[str, str]], Rows]
    """(record, file stem, model-id map) → rows; raises ``BadRecord``."""


def _id(value, what: str) -> str:
    text = cell_text(value)
    if text is None:
        raise BadRecord(f"the record has no {what}")
    if len(text) > NAME_MAX_CHARS:
        raise BadRecord(f"its {what} is {len(text):,} characters long (at most {NAME_MAX_CHARS:,})")
    return text


def _text(value, what: str) -> str:
    if isinstance(value, Mapping):  # Arena-Hard writes a turn as {"content": ..., "token_len": ...}
        value = value.get("content")
    if not isinstance(value, str):
        raise BadRecord(f"its {what} is not a string")
    if len(value) > TEXT_MAX_CHARS:
        raise BadRecord(f"its {what} is {len(value):,} characters long (at most {TEXT_MAX_CHARS:,})")
    return value


def _int(value, what: str, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except (TypeError, ValueError):
        number = None
    if isinstance(value, bool) or number is None or not 0 <= number <= INT_MAX:
        raise BadRecord(f"its {what} {value!r} is not a whole number from 0 to {INT_MAX:,}")
    return number


def _turns(value, what: str) -> list:
    if not isinstance(value, list) or not value:
        raise BadRecord(f"its {what} is not a non-empty list")
    return value


def _category(rec: Mapping, *names: str) -> str | None:
    for name in names:
        text = cell_text(rec.get(name))
        if text is not None:
            return text[:NAME_MAX_CHARS]
    return None


def _prompt(pid: str, turn: int, text: str, category: str | None, variant: int = 0) -> dict:
    return {"prompt_id": pid, "variant": variant, "turn": turn, "category": category, "text": text}


def _answer(pid: str, turn: int, model: str, text: str, variant: int = 0) -> dict:
    return {"prompt_id": pid, "variant": variant, "turn": turn, "model": model, "text": text}


def _questions(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    pid = _id(rec.get("question_id"), "question_id")
    category = _category(rec, "category")
    turns = _turns(rec.get("turns"), "turns")
    return [_prompt(pid, k, _text(t, f"turn {k}"), category) for k, t in enumerate(turns, 1)], []


def _model_answers(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    pid = _id(rec.get("question_id"), "question_id")
    choices = _turns(rec.get("choices"), "choices")
    first = choices[0]
    if not isinstance(first, Mapping):
        raise BadRecord("its choices[0] is not an object")
    turns = _turns(first.get("turns"), "choices[0].turns")
    model = _id(stem, "model (the file's name)")
    return [], [_answer(pid, k, model, _text(t, f"turn {k}")) for k, t in enumerate(turns, 1)]


def _arena_hard_questions(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    pid = _id(rec.get("uid"), "uid")
    return [_prompt(pid, 1, _text(rec.get("prompt"), "prompt"), _category(rec, "category"))], []


def _arena_hard_answers(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    pid = _id(rec.get("uid"), "uid")
    messages = _turns(rec.get("messages"), "messages")
    replies = [m.get("content") for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant"]
    if not replies:
        raise BadRecord("its messages hold no assistant message")
    texts = [_text(r.get("answer") if isinstance(r, Mapping) else r, f"assistant message {k}")
             for k, r in enumerate(replies, 1)]
    model = _id(stem, "model (the file's name)")
    return [], [_answer(pid, k, model, t) for k, t in enumerate(texts, 1)]


def _llmfao_prompts(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    pid = _id(rec.get("id"), "id")
    return [_prompt(pid, 1, _text(rec.get("text"), "text"), _category(rec, "type"))], []


def _llmfao_models(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    _id(rec.get("id"), "id")
    _id(rec.get("name"), "name")
    return [], []


def _llmfao_results(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    pid = _id(rec.get("prompt"), "prompt")
    name = cell_text(rec.get("name"))
    if name is None:
        number = _id(rec.get("model"), "model")
        if number not in models:
            raise BadRecord(f"its model {number} has no name here (give models.jsonl with the results)")
        name = models[number]
    return [], [_answer(pid, 1, _id(name, "name"), _text(rec.get("result"), "result"))]


def _alpaca_outputs(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    instruction = _text(rec.get("instruction"), "instruction")
    if not instruction.strip():
        raise BadRecord("its instruction is empty")
    pid = text_id(instruction)
    return ([_prompt(pid, 1, instruction, _category(rec, "dataset"))],
            [_answer(pid, 1, _id(rec.get("generator"), "generator"), _text(rec.get("output"), "output"))])


def _ours_prompts(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    return [_prompt(_id(rec.get("prompt_id"), "prompt_id"), _int(rec.get("turn"), "turn", 1),
                    _text(rec.get("text"), "text"), _category(rec, "category"),
                    _int(rec.get("variant"), "variant", 0))], []


def _ours_answers(rec: Mapping, stem: str, models: Mapping[str, str]) -> Rows:
    return [], [_answer(_id(rec.get("prompt_id"), "prompt_id"), _int(rec.get("turn"), "turn", 1),
                        _id(rec.get("model"), "model"), _text(rec.get("text"), "text"),
                        _int(rec.get("variant"), "variant", 0))]


SHAPES: tuple[TextShape, ...] = (
    TextShape("model-answers", "FastChat / Arena-Hard model answers",
              lambda k: {"question_id", "choices"} <= k, _model_answers),
    TextShape("questions", "FastChat / Arena-Hard questions",
              lambda k: {"question_id", "turns"} <= k, _questions),
    TextShape("arena-hard-answers", "Arena-Hard model answers", lambda k: {"uid", "messages"} <= k,
              _arena_hard_answers),
    TextShape("arena-hard-questions", "Arena-Hard questions", lambda k: {"uid", "prompt"} <= k,
              _arena_hard_questions),
    TextShape("llmfao-results", "LLMFAO answers (results.jsonl)",
              lambda k: {"prompt", "model", "result"} <= k, _llmfao_results),
    TextShape("llmfao-models", "LLMFAO models (models.jsonl)",
              lambda k: {"id", "name", "api_id"} <= k, _llmfao_models),
    TextShape("llmfao-prompts", "LLMFAO prompts (prompts.jsonl)",
              lambda k: {"id", "text", "slug"} <= k, _llmfao_prompts),
    TextShape("alpaca-outputs", "AlpacaEval model outputs",
              lambda k: {"instruction", "output", "generator"} <= k, _alpaca_outputs),
    TextShape("answers", "answer texts (prompt_id, model, text)",
              lambda k: {"prompt_id", "model", "text"} <= k, _ours_answers),
    TextShape("prompts", "prompt texts (prompt_id, text)",
              lambda k: {"prompt_id", "text"} <= k, _ours_prompts),
)
"""Checked in this order; the first whose fields the file's first record has wins."""

SHAPE_NAMES: tuple[str, ...] = tuple(s.name for s in SHAPES)
_BY_NAME = {s.name: s for s in SHAPES}


def shape(name: str) -> TextShape:
    """The shape called ``name`` (one of ``SHAPE_NAMES``)."""
    return _BY_NAME[name]


def detect_shape(keys: set[str]) -> TextShape | None:
    """The shape whose fields a record has (keys compared lower-cased), or None."""
    lowered = {k.lower() for k in keys}
    return next((s for s in SHAPES if s.matches(lowered)), None)


def model_names(rec: Mapping) -> tuple[str, str]:
    """An ``llmfao-models`` record's (numeric id, name) pair."""
    return _id(rec.get("id"), "id"), _id(rec.get("name"), "name")
