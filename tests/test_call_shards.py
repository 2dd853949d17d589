"""Issue 29 point 4: judge processes sharing one call cache through Parquet shards
(engine.judging.shards, ``judge --call-shards``, ``calls --merge-shards``), and ``calls --import`` of
(request, response) rows made by another engine. Each test checks against a second path: the rows a
plain cache stores, the fake server's own request log, the verdicts of a plain run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import judge_cmd

from engine.judging import shards as shards_mod
from engine.judging.backends import ChatRequest, ChatResult, Decoding
from engine.judging.cache import CallCache, call_key, call_rows
from engine.judging.shards import CallShards, merge, shard_folder
from engine.store.connection import Store

REPO = Path(__file__).resolve().parent.parent
MODELS = "gpt-4,llama-13b,alpaca-13b"


def _calls(n: int, tag: str = "q") -> list[tuple[str, ChatRequest, ChatResult]]:
    out = []
    for i in range(n):
        msgs = (("system", "judge"), ("user", f"{tag} {i} é"))
        req = ChatRequest(msgs, Decoding(top_logprobs=2), "pairwise", 1)
        top = ({"A": -0.1 * i, "B": -2.0},) if i % 2 else None
        out.append((call_key("openai", "m", req, "http://h:1/v1"), req, ChatResult(f"[[A]] {i}", top, 10 + i,
                                                                                  3, 0.5 * i, 1 + i % 3)))
    return out


def _rows(calls):
    return call_rows(calls, "openai", "m", 7, "http://h:1/v1")


def _stored(store: Store) -> pd.DataFrame:
    return store.cursor().execute(
        "SELECT * EXCLUDE (created_at) FROM judge_calls ORDER BY call_key").df()


def _leases(store: Store) -> list[tuple]:
    return store.cursor().execute("SELECT call_key, owner FROM judge_call_leases ORDER BY 1").fetchall()


def test_a_sharded_cache_serves_its_calls_and_files_the_rows_a_plain_cache_stores(tmp_path):
    calls = _calls(6)
    plain_store, shard_store = Store(tmp_path / "plain.duckdb"), Store(tmp_path / "shard.duckdb")
    plain, sharded = CallCache(plain_store), CallCache(shard_store, shards=True)
    keys = [k for k, _, _ in calls]
    assert sharded.claim(keys) == (set(keys), set())
    plain.put_rows(_rows(calls))
    sharded.put_rows(_rows(calls))
    assert _stored(shard_store).empty  # nothing written to the store during the run
    assert len(list(shard_folder(shard_store.path).glob("*.parquet"))) == 1
    assert sharded.get_many(keys) == plain.get_many(keys) == {k: r for k, _, r in calls}
    assert len(_leases(shard_store)) == 6  # kept until the calls are in the store
    sharded.release()  # the end of the run: its shard is filed, its leases go
    pd.testing.assert_frame_equal(_stored(shard_store), _stored(plain_store))
    assert _leases(shard_store) == []
    assert not shard_folder(shard_store.path).exists()


def test_filing_again_after_a_kill_or_a_key_in_two_files_stores_each_call_once(tmp_path):
    calls = _calls(5)
    store = Store(tmp_path / "s.duckdb")
    writer = CallShards(store.path)
    first = writer.append(_rows(calls[:3]))
    writer.append(_rows(calls[1:]))  # keys 1 and 2 in both files
    saved = tmp_path / "first.parquet"
    shutil.copy(first, saved)
    assert merge(store) == 5
    first.parent.mkdir(exist_ok=True)
    shutil.copy(saved, first)  # a merge killed after its commit, before it removed the file
    assert merge(store) == 0
    got = _stored(store)
    assert sorted(got["call_key"]) == sorted(k for k, _, _ in calls)
    assert list(shard_folder(store.path).glob("*")) == []


def test_a_call_in_another_runs_shard_is_held_and_read_from_the_shard(tmp_path):
    calls = _calls(3)
    store = Store(tmp_path / "s.duckdb")
    a, b = CallCache(store, shards=True), CallCache(store, shards=True)
    k0, k1, k2 = (k for k, _, _ in calls)
    assert a.claim([k0, k1]) == ({k0, k1}, set())
    a.put_rows(_rows(calls[:1]))  # k0 answered and in a's shard; k1 still in flight
    assert b.claim([k0, k1, k2]) == ({k2}, {k0, k1})
    assert b.get_many([k0, k1]) == {k0: calls[0][2]}


def test_a_dead_runs_shard_call_is_not_paid_again_when_its_lease_lapses(tmp_path):
    calls = _calls(2)
    store = Store(tmp_path / "s.duckdb")
    dead, alive = CallCache(store, shards=True), CallCache(store, shards=True)
    k0, k1 = (k for k, _, _ in calls)
    dead.claim([k0, k1])
    dead.put_rows(_rows(calls[:1]))  # k0 paid and in its shard, then the process died (k1 in flight)
    with store.transaction() as cur:  # a lease of another host that was not renewed: lapsed
        cur.execute("UPDATE judge_call_leases SET host = 'gone-host', expires_at = 0")
    assert alive.claim([k0, k1]) == ({k1}, {k0})
    assert _leases(store) == [(k1, alive.owner)]  # no lease kept on the call it will not make
    assert alive.get_many([k0]) == {k0: calls[0][2]}


def test_a_shard_filed_after_a_reader_indexed_it_is_found_in_the_store(tmp_path):
    calls = _calls(4)
    store = Store(tmp_path / "s.duckdb")
    writer, reader = CallCache(store, shards=True), CallCache(store, shards=True)
    writer.put_rows(_rows(calls))
    keys = [k for k, _, _ in calls]
    assert reader.get_many(keys) == {k: r for k, _, r in calls}  # indexed from the shard
    assert merge(store) == 4  # filed and removed meanwhile
    assert reader.get_many(keys) == {k: r for k, _, r in calls}


def _verdicts(db: Path, dataset: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute("SELECT prompt_id, model_a, model_b, winner FROM verdicts WHERE dataset = ?"
                       " ORDER BY ALL", [dataset]).fetchall()
    con.close()
    return rows


def _observe_held(monkeypatch) -> threading.Event:
    """An event set once a claim in this process finds calls held by another run (an observer on
    ``CallCache.claim``, which still claims as before)."""
    saw_held = threading.Event()
    claim = CallCache.claim

    def observed(self, keys):
        got = claim(self, keys)
        if got[1]:
            saw_held.set()
        return got

    monkeypatch.setattr(CallCache, "claim", observed)
    return saw_held


def _meeting_runs(srv, saw_held: threading.Event, first: list[str], second: list[str]) -> list[tuple]:
    """``first`` (a judge command line) as its own process while the server holds every request at its
    gate, then ``second`` in this process once the first has requests in flight, until a claim of the second
    finds calls held by the first (``_observe_held``); the gate then opens. Both must succeed; their
    (stdout, stderr)."""
    srv.gate.clear()
    other = subprocess.Popen(first, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: srv.at_gate >= 4 or other.poll() is not None)
        done: list = []
        here = threading.Thread(target=lambda: done.append(run_engine(second[3:])))
        here.start()
        assert _wait_for(lambda: saw_held.is_set() or not here.is_alive())
    finally:
        srv.gate.set()
    here.join()
    outs = [other.communicate(timeout=300), (done[0].stdout, done[0].stderr)]
    assert [other.returncode, done[0].returncode] == [0, 0], [o[1] for o in outs]
    assert saw_held.is_set()
    return outs


def test_two_judge_processes_with_call_shards_pay_each_call_once(tmp_path, monkeypatch):
    """Two processes on one store needing the same calls, the second started while the first holds
    requests open in the server and found their leases held (an observer on ``claim``): the server's
    request log shows each call asked once, the cache holds each once, no lease or shard is left, and
    both datasets' verdicts are those of a plain run on a store of its own."""
    db = tmp_path / "shared.duckdb"
    saw_held = _observe_held(monkeypatch)
    with FakeOpenAI(delay_s=0.01) as srv:
        shards = ("--call-shards", "--concurrency", "4")
        outs = _meeting_runs(srv, saw_held, judge_cmd(db, "a", srv.base_url, *shards, models=MODELS),
                             judge_cmd(db, "b", srv.base_url, *shards, models=MODELS))
        sent = [json.dumps([b["model"], b["messages"]], sort_keys=True) for b in srv.bodies]
        plain = tmp_path / "plain.duckdb"
        assert run_engine(judge_cmd(plain, "a", srv.base_url, models=MODELS)[3:]).returncode == 0
    made = sum(int(pd.read_csv(pd.io.common.StringIO(o[0])).iloc[0]["calls_made"]) for o in outs)
    assert len(sent) == len(set(sent)) == made > 0
    con = duckdb.connect(str(db), read_only=True)
    stored = con.execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
    assert stored == (made, made)
    assert con.execute("SELECT count(*) FROM judge_call_leases").fetchone() == (0,)
    con.close()
    assert not shard_folder(db).exists()
    assert _verdicts(db, "a") == _verdicts(db, "b") == _verdicts(plain, "a")


