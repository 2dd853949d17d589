"""``python -m engine judge``: run an LLM judge over a dataset's prompts and answers into verdicts.

Example (a local OpenAI-compatible server, three shipped MT-Bench models, 2 prompts per category):
  python -m engine judge --dataset mtb-judge --inputs mt_bench --models gpt-4,llama-13b,alpaca-13b \
      --limit 2 --backend openai --base-url http://localhost:8000/v1 --model my-judge --protocol hybrid
Add one model to that leaderboard with about log2 M comparisons per prompt:
  python -m engine judge --dataset mtb-judge --schedule swim --add-model vicuna-13b-v1.3 ...
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING

import pandas as pd

from engine.cli._common import add_format, store_from_args, write_frame
from engine.cli._judge_active import add_active_args, run_active, wants_active
from engine.cli.calls import add_call_shards_arg, check_shard_args, shard_run_options
from engine.errors import LensError
from engine.judging.backends import MAX_TOKENS_FIELDS, Decoding
from engine.judging.factory import BACKENDS, make_backend
from engine.judging.persist import ensure_no_live_run, require_prompts
from engine.judging.pipeline import judge_run, load_inputs
from engine.judging.protocols import MAX_ANSWER_CHARS, PROTOCOLS, ProtocolConfig
from engine.judging.runner import Runner
from engine.judging.urls import redact_urls

if TYPE_CHECKING:
    from engine.judging.backends import Backend
    from engine.store.connection import Store

_UNSET = object()


def _csv(s: str | None) -> list[str] | None:
    return [x.strip() for x in s.split(",") if x.strip()] if s else None


def parse_variants(text: str | None) -> list[int] | None:
    """``--variants 0,2`` as numbers (``None`` when not given); anything else is one sentence."""
    if not text:
        return None
    try:
        return [int(v) for v in _csv(text) or []]
    except ValueError:
        raise LensError(
            f"--variants should be comma-separated whole numbers such as 0,1, not {text!r}."
        ) from None


def _or_none(kind):
    """An argparse type: a number, or ``none`` for 'do not send this parameter'."""

    def parse(text: str):
        if text.strip().lower() == "none":
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number or 'none', not {text!r}") from None

    return parse


def add_backend_args(
    p: argparse.ArgumentParser, *, seed_flag: bool = True, backends: tuple[str, ...] = BACKENDS
) -> None:
    """Backend, decoding, concurrency, retry and price options shared by judge, generate and perturb.

    ``seed_flag``: also accept ``--seed`` for the decoding seed (judge uses ``--seed`` for its
    schedule, so there it is ``--decoding-seed`` only). ``backends``: the --backend choices (judge adds
    ``replay``).
    """
    g = p.add_argument_group("backend")
    g.add_argument("--backend", choices=backends, default="openai")
    g.add_argument("--model", help="model name on the server, or a local model (folder, HF id, smollm2)")
    g.add_argument(
        "--base-url", help="OpenAI-compatible base URL(s), comma-separated (default $OPENAI_BASE_URL)"
    )
    g.add_argument("--api-key", help="API key (default $OPENAI_API_KEY)")
    g.add_argument(
        "--timeout", type=float, default=120.0, help="seconds a whole request may take (above 0; default 120)"
    )
    g.add_argument(
        "--force",
        action="store_true",
        help="start even if the store records a live run making the same calls (e.g. its process id was "
        "reused); shared calls are still paid once",
    )
    g.add_argument("--gguf-file", help="local backend: GGUF file inside --model's folder")
    g.add_argument("--device", help="local backend: cpu or cuda (default: cuda when present)")
    g.add_argument(
        "--dtype",
        choices=("auto", "float32", "bfloat16", "float16"),
        default="auto",
        help="local backend: weights dtype (auto: bfloat16 on cuda, float32 on cpu)",
    )
    g.add_argument(
        "--batch-size", type=int, help="local backend: requests handed over and stored together (default 32)"
    )
    g.add_argument(
        "--token-budget",
        type=int,
        help="local backend: padded tokens per forward pass (default 1024 on cpu, 131072 on cuda)",
    )
    g.add_argument("--threads", type=int, help="local backend: CPU threads for torch (default: torch's)")
    g.add_argument("--concurrency", type=int, default=4, help="API requests in flight")
    g.add_argument("--max-retries", type=int, default=5)
    g.add_argument(
        "--backoff", type=float, default=1.0, help="first retry delay in seconds (doubles, with jitter)"
    )
    g.add_argument(
        "--price-in", type=float, default=0.0, help="USD per 1M prompt tokens (for the cost estimate)"
    )
    g.add_argument("--price-out", type=float, default=0.0, help="USD per 1M completion tokens")
    g.add_argument("--templates", help="folder with your own templates (<id>.v<version>.toml)")
    g.add_argument("--no-progress", action="store_true",
                   help="no progress bar on stderr, and no progress bars, log records or warnings from the "
                   "local backend's libraries (transformers, torch)")
    d = p.add_argument_group("decoding (each is part of the call cache key; 'none' = not sent)")
    d.add_argument("--max-tokens", type=_or_none(int), default=_UNSET, help="max new tokens")
    d.add_argument(
        "--max-tokens-field",
        choices=MAX_TOKENS_FIELDS,
        default=_UNSET,
        help="request field for the token limit (OpenAI reasoning models need max_completion_tokens)",
    )
    d.add_argument("--temperature", type=_or_none(float), default=_UNSET, help="default 0 (greedy)")
    d.add_argument("--top-p", type=_or_none(float), default=_UNSET, help="default none (not sent)")
    flags = ["--decoding-seed", "--seed"] if seed_flag else ["--decoding-seed"]
    d.add_argument(
        *flags,
        dest="decoding_seed",
        type=_or_none(int),
        default=_UNSET,
        help="the model's sampling seed, sent with every request (default 0)"
        + ("; --seed is the same option here" if seed_flag else ""),
    )


def decoding_overrides(args: argparse.Namespace, *, token_limit: bool = True) -> dict:
    """The decoding fields given on the command line (``token_limit``: include --max-tokens)."""
    pairs = {
        "temperature": args.temperature,
        "top_p": args.top_p,
        "seed": args.decoding_seed,
        "max_tokens_field": args.max_tokens_field,
    }
    if token_limit:
        pairs["max_tokens"] = args.max_tokens
    out = {k: v for k, v in pairs.items() if v is not _UNSET}
    if out.get("max_tokens", 1) is not None and out.get("max_tokens", 1) < 1:
        raise LensError("--max-tokens must be at least 1 (or none).")
    return out


def with_overrides(dec: Decoding, over: dict) -> Decoding:
    """The decoding with the options the user set on the command line replacing its defaults."""
    return dataclasses.replace(dec, **over)


def turns_up_to(args: argparse.Namespace) -> tuple[int, ...]:
    """The turns ``--inputs`` loads for ``--turn T``: 1 … T (a later turn is judged with its conversation);
    refuses a turn below 1."""
    if args.turn < 1:
        raise LensError(f"--turn must be 1 or more, not {args.turn}.")
    return tuple(range(1, args.turn + 1))


def finish_code(stats, verdicts: int = 0, invalid: int = 0, replayed: bool = False) -> int:
    """The exit code of a judge/generate/perturb run: 0, or 1 after saying on stderr why calls failed. A
    judge run's ``verdicts`` of which ``invalid`` held no verdict the protocol reads get a sentence of their
    own (``invalid_sentence``), and exit 1 when none was readable: a run of unreadable replies is not done."""
    code = 0
    if (sentence := invalid_sentence(verdicts, invalid, replayed)) is not None:
        print(f"warning: {sentence}", file=sys.stderr)
        code = int(invalid == verdicts)
    sentence = stats.failure_sentence()
    if sentence is None:
        return code
    print(f"warning: {sentence}", file=sys.stderr)
    return 1


def invalid_sentence(verdicts: int, invalid: int, replayed: bool = False) -> str | None:
    """One sentence for a judge run whose stored verdicts include ``invalid`` ones (the reply held no verdict
    its protocol reads: no [[A]], [[B]] or [[TIE]] tag, no score, no letter; ``replayed``: the replayed
    source verdict was invalid), else None. Said because the run's table alone showed them, and their
    replies are cached: running again does not ask again."""
    if invalid <= 0:
        return None
    share = "all" if invalid == verdicts else f"{invalid:,} of {verdicts:,}"
    if replayed:
        return (f"{share} verdicts of this run are invalid: the source's verdicts they replay are; they are "
                "stored as invalid and left out of every ranking.")
    return (f"{share} verdicts of this run are invalid: the judge's reply held no verdict its protocol reads "
            "(the template's tags); they are stored as invalid with the reply's text, left out of every "
            "ranking, and the replies are cached, so running the same command again does not ask again "
            "(another template or decoding option does).")


def run_params(args: argparse.Namespace) -> dict:
    """The run's arguments as recorded in judge_runs.params (no API key, a key inside --base-url
    hidden, unset options omitted)."""
    out = {k: v for k, v in vars(args).items() if k not in ("func", "api_key") and v is not _UNSET}
    if out.get("base_url"):
        out["base_url"] = redact_urls(str(out["base_url"]))
    return out


def check_timeout(args: argparse.Namespace) -> None:
    """``--timeout`` must be a positive number of seconds (0 would fail every call as unreachable)."""
    t = getattr(args, "timeout", 120.0)
    if not t > 0 or t == float("inf"):
        raise LensError(f"--timeout must be a number of seconds above 0, not {t:g}.")


def runner_from_args(args: argparse.Namespace, store: Store, backend: Backend | None = None) -> Runner:
    """A Runner on the backend, model, retries and concurrency the options name (timeout checked first);
    ``backend``: this one instead of the one the options name (a replay's)."""
    check_timeout(args)
    backend = backend or make_backend(
        args.backend,
        args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        timeout_s=args.timeout,
        gguf_file=args.gguf_file,
        device=args.device,
        batch_size=args.batch_size,
        threads=args.threads,
        dtype=args.dtype,
        token_budget=args.token_budget,
        quiet=args.no_progress,
    )
    return Runner(
        store,
        backend,
        concurrency=args.concurrency,
        max_retries=args.max_retries,
        backoff_s=args.backoff,
        price_per_mtok=(args.price_in, args.price_out),
        progress=not args.no_progress,
        call_shards=getattr(args, "call_shards", False),
        keep_shards=getattr(args, "keep_shards", False),
    )


def _export(args: argparse.Namespace, store: Store, runner: Runner, cfg: ProtocolConfig,
            models: list[str] | None) -> int:
    """``judge --export-requests FILE``: the run's uncached calls written to FILE, nothing sent or
    stored (engine.judging.export); prints the count of requests and of pairs cached or waiting."""
    from pathlib import Path

    from engine.judging.export import export_requests
    from engine.judging.pipeline import build_jobs
    from engine.judging.protocols import make_unit

    if args.schedule == "swim" or args.add_model:
        raise LensError("--export-requests works with the round-robin schedule: SWIM picks each next "
                        "opponent from the verdicts so far.")
    if args.inputs:
        load_inputs(store, args.dataset, args.inputs, models=models, categories=_csv(args.categories),
                    limit_per_category=args.limit, turns=turns_up_to(args))
    variants = parse_variants(args.variants)
    require_prompts(store, args.dataset, "judge", variants=variants)
    jobs = build_jobs(store, args.dataset, models=models, variants=variants, turn=args.turn)
    if not jobs:
        raise LensError(f"Dataset {args.dataset!r} has no prompt with answers from two of the chosen models.")
    path = Path(args.export_requests)
    rep = export_requests(runner, (make_unit(args.protocol, j, cfg) for j in jobs), path)
    row = {"file": str(path), "requests": rep.requests, "pairs_cached": rep.units_cached,
           "pairs_waiting": rep.units_waiting}
    write_frame(pd.DataFrame([row]), args.format)
    return 0


def register(sub) -> None:
    """Add ``judge`` (an LLM judge over a dataset's answers) and its backend and protocol options to the
    parser."""
    p = sub.add_parser(
        "judge",
        help="run an LLM judge (round robin or SWIM) into a verdict dataset",
        description="Judge pairs of a dataset's answers with an LLM (round robin or SWIM) and store the "
        "verdicts; every model call is cached, so a rerun pays only for calls not made yet.",
    )
    p.add_argument(
        "--dataset", required=True, help="dataset to read prompts/answers from and write verdicts to"
    )
    p.add_argument("--inputs", help="first load questions and answers from this folder (e.g. mt_bench): "
                   "their turns 1 … --turn; a dataset it creates keeps the shipped folder's model map")
    p.add_argument("--models", help="comma-separated models to compare (default: all with answers)")
    p.add_argument("--categories", help="comma-separated categories to load with --inputs")
    p.add_argument("--limit", type=int, help="with --inputs: at most this many prompts per category")
    p.add_argument("--turn", type=int, default=1,
                   help="the conversation turn to judge (default 1; with --inputs turns 1 … T are loaded): a "
                   "later turn is judged on its conversation, every earlier question and each model's own "
                   "earlier answers shown as context before the turn's question and answers")
    p.add_argument("--variants", help="comma-separated variant numbers to judge (default: all)")
    p.add_argument("--schedule", choices=("round-robin", "swim"), help="default round-robin")
    p.add_argument(
        "--add-model",
        help="SWIM: add this model to the judge's stored leaderboard (ceil(log2 M) opponents per prompt)",
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="schedule seed: SWIM's join order and first opponents, and the single protocol's A/B order "
        "coin (not the model's sampling seed: that is --decoding-seed)",
    )
    p.add_argument("--protocol", choices=PROTOCOLS, default="swapped")
    p.add_argument("--template", default="pairwise", help="pairwise template id[@version]")
    p.add_argument("--score-template", default="score", help="hybrid's 1-5 score template id[@version]")
    p.add_argument("--soft-template", default="soft", help="soft protocol's template id[@version]")
    p.add_argument(
        "--max-answer-chars",
        type=int,
        default=MAX_ANSWER_CHARS,
        help=f"cut longer answers to this many characters before judging (default {MAX_ANSWER_CHARS}; 0: "
             "never)",
    )
    p.add_argument(
        "--judge-name",
        help="judge column value (default: <model>:<protocol>, plus :<template>@<version> unless shipped v1)",
    )
    p.add_argument(
        "--export-requests",
        metavar="FILE",
        help="send nothing: write the calls this run would make and the cache does not hold to FILE "
             "(.parquet or .jsonl; one row per call: call_key, the request columns calls --import reads "
             "back, and body, the chat-completions request) for another engine to answer",
    )
    add_backend_args(p, seed_flag=False, backends=(*BACKENDS, "replay"))
    add_active_args(p)
    add_call_shards_arg(p)
    add_format(p)
    p.set_defaults(func=run)


def _config(args: argparse.Namespace) -> ProtocolConfig:
    if args.max_answer_chars < 0:
        raise LensError("--max-answer-chars cannot be negative.")
    cfg = ProtocolConfig.default(
        args.templates,
        pairwise=args.template,
        score=args.score_template,
        soft=args.soft_template,
        seed=args.seed,
        max_answer_chars=args.max_answer_chars or None,
    )
    over = decoding_overrides(args)
    rest = decoding_overrides(args, token_limit=False)  # the soft prompt keeps its 3 tokens
    return dataclasses.replace(
        cfg,
        decoding=with_overrides(cfg.decoding, over),
        score_decoding=with_overrides(cfg.score_decoding, over),
        soft_decoding=with_overrides(cfg.soft_decoding, rest),
    )


def run(args: argparse.Namespace) -> int:
    """Judge the selected pairs as one recorded run and print its report; exit status (1 when calls
    failed or no verdict of the run is valid: ``finish_code``)."""
    check_shard_args(args)
    if wants_active(args):
        if args.export_requests:
            raise LensError("--export-requests works with the round-robin schedule: active judging picks "
                            "each next batch from the verdicts so far.")
        return run_active(args)
    schedule = args.schedule or ("swim" if args.add_model else "round-robin")
    if args.add_model and schedule != "swim":
        raise LensError("--add-model works with --schedule swim only.")
    store = store_from_args(args, ensure_default=False, keep_open=False)  # file free between writes
    try:
        models = _csv(args.models)
        cfg = _config(args)  # template and option mistakes are refused before anything is written
        runner = runner_from_args(args, store)
        if args.export_requests:
            return _export(args, store, runner, cfg, models)
        # a live run making the same calls is refused here, before --inputs writes anything
        ensure_no_live_run(
            store, "judge", args.dataset, runner.backend.name, runner.backend.model, force=args.force
        )
        if args.inputs:
            load_inputs(
                store,
                args.dataset,
                args.inputs,
                models=models + [args.add_model] if models and args.add_model else models,
                categories=_csv(args.categories),
                limit_per_category=args.limit,
                turns=turns_up_to(args),
            )
        variants = parse_variants(args.variants)
        require_prompts(store, args.dataset, "judge", variants=variants)  # before a run is recorded
        rep = judge_run(
            store,
            args.dataset,
            runner,
            protocol=args.protocol,
            cfg=cfg,
            judge=args.judge_name,
            models=models,
            variants=variants,
            schedule=schedule,
            seed=args.seed,
            add_model=args.add_model,
            params=run_params(args),
            force=args.force,
            turn=args.turn,
            **shard_run_options(args),
        )
        s = rep.stats
        row = {
            "run_id": rep.run_id,
            "dataset": rep.dataset,
            "judge": rep.judge,
            "status": rep.status,
            "pairs": rep.pairs,
            "verdicts": rep.verdicts,
            "invalid": rep.invalid,
            "truncated": rep.truncated,
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
        return finish_code(s, rep.verdicts, rep.invalid)
    finally:
        store.close()
