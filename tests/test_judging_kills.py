"""Issue 23, bug 5: calls answered before a kill -9 are never paid again. A kill harness against the
counting fake server (tests/judging_fake_openai.py): each `judge` process is killed with SIGKILL
while exactly ``concurrency`` of its requests are held open inside the server, and a last run
completes the dataset. The server's own request log is the ground truth: requests = distinct calls +
at most the calls that were in flight at the kills.

Why the kill moment is deterministic: the server's gate is closed after some calls were answered,
so every new request waits inside the server; once ``concurrency`` requests wait there, the client
has taken every earlier answer off the wire (a pool slot frees only when its call's answer was
handed back), so every answered call must be in the store or in the run's journal at that instant.
fa0c159 kept up to the last 0.25 s of answers only in memory (``record_every_s``) and paid them
again after the kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd

REPO = Path(__file__).resolve().parent.parent
MODELS = "gpt-4,llama-13b,alpaca-13b,vicuna-13b-v1.3,claude-v1"
VERDICTS = 10 * 8 * 2  # 10 pairs x 8 prompts x 2 orders; fewer distinct calls (some answers are equal)


def _wait_for(cond, seconds: float = 120.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return False


def kill_harness(db: Path, kills: int = 3, concurrency: int = 8, answered_before_kill: int = 24):
    """Run `judge` ``kills`` times, each killed (SIGKILL) once ``answered_before_kill`` of its requests
    went out and ``concurrency`` requests wait in the server; then run it to the end (in this process:
    that run is not killed, so it needs no interpreter of its own). Returns (requests,
    distinct calls, calls in flight at the kills, the last run's stdout, stderr and exit code)."""
    in_flight: list[int] = []
    with FakeOpenAI(delay_s=0.05) as srv:
        cmd = judge_cmd(db, "k", srv.base_url, "--concurrency", str(concurrency), models=MODELS)
        for _ in range(kills):
            start = len(srv.bodies)
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                enough = start + answered_before_kill
                assert _wait_for(lambda p=proc, n=enough: len(srv.bodies) >= n or p.poll() is not None)
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                srv.gate.clear()  # from now on every request waits inside the server
                assert _wait_for(lambda: srv.at_gate >= concurrency)
                in_flight.append(srv.at_gate)
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                srv.gate.set()
            assert _wait_for(lambda: srv.inflight == 0)
        srv.delay_s = 0.0  # the slow replies only kept the kills inside the runs; the last run needs none
        last = run_engine(cmd[3:])  # the run that completes the dataset: in this process
        sent = [json.dumps([b["model"], b["messages"]], sort_keys=True) for b in srv.bodies]
    return len(sent), len(set(sent)), sum(in_flight), last


def test_calls_answered_before_a_kill_are_never_paid_again(tmp_path):
    """Fails on fa0c159, where the answers of the last record window before each kill were paid again."""
    requests, distinct, in_flight, last = kill_harness(tmp_path / "k.duckdb")
    assert last.returncode == 0, last.stderr
    row = pd.read_csv(pd.io.common.StringIO(last.stdout)).iloc[0]
    assert (row.status, row.verdicts, row.calls_made + row.calls_cached) == ("done", VERDICTS, distinct)
    assert requests - distinct <= in_flight, (requests, distinct, in_flight)
    assert not list(tmp_path.glob("k.duckdb.calls-*.jsonl"))  # every journal filed and removed
    assert os.path.exists(tmp_path / "k.duckdb")


# -- bug 6: the journal's second location when the store's disk is full ---------------------------------


def _can_mount_tmpfs() -> bool:
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"],
                           capture_output=True)  # fmt: skip
    return probe.returncode == 0


def test_a_journal_that_cannot_be_written_beside_the_store_goes_to_the_second_location(tmp_path):
    """The folder holding the store (``beside``: a 64 kB tmpfs, filled to the last byte, in a mount
    namespace of the judge process; the store file itself is a symlink to a normal disk, so only the
    journal's first location is full) refuses the journal with ENOSPC, while another process keeps the
    store busy past the lock wait, so the 4 calls paid meanwhile reach neither the store nor the
    folder beside it. They go to $LENS_JOURNAL_DIR, the one sentence says where and why, and the next
    run files them from there: nothing paid twice. Fails on fa0c159 (the calls are lost: "could be
    stored neither in ... nor in the journal", and paid again)."""
    if not _can_mount_tmpfs():
        pytest.skip("this machine cannot mount a tmpfs in a user namespace (unshare -rm)")
    real, beside, second = tmp_path / "real", tmp_path / "beside", tmp_path / "second"
    real.mkdir()
    beside.mkdir()
    db = beside / "s.duckdb"
    target = real / "s.duckdb"
    with FakeOpenAI() as srv:
        srv.gate.clear()
        cmd = judge_cmd(db, "d", srv.base_url, "--protocol", "swapped", "--concurrency", "4")
        cmd[3:3] = ["--lock-wait", "0.3"]
        script = (
            f'mount -t tmpfs -o size=64k tmpfs "{beside}" && ln -s "{target}" "{db}" && '
            f'(dd if=/dev/zero of="{beside}/fill" bs=4k 2>/dev/null; true) && exec "$@"'
        )
        env = dict(os.environ, LENS_JOURNAL_DIR=str(second))
        proc = subprocess.Popen(["unshare", "-rm", "sh", "-c", script, "sh", *cmd], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert _wait_for(lambda: srv.arrivals >= 4 or proc.poll() is not None), "the run never called"
        holder = None
        deadline = time.monotonic() + 60
        while holder is None and time.monotonic() < deadline:  # take the store's lock (another process)
            try:
                holder = duckdb.connect(str(target))
            except duckdb.Error:
                time.sleep(0.01)
        assert holder is not None
        try:
            srv.gate.set()  # the 4 calls in flight are paid; neither the store nor its folder takes them
            out, err = proc.communicate(timeout=240)
        finally:
            holder.close()
        paid_first = srv.statuses[200]
        journals = list(second.glob("*.jsonl"))
        lines = err.strip().splitlines()
        assert proc.returncode == 2 and out == "" and len(lines) == 1, err
        assert len(journals) == 1 and paid_first >= 4
        assert (
            f"; the {paid_first} finished calls not yet stored are kept in {journals[0]} (the journal's "
            f"first place, beside the store, could not be written: {beside}/s.duckdb.calls-"
        ) in lines[0]
        assert "No space left on device) and the next run on this store files them" in lines[0]
        assert len(journals[0].read_text().splitlines()) == paid_first
        db.symlink_to(target)  # the same store path as the killed run saw (the tmpfs is gone with it)
        env_rerun = {**os.environ, "LENS_JOURNAL_DIR": str(second)}
        rerun = run_engine(judge_cmd(db, "d", srv.base_url, "--protocol", "swapped")[3:], env=env_rerun)
        sent = [json.dumps(b["messages"]) for b in srv.bodies]
    assert rerun.returncode == 0, rerun.stderr
    row = pd.read_csv(pd.io.common.StringIO(rerun.stdout)).iloc[0]
    assert (row.status, row.calls_cached) == ("done", paid_first)
    assert row.calls_made + row.calls_cached == len(sent)
    assert len(sent) == len(set(sent))  # nothing paid twice, nothing lost
    assert not list(second.glob("*.jsonl"))  # filed and removed
