"""`experiment baselines|keep-k|mu`: paper 000's Table 2 protocols and sensitivity curves, per judge.

Results are cached in the store (``engine.experiments.results_cache``) under the dataset version, every
parameter, the judge, ``engine.experiments.protocol_inputs.input_fingerprint`` (reference snapshot, mapping
files, results format) and the hash of the engine code that computes them (added by the cache). The cache is
looked up before anything is loaded, so
a repeated request reads one row per judge and nothing else.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import pandas as pd

from engine.cli._common import (
    add_format,
    check_judges,
    dataset_judges,
    no_subcommand,
    rounded_for_table,
    store_from_args,
    write_frame,
)
from engine.cli.leaderboard import check_mu
from engine.errors import LensError
from engine.experiments.draws import DEFAULT_SEED
from engine.experiments.protocols import PROTOCOLS, ProtocolParams
from engine.graphs.truncation import POOLS
from engine.store.schema import DEFAULT_DATASET

if TYPE_CHECKING:
    from engine.store.connection import Store


def register(subparsers) -> None:
    """Add ``experiment baselines|keep-k|mu`` and their options to the parser."""
    p = subparsers.add_parser(
        "experiment", help="resampling protocols (Table 2) and keep-K / mu curves against a reference"
    )
    sub = p.add_subparsers(dest="experiment", metavar="EXPERIMENT", title="experiments")
    p.set_defaults(func=no_subcommand(sub, "experiment"))
    for name, helptext in (("baselines", "the six protocols of paper 000 Table 2, per category and macro"),
                           ("keep-k", "distance to the reference for every keep-K"),
                           ("mu", "distance to the reference along a log grid of mu at fixed K")):
        q = sub.add_parser(name, help=helptext)
        q.add_argument(
            "--dataset",
            default=DEFAULT_DATASET,
            help=f"a stored dataset (default {DEFAULT_DATASET}, the shipped one; see python -m engine "
                 "datasets)",
        )
        q.add_argument("--reference", required=True,
                       help="'arena' (shipped LMArena snapshot, per-category via data/mappings), 'truth' "
                            "(a synthetic dataset's ground truth), or a reference file (JSON or CSV)")
        q.add_argument("--overall", action="store_true", help="one overall reference for every category")
        q.add_argument("--judge", action="append", help="judge(s) to run (default: every judge)")
        q.add_argument("--resamples", type=int, default=100,
                       help="resamples per protocol / point, each a random draw of graphs (default 100)")
        q.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
        q.add_argument("--no-cache", action="store_true", help="recompute even when a cached result exists")
        if name == "baselines":
            q.add_argument("--protocols", default=",".join(PROTOCOLS))
            q.add_argument("--keep", type=int, default=25)
            q.add_argument("--draw", type=int, default=20)
            q.add_argument("--scorewin-draw", type=int, default=40)
            q.add_argument(
                "--scorewin-tie",
                type=float,
                default=1.0,
                help="credit of an exact majority (a bidirectional edge) in ScoreWin: 1 = out-degree "
                "of the majority graph with exact majorities both ways (paper 000, App. A.3), "
                "0.5 = classic Copeland",
            )
            q.add_argument("--random-draw", type=int, default=20)
            q.add_argument("--random-reps", type=int, default=10)
            q.add_argument("--random-pool", type=int, default=50,
                           help="graphs of a category Random draws its subsets from (paper 000: the 50-graph "
                                "category pool; a larger category gets a fresh random pool per resample)")
            q.add_argument("--single-draw", type=int, default=20)
            q.add_argument("--mu", type=float, default=1.0)
            q.add_argument(
                "--table", metavar="DISTANCE", help="print the Table-2 layout (×1000) for one distance"
            )
        else:
            if name == "keep-k":
                q.add_argument("--mu", type=float, default=1.0)
                q.add_argument("--ks", help="K values, e.g. 1,5,10 or 1:50 (default: 1 … pool size)")
            else:
                q.add_argument("--k", type=int, default=25)
                q.add_argument(
                    "--mus", help="comma-separated mu values (default: 17 points from 0.01 to 100)"
                )
            q.add_argument("--pooled", action="store_true",
                           help="one global pool instead of K per category (uses one overall reference)")
            q.add_argument(
                "--pool",
                choices=POOLS,
                default="perturbed",
                help="graphs to truncate: originals+paraphrases, originals+sampling replicates, or all",
            )
            q.add_argument(
                "--draw-fraction",
                type=float,
                default=0.8,
                help="share of the kept graphs each resample draws without replacement (0.8: 25 → 20)",
            )
        add_format(q, default="table")
        q.set_defaults(func=run)


def _parse_ints(text: str) -> list[int]:
    try:
        if ":" in text:
            parts = [int(x) for x in text.split(":")]
            lo, hi = parts[0], parts[1]
            step = parts[2] if len(parts) > 2 else 1
            return list(range(lo, hi + 1, step))
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise LensError(f"Cannot read the list of whole numbers {text!r}; use 1,5,10 or 1:50.") from None


def _parse_floats(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise LensError(f"Cannot read the list of numbers {text!r}; use e.g. 0.1,1,10.") from None


def resolve_reference(store: Store, dataset: str, spec: str, categories: list[str], overall: bool):
    """A rating Series, or a mapping category → Series (per-category arena references)."""
    from engine.experiments.protocol_inputs import reference_ratings

    return reference_ratings(store, dataset, spec, categories, overall)


def run(args: argparse.Namespace) -> int:
    """Run the asked protocols or sensitivity curve per judge against the reference and print it; exit
    status."""
    from engine.experiments import results_cache
    from engine.experiments.protocol_inputs import input_fingerprint
    from engine.graphs.stack import build_stack

    _plan(args)  # refuses bad options (e.g. a negative --mu) before the store is opened
    store = store_from_args(args, ensure_default=False)
    if not store.has_dataset(args.dataset):  # maybe the shipped default, not imported yet
        store.close()
        store = store_from_args(args)
    if not store.has_dataset(args.dataset):
        raise LensError(f"There is no dataset {args.dataset!r} in the store.")
    from engine.store.pair_counts import refuse_pair_counts

    refuse_pair_counts(store, args.dataset, f"experiment {args.experiment}")  # no graph to resample
    check_judges(store, args.dataset, args.judge)
    judges = args.judge or dataset_judges(store, args.dataset)
    overall = args.overall or getattr(args, "pooled", False)
    inputs = input_fingerprint(args.dataset, args.reference)
    kind = f"experiment-{args.experiment}"
    loaded: dict[str, pd.DataFrame] = {}

    def verdicts_of(judge: str) -> pd.DataFrame:
        if "all" not in loaded:
            loaded["all"] = store.verdicts(args.dataset)
        v = loaded["all"][loaded["all"]["judge"] == judge]
        if v.empty:
            raise LensError(f"Dataset {args.dataset!r} has no verdicts by judge {judge!r}.")
        return v

    frames = []
    for judge in judges:
        params, compute = _plan(args)
        params.update({"judge": judge, "reference": args.reference, "overall": overall, "inputs": inputs})
        version = store.dataset_version(args.dataset)  # read before the verdicts: the key of what they are
        frame = (
            None if args.no_cache else results_cache.get(store, args.dataset, kind, params, version=version)
        )
        if frame is None:
            v = verdicts_of(judge)
            cats = sorted(v["category"].astype("string").fillna("(none)").unique())
            reference = resolve_reference(store, args.dataset, args.reference, cats, overall)

            def fresh(v: pd.DataFrame = v, ref=reference, f=compute) -> pd.DataFrame:
                return f(build_stack(v), ref)

            frame = results_cache.compute_and_put(store, args.dataset, kind, params, fresh, version=version)
        frames.append(frame.assign(judge=judge))
    out = pd.concat(frames, ignore_index=True)
    out = out[["judge", *[c for c in out.columns if c != "judge"]]]
    if args.experiment == "baselines" and args.table:
        from engine.experiments.protocol_runs import table2

        parts = [
            table2(f, args.table).reset_index().assign(judge=j) for j, f in out.groupby("judge", sort=False)
        ]
        tab = pd.concat(parts, ignore_index=True)
        out = tab[["judge", *[c for c in tab.columns if c != "judge"]]]
    if args.format == "table" and not (args.experiment == "baselines" and args.table):
        table, legend = table_view(out)
        write_frame(table, "table")
        if legend:
            sys.stdout.write("notes:\n" + "".join(f"  [{i}] {text}\n" for i, text in enumerate(legend, 1)))
    else:
        write_frame(out, args.format)
    return 0


TABLE_COLUMNS = ("judge", "label", "k", "mu", "category", "distance", "point", "mean", "ci_low", "ci_high",
                 "half_width", "n_kept", "n_draw", "bt_nonconverged", "note")
"""The columns an aligned table shows (those the frame has); --format csv or json has every column (sd,
q_low, q_high, n_pool, n_keep, n_categories, resamples, degenerate, protocol) at full precision."""


def table_view(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """An experiment's frame for an aligned table: ``TABLE_COLUMNS`` only (bt_nonconverged only when a fit
    did not converge), numbers rounded to 4 decimals with float residue shown as 0
    (``rounded_for_table``), each note replaced by its number in the returned legend (a note repeats on
    every row of its cell and made rows 200+ characters wide)."""
    cols = [c for c in TABLE_COLUMNS if c in frame.columns]
    if "bt_nonconverged" in cols and not (frame["bt_nonconverged"] > 0).any():
        cols.remove("bt_nonconverged")
    table = rounded_for_table(frame[cols])
    legend: list[str] = []
    if "note" in table.columns:
        notes = table["note"].fillna("").astype(str)
        legend = list(dict.fromkeys(n for n in notes if n))
        number = {text: f"[{i}]" for i, text in enumerate(legend, 1)}
        table = table.assign(note=notes.map(lambda n: number.get(n, "")))
    return table, legend


def _plan(args):
    """(cache parameters, compute(stack, reference)): nothing is loaded until the cache misses."""
    from engine.experiments.curves import DEFAULT_MU_GRID, keep_k_curve, mu_curve
    from engine.experiments.protocol_runs import run_protocols

    if getattr(args, "mu", None) is not None:
        check_mu(args.mu, "--mu")
    if args.experiment == "baselines":
        protocols = tuple(x.strip() for x in args.protocols.split(",") if x.strip())
        p = ProtocolParams(
            keep=args.keep,
            draw=args.draw,
            scorewin_draw=args.scorewin_draw,
            random_draw=args.random_draw,
            random_reps=args.random_reps,
            random_pool=args.random_pool,
            single_draw=args.single_draw,
            resamples=args.resamples,
            seed=args.seed,
            mu=args.mu,
            copeland_tie=args.scorewin_tie,
        ).validate()
        params = {"protocols": protocols, **p.__dict__}
        return params, lambda st, ref: run_protocols(st, ref, protocols, p)
    common = {"pooled": args.pooled, "pool": args.pool, "resamples": args.resamples, "seed": args.seed,
              "draw_fraction": args.draw_fraction}
    kw = {"per_category": not args.pooled, "pool": args.pool, "resamples": args.resamples, "seed": args.seed,
          "draw_fraction": args.draw_fraction}
    if args.experiment == "keep-k":
        ks = _parse_ints(args.ks) if args.ks else None
        params = {"ks": ks, "mu": args.mu, **common}
        return params, lambda st, ref: keep_k_curve(st, ref, ks, mu=args.mu, **kw)
    mus = _parse_floats(args.mus) if args.mus else list(DEFAULT_MU_GRID)
    for mu in mus:
        check_mu(mu, "--mus")
    params = {"mus": mus, "k": args.k, **common}
    return params, lambda st, ref: mu_curve(st, ref, mus, k=args.k, **kw)
