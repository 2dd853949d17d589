"""How the app names prompts and variants: prompt ids in natural order (q2 before q10, 9 before 10)
and variants by what they are ("original", "paraphrase 2", "sample 1") instead of bare integers.

A variant's number only says which rewrite it is; its kind (``variant_kind``: original, paraphrase
or sample) says what it is. ``k`` counts the variants of one kind within one prompt, in variant
order, so the synthetic dataset's variants 5-8 (sampling replicates) read "sample 1" … "sample 4".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: object) -> tuple:
    """Sort key that compares digit runs as numbers: "q2" < "q10", "2" < "10", "a" < "b"."""
    parts = _DIGITS.split(str(text))
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p.casefold()) for p in parts if p != "")


_PREFIX_NUMBER = re.compile(r"^(\D*)(\d{0,15})$", re.ASCII)


def natural_sorted(values: Iterable[object]) -> list:
    """``values`` sorted by ``natural_key`` (ties keep their order). Ids of one text prefix and one
    trailing number (b17, q2, 10: every arena and per-prompt id seen so far) are sorted vectorised,
    as (prefix, number) with the same ties; any other id sorts all of them by ``natural_key``."""
    import numpy as np

    values = list(values)
    text = pd.Series([str(v) for v in values], dtype=object)
    parts = text.str.extract(_PREFIX_NUMBER) if len(text) > 1000 else None
    if parts is None or parts.isna().any().any():
        return sorted(values, key=natural_key)
    prefix = parts[0].str.casefold()
    digits = parts[1]
    order = np.lexsort(
        (
            pd.to_numeric(digits.where(digits != "", "0")).to_numpy(np.int64),
            (digits != "").to_numpy(),
            pd.factorize(prefix, sort=True)[0],
            (prefix != "").to_numpy(),
        )
    )
    return [values[i] for i in order]


def variant_labels(keys: pd.DataFrame) -> pd.Series:
    """A label per row of graph keys (``prompt_id``, ``variant``, ``variant_kind``): "original" for
    the one original of a prompt, otherwise the kind and its 1-based count among that prompt's
    variants of the kind ("paraphrase 1", "sample 3"; "original 2" only if a prompt has two)."""
    if keys.empty:
        return pd.Series([], index=keys.index, dtype=object)
    kind = keys["variant_kind"].astype(object).where(keys["variant_kind"].notna(), None)
    kind = kind.where(
        kind.notna(), keys["variant"].astype(int).map(lambda v: "original" if v == 0 else "paraphrase")
    )
    frame = pd.DataFrame({"prompt": keys["prompt_id"].astype(str), "variant": keys["variant"].astype(int),
                          "kind": kind.astype(str)})
    distinct = frame.drop_duplicates(["prompt", "variant"]).sort_values(["prompt", "variant"])
    distinct["k"] = distinct.groupby(["prompt", "kind"]).cumcount() + 1
    distinct["n"] = distinct.groupby(["prompt", "kind"])["variant"].transform("size")
    plain = (distinct["kind"] == "original") & (distinct["n"] == 1)
    distinct["label"] = distinct["kind"].where(plain, distinct["kind"] + " " + distinct["k"].astype(str))
    lookup = distinct.set_index(["prompt", "variant"])["label"]
    idx = pd.MultiIndex.from_frame(frame[["prompt", "variant"]])
    return pd.Series(lookup.reindex(idx).to_numpy(), index=keys.index, dtype=object)