def _wait_for(cond, seconds: float = 120.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.005)
    return False


# -- calls --import ----------------------------------------------------------------------------------
def _engine_output(db: Path) -> pa.Table:
    """What another engine (e.g. Ray Data with vLLM) writes after answering our requests: the request
    columns, messages as a list of role/content structs, the reply's text; no call key."""
    con = duckdb.connect(str(db), read_only=True)
    df = con.execute("SELECT backend, model, template_id, template_version, messages, decoding, server, text,"
                     " prompt_tokens, completion_tokens FROM judge_calls ORDER BY call_key").df()
    con.close()
    df["messages"] = [json.loads(m) for m in df["messages"]]
    return pa.Table.from_pandas(df, preserve_index=False)


def test_calls_imported_from_another_engine_are_cache_hits_for_the_judge_run(tmp_path):
    first, second = tmp_path / "first.duckdb", tmp_path / "second.duckdb"
    with FakeOpenAI() as srv:
        assert run_engine(judge_cmd(first, "d", srv.base_url, models=MODELS)[3:]).returncode == 0
        made = len(srv.bodies)
        pq.write_table(_engine_output(first), tmp_path / "out.parquet")
        done = run_engine(["--db", second, "calls", "--import", tmp_path / "out.parquet", "--format", "csv"])
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[1] == f"{made},{made},0"
        again = run_engine(judge_cmd(second, "d", srv.base_url, models=MODELS)[3:])
        assert again.returncode == 0, again.stderr
        assert len(srv.bodies) == made  # the judge run asked the server nothing: every call was imported
    row = pd.read_csv(pd.io.common.StringIO(again.stdout)).iloc[0]
    assert (row.calls_made, row.calls_cached) == (0, made)
    assert _verdicts(second, "d") == _verdicts(first, "d")
    keys = [duckdb.connect(str(p), read_only=True).execute("SELECT call_key FROM judge_calls ORDER BY 1")
            .fetchall() for p in (first, second)]
    assert keys[0] == keys[1]


