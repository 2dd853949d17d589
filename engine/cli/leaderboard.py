"""``leaderboard``: rank the models of a stored dataset (filters, keep-K truncation, ranker, bootstrap)."""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from engine.cli._common import (
    add_format,
    check_judges,
    pooled_judges_note,
    store_from_args,
    write_frame,
    write_json,
    write_plain_table,
)
from engine.cli._ppr import add_ppr_options, refuse_ppr_options_without_method, run_ppr
from engine.errors import LensError
from engine.graphs.stack import COMBINE_POLICIES, DEFAULT_POLICY
from engine.graphs.truncation import DEFAULT_SCORE, SCORES
from engine.rankers import RANKER_HELP, RANKERS, check_ranker_params, parse_ranker_params, ranker_object
from engine.rankers.params import param_kinds
from engine.ranking.baseline import baseline_leaderboard, baseline_notes, check_decisive_weight
from engine.ranking.board import BoardRows, BoardSpec, Typed, plain_values
from engine.ranking.board_notes import board_notes
from engine.ranking.leaderboard import leaderboard
from engine.store.datasets import require_dataset
from engine.store.schema import DEFAULT_DATASET

KEEP_K_HELP = (
    "keep the K graphs of smallest truncation score: S_mu = C3_bad + mu*C4_bad "
    + ("scaled by coverage, i.e. " + SCORES["coverage"] if DEFAULT_SCORE == "coverage" else "as counted")
)
"""--keep-k's help, from the score keep-K uses by default (``engine.graphs.truncation.DEFAULT_SCORE``)."""


def add_selection(p: argparse.ArgumentParser) -> None:
    """Options shared by ``leaderboard`` and ``compare``: what to rank and how."""
    p.add_argument(
        "--dataset",
        default=DEFAULT_DATASET,
        help=f"a stored dataset (default {DEFAULT_DATASET}, the shipped one; see python -m engine datasets)",
    )
    p.add_argument("--judge", help="only this judge's graphs (default: every judge, graphs pooled)")
    p.add_argument("--category", help="only graphs of this category")
    p.add_argument("--keep-k", type=int, help=KEEP_K_HELP)
    p.add_argument("--mu", type=float,
                   help=f"with --keep-k: weight of bad 4-cycles in S_mu (default {BoardSpec.mu:g})")
    p.add_argument(
        "--per-category", action="store_true", help="with --keep-k: keep K graphs in each category"
    )
    p.add_argument(
        "--pool",
        choices=("perturbed", "sampling", "all"),
        help="with --keep-k: which graphs compete: perturbed = originals + paraphrases (the paper's "
        "Trunc, default), sampling = originals + sampling replicates, all",
    )
    p.add_argument("--policy", choices=tuple(COMBINE_POLICIES), default=DEFAULT_POLICY,
                   help="how several verdicts on one pair in one graph combine")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="ranker parameter, e.g. solver=mm, scale=elo, soft=true, k=32 (repeatable)")
    p.add_argument(
        "--judge-weight",
        action="append",
        metavar="JUDGE=W",
        help="weight of a judge's graphs for pged, borda, kemeny, pairwise-majority (paper 002, App. Q)",
    )


def keep_k_options(args: argparse.Namespace) -> tuple[float, bool, str]:
    """(mu, per_category, pool) after refusing keep-K options given without --keep-k."""
    if args.keep_k is None:
        for given, text in ((args.pool is not None, "--pool chooses which graphs keep-K keeps"),
                            (args.mu is not None, "--mu weights bad 4-cycles in keep-K's S_mu"),
                            (args.per_category, "--per-category keeps K graphs in each category")):
            if given:
                raise LensError(f"{text}; give --keep-k K too.")
    if args.mu is not None:
        check_mu(args.mu, "--mu")
    return (1.0 if args.mu is None else args.mu), bool(args.per_category), (args.pool or "perturbed")


def check_mu(mu: float, option: str) -> float:
    """A keep-K weight of bad 4-cycles must be a finite number ≥ 0: a negative mu rewards 4-cycles and
    keeps the most cyclic graphs (the engine's general C3 + mu C4 form stays general)."""
    if not math.isfinite(mu) or mu < 0:
        raise LensError(
            f"{option} weights bad 4-cycles in keep-K's S_mu and must be a finite number, 0 or more; "
            f"got {mu}."
        )
    return mu


