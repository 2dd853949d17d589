"""Ranker parameters checked in one place: names, types and ranges, each refusal one sentence.

Why: a ranker parameter arrives as text from ``--param key=value`` (or as a Python value from the
library); a misspelt name, an unreadable number, a truthy ``soft=no`` or an Elo base of 1 must be
refused naming the parameter and the value, never turned into a traceback or a silent default.
The names a ranker knows are its keyword-only arguments; their types come from its annotations.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

from engine.errors import LensError
from engine.rankers.base import RANKERS

TRUE_WORDS = ("true", "1", "yes")
FALSE_WORDS = ("false", "0", "no")

RANGES: dict[tuple[str, str], tuple[Callable[[float], bool], str]] = {
    **{(r, "alpha"): (lambda v: v >= 0, "0 or more") for r in ("bt", "davidson", "rank-centrality", "elspr")},
    ("elo", "k"): (lambda v: v > 0, "greater than 0"),
    ("elo", "base"): (lambda v: v > 1, "greater than 1"),
    ("elo", "scale"): (lambda v: v > 0, "greater than 0"),
    ("kemeny", "exact_max"): (lambda v: v >= 0, "0 or more"),
    ("pged", "exact_max"): (lambda v: v >= 0, "0 or more"),
}
"""(ranker, parameter) → (accepts value, the range in words); numbers must also be finite."""

ELO_ORDERS = ("time", "input", "prompt")
"""Elo's update orders (``--param order=…``): by timestamp (source order among equal or missing times), by
source order (file, line), or by graph key then model pair (the stack's order)."""

ORDER_WORDS = {
    "time": "by timestamp (source order among equal or missing times)",
    "input": "source order (file, line)",
    "prompt": "graph key, then model pair (no time order used)",
}
"""Each Elo order in words, as the board's ranker details say which order was used."""

CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("elo", "order"): ELO_ORDERS,
    ("pged", "fas"): ("greedy", "exact"),
    **{(r, "on_degenerate"): ("regularize", "raise") for r in ("bt", "davidson", "rank-centrality", "elspr")},
}
"""(ranker, word parameter) → the words it accepts; a ranker checking its own words needs no entry."""


def param_kinds(ranker: str) -> dict[str, str]:
    """Parameter name → kind (float, int, bool, str, weights) from the ranker's keyword-only arguments."""
    fn = RANKERS.get(ranker)
    if fn is None:
        raise LensError(f"Unknown ranker {ranker!r}; choose one of {', '.join(sorted(RANKERS))}.")
    kinds = {}
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            continue
        ann = str(p.annotation).replace(" ", "")
        if "dict" in ann or "ndarray" in ann:
            kinds[name] = "weights"
        elif ann.startswith("int"):
            kinds[name] = "int"
        elif ann.startswith("float"):
            kinds[name] = "float"
        elif ann.startswith("bool"):
            kinds[name] = "bool"
        else:
            kinds[name] = "str"
    return kinds


def _known(ranker: str, kinds: dict[str, str]) -> str:
    return (f"it takes {', '.join(kinds)}" if kinds else "it takes no parameters")


def _read(ranker: str, name: str, kind: str, raw: str) -> object:
    """One ``--param`` value text → the Python value of the parameter's kind."""
    text = raw.strip()
    if kind == "bool":
        if text.lower() in TRUE_WORDS:
            return True
        if text.lower() in FALSE_WORDS:
            return False
        raise LensError(
            f"Ranker parameter {name}={raw!r} of {ranker} is not a yes/no value; use true, false, "
            "yes, no, 1 or 0."
        )
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise LensError(f"Ranker parameter {name}={raw!r} of {ranker} is not a whole number.") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise LensError(f"Ranker parameter {name}={raw!r} of {ranker} is not a number.") from None
    if kind == "weights":
        raise LensError(f"Ranker parameter {name} of {ranker} is a judge weighting; give it with "
                        "--judge-weight JUDGE=W (repeatable), not --param.")
    return text


def parse_ranker_params(ranker: str, items: list[str] | None) -> dict:
    """``key=value`` texts → checked parameters of ``ranker`` (see ``check_ranker_params``)."""
    kinds = param_kinds(ranker)
    out: dict = {}
    for item in items or []:
        if "=" not in item:
            raise LensError(f"Ranker parameter {item!r} is not of the form key=value.")
        key, raw = item.split("=", 1)
        name = key.strip().replace("-", "_")
        if name not in kinds:
            raise LensError(f"The {ranker} ranker has no parameter {name!r}; {_known(ranker, kinds)}.")
        out[name] = _read(ranker, name, kinds[name], raw)
    return check_ranker_params(ranker, out)


def check_ranker_params(ranker: str, params: dict) -> dict:
    """Refuse unknown names, values of the wrong type, non-finite numbers and values out of range."""
    kinds = param_kinds(ranker)
    for name, value in params.items():
        if name not in kinds:
            raise LensError(f"The {ranker} ranker has no parameter {name!r}; {_known(ranker, kinds)}.")
        kind = kinds[name]
        # numpy's is fine
        if kind == "bool" and not isinstance(value, bool) and type(value).__name__ != "bool_":
            raise LensError(f"Ranker parameter {name}={value!r} of {ranker} is not true or false.")
        if kind in ("int", "float") and value is not None:
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            if not numeric and not hasattr(value, "__float__"):
                raise LensError(f"Ranker parameter {name}={value!r} of {ranker} is not a number.")
            if not math.isfinite(float(value)):
                raise LensError(f"Ranker parameter {name}={value!r} of {ranker} must be a finite number.")
            rule = RANGES.get((ranker, name))
            if rule is not None and not rule[0](float(value)):
                raise LensError(f"Ranker parameter {name}={value!r} of {ranker} must be {rule[1]}.")
        if kind == "str" and not isinstance(value, str):
            raise LensError(f"Ranker parameter {name}={value!r} of {ranker} must be a word, not a number.")
        allowed = CHOICES.get((ranker, name))
        if allowed is not None and value is not None and value not in allowed:
            raise LensError(
                f"Ranker parameter {name}={value!r} of {ranker} is not one of {', '.join(allowed)}."
            )
    return params