def _import_rows(n: int) -> pd.DataFrame:
    rows = []
    for k, req, res in _calls(n):
        rows.append({"call_key": k, "backend": "openai", "model": "m", "template_id": req.template_id,
                     "template_version": req.template_version, "messages": req.messages_json(),
                     "decoding": json.dumps(req.decoding.as_dict()), "server": "http://h:1/v1",
                     "text": res.text})
    return pd.DataFrame(rows)


def test_an_imported_row_is_stored_as_a_run_would_store_the_same_call(tmp_path):
    calls = _calls(3)
    plain = Store(tmp_path / "plain.duckdb")
    CallCache(plain).put_rows(call_rows([(k, r, ChatResult(res.text)) for k, r, res in calls], "openai", "m",
                                        None, "http://h:1/v1"))
    path = tmp_path / "rows.jsonl"
    _import_rows(3).to_json(path, orient="records", lines=True)
    store = Store(tmp_path / "s.duckdb")
    assert shards_mod.import_calls(store, path) == (3, 3)
    pd.testing.assert_frame_equal(_stored(store), _stored(plain))
    assert shards_mod.import_calls(store, path) == (3, 0)  # imported twice: stored once


@pytest.mark.parametrize("bad, said", [
    (lambda df: df.assign(call_key=[*df["call_key"][:2], "0" * 64, *df["call_key"][3:]]),
     "row 3: its call_key 000000000000... is not the key of its request"),
    (lambda df: df.assign(messages=[*df["messages"][:4], '{"role": "user"}']),
     "row 5: messages must be a list of {role, content} objects"),
    (lambda df: df.assign(decoding=[*df["decoding"][:3], '{"beam": 4}', df["decoding"][4]]),
     "row 4: decoding has an unknown parameter"),
    (lambda df: df.drop(columns=["text"]), "has no column text"),
])
def test_a_bad_import_row_stops_the_import_with_one_sentence_and_nothing_stored(tmp_path, monkeypatch, bad,
                                                                                    said):
    monkeypatch.setattr(shards_mod, "IMPORT_BATCH", 2)  # the bad row comes after a good batch
    path = tmp_path / "rows.parquet"
    bad(_import_rows(5)).to_parquet(path)
    db = tmp_path / "s.duckdb"
    done = run_engine(["--db", db, "calls", "--import", path])
    assert done.returncode == 2
    assert said in done.stderr and str(path) in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert Store(db).cursor().execute("SELECT count(*) FROM judge_calls").fetchone() == (0,)


