"""``judge --export-requests`` (engine.judging.export) and ``calls --import`` of the answers: the round
trip through another engine must leave the store exactly as a live run leaves it.

The "other engine" here is the scripted OpenAI-compatible server answering each exported ``body`` over
plain HTTP, outside our client; its replies go back in as ``response`` (the chat-completions JSON) or
as ``text``. Every verdict is then compared with a live run's on a second store against the same server
(the server's rules make both deterministic), and the judge run after the import must ask the server
nothing.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_engine
from judging_fake_openai import FakeOpenAI
from test_judging_api import _runner, _synthetic, judge_cmd

from engine.judging import export as export_mod
from engine.judging.export import EXPORT_COLUMNS, export_requests
from engine.judging.pipeline import build_jobs, judge_run
from engine.judging.protocols import ProtocolConfig, make_unit
from engine.judging.shards import import_calls
from engine.store.connection import Store

QUESTIONS = {"p-ok": "plain question", "p-bias": "BIASED question", "p-two": "another plain one"}


def _export(store: Store, srv: FakeOpenAI, protocol: str, path: Path):
    units = (make_unit(protocol, j, ProtocolConfig.default()) for j in build_jobs(store, "syn"))
    return export_requests(_runner(store, srv), units, path)


def _read(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    return pq.read_table(path).to_pylist()


def _answer(srv: FakeOpenAI, rows: list[dict], reply: str) -> list[dict]:
    """The other engine: each row's ``body`` POSTed as it stands; the reply kept as ``response`` (the
    JSON text) or as ``text`` (the message content alone)."""
    out = []
    for r in rows:
        req = urllib.request.Request(
            srv.base_url + "/chat/completions", data=r["body"].encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer k"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            doc = json.loads(resp.read())
        answer = {c: r[c] for c in EXPORT_COLUMNS if c != "body"}
        if reply == "response":
            answer["response"] = json.dumps(doc)
        else:
            answer["text"] = doc["choices"][0]["message"]["content"]
        out.append(answer)
    return out


def _verdicts(store: Store) -> list[tuple]:
    v = store.verdicts("syn")
    return sorted(zip(v["prompt_id"], v["model_a"], v["model_b"], v["winner"], v["order"].fillna(""),
                      v["prob_a"].round(12).fillna(-1.0), strict=True))


@pytest.mark.parametrize("protocol, reply, suffix, rounds, group", [
    ("swapped", "text", ".jsonl", [(18, 9)], None),  # (requests, pairs waiting on them) per round
    ("hybrid", "response", ".parquet", [(18, 9), (3, 3)], None),  # the biased prompt's orders disagree
    ("soft", "response", ".jsonl", [(18, 9)], None),  # the letters' probabilities come back in `response`
    # units stepped two at a time: one answer's score call, asked by pairs in different groups, once
    ("hybrid", "text", ".jsonl", [(18, 9), (3, 3)], 2),
])
def test_exported_requests_answered_elsewhere_and_imported_leave_what_a_live_run_leaves(
        tmp_path, empty_store, monkeypatch, protocol, reply, suffix, rounds, group):
    if group is not None:
        monkeypatch.setattr(export_mod, "STEP_UNITS", group)
    live = Store(tmp_path / "live.duckdb")
    for s in (empty_store, live):
        _synthetic(s, "syn", QUESTIONS)
    with FakeOpenAI() as srv:
        rep = judge_run(live, "syn", _runner(live, srv), protocol=protocol, judge="j")
        live_bodies = {json.dumps(b, sort_keys=True) for b in srv.bodies}
        assert rep.stats.made == sum(n for n, _ in rounds)
        exported_bodies = set()
        for i, (want, waiting) in enumerate([*rounds, (0, 0)]):
            path = tmp_path / f"round{i}{suffix}"
            got = _export(empty_store, srv, protocol, path)
            rows = _read(path)
            assert got.requests == len(rows) == len({r["call_key"] for r in rows}) == want
            assert (got.units_waiting, got.units_cached) == (waiting, 9 - waiting)
            if want == 0:
                break
            exported_bodies |= {json.dumps(json.loads(r["body"]), sort_keys=True) for r in rows}
            answers = tmp_path / f"answers{i}.parquet"
            pq.write_table(pa.Table.from_pylist(_answer(srv, rows, reply)), answers)
            assert import_calls(empty_store, answers) == (want, want)
        assert exported_bodies == live_bodies  # what --backend openai sends, request for request
        asked = srv.total
        again = judge_run(empty_store, "syn", _runner(empty_store, srv), protocol=protocol, judge="j")
        assert (again.stats.made, srv.total) == (0, asked)  # every call was imported
    assert _verdicts(empty_store) == _verdicts(live)
    live.close()


def test_an_export_writes_nothing_to_the_store_and_a_refused_one_no_file(tmp_path):
    db = tmp_path / "s.duckdb"
    out = tmp_path / "requests.jsonl"
    with FakeOpenAI() as srv:
        done = run_engine(judge_cmd(db, "d", srv.base_url, "--export-requests", str(out))[3:])
        assert done.returncode == 0, done.stderr
        assert srv.total == 0  # nothing sent
    row = done.stdout.splitlines()[1].split(",")
    assert row[1:] == ["48", "0", "24"]  # 8 prompts x 3 pairs x 2 orders; every pair waiting
    assert len(_read(out)) == 48
    con = duckdb.connect(str(db), read_only=True)
    counts = [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("judge_runs", "judge_calls", "judge_call_leases", "verdicts")]
    con.close()
    assert counts == [0, 0, 0, 0]
    for flags, said in ((["--schedule", "swim"], "round-robin schedule"),
                        (["--export-requests", str(tmp_path / "r.csv")], "write a .parquet or a .jsonl")):
        bad = tmp_path / "bad.jsonl"
        cmd = judge_cmd(db, "d", "http://127.0.0.1:9/v1", "--export-requests", str(bad), *flags)[3:]
        done = run_engine(cmd)
        assert done.returncode == 2 and said in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert not bad.exists() and not (tmp_path / "r.csv").exists()
        assert not list(tmp_path.glob(".*.tmp"))


def test_an_imported_response_that_is_not_a_reply_is_refused_naming_its_row(tmp_path, empty_store):
    _synthetic(empty_store, "syn", QUESTIONS)
    with FakeOpenAI() as srv:
        _export(empty_store, srv, "swapped", tmp_path / "r.jsonl")
        rows = _answer(srv, _read(tmp_path / "r.jsonl")[:3], "response")
    rows[2]["response"] = json.dumps({"status_code": 500, "body": {"error": "overloaded"}})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    done = run_engine(["--db", empty_store.path, "calls", "--import", tmp_path / "a.parquet"])
    assert done.returncode == 2
    assert "row 3: response has status 500" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    rows[2]["response"] = json.dumps({"id": "x", "choices": []})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a.parquet")
    done = run_engine(["--db", empty_store.path, "calls", "--import", tmp_path / "a.parquet"])
    assert done.returncode == 2 and "row 3: response has no choices" in done.stderr
    assert empty_store.cursor().execute("SELECT count(*) FROM judge_calls").fetchone() == (0,)


def test_a_pair_with_one_order_cached_exports_only_the_other(tmp_path, empty_store):
    """Calls already in the cache (here: every other order of the first export, imported) are never
    exported again, though their pairs still wait on the rest."""
    _synthetic(empty_store, "syn", QUESTIONS)
    with FakeOpenAI() as srv:
        _export(empty_store, srv, "swapped", tmp_path / "r.jsonl")
        first = _read(tmp_path / "r.jsonl")
        pq.write_table(pa.Table.from_pylist(_answer(srv, first[::2], "text")), tmp_path / "a.parquet")
        assert import_calls(empty_store, tmp_path / "a.parquet") == (9, 9)
        got = _export(empty_store, srv, "swapped", tmp_path / "r2.parquet")
    rest = _read(tmp_path / "r2.parquet")
    assert got.requests == 9 and {r["call_key"] for r in rest} == {r["call_key"] for r in first[1::2]}
    assert got.units_waiting + got.units_cached == 9
