"""Mutation pass: plant small plausible bugs in the core modules and see whether the tests notice.

    nice -n 10 python bench/mutation.py [--seed 22] [--per-module 30] [--only cycles,bt ...]
        [--survivors-of bench/out/mutation.json] [--out bench/out/mutation] [--list]

For each core module (``MODULES`` below: its file, the functions to mutate when only part of the file
is in scope, and the fast test files that pin it) the runner parses the file, lists every mutant the
operators below can make, takes a seeded sample of at most ``--per-module`` of them, and for each one
writes the mutated source over the file *in this working tree*, runs the mapped test files
(``python -m pytest -x -q -n 0 -p no:cacheprovider <files>``) under a timeout, and restores the file
(always: ``try/finally``, Ctrl-C included). A mutant is *killed* when pytest fails, *survives* when it
passes, and *times out* when the run exceeds twice the module's clean run plus 20 s (counted as
killed: a planted bug that hangs the tests is noticed). Before its mutants a module's tests run once
unmutated; a module whose clean run fails is reported and skipped.

Operators (each mutant changes one node; the replacement is the node's source re-printed by
``ast.unparse`` in parentheses, so formatting elsewhere is untouched):

- ``cmp``: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``,
  ``in`` <-> ``not in``;
- ``arith``: ``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` -> ``/``, ``%`` -> ``//``, ``**`` -> ``*``
  (also in ``+=`` ...);
- ``const``: integer/float constants ``0`` -> ``1``, ``1`` -> ``0``, ``n`` -> ``n + 1``;
  ``True`` <-> ``False``;
- ``bool``: ``and`` <-> ``or``; ``not x`` -> ``x``;
- ``return``: ``return x`` -> ``return None`` in functions of at most 12 lines;
- ``axis``: a numpy ``axis=k`` keyword -> ``axis=1 - k`` (``0`` <-> ``1``; ``-1`` -> ``0``);
- ``string``: quantile/search strings ``'higher'`` <-> ``'lower'``, ``'left'`` <-> ``'right'``;
- ``minmax``: ``min`` <-> ``max``, ``argmin`` <-> ``argmax``, ``minimum`` <-> ``maximum``,
  ``any`` <-> ``all``.

Docstrings, annotations, f-strings, ``raise``/logging messages and the arguments of ``os.kill`` and
its kin (a mutated signal number would signal a process this run never started) are never
mutated. The sample is drawn with ``random.Random(f"{seed}:{module}")`` from the mutants in source
order, so the same seed on the same source gives the same mutants. ``--survivors-of REPORT``
re-runs only the mutants a previous report listed as survivors (found again by line, operator and
diff among all the file's mutants, so a fix elsewhere in the file does not change which; the
'after' pass: tests are only added, so a killed mutant stays killed) and keeps the report's other
outcomes; it runs the fast files and the kill file only (a before-pass survivor has already passed
the unchanged wider files). Writes ``<out>.json`` and ``<out>.md`` (per module: mutants, killed,
survived, timeouts, and each survivor's line and diff) and prints the table. Stop it with Ctrl-C or
``kill`` (SIGTERM): the file under mutation is restored either way.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Target:
    """One module in scope: its file, the fast tests that pin it, the wider tests that also reach it
    (run only on a mutant the fast ones let through), and the functions to mutate (empty: all)."""

    path: str
    tests: tuple[str, ...]
    wider: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()


MODULES: dict[str, Target] = {
    "exports": Target(
        "engine/views/exports.py", ("tests/test_csv_formula_safety.py",), ("tests/app/test_page_views.py",)
    ),
    "bt_solvers": Target(
        "engine/rankers/bt_solvers.py", ("tests/test_bt_kernel.py",), ("tests/test_rankers.py",)
    ),
    "bt": Target(
        "engine/rankers/bt.py",
        ("tests/test_bt_kernel.py", "tests/test_rankers.py"),
        ("tests/test_curves.py", "tests/test_resampling.py"),
    ),
    "cycles": Target(
        "engine/graphs/cycles.py",
        ("tests/test_cycles.py", "tests/test_triads.py"),
        ("tests/test_truncation.py", "tests/test_structure.py", "tests/test_graph_buckets.py"),
    ),
    "truncation": Target(
        "engine/graphs/truncation.py",
        ("tests/test_truncation.py",),
        (
            "tests/test_curves.py",
            "tests/test_graph_buckets.py",
            "tests/test_resampling.py",
            "tests/test_structure.py",
            "tests/test_keep_k_paths.py",
        ),
    ),
    "nontransitivity": Target(
        "engine/diagnostics/nontransitivity.py",
        ("tests/test_diagnostics_nontransitivity.py",),
        ("tests/test_diagnostics_cli.py", "tests/test_graph_buckets.py"),
    ),
    "leaderboard_view": Target(
        "engine/views/leaderboard_view.py",
        ("tests/app/test_leaderboard_view.py",),
        ("tests/app/test_page_views.py", "tests/test_leaderboard_cli.py"),
    ),
    "json_reader": Target(
        "engine/ingest/json_reader.py",
        ("tests/test_formats.py",),
        ("tests/test_ingest_limits.py", "tests/test_ingest.py"),
    ),
    "validation": Target(
        "engine/ingest/normalise.py",
        ("tests/test_verdicts.py",),
        ("tests/test_formats.py", "tests/test_csv_bulk.py", "tests/test_ingest.py"),
    ),
    "cache_leases": Target(
        "engine/judging/cache.py",
        ("tests/test_judging_hardening.py",),
        ("tests/test_judging_units.py", "tests/test_judging_resilience.py", "tests/test_judging_config.py"),
    ),
    "liveness": Target("engine/judging/liveness.py", ("tests/test_judging_hardening.py",)),
    "bootstrap": Target(
        "engine/ranking/bootstrap.py",
        ("tests/test_bootstrap.py", "tests/test_rankers.py"),
        ("tests/test_leaderboard_cli.py", "tests/test_resampling.py"),
    ),
    "count_query": Target(
        "engine/ranking/count_query.py", ("tests/test_count_query.py",), ("tests/test_count_rankers.py",)
    ),
    "count_board": Target(
        "engine/ranking/count_board.py",
        ("tests/test_count_rankers.py",),
        ("tests/test_count_query.py", "tests/test_leaderboard_cli.py"),
    ),
    "count_bootstrap": Target(
        "engine/ranking/count_bootstrap.py",
        ("tests/test_count_rankers.py",),
        ("tests/test_count_query.py", "tests/test_leaderboard_cli.py"),
    ),
}
"""Module name -> target. The fast test files are the module's own; a mutant they let through runs
the wider files too (other files that import the module) before it counts as a survivor. The files
the mutation work added are picked up automatically (``tests/test_mutation_kills_<module>.py``)."""

CMP_SWAP = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
ARITH_SWAP = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
NAME_SWAP = {
    "min": "max",
    "max": "min",
    "argmin": "argmax",
    "argmax": "argmin",
    "minimum": "maximum",
    "maximum": "minimum",
    "nanmin": "nanmax",
    "nanmax": "nanmin",
    "any": "all",
    "all": "any",
}
STRING_SWAP = {"higher": "lower", "lower": "higher", "left": "right", "right": "left"}
SMALL_FUNCTION_LINES = 12
SIGNAL_CALLS = {"os.kill", "os.killpg", "signal.signal", "signal.pthread_kill"}


@dataclass
class Mutant:
    """One planted change: where, which operator, and the byte span it replaces with ``text``."""

    module: str
    line: int
    op: str
    start: int
    end: int
    text: str
    diff: str = ""
    outcome: str = ""
    seconds: float = 0.0
    killed_by: str = ""


@dataclass
class ModuleResult:
    module: str
    path: str
    tests: list[str]
    candidates: int = 0
    clean_seconds: float = 0.0
    clean_ok: bool = True
    mutants: list[Mutant] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(m.outcome == outcome for m in self.mutants)


# -- finding mutants -----------------------------------------------------------------------------


def _skipped_nodes(tree: ast.AST) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, f-strings, raise and log messages."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                mark(first)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            for a in [
                *node.args.args,
                *node.args.kwonlyargs,
                *node.args.posonlyargs,
                node.args.vararg,
                node.args.kwarg,
            ]:
                if a is not None:
                    mark(a.annotation)
        if isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        if isinstance(node, (ast.JoinedStr, ast.Raise)):
            mark(node)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            mark(node)  # attribute docstrings
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr
            in {
                "debug",
                "info",
                "warning",
                "error",
                "exception",
            }
        ):
            mark(node)
        if isinstance(node, ast.Call) and ast.unparse(node.func) in SIGNAL_CALLS:
            mark(node)  # os.kill(pid, 0) -> os.kill(pid, 1) would signal a process this run never started
    return skip


def _function_spans(tree: ast.AST, names: tuple[str, ...]) -> list[tuple[int, int]]:
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in names
    ]


def _small_function_returns(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for fn in ast.walk(tree):
        small = (
            (fn.end_lineno or fn.lineno) - fn.lineno + 1 <= SMALL_FUNCTION_LINES
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            else False
        )
        if small:
            ids.update(id(n) for n in ast.walk(fn) if isinstance(n, ast.Return))
    return ids


def _replacements(node: ast.AST, small_returns: set[int]) -> list[tuple[str, ast.AST, str]]:
    """(operator, node whose span is replaced, replacement source) for every mutant of ``node``."""
    out: list[tuple[str, ast.AST, str]] = []

    def reprint(changed: ast.AST) -> str:
        return f"({ast.unparse(changed)})"

    if isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            if type(op) in CMP_SWAP:
                ops = list(node.ops)
                ops[k] = CMP_SWAP[type(op)]()
                out.append(("cmp", node, reprint(ast.Compare(node.left, ops, node.comparators))))
    elif isinstance(node, ast.BinOp) and type(node.op) in ARITH_SWAP:
        out.append(("arith", node, reprint(ast.BinOp(node.left, ARITH_SWAP[type(node.op)](), node.right))))
    elif isinstance(node, ast.AugAssign) and type(node.op) in ARITH_SWAP:
        out.append(
            ("arith", node, ast.unparse(ast.AugAssign(node.target, ARITH_SWAP[type(node.op)](), node.value)))
        )
    elif isinstance(node, ast.BoolOp):
        other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        out.append(("bool", node, reprint(ast.BoolOp(other, node.values))))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("bool", node, reprint(node.operand)))
    elif isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            out.append(("const", node, repr(not v)))
        elif isinstance(v, (int, float)):
            new = 1 if v == 0 else 0 if v == 1 else v + 1
            out.append(("const", node, f"({type(v)(new)!r})"))
        elif isinstance(v, str) and v in STRING_SWAP:
            out.append(("string", node, repr(STRING_SWAP[v])))
    elif isinstance(node, ast.Return) and node.value is not None and id(node) in small_returns:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            out.append(("return", node, "return None"))
    elif isinstance(node, ast.Name) and node.id in NAME_SWAP and isinstance(node.ctx, ast.Load):
        out.append(("minmax", node, NAME_SWAP[node.id]))
    elif isinstance(node, ast.Attribute) and node.attr in NAME_SWAP and isinstance(node.ctx, ast.Load):
        out.append(("minmax", node, f"{ast.unparse(node.value)}.{NAME_SWAP[node.attr]}"))
    elif isinstance(node, ast.keyword) and node.arg == "axis" and isinstance(node.value, ast.Constant):
        k = node.value.value
        if isinstance(k, int) and not isinstance(k, bool):
            out.append(("axis", node.value, f"({1 - k if k in (0, 1) else 0})"))
    return out


def find_mutants(name: str, target: Target) -> list[Mutant]:
    """Every mutant of the target's file (or its named functions), in source order, each one compiling."""
    source = (ROOT / target.path).read_bytes()
    tree = ast.parse(source)
    line_start = [0]
    for line in source.splitlines(keepends=True):
        line_start.append(line_start[-1] + len(line))
    skip = _skipped_nodes(tree)
    spans = _function_spans(tree, target.functions) if target.functions else None
    small_returns = _small_function_returns(tree)
    axis_constants = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg == "axis"}
    mutants: list[Mutant] = []
    seen: set[tuple[int, int, str]] = set()
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "lineno") and not isinstance(node, ast.keyword):
            continue
        if isinstance(node, ast.Constant) and id(node) in axis_constants:
            continue  # the axis operator owns these
        lineno = getattr(node, "lineno", None) or getattr(getattr(node, "value", None), "lineno", 0)
        if spans is not None and not any(a <= lineno <= b for a, b in spans):
            continue
        for op, span_node, text in _replacements(node, small_returns):
            start = line_start[span_node.lineno - 1] + span_node.col_offset
            end = line_start[span_node.end_lineno - 1] + span_node.end_col_offset
            key = (start, end, text)
            if key in seen:
                continue
            seen.add(key)
            mutated = source[:start] + text.encode() + source[end:]
            if mutated == source:
                continue
            try:
                compile(mutated, target.path, "exec")
            except SyntaxError:
                continue
            mutants.append(Mutant(name, span_node.lineno, op, start, end, text))
    mutants.sort(key=lambda m: (m.start, m.end, m.text))
    for m in mutants:
        m.diff = _diff(source, m, target.path)
    return mutants


