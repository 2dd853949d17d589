"""Dataset model names matched to a reference's names without a hand-written map (issue 25, point 1).

Two passes, the first that decides wins:

1. exact: the dataset's name is one of the reference's names, character for character;
2. normalised: ``name_key`` of both sides is equal, where ``name_key`` is the name in Unicode NFKC
   form, case-folded, with every character that is not a letter or a digit removed
   (``"GPT-3.5 Turbo"`` and ``"gpt-3.5-turbo"`` both give ``"gpt35turbo"``).

A normalised match is made only when it is one-to-one: when several reference names share the key,
or several of the dataset's names share it, or its one reference name is already taken (by an exact
match or by an entry of a map), the name is left unmatched and listed as ambiguous with the names it
could mean. So every reference name stands for at most one dataset model that this module matched.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

EXACT = "exact"
NORMALISED = "normalised"


def name_key(name: str) -> str:
    """The normalised form two names are compared by: NFKC, case-folded, letters and digits only."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", str(name)).casefold() if ch.isalnum())


@dataclass(frozen=True)
class NameMatch:
    """What matching found: ``matched`` model → reference name, ``how`` model → 'exact' or
    'normalised', ``unmatched`` (no reference name has the model's key), ``ambiguous`` model → the
    reference names it could mean (or the one it would take from another name)."""

    matched: dict[str, str] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()
    ambiguous: dict[str, tuple[str, ...]] = field(default_factory=dict)


def match_names(models: Iterable[str], reference_names: Iterable[str],
                taken: Iterable[str] = ()) -> NameMatch:
    """Match each of ``models`` to one of ``reference_names`` (exact, then normalised, one-to-one);
    ``taken``: reference names a map already gives to other models (never matched again by key)."""
    refs = list(dict.fromkeys(str(r) for r in reference_names))
    ref_set = set(refs)
    todo = sorted(set(map(str, models)))
    matched = {m: m for m in todo if m in ref_set}
    used = set(taken) | set(matched.values())
    by_key: dict[str, list[str]] = defaultdict(list)
    for r in refs:
        by_key[name_key(r)].append(r)
    rest = [m for m in todo if m not in matched]
    model_keys: dict[str, list[str]] = defaultdict(list)
    for m in rest:
        model_keys[name_key(m)].append(m)
    unmatched: list[str] = []
    ambiguous: dict[str, tuple[str, ...]] = {}
    for m in rest:
        key = name_key(m)
        cands = by_key.get(key, []) if key else []
        if not cands:
            unmatched.append(m)
        elif len(cands) > 1 or len(model_keys[key]) > 1 or cands[0] in used:
            ambiguous[m] = tuple(cands)
        else:
            matched[m] = cands[0]
    how = {m: EXACT if m == r else NORMALISED for m, r in matched.items()}
    return NameMatch(dict(sorted(matched.items())), dict(sorted(how.items())), tuple(unmatched), ambiguous)
