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

_DIGITS = re.compile(r"([0-9]+)")  # ASCII digits: the vectorised split's (re.ASCII) too


def natural_key(text: object) -> tuple:
    """Sort key that compares runs of ASCII digits as numbers: "q2" < "q10", "2" < "10", "a" < "b"; any other
    digit ('²', an Arabic-Indic '٣') is text, as in ``natural_order``'s vectorised split."""
    parts = _DIGITS.split(str(text))
    return tuple((0, int(p), "") if p.isascii() and p.isdecimal() else (1, 0, p.casefold())
                 for p in parts if p != "")


_PREFIX_NUMBER = re.compile(r"^(\D*)(\d{0,15})$", re.ASCII)


def natural_sorted(values: Iterable[object]) -> list:
    """``values`` sorted by ``natural_key`` (ties keep their order). Ids of one text prefix and one
    trailing number (b17, q2, 10: every arena and per-prompt id seen so far) are sorted vectorised,
    as (prefix, number) with the same ties; any other id sorts all of them by ``natural_key``."""
    values = list(values)
    return [values[i] for i in natural_order(values).tolist()]


def natural_order(values: Iterable[object]):
    """The positions of ``values`` in ``natural_sorted``'s order (an int64 array): what a caller holding a
    million ids in an array needs, without a list of them rebuilt. Over 1,000 ids of plain ASCII prefixes
    with no line break the split into (prefix, number) runs in Arrow's compute kernels (the pandas split
    took seconds of CPU a million ids: one regex call per id); otherwise pandas' split or ``natural_key``,
    with the same order either way."""
    import numpy as np

    text = [str(v) for v in values]
    if len(text) > 1000:
        order = _arrow_prefix_number_order(text)
        if order is not None:
            return order
        parts = pd.Series(text, dtype=object).str.extract(_PREFIX_NUMBER)
        if not parts.isna().any().any():
            return _prefix_number_order(parts[0].str.casefold(), parts[1])
    keys = [natural_key(t) for t in text]
    return np.asarray(sorted(range(len(text)), key=keys.__getitem__), dtype=np.int64)


def _prefix_number_order(prefix: pd.Series, digits: pd.Series):
    """Stable order by (a prefix at all, folded prefix, a number at all, number): ``natural_key``'s order of
    ids that are one prefix and one trailing number of at most 15 digits."""
    import numpy as np

    return np.lexsort(
        (
            pd.to_numeric(digits.where(digits != "", "0")).to_numpy(np.int64),
            (digits != "").to_numpy(),
            pd.factorize(prefix, sort=True)[0],
            (prefix != "").to_numpy(),
        )
    ).astype(np.int64)


def _arrow_prefix_number_order(text: list[str]):
    """``_prefix_number_order`` split by Arrow (RE2: ``\\d`` is [0-9] as with re.ASCII; ``$`` only at the very
    end, so an id with a line break is left to pandas, whose ``$`` also matches before a final newline),
    when every id splits and every prefix is ASCII (casefold is then lower case); None otherwise."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(text, pa.large_string())
    if pc.any(pc.match_substring(arr, "\n")).as_py():
        return None
    parts = pc.extract_regex(arr, r"^(?P<prefix>\D*)(?P<digits>\d{0,15})$")
    if parts.null_count:
        return None
    prefix, digits = parts.field("prefix"), parts.field("digits")
    if not pc.all(pc.string_is_ascii(prefix)).as_py():
        return None
    folded = pc.ascii_lower(prefix)
    has_digits = pc.not_equal(digits, "")
    number = pc.cast(pc.if_else(has_digits, digits, "0"), pa.int64())
    prefix_rank = pc.rank(folded, sort_keys="ascending", tiebreaker="dense")
    return np.lexsort(
        (
            number.to_numpy(),
            has_digits.to_numpy(zero_copy_only=False),
            prefix_rank.to_numpy(),
            pc.not_equal(prefix, "").to_numpy(zero_copy_only=False),
        )
    ).astype(np.int64)


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
