"""Benchmark: the engine work behind one slider move on the Truncation page, at vicuna80 scale.

    python bench/app_latency.py [--repeats 15] [--db PATH]

A move of the keep-K or mu slider runs ``engine.views.appstate.app_leaderboard`` on the selection's
``SliderContext`` that the page already holds (``st.cache_resource``: GraphStack, cycle counts,
graph-key order): S_mu, keep-K, the ranker, a B = 200 bootstrap, per-model cycle columns and the
reference distances. It is timed (median of
``--repeats`` moves over different K, warm process) against two slower paths measured in the same
run on the same data:

- ``uncached``: what a page without caches would do on every move — read the verdicts from DuckDB,
  build the GraphStack and its cycle counts and key order, then the same leaderboard call;
- ``refit loop``: the cached path with the bootstrap done as 200 separate rank() fits (the naive
  bootstrap), instead of the batched multinomial-weights Newton fit.

Scales: the gpt-4 judge (80 graphs × 9 models, the app's default view) and all six judges
(480 graphs). Prints a Markdown table with the ratios; nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.graphs.stack import build_stack  # noqa: E402
from engine.ingest.shipped import open_store  # noqa: E402
from engine.rankers import rank  # noqa: E402
from engine.ranking.leaderboard import truncate  # noqa: E402
from engine.ranking.reference import reference_for  # noqa: E402
from engine.views.appstate import SliderContext, app_leaderboard  # noqa: E402

B = 200


def _median_ms(fn, ks: list[int]) -> float:
    times = []
    for k in ks:
        t0 = time.perf_counter()
        fn(k)
        times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times)


def refit_loop(stack, k: int, mu: float, seed: int = 0) -> np.ndarray:
    """The naive bootstrap: B graph resamples of the kept graphs, one rank() fit each."""
    kept, _ = truncate(stack, k, mu)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(B):
        idx = rng.integers(0, kept.T, kept.T)
        out.append(rank(kept.subset(idx), "bt").scores.to_numpy())
    return np.vstack(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--db", help="store with vicuna80 (default: a fresh temp store)")
    args = ap.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp()) / "lens.duckdb")
    store = open_store(db)
    ref, _ = reference_for("vicuna80", None)
    print(
        "| view | graphs × models | cached move (ms) | uncached move (ms) | ratio | refit-loop move (ms) | "
        "ratio |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for label, judge in (("judge gpt-4", "gpt-4"), ("all judges", None)):
        stack = build_stack(store.verdicts("vicuna80", judge=judge))
        rng = np.random.default_rng(0)
        ks = [int(k) for k in rng.integers(max(2, stack.T // 8), stack.T + 1, args.repeats)]

        ctx = SliderContext.of(stack)

        def cached(k: int, ctx=ctx) -> None:
            app_leaderboard(ctx, ranker="bt", keep_k=k, mu=1.0, bootstrap=B, seed=0, reference=ref)

        def uncached(k: int, judge=judge) -> None:
            s = build_stack(store.verdicts("vicuna80", judge=judge))
            app_leaderboard(
                SliderContext.of(s), ranker="bt", keep_k=k, mu=1.0, bootstrap=B, seed=0, reference=ref
            )

        cached(ks[0])  # warm imports and BLAS once
        t_cached = _median_ms(cached, ks)
        t_uncached = _median_ms(uncached, ks)
        t_loop = _median_ms(lambda k, stack=stack: refit_loop(stack, k, 1.0), ks[: max(3, args.repeats // 3)])
        print(f"| {label} | {stack.T} × {stack.n} | {t_cached:.1f} | {t_uncached:.1f} | "
              f"{t_uncached / t_cached:.1f}× | {t_loop:.1f} | {t_loop / t_cached:.1f}× |")
    store.close()


if __name__ == "__main__":
    main()
