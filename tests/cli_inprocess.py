"""``python -m engine ARGS`` run inside the test process: what the command-line process would give
(exit code, stdout, stderr), without starting a second interpreter (about 1 s of CPU per command).

For tests where the process boundary is not what is tested. Where it is (start-up imports, kill -9 and
resume, a lock held by another process, signals, a terminal), tests start a real process.
tests/test_cli_inprocess.py runs a sample of commands both ways and asserts the same exit code and the
same stdout and stderr text.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_engine(args: list, *, env: dict[str, str] | None = None, check: bool = False,
               stdin: str = "") -> subprocess.CompletedProcess:
    """Run ``python -m engine ARGS`` in this process: its exit code, stdout and stderr as a
    ``subprocess.CompletedProcess`` with text output, as ``subprocess.run(..., capture_output=True,
    text=True, cwd=REPO)`` would give them.

    Like the process:
    - its stdout and stderr pass through ``engine.terminal.EscapedStream`` (``python -m engine`` routes
      both through it), so a control character is escaped exactly as the process escapes it;
    - ``SystemExit`` (argparse) gives its code, a string code is printed on stderr with exit code 1, and
      an unexpected exception gives exit code 1 with its traceback on stderr;
    - log records of WARNING and above reach its stderr, as Python's last-resort handler prints them;
    - the current folder is the repository's; ``env`` replaces the environment for the call; ``stdin``
      is what the command reads from standard input (nothing, by default).
    ``check`` raises ``CalledProcessError`` on a non-zero exit, as ``subprocess.run(check=True)`` does.

    Nothing leaks from one call to the next through the process: the environment (a command may set a
    variable, e.g. the local judge's offline switch), the current folder, sys.argv, the warning filters,
    stdin and the root logger's handlers are put back after each call.
    """
    from engine.__main__ import main
    from engine.terminal import EscapedStream

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_stdin, saved_dunder_stdout = sys.stdin, sys.__stdout__
    root = logging.getLogger()
    saved_handlers = list(root.handlers)
    last_resort = logging.StreamHandler(EscapedStream(err))
    last_resort.setLevel(logging.WARNING)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(REPO)
        sys.argv = [str(REPO / "engine" / "__main__.py"), *argv]
        sys.stdin = io.StringIO(stdin)
        # argparse sizes its help by shutil.get_terminal_size: $COLUMNS, else the terminal of
        # sys.__stdout__, which for a process with captured output is a pipe (80 columns)
        sys.__stdout__ = EscapedStream(out)  # type: ignore[misc]
        root.addHandler(last_resort)
        with warnings.catch_warnings(), contextlib.redirect_stdout(EscapedStream(out)), \
                contextlib.redirect_stderr(EscapedStream(err)):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            except Exception:
                traceback.print_exc(file=sys.stderr)
                code = 1
    finally:
        root.handlers[:] = saved_handlers
        sys.stdin, sys.argv, sys.__stdout__ = saved_stdin, saved_argv, saved_dunder_stdout  # type: ignore[misc]
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    done = subprocess.CompletedProcess(["python", "-m", "engine", *argv], int(code or 0),
                                       out.getvalue(), err.getvalue())
    if check:
        done.check_returncode()
    return done


def run_engine_process(args: list, *, env: dict[str, str] | None = None,
                       stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
    """The same command as its own ``python -m engine`` process (text output, run in the repository):
    for the tests whose point is the process, and for checking ``run_engine`` against it."""
    return subprocess.run([sys.executable, "-m", "engine", *[str(a) for a in args]], cwd=REPO, env=env,
                          input=stdin, capture_output=True, text=True, timeout=timeout)
