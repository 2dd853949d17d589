"""``python -m engine perturb``: k paraphrases per prompt, filtered by a strict equivalence check."""

from __future__ import annotations

import argparse

import pandas as pd

from ..errors import LensError
from ..judging.paraphrase import perturb
from ..judging.persist import finish_run, start_run
from ..judging.templates import get_template
from ._common import add_format, store_from_args, write_frame
from .judge import add_backend_args, runner_from_args


def register(sub) -> None:
    p = sub.add_parser("perturb", help="paraphrase a dataset's prompts into checked variants")
    p.add_argument("--dataset", required=True)
    p.add_argument("-k", "--k", type=int, default=3, help="rewrites asked per prompt")
    add_backend_args(p)
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.k < 1:
        raise LensError("-k must be at least 1.")
    store = store_from_args(args, ensure_default=False)
    try:
        gen = get_template("paraphrase", kind="paraphrase", user_dir=args.templates)
        chk = get_template("equivalence", kind="equivalence", user_dir=args.templates)
        runner = runner_from_args(args, store)
        run_id = start_run(
            store,
            "perturb",
            args.dataset,
            runner.backend.name,
            runner.backend.model,
            None,
            {k: v for k, v in vars(args).items() if k not in ("func", "api_key")},
        )
        runner.run_id = run_id
        status = "failed"
        try:
            rep = perturb(store, args.dataset, runner, args.k, gen, chk)
            status = "done"
        finally:
            finish_run(store, run_id, runner.stats, status)
        s = runner.stats
        write_frame(
            pd.DataFrame(
                [
                    {
                        "run_id": run_id,
                        "prompts": rep.prompts,
                        "candidates": rep.candidates,
                        "accepted": rep.accepted,
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
        return 0 if s.failed == 0 else 1
    finally:
        store.close()
