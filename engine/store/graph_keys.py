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
    """The rows holding a graph of the selection (the pages' judge and category filters)."""
    import numpy as np

    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge, category=category, valid_only=True)
    got = store.cursor().execute(
        f"WITH r AS (SELECT prompt_id, variant, judge FROM {rel} GROUP BY prompt_id, variant, judge), "
        "t AS (SELECT prompt_id, min(judge) AS j0, row_number() OVER (ORDER BY prompt_id) - 1 AS text_rank "
        "FROM r GROUP BY prompt_id), "
        "p AS (SELECT prompt_id, text_rank, row_number() OVER (ORDER BY j0, text_rank) - 1 AS seen FROM t) "
        "SELECT r.prompt_id, p.seen, p.text_rank, r.variant, r.judge FROM r JOIN p USING (prompt_id) "
        "ORDER BY r.judge, p.text_rank, r.variant",
        params(rel),
    ).fetchnumpy()
    seen = np.asarray(got["seen"], dtype=np.int64)
    n = int(seen.max()) + 1 if len(seen) else 0
    prompts, text_rank = np.empty(n, dtype=object), np.empty(n, dtype=np.int64)
    prompts[seen] = np.asarray(got["prompt_id"], dtype=object)
    text_rank[seen] = np.asarray(got["text_rank"], dtype=np.int64)
    return PromptVariantJudges(prompts, text_rank, seen, np.asarray(got["variant"], dtype=np.int64),
                               np.asarray(got["judge"], dtype=object))