def test_an_import_file_that_is_not_parquet_or_json_lines_is_refused(tmp_path):
    path = tmp_path / "rows.parquet"
    path.write_text("call_key,text\nabc,[[A]]\n")
    done = run_engine(["--db", tmp_path / "s.duckdb", "calls", "--import", path])
    assert done.returncode == 2 and "cannot be read as Parquet" in done.stderr
    done = run_engine(["--db", tmp_path / "s.duckdb", "calls", "--import", tmp_path / "rows.csv"])
    assert done.returncode == 2 and "There is no file" in done.stderr


def test_a_run_without_shards_files_what_a_killed_shard_run_left_before_its_first_lookup(tmp_path):
    """A killed --call-shards run leaves complete shard files (named by its process) and, maybe, a
    half-written temporary one; the next runner on the store files the first and leaves a live
    writer's files alone."""
    from engine.judging.factory import make_backend
    from engine.judging.runner import Runner

    calls = _calls(4)
    store = Store(tmp_path / "s.duckdb")
    live = CallShards(store.path)
    live.append(_rows(calls[2:]))  # a writer that is still running (this process)
    dead = CallShards(store.path)
    dead.prefix = dead.prefix.replace(f"-{os.getpid()}-", "-999999999-")  # no such process: gone
    left = dead.append(_rows(calls[:2]))
    assert left is not None and "-999999999-" in left.name
    runner = Runner(store, make_backend("openai", "m", base_url="http://127.0.0.1:9/v1", api_key="k"))
    assert runner.file_journals() == 2 and runner.stats.filed == 2
    assert sorted(_stored(store)["call_key"]) == sorted(k for k, _, _ in calls[:2])
    assert [p.name for p in shard_folder(store.path).glob("*.parquet")] == [live.mine[0].name]