def _diff(source: bytes, m: Mutant, path: str) -> str:
    mutated = source[: m.start] + m.text.encode() + source[m.end :]
    lines = difflib.unified_diff(
        source.decode().splitlines(), mutated.decode().splitlines(), path, path, n=0, lineterm=""
    )
    return "\n".join(line for line in lines if not line.startswith(("---", "+++", "@@")))


def sample(mutants: list[Mutant], name: str, seed: int, k: int) -> list[Mutant]:
    rng = random.Random(f"{seed}:{name}")
    if len(mutants) <= k:
        return list(mutants)
    picked = sorted(rng.sample(range(len(mutants)), k))
    return [mutants[i] for i in picked]


# -- running -------------------------------------------------------------------------------------


def test_files(name: str, target: Target) -> list[str]:
    files = list(target.tests)
    extra = ROOT / f"tests/test_mutation_kills_{name}.py"
    if extra.exists():
        files.insert(0, str(extra.relative_to(ROOT)))
    return files


def run_tests(files: list[str], timeout: float) -> tuple[str, float]:
    """'killed' | 'survived' | 'timeout', and the seconds the run took."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", *files]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "timeout", time.monotonic() - t0
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return ("survived" if rc == 0 else "killed"), time.monotonic() - t0


def run_module(
    name: str, target: Target, chosen: list[Mutant], candidates: int, wider: bool = True
) -> ModuleResult:
    files = test_files(name, target)
    result = ModuleResult(name, target.path, files, candidates=candidates)
    outcome, seconds = run_tests(files, timeout=900)
    result.clean_seconds, result.clean_ok = round(seconds, 1), outcome == "survived"
    print(
        f"[{name}] clean run {outcome} in {seconds:.0f} s; {len(chosen)} of {candidates} mutants", flush=True
    )
    if not result.clean_ok:
        return result
    path = ROOT / target.path
    original = path.read_bytes()
    timeout = 2 * seconds + 20
    try:
        for m in chosen:
            path.write_bytes(original[: m.start] + m.text.encode() + original[m.end :])
            try:
                m.outcome, m.seconds = run_tests(files, timeout)
                m.killed_by = "fast" if m.outcome != "survived" else ""
                if m.outcome == "survived" and target.wider and wider:
                    m.outcome, more = run_tests(list(target.wider), 900)
                    m.seconds += more
                    m.killed_by = "wider" if m.outcome != "survived" else ""
            finally:
                path.write_bytes(original)
            m.seconds = round(m.seconds, 1)
            print(f"[{name}] line {m.line} {m.op}: {m.outcome} ({m.seconds:.0f} s)", flush=True)
            result.mutants.append(m)
    finally:
        path.write_bytes(original)
    return result


# -- report --------------------------------------------------------------------------------------


def write_report(results: list[ModuleResult], out: Path, args: argparse.Namespace) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "seed": args.seed,
        "per_module": args.per_module,
        "survivors_of": args.survivors_of,
        "modules": [
            {
                **{k: v for k, v in asdict(r).items() if k != "mutants"},
                "killed": r.count("killed"),
                "survived": r.count("survived"),
                "timeouts": r.count("timeout"),
                "mutants": [asdict(m) for m in r.mutants],
            }
            for r in results
        ],
    }
    out.with_suffix(".json").write_text(json.dumps(data, indent=1))
    rows = [
        "| module | file | mutants | killed | timeouts | survived | kill rate |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    tot = [0, 0, 0, 0]
    for r in results:
        n, k, t, s = len(r.mutants), r.count("killed"), r.count("timeout"), r.count("survived")
        tot = [a + b for a, b in zip(tot, (n, k, t, s), strict=True)]
        rate = f"{100 * (k + t) / n:.0f} %" if n else ("clean run failed" if not r.clean_ok else "-")
        rows.append(f"| {r.module} | `{r.path}` | {n} | {k} | {t} | {s} | {rate} |")
    n, k, t, s = tot
    rows.append(f"| **total** | | {n} | {k} | {t} | {s} | {100 * (k + t) / max(n, 1):.0f} % |")
    lines = [
        f"# Mutation pass (seed {args.seed}, up to {args.per_module} per module)",
        "",
        *rows,
        "",
        "## Survivors",
        "",
    ]
    for r in results:
        for m in r.mutants:
            if m.outcome == "survived":
                lines += [
                    f"- `{r.path}:{m.line}` ({m.op})",
                    "  ```diff",
                    *("  " + d for d in m.diff.splitlines()),
                    "  ```",
                ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(rows))


def _load(paths: list[str]) -> list[ModuleResult]:
    by_name: dict[str, ModuleResult] = {}
    for p in paths:
        for mod in json.loads(Path(p).read_text())["modules"]:
            r = ModuleResult(
                mod["module"],
                mod["path"],
                mod["tests"],
                mod["candidates"],
                mod["clean_seconds"],
                mod["clean_ok"],
                [Mutant(**m) for m in mod["mutants"]],
            )
            by_name[r.module] = r
    order = [n for n in MODULES if n in by_name]
    return [by_name[n] for n in order]


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--per-module", type=int, default=16)
    ap.add_argument("--only", default="", help="comma-separated module names (default: all)")
    ap.add_argument(
        "--survivors-of", default=None, help="a previous report's JSON: re-run only its survivors"
    )
    ap.add_argument("--out", default="bench/out/mutation")
    ap.add_argument("--list", action="store_true", help="list the sampled mutants and exit")
    ap.add_argument(
        "--combine",
        nargs="+",
        default=None,
        help="reports' JSON files to merge (a later file's module replaces an earlier one's) into --out",
    )
    args = ap.parse_args()
    if args.combine:
        write_report(_load(args.combine), Path(args.out), args)
        return
    signal.signal(signal.SIGTERM, _interrupt)  # a plain kill restores the file too
    names = [n for n in args.only.split(",") if n] or list(MODULES)
    previous: dict[str, list[dict]] | None = None
    if args.survivors_of:
        previous = {
            mod["module"]: mod["mutants"]
            for mod in json.loads(Path(args.survivors_of).read_text())["modules"]
        }
    results: list[ModuleResult] = []
    try:
        for name in names:
            target = MODULES[name]
            every = find_mutants(name, target)
            chosen = sample(every, name, args.seed, args.per_module)
            carried: list[Mutant] = []
            if previous is not None:  # the 'after' pass: re-run the survivors, keep the other outcomes
                if name not in previous:
                    continue
                # matched by line, operator and diff among all mutants of the file as it is now (a fix
                # elsewhere in the file may have moved byte offsets or changed the sample)
                here = {(m.line, m.op, m.diff): m for m in every}
                carried = [Mutant(**b) for b in previous[name] if b["outcome"] != "survived"]
                wanted = [
                    (b["line"], b["op"], b["diff"]) for b in previous[name] if b["outcome"] == "survived"
                ]
                for key in wanted:
                    if key not in here:
                        print(
                            f"[{name}] survivor at line {key[0]} ({key[1]}) no longer exists", file=sys.stderr
                        )
                chosen = [here[k] for k in wanted if k in here]
            if args.list:
                print(f"== {name}: {len(chosen)} of {len(every)}")
                for m in chosen:
                    print(f"  {m.line} {m.op}: {m.diff}")
                continue
            # a before-pass survivor already passed the wider files, which no one changed: the after
            # pass runs only the fast files and the new kill file
            result = run_module(name, target, chosen, len(every), wider=previous is None)
            result.mutants = sorted([*carried, *result.mutants], key=lambda m: (m.start, m.end, m.text))
            results.append(result)
            write_report(results, Path(args.out), args)
    except KeyboardInterrupt:
        print("interrupted; files restored; partial report written", file=sys.stderr)
        if results:
            write_report(results, Path(args.out), args)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
