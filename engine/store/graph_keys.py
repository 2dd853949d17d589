"""Which (prompt, variant, judge) of a selection hold a graph, read in SQL: what the Prompt inspector's
pickers list, without building a million graphs to list their keys.

A graph is one ``schema.GRAPH_KEY`` with at least one valid verdict (``engine.graphs.stack``: a key whose
verdicts are all invalid is no graph). A stack orders its graphs by judge, prompt, variant and turn; the
rows here come in that order, one per (prompt, variant, judge) whatever its turns, and a prompt is first
seen with its first judge. DuckDB compares text by its UTF-8 bytes, the code-point order Python and pandas
sort by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from engine.store.connection import Store


@dataclass(frozen=True)
class PromptVariantJudges:
    """``prompts``: the distinct prompt ids in order of first appearance in a stack; ``text_rank``: each
    one's position in code-point order; per row (stack order) ``prompt`` (an index into ``prompts``),
    ``variant`` and ``judge``."""

    prompts: np.ndarray
    text_rank: np.ndarray
    prompt: np.ndarray
    variant: np.ndarray
    judge: np.ndarray


def prompt_variant_judges(store: Store, dataset: str, *, judge: str | None = None,
                          category: str | None = None) -> PromptVariantJudges:
    """The rows holding a graph of the selection (the pages' judge and category filters).

    One query ranks each distinct (prompt, variant, judge) row's judge and prompt id in code-point order
    (two window sorts); the stack order and the first-seen numbering are integer sorts in numpy. The
    query that ordered the rows, numbered the prompts by first judge and joined them back in SQL sorted a
    million text rows three times (1.5 s of CPU at a million one-pair prompts; this, 0.65 s)."""
    import numpy as np

    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category, valid_only=True)
    con = store.cursor()
    got = con.execute(
        "SELECT prompt_id, variant, dense_rank() OVER (ORDER BY judge) - 1 AS j, "
        "dense_rank() OVER (ORDER BY prompt_id) - 1 AS text_rank "
        f"FROM (SELECT prompt_id, variant, judge FROM {rel} GROUP BY prompt_id, variant, judge)",
        params(rel),
    ).fetchnumpy()
    names = np.array([r[0] for r in con.execute(
        f"SELECT DISTINCT judge FROM {rel} ORDER BY judge", params(rel)).fetchall()], dtype=object)
    text_rank = np.asarray(got["text_rank"], dtype=np.int64)
    variant = np.asarray(got["variant"], dtype=np.int64)
    j = np.asarray(got["j"], dtype=np.int64)
    order = np.lexsort((variant, text_rank, j))  # the stack's order: judge, prompt id, variant
    ranked = text_rank[order]
    n = int(text_rank.max()) + 1 if text_rank.size else 0
    first = np.full(n, ranked.size, dtype=np.int64)  # per prompt (by text rank): its first row in that order
    np.minimum.at(first, ranked, np.arange(ranked.size, dtype=np.int64))
    by_seen = np.argsort(first, kind="stable")  # prompts (text ranks) in order of first appearance
    seen_of = np.empty(n, dtype=np.int64)
    seen_of[by_seen] = np.arange(n, dtype=np.int64)
    prompts = np.empty(n, dtype=object)
    prompts[seen_of[text_rank]] = np.asarray(got["prompt_id"], dtype=object)
    return PromptVariantJudges(prompts, by_seen, seen_of[ranked], variant[order], names[j[order]])
