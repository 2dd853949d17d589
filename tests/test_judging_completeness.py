"""Issue 23, bug 4: the rule that says a dataset is incomplete (engine.judging.completeness), checked
against a brute-force reading of the same ``judge_runs`` rows: for each kind of calls (kind, backend,
model, protocol) of each dataset, the newest run decides; unfinished (running, killed, interrupted,
failed) marks the dataset, finished (done, failed-calls) does not. Process liveness is real: a
running row names this test's own process (alive) or a child that has exited (killed)."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.judging.completeness import unfinished_runs
from engine.judging.liveness import me, process_started
from engine.store.connection import Store

STATUSES = ["alive", "killed", "interrupted", "failed", "done", "failed-calls"]


def _dead_process() -> tuple[int, float | None]:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_started(child.pid)
    child.wait()
    return child.pid, started


DEAD = None  # filled once (starting a process per example would be slow)
STORE: list[Store] = []  # one store for every example (its tables emptied each time)

_run = st.tuples(
    st.sampled_from(["a", "b", "gone"]),  # 'gone' is not in the datasets table
    st.sampled_from(["judge", "generate"]),
    st.sampled_from(["m1", "m2"]),
    st.sampled_from(["swapped", None]),
    st.sampled_from(STATUSES),
)


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(_run, max_size=12))
def test_the_newest_run_of_each_kind_of_calls_decides(tmp_path_factory, runs):
    global DEAD
    DEAD = DEAD or _dead_process()
    host, pid, started = me()
    if not STORE:
        STORE.append(Store(tmp_path_factory.mktemp("c") / "c.duckdb"))
    store = STORE[0]
    with store.transaction() as cur:
        for table in ("judge_calls", "judge_runs", "datasets"):
            cur.execute(f"DELETE FROM {table}")
        cur.execute("INSERT INTO datasets (name) VALUES ('a'), ('b')")
        for k, (ds, kind, model, protocol, status) in enumerate(runs, start=1):
            who = (pid, started) if status == "alive" else DEAD
            stored = "running" if status in ("alive", "killed") else status
            cur.execute(
                "INSERT INTO judge_runs (run_id, kind, dataset, backend, model, protocol, params, status,"
                " pid, host, pid_started) VALUES (?, ?, ?, 'openai', ?, ?, '{}', ?, ?, ?, ?)",
                [k, kind, ds, model, protocol, stored, who[0], host, who[1]],
            )
            for _ in range(k % 3):  # a few stored calls per run
                cur.execute(
                    "INSERT INTO judge_calls (call_key, backend, model, template_id, template_version,"
                    " messages, decoding, run_id) VALUES (?, 'openai', ?, 't', 1, '[]', '{}', ?)",
                    [f"{k}-{_}", model, k],
                )
    got = {(r.run_id, r.dataset, r.state, r.calls_stored) for r in unfinished_runs(store)}
    got_a = {r.run_id for r in unfinished_runs(store, "a")}
    newest: dict[tuple, tuple[int, str]] = {}
    for k, (ds, kind, model, protocol, status) in enumerate(runs, start=1):
        newest[(ds, kind, model, protocol)] = (k, status)  # later runs replace earlier ones
    state = {"alive": "running", "killed": "killed", "interrupted": "interrupted", "failed": "failed"}
    want = {
        (k, key[0], state[status], k % 3)
        for key, (k, status) in newest.items()
        if status in state and key[0] != "gone"
    }
    assert got == want
    assert got_a == {k for k, ds, _s, _n in want if ds == "a"}
