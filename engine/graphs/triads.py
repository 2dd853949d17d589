"""Every model triple of every graph classified by its pattern of wins and ties (paper 001, App. B.1).

A triple {a, b, c} (a < b < c in the stack's model order) whose three pairs were all compared has
one of 3³ = 27 outcome patterns. Each pair's outcome is coded from the first model's side:
0 = ``>`` (wins), 1 = ``~`` (tie), 2 = ``<`` (loses), and the pattern id is

    pattern = 9 · o(a, b) + 3 · o(b, c) + o(a, c)        (0 … 26).

A pattern is *transitive* when the three outcomes are a weak order (a ranking that may have ties):
13 patterns are. The other 14 are the non-transitive conditions of paper 001, Appendix B.1, in
the paper's order: ``pnt_pattern`` numbers them 1 … 14 by pattern id (0 for a transitive
pattern). Note: as printed, the paper's items 11 and 12 read (A<B, B>C, A>C) and (A<B, B>C, A~C),
which are transitive (B > A > C; B above A ~ C), while their mirror images under > ↔ < of items 4
and 3, (A<B, B~C, A>C) and (A<B, B~C, A~C), are missing; the list is closed under that mirror
otherwise, so we read those two items as the mirrored ones (a typo in the paper). The weak-order
test below decides; tests/test_triads.py checks the count and the mirror symmetry.
Up to relabelling there are seven kinds:

| kind              | transitive | patterns | shape (x, y, z: the triple in the orientation below) |
| ----------------- | ---------- | -------- | ---------------------------------------------------- |
| ``order``         | yes        | 6        | x > y, y > z, x > z                                  |
| ``tie-top``       | yes        | 3        | x ~ y, x > z, y > z                                  |
| ``tie-bottom``    | yes        | 3        | x > y, x > z, y ~ z                                  |
| ``all-tie``       | yes        | 1        | x ~ y, y ~ z, x ~ z                                  |
| ``cycle``         | no         | 2        | x > y, y > z, z > x  (strict 3-cycle)                |
| ``tied-ends``     | no         | 6        | x > y, y > z, x ~ z  (a strict chain whose ends tie) |
| ``unchained-ties``| no         | 6        | x ~ y, y ~ z, x > z  (two ties that do not chain)    |

Relation to the cycle counts of engine/graphs/cycles.py: each non-transitive kind carries exactly one
directed 3-cycle of A and none of B (``tied-ends``: x→y→z→x; ``unchained-ties``: x→z→y→x); an
``all-tie`` triple carries two of each; transitive kinds carry none; a triple with a missing pair
carries none. Hence C3_bad = number of non-transitive triples and C3 = C3_bad + 2 · (all-tie
triples), per graph (tested).

Pairs count as compared where ``observed`` is set and at least one edge is present.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from engine.graphs.stack import GraphStack

KINDS: tuple[str, ...] = (
    "order", "tie-top", "tie-bottom", "all-tie", "cycle", "tied-ends", "unchained-ties",
)
NONTRANSITIVE_KINDS: tuple[str, ...] = ("cycle", "tied-ends", "unchained-ties")
SYMBOLS = (">", "~", "<")
_FLIP = (2, 1, 0)


def _decode(pattern: int) -> tuple[int, int, int]:
    return pattern // 9, (pattern // 3) % 3, pattern % 3


def _outcome(codes: tuple[int, int, int], p: int, q: int) -> int:
    """Outcome of position p against position q (0, 1, 2 = sorted a, b, c) from (ab, bc, ac) codes."""
    lo, hi = min(p, q), max(p, q)
    code = {(0, 1): codes[0], (1, 2): codes[1], (0, 2): codes[2]}[(lo, hi)]
    return code if p == lo else _FLIP[code]


# Oriented shape of each kind: required outcomes of (x vs y, y vs z, x vs z).
_SHAPES: dict[str, tuple[int, int, int]] = {
    "order": (0, 0, 0), "tie-top": (1, 0, 0), "tie-bottom": (0, 1, 0), "all-tie": (1, 1, 1),
    "cycle": (0, 0, 2), "tied-ends": (0, 0, 1), "unchained-ties": (1, 1, 0),
}


def _is_weak_order(codes: tuple[int, int, int]) -> bool:
    """Some assignment of levels to a, b, c reproduces every outcome (ties = equal levels)."""
    for levels in itertools.product(range(3), repeat=3):
        if all(
            _outcome(codes, p, q) == (0 if levels[p] > levels[q] else 1 if levels[p] == levels[q] else 2)
            for p, q in ((0, 1), (1, 2), (0, 2))
        ):
            return True
    return False


def _pattern_table() -> pd.DataFrame:
    """The 27 patterns: kind, transitive flag, paper 001 B.1 number and the orienting permutation."""
    rows = []
    pnt = 0
    for pattern in range(27):
        codes = _decode(pattern)
        transitive = _is_weak_order(codes)
        pnt = pnt if transitive else pnt + 1
        for perm in itertools.permutations(range(3)):  # lexicographic: a cycle starts at a
            x, y, z = perm
            shape = (_outcome(codes, x, y), _outcome(codes, y, z), _outcome(codes, x, z))
            kind = next((k for k, s in _SHAPES.items() if s == shape), None)
            if kind is not None:
                break
        rows.append({
            "pattern": pattern, "kind": kind, "transitive": transitive,
            "pnt_pattern": 0 if transitive else pnt, "perm": perm,
            "outcomes": " ".join(SYMBOLS[c] for c in codes),
        })
    return pd.DataFrame(rows).set_index("pattern")


PATTERNS: pd.DataFrame = _pattern_table()
"""One row per pattern id 0..26: kind, transitive, pnt_pattern, perm (orientation), outcomes."""

_KIND_CODE = np.array([KINDS.index(k) for k in PATTERNS["kind"]], dtype=np.int8)
_TRANSITIVE = PATTERNS["transitive"].to_numpy(bool)
_PNT = PATTERNS["pnt_pattern"].to_numpy(np.int8)
_PERM = np.array(PATTERNS["perm"].tolist(), dtype=np.int64)


def triples(n: int) -> np.ndarray:
    """(C(n,3), 3) int64: all index triples a < b < c in lexicographic order."""
    if n < 3:
        return np.zeros((0, 3), dtype=np.int64)
    return np.array(list(itertools.combinations(range(n), 3)), dtype=np.int64)


def pair_outcomes(adj: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """(T, n, n) int8: 0 if i beat j, 1 tie, 2 j beat i, −1 not compared (or i = j)."""
    adj = np.asarray(adj, dtype=bool)
    back = adj.swapaxes(1, 2)
    out = np.where(adj & back, 1, np.where(adj, 0, 2)).astype(np.int8)
    present = np.asarray(observed, dtype=bool) & (adj | back)
    out[~present] = -1
    return out


def triad_patterns(adj: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pattern id of every triple of every graph: ((T, M) int8, −1 where a pair is missing; (M, 3)).

    Memory is T · C(n,3) bytes (456 kB for the paper's T = 400, n = 20).
    """
    o = pair_outcomes(adj, observed)
    tri = triples(o.shape[1])
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    oab, obc, oac = o[:, a, b], o[:, b, c], o[:, a, c]
    pat = (9 * oab + 3 * obc + oac).astype(np.int8)
    pat[(oab < 0) | (obc < 0) | (oac < 0)] = -1
    return pat, tri


