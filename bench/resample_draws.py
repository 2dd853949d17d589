"""Benchmark (issue 26, point 4): the bootstrap's equal-weight draws, numpy's ``rng.multinomial`` row by row
against ``engine.rankers.resample_draws.equal_multinomial_rows`` (compiled), in one process.

Both draw B rows of U units from the same seed; the script checks that the rows and the generator's next
uniforms are equal, then prints CPU milliseconds per row of each (``time.process_time``, after one warm-up
call so numba's import and cache load are not counted) with the load average. Usage:

    python bench/resample_draws.py --units 1000000 --rows 10
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.rankers.resample_draws import equal_multinomial_rows  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    U, B = a.units, a.rows
    print("load average at start:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    equal_multinomial_rows(np.random.default_rng(1), 10, 1, compiled=True)  # numba import + cache load
    rng = np.random.default_rng(a.seed)
    t = time.process_time()
    ref = np.stack([rng.multinomial(U, np.full(U, 1.0 / U)) for _ in range(B)])
    numpy_ms = (time.process_time() - t) / B * 1e3
    ref_next = rng.random(3)
    rng = np.random.default_rng(a.seed)
    t = time.process_time()
    got = equal_multinomial_rows(rng, U, B, compiled=True)
    compiled_ms = (time.process_time() - t) / B * 1e3
    same = np.array_equal(ref, got) and np.array_equal(ref_next, rng.random(3))
    print(f"U = {U:,}, B = {B}: numpy {numpy_ms:.1f} ms/row, compiled {compiled_ms:.1f} ms/row "
          f"({numpy_ms / compiled_ms:.2f}x); rows and generator state equal: {same}")
    print("load average at end:", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
