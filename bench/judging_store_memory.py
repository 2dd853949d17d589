"""The call cache's store writes alone, without a server or a judge: RSS of the process that makes them.

A judge run's store work is, per group of calls: claim their keys (``claim_calls``), insert the answered
calls and drop the leases (``insert_calls``). This script does exactly that, ``--batch`` calls a group,
``--calls`` calls, on a store that first caches ``--prefill`` calls of other requests
(``bench/judging.py``'s ``prefill_store``: about 1.5 kB of messages a call), and samples its own RSS every
20 ms: what DuckDB costs a judge, apart from HTTP, the journal and the verdicts. ``--repo`` runs the code
of another checkout (e.g. main) instead of this one.

    python bench/judging_store_memory.py --calls 45000 --batch 500 --prefill 900000 [--repo OLD_CHECKOUT]

Prints the peak RSS and (calls so far, RSS now, peak so far) at every twentieth of the run. A benchmark,
not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def measure(db: Path, calls: int, n: int) -> None:
    """In a process of its own whose ``engine`` is the checkout's: the writes, sampled; prints the result."""
    import psutil
    import pyarrow as pa

    from engine.judging.call_rows import claim_calls, insert_calls
    from engine.store.connection import Store

    store = Store(db)
    me = psutil.Process()
    peak, done = [0], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], me.memory_info().rss)
            time.sleep(0.02)

    threading.Thread(target=sample, daemon=True).start()
    head = json.dumps([["system", "x" * 200], ["user", "question " * 40 + "answer " * 80]])
    marks, t0 = [], time.perf_counter()
    for start in range(0, calls, n):
        keys = [hashlib.sha256(str(j).encode()).hexdigest() for j in range(start, start + n)]
        claim_calls(store, keys, "probe", ("host", 1, 0.0), 1e12, lambda *a: False)
        insert_calls(store, pa.table({
            "call_key": keys, "backend": ["openai"] * n, "model": ["m"] * n, "template_id": ["t"] * n,
            "template_version": [1] * n,
            "messages": [head + hashlib.md5(k.encode()).hexdigest() * 40 for k in keys],
            "decoding": ["{}"] * n, "text": ["A"] * n, "top_logprobs": ['{"A": -0.1, "B": -2.3}'] * n,
            "prompt_tokens": [300] * n, "completion_tokens": [1] * n, "latency_s": [0.01] * n,
            "attempts": [1] * n, "run_id": [1] * n, "server": ["http://x/v1"] * n,
        }), "probe")
        if (start // n) % max(1, calls // n // 20) == 0:
            marks.append((start + n, me.memory_info().rss >> 20, peak[0] >> 20))
    done.set()
    store.close()
    print(json.dumps({"calls": calls, "batch": n, "peak_rss_mb": peak[0] >> 20,
                      "seconds": round(time.perf_counter() - t0, 1), "store_mb": db.stat().st_size >> 20,
                      "load_avg": os.getloadavg()[0]}))
    print(marks, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=45_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--prefill", type=int, default=0)
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--child", help=argparse.SUPPRESS)  # the store to measure on (the measuring process)
    args = ap.parse_args()
    if args.child:
        measure(Path(args.child), args.calls, args.batch)
        return
    from judging import prefill_store  # this checkout's bench helper (the measured code is --repo's)

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "probe.duckdb"
        if args.prefill:
            prefill_store(Path(args.repo), db, args.prefill)
        print("repo", args.repo, "prefill", args.prefill, flush=True)
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(db), "--calls",
                        str(args.calls), "--batch", str(args.batch)], cwd=args.repo, check=True,
                       env={**os.environ, "PYTHONPATH": args.repo})


if __name__ == "__main__":
    main()
