"""Several ``judge`` processes on one store: taking turns on its write lock, or with ``--call-shards``.

Every process is ``python -m engine judge`` as a user runs it, against ``--servers`` (4)
``bench/fake_judge_server.py`` processes, all their URLs given to every run (answering at once with
unlimited slots, so the judge processes should be the bound: client-bound throughput; with one server
process the server itself was the bound on this 2-core machine). The MT-Bench questions of the 8
categories (or ``--synthetic`` generated prompts) are loaded into the store first (not timed); then,
in a fresh store per setup:

- ``1 process``: one run judges every category (swapped protocol, ``--concurrency``);
- ``N processes``: N runs at once, each judging its share of the categories into its own dataset
  (the same calls in total), on the same store file;

each way without and with ``--call-shards``. Reported: calls made (summed over the processes), wall
seconds from the first start to the last end, calls per second, the processes' CPU (user + system,
from ``wait4``) per call, and a check that the store's ``judge_calls`` holds every call exactly once
(rows = distinct keys = calls made) and no shard file is left.

``--overlap``: N processes at once that each judge *every* category into their own dataset (so they
all need the same calls): with the leases, the calls made over all processes must equal the distinct
calls, each paid once; also reported.

    python bench/judging_shards.py [--processes 4] [--concurrency 64] [--limit 10 | --synthetic 200] \
        [--overlap] [--setups shards:1,shards:n,keep:1,keep:n,lock:1,lock:n] [--spy DIR]

``keep``: ``--call-shards --keep-shards`` (each process leaves its shard files), then ``calls --merge-shards``
as one process files them all: the row gives the judging (wall, calls/s) and the filing (``merge_wall_s``)
apart, and ``calls_per_s_filed`` from the first start to the last call filed.

Each row also gives the fake servers' CPU over the setup (from /proc: the servers are meant to be cheap,
and with many processes on few cores they compete with the clients) and each process's own wall seconds
(start to exit). ``--spy DIR``: every judge process runs under ``py-spy record --idle --threads`` (py-spy
on PATH; its raw stacks, one file per process, go to DIR) to see where a process's threads wait; the CPU
column then includes py-spy's own.

Not run by CI (a benchmark, not a test). Results also go to bench/_results/judging_shards.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MODELS = "gpt-4,claude-v1,gpt-3.5-turbo,vicuna-13b-v1.3,llama-13b,alpaca-13b"
CATEGORIES = ["writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"]


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, str(HERE / "fake_judge_server.py"), "--delay", "0", "--slots",
                             "100000"], stdout=subprocess.PIPE, text=True)
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"


def load(db: Path, shares: list[list[str]], limit: int, synthetic: int = 0) -> list[str]:
    """One dataset per share of categories (prompts and answers only); their names. ``synthetic``
    > 0: instead, that many generated prompts (each with an answer of every model, 400-1,200
    characters) dealt round the shares by their number, so a run has calls enough for start-up not
    to count."""
    import pandas as pd

    from engine.judging.persist import write_answers, write_prompts
    from engine.judging.pipeline import load_inputs
    from engine.store.connection import Store

    store = Store(db)
    names = []
    for i, cats in enumerate(shares):
        names.append(f"part{i}")
        if not synthetic:
            load_inputs(store, names[-1], "mt_bench", models=MODELS.split(","), categories=cats,
                        limit_per_category=limit)
            continue
        share = [p for p in range(synthetic) if CATEGORIES[p % len(CATEGORIES)] in cats]
        write_prompts(store, names[-1], pd.DataFrame({
            "prompt_id": [f"p{p}" for p in share], "turn": 1, "category": [CATEGORIES[p % 8] for p in share],
            "text": [f"Question {p}: explain topic {p} in detail." for p in share]}))
        write_answers(store, names[-1], pd.DataFrame([
            {"prompt_id": f"p{p}", "turn": 1, "model": m,
             "text": f"{m} on {p}: " + "words " * (70 + 13 * ((p + j) % 11))}
            for p in share for j, m in enumerate(MODELS.split(","))]))
    store.close()
    return names


def server_cpu(pids: list[int]) -> float:
    """User + system CPU seconds the processes ``pids`` have used so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def run_processes(db: Path, url: str, datasets: list[str], conc: int, shards: bool | str, tmp: Path,
                  spy: Path | None = None, label: str = "") -> dict:
    """Start one judge process per dataset at once; wall, CPU and calls made over all of them."""
    procs = []
    t0 = time.perf_counter()
    for name in datasets:
        wrap = [] if spy is None else [
            "py-spy", "record", "--idle", "--threads", "--rate", "100", "--format", "raw",
            "-o", str(spy / f"{label.replace(' ', '_')}-{name}.raw"), "--"]
        cmd = wrap + [sys.executable, "-m", "engine", "--db", str(db), "--lock-wait", "600", "judge",
               "--dataset", name, "--models", MODELS,
               "--backend", "openai", "--base-url", url, "--model", "fake-judge", "--api-key", "EMPTY",
               "--protocol", "swapped", "--concurrency", str(conc), "--no-progress", "--format", "csv",
               ] + (["--call-shards"] if shards else []) + (["--keep-shards"] if shards == "keep" else [])
        out = open(tmp / f"{name}.csv", "w")  # noqa: SIM115 (closed below)
        err = open(tmp / f"{name}.err", "w")  # noqa: SIM115
        procs.append((name, subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err), out, err))
    cpu = 0.0
    made = 0
    ended: dict[int, tuple[float, int, os.struct_rusage]] = {}
    mine = {p.pid for _, p, _, _ in procs}
    while not mine <= ended.keys():  # in the order they end, so each process's own wall is its own
        pid, status, usage = os.wait4(-1, 0)
        ended[pid] = (time.perf_counter() - t0, status, usage)
    walls = []
    for name, p, out, err in procs:
        end_s, status, usage = ended[p.pid]
        walls.append(round(end_s, 2))
        p.returncode = os.waitstatus_to_exitcode(status)
        out.close()
        err.close()
        cpu += usage.ru_utime + usage.ru_stime
        if p.returncode != 0:
            raise SystemExit(f"{name} failed: {(tmp / f'{name}.err').read_text()[-2000:]}")
        text = (tmp / f"{name}.csv").read_text().splitlines()
        lines = [x for x in text if x and not x.startswith("py-spy>")]  # py-spy's own lines go to stdout
        if len(lines) < 2 or "calls_made" not in lines[0]:
            raise SystemExit(f"{name}: no summary row in {lines[:6]!r}")
        made += int(dict(zip(lines[0].split(","), lines[1].split(","), strict=False))["calls_made"])
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "cpu_s": cpu, "made": made, "process_walls_s": walls}


