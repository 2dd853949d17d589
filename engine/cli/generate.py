"""``python -m engine generate``: a target model answers a dataset's prompts (all or some variants)."""

from __future__ import annotations

import argparse

import pandas as pd

from engine.cli._common import add_format, store_from_args, write_frame
from engine.cli.judge import (
    add_backend_args,
    decoding_overrides,
    finish_code,
    parse_variants,
    run_params,
    runner_from_args,
    with_overrides,
)
from engine.judging.generate import ANSWER_DECODING, generate_answers
from engine.judging.persist import recorded_run, require_prompts, run_status
from engine.judging.templates import get_template, parse_template_ref


def register(sub) -> None:
    """Add ``generate`` (a target model answers a dataset's prompts) to the parser."""
    p = sub.add_parser(
        "generate",
        help="generate target-model answers for a dataset's prompts",
        description="Have a model answer a dataset's prompts (all or some variants) and store the answers "
        "under a model name, ready to judge.",
    )
    p.add_argument("--dataset", required=True)
    p.add_argument("--as-model", help="model name to store the answers under (default: the backend's model)")
    p.add_argument("--variants", help="comma-separated variant numbers (default: all)")
    p.add_argument("--template", default="answer", help="answer template id[@version]")
    add_backend_args(p)
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Generate and store the missing answers as one recorded run; exit status (1 when calls failed)."""
    store = store_from_args(args, ensure_default=False, keep_open=False)  # file free between writes
    try:
        tid, ver = parse_template_ref(args.template)
        template = get_template(tid, ver, kind="answer", user_dir=args.templates)
        variants = parse_variants(args.variants)
        require_prompts(store, args.dataset, "answer", variants=variants)  # before a run is recorded
        runner = runner_from_args(args, store)
        with recorded_run(
            store, "generate", args.dataset, runner, run_params(args), force=args.force
        ) as run_id:
            out = generate_answers(
                store,
                args.dataset,
                runner,
                template,
                model_name=args.as_model,
                variants=variants,
                decoding=with_overrides(ANSWER_DECODING, decoding_overrides(args)),
            )
        s = runner.stats
        write_frame(
            pd.DataFrame(
                [
                    {
                        "run_id": run_id,
                        "status": run_status(s),
                        "answers": len(out),
                        "calls_made": s.made,
                        "calls_cached": s.cached,
                        "calls_failed": s.failed,
                        "prompt_tokens": s.prompt_tokens,
                        "completion_tokens": s.completion_tokens,
                        "est_cost_usd": round(s.cost_usd, 6),
                    }
                ]
            ),
            args.format,
        )
        return finish_code(s)
    finally:
        store.close()