def test_a_long_run_files_its_shards_every_so_many_calls(tmp_path, monkeypatch):
    """Bounded files and index: once a run's shard files hold FILE_EVERY_CALLS calls they are filed."""
    monkeypatch.setattr(shards_mod, "FILE_EVERY_CALLS", 5)
    calls = _calls(7)
    store = Store(tmp_path / "s.duckdb")
    cache = CallCache(store, shards=True)
    cache.put_rows(_rows(calls[:3]))
    assert _stored(store).empty
    cache.put_rows(_rows(calls[3:6]))  # 6 >= 5: filed
    assert len(_stored(store)) == 6 and cache.shards is not None and cache.shards.unfiled == 0
    cache.put_rows(_rows(calls[6:]))
    assert len(_stored(store)) == 6 and len(list(shard_folder(store.path).glob("*.parquet"))) == 1


def _shard_reads(con, paths: list[str]) -> tuple[int, int]:
    """(opens, bytes read) of ``paths`` in the DuckDB ``con``'s file-system log since logging began."""
    opens = nbytes = 0
    for (message,) in con.execute("SELECT message FROM duckdb_logs WHERE type = 'FileSystem'").fetchall():
        op = json.loads(message)
        if op["path"] in paths:
            opens += op["op"] == "OPEN"
            nbytes += int(op.get("bytes", 0)) if op["op"] == "READ" else 0
    return opens, nbytes


@pytest.mark.parametrize("how", ["merge", "merge_mine"])
def test_a_filing_reads_its_shard_files_once_under_the_lock_and_drops_the_leases_of_their_keys(tmp_path, how):
    """Filing (``calls --merge-shards``'s ``merge``, keys read from the files beforehand; a run's end,
    keys from its own index) reads each shard file under the store's lock as often as one plain scan of the
    files does (DuckDB's own file-system log, against a scan of copies in a fresh database: the filing read
    them twice, once more for the leases' keys), stores what a plain cache stores, and drops the lease on
    every key in the files, one already stored too, and no other."""
    calls = _calls(12, "once")
    plain_store, store = Store(tmp_path / "plain.duckdb"), Store(tmp_path / "s.duckdb")
    CallCache(plain_store).put_rows(_rows(calls[:10]))
    early = CallCache(store)
    early.put_rows(_rows(calls[:1]))  # key 0 stored before the shards are filed
    writer = CallCache(store, shards=True)
    keys = [k for k, _, _ in calls]
    with store.transaction() as cur:  # leases on every key: 0-9 are in the files, 10-11 are not
        cur.executemany("INSERT INTO judge_call_leases (call_key, owner, host, pid, expires_at) "
                        "VALUES (?, 'o', 'h', 1, 9e9)", [[k] for k in keys])
    assert writer.shards is not None
    for i in range(0, 10, 4):
        writer.shards.append(_rows(calls[i:min(i + 4, 10)]))
    files = [str(p) for p in writer.shards.files()]
    copies = [tmp_path / f"copy{i}.parquet" for i in range(len(files))]
    for f, c in zip(files, copies, strict=True):
        shutil.copy(f, c)
    scan = duckdb.connect()
    scan.execute("CALL enable_logging('FileSystem')")
    scan.execute("SELECT * FROM read_parquet(?)", [[str(c) for c in copies]]).fetchall()
    once = _shard_reads(scan, [str(c) for c in copies])
    scan.close()
    with store.session():
        store.con.execute("CALL enable_logging('FileSystem')")
        assert (merge(store) if how == "merge" else writer.shards.merge_mine(store)) == 9
        filing = _shard_reads(store.con, files)
        store.con.execute("CALL disable_logging()")
    assert once[0] > 0 and filing == once
    pd.testing.assert_frame_equal(_stored(store), _stored(plain_store))
    assert _leases(store) == sorted((k, "o") for k in keys[10:])
    assert not shard_folder(store.path).exists()


