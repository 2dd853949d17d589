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
import threading

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
    with DrawnRows(rng, U, B, n=n, compiled=compiled) as drawn:
        return drawn.ready(B)


class DrawnRows:
    """The rows of ``equal_multinomial_rows``, drawn ahead of their reader: where the compiled loop draws
    (it releases the GIL), a background thread draws row after row while the caller fits the resamples
    already drawn (Elo's compiled loop, which releases the GIL too), so on two cores the draws and the
    fits overlap instead of adding up. The rows, their order and the generator's final state are those
    of ``equal_multinomial_rows``: one thread reads ``rng``, in the same order; nothing else may use
    ``rng`` until the rows are all drawn (``ready(B)`` or leaving the ``with`` block). Where numpy
    draws, every row is drawn at once, on the caller's thread."""

    def __init__(self, rng: np.random.Generator, U: int, B: int, *, n: int | None = None,
                 compiled: bool | None = None):
        self.U, self.B, self.n = int(U), int(B), U if n is None else int(n)
        self._rng = rng
        self._table = np.zeros((self.B, self.U), dtype=np.uint8)
        self._drawn = 0  # rows 0 .. _drawn - 1 are in the table
        self._error: BaseException | None = None
        self._stop = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        kernel = _kernel(self.U, compiled)
        if kernel is None or self.U < 2:
            for b in range(self.B):
                self._store(b, rng.multinomial(self.n, np.full(self.U, 1.0 / self.U)))
            self._drawn = self.B
            return
        self._thread = threading.Thread(target=self._draw_all, args=(kernel,), name="resample-draws",
                                        daemon=True)
        self._thread.start()

    def ready(self, b1: int) -> np.ndarray:
        """The table once rows 0 .. b1 - 1 are drawn (waits for them; re-raises the drawing thread's
        error). Rows from b1 on may still be zeros or being written: read only rows below ``b1``."""
        with self._changed:
            self._changed.wait_for(lambda: self._drawn >= b1 or self._error is not None)
            if self._error is not None:
                raise self._error
            return self._table

    def __enter__(self) -> DrawnRows:
        return self

    def __exit__(self, *exc) -> None:
        """Stop drawing (after the row under way) when the block ends early, and wait for the thread."""
        with self._changed:
            self._stop = True
        if self._thread is not None:
            self._thread.join()

    def _store(self, b: int, row: np.ndarray) -> None:
        """Write row b, widening the table to int64 first where a count does not fit its dtype (a new
        table: a reader's earlier view of the old one keeps its rows)."""
        if row.size and int(row.max()) > np.iinfo(self._table.dtype).max:
            self._table = self._table.astype(np.int64)
        self._table[b] = row

    def _draw_all(self, kernel) -> None:
        """The drawing thread: row after row with the compiled loop, a row numpy would draw by BTPE
        redrawn by numpy from the generator state saved before it."""
        rng, U, n = self._rng, self.U, self.n
        try:
            p, q, log_q, flipped = _unit_terms(U)
            row = np.zeros(U, dtype=np.int64)
            for b in range(self.B):
                if self._stop:
                    return
                saved = rng.bit_generator.state
                row[:] = 0
                if kernel(rng, p, q, log_q, flipped, n, row) < 0:  # numpy's BTPE: numpy's own row
                    rng.bit_generator.state = saved
                    row[:] = rng.multinomial(n, np.full(U, 1.0 / U))
                with self._changed:
                    self._store(b, row)
                    self._drawn = b + 1
                    self._changed.notify_all()
        except BaseException as error:  # handed to the reader, which raises it
            with self._changed:
                self._error = error
                self._changed.notify_all()


def _kernel(U: int, compiled: bool | None):
    """The compiled row loop where it is asked for (None: from ``COMPILED_FROM_UNITS`` units) and numba
    imports, else None (numpy draws)."""
    if not (U >= COMPILED_FROM_UNITS if compiled is None else compiled):
        return None
    try:
        return _compiled_row()
    except ImportError:  # numba missing (an environment older than requirements.txt): numpy's draws
        return None


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


class ResampleRepeats:
    """How often each resample reads each vote, from the drawn rows: resample b reads vote v
    ``drawn[b, unit_of[v]]`` times (``unit_of``: each vote's unit; None where every vote is its own unit,
    then a slice of the table, never a gather). Called as ``repeats(v0, v1)`` it is the (B, v1 - v0)
    table ``Ranker.fit_votes_resampled`` reads (once every row is drawn); ``rows`` gives some resamples'
    rows as soon as those are drawn, so a fit can run resample by resample beside the draws."""

    def __init__(self, drawn: DrawnRows, unit_of: np.ndarray | None = None):
        self.drawn, self.unit_of = drawn, unit_of

    @property
    def B(self) -> int:
        """Number of resamples."""
        return self.drawn.B

    def __call__(self, v0: int, v1: int) -> np.ndarray:
        return self.rows(0, self.B, v0, v1)

    def rows(self, b0: int, b1: int, v0: int, v1: int) -> np.ndarray:
        """(b1 - b0, v1 - v0) repeat counts of resamples b0 .. b1 - 1 over votes v0 .. v1 - 1 (waits for
        those rows to be drawn)."""
        table = self.drawn.ready(b1)
        if self.unit_of is None:
            return table[b0:b1, v0:v1]
        return table[b0:b1][:, self.unit_of[v0:v1]]