def _bucket_patterns(graphs):
    """Per bucket of at least 3 models: (bucket, (T_k, M_k) pattern ids, (M_k, 3) local triples)."""
    from engine.graphs.buckets import as_buckets

    b = as_buckets(graphs)
    return b, [(bk, *triad_patterns(bk.adj, bk.observed)) for bk in b.at_least(3)]


def classify_triples(graphs) -> pd.DataFrame:
    """Every fully compared triple of every graph, models in stack order (a < b < c).

    Columns: graph (position in the stack), model_a, model_b, model_c (categoricals over
    ``stack.models``), pattern (0..26), pnt_pattern (1..14 per paper 001 App. B.1, 0 if
    transitive), kind (categorical over ``KINDS``), transitive (bool). Sorted by graph, then triple.
    ``graphs``: a GraphStack or GraphBuckets; each graph's triples come from its own models.
    """
    b, parts = _bucket_patterns(graphs)
    g_all, codes, pats = [], [], []
    for bk, pat, tri in parts:
        g, m = np.nonzero(pat >= 0)
        g_all.append(bk.graph[g])
        codes.append(
            np.take_along_axis(bk.members[g], tri[m], axis=1) if len(g) else np.zeros((0, 3), np.int64)
        )
        pats.append(pat[g, m])
    g = np.concatenate(g_all) if g_all else np.zeros(0, np.int64)
    tri_codes = np.concatenate(codes) if codes else np.zeros((0, 3), np.int64)
    p = np.concatenate(pats).astype(np.int8) if pats else np.zeros(0, np.int8)
    order = (
        np.lexsort((tri_codes[:, 2], tri_codes[:, 1], tri_codes[:, 0], g))
        if len(g)
        else np.zeros(0, np.int64)
    )
    g, tri_codes, p = g[order].astype(np.int64), tri_codes[order], p[order]
    code_type = np.int16 if len(b.models) < 2**15 else np.int64
    tri_codes = tri_codes.astype(code_type).T.copy()  # (3, K): one contiguous row per position
    models = list(b.models)

    def cat(c: np.ndarray, categories: list[str]) -> pd.Categorical[str]:
        return pd.Categorical.from_codes(c, categories=pd.Index(categories), validate=False)

    return pd.DataFrame({
        "graph": g,
        "model_a": cat(tri_codes[0], models),
        "model_b": cat(tri_codes[1], models),
        "model_c": cat(tri_codes[2], models),
        "pattern": p,
        "pnt_pattern": _PNT[p],
        "kind": cat(_KIND_CODE[p], list(KINDS)),
        "transitive": _TRANSITIVE[p],
    })