# -- judge --keep-shards: several processes, one writer files their shards afterwards --------------
def test_a_keep_shards_run_keeps_the_leases_of_its_shard_calls_and_drops_the_others(tmp_path):
    """The end of a --keep-shards run files nothing: the calls in its shards stay leased (so a run
    that meets them looks the shards up before paying), the calls it claimed and never made are let
    go; one writer's merge then stores the calls a plain cache stores and drops their leases."""
    calls = _calls(6)
    plain_store, store = Store(tmp_path / "plain.duckdb"), Store(tmp_path / "keep.duckdb")
    plain, kept = CallCache(plain_store), CallCache(store, shards=True, keep_shards=True)
    keys = [k for k, _, _ in calls]
    assert kept.claim(keys) == (set(keys), set())
    kept.put_rows(_rows(calls[:4]))
    plain.put_rows(_rows(calls[:4]))
    kept.release()  # the end of the run
    assert _stored(store).empty
    assert [k for k, _ in _leases(store)] == sorted(keys[:4])
    assert kept.get_many(keys) == {k: r for k, _, r in calls[:4]}  # served from the shard meanwhile
    assert merge(store) == 4
    pd.testing.assert_frame_equal(_stored(store), _stored(plain_store))
    assert _leases(store) == [] and not shard_folder(store.path).exists()


def _expiry(store: Store) -> dict[str, float]:
    return dict(store.cursor().execute("SELECT call_key, expires_at FROM judge_call_leases").fetchall())


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("reader", ["plain", "sharded"])
def test_a_sharded_run_renews_its_calls_in_flight_only_and_no_lapsed_shard_call_is_paid(tmp_path, keep,
                                                                                        reader):
    """A --call-shards run (kept or not) renews the leases of the calls it still waits for, not of those
    answered into its shard (up to 250,000 rewritten every 30 s before); when those lapse, a run without
    shards or a sharded one that meets them pays none: its lookup finds them in the shard, and a claim that
    takes the lapsed leases looks them up again (claims nothing, all held); the in-flight ones stay held."""
    calls = _calls(6, "renew")
    store = Store(tmp_path / "s.duckdb")
    run = CallCache(store, shards=True, keep_shards=keep)
    keys = [k for k, _, _ in calls]
    assert run.claim(keys) == (set(keys), set())
    run.put_rows(_rows(calls[:4]))  # answered into its shard; 4 and 5 still in flight
    with store.transaction() as cur:  # LEASE_S later without a renewal: every lease lapsed
        cur.execute("UPDATE judge_call_leases SET expires_at = 0")
    run.renew()
    expiry = _expiry(store)
    assert sorted(expiry) == sorted(keys)  # the shard calls keep their leases until filed
    assert [expiry[k] for k in keys[:4]] == [0] * 4 and min(expiry[k] for k in keys[4:]) > time.time()
    other = CallCache(store, shards=reader == "sharded")
    assert other.get_many(keys) == {k: r for k, _, r in calls[:4]}  # the driver looks up first
    assert other.claim(keys) == (set(), set(keys))  # a claim meeting the lapsed leases all the same
    assert [(k, o) for k, o in _leases(store) if k in keys[4:]] == sorted((k, run.owner) for k in keys[4:])
    run.put_rows(_rows(calls[4:]))
    run.release()  # the end of the run: filed (or kept for one writer), nothing paid twice
    if keep:
        assert _stored(store).empty and merge(store) == 6
    assert sorted(_stored(store)["call_key"]) == sorted(keys) and _leases(store) == []


