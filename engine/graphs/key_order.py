"""The graph-key order: graphs sorted by (dataset, judge, prompt_id, variant, turn), prompt ids compared
naturally (``"2" < "10"``). Keep-K breaks score ties by it, and the common random numbers of the
protocols and curves give each graph its column by it, so neither depends on row order."""

from __future__ import annotations

import re

import numpy as np

from engine.frames import pd
from engine.store.schema import GRAPH_KEY

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


def key_rank(keys: pd.DataFrame) -> np.ndarray:
    """Rank of every row in the graph-key order (0 = first): a stable id of a graph within a stack."""
    r = np.empty(len(keys), dtype=np.int64)
    r[key_order(keys)] = np.arange(len(keys))
    return r
