"""An LMArena-140k-shaped battle log for the issue-24 audit (docs/notes/audit-24.md): JSON lines with id,
model_a, model_b, winner (model_a, model_b, tie, "tie (bothbad)", both_bad), conv_metadata (token sums and
the header / list / bold count objects, as LMArena writes them) and an ISO timestamp. Outcomes from a
Bradley-Terry model with a small length effect, about 20 % draws.

    python bench/audit24_arena140k.py OUT.jsonl [--models 30] [--battles 50000] [--seed 7]
"""

from __future__ import annotations

import argparse
import json

import numpy as np


def counts(rng: np.random.Generator, keys: tuple[str, ...], high: int) -> dict[str, int]:
    """One conv_metadata count object (e.g. {"h1": 2, "h2": 0})."""
    return {k: int(rng.integers(0, high)) for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--models", type=int, default=30)
    ap.add_argument("--battles", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    n, N = args.models, args.battles
    theta, verbosity = rng.normal(0, 0.8, n), rng.normal(0, 0.5, n)
    a = rng.integers(0, n, N)
    b = rng.integers(0, n - 1, N)
    b = b + (b >= a)
    ta = np.maximum(1, rng.lognormal(6 + verbosity[a], 0.5)).astype(int)
    tb = np.maximum(1, rng.lognormal(6 + verbosity[b], 0.5)).astype(int)
    p_a = 1 / (1 + np.exp(-(theta[a] - theta[b] + 0.3 * (ta - tb) / (ta + tb))))
    u, draw = rng.random(N), rng.random(N) < 0.2
    with open(args.out, "w", encoding="utf-8") as out:
        for i in range(N):
            winner = ("tie", "tie (bothbad)", "both_bad")[i % 3] if draw[i] else (
                "model_a" if u[i] < p_a[i] else "model_b")
            meta = {"sum_assistant_a_tokens": int(ta[i]), "sum_assistant_b_tokens": int(tb[i])}
            for side in "ab":
                meta[f"header_count_{side}"] = counts(rng, ("h1", "h2"), 3)
                meta[f"list_count_{side}"] = counts(rng, ("ordered", "unordered"), 5)
                meta[f"bold_count_{side}"] = {**counts(rng, ("**",), 4), "__": 0}
            out.write(json.dumps({"id": f"b{i}", "model_a": f"m{a[i]:02d}", "model_b": f"m{b[i]:02d}",
                                  "winner": winner, "conv_metadata": meta,
                                  "timestamp": f"2025-0{1 + i % 9}-01T00:00:{i % 60:02d}Z"}) + "\n")


if __name__ == "__main__":
    main()