def test_keep_shards_processes_pay_each_call_once_and_one_writer_files_them(tmp_path, monkeypatch):
    """Two --keep-shards processes needing the same calls (the second meets the first's leases while
    the server holds its requests): each call is asked once (the server's log), nothing is filed by the
    runs, a third run is served from the shards without a call, `calls --merge-shards` then files each
    call once and leaves no lease or shard, and the verdicts are those of a plain run."""
    db = tmp_path / "shared.duckdb"
    saw_held = _observe_held(monkeypatch)
    keep = ("--call-shards", "--keep-shards", "--concurrency", "4")
    with FakeOpenAI(delay_s=0.01) as srv:
        outs = _meeting_runs(srv, saw_held, judge_cmd(db, "a", srv.base_url, *keep, models=MODELS),
                             judge_cmd(db, "b", srv.base_url, *keep, models=MODELS))
        made = sum(int(pd.read_csv(pd.io.common.StringIO(o[0])).iloc[0]["calls_made"]) for o in outs)
        asked = len(srv.bodies)
        con = duckdb.connect(str(db), read_only=True)
        assert con.execute("SELECT count(*) FROM judge_calls").fetchone() == (0,)  # nothing filed yet
        assert con.execute("SELECT count(*) FROM judge_call_leases").fetchone() == (made,)
        con.close()
        third = run_engine(judge_cmd(db, "c", srv.base_url, *keep, models=MODELS)[3:])
        assert third.returncode == 0, third.stderr
        again = pd.read_csv(pd.io.common.StringIO(third.stdout)).iloc[0]
        assert (again["calls_made"], again["calls_cached"]) == (0, made) and len(srv.bodies) == asked
        sent = [json.dumps([b["model"], b["messages"]], sort_keys=True) for b in srv.bodies]
        plain = tmp_path / "plain.duckdb"
        assert run_engine(judge_cmd(plain, "a", srv.base_url, models=MODELS)[3:]).returncode == 0
    assert len(sent) == len(set(sent)) == made > 0
    filed = run_engine(["--db", str(db), "calls", "--merge-shards", "--format", "csv"])
    assert filed.returncode == 0 and int(filed.stdout.split()[-1]) == made
    con = duckdb.connect(str(db), read_only=True)
    stored = con.execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
    assert stored == (made, made)
    assert con.execute("SELECT count(*) FROM judge_call_leases").fetchone() == (0,)
    con.close()
    assert not shard_folder(db).exists()
    assert _verdicts(db, "a") == _verdicts(db, "b") == _verdicts(db, "c") == _verdicts(plain, "a")


def test_keep_shards_without_call_shards_is_refused_with_one_sentence(tmp_path):
    res = run_engine(["--db", str(tmp_path / "s.duckdb"), "judge", "--dataset", "a", "--inputs", "mt_bench",
                      "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                      "--keep-shards"])
    assert res.returncode == 2 and "give --call-shards too" in res.stderr
    assert not (tmp_path / "s.duckdb").exists()


def test_a_run_without_shards_beside_a_keep_shards_run_pays_no_call_again_nor_exports_it(tmp_path,
                                                                                           monkeypatch):
    """A run without --call-shards meets a --keep-shards run's leases (held while the server holds its
    requests), then finds them lapsed when that run ends without filing: it reads the kept shards before
    paying, so the server's log shows each call asked once; an --export-requests run afterwards lists none
    of those calls (review of round 39: 96 requests for 48 calls, and 48 exported, before)."""
    db = tmp_path / "shared.duckdb"
    saw_held = _observe_held(monkeypatch)
    with FakeOpenAI(delay_s=0.01) as srv:
        keep = judge_cmd(db, "a", srv.base_url, "--call-shards", "--keep-shards", "--concurrency", "4",
                         models=MODELS)
        plain = judge_cmd(db, "b", srv.base_url, "--concurrency", "4", models=MODELS)
        _meeting_runs(srv, saw_held, keep, plain)
        sent = [json.dumps([b["model"], b["messages"]], sort_keys=True) for b in srv.bodies]
        listed = tmp_path / "requests.jsonl"
        exp = run_engine(judge_cmd(db, "c", srv.base_url, "--export-requests", str(listed),
                                   models=MODELS)[3:])
        assert exp.returncode == 0, exp.stderr
    assert len(sent) == len(set(sent)) > 0
    assert (not listed.exists()) or listed.read_text().strip() == ""
    assert _verdicts(db, "a") == _verdicts(db, "b")
