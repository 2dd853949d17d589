"""``import-texts``: prompt and answer texts from their own files into a stored dataset, matched to its
verdicts by prompt id, turn and model, with a report of what matched (engine.ingest.texts_import)."""

from __future__ import annotations

import argparse

from engine.cli._common import store_from_args
from engine.ingest.text_files import expand
from engine.ingest.text_shapes import SHAPE_NAMES
from engine.ingest.texts_import import import_texts


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``import-texts`` to the parser."""
    p = subparsers.add_parser(
        "import-texts",
        help="add prompt and answer texts (MT-Bench, Arena-Hard, LLMFAO, AlpacaEval files) to a dataset",
        description="Read prompt and answer texts from the files that hold them apart from the verdicts "
        "(FastChat / Arena-Hard question.jsonl and model_answer/<model>.jsonl, or their folder; LLMFAO "
        "prompts.jsonl, results.jsonl and models.jsonl; AlpacaEval outputs; or prompt_id,text and "
        "prompt_id,model,text records) and store them with the dataset's verdicts, matched by prompt id, "
        "turn and model. Every record must give a text and at least one text must match a verdict, else "
        "nothing is stored. A text already stored for the same key is replaced.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="text files, or a folder laid out like FastChat's")
    p.add_argument("--dataset", required=True, help="the stored dataset whose verdicts the texts belong to")
    p.add_argument("--shape", choices=SHAPE_NAMES, default=None,
                   help="read every file as this shape (default: recognised from each file's first record)")
    p.add_argument("--dry-run", action="store_true", help="read and match, report, store nothing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Import the texts and print what each file gave, how they matched and what was stored."""
    files = expand(args.paths)
    store = store_from_args(args)
    read, match, result = import_texts(store, args.dataset, [(f, str(f)) for f in files], shape=args.shape,
                                       dry_run=args.dry_run)
    for f in read.files:
        print(f"{f.name}: {f.title}, {f.records:,} records, {f.prompts:,} prompt and {f.answers:,} answer "
              "texts")
    for line in [*read.notes(), *match.lines()]:
        print(line)
    print("dry run: nothing stored" if result is None else result.summary())
    return 0
