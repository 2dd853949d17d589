"""Issue 15 on the judging side: no call paid twice across runs, paid calls kept when the store is
unavailable, whole-request deadlines and a stall detector, stale runs by process start time, and
secrets in server URLs. Everything runs against the real ``openai`` client and the local fake server
(tests/judging_fake_openai.py), whose request counts are the ground truth for "paid once".
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd

from engine.judging.backends import ChatRequest, Decoding
from engine.judging.cache import CallCache, call_rows
from engine.judging.liveness import process_started
from engine.judging.openai_backend import OpenAIBackend
from engine.judging.persist import RunInProgress, start_run
from engine.judging.run_errors import ServerStalled
from engine.judging.runner import Runner
from engine.store.connection import Store

REPO = Path(__file__).resolve().parent.parent
UNIQUE = 8 * 3 * 2  # MT-Bench with --limit 1: 8 prompts x 3 pairs x 2 orders (swapped)


def _runner(store, srv_or_url, **kw) -> Runner:
    url = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.base_url
    kw.setdefault("backoff_s", 0.01)
    timeout_s = kw.pop("timeout_s", 120.0)
    return Runner(store, OpenAIBackend("fake-judge", base_url=url, api_key="k", timeout_s=timeout_s), **kw)


def _req(text: str) -> ChatRequest:
    return ChatRequest((("user", text),), Decoding(), "pairwise", 1)


def _csv_row(out: str) -> pd.Series:
    return pd.read_csv(pd.io.common.StringIO(out)).iloc[0]


def _wait_for(cond, seconds: float = 240.0) -> bool:
    """Poll ``cond`` (generous: interpreters start slowly on a loaded machine); True once it holds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return False


def _running_runs(db: Path) -> int:
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:  # a judge process holds the file this instant
        return -1
    try:
        return con.execute("SELECT count(*) FROM judge_runs WHERE status = 'running'").fetchone()[0]
    except duckdb.Error:
        return -1
    finally:
        con.close()


# -- item 2: one paid call for runs of different datasets ----------------------------------------------


def test_two_runs_on_different_datasets_pay_for_each_shared_call_once(tmp_path):
    """Two `judge` processes on different datasets with the same judge model and the same prompts and
    answers: every request is claimed before it is sent, so the server sees each call once and the
    second run takes the first run's results from the cache."""
    db = tmp_path / "share.duckdb"
    with FakeOpenAI() as srv:
        srv.gate.clear()  # replies wait until both runs are going

        def start(dataset: str) -> subprocess.Popen:
            cmd = judge_cmd(db, dataset, srv.base_url, "--protocol", "swapped", "--concurrency", "2")
            return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        first = start("share-a")
        assert _wait_for(lambda: srv.arrivals >= 2), "the first run never called the server"
        second = start("share-b")
        assert _wait_for(lambda: _running_runs(db) == 2), "the second run never started"
        assert first.poll() is None and second.poll() is None
        srv.gate.set()
        out_a, err_a = first.communicate(timeout=240)
        out_b, err_b = second.communicate(timeout=240)
        sent = [json.dumps(b["messages"]) for b in srv.bodies]
    assert first.returncode == 0, err_a
    assert second.returncode == 0, err_b
    a, b = _csv_row(out_a), _csv_row(out_b)
    assert len(sent) == UNIQUE and len(set(sent)) == UNIQUE  # each call paid once, by one of the runs
    assert a.calls_made + b.calls_made == UNIQUE
    assert (a.calls_made + a.calls_cached, b.calls_made + b.calls_cached) == (UNIQUE, UNIQUE)
    assert (a.status, a.verdicts, b.status, b.verdicts) == ("done", UNIQUE, "done", UNIQUE)
    with Store(db) as st:
        cur = st.cursor()
        assert cur.execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone() == (
            UNIQUE,
            UNIQUE,
        )
        assert cur.execute("SELECT count(*) FROM judge_call_leases").fetchone()[0] == 0  # all released
        va, vb = st.verdicts("share-a"), st.verdicts("share-b")
    key = ["prompt_id", "model_a", "model_b", "order", "winner"]
    assert va[key].sort_values(key).values.tolist() == vb[key].sort_values(key).values.tolist()


