"""``judge --select STRATEGY --budget N [--batch B] [--seed S] [--stop-when separated[:K]]``: active
judging (``engine.judging.active``), with a model judge or ``--backend replay --from-dataset SRC
[--from-judge J]``.

Example (the exact form to script a replay):
  python -m engine judge --dataset OUT --backend replay --from-dataset SRC --select uncertainty \\
      --budget 2000 --seed 0
Every mistake in these options is one sentence (exit 2) before anything is stored.
"""

from __future__ import annotations

import argparse
import sys

STRATEGY_NAMES = ("random", "round-robin", "swim", "uncertainty", "cycles")
"""The --select choices (``engine.judging.active.select.STRATEGIES``; kept here so the parser does not
import the engine's active modules at start-up; tests/test_judging_active_cli.py checks they agree)."""


def add_active_args(p: argparse.ArgumentParser) -> None:
    """The active-judging and replay options of ``judge``."""
    g = p.add_argument_group(
        "active judging (choose the calls, refit between batches, stop when settled)"
    )
    g.add_argument("--select", choices=STRATEGY_NAMES,
                   help="choose the calls with this strategy, in batches, until --budget calls are spent")
    g.add_argument("--budget", type=int, help="with --select: judge calls to spend (at least 1)")
    g.add_argument(
        "--batch", type=int,
        help="with --select: calls per batch between refits (default: the budget / 20, rounded up)",
    )
    g.add_argument("--stop-when", metavar="separated[:K]",
                   help="with --select: stop early once every adjacent pair of the top K models "
                   "(default all) has separated 95%% intervals, K-th and (K+1)-th included")
    g.add_argument("--from-dataset", metavar="SRC",
                   help="--backend replay: answer every call with this dataset's stored verdict")
    g.add_argument("--from-judge", metavar="J", help="--backend replay: only this judge's verdicts of SRC")


def wants_active(args: argparse.Namespace) -> bool:
    """Whether the command line asks for active judging or a replay (else the plain judge run)."""
    return args.backend == "replay" or any(
        getattr(args, k) is not None
        for k in ("select", "budget", "batch", "stop_when", "from_dataset", "from_judge")
    )


def _refuse_mixes(args: argparse.Namespace) -> None:
    from engine.errors import LensError

    if args.schedule or args.add_model:
        raise LensError("--select chooses the calls itself; leave out --schedule and --add-model.")
    if args.backend != "replay":
        if args.from_dataset or args.from_judge:
            raise LensError("--from-dataset and --from-judge go with --backend replay.")
        return
    if not args.from_dataset:
        raise LensError(
            "--backend replay needs --from-dataset SRC, the dataset whose verdicts answer the calls."
        )
    if args.turn != 1:
        raise LensError("--turn chooses the turn a model judge judges; a replay answers with the source's "
                        "stored verdicts, of every turn.")
    if args.from_dataset == args.dataset:
        raise LensError("--from-dataset must name another dataset than --dataset: the replay writes the "
                        "verdicts it reveals into --dataset.")
    if args.inputs:
        raise LensError("A replay reads no --inputs: its calls are answered from --from-dataset.")
    if args.judge_name:
        raise LensError(
            "--judge-name does not apply to a replay: its verdicts keep the source's judge names."
        )


def run_active(args: argparse.Namespace) -> int:
    """Run the active judge or replay and print its report; exit status (1 when calls failed or no verdict of
    the run is valid: ``engine.cli.judge.finish_code``)."""
    import pandas as pd

    from engine.cli._common import store_from_args, write_frame
    from engine.cli.judge import (
        _config,
        _csv,
        finish_code,
        parse_variants,
        run_params,
        runner_from_args,
        turns_up_to,
    )
    from engine.errors import LensError
    from engine.judging.active.jobs import job_source
    from engine.judging.active.loop import ItemSource, active_run, make_plan
    from engine.judging.active.replay import ReplayBackend, load_replay_source
    from engine.judging.persist import ensure_no_live_run, require_prompts
    from engine.judging.pipeline import build_jobs, judge_source, load_inputs
    from engine.judging.protocols import default_judge_name

    plan = make_plan(args.select, args.budget, args.batch, args.seed, args.stop_when)
    _refuse_mixes(args)
    # a model judge lets go of the file between writes (the app reads the growing dataset); a replay
    # makes no slow calls, and keeps it open (one open a transaction costs more than its calls)
    store = store_from_args(args, ensure_default=False, keep_open=args.backend == "replay")
    try:
        models = _csv(args.models)
        source: ItemSource
        if args.backend == "replay":
            source = load_replay_source(store, args.from_dataset, judge=args.from_judge, models=models)
            runner = runner_from_args(args, store, backend=ReplayBackend(source))
            ensure_no_live_run(store, "judge", args.dataset, "replay", source.dataset, force=args.force)
            protocol, label = None, f"replay:{source.dataset}"
        else:
            cfg = _config(args)  # template and option mistakes are refused before anything is written
            runner = runner_from_args(args, store)
            ensure_no_live_run(
                store, "judge", args.dataset, runner.backend.name, runner.backend.model, force=args.force
            )
            if args.inputs:
                load_inputs(store, args.dataset, args.inputs, models=models,
                            categories=_csv(args.categories), limit_per_category=args.limit,
                            turns=turns_up_to(args))
            variants = parse_variants(args.variants)
            require_prompts(store, args.dataset, "judge", variants=variants)
            jobs = build_jobs(store, args.dataset, models=models, variants=variants, turn=args.turn)
            if not jobs:
                raise LensError(
                    f"Dataset {args.dataset!r} has no prompt with answers from two of the chosen models."
                )
            judge = args.judge_name or default_judge_name(runner.backend.model, args.protocol, cfg)
            source = job_source(jobs, args.protocol, cfg, judge)
            protocol, label = args.protocol, judge_source(runner, args.protocol, cfg)
        rep = active_run(store, args.dataset, runner, source, plan, protocol=protocol, source_label=label,
                         params=run_params(args), force=args.force)
        s = rep.stats
        row = {
            "run_id": rep.run_id, "dataset": rep.dataset, "judges": ",".join(source.pool.judges),
            "strategy": plan.strategy, "status": rep.status, "stop_reason": rep.stop_reason,
            "budget": plan.budget, "calls": rep.calls, "batches": rep.batches, "items": rep.items,
            "verdicts": rep.verdicts, "invalid": rep.invalid,
            "separated_pairs": rep.summary["separated_pairs"],
            "adjacent_pairs": rep.summary["adjacent_pairs"],
            "mean_ci_width": round(rep.summary["mean_ci_width"], 6),
            "calls_made": s.made, "calls_cached": s.cached, "calls_failed": s.failed,
            "est_cost_usd": round(s.cost_usd, 6),
        }  # fmt: skip
        write_frame(pd.DataFrame([row]), args.format)
        if args.format == "table":
            fit = rep.fit
            order = fit.ranking()
            write_frame(pd.DataFrame({
                "model": [fit.models[k] for k in order], "bt_score": fit.scores[order].round(4),
                "ci_low": fit.lo[order].round(4), "ci_high": fit.hi[order].round(4),
            }), "table")  # fmt: skip
        print(rep.sentence(), file=sys.stderr)
        return finish_code(s, rep.verdicts, rep.invalid, replayed=args.backend == "replay")
    finally:
        store.close()
