"""A process's start time (engine.judging.liveness) against the wall clock around its launch
(mutation pass survivor: a wrong /proc field gave a consistent but wrong time, which the lease
checks, comparing the function with itself, could not see)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from engine.judging.liveness import process_started, same_process_alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start times come from /proc")


def test_a_child_started_between_two_clock_readings_reports_a_time_between_them():
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    after = time.time()
    try:
        started = process_started(child.pid)
        assert started is not None
        # boot time is whole seconds and ticks are 1/CLK_TCK: a second of slack either way
        assert before - 1.0 <= started <= after + 1.0
        assert same_process_alive(child.pid, started)
        assert not same_process_alive(child.pid, started - 5.0)  # another process that had this id
    finally:
        child.kill()
        child.wait()
    assert not same_process_alive(child.pid, started)
