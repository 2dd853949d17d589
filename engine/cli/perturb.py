"""``python -m engine perturb``: k paraphrases per prompt, filtered by a strict equivalence check.

Reruns are additive: stored variants keep their numbers and texts (answers and verdicts refer to
them); accepted rewrites that are new get new variant numbers (engine/judging/paraphrase.py).
"""

from __future__ import annotations

import argparse

import pandas as pd

from engine.cli._common import add_format, store_from_args, write_frame
from engine.cli.judge import (
    add_backend_args,
    decoding_overrides,
    finish_code,
    run_params,
    runner_from_args,
    with_overrides,
)
from engine.errors import LensError
from engine.judging.paraphrase import CHECK_DECODING, PARAPHRASE_DECODING, perturb
from engine.judging.persist import recorded_run, require_prompts, run_status
from engine.judging.templates import get_template, parse_template_ref


def register(sub) -> None:
    """Add ``perturb`` (k checked paraphrases per prompt) to the parser."""
    p = sub.add_parser(
        "perturb",
        help="paraphrase a dataset's prompts into checked variants",
        description="Ask a model for k rewrites of each original prompt, keep those a strict equivalence "
        "check accepts, and store them as new prompt variants (existing variants never change).",
    )
    p.add_argument("--dataset", required=True)
    p.add_argument("-k", "--k", type=int, default=3, help="rewrites asked per prompt")
    p.add_argument("--paraphrase-template", default="paraphrase", help="generator template id[@version]")
    p.add_argument(
        "--equivalence-template", default="equivalence", help="equivalence-check template id[@version]"
    )
    add_backend_args(p)
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Paraphrase and check the dataset's prompts as one recorded run, storing new variants; exit status."""
    if args.k < 1:
        raise LensError("-k must be at least 1.")
    store = store_from_args(args, ensure_default=False, keep_open=False)  # file free between writes
    try:
        gen = get_template(
            *parse_template_ref(args.paraphrase_template), kind="paraphrase", user_dir=args.templates
        )
        chk = get_template(
            *parse_template_ref(args.equivalence_template), kind="equivalence", user_dir=args.templates
        )
        require_prompts(store, args.dataset, "paraphrase", variants=[0])  # before a run is recorded
        runner = runner_from_args(args, store)
        with recorded_run(
            store, "perturb", args.dataset, runner, run_params(args), force=args.force
        ) as run_id:
            rep = perturb(
                store,
                args.dataset,
                runner,
                args.k,
                gen,
                chk,
                decoding=with_overrides(PARAPHRASE_DECODING, decoding_overrides(args)),
                check_decoding=with_overrides(CHECK_DECODING, decoding_overrides(args, token_limit=False)),
            )
        s = runner.stats
        write_frame(
            pd.DataFrame(
                [
                    {
                        "run_id": run_id,
                        "status": run_status(s),
                        "prompts": rep.prompts,
                        "candidates": rep.candidates,
                        "accepted": rep.accepted,
                        "new_variants": rep.added,
                        "unparsable_generations": rep.unparsable_generations,
                        "unparsable_checks": rep.unparsable_checks,
                        "calls_made": s.made,
                        "calls_cached": s.cached,
                        "calls_failed": s.failed,
                    }
                ]
            ),
            args.format,
        )
        return finish_code(s)
    finally:
        store.close()
