"""``python -m engine judge``: run an LLM judge over a dataset's prompts and answers into verdicts.

Example (a local OpenAI-compatible server, three shipped MT-Bench models, 2 prompts per category):
  python -m engine judge --dataset mtb-judge --inputs mt_bench --models gpt-4,llama-13b,alpaca-13b \
      --limit 2 --backend openai --base-url http://localhost:8000/v1 --model my-judge --protocol hybrid
"""

from __future__ import annotations

import argparse
import dataclasses

import pandas as pd

from ..judging.backends import Decoding
from ..judging.factory import BACKENDS, make_backend
from ..judging.pipeline import judge_run, load_inputs
from ..judging.protocols import PROTOCOLS, ProtocolConfig
from ..judging.runner import Runner
from ..judging.templates import parse_template_ref
from ._common import add_format, store_from_args, write_frame


def _csv(s: str | None) -> list[str] | None:
    return [x.strip() for x in s.split(",") if x.strip()] if s else None


def add_backend_args(p: argparse.ArgumentParser) -> None:
    """Backend, concurrency, retry and price options shared by judge, generate and perturb."""
    g = p.add_argument_group("backend")
    g.add_argument("--backend", choices=BACKENDS, default="openai")
    g.add_argument("--model", help="model name on the server, or a local model (folder, HF id, smollm2)")
    g.add_argument(
        "--base-url", help="OpenAI-compatible base URL(s), comma-separated (default $OPENAI_BASE_URL)"
    )
    g.add_argument("--api-key", help="API key (default $OPENAI_API_KEY)")
    g.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    g.add_argument("--gguf-file", help="local backend: GGUF file inside --model's folder")
    g.add_argument("--device", help="local backend: cpu or cuda (default: cuda when present)")
    g.add_argument("--batch-size", type=int, default=8, help="local backend: requests generated together")
    g.add_argument("--threads", type=int, help="local backend: CPU threads for torch (default: torch's)")
    g.add_argument("--concurrency", type=int, default=4, help="API requests in flight")
    g.add_argument("--max-retries", type=int, default=5)
    g.add_argument("--backoff", type=float, default=1.0, help="first retry delay in seconds (doubles)")
    g.add_argument(
        "--price-in", type=float, default=0.0, help="USD per 1M prompt tokens (for the cost estimate)"
    )
    g.add_argument("--price-out", type=float, default=0.0, help="USD per 1M completion tokens")
    g.add_argument("--max-tokens", type=int, help="override the protocol's max new tokens")
    g.add_argument("--templates", help="folder with your own templates (<id>.v<version>.toml)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def runner_from_args(args: argparse.Namespace, store) -> Runner:
    backend = make_backend(
        args.backend,
        args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        timeout_s=args.timeout,
        gguf_file=args.gguf_file,
        device=args.device,
        batch_size=args.batch_size,
        threads=args.threads,
    )
    return Runner(
        store,
        backend,
        concurrency=args.concurrency,
        max_retries=args.max_retries,
        backoff_s=args.backoff,
        price_per_mtok=(args.price_in, args.price_out),
        progress=not args.no_progress,
    )


def register(sub) -> None:
    p = sub.add_parser("judge", help="run an LLM judge (round robin or SWIM) into a verdict dataset")
    p.add_argument(
        "--dataset", required=True, help="dataset to read prompts/answers from and write verdicts to"
    )
    p.add_argument("--inputs", help="first load questions and answers from this folder (e.g. mt_bench)")
    p.add_argument("--models", help="comma-separated models to compare (default: all with answers)")
    p.add_argument("--categories", help="comma-separated categories to load with --inputs")
    p.add_argument("--limit", type=int, help="with --inputs: at most this many prompts per category")
    p.add_argument("--variants", help="comma-separated variant numbers to judge (default: all)")
    p.add_argument("--schedule", choices=("round-robin", "swim"), default="round-robin")
    p.add_argument(
        "--seed", type=int, default=0, help="SWIM's join order and first opponents; single's order coin"
    )
    p.add_argument("--protocol", choices=PROTOCOLS, default="swapped")
    p.add_argument("--template", default="pairwise", help="pairwise template id[@version]")
    p.add_argument("--judge-name", help="judge column value (default: <model>:<protocol>)")
    add_backend_args(p)
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    store = store_from_args(args, ensure_default=False)
    try:
        models = _csv(args.models)
        if args.inputs:
            load_inputs(
                store,
                args.dataset,
                args.inputs,
                models=models,
                categories=_csv(args.categories),
                limit_per_category=args.limit,
            )
        tid, ver = parse_template_ref(args.template)
        cfg = ProtocolConfig.default(args.templates, pairwise=tid, version=ver, seed=args.seed)
        if args.max_tokens:
            dec = Decoding(max_tokens=args.max_tokens)
            cfg = dataclasses.replace(cfg, decoding=dec, score_decoding=dec)
        runner = runner_from_args(args, store)
        variants = [int(v) for v in _csv(args.variants)] if args.variants else None
        params = {k: v for k, v in vars(args).items() if k not in ("func", "api_key")}
        rep = judge_run(
            store,
            args.dataset,
            runner,
            protocol=args.protocol,
            cfg=cfg,
            judge=args.judge_name,
            models=models,
            variants=variants,
            schedule=args.schedule,
            seed=args.seed,
            params=params,
        )
        s = rep.stats
        row = {
            "run_id": rep.run_id,
            "dataset": rep.dataset,
            "judge": rep.judge,
            "pairs": rep.pairs,
            "verdicts": rep.verdicts,
            "invalid": rep.invalid,
            "calls_made": s.made,
            "calls_cached": s.cached,
            "calls_failed": s.failed,
            "retries": s.retries,
            "prompt_tokens": s.prompt_tokens,
            "completion_tokens": s.completion_tokens,
            "est_cost_usd": round(s.cost_usd, 6),
        }
        write_frame(pd.DataFrame([row]), args.format)
        if rep.swim is not None and args.format == "table":
            write_frame(
                rep.swim.scores.rename("bt_score").reset_index().rename(columns={"index": "model"}), "table"
            )
        return 0 if s.failed == 0 else 1
    finally:
        store.close()
