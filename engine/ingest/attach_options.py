"""``datasets attach`` read like ``import``: the import's options as a definition of how the Parquet files'
columns read as verdicts, which ``engine/store/attached.py`` applies as one SELECT on every read.

The definition follows the import's own rules, taken from the import's modules rather than restated:
the file's columns are named by ``raw_rows.canonical_columns`` (the user's ``--map`` first, then the
canonical names case-insensitively, then the aliases such as ``question_id``); winners are read through the
import's spellings (``normalise.WINNER_VALUES``), after the user's ``--map-value``; ``--model-name`` and
``--judge-name`` rename exactly; ``--set`` gives a constant. ``--format arena`` reads a Chatbot Arena
battle log as the import's Arena reader does: judge ``human``, the voter as annotator, order ``AB``, the
battle's id as its prompt when there is no ``question_id``. Files without a judge column get a judge
named after the file (``constant_columns.judge_from_filename``), said in the attach's report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

from engine.errors import LensError
from engine.ingest.constant_columns import judge_from_filename
from engine.ingest.formats import arena
from engine.ingest.formats._common import BATTLE_ID_FIELDS
from engine.ingest.normalise import WINNER_VALUES
from engine.ingest.raw_rows import canonical_columns
from engine.store.attached import READ_COLUMNS

ATTACH_FORMATS: tuple[str, ...] = ("parquet", "arena")
"""What attach reads in place: Parquet files of canonical (or mapped) columns, or Chatbot Arena battle logs.
The other tools' files make several verdicts of one record (FastChat's two games, Arena-Hard's); they
are imported."""


@dataclass(frozen=True)
class AttachOptions:
    """The import options an attach takes (``engine/cli/imports.py: add_value_options``)."""

    fmt: str | None = None
    column_map: Mapping[str, str] = field(default_factory=dict)
    model_names: Mapping[str, str] = field(default_factory=dict)
    judge_names: Mapping[str, str] = field(default_factory=dict)
    value_map: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    set_columns: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Definition:
    """The definition to store with the attached dataset and the sentences that say what it decided."""

    definition: dict
    notes: tuple[str, ...]
    file_columns: tuple[str, ...]  # the files' columns it reads (for the decompression guard)


def _winner_values(user: Mapping[str, str] | None) -> dict[str, str]:
    """The import's winner spellings, after the user's value map (a mapped value is read as a spelling)."""
    out = dict(WINNER_VALUES)
    for old, new in (user or {}).items():
        out[str(old).strip().lower()] = WINNER_VALUES.get(str(new).strip().lower(), str(new))
    return out


def attach_definition(columns: set[str], glob: str, options: AttachOptions, files: list[str]) -> Definition:
    """How files with ``columns`` read as verdicts under ``options``; one sentence when they cannot."""
    fmt = options.fmt
    lowered = {str(c).strip().lower() for c in columns}
    if fmt is None and arena.matches(lowered):
        fmt = "arena"
    if fmt not in (None, *ATTACH_FORMATS):
        raise LensError(f"attach reads {' or '.join(ATTACH_FORMATS)} files in place, not {fmt}: that format "
                        "makes several verdicts of one record; import the files instead.")
    notes: list[str] = []
    if fmt == "arena":
        sources, constants = _arena_sources(columns, glob)
        notes.append("Read as Chatbot Arena battle logs: judge human, the voter as annotator, every battle "
                     "with order AB (model_a is the answer shown first), so its position bias can be read.")
    else:
        chosen = canonical_columns(sorted(columns), glob, options.column_map, check=False)
        sources = {name: [col] for col, name in chosen.items() if name in READ_COLUMNS}
        constants = {}
    unmatched = [k for k in options.column_map if str(k).strip().lower() not in lowered]
    if unmatched:
        raise LensError(f"The column map names {', '.join(map(repr, unmatched))}, which is not a column of "
                        f"the files at {glob!r}; check the spelling, or leave that --map out.")
    for col, value in options.set_columns.items():
        sources.pop(col, None)
        constants[col] = value
    if "judge" not in sources and "judge" not in constants:
        name = judge_from_filename(files[0]) if len(files) == 1 else PurePath(glob).parent.name or "files"
        constants["judge"] = name
        notes.append(f"The files name no judge; their verdicts are read under judge {name!r} (from the "
                     "file name; --set judge=NAME names it).")
    values = {c: {str(k).strip().lower(): str(v) for k, v in m.items()}
              for c, m in options.value_map.items() if c != "winner"}
    values["winner"] = _winner_values(options.value_map.get("winner"))
    renames = {c: dict(m) for c, m in (("model_a", options.model_names), ("model_b", options.model_names),
                                       ("judge", options.judge_names)) if m}
    used = tuple(dict.fromkeys(f for fs in sources.values() for f in fs))
    return Definition({"format": fmt or "parquet", "sources": sources, "constants": constants,
                       "values": values, "renames": renames}, tuple(notes), used)


def _arena_sources(columns: set[str], glob: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The Arena reader's field meanings as column sources (``formats/arena.py``)."""
    low = {str(c).strip().lower(): c for c in columns}
    ids = [low[f] for f in BATTLE_ID_FIELDS if f in low]
    prompt = ([low["question_id"]] if "question_id" in low else []) + ids
    if not prompt:
        raise LensError(f"The Arena battle logs at {glob!r} have no question_id and no battle id "
                        f"({', '.join(BATTLE_ID_FIELDS)}) to name each battle's prompt; import them instead, "
                        "which names a battle by its content.")
    sources = {"prompt_id": prompt, "model_a": [low["model_a"]], "model_b": [low["model_b"]],
               "winner": [low["winner"]]}
    for col, fields in (("annotator", ["judge"]), ("turn", ["turn"]), ("category", ["category"]),
                        ("tstamp", ["tstamp", "timestamp"])):
        found = [low[f] for f in fields if f in low]
        if found:
            sources[col] = found
    if ids:
        sources["battle_id"] = ids
    return sources, {"judge": "human", "order": "AB"}
