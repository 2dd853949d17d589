"""``compare``: distances (Spearman, Kendall, footrule, Chebyshev) between leaderboards and a reference."""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from engine.cli._common import add_format, check_judges, pooled_judges_note, store_from_args, write_frame
from engine.cli.leaderboard import add_selection, keep_k_options, ranker_params
from engine.errors import LensError
from engine.ingest.synthetic import synthetic_truth
from engine.rankers import RANKERS
from engine.ranking.board import BoardSpec
from engine.ranking.leaderboard import compare_to_reference, leaderboard
from engine.ranking.reference import ARENA, reference_for_dataset, reference_notes
from engine.store.connection import Store
from engine.store.datasets import require_dataset
from engine.store.schema import DEFAULT_DATASET
from engine.store.truth import has_truth

TRUTH = "truth"

COLUMNS = (
    "judge",
    "ranker",
    "spearman_rho",
    "spearman_distance",
    "kendall",
    "footrule",
    "chebyshev",
    "n_shared",
    "n_graphs",
    "models",
)
"""``spearman_rho`` is Spearman's correlation (1 = same order); ``spearman_distance`` = (1 - rho) / 2 and the
other three are normalised distances (0 = same order, 1 = reversed)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``compare`` (leaderboards of several rankers against a reference) to the parser."""
    p = subparsers.add_parser(
        "compare", help="ranking distances of leaderboards to a reference ranking",
        description="Rank a dataset and print Spearman's rho (spearman_rho) and the normalised Spearman "
        "(spearman_distance = (1 - rho) / 2), Kendall tau, footrule and Chebyshev distances to a reference "
        "(paper 000, Section 4.1, Appendix C.2; 0 = same order), on the models both rank.",
    )
    add_selection(p)
    p.add_argument("--reference", default=ARENA,
                   help="'arena' (the shipped LMArena 2025-03-07 snapshot, default), 'truth' (a synthetic "
                        "dataset's stored ground truth), or an LMArena per-category JSON or leaderboard CSV")
    p.add_argument("--reference-category", help="category of a JSON reference (default: full)")
    p.add_argument(
        "--model-map",
        metavar="PATH",
        help="CSV mapping the dataset's model names to the reference's: columns model and arena_model "
        "(or reference_model); it wins over the map stored with the dataset (datasets map) and the shipped "
        "data/mappings/<dataset>.models.csv; names no map lists are matched by name (exact, then ignoring "
        "case and punctuation)",
    )
    p.add_argument("--ranker", action="append", choices=sorted(RANKERS),
                   help=f"ranker(s) to compare (repeatable; default {BoardSpec.ranker})")
    p.add_argument("--per-judge", action="store_true", help="one row per judge of the dataset")
    add_format(p)
    p.set_defaults(func=run)


UNIT_WORDS = {"votes": "votes", "battles": "battles"}
"""How the unit note names a board's unit (``params["unit"]``); any other unit is graph edges."""


def truth_reference(store: Store, dataset: str) -> pd.Series:
    """--reference truth: the stored ground-truth strengths of a synthetic dataset
    (engine.ingest.synthetic)."""
    if not store.has_dataset(dataset):
        raise LensError(f"There is no dataset {dataset!r} in the store.")
    if not has_truth(store, dataset):
        raise LensError(
            f"--reference truth needs a synthetic dataset with a stored ground truth, and {dataset!r} has "
            "none; use --reference arena or a reference file."
        )
    return synthetic_truth(store, dataset)


def run(args: argparse.Namespace) -> int:
    """Rank with each asked ranker and print its distances to the reference; exit status."""
    mu, per_category, pool = keep_k_options(args)
    rankers = args.ranker or [BoardSpec.ranker]
    params = {r: ranker_params(args, r) for r in rankers}
    truth = args.reference == TRUTH
    if truth:
        for given, option in (
            (args.model_map, "--model-map"),
            (args.reference_category, "--reference-category"),
        ):
            if given is not None:
                raise LensError(
                    f"{option} does not apply to --reference truth: a synthetic dataset's truth already "
                    "uses the dataset's own model names."
                )
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    rows = []
    try:
        check_judges(store, args.dataset, args.judge)
        if truth:
            ref = truth_reference(store, args.dataset)
        else:
            require_dataset(store, args.dataset)
            ref = reference_for_dataset(args.dataset, args.reference_category, args.reference, store=store,
                                        map_file=args.model_map)
            if len(ref) < 2:
                name = "the shipped Arena snapshot" if args.reference == ARENA else args.reference
                left = list(ref.attrs["unmatched"]) + list(ref.attrs["ambiguous"])
                raise LensError(
                    f"Fewer than two models of dataset {args.dataset!r} appear in the reference {name}"
                    + (f" ({len(left)} name(s) match none of its names, e.g. {left[0]}); give --model-map "
                       "PATH or keep a map with the dataset (datasets map)." if left else ".")
                )
        notes = reference_notes(ref)
        if args.judge is None and not args.per_judge:
            pooled = pooled_judges_note(store, args.dataset)
            notes += [pooled] if pooled else []
        if args.per_judge:
            judges = sorted(store.verdicts(args.dataset, category=args.category)["judge"].dropna().unique())
        else:
            judges = [args.judge]
        units: dict[str, str] = {}
        for judge in judges:
            for ranker in rankers:
                spec = BoardSpec(ranker=ranker, ranker_params=params[ranker], keep_k=args.keep_k, mu=mu,
                                 per_category=per_category, pool=pool, policy=args.policy)
                board = leaderboard(store, args.dataset, spec, judge=judge, category=args.category)
                units[ranker] = board.params.get("unit", "graphs")
                d = compare_to_reference(board, ref)
                label = judge if judge is not None else "all"
                d["spearman_distance"] = d.pop("spearman")
                d["spearman_rho"] = 1.0 - 2.0 * d["spearman_distance"]
                rows.append({"judge": label, "ranker": ranker, "n_graphs": board.n_graphs, **d})
                dropped = board.params.get("dropped_models")
                if dropped:
                    notes.append(
                        f"judge {label}, {ranker}: {', '.join(dropped)} had no comparison in the ranked "
                        "graphs and were left out."
                    )
        by_unit: dict[str, list[str]] = {}
        for r, u in units.items():
            by_unit.setdefault(u, []).append(r)
        notes.append(
            "unit: "
            + "; ".join(
                f"{', '.join(rs)} ranked {UNIT_WORDS.get(u, 'graph edges')}"
                for u, rs in sorted(by_unit.items())
            )
            + (" (battles: the pair counts of the dataset)." if set(by_unit) == {"battles"} else
               " (votes: each judge/annotator/battle on a pair counts; graph edges: one per pair and graph).")
        )
    finally:
        store.close()
    write_frame(pd.DataFrame(rows, columns=list(COLUMNS)), args.format)
    for line in notes:
        sys.stderr.write(f"note: {line}\n")
    return 0
