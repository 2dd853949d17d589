"""Pair counts for a leaderboard from a lean DuckDB fetch, where every verdict is its own vote.

The general count path (``engine.ranking.vote_query`` rows → ``engine.rankers.votes.votes`` →
``Votes.pair_counts``) fetches seven columns per verdict (three of them 64-bit hashes) and then
sorts 2 x 10^7 folded keys for the per-model graph and prompt counts: at 10M battles x 200 models
that was 78 s and 2.2 GB. In the arena shape no verdict pairs with another into a vote (contract 2
of the brief: only the two presentation orders of one judge, annotator and battle on a pair in a
graph combine), so the counts need much less:

- one scan of facts (judge / variant / turn keys, winner spellings, self-comparisons, judge
  probabilities, which presentation orders occur), which also validates as ``check_winners`` does;
- one fetch of (graph hash, model codes, winner, order) per valid verdict;
- in numpy: the graphs holding two or more verdicts (one sort of the hashes), W and T by one count per
  cell (pair and outcome), and per model the distinct graphs (= distinct prompts with one judge /
  variant / turn);
- for a bootstrap, the fetched verdicts kept as ``Votes`` (every one its own vote), which the count
  bootstrap resamples as it would the general path's votes (``engine.ranking.count_bootstrap``).

``lean_pair_counts`` returns None, and the caller takes the general path, whenever that shortcut
would not be exact: some valid verdicts are shown AB and others BA (pairs may form), a graph holds
several model pairs, several (judge, variant, turn) keys exist (prompts and graphs differ), or a
verdict carries a judge probability (soft counts need per-vote means).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.errors import LensError
from engine.graphs.distinct import distinct_sorted
from engine.rankers.votes import A_WINS, TIE, PairCounts, Votes
from engine.ranking.vote_query import GRAPH_HASH, columns_of, filtered_source, model_codes
from engine.store.sql import Relation, params

if TYPE_CHECKING:
    import duckdb



@dataclass(frozen=True)
class SqlCounts:
    """Pair counts aggregated in DuckDB, with the vote and verdict totals the leaderboard reports."""

    counts: PairCounts
    n_votes: int
    n_verdicts: int
    n_invalid: int
    votes: Votes | None = None
    """The valid verdicts as votes (each its own), for a bootstrap; None unless asked (``votes_policy``)."""


def lean_pair_counts(con: duckdb.DuckDBPyConnection, relation: str | Relation, *, judge=None,
                     category=None, votes_policy: str | None = None) -> SqlCounts | None:
    """Vote pair counts of ``relation`` under the filters when every valid verdict is its own vote (then
    no combine policy applies), or None where only the general vote path is exact (module docstring).

    ``votes_policy`` (the board's combine policy, which no vote here needs): also keep the verdicts as
    ``Votes`` for the bootstrap's resamples. Their graph key is the general path's (``GRAPH_HASH``); their
    prompt key is that graph key too: with one (judge, variant, turn) key the graphs are the prompts, so
    the prompt bootstrap draws the same units (the general path keys them by a hash of the prompt id)."""
    cols = columns_of(con, relation)
    src = filtered_source(relation, cols, judge, category)
    n_invalid, has_prob, keys, both_orders = _source_facts(con, src, "prob_a" in cols, "order" in cols)
    if has_prob or both_orders:
        return None  # judge probabilities, or verdicts that may pair into votes: the per-verdict path
    if len(keys) > 1:
        # several judges, variants or turns per prompt: distinct prompts need the per-verdict path
        return None
    models = tuple(sorted(str(r[0]) for r in con.execute(
        f"SELECT DISTINCT m FROM (SELECT model_a AS m FROM {src} WHERE winner <> 'invalid' "
        f"UNION ALL SELECT model_b FROM {src} WHERE winner <> 'invalid')", params(src)).fetchall()))
    n = len(models)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return SqlCounts(PairCounts.of_votes(models, empty, empty, empty, votes=empty, n_graphs=empty,
                                             n_prompts=empty), 0, 0, n_invalid)  # refused by the caller
    order_col = "\"order\"" if "order" in cols else "NULL"
    codes = model_codes(models)
    out = con.execute(
        f"""
        SELECT {GRAPH_HASH} AS g, ma.code AS a, mb.code AS b,
               (CASE s.winner WHEN 'A' THEN 1 WHEN 'B' THEN 2 ELSE 3 END)::TINYINT AS w,
               (CASE {order_col} WHEN 'AB' THEN 1 WHEN 'BA' THEN 2 ELSE 0 END)::TINYINT AS o
        FROM {src} s JOIN {codes} ma ON s.model_a = ma.model
                     JOIN {codes} mb ON s.model_b = mb.model
        WHERE s.winner <> 'invalid'""",
        params(src, codes),
    ).fetchnumpy()
    g = np.asarray(out.pop("g"), dtype=np.uint64)
    a, b = np.asarray(out.pop("a"), dtype=np.int16), np.asarray(out.pop("b"), dtype=np.int16)
    w, o = np.asarray(out.pop("w"), dtype=np.int8), np.asarray(out.pop("o"), dtype=np.int8)
    a_first = a < b
    lo, hi = np.minimum(a, b), np.maximum(a, b)  # model codes as fetched (int16): no 64-bit copy per verdict
    del a, b
    # the outcome seen from lo, plus one: 2 lo won, 1 tie, 0 hi won (``Votes.cells``' last digit)
    outcome1 = np.where(w == TIE, np.int8(1), np.where((w == A_WINS) == a_first, np.int8(2), np.int8(0)))
    del w
    shared, n_repeat, rows, gid = _repeated_keys(g)  # graphs holding two or more verdicts, their rows
    n_graph_total = int(g.size - n_repeat)
    per_model = (np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)).astype(np.int64)
    n_graphs = per_model.copy()  # every verdict is its own graph but those sharing one (below)
    if shared.size:
        slo, shi = lo[rows], hi[rows]
        # presentation: 1 lo shown first, 0 hi first, -1 unknown
        ssh = np.where(o[rows] == 0, -1, ((o[rows] == 1) == a_first[rows]).astype(np.int8)).astype(np.int8)
        first = np.full(shared.size, g.size)
        np.minimum.at(first, gid, np.arange(gid.size))
        if bool(((slo != slo[first][gid]) | (shi != shi[first][gid])).any()):
            # a graph holds several model pairs: its models' graph counts need the per-verdict path
            return None
        both = (np.bincount(gid, weights=ssh == 1, minlength=shared.size) > 0) & (
            np.bincount(gid, weights=ssh == 0, minlength=shared.size) > 0)
        if bool(both.any()):
            # verdicts shown in both orders in one graph pair into votes by voter and source order
            return None
        later = np.ones(rows.size, dtype=bool)  # a shared graph's verdicts after its first: no new graph
        later[first] = False
        n_graphs -= np.bincount(slo[later], minlength=n) + np.bincount(shi[later], minlength=n)
    del o, a_first
    # every verdict is its own vote here (no graph shows one pair in both orders): W and T by cell
    from engine.ranking.count_bootstrap import occurring_cells  # with the bootstrap's module, not every board

    cells, of_vote = occurring_cells((lo.astype(np.int64) * n + hi) * 3 + outcome1, 3 * n * n)
    per_cell = np.bincount(of_vote, minlength=cells.size)
    del of_vote
    pc = PairCounts.of_votes(models, cells // 3 // n, cells // 3 % n, cells % 3 - 1, weight=per_cell,
                             votes=per_model, n_graphs=n_graphs, n_prompts=n_graphs.copy(),
                             n_graph_total=n_graph_total)
    n_votes = n_verdicts = int(g.size)
    kept = None
    if votes_policy is not None:
        kept = Votes(models, lo.astype(np.int64), hi.astype(np.int64), (outcome1 - 1).astype(np.int8), g, g,
                     np.arange(g.size), policy=votes_policy, n_verdicts=n_verdicts)
    return SqlCounts(pc, n_votes, n_verdicts, n_invalid, kept)


def _repeated_keys(key: np.ndarray) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """(the sorted distinct values occurring twice or more in ``key``, how many entries repeat an earlier
    equal one, the rows holding a repeated value in increasing order, that value's index in the first).

    Equal keys have equal high 32-bit words, so only the rows whose high word occurs twice or more can
    repeat: those words come from a sort of the 32-bit words (half the bytes of a sort of the keys:
    0.45 instead of 0.8 s of CPU at 10^7 rows), and the exact 64-bit comparison runs over their rows only
    (the repeats and about n^2 / 2^33 chance collisions of the words)."""
    little = sys.byteorder == "little" and key.dtype == np.uint64 and key.flags.c_contiguous
    word = key.view(np.uint32)[1::2] if little else (key >> np.uint64(32)).astype(np.uint32)
    srt = np.sort(word)
    twice = distinct_sorted(srt[1:][srt[1:] == srt[:-1]])
    del srt
    cand = _rows_in(word, twice)[0] if twice.size else np.zeros(0, np.intp)
    sub = key[cand]
    srt = np.sort(sub)
    repeat = srt[1:] == srt[:-1]
    shared = distinct_sorted(srt[1:][repeat])
    if not shared.size:
        return shared, 0, np.zeros(0, np.intp), np.zeros(0, np.intp)
    rows, gid = _rows_in(sub, shared)
    return shared, int(repeat.sum()), cand[rows], gid


def _rows_in(key: np.ndarray, sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of ``key`` whose value is in ``sorted_keys``, that value's index there; 64- or 32-bit keys).

    A bit table on the keys' low bits picks candidate rows first (a binary search of every row costs
    ~10x more at 10^7 rows); only the few candidates are searched exactly. The low bits are read from
    the keys' low 32-bit words (a view of ``key``: no 64-bit copy of every row, docs/notes/scale10m-32.md)."""
    bits = int(min(26, max(16, np.ceil(np.log2(max(sorted_keys.size, 1))) + 6)))
    mask = np.uint32((1 << bits) - 1)
    table = np.zeros(1 << bits, dtype=bool)
    table[sorted_keys.astype(np.uint32) & mask] = True  # the cast keeps the low 32 bits
    little = sys.byteorder == "little" and key.dtype == np.uint64 and key.flags.c_contiguous
    low = key if key.dtype == np.uint32 else key.view(np.uint32)[::2] if little else key.astype(np.uint32)
    cand = np.flatnonzero(table[low & mask])
    at = np.minimum(np.searchsorted(sorted_keys, key[cand]), sorted_keys.size - 1)
    hit = sorted_keys[at] == key[cand]
    return cand[hit], at[hit]


def _source_facts(con: duckdb.DuckDBPyConnection, src: str | Relation, prob_column: bool,
                  order_column: bool) -> tuple[int, bool, set, bool]:
    """(invalid verdicts, whether a valid verdict has a judge probability, the (judge, variant, turn)
    keys of the valid verdicts, whether valid verdicts show both orders AB and BA) in one scan;
    refuses what ``vote_query.check_winners`` refuses."""
    prob = "count(prob_a)" if prob_column else "0"
    orders = ("count(*) FILTER (WHERE \"order\" = 'AB'), count(*) FILTER (WHERE \"order\" = 'BA')"
              if order_column else "0, 0")
    rows = con.execute(
        f"SELECT judge, variant, turn, winner, count(*), count(*) FILTER (WHERE model_a = model_b), "
        f"{prob}, {orders} FROM {src} GROUP BY ALL",
        params(src),
    ).fetchall()
    valid = [r for r in rows if r[3] in ("A", "B", "tie")]
    n_self = sum(r[5] for r in rows if r[3] is not None and r[3] != "invalid")
    if n_self:
        raise LensError(f"{n_self} verdict(s) compare a model with itself.")
    bad = list(dict.fromkeys(r[3] for r in rows if r[3] not in ("A", "B", "tie", "invalid")))[:3]
    if bad:
        raise LensError(
            f"Verdict winners must be A, B, tie or invalid; found {', '.join(repr(b) for b in bad)}."
        )
    n_invalid = sum(r[4] for r in rows if r[3] == "invalid")
    both = bool(sum(r[7] for r in valid)) and bool(sum(r[8] for r in valid))
    return n_invalid, any(r[6] for r in valid), {r[:3] for r in valid}, both
