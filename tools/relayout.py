"""Issue 16's folder move: engine's top-level modules into packages by layer, and the import rewrite.

    python tools/relayout.py --move       # git mv the modules (done once, on main)
    python tools/relayout.py --rewrite    # rewrite old ``engine.X`` imports/paths in every file

``--rewrite`` is idempotent: run it after merging a branch written against the old layout. It turns
every relative import inside engine/ into an absolute one (resolved where the file used to live),
then maps old dotted names and ``engine/X.py`` paths to their new places.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MOVES: dict[str, str] = {
    # the store: where verdicts live, its schema and migrations, datasets as stored
    "store": "store.connection",
    "schema": "store.schema",
    "attached": "store.attached",
    "dataset_choices": "store.datasets",
    # verdict input: files, formats, validation, staging, the importer, shipped and synthetic data
    "ingest": "ingest.importer",
    "verdicts": "ingest.verdicts",
    "verdict_files": "ingest.verdict_files",
    "staging": "ingest.staging",
    "line_reader": "ingest.line_reader",
    "import_limits": "ingest.limits",
    "csv_cells": "ingest.csv_cells",
    "shipped": "ingest.shipped",
    "synthetic": "ingest.synthetic",
    "formats": "ingest.formats",
    # tournament graphs and what is measured on them (cycles, triads, structure, keep-K, denoising)
    "graphs": "graphs.stack",
    "graph_buckets": "graphs.buckets",
    "cycles": "graphs.cycles",
    "triads": "graphs.triads",
    "structure": "graphs.structure",
    "denoise": "graphs.denoise",
    "truncation": "graphs.truncation",
    # ranking with the rankers: votes from the store, leaderboard, intervals, distances, references
    "leaderboard": "ranking.leaderboard",
    "bootstrap": "ranking.bootstrap",
    "count_bootstrap": "ranking.count_bootstrap",
    "distances": "ranking.distances",
    "reference": "ranking.reference",
    "vote_query": "ranking.vote_query",
    # experiments: the resampling protocols, curves, the theory lab, their inputs and result cache
    "resampling": "experiments.resampling",
    "curves": "experiments.curves",
    "simulate": "experiments.simulate",
    "protocol_inputs": "experiments.protocol_inputs",
    "results_cache": "experiments.results_cache",
    # page-facing views: what the app's pages (and exports) show, computed here, drawn there
    "appstate": "views.appstate",
    "cycles_view": "views.cycles_view",
    "dataview": "views.dataview",
    "inspector": "views.inspector",
    "judges_view": "views.judges_view",
    "leaderboard_view": "views.leaderboard_view",
    "matrix_view": "views.matrix_view",
    "theory_view": "views.theory_view",
    "truncation_view": "views.truncation_view",
    "viz": "views.viz",
    "graph_html": "views.graph_html",
    "labels": "views.labels",
    "exports": "views.exports",
}
DIRS = {"migrations": "store/migrations"}
PACKAGES = sorted({new.split(".")[0] for new in MOVES.values()})
# old module names that are now package names: ``engine.graphs.X`` is new only when X is a submodule
AMBIGUOUS = {old for old in MOVES if old in PACKAGES}
SUBMODULES = {p: {new.split(".")[1] for new in MOVES.values() if new.split(".")[0] == p} | {"migrations"}
              for p in PACKAGES}
REVERSE = {new: old for old, new in MOVES.items()}


def map_dotted(dotted: str) -> str:
    """``engine.cycles.x`` → ``engine.graphs.cycles.x``; names already in the new layout unchanged."""
    parts = dotted.split(".")
    if parts[0] != "engine" or len(parts) < 2:
        return dotted
    head = parts[1]
    if head in AMBIGUOUS and len(parts) > 2 and parts[2] in SUBMODULES[head]:
        return dotted  # already new
    if head in MOVES:
        return ".".join(["engine", *MOVES[head].split("."), *parts[2:]])
    return dotted


def old_module_of(path: Path) -> str:
    """The dotted module a file under engine/ was before the move (its present name if not moved)."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    dotted = ".".join(parts)
    sub = dotted.removeprefix("engine.")
    for new, old in REVERSE.items():
        if sub == new or sub.startswith(new + "."):
            return "engine." + old + sub[len(new):]
    return dotted


REL = re.compile(r"^(\s*)from\s+(\.+)([\w.]*)\s+import\s+", re.M)
FROM_ENGINE = re.compile(r"^(\s*)from engine import ([^\n(]+)$", re.M)
DOTTED = re.compile(r"(?<![\w.])engine(?:\.\w+)+")
PATH = re.compile(r"(?<![\w/])engine/([\w/]+)(\.py|/)?")


