"""`simulate recovery|mallows|synthetic`: the theory lab of paper 000 Section 5, and synthetic data."""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from engine.cli._common import add_format, no_subcommand, store_from_args, write_frame
from engine.errors import LensError


def register(subparsers) -> None:
    """Add ``simulate recovery|mallows|synthetic`` and their options to the parser."""
    p = subparsers.add_parser(
        "simulate", help="random tournament model (recovery vs t), Mallows sampler, synthetic datasets"
    )
    sub = p.add_subparsers(dest="simulation", metavar="SIMULATION", title="simulations")
    p.set_defaults(func=no_subcommand(sub, "simulate"))
    r = sub.add_parser(
        "recovery", help="P[majority graph = truth] against t, with the 2 and 4 log n thresholds"
    )
    r.add_argument("--n", type=int, default=30, help="number of models (default 30)")
    r.add_argument("--p", type=float, default=0.25,
                   help="noise: each true edge is kept with probability 1/2 + p, 0 < p < 1/2 (default 0.25)")
    r.add_argument("--t", default="3:63:4",
                   help="t values: 5,10,20 or start:stop[:step] (default 3:63:4, odd t only: with even t a "
                        "pair split t/2 : t/2 goes to the reversed edge, eq. 5)")
    r.add_argument("--reps", type=int, default=300, help="replicates per t and model (default 300)")
    r.add_argument("--seed", type=int, default=20260324, help="random seed (default 20260324)")
    r.add_argument("--model", choices=("both", "iid", "triangle_free"), default="both",
                   help="graph model: unconditioned (iid), triangle-free, or both (default both)")
    r.add_argument(
        "--no-limit",
        action="store_true",
        help=f"run even above the size limit (n² · reps · Σt > {CLI_MAX_WORK:.0e}, minutes of work)",
    )
    add_format(r, default="table")
    r.set_defaults(func=run_recovery)
    m = sub.add_parser(
        "mallows", help="inversion counts of the exact Mallows sampler against the q-factorial law"
    )
    m.add_argument("--n", type=int, default=6, help="permutation length (default 6)")
    m.add_argument("--q", type=float, default=0.5, help="Mallows dispersion q in [0, 1] (default 0.5)")
    m.add_argument("--size", type=int, default=20000, help="permutations sampled (default 20000)")
    m.add_argument("--seed", type=int, default=20260324, help="random seed (default 20260324)")
    add_format(m, default="table")
    m.set_defaults(func=run_mallows)
    s = sub.add_parser("synthetic", help="generate a synthetic dataset with a known truth and store it")
    s.add_argument("--name", required=True, help="name of the new dataset in the store")
    s.add_argument("--models", type=int, default=20, help="number of models (default 20)")
    s.add_argument("--categories", type=int, default=8, help="number of categories (default 8)")
    s.add_argument("--prompts", type=int, default=10, help="prompts per category (default 10)")
    s.add_argument("--paraphrases", type=int, default=4, help="paraphrased variants per prompt (default 4)")
    s.add_argument("--samples", type=int, default=4, help="sampling replicates per prompt (default 4)")
    s.add_argument("--bad-rate", type=float, default=0.4,
                   help="chance that a graph is confused: the judge half-follows a distractor, giving "
                        "cyclic triads and a shared bias (default 0.4)")
    s.add_argument("--seed", type=int, default=20260324, help="random seed (default 20260324)")
    s.add_argument(
        "--soft",
        action="store_true",
        help="also write judge probabilities prob_a (own random stream: the verdicts stay the same)",
    )
    s.add_argument(
        "--soft-noise", type=float, default=0.5, help="sd of the logit noise of prob_a (default 0.5)"
    )
    s.set_defaults(func=run_synthetic)


def _ts(text: str) -> list[int]:
    try:
        if ":" in text:
            a = [int(x) for x in text.split(":")]
            return list(range(a[0], a[1] + 1, a[2] if len(a) > 2 else 1))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise LensError(f"Cannot read the t values {text!r}; use 5,10,20 or 3:60:3.") from None


CLI_MAX_WORK = 5e9
"""Work units (n² · reps · Σt, engine.views.theory_view) ``simulate recovery`` runs without --no-limit: at the
20-40 ns per unit measured for the theory lab, about two to three minutes on a 2-core box."""


def recovery_work(n: int, ts: list[int], reps: int) -> float:
    """n² · reps · Σt, the unit of engine.views.theory_view.lab_work, over the t values given."""
    return float(n) * float(n) * float(reps) * float(sum(ts))


def check_recovery_size(n: int, ts: list[int], reps: int, cap: float | None = None) -> None:
    """Refuse a recovery run above ``cap`` work units (default ``CLI_MAX_WORK``), saying the largest --reps
    that fits."""
    cap = CLI_MAX_WORK if cap is None else cap
    if reps < 1:
        raise LensError(f"--reps must be at least 1; got {reps}.")
    if n < 1:
        raise LensError(f"--n must be at least 1; got {n}.")
    work = recovery_work(n, ts, reps)
    if work <= cap:
        return
    fit = int(cap // recovery_work(n, ts, 1))
    hint = f"use --reps {fit} or fewer" if fit >= 1 else "lower --n or the t values"
    raise LensError(f"This run is too large (n² · reps · Σt = {work:.3g}, the limit is {cap:.3g}): {hint}, "
                    "or give --no-limit to run it anyway.")


def run_recovery(args: argparse.Namespace) -> int:
    """Print the theory lab's recovery probability against the number of graphs t; exit status."""
    from engine.experiments.simulate import MODELS, recovery_curve

    models = MODELS if args.model == "both" else (args.model,)
    ts = _ts(args.t)
    if not args.no_limit:
        check_recovery_size(args.n, ts, args.reps)
    write_frame(recovery_curve(args.n, args.p, ts, args.reps, args.seed, models), args.format)
    return 0


def run_mallows(args: argparse.Namespace) -> int:
    """Draw Mallows permutations and print their inversion counts beside the exact law; exit status."""
    from engine.experiments.simulate import inversion_law, inversions, mallows_permutations

    if args.n < 1 or args.size < 1:
        raise LensError("The Mallows check needs n ≥ 1 and size ≥ 1.")
    law = inversion_law(args.n, args.q)
    inv = inversions(mallows_permutations(args.n, args.q, args.size, args.seed))
    emp = np.bincount(inv, minlength=law.size) / args.size
    write_frame(pd.DataFrame({"inversions": np.arange(law.size), "exact": law, "sampled": emp}), args.format)
    return 0


def run_synthetic(args: argparse.Namespace) -> int:
    """Generate a synthetic dataset with a known ground truth and store it; exit status."""
    from engine.ingest.synthetic import SyntheticParams, write_synthetic

    p = SyntheticParams(
        n_models=args.models,
        categories=args.categories,
        prompts=args.prompts,
        paraphrases=args.paraphrases,
        samples=args.samples,
        bad_rate=args.bad_rate,
        seed=args.seed,
        soft=args.soft,
        soft_noise=args.soft_noise,
    )
    store = store_from_args(args, ensure_default=False)  # writing a new dataset needs no shipped import
    res = write_synthetic(store, args.name, p)
    print(f"synthetic dataset {args.name!r} (version {res.revision}): {res.summary()}")
    return 0
