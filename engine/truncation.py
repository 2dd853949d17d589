"""Cycle-aware truncation: score each graph by its bad short cycles and keep the K most consistent.

Paper 000, Section 3.1 / Appendix A.2: a graph's truncation score is
``S = λ3·C3_bad + λ4·C4_bad`` (the paper's ``S_mu = C3_bad + mu·C4_bad`` is λ3 = 1, λ4 = mu).
Keep-K keeps the K graphs with the smallest score, over the whole pool or K per category, and
reports the threshold ``S_K`` (the largest kept score). Equal scores are ordered by the graph key
(dataset, judge, prompt_id, variant, turn), prompt ids compared naturally (``"2" < "10"``), so a
selection never depends on row order or on the random state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import LensError
from .schema import GRAPH_KEY


@dataclass(frozen=True)
class Selection:
    """Which graphs keep-K kept.

    ``index``: positional indices (into the scored pool) of the kept graphs, sorted ascending;
    ``threshold``: S_K, the largest kept score (a float, or a Series by category when per category);
    ``k``: K; ``scores``: the score of every graph in the pool.
    """

    index: np.ndarray
    threshold: float | pd.Series
    k: int
    scores: np.ndarray

    @property
    def n_kept(self) -> int:
        return int(self.index.size)


def truncation_scores(
    counts: pd.DataFrame, mu: float = 1.0, lam3: float = 1.0, lam4: float | None = None
) -> np.ndarray:
    """S = lam3·C3_bad + lam4·C4_bad per graph (lam4 = mu when not given); paper 000, eq. (1).

    ``counts`` is the frame of ``engine.cycles.cycle_counts`` (columns ``c3_bad``, ``c4_bad``).
    """
    missing = [c for c in ("c3_bad", "c4_bad") if c not in counts.columns]
    if missing:
        raise LensError(f"The cycle-count table lacks the column(s) {', '.join(missing)}.")
    w4 = float(mu) if lam4 is None else float(lam4)
    w3 = float(lam3)
    for name, v in (("mu/lam4", w4), ("lam3", w3)):
        if not np.isfinite(v) or v < 0:
            raise LensError(f"The truncation weight {name} must be a finite number ≥ 0; got {v}.")
    c3 = counts["c3_bad"].to_numpy(dtype=np.float64)
    c4 = counts["c4_bad"].to_numpy(dtype=np.float64)
    return w3 * c3 + w4 * c4


_NUM = re.compile(r"^\s*[-+]?\d+(\.\d+)?\s*$")


def natural_key_order(values: pd.Series) -> np.ndarray:
    """Rank codes of ``values`` in natural order: numeric strings numerically, before the others,
    which compare as text. Returns int64 codes (equal values → equal codes)."""
    s = values.astype("string").fillna("")
    is_num = s.str.match(_NUM).fillna(False).to_numpy(dtype=bool)
    num = np.where(is_num, pd.to_numeric(s.where(is_num), errors="coerce").to_numpy(dtype=np.float64), 0.0)
    text = s.to_numpy(dtype=object)
    frame = pd.DataFrame({"nonnum": ~is_num, "num": num, "text": text})
    ordered = frame.drop_duplicates().sort_values(["nonnum", "num", "text"]).reset_index(drop=True)
    ordered["code"] = np.arange(len(ordered), dtype=np.int64)
    return frame.merge(ordered, on=["nonnum", "num", "text"], how="left")["code"].to_numpy(np.int64)


def key_order(keys: pd.DataFrame) -> np.ndarray:
    """Positions of ``keys`` rows sorted by graph key (prompt_id natural); a total, stable order."""
    cols: list[np.ndarray] = []
    for c in GRAPH_KEY:
        if c not in keys.columns:
            continue
        if c == "prompt_id":
            cols.append(natural_key_order(keys[c]))
        elif c in ("variant", "turn"):
            cols.append(pd.to_numeric(keys[c], errors="coerce").fillna(-1).to_numpy(np.float64))
        else:
            cols.append(pd.factorize(keys[c].astype("string").fillna(""), sort=True)[0])
    if not cols:
        return np.arange(len(keys))
    # np.lexsort: last key is primary
    return np.lexsort(tuple(reversed(cols)))


def keep_order(scores: np.ndarray, keys: pd.DataFrame) -> np.ndarray:
    """Positions of all graphs ordered by (score, graph key), best first: keep-K takes a prefix."""
    tie_rank = np.empty(len(keys), dtype=np.int64)
    tie_rank[key_order(keys)] = np.arange(len(keys))
    return np.lexsort((tie_rank, scores))


def select_keep_k(
    scores: np.ndarray, keys: pd.DataFrame, k: int, per_category: bool = False
) -> Selection:
    """Keep the K graphs with the smallest score (K per category when ``per_category``).

    Ties in score are broken by graph key (see module docstring). ``keys`` has one row per score
    (the ``GraphStack.keys`` frame); per category it needs a ``category`` column.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or len(keys) != s.size:
        raise LensError(f"There are {s.size} scores but {len(keys)} graph keys; they must match one to one.")
    if np.isnan(s).any():
        raise LensError(f"Graph at position {int(np.flatnonzero(np.isnan(s))[0])} has no truncation score (NaN).")
    try:
        k_int = int(k)
    except (TypeError, ValueError):
        raise LensError(f"K must be a whole number; got {k!r}.") from None
    if k_int != k:
        raise LensError(f"K must be a whole number; got {k!r}.")
    keys = keys.reset_index(drop=True)
    if not per_category:
        if not 1 <= k_int <= s.size:
            raise LensError(f"K must be between 1 and the pool size {s.size}; got {k_int}.")
        order = keep_order(s, keys)
        kept = np.sort(order[:k_int])
        return Selection(index=kept, threshold=float(s[kept].max()), k=k_int, scores=s)
    if "category" not in keys.columns:
        raise LensError("Per-category keep-K needs a category for every graph, and the keys have none.")
    cats = keys["category"].astype("string")
    if cats.isna().any():
        pos = int(np.flatnonzero(cats.isna().to_numpy())[0])
        raise LensError(f"Graph at position {pos} has no category, so per-category keep-K cannot place it.")
    sizes = cats.value_counts()
    if k_int < 1 or k_int > int(sizes.min()):
        small = sizes.idxmin()
        raise LensError(
            f"K must be between 1 and the smallest category size {int(sizes.min())} "
            f"(category {small!r}); got {k_int}."
        )
    order = keep_order(s, keys)
    cat_codes, uniques = pd.factorize(cats, sort=True)
    ordered_codes = cat_codes[order]
    # rank of each graph within its category, following the global (score, key) order
    # rank of each graph within its category along the (score, key) order: a stable sort by
    # category keeps that order inside each block, then subtract each block's start
    by_cat = np.argsort(ordered_codes, kind="stable")
    starts = np.searchsorted(ordered_codes[by_cat], np.arange(len(uniques)))
    within = np.empty(order.size, dtype=np.int64)
    within[by_cat] = np.arange(order.size) - starts[ordered_codes[by_cat]]
    kept = np.sort(order[within < k_int])
    thr = pd.Series(s[kept], index=cats.to_numpy()[kept]).groupby(level=0).max()
    thr.index.name = "category"
    thr.name = "threshold"
    return Selection(index=kept, threshold=thr.astype(float), k=k_int, scores=s)