def test_a_claim_is_waited_for_while_its_owner_lives_and_taken_over_when_it_lapses(empty_store):
    req = _req("=== QUESTION ===\nq\n\n=== ANSWER A ===\nlonger one\n\n=== ANSWER B ===\nshort")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    try:
        assert _wait_for(lambda: process_started(sleeper.pid) is not None, 30)
        with FakeOpenAI() as srv:
            runner = _runner(empty_store, srv, poll_s=0.05)
            key = runner.key(req)

            def lease(owner: str, host: str, pid: int, started, expires: float) -> None:
                with empty_store.transaction() as cur:
                    cur.execute("DELETE FROM judge_call_leases")
                    cur.execute(
                        "INSERT INTO judge_call_leases VALUES (?, ?, ?, ?, ?, ?)",
                        [key, owner, host, pid, started, expires],
                    )

            import socket

            host = socket.gethostname()
            # 1. a live owner on this host (pid and start time match): the runner waits for its result
            lease("sleeper", host, sleeper.pid, process_started(sleeper.pid), time.time() + 3600)
            other = CallCache(empty_store)
            result: list = []
            t = threading.Thread(target=lambda: result.extend(runner.call([req])))
            t.start()
            assert _wait_for(lambda: runner.stats.waited == 0 and t.is_alive(), 5)
            time.sleep(0.3)  # let the runner find the claim (not an assertion: either way it must not pay)
            from engine.judging.backends import ChatResult

            other.put_rows(
                call_rows(
                    [(key, req, ChatResult("[[A]]", None, 1, 1, 0.1))],
                    "openai",
                    "fake-judge",
                    None,
                    runner.server,
                )
            )
            t.join(60)
            assert not t.is_alive() and result[0].text == "[[A]]"
            assert (runner.stats.made, runner.stats.cached, srv.total) == (0, 1, 0)
            with empty_store.transaction() as cur:
                cur.execute("DELETE FROM judge_calls")
            # 2. the owner died (its pid is gone): taken over at once, the call is made here
            lease("dead", host, done.pid, None, time.time() + 3600)
            r2 = _runner(empty_store, srv, poll_s=0.05)
            assert r2.call([req])[0] is not None and (r2.stats.made, srv.total) == (1, 1)
            with empty_store.transaction() as cur:
                cur.execute("DELETE FROM judge_calls")
            # 3. a pid that now belongs to another process (start time differs): also gone
            lease("recycled", host, sleeper.pid, process_started(sleeper.pid) - 1000, time.time() + 3600)
            r3 = _runner(empty_store, srv, poll_s=0.05)
            assert r3.call([req])[0] is not None and (r3.stats.made, srv.total) == (1, 2)
            with empty_store.transaction() as cur:
                cur.execute("DELETE FROM judge_calls")
            # 4. an owner on another host that stopped renewing: taken over once the lease lapses
            lease("far", "another-host", 1, None, time.time() + 0.5)
            r4 = _runner(empty_store, srv, poll_s=0.05)
            assert r4.call([req])[0] is not None and (r4.stats.made, srv.total) == (1, 3)
            assert empty_store.cursor().execute("SELECT count(*) FROM judge_call_leases").fetchone()[0] == 0
    finally:
        sleeper.kill()
        sleeper.wait()


# -- item 3 (judge side): the store is busy past the lock wait --------------------------------------