def nontransitive_triads(graphs) -> pd.DataFrame:
    """The non-transitive triples of all graphs, oriented so the kind reads x, y, z = model_a, b, c.

    Columns: graph, model_a, model_b, model_c (str), kind. Orientation (see the module table):
    ``cycle`` a > b > c > a starting at the model first in stack order; ``tied-ends``
    a > b > c with a ~ c; ``unchained-ties`` a ~ b ~ c with a > c. Sorted by graph, then triple.
    """
    b, parts = _bucket_patterns(graphs)
    g_all, oriented_all, p_all, sort_all = [], [], [], []
    for bk, pat, tri in parts:
        bad = (pat >= 0) & ~_TRANSITIVE[np.where(pat >= 0, pat, 0)]
        g, m = np.nonzero(bad)
        p = pat[g, m].astype(np.int64)
        glob = np.take_along_axis(bk.members[g], tri[m], axis=1)  # sorted triple, global indices
        g_all.append(bk.graph[g])
        sort_all.append(glob)
        oriented_all.append(np.take_along_axis(glob, _PERM[p], axis=1))
        p_all.append(p)
    if g_all:
        g, glob = np.concatenate(g_all), np.concatenate(sort_all)
        oriented, p = np.concatenate(oriented_all), np.concatenate(p_all)
        order = np.lexsort((glob[:, 2], glob[:, 1], glob[:, 0], g))
        g, oriented, p = g[order], oriented[order], p[order]
    else:
        g, oriented, p = np.zeros(0, np.int64), np.zeros((0, 3), np.int64), np.zeros(0, np.int64)
    names = np.asarray(b.models, dtype=object)
    return pd.DataFrame({
        "graph": g.astype(np.int64),
        "model_a": names[oriented[:, 0]],
        "model_b": names[oriented[:, 1]],
        "model_c": names[oriented[:, 2]],
        "kind": np.array(KINDS, dtype=object)[_KIND_CODE[p]],
    }).astype({"model_a": str, "model_b": str, "model_c": str, "kind": str})


def cyclic_triads(stack: GraphStack, t: int) -> pd.DataFrame:
    """Non-transitive triads of graph ``t``: model_a, model_b, model_c, kind (see nontransitive_triads)."""
    df = nontransitive_triads(stack.subset([int(t)]))
    return df.drop(columns="graph").reset_index(drop=True)