def ranker_params(args: argparse.Namespace, ranker: str) -> dict:
    """The ranker's parameters from --param and --judge-weight, checked by name, type and range
    (``engine.rankers.params``) before the store is opened."""
    params = parse_ranker_params(ranker, args.param)
    if args.judge_weight:
        weights = {}
        for item in args.judge_weight:
            judge, _, raw = item.rpartition("=")
            try:
                weights[judge] = float(raw)
            except ValueError:
                raise LensError(f"Judge weight {item!r} is not of the form JUDGE=number.") from None
            if not judge:
                raise LensError(f"Judge weight {item!r} is not of the form JUDGE=number.")
        if "weights" not in param_kinds(ranker):
            takers = ", ".join(r for r in sorted(RANKERS) if "weights" in param_kinds(r))
            raise LensError(
                f"--judge-weight weights judges for {takers}; the {ranker} ranker takes no judge weights."
            )
        params["weights"] = check_ranker_params(ranker, {"weights": weights})["weights"]
    return params


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``leaderboard`` and its selection, keep-K, ranker and bootstrap options to the parser."""
    rankers = ", ".join(f"{k} ({v})" for k, v in RANKER_HELP.items())
    p = subparsers.add_parser(
        "leaderboard", help="rank the models of a dataset",
        description=f"Rank models from the tournament graphs of a dataset. Rankers: {rankers}.",
    )
    add_selection(p)
    p.add_argument("--ranker", choices=sorted(RANKERS), default=BoardSpec.ranker,
                   help="the ranker (see the list above)")
    p.add_argument(
        "--bootstrap", type=int, default=0, metavar="B", help="bootstrap resamples for CIs (0: none)"
    )
    p.add_argument(
        "--bootstrap-unit",
        choices=("graph", "prompt", "vote"),
        help="what the bootstrap resamples (default: the ranker's own unit: prompts for per-prompt "
        "pged, graphs otherwise; vote = single votes, for the count rankers without keep-K)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    # issue 24 (stylefit): style control and the interval method
    p.add_argument("--style-control", action="store_true",
                   help="style-controlled Bradley-Terry (LMArena's style control): ratings plus beta per "
                   "style feature (answer tokens, headers, lists, bold); adds rank_plain and rank_change")
    p.add_argument("--style-weighting", choices=("pairs", "none"), default="pairs",
                   help="with --style-control: pairs = each vote weighs 1 / max(votes of its pair, 50), "
                   "arena-rank's default (default); none = every vote weighs 1")
    p.add_argument("--ci", choices=("sandwich", "bootstrap"),
                   help="interval method: sandwich (H^-1 G H^-1 of the BT fit, z-quantile; the default under "
                   "--style-control) or bootstrap (--bootstrap B resamples; the default otherwise)")
    p.add_argument("--show-kept", action="store_true",
                   help="with --keep-k: print the kept graphs (keep order, S_mu counted and scored) "
                   "instead of the leaderboard")
    add_baseline_options(p)
    add_format(p)
    add_length_control_options(p)
    add_ppr_options(p)
    p.set_defaults(func=run)


# --- length control (issue 24, point 5) ---
def add_length_control_options(p: argparse.ArgumentParser) -> None:
    """``--length-control`` (AlpacaEval's LC win rate against ``--baseline``); ``--baseline`` is added
    here only where no other block has added it."""
    if "--baseline" not in p._option_string_actions:
        p.add_argument("--baseline", metavar="MODEL", help="the model every other is compared with")
    p.add_argument(
        "--length-control", action="store_true",
        help="with --baseline: add each model's length-controlled win rate against the baseline "
        "(AlpacaEval 2's GLM on answer lengths in characters; needs the answer texts) and its plain win rate",
    )


def check_length_control(args: argparse.Namespace) -> None:
    """--length-control compares with one model: refuse it without --baseline."""
    if args.length_control and not args.baseline:
        raise LensError("--length-control gives each model's win rate against a baseline; give --baseline "
                        "MODEL too.")


def length_control_notes(board) -> list[str]:
    """The sentences --length-control adds below the table (none without it)."""
    return list(board.params.get("length_control", {}).get("notes", []))


def length_controlled_board(board, store, args: argparse.Namespace):
    """The board with the LC win-rate columns when --length-control is given, else as it is."""
    if not args.length_control:
        return board
    from engine.ranking.length_control import with_length_control

    return with_length_control(board, store, args.dataset, args.baseline, judge=args.judge,
                               category=args.category)
# --- end length control ---


def run(args: argparse.Namespace) -> int:
    """Rank the selected verdicts and print the table with its notes; exit status."""
    if refuse_ppr_options_without_method(args) or args.method is not None:
        return run_ppr(args)
    check_length_control(args)
    if args.show_kept and args.keep_k is None:
        raise LensError("--show-kept lists the graphs keep-K kept; give --keep-k K too.")
    if args.bootstrap < 0:
        raise LensError(
            f"--bootstrap takes the number of resamples, 0 (no intervals) or more; got {args.bootstrap}."
        )
    if args.bootstrap_unit is not None and args.bootstrap == 0:
        raise LensError("--bootstrap-unit says what the bootstrap resamples; give --bootstrap B too.")
    mu, per_category, pool = keep_k_options(args)
    decisive_weight = baseline_options(args)
    params = ranker_params(args, args.ranker)
    check_style_options(args, params)
    store = store_from_args(args, ensure_default=args.dataset == DEFAULT_DATASET)
    try:
        require_dataset(store, args.dataset)  # before any path reads rows: else "has no valid verdict"
        check_judges(store, args.dataset, args.judge)
        # the panel weighs its judges by fitted reliabilities: no pooling to warn about
        pooled = (pooled_judges_note(store, args.dataset)
                  if args.judge is None and not ranker_object(args.ranker).judged_verdicts else None)
        spec = BoardSpec(ranker=args.ranker, ranker_params=params, keep_k=args.keep_k, mu=mu,
                         per_category=per_category, pool=pool, bootstrap=args.bootstrap, seed=args.seed,
                         bootstrap_unit=args.bootstrap_unit, policy=args.policy,
                         ci=args.ci, style_control=args.style_control,
                         style_reweight=args.style_weighting == "pairs")
        if args.baseline is not None:
            board = baseline_leaderboard(store, args.dataset, spec, args.baseline,
                                         decisive_weight=decisive_weight, judge=args.judge,
                                         category=args.category)
        else:
            board = leaderboard(store, args.dataset, spec, judge=args.judge, category=args.category)
        board = length_controlled_board(board, store, args)
    finally:
        store.close()
    if args.show_kept:
        write_kept(board, args.format)
    else:
        write_board(board, args.format)
    if pooled:
        sys.stderr.write(f"note: {pooled}\n")
    return 0


def add_baseline_options(p: argparse.ArgumentParser) -> None:
    """--baseline (Arena-Hard's score: the win rate against one model predicted by the BT fit)."""
    p.add_argument(
        "--baseline", metavar="MODEL",
        help="add each model's win rate against MODEL predicted by the Bradley-Terry fit (Arena-Hard's "
        "score), with --bootstrap intervals; every verdict is one battle and a strong verdict (A>>B) "
        "counts 3 times where the verdicts carry a strength (--param decisive_weight=W, 1 for once)",
    )


def baseline_options(args: argparse.Namespace) -> int | None:
    """--param decisive_weight=W taken out of the ranker's parameters (it weights battles for --baseline,
    it is no parameter of the fit); None when not given. Refused without --baseline."""
    given = [p for p in (args.param or []) if p.partition("=")[0].strip() == "decisive_weight"]
    if not given:
        return None
    if args.baseline is None:
        raise LensError("decisive_weight weights strong verdicts in the win rate against a baseline; "
                        "give --baseline MODEL too.")
    args.param = [p for p in args.param if p not in given]
    return check_decisive_weight(given[-1].partition("=")[2].strip())


def check_style_options(args: argparse.Namespace, params: dict) -> None:
    """--style-control / --ci / --style-weighting refused in one sentence before the store is opened."""
    from engine.ranking.style_board import check_interval_choice

    if args.style_weighting != "pairs" and not args.style_control:
        raise LensError(
            "--style-weighting weighs the votes of the style-controlled fit; give --style-control too."
        )
    check_interval_choice(BoardSpec(ranker=args.ranker, ranker_params=params, keep_k=args.keep_k,
                                    bootstrap=args.bootstrap, bootstrap_unit=args.bootstrap_unit, ci=args.ci,
                                    style_control=args.style_control))


def write_kept(board, fmt: str) -> None:
    """--show-kept: the kept graphs; JSON {params, notes, kept}, else the table on stdout and the keep-K
    notes on stderr."""
    notes = [n for n in board_notes(board) if n.startswith("keep-K:")]
    if fmt == "json":
        kept = json.loads(board.kept.to_json(orient="records", double_precision=10))
        write_json(plain_values({"params": board.params, "notes": notes, "kept": kept}))
        return
    write_frame(board.kept, fmt)
    for line in notes:
        sys.stderr.write(f"note: {line}\n")


INTERVAL_COLUMNS = ("ci_low", "ci_high", "rank_low", "rank_high", "rank_ub", "ci_note", "baseline_ci_low",
                    "baseline_ci_high")
"""The leaderboard columns only a bootstrap fills."""

FIT_CI_METHODS = ("sandwich", "observed-information")
"""Interval methods that come from the fit itself (score intervals, no rank intervals, no --bootstrap):
the sandwich of style control and the panel's observed information (engine.ranking.panel_board)."""

NO_BOOTSTRAP_NOTE = (
    "no --bootstrap: the interval columns (ci_low, ci_high, rank_low, rank_high, rank_ub) are left out; "
    "--bootstrap B adds them."
)


def left_out_columns(board, columns) -> list[str]:
    """The table's columns not printed: without a bootstrap the interval columns (not NaN / <NA>);
    ``ci_note`` unless some interval is not estimable, ``component`` unless the comparison graph has more
    than one (a note then names them); the JSON's params say both either way. ``columns``: the table's."""
    method = board.params.get("ci_method")
    drop = [] if board.params.get("bootstrap") else [c for c in INTERVAL_COLUMNS if c in columns]
    if method in FIT_CI_METHODS:  # score intervals only: the sandwich gives no rank intervals
        drop = ["rank_low", "rank_high"]
    if "ci_note" in columns and not board.params.get("bootstrap_not_estimable"):
        drop.append("ci_note")
    if "component" in columns and not board.params.get("components"):
        drop.append("component")
    return sorted(set(drop))


def printed_table(board):
    """The table as printed (``left_out_columns`` left out)."""
    t = board.table
    drop = left_out_columns(board, t.columns)
    return t.drop(columns=drop) if drop else t


def write_printed_table(board, fmt: str) -> None:
    """The printed table on stdout: a board built as arrays (``BoardRows``) in an aligned table is written
    from its arrays where ``write_plain_table`` can (pandas' text, without importing pandas); every other
    board and format through its DataFrame (``write_frame``)."""
    rows = board.rows
    if fmt == "table" and isinstance(rows, BoardRows):
        drop = set(left_out_columns(board, rows.columns))
        names = [c for c in rows.columns if c not in drop]
        cells = [rows.columns[c] for c in names]
        if write_plain_table(names, [c.values if isinstance(c, Typed) else c for c in cells]):
            return
    write_frame(printed_table(board), fmt)


BASELINE_BOARD_NOTE = (
    "baseline: the whole board is the fit on battles, not only its baseline columns: its scores, counts and "
    "ranks can differ from those of the same command without --baseline, which counts votes (where a "
    "prompt's two presentation orders were both judged, a strong verdict counts more than once, or models "
    "no verdict links to the baseline are left off); the app's Leaderboard keeps that board and shows these "
    "win rates in a box of their own."
)
"""Said under a board fitted for --baseline: a reader comparing it with the plain board (or the app's)
sees why every column moved."""


def write_board(board, fmt: str) -> None:
    """JSON: one object {params, details, notes, table, kept (with keep-K)}. CSV / table: the table on
    stdout (CSV stays header + rows only) and one ``note: ...`` line per notable detail on stderr.
    Without --bootstrap the interval columns are left out and a note says so once."""
    from engine.ranking.style_board import style_notes

    notes = board_notes(board) + style_notes(board) + baseline_notes(board)
    if board.params.get("baseline") is not None and board.params.get("unit") == "battles":
        notes.append(BASELINE_BOARD_NOTE)
    if not board.params.get("bootstrap") and board.params.get("ci_method") not in FIT_CI_METHODS:
        notes.append(NO_BOOTSTRAP_NOTE)
    notes += length_control_notes(board)
    if fmt == "json":
        details = {k: v for k, v in board.result.details.items() if not isinstance(v, np.ndarray)}
        table = json.loads(printed_table(board).to_json(orient="records", double_precision=10))
        obj = {"params": board.params, "details": details, "notes": notes, "table": table}
        if board.params.get("ci_method") is not None:
            obj["ci_method"] = board.params["ci_method"]
        if board.params.get("style") is not None:
            obj["style"] = board.params["style"]
        if board.params.get("keep_k") is not None:
            obj["kept"] = json.loads(board.kept.to_json(orient="records", double_precision=10))
        write_json(plain_values(obj))
        return
    write_printed_table(board, fmt)
    for line in notes:
        sys.stderr.write(f"note: {line}\n")