def test_paid_calls_are_journaled_when_the_store_stays_busy_and_filed_by_the_next_run(tmp_path):
    db = tmp_path / "busy.duckdb"
    with FakeOpenAI() as srv:
        srv.gate.clear()
        cmd = judge_cmd(db, "busy", srv.base_url, "--protocol", "swapped", "--concurrency", "4")
        cmd[3:3] = ["--lock-wait", "0.3"]
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert _wait_for(lambda: srv.arrivals >= 4), "the run never called the server"
        holder = None
        deadline = time.time() + 60
        while holder is None and time.time() < deadline:  # take the store's lock (another process)
            try:
                holder = duckdb.connect(str(db))
            except duckdb.Error:
                time.sleep(0.01)
        assert holder is not None
        try:
            srv.gate.set()  # the 4 calls in flight finish and are paid; the store cannot take them
            out, err = proc.communicate(timeout=240)
        finally:
            holder.close()
        paid_first = srv.statuses[200]
        journals = sorted(tmp_path.glob("busy.duckdb.calls-*.jsonl"))
        lines = err.strip().splitlines()
        assert proc.returncode == 2 and out == "" and len(lines) == 1, err
        assert lines[0].startswith(
            f"error: The judge run stopped because the store at {db} could not be "
            "written: it stayed in use by another process past the 0.3 s lock wait; the "
        )
        assert f"{paid_first} finished calls not yet stored are kept in " in lines[0]
        assert paid_first >= 4 and len(journals) == 1
        assert len(journals[0].read_text().splitlines()) == paid_first
        # the next run files them and pays only for the rest
        rerun = run_engine(judge_cmd(db, "busy", srv.base_url, "--protocol", "swapped")[3:])
        sent = [json.dumps(b["messages"]) for b in srv.bodies]
    assert rerun.returncode == 0, rerun.stderr
    r = _csv_row(rerun.stdout)
    assert (r.status, r.verdicts, r.calls_made, r.calls_cached) == (
        "done",
        UNIQUE,
        UNIQUE - paid_first,
        paid_first,
    )
    assert len(sent) == UNIQUE and len(set(sent)) == UNIQUE  # nothing paid twice, nothing lost
    assert not list(tmp_path.glob("busy.duckdb.calls-*.jsonl"))
    with Store(db) as st:
        assert st.cursor().execute("SELECT count(*) FROM judge_calls").fetchone()[0] == UNIQUE


# -- item 8: deadlines and stalls ----------------------------------------------------------------------


def test_a_trickling_server_cannot_hold_a_call_past_the_timeout(empty_store):
    with FakeOpenAI(trickle_s=0.2, trickle_bytes=200) as srv:  # 40 s for the whole body
        runner = _runner(empty_store, srv, timeout_s=0.5, max_retries=0, unreachable_after=99)
        (res,) = runner.call([_req("TRICKLE please")])
        sent = srv.trickled
    assert res is None and runner.stats.failed == 1
    assert "no complete reply from" in runner.stats.errors[0] and "within 0.5 s" in runner.stats.errors[0]
    assert sent < 50  # the client hung up at its deadline, long before the 200th byte


def test_a_server_that_never_answers_stops_the_run_with_one_sentence(empty_store):
    with FakeOpenAI() as srv:
        srv.gate.clear()  # connections are accepted, replies never come
        runner = _runner(empty_store, srv, timeout_s=0.5, max_retries=5, concurrency=3, backoff_s=1.0)
        reqs = [_req(f"question {i}") for i in range(96)]
        with pytest.raises(ServerStalled) as err:
            runner.call(reqs)
        arrivals = srv.arrivals
        srv.gate.set()
    msg = str(err.value)
    assert msg == (
        f"The server at {srv.base_url} takes connections but sent no complete reply within the 0.5 s "
        "timeout to any of the first 3 attempts; check that it is serving the model, or raise --timeout."
    )
    assert arrivals < 12  # not 96 calls x 6 attempts


