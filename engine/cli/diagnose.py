"""``diagnose``: judge diagnostics tables (PNT, SNTD, ELSPR entropy, cycles, position bias,
agreement, structure) for a dataset; the computation is engine.diagnostics.diagnose. ``--table
predicted`` lists the win probabilities a ranker's fit predicts beside the observed win fractions
(engine.views.matrix_view.predicted_pairs, the Cycles page's matrices)."""

from __future__ import annotations

import argparse
import sys

from engine.cli._common import add_format, check_judges, store_from_args, write_frame
from engine.diagnostics import TABLES, diagnose, diagnose_cached
from engine.diagnostics.cycle_stats import EXACT_MAX, FALLBACK_BOUND
from engine.diagnostics.nontransitivity import read_win_rates
from engine.errors import LensError
from engine.graphs.stack import COMBINE_POLICIES, DEFAULT_POLICY
from engine.store.schema import DEFAULT_DATASET

MAJORITY = "majority"
"""The table ``diagnose`` hands to engine/cli/_majority_table.py (verdicts or pair counts; never cached)."""
MAJORITY_TABLE = (
    "the model-level majority tournament over all votes (or battles of pair counts): per model its "
    "majority wins, losses, ties and Condorcet 3-cycles; is the aggregate itself transitive"
)
PREDICTED = "predicted"
"""The table ``diagnose`` hands to engine/cli/_predicted_table.py (no judge diagnostic; never cached)."""
PREDICTED_TABLE = (
    "one row per ordered pair of models: the win probability the ranker's fit predicts (--ranker, default "
    "bt: sigma(theta_a - theta_b)) beside the observed win fraction and the battles"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``diagnose`` (judge diagnostics tables and their options) to the parser."""
    p = subparsers.add_parser(
        "diagnose",
        help="judge diagnostics: non-transitivity, entropy, cycles, position bias, agreement",
        description="One named diagnostics table for a dataset. Tables: "
        + "; ".join(f"{k}: {v}" for k, v in
                    {**TABLES, PREDICTED: PREDICTED_TABLE, MAJORITY: MAJORITY_TABLE}.items()) + ".",
    )
    p.add_argument(
        "--dataset",
        default=DEFAULT_DATASET,
        help=f"a stored dataset (default {DEFAULT_DATASET}, the shipped one; see python -m engine datasets)",
    )
    p.add_argument("--judge", action="append", help="only this judge (repeat for several)")
    p.add_argument("--table", choices=(*TABLES, PREDICTED, MAJORITY), default="overview")
    p.add_argument("--ranker", default=None,
                   help="predicted table: whose fit predicts (default bt; davidson and elo predict too; the "
                   "rankers are listed by python -m engine leaderboard --help)")
    p.add_argument("--by", help="comma-separated grouping columns (e.g. judge,category or judge,lo,hi)")
    p.add_argument("--policy", choices=tuple(COMBINE_POLICIES), default=DEFAULT_POLICY,
                   help="how several verdicts on one pair in one graph combine")
    p.add_argument("--source", choices=("hard", "soft"), default="hard",
                   help="PNT from verdicts (hard) or from judge probabilities through the tie band (soft)")
    p.add_argument("--tie-band", nargs=2, type=float, metavar=("LOW", "HIGH"), default=(0.475, 0.525))
    p.add_argument("--grid", type=int, default=35, help="heatmap cells per axis")
    p.add_argument("--sigma", type=float, default=1.0, help="heatmap Gaussian smoothing, in cells (0: none)")
    p.add_argument("--win-rates", metavar="PATH",
                   help="heatmap: a CSV with columns model,win_rate (e.g. AlpacaEval's) for the gap axes; "
                   "default: each judge's own win rates")
    p.add_argument("--length-bound", type=int, default=None,
                   help="longest cycle counted (default: every length, up to the graph's number of models, "
                   f"for graphs of at most {EXACT_MAX} models; {FALLBACK_BOUND} for larger ones)")
    p.add_argument("--edges", choices=("bad", "strict"), default="bad",
                   help="cycles through at least one strict edge (bad) or of strict wins only")
    p.add_argument("--r2", choices=("cdf", "pmf"), default="cdf",
                   help="cycle-fit: R² of each fit against the empirical CDF (default) or PMF; paper 003's "
                   "defaults are --edges strict --r2 pmf")
    p.add_argument("--max-permutations", type=int, default=5040, help="stress test: orderings per graph")
    p.add_argument("--seed", type=int, default=0, help="stress test: seed for sampled orderings")
    p.add_argument("--reference", help="agreement / overview / judges: compare every judge with this one "
                   "(overview default: human; judges default: human when the dataset has it)")
    p.add_argument("--by-category", action="store_true", help="agreement per category")
    p.add_argument(
        "--sntd",
        choices=("averaged", "per-order"),
        default="averaged",
        help="sntd table: one divergence of the order-averaged probabilities (default, as the app "
        "shows) or paper 001's eq. 3 literally, the divergence averaged over the presentation orders",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="recompute instead of reading the store's result cache"
    )
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compute (or serve from cache) the asked diagnostics table and print it; exit status."""
    if args.length_bound is not None and args.length_bound < 3:
        raise LensError(f"--length-bound must be at least 3; got {args.length_bound}.")
    if args.max_permutations < 1:
        raise LensError(f"--max-permutations must be at least 1; got {args.max_permutations}.")
    if args.table == PREDICTED:
        # imported by name, not by an import statement: the diagnose cache's code digest
        # (engine.experiments.protocol_inputs.code_files) follows import statements to every file that
        # decides a cached table, and the predicted table is never cached, so its rankers stay out of it
        import importlib

        return importlib.import_module("engine.cli._predicted_table").run(args)
    if args.table == MAJORITY:  # issue 25: pair counts too; by name, as the predicted table (never cached)
        import importlib

        return importlib.import_module("engine.cli._majority_table").run(args)
    if args.ranker is not None:
        raise LensError("--ranker applies to the predicted table only (--table predicted).")
    params = {
        "policy": args.policy, "source": args.source, "tie_band": tuple(args.tie_band), "grid": args.grid,
        "sigma": args.sigma, "length_bound": args.length_bound, "edges": args.edges,
        "max_permutations": args.max_permutations, "seed": args.seed, "by_category": args.by_category,
    }
    if args.by:
        params["by"] = tuple(c.strip() for c in args.by.split(",") if c.strip())
    if args.win_rates is not None:
        if args.table != "heatmap":
            raise LensError("--win-rates applies to the heatmap table only (--table heatmap).")
        params["win_rates"] = read_win_rates_file(args.win_rates).to_dict()
    if args.r2 != "cdf":
        if args.table != "cycle-fit":
            raise LensError("--r2 applies to the cycle-fit table only (--table cycle-fit).")
        params["r2_on"] = args.r2
    if args.sntd != "averaged":
        if args.table != "sntd":
            raise LensError("--sntd applies to the sntd table only (--table sntd).")
        params["sntd_variant"] = args.sntd
    if args.reference is not None or args.table == "overview":
        params["reference"] = args.reference if args.reference is not None else "human"
    if args.table == "judges" and args.reference is None:
        params["reference"] = "default"  # the judge report: human when the dataset has it, else none
    named = args.judge or []
    twice = sorted({j for j in named if named.count(j) > 1})
    if twice:
        raise LensError(f"--judge names {', '.join(map(repr, twice))} twice; name each judge once.")
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        check_judges(store, args.dataset, args.judge)
        if args.reference is not None:
            check_judges(store, args.dataset, args.reference, "--reference")
        judge = args.judge[0] if args.judge and len(args.judge) == 1 else args.judge
        if args.no_cache:
            table = diagnose(store, args.dataset, judge=judge, table=args.table, **params)
        else:
            table, _hit = diagnose_cached(store, args.dataset, judge=judge, table=args.table, **params)
    finally:
        store.close()
    for note in table.attrs.get("notes") or ():
        print(f"note: {note}", file=sys.stderr)
    write_frame(table, args.format)
    return 0


def read_win_rates_file(path: str):
    """The ``model,win_rate`` CSV named by --win-rates, checked (engine.diagnostics.nontransitivity)."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise LensError(f"The win-rate file {path} does not exist.") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise LensError(f"The win-rate file {path} is not a readable CSV ({type(exc).__name__}).") from None
    frame = frame.replace("", None)
    return read_win_rates(frame, source=f"The win-rate file {path}")
