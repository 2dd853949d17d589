"""Pair counts of votes aggregated inside DuckDB: what a count ranker fits, with no per-verdict rows in Python.

``engine.ranking.vote_query`` hands Python one small-integer row per verdict and
``engine.rankers.votes.votes`` pairs them into votes; at 10^7 verdicts that transfer and the sorting
behind it are most of a leaderboard's time. Here DuckDB groups the verdicts by (graph, annotator +
battle id, model pair) and counts, per group, the outcomes of the verdicts whose presentation order
is known and of those whose order is unknown. A group settles its votes from those counts alone
(the vote unit of ``engine.rankers.votes``):

- verdicts of unknown order are each their own vote;
- one verdict shown lo-first and one shown hi-first make one vote, combined by the policy;
- verdicts all shown the same way (or one known verdict) are each their own vote.

Only a group holding two or more verdicts in one order *and* one in the other needs the source-order
pairing; when any such group exists ``pair_counts_sql`` returns None and the caller takes the
per-verdict path. A second aggregation folds groups with equal (pair, counts) into one row, so
Python receives a few rows per model pair, plus per-model distinct graph and prompt counts.
Judge probabilities (``prob_a``) need per-vote means: a source with any also returns None.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.rankers.votes import A_WINS, TIE, PairCounts
from engine.ranking.vote_query import GRAPH_HASH, _models_and_invalid, columns_of, filtered_source

MAX_PACKED = 127
"""Verdicts per graph the packed counters hold: nine 7-bit counts (order known lo-first / hi-first /
unknown x outcome) in one BIGINT sum; a graph with more verdicts takes the per-verdict path."""


@dataclass(frozen=True)
class SqlCounts:
    """Pair counts aggregated in DuckDB, with the vote and verdict totals the leaderboard reports."""

    counts: PairCounts
    n_votes: int
    n_verdicts: int
    n_invalid: int


def pair_counts_sql(con, relation: str, *, judge=None, category=None, policy: str) -> SqlCounts | None:
    """Vote pair counts of ``relation`` under the filters, or None where only the per-verdict path is exact
    (some group needs source-order pairing, or some verdict carries a judge probability)."""
    cols = columns_of(con, relation)
    src = filtered_source(relation, cols, judge, category)
    n_invalid, models = _models_and_invalid(con, src)
    if "prob_a" in cols and con.execute(
            f"SELECT count(prob_a) FROM {src} WHERE winner <> 'invalid'").fetchall()[0][0]:
        return None
    keys = con.execute(f"SELECT DISTINCT judge, variant, turn FROM {src} WHERE winner <> 'invalid'").fetchall()
    if len(keys) > 1:
        return None  # several judges, variants or turns per prompt: distinct prompts need the per-verdict path
    n = len(models)
    if n == 0:
        return SqlCounts(PairCounts(models, np.zeros((0, 0)), np.zeros((0, 0)), votes=np.zeros(0, np.int64),
                                    n_graphs=np.zeros(0, np.int64), n_prompts=np.zeros(0, np.int64)), 0, 0, n_invalid)
    order_col = "\"order\"" if "order" in cols else "NULL"
    codes = pd.DataFrame({"model": list(models), "code": np.arange(n, dtype=np.int16)})
    con.register("lens_count_codes", codes)
    try:
        out = con.execute(f"""
            SELECT {GRAPH_HASH} AS g, ma.code AS a, mb.code AS b,
                   (CASE s.winner WHEN 'A' THEN 1 WHEN 'B' THEN 2 ELSE 3 END)::TINYINT AS w,
                   (CASE {order_col} WHEN 'AB' THEN 1 WHEN 'BA' THEN 2 ELSE 0 END)::TINYINT AS o
            FROM {src} s JOIN lens_count_codes ma ON s.model_a = ma.model JOIN lens_count_codes mb ON s.model_b = mb.model
            WHERE s.winner <> 'invalid'""").fetchnumpy()
    finally:
        con.unregister("lens_count_codes")
    g = np.asarray(out.pop("g"), dtype=np.uint64)
    a, b = np.asarray(out.pop("a"), dtype=np.int64), np.asarray(out.pop("b"), dtype=np.int64)
    w, o = np.asarray(out.pop("w"), dtype=np.int8), np.asarray(out.pop("o"), dtype=np.int8)
    a_first = a < b
    lo, hi = np.where(a_first, a, b), np.where(a_first, b, a)
    del a, b
    # presentation: 1 lo shown first, 0 hi first, -1 unknown
    shown = np.where(o == 0, -1, ((o == 1) == a_first).astype(np.int8)).astype(np.int8)
    pts = np.where(w == TIE, 0, np.where((w == A_WINS) == a_first, 1, -1)).astype(np.int64)
    del w, o, a_first
    srt = np.sort(g)
    shared = np.unique(srt[1:][srt[1:] == srt[:-1]])  # graphs holding two or more verdicts
    del srt
    single = np.ones(g.size, dtype=bool)
    n_graphs = np.zeros(n, dtype=np.int64)
    if shared.size:
        at = np.minimum(np.searchsorted(shared, g), shared.size - 1)
        single = shared[at] != g
        gid, slo, shi, ssh = at[~single], lo[~single], hi[~single], shown[~single]
        first = np.full(shared.size, g.size)
        np.minimum.at(first, gid, np.arange(gid.size))
        if bool(((slo != slo[first][gid]) | (shi != shi[first][gid])).any()):
            return None  # a graph holds several model pairs: its models' graph counts need the per-verdict path
        both = (np.bincount(gid, weights=ssh == 1, minlength=shared.size) > 0) & (
            np.bincount(gid, weights=ssh == 0, minlength=shared.size) > 0)
        if bool(both.any()):
            return None  # verdicts shown in both orders in one graph pair into votes by voter and source order
        n_graphs += np.bincount(slo[first], minlength=n) + np.bincount(shi[first], minlength=n)
    # every verdict is its own vote here (no graph shows one pair in both orders)
    n_graphs += np.bincount(lo[single], minlength=n) + np.bincount(hi[single], minlength=n)
    cnt = np.bincount((lo * n + hi) * 3 + pts + 1, minlength=3 * n * n).reshape(n, n, 3).astype(np.float64)
    W = cnt[:, :, 2] + cnt[:, :, 0].T
    T = cnt[:, :, 1] + cnt[:, :, 1].T
    per_model = (np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)).astype(np.int64)
    pc = PairCounts(models, W, T, votes=per_model, n_graphs=n_graphs, n_prompts=n_graphs.copy(),
                    n_graph_total=int(single.sum()) + int(shared.size))
    n_votes = n_verdicts = int(g.size)
    return SqlCounts(pc, n_votes, n_verdicts, n_invalid)
