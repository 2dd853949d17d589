"""The bootstrap's equal-weight resample counts, drawn faster with the same numbers.

A bootstrap resample of U units draws U of them with replacement: unit u is drawn ``c[u]`` times with
``c`` one multinomial(U; 1/U, ..., 1/U) vector. The refit bootstrap (``count_bootstrap._refits``: Elo)
has always drawn row b as ``rng.multinomial(U, np.full(U, 1 / U))``, B rows in turn from one generator,
and its seeded intervals are those draws. At a million units each row costs about 0.08 s of CPU (numpy
draws one binomial per unit), 8 s for B = 100: the largest share of Elo's bootstrap at 1M battles.

``equal_multinomial_rows`` returns the very same (B, U) counts, and leaves the generator in the same
state, by running numpy's own sequence of conditional binomials in a compiled loop that reads the same
generator (numba calls the bit generator's ``next_double``, the stream numpy's binomial reads):

- unit j gets ``Binomial(n_j, p_j)`` where n_j is what units 0..j-1 left and p_j = (1/U) / r_j, r_j
  being 1 minus j times 1/U by repeated subtraction (the same rounding); the loop stops once nothing is
  left, and the last unit takes the rest;
- a binomial with n_j p_j <= 30 (or n_j (1 - p_j) <= 30 for p_j > 1/2, drawn on 1 - p_j and subtracted
  from n_j) is drawn by inversion from one uniform: X is the first x with u <= P(0) + ... + P(x), the
  terms built as P(0) = exp(n log q), P(x) = P(x - 1) (n - x + 1) p / (x q) and subtracted from u one by
  one, with a fresh uniform if x passes min(n, np + 10 sqrt(npq + 1)): numpy's arithmetic, operation for
  operation, so every comparison goes the same way;
- a binomial outside that case (numpy's BTPE rejection sampler: n_j p_j > 30, which equal weights over U
  units never reach unless far more than U are drawn) is not rewritten: that row is redrawn by numpy
  itself from the generator state saved before it.

What depends only on j (p_j, q_j, log q_j) is computed once for all B rows. The gain is what remains per
unit: one exp, one uniform and the inversion's few operations (``docs/notes/i26elo-26.md`` has the
timings). Below ``COMPILED_FROM_UNITS`` units (numba's import costs more than it saves) and where numba
is missing, numpy draws every row: the same numbers either way (tests/test_resample_draws.py).
"""

from __future__ import annotations

import functools
import math

import numpy as np

COMPILED_FROM_UNITS = 100_000
"""From this many units the compiled loop draws the rows; below, ``rng.multinomial`` row by row. The
same figure as Elo's compiled loop (``engine.rankers.elo.COMPILED_FROM_VOTES``), so a bootstrap that
loads numba for one loads it for both."""

INVERSION_MAX_MEAN = 30.0
"""numpy draws Binomial(n, p) by inversion where n min(p, 1 - p) <= 30, by BTPE above."""


def equal_multinomial_rows(rng: np.random.Generator, U: int, B: int, *, n: int | None = None,
                           compiled: bool | None = None) -> np.ndarray:
    """(B, U) counts, row b what ``rng.multinomial(n, np.full(U, 1 / U))`` gives as the b-th of B calls
    in a row (n defaults to U: a bootstrap resample), with ``rng`` left where those calls leave it.
    Counts as uint8 while every count fits (a resample rarely draws a unit 256 times), else int64.
    ``compiled``: force (True) or forbid (False) the compiled loop; None picks it from
    ``COMPILED_FROM_UNITS`` units."""
    n = U if n is None else int(n)
    if compiled is None:
        compiled = U >= COMPILED_FROM_UNITS
    kernel = None
    if compiled:
        try:
            kernel = _compiled_row()
        except ImportError:  # numba missing (an environment older than requirements.txt): numpy's draws
            kernel = None
    drawn = np.zeros((B, U), dtype=np.uint8)
    if kernel is None or U < 2:
        for b in range(B):
            drawn = _store_row(drawn, b, rng.multinomial(n, np.full(U, 1.0 / U)))
        return drawn
    p, q, log_q, flipped = _unit_terms(U)
    row = np.zeros(U, dtype=np.int64)
    for b in range(B):
        saved = rng.bit_generator.state
        row[:] = 0
        if kernel(rng, p, q, log_q, flipped, n, row) < 0:  # a binomial numpy draws by BTPE: numpy's row
            rng.bit_generator.state = saved
            row[:] = rng.multinomial(n, np.full(U, 1.0 / U))
        drawn = _store_row(drawn, b, row)
    return drawn


