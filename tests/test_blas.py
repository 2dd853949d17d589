"""``engine.blas.single_thread_blas`` across threads: BLAS's thread count is one setting of the whole
process, and the app's page runs and its warming threads (board grid, curve grid) enter the block at
once. Every block must run on one thread from its start to its end, whoever enters or leaves meanwhile,
and the count must be what it was once the last block leaves (read back from OpenBLAS itself)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from engine.blas import single_thread_blas


def blas_threads() -> set[int]:
    """The thread counts the loaded BLAS libraries report now (numpy's among them: imported above)."""
    assert np.ones(1) @ np.ones(1) == 1.0
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


@pytest.fixture()
def two_threads():
    """The machine's BLAS thread count, which a block must put back; a test needs two or more to tell a
    block's one thread from the count outside it. (Not set here with threadpoolctl's limiter: a thread
    inside its ``with`` holds OpenBLAS's setting to itself, which no block in the app faces.)"""
    before = blas_threads()
    if not before:
        pytest.skip("no BLAS library that threadpoolctl can read")
    if min(before) < 2:
        pytest.skip("BLAS runs on one thread here: nothing to tell a block's one thread from")
    yield
    assert blas_threads() == before


def step(events: dict[str, threading.Event], wait: str | None, then: str | None) -> None:
    if wait:
        assert events[wait].wait(30), f"never got {wait}"
    if then:
        events[then].set()


def test_a_block_keeps_one_thread_while_another_thread_leaves_its_own(two_threads):
    """A enters, B enters, A leaves, B computes: B still on one thread (threadpoolctl's limiter put back
    A's count under B); B leaves: the count from before again (B's limiter, entered on one, left one)."""
    names = ("a_in", "b_in", "a_out", "b_read", "b_out")
    events = {n: threading.Event() for n in names}
    seen: dict[str, set[int]] = {}

    def a() -> None:
        with single_thread_blas():
            seen["a in"] = blas_threads()
            step(events, None, "a_in")
            step(events, "b_in", None)
        step(events, None, "a_out")

    def b() -> None:
        step(events, "a_in", None)
        with single_thread_blas():
            step(events, None, "b_in")
            step(events, "a_out", None)
            seen["b after a left"] = blas_threads()
        seen["b left"] = blas_threads()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    outside = blas_threads()
    assert seen == {"a in": {1}, "b after a left": {1}, "b left": outside}


def test_any_thread_sets_one_thread_after_another_thread_has(two_threads):
    """A block entered and left in a worker thread, then one in this thread, then one in a new worker: each
    on one thread, and the count from before after each (no thread keeps the setting to itself)."""
    seen = []

    def block() -> None:
        with single_thread_blas():
            seen.append(blas_threads())
        seen.append(blas_threads())

    for run in (lambda: threading.Thread(target=block), None, lambda: threading.Thread(target=block)):
        if run is None:
            block()
            continue
        t = run()
        t.start()
        t.join(60)
    assert seen == [{1}, blas_threads()] * 3


def test_nested_blocks_in_one_thread_put_back_once(two_threads):
    outside = blas_threads()
    with single_thread_blas():
        with single_thread_blas():
            assert blas_threads() == {1}
        assert blas_threads() == {1}
    assert blas_threads() == outside
