"""One BLAS thread for small dense linear algebra (shared by the rankers and the cycle counts).

Our matrices are n × n with n = the number of models (tens to hundreds), used in many small
products or solves. A multi-threaded OpenBLAS spends far longer synchronising its threads than
computing on them: on a busy shared machine a 100 × 100 solve measured 0.09 s threaded against
0.0001 s on one thread. Code that wants parallelism splits its batch over its own threads instead.

BLAS's thread count is one setting of the whole process, and the app computes in several threads at
once (a page's run beside the board grid's or the curve grid's warming thread). So the limit is
counted: the first block to enter sets one thread, the last to leave puts back what was there, and a
block entered while another thread is inside one keeps one thread to its end. (threadpoolctl's own
limiter restores the count it saw at entry: a block leaving while another thread was still inside put
that thread's products back on two threads, and a two-thread product sums in another order: the
Truncation page's warmed board differed from the board from scratch in the last bit of its intervals,
tests/test_board_grid.py's sparse set about one run in three; and the last to leave could leave the
process on one thread.)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import threadpoolctl
from threadpoolctl import ThreadpoolController

_CONTROLLER: ThreadpoolController | None = None
_LOCK = threading.Lock()
_DEPTH = 0  # blocks inside single_thread_blas now, all threads together
_LIMITER = None  # the limiter the first block entered (it puts the thread count back)


def _as_any_thread(change) -> None:
    """Run ``change`` (a threadpoolctl limit set or put back) from whichever thread gets here.

    threadpoolctl (3.6 on) lets one Python thread at a time set OpenBLAS's pthreads pool, the thread that
    set it first, until that thread leaves its limiter's ``with``; here a count held under ``_LOCK`` decides
    who sets, so the hold is cleared before and after (an older threadpoolctl has no hold to clear)."""
    clear = getattr(getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)
    try:
        change()
    finally:
        if clear is not None:
            clear(force=True)


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Run the block with BLAS limited to one thread, whatever other threads enter and leave meanwhile
    (the controller is made once, on first use)."""
    global _CONTROLLER, _DEPTH, _LIMITER
    with _LOCK:
        if _DEPTH == 0:
            if _CONTROLLER is None:
                _CONTROLLER = ThreadpoolController()
            controller = _CONTROLLER

            def limit() -> None:
                global _LIMITER
                _LIMITER = controller.limit(limits=1, user_api="blas")

            _as_any_thread(limit)
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0 and _LIMITER is not None:
                _as_any_thread(_LIMITER.restore_original_limits)
                _LIMITER = None
