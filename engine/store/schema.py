"""The canonical verdict table: its columns, vocabularies and the graph key, shared by every module.

One row is one judge verdict on one pair of answers to one prompt instance. Edge direction
everywhere in the engine: ``i → j`` means *i beats j*; a tie is the pair of reciprocal edges.
"""

from __future__ import annotations

from typing import Literal

Winner = Literal["A", "B", "tie", "invalid"]
WINNERS: tuple[str, ...] = ("A", "B", "tie", "invalid")
"""``invalid`` marks an unparsable judge output: stored with its text, never used in a graph."""

Order = Literal["AB", "BA"]
ORDERS: tuple[str, ...] = ("AB", "BA")
"""``AB``: model_a was shown to the judge first; ``BA``: model_a was shown second."""

VariantKind = Literal["original", "paraphrase", "sample"]
VARIANT_KINDS: tuple[str, ...] = ("original", "paraphrase", "sample")
"""Variant 0 is the original prompt; 1..m are paraphrases, or sampling replicates of the original."""

GRAPH_KEY: tuple[str, ...] = ("dataset", "judge", "prompt_id", "variant", "turn")
"""A tournament graph is identified by these columns."""

# Columns of a validated verdict frame, in order, with their pandas dtypes.
VERDICT_DTYPES: dict[str, str] = {
    "dataset": "string",
    "judge": "string",
    "prompt_id": "string",
    "variant": "int64",
    "variant_kind": "string",
    "turn": "int64",
    "category": "string",
    "model_a": "string",
    "model_b": "string",
    "winner": "string",
    "order": "string",
    "prob_a": "float64",
    "annotator": "string",
    "explanation": "string",
    "battle_id": "string",  # the source's own id of the battle / vote (migration 030); may be missing
    "tstamp": "float64",  # seconds since the epoch when the source has a time; NaN otherwise
    "strength": "Int64",  # 2 = strong (A>>B), 1 = clear (A>B); missing for ties and plain winners
    "source_file": "string",
    "source_line": "Int64",  # nullable: rows made by a judge run may have no file line
}
VERDICT_COLUMNS: tuple[str, ...] = tuple(VERDICT_DTYPES)

STYLE_FEATURES: tuple[str, ...] = ("tokens", "headers", "lists", "bold")
"""The four style features of an answer (LMArena's, in its order): tokens, markdown headers, list items,
bold spans. ``engine.style`` says where they come from."""
STYLE_COLUMNS: tuple[str, ...] = tuple(f"{f}_{side}" for side in ("a", "b") for f in STYLE_FEATURES)
"""The verdicts' optional per-side count columns (migration 070): model_a's four, then model_b's four
(``tokens_a, headers_a, lists_a, bold_a, tokens_b, ...``); NULL / NaN where the source gave none. Not in
``VERDICT_COLUMNS``: only the paths that carry them (import, export, attach, the vote read) name them."""

DEFAULT_JUDGE = "judge"
DEFAULT_TURN = 1
DEFAULT_DATASET = "vicuna80"
