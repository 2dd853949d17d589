"""``triads``: the non-transitive (cyclic) triads of one prompt's graph(s), with their kind."""

from __future__ import annotations

import argparse

from engine.cli._common import add_format, write_frame
from engine.cli.graphs import load_stack
from engine.graphs.stack import COMBINE_POLICIES, DEFAULT_POLICY
from engine.graphs.triads import nontransitive_triads
from engine.store.schema import DEFAULT_DATASET


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``triads`` (one prompt's non-transitive triads) to the parser."""
    p = subparsers.add_parser(
        "triads",
        help="cyclic triads of a prompt's graph: strict cycles and tie contradictions",
        description="The model triples of one prompt's graph whose verdicts admit no ranking "
        "(paper 001 App. B.1). kind: cycle (a>b, b>c, c>a), tied-ends (a>b, b>c, a~c), "
        "unchained-ties (a~b, b~c, a>c). With several matching graphs, judge, variant and turn "
        "columns after kind say which graph a row is from.",
    )
    p.add_argument(
        "--dataset",
        default=DEFAULT_DATASET,
        help=f"a stored dataset (default {DEFAULT_DATASET}, the shipped one; see python -m engine datasets)",
    )
    p.add_argument("--prompt-id", required=True, dest="prompt_id")
    p.add_argument("--variant", type=int, help="only this variant (0 = the original prompt)")
    p.add_argument("--turn", type=int, help="only this turn")
    p.add_argument("--judge", help="only this judge")
    p.add_argument("--policy", choices=tuple(COMBINE_POLICIES), default=DEFAULT_POLICY,
                   help="how several verdicts on one pair in one graph combine")
    add_format(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the cyclic triads of the chosen prompt's graph(s) with their kind; exit status."""
    stack = load_stack(args, prompt_id=args.prompt_id)
    triads = nontransitive_triads(stack)
    columns = ["model_a", "model_b", "model_c", "kind"]  # README.md's triads columns, always first
    if stack.T > 1:
        keys = stack.keys[["judge", "variant", "turn"]].reset_index(drop=True)
        triads = triads.reset_index(drop=True).join(
            keys.iloc[triads["graph"].to_numpy()].reset_index(drop=True)
        )
        columns = [*columns, "judge", "variant", "turn"]
    write_frame(triads[columns], args.format)
    return 0