@pytest.mark.parametrize("value", ["0", "-5", "nan"])
def test_a_timeout_of_zero_or_less_is_refused_in_one_sentence(tmp_path, value):
    db = tmp_path / "t.duckdb"
    out = run_engine(judge_cmd(db, "t", "http://127.0.0.1:9/v1", f"--timeout={value}")[3:])
    assert out.returncode == 2 and out.stdout == ""
    assert (
        out.stderr.strip() == f"error: --timeout must be a number of seconds above 0, not {float(value):g}."
    )
    with Store(db) as st:
        assert st.cursor().execute("SELECT count(*) FROM judge_runs").fetchone()[0] == 0
        assert not st.has_dataset("t")


# -- item 9: a killed run whose pid was reused ---------------------------------------------------------


def _fake_running_run(store, pid: int, started: float | None) -> None:
    import socket

    with store.transaction() as cur:
        cur.execute(
            "INSERT INTO judge_runs (kind, dataset, backend, model, pid, host, pid_started)"
            " VALUES ('judge', 'd', 'openai', 'm', ?, ?, ?)",
            [pid, socket.gethostname(), started],
        )


def _statuses(store) -> list[str]:
    return [r[0] for r in store.cursor().execute("SELECT status FROM judge_runs ORDER BY run_id").fetchall()]


def test_a_running_run_whose_pid_now_belongs_to_another_process_is_interrupted(empty_store):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        assert _wait_for(lambda: process_started(sleeper.pid) is not None, 30)
        started = process_started(sleeper.pid)
        # the recorded run's process started 1000 s before the live one holding that pid now
        _fake_running_run(empty_store, sleeper.pid, started - 1000)
        run_id = start_run(empty_store, "judge", "d", "openai", "m", "swapped", {})
        assert _statuses(empty_store) == ["interrupted", "running"] and run_id == 2
        with empty_store.transaction() as cur:
            cur.execute("DELETE FROM judge_runs")
        # the same pid and start time: really that run, still live -> refused, and --force overrides
        _fake_running_run(empty_store, sleeper.pid, started)
        with pytest.raises(RunInProgress) as err:
            start_run(empty_store, "judge", "d", "openai", "m", "swapped", {})
        assert str(err.value).endswith("or add --force if that process is not this run.")
        start_run(empty_store, "judge", "d", "openai", "m", "swapped", {}, force=True)
        assert _statuses(empty_store) == ["interrupted", "running"]
    finally:
        sleeper.kill()
        sleeper.wait()


# -- item 11: secrets in URLs, and the server in the call key ------------------------------------------


def test_a_key_inside_the_base_url_never_reaches_the_store_or_an_error(tmp_path):
    db = tmp_path / "s.duckdb"
    secret = "SeCrEt-4242"
    with FakeOpenAI() as srv:
        url = srv.base_url.replace("http://", f"http://user:{secret}@")
        ok = run_engine(judge_cmd(db, "s", url)[3:])
    assert ok.returncode == 0, ok.stderr
    dead = run_engine(  # the same URL, the server gone: the error names the server, not the key
        judge_cmd(db, "s", url, "--max-retries", "0", "--models", "gpt-4,llama-13b,vicuna-13b-v1.3")[3:],
    )  # fmt: skip
    assert dead.returncode == 2 and f"http://***@127.0.0.1:{srv.port}/v1" in dead.stderr
    assert secret not in ok.stdout + ok.stderr + dead.stdout + dead.stderr
    with Store(db) as st:
        params = [r[0] for r in st.cursor().execute("SELECT params FROM judge_runs").fetchall()]
        servers = {r[0] for r in st.cursor().execute("SELECT DISTINCT server FROM judge_calls").fetchall()}
    assert len(params) == 2 and all(secret not in p and "***@" in p for p in params)
    assert servers == {srv.base_url}
    assert secret not in db.read_bytes().decode("latin-1")


