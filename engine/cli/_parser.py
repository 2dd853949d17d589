"""The command line's argument parser: a parse error is one sentence, and every stated default is the
real one.

Why: argparse's own error prints the whole usage (9-13 lines for ``leaderboard``) before the sentence
that says what is wrong; a user reads the sentence and asks ``--help`` for the rest. And a help text
written by hand drifts from the default the code uses; the formatter states each option's default from
the parser itself unless the help already says what the default means.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class StatedDefaultsFormatter(argparse.HelpFormatter):
    """Appends ``(default X)`` to an option's help from its argparse default, when the help does not
    already speak of its default and the default is a plain value (not None, False or a sentinel)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text.lower() or "%(default)" in text or not stated_default(action):
            return text
        return f"{text} (default %(default)s)" if text else "(default %(default)s)"


def stated_default(action: argparse.Action) -> bool:
    """Whether ``action``'s default is a value worth stating in its help: a string, number or tuple of
    them (an option's own value), not None / False / SUPPRESS / an object used as a sentinel."""
    default = action.default
    if default is None or default is False or default == argparse.SUPPRESS or not action.option_strings:
        return False
    if isinstance(default, tuple):
        return all(isinstance(x, (str, int, float)) for x in default)
    return isinstance(default, (str, int, float))


class LensArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose error is one line on stderr, ``error: <what> ; see <prog>
    --help.``, exit status 2, and whose help states defaults (``StatedDefaultsFormatter``). Subcommand
    parsers are made of the same class (argparse makes them of the parent's class)."""

    help_prog: str | None = None
    """The command whose --help the error points to when the top-level parser reports the error (an
    unrecognised option is reported by the top-level parser, though it belongs to the command)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", StatedDefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """One sentence on stderr, no usage block, exit status 2."""
        prog = self.help_prog or self.prog
        sentence = message[:1].upper() + message[1:] if message else "Cannot read the command line"
        self.exit(2, f"error: {sentence.rstrip('.')}; see {prog} --help.\n")


__all__ = ["LensArgumentParser", "StatedDefaultsFormatter", "stated_default"]