def _store_row(drawn: np.ndarray, b: int, row: np.ndarray) -> np.ndarray:
    """Write row b, widening ``drawn`` to int64 first where a count does not fit its dtype."""
    if row.size and int(row.max()) > np.iinfo(drawn.dtype).max:
        drawn = drawn.astype(np.int64)
    drawn[b] = row
    return drawn


def _unit_terms(U: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per unit j < U - 1 the inversion's probability (p_j, or 1 - p_j where p_j > 1/2), its complement
    (1 minus that, rounded), the complement's log, and whether it was flipped, with p_j = (1/U) / r_j as
    numpy forms it: r_0 = 1, r_{j+1} = r_j - 1/U (one rounding per step, as numpy's running remainder)."""
    each = 1.0 / U
    remaining = np.empty(max(U - 1, 0))
    if U > 1:
        np.subtract.accumulate(np.concatenate(([1.0], np.full(U - 2, each))), out=remaining)
    p = each / remaining
    flipped = p > 0.5
    p = np.where(flipped, 1.0 - p, p)  # numpy draws Binomial(n, 1 - p) there and takes n minus it
    q = 1.0 - p
    with np.errstate(divide="ignore"):  # log of the rounded complement, numpy's expression (not log1p(-p),
        return p, q, np.log(q), flipped  # which differs in the last bits and would move a rare draw)


def _draw_row(rng, p, q, log_q, flipped, n, row):  # pragma: no cover (compiled by _compiled_row)
    """One multinomial row into ``row`` (zeros on entry) as numpy's sequence of conditional binomials,
    reading uniforms from ``rng``; returns 0, or -1 at a binomial numpy would draw by BTPE (the caller
    redraws the row with numpy from the state it saved). ``p``, ``q``, ``log_q``, ``flipped``:
    ``_unit_terms``."""
    d = row.size
    left = n
    for j in range(d - 1):
        pj = p[j]
        if left == 0 or (pj == 0.0 and not flipped[j]):  # numpy returns 0 without a uniform
            x = 0
        else:
            if pj * left > 30.0:
                return -1
            qj = q[j]
            p0 = math.exp(left * log_q[j])
            u = rng.random()
            x = 0
            px = p0
            bound = -1
            while u > px:
                x += 1
                if x > 10 or x > left:  # the bound min(left, np + 10 sqrt(npq + 1)) is >= min(left, 10)
                    if bound < 0:
                        mean = left * pj
                        limit = mean + 10.0 * math.sqrt(mean * qj + 1.0)
                        bound = int(left if left < limit else limit)  # C truncation toward 0
                    if x > bound:
                        x = 0
                        px = p0
                        u = rng.random()
                        continue
                u -= px
                px = ((left - x + 1) * pj * px) / (x * qj)
            if flipped[j]:
                x = left - x
        row[j] = x
        left -= x
        if left <= 0:
            return 0
    row[d - 1] = left
    return 0


@functools.cache
def _compiled_row():
    """``_draw_row`` compiled by numba on first use (imported here: only large bootstraps need it).
    Strict IEEE arithmetic (numba's default: no fast-math, no contraction), libm's exp and log as
    numpy's C code calls them; ``cache=True`` keeps the machine code between processes."""
    import numba

    return numba.njit(cache=True, nogil=True)(_draw_row)