def test_one_model_name_on_two_servers_does_not_share_outputs_but_old_calls_are_still_found(empty_store):
    req = _req("=== QUESTION ===\nq\n\n=== ANSWER A ===\nlonger one\n\n=== ANSWER B ===\nshort")
    with FakeOpenAI() as one, FakeOpenAI() as two:
        r1 = _runner(empty_store, one)
        r1.call([req])
        r2 = _runner(empty_store, two)
        r2.call([req])
        assert (r1.stats.made, r2.stats.made, one.total, two.total) == (1, 1, 1, 1)
        # a call stored before the server was part of the key (server NULL, the old key) is reused
        old = _req("an older question")
        from engine.judging.backends import ChatResult

        CallCache(empty_store).put_rows(
            call_rows(
                [(r1.legacy_key(old), old, ChatResult("[[B]]", None, 1, 1, 0.1))],
                "openai",
                "fake-judge",
                None,
                None,
            )
        )
        r3 = _runner(empty_store, two)
        (res,) = r3.call([old])
        assert res.text == "[[B]]" and (r3.stats.made, r3.stats.cached, two.total) == (0, 1, 1)
    rows = empty_store.cursor().execute("SELECT server FROM judge_calls ORDER BY created_at").fetchall()
    assert sorted(r[0] or "" for r in rows) == sorted(["", one.base_url, two.base_url])


def test_journal_rows_round_trip_into_the_cache(empty_store, tmp_path):
    """The journal keeps every column of a call: filing it gives the row the store would have had."""
    from engine.judging import journal
    from engine.judging.backends import ChatResult

    req = _req("q")
    rows = call_rows(
        [("k1", req, ChatResult("t", ({"A": -0.1},), 3, 4, 0.5, 2))], "openai", "m", 7, "http://s/v1"
    )
    path = tmp_path / "x.duckdb.calls-otherhost-1-0.jsonl"
    journal.append(path, rows)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"call_key": "half a li')  # a line cut short by a crash is skipped
    cache = CallCache(empty_store)
    assert journal.file_pending(tmp_path / "x.duckdb", cache.put_rows) == 1 and not path.exists()
    got = (
        empty_store.cursor()
        .execute(
            "SELECT call_key, text, top_logprobs, prompt_tokens, completion_tokens, attempts, run_id, server"
            " FROM judge_calls"
        )
        .fetchall()
    )
    assert got == [("k1", "t", '[{"A": -0.1}]', 3, 4, 2, 7, "http://s/v1")]
    assert os.path.exists(tmp_path)


# -- item 7 (judge side): a full disk --------------------------------------------------------------------


def _file_size_limit(limit: int):
    """preexec_fn: files of the child may not grow past ``limit`` bytes (a real EFBIG from the kernel,
    the same refusal as a full disk; CPython ignores SIGXFSZ, so the write fails instead of killing)."""
    import resource

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _journals_in(beside: Path, second: Path, third: Path) -> list[Path]:
    """Every journal file of the store ``full.duckdb`` in its three places."""
    return [*beside.glob("full.duckdb.calls-*.jsonl"), *second.glob("*.jsonl"), *third.rglob("*.jsonl")]