def absolutise(text: str, path: Path) -> str:
    """Relative imports of an engine file → absolute, resolved where the file used to live."""
    me = old_module_of(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]

    def fix(m: re.Match) -> str:
        base = package.split(".")
        base = base[: len(base) - (len(m.group(2)) - 1)]
        mod = ".".join(base + ([m.group(3)] if m.group(3) else []))
        return f"{m.group(1)}from {mod} import "

    return REL.sub(fix, text)


def split_from_engine(text: str) -> str:
    """``from engine import ingest, cli`` → one line per name at its new place."""

    def fix(m: re.Match) -> str:
        indent, names = m.group(1), m.group(2).split("#")[0]
        out = []
        for item in names.split(","):
            item = item.strip()
            if not item:
                continue
            name, _, alias = item.partition(" as ")
            name, alias = name.strip(), alias.strip() or name.strip()
            if name in MOVES:
                pkg, _, mod = MOVES[name].rpartition(".")
                out.append(f"{indent}from engine.{pkg} import {mod}" + (f" as {alias}" if alias != mod else ""))
            else:
                out.append(f"{indent}from engine import {name}" + (f" as {alias}" if alias != name else ""))
        return "\n".join(out)

    return FROM_ENGINE.sub(fix, text)


def map_path(m: re.Match) -> str:
    """``engine/cycles.py`` → ``engine/graphs/cycles.py``; ``engine/migrations/`` → its new folder."""
    parts, suffix = m.group(1).split("/"), m.group(2) or ""
    if parts[0] in DIRS:
        return "engine/" + "/".join([DIRS[parts[0]], *parts[1:]]) + suffix
    return "engine/" + "/".join(map_dotted("engine." + ".".join(parts)).split(".")[1:]) + suffix


FROM_IMPORT = re.compile(r"^(\s*from )(engine(?:\.\w+)+)( import )(\([^)]*\)|[^\n]*)", re.M)


def map_from_import(m: re.Match) -> str:
    """``from engine.graphs import stack`` is new (a submodule); ``from engine.graphs import X`` old."""
    module, names = m.group(2), m.group(4)
    parts = module.split(".")
    if len(parts) == 2 and parts[1] in AMBIGUOUS:
        imported = {n.strip().split(" ")[0] for n in names.strip("()").split("#")[0].split(",") if n.strip()}
        if imported and imported <= SUBMODULES[parts[1]]:
            return m.group(0)
    return m.group(1) + map_dotted(module) + m.group(3) + names


def rewrite_text(text: str, path: Path) -> str:
    """Every old engine name in one file → its new place."""
    if path.suffix == ".py" and path.is_relative_to(ROOT / "engine"):
        text = absolutise(text, path)
    text = FROM_IMPORT.sub(map_from_import, text)
    marked = FROM_IMPORT.sub(lambda m: m.group(0).replace("engine.", "\0ENGINE\0", 1), text)
    marked = DOTTED.sub(lambda m: map_dotted(m.group(0)), marked)
    text = split_from_engine(marked.replace("\0ENGINE\0", "engine."))
    text = PATH.sub(map_path, text)
    return text


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split()
    return [ROOT / f for f in out if f.endswith((".py", ".md", ".toml", ".txt", ".cfg", ".sh"))
            and not f.startswith(("tools/relayout.py", "CHANGELOG"))]


def rewrite() -> list[Path]:
    changed = []
    for p in tracked_files():
        if not p.is_file():
            continue
        old = p.read_text(encoding="utf-8")
        new = rewrite_text(old, p)
        if new != old:
            p.write_text(new, encoding="utf-8")
            changed.append(p)
    return changed


def move() -> None:
    eng = ROOT / "engine"
    for pkg in PACKAGES:
        (eng / pkg).mkdir(exist_ok=True)
    for old, new in MOVES.items():
        src = eng / f"{old}.py" if (eng / f"{old}.py").is_file() else eng / old
        dst = eng / (new.replace(".", "/") + ("" if src.is_dir() else ".py"))
        dst.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", str(src), str(dst)], cwd=ROOT, check=True)
    for old, new in DIRS.items():
        subprocess.run(["git", "mv", str(eng / old), str(eng / new)], cwd=ROOT, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--move", action="store_true")
    ap.add_argument("--rewrite", action="store_true")
    a = ap.parse_args(argv)
    if a.move:
        move()
    if a.rewrite:
        for p in rewrite():
            print(p.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
