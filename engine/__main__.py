"""The command line: ``python -m engine [--db PATH] COMMAND ...``.

Each command lives in ``engine/cli/<name>.py`` and exposes ``register(subparsers)``; this file
only wires them together, resolves the store and turns user errors into one line on stderr.
The library never prints; commands print their results on stdout (plain CSV for --format csv).
Run as a program, all its output passes through ``engine.terminal``: a control character from a
file or the store is shown escaped, never sent raw to the terminal.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from engine import cli as cli_pkg
from engine import heap
from engine.cli._parser import LensArgumentParser
from engine.errors import LensError, disk_full_sentence, is_disk_full

GLOBAL_OPTIONS_WITH_VALUE = ("--db", "--lock-wait")
COMMAND_MODULES = {"import": "imports", "import-texts": "import_texts", "head-to-head": "head_to_head"}
"""Commands whose module under ``engine/cli/`` has another name; every other command is its module's name."""


def command_module(argv: list[str]) -> str | None:
    """The ``engine/cli`` module of the command that ``argv`` names, or None when argv names none
    (``--help``, a typo, nothing): then every command is needed, for the help or the error."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token in GLOBAL_OPTIONS_WITH_VALUE:
            skip = True
        elif token.startswith(tuple(f"{o}=" for o in GLOBAL_OPTIONS_WITH_VALUE)):
            continue
        elif token.startswith("-"):
            return None
        else:
            if token in COMMAND_MODULES.values() and token not in COMMAND_MODULES:
                return None  # a module's name that is not its command's (imports): the full parser says so
            name = COMMAND_MODULES.get(token, token)
            known = {m.name for m in pkgutil.iter_modules(cli_pkg.__path__) if not m.name.startswith("_")}
            return name if name in known else None
    return None


def build_parser(only: str | None = None) -> LensArgumentParser:
    """The ``python -m engine`` parser: global options and every subcommand's ``register`` (or only
    the module ``only``'s: a command imports what it uses, not what every other command uses)."""
    parser = LensArgumentParser(
        prog="python -m engine",
        description="Tournament Lens: leaderboards and cycle diagnostics for pairwise LLM judges.",
    )
    parser.add_argument("--db", help="DuckDB store (default: $LENS_DB, else data/lens.duckdb)")
    parser.add_argument(
        "--lock-wait", type=float, default=30.0, metavar="SECONDS",
        help="how long to wait while another process (e.g. the app) holds the store (default 30)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(cli_pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_") or (only is not None and info.name != only):
            continue
        module = importlib.import_module(f"{cli_pkg.__name__}.{info.name}")
        module.register(sub)
    return parser


@contextmanager
def loading_without_collection(program: bool) -> Iterator[None]:
    """As a program (``program``): the command's modules loaded without garbage collection and what they
    built frozen after (``engine.heap.loading_without_collection``); else nothing. Only for the process
    ``python -m engine`` starts, which ends with its command: a caller of ``main`` in a long-lived process
    (the tests) keeps its collector as it was."""
    if not program:
        yield
        return
    with heap.loading_without_collection():
        yield


def main(argv: list[str] | None = None, *, program: bool = False) -> int:
    """Run one command line; a LensError, a full disk or a damaged store file becomes one sentence on
    stderr and exit status 2. ``program``: run as ``python -m engine`` (``loading_without_collection``)."""
    argv = sys.argv[1:] if argv is None else argv
    module = command_module(argv)
    with loading_without_collection(program):
        parser = build_parser(module)
    if module is not None:  # an unrecognised option is reported by the top parser: name the command's help
        command = {m: c for c, m in COMMAND_MODULES.items()}.get(module, module)
        parser.help_prog = f"{parser.prog} {command}"
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if is_disk_full(exc):
            print(f"error: {disk_full_sentence()}", file=sys.stderr)
            return 2
        from engine.store.connection import damaged_store_error, is_damaged_store, resolve_db_path

        if is_damaged_store(exc):  # a damaged part of the store first read by this command's queries
            path = resolve_db_path(getattr(args, "db", None))
            print(f"error: {damaged_store_error(path, exc, verb='read')}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    from engine.terminal import escape_streams

    escape_streams()  # every string printed from here on (names, notes, tracebacks) is escaped
    sys.exit(main(program=True))