def test_a_full_disk_mid_run_is_one_sentence_and_no_paid_call_is_lost(tmp_path, monkeypatch):
    db = tmp_path / "full.duckdb"
    second = tmp_path / "second"  # the journal's second location
    third = tmp_path / "third"  # its third ($TMPDIR/tournament-lens-journals), in this test's folder
    third.mkdir()
    places = {**os.environ, "LENS_JOURNAL_DIR": str(second), "TMPDIR": str(third)}
    # replies take 0.05 s, two at a time: the 48 calls finish over about a second, so they are stored
    # in several groups (Runner.record_every_s), as on a real server, not all in one
    with FakeOpenAI(delay_s=0.05) as srv:
        warm = run_engine(
            judge_cmd(db, "d", srv.base_url, "--protocol", "single", models="gpt-4,llama-13b", model="warm")[
                3:
            ]
        )
        assert warm.returncode == 0, warm.stderr
        warm_calls = srv.statuses[200]  # 8 prompts x 1 pair x 1 order
        # the write-ahead log may grow to 60 kB: the run fills it part way through its 48 calls
        full = subprocess.run(
            judge_cmd(db, "d", srv.base_url, "--protocol", "swapped", "--concurrency", "2"),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=240,
            preexec_fn=_file_size_limit(60_000),
            env=places,
        )
        paid_full = srv.statuses[200] - warm_calls
        lines = full.stderr.strip().splitlines()
        assert full.returncode == 2 and full.stdout == "" and len(lines) == 1, full.stderr
        assert lines[0].startswith(
            f"error: The judge run stopped because the store at {db} could not be written: "
            f"the disk holding {tmp_path} is full (or a file-size limit was reached); "
        )
        assert lines[0].endswith("free some space and rerun.") and "Traceback" not in full.stderr
        assert 0 < paid_full < UNIQUE
        # the write that hits the limit is a batch of calls (they go to the journal) or a batch of
        # verdicts (the calls are stored; calls still in flight then go to the journal)
        # the journal grows with the calls not yet stored: past the 60 kB limit it moves to its second
        # location ($LENS_JOURNAL_DIR), and the sentence says so
        # (a file there holding calls stored since may pass the limit in turn: the unstored calls then
        # move on to the third place, $TMPDIR)
        journals = _journals_in(tmp_path, second, third)
        kept = re.search(
            r"; the (\d+) finished calls not yet stored are kept in (\S+)(?: \(the journal's first place, "
            r"beside the store, could not be written: [^)]*File too large\))? and the next run",
            lines[0],
        )
        if kept is None:
            assert "; no finished call was lost; " in lines[0] and journals == []
        else:
            assert [str(j) for j in journals] == [kept.group(2)]
            assert len(journals[0].read_text().splitlines()) == int(kept.group(1))
        monkeypatch.setattr(tempfile, "tempdir", str(third))  # this process's $TMPDIR, read once
        again = run_engine(judge_cmd(db, "d", srv.base_url, "--protocol", "swapped")[3:], env=places)
        sent = [(b["model"], json.dumps(b["messages"])) for b in srv.bodies]
    assert again.returncode == 0, again.stderr
    r = _csv_row(again.stdout)
    assert (r.status, r.verdicts, r.calls_made + r.calls_cached) == ("done", UNIQUE, UNIQUE)
    assert (
        r.calls_cached == paid_full and len(sent) == len(set(sent)) == warm_calls + UNIQUE
    )  # each paid once
    assert not _journals_in(tmp_path, second, third)


def test_a_full_disk_before_any_call_is_one_sentence(tmp_path):
    db = tmp_path / "full0.duckdb"
    Store(db).close()
    out = subprocess.run(
        judge_cmd(db, "d", "http://127.0.0.1:9/v1"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=_file_size_limit(1),
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        "error: The disk is full (or a file-size limit was reached): the write that hit it was not stored "
        "and the "
        "store is as it was before it; free some space and run the command again."
    )
    with Store(db) as st:
        assert (
            not st.has_dataset("d")
            and st.cursor().execute("SELECT count(*) FROM judge_runs").fetchone()[0] == 0
        )


def test_secrets_stored_by_older_runs_are_redacted_by_the_migration(db_path):
    with Store(db_path) as st, st.transaction() as cur:
        cur.execute(
            "INSERT INTO judge_runs (kind, dataset, backend, model, params) VALUES ('judge', 'd', 'openai', "
            "'m', ?)",
            [json.dumps({"base_url": "http://u:OLDKEY@h1/v1,https://x:Y2@h2:8000/v1", "model": "m@home"})],
        )
        cur.execute("DELETE FROM schema_migrations WHERE version = 41")  # as before the migration
    with Store(db_path) as st:  # reopening applies it
        (params,) = st.cursor().execute("SELECT params FROM judge_runs").fetchone()
    assert json.loads(params) == {"base_url": "http://***@h1/v1,https://***@h2:8000/v1", "model": "m@home"}
