"""One BLAS thread for small dense linear algebra (shared by the rankers and the cycle counts).

Our matrices are n × n with n = the number of models (tens to hundreds), used in many small
products or solves. A multi-threaded OpenBLAS spends far longer synchronising its threads than
computing on them: on a busy shared machine a 100 × 100 solve measured 0.09 s threaded against
0.0001 s on one thread. Code that wants parallelism splits its batch over its own threads instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_CONTROLLER: ThreadpoolController | None = None


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Run the block with BLAS limited to one thread (the controller is made once, on first use)."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    with _CONTROLLER.limit(limits=1, user_api="blas"):
        yield