def cache_check(db: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    rows, distinct = con.execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
    con.close()
    left = list((db.parent / f"{db.name}.shards").glob("*")) if (db.parent / f"{db.name}.shards").exists() \
        else []
    return {"cache_rows": rows, "distinct_keys": distinct, "shard_files_left": len(left)}


def merge_process(db: Path, tmp: Path) -> tuple[float, float, int]:
    """``calls --merge-shards`` as a process (one writer files every shard): wall s, CPU s, calls filed."""
    t0 = time.perf_counter()
    with open(tmp / "merge.csv", "w") as out, open(tmp / "merge.err", "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "engine", "--db", str(db), "calls", "--merge-shards",
                              "--format", "csv"], cwd=REPO, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"calls --merge-shards failed: {(tmp / 'merge.err').read_text()[-2000:]}")
    filed = int((tmp / "merge.csv").read_text().split()[-1])
    return wall, usage.ru_utime + usage.ru_stime, filed


def one_setup(label: str, url: str, shares: list[list[str]], args, shards: bool | str,
              server_pids: list[int]) -> dict:
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        db = tmp / "bench.duckdb"
        datasets = load(db, shares, args.limit, args.synthetic)
        before = server_cpu(server_pids)
        got = run_processes(db, url, datasets, args.concurrency, shards, tmp, args.spy, label)
        servers_cpu = server_cpu(server_pids) - before
        merged = merge_process(db, tmp) if shards == "keep" else None
        check = cache_check(db)
    row = {"setup": label, "call_shards": shards, "processes": len(shares), "calls_made": got["made"],
           "wall_s": round(got["wall_s"], 2), "calls_per_s": round(got["made"] / got["wall_s"], 1),
           "cpu_ms_per_call": round(1000 * got["cpu_s"] / max(got["made"], 1), 2),
           "process_walls_s": got["process_walls_s"],
           "servers_cpu_ms_per_call": round(1000 * servers_cpu / max(got["made"], 1), 3), **check,
           "each_call_once": check["cache_rows"] == check["distinct_keys"] == got["made"]}
    if merged is not None:  # judged, then filed by one writer: its time, and calls/s from start to filed
        row |= {"merge_wall_s": round(merged[0], 2), "merge_cpu_s": round(merged[1], 2),
                "calls_filed": merged[2],
                "calls_per_s_filed": round(got["made"] / (got["wall_s"] + merged[0]), 1)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--servers", type=int, default=4,
                    help="fake servers (processes), every base URL given to every run: one Python server "
                         "process answers a few hundred calls a second on an idle core, fewer on a busy one")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--limit", type=int, default=10, help="MT-Bench questions per category")
    ap.add_argument("--synthetic", type=int, default=0,
                    help="judge this many generated prompts (6 models each) instead of MT-Bench")
    ap.add_argument("--overlap", action="store_true", help="also: N processes that all need the same calls")
    ap.add_argument("--setups", default="shards:1,shards:n,lock:1,lock:n",
                    help="which runs, in order: WAY:COUNT with WAY lock, shards or keep and COUNT 1 or n")
    ap.add_argument("--spy", type=Path, default=None,
                    help="run every judge process under py-spy, its raw stacks into this folder")
    args = ap.parse_args()
    if args.spy is not None:
        args.spy.mkdir(parents=True, exist_ok=True)
    n = args.processes
    shares = [CATEGORIES[i::n] for i in range(n)]
    servers = [start_server() for _ in range(args.servers)]
    url = ",".join(u for _, u in servers)  # every run gets every server (one call key label for all)
    pids = [server.pid for server, _ in servers]
    rows = []
    load_avg = os.getloadavg()
    try:
        for setup in args.setups.split(","):
            way, count = setup.split(":")
            shards: bool | str = "keep" if way == "keep" else way == "shards"
            if count == "1":
                rows.append(one_setup("1 process", url, [CATEGORIES], args, shards, pids))
            else:
                rows.append(one_setup(f"{n} processes", url, shares, args, shards, pids))
        if args.overlap:
            rows.append(one_setup(f"{n} processes, same calls", url, [CATEGORIES] * n, args, True, pids))
    finally:
        for server, _ in servers:
            server.kill()
            server.wait()
    for way, flag in (("lock", False), ("shards", True), ("keep", "keep")):
        one = [r for r in rows if r["call_shards"] == flag and r["processes"] == 1]
        many = [r for r in rows if r["call_shards"] == flag and r["setup"] == f"{n} processes"]
        if one and many:
            print(f"{way}: {n} processes reach {many[0]['calls_per_s'] / one[0]['calls_per_s']:.2f}x one "
                  "process's calls/s", flush=True)
            if flag == "keep":
                both = many[0]["calls_per_s_filed"] / one[0]["calls_per_s_filed"]
                print(f"keep, from the first start to the last call filed: {both:.2f}x", flush=True)
    out = HERE / "_results" / "judging_shards.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "load_avg_at_start": load_avg, "cpus": os.cpu_count(),
                               "concurrency": args.concurrency, "limit_per_category": args.limit}, indent=1))


if __name__ == "__main__":
    main()
