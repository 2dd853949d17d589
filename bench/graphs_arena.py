"""Benchmark: per-graph analysis on an arena-shaped log (one model pair per prompt), as CLI processes.

    python bench/graphs_arena.py [--battles 100000] [--models 80] [--tournaments 0] [--seed 0]
                                 [--commands graphs,heatmap,overview,keep-k] [--base OLD]

Writes bench/battlegen.py's arena log (``--battles`` rows over ``--models`` models, one pair per
prompt) plus ``--tournaments`` round robins of 6 models (so some graphs can hold a cycle), imports it
into a fresh store and runs each command as a measured process (bench/procmeter.py: wall seconds,
peak RSS of the process tree, a memory cap), printing the load average beside the table.
Speed is measured, never asserted; the machine is shared, so read the load beside every number.
``--base OLD`` runs each command in the checkout OLD too, on the same store, just before this one, and
says whether the two printed the same bytes (stdout and stderr).
"""

from __future__ import annotations

import argparse
import filecmp
import itertools
import os
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

import battlegen  # noqa: E402
from procmeter import measure  # noqa: E402

COMMANDS = {
    "graphs": ["graphs"],
    "heatmap": ["diagnose", "--table", "heatmap", "--no-cache"],
    "overview": ["diagnose", "--table", "overview", "--no-cache"],
    "cycles": ["diagnose", "--table", "cycles", "--no-cache"],
    "keep-k": ["leaderboard", "--keep-k", "100"],
}


def write_log(path: Path, battles: int, models: int, tournaments: int, seed: int) -> int:
    """The arena log of bench/battlegen.py (one pair per prompt), then ``tournaments`` round robins of
    its first 6 models in both orders (graphs that can hold a cycle); returns the row count."""
    chunks = battlegen.arena_chunks(battles, models, seed, short_winners=True)
    if tournaments:
        small = (
            t.drop_columns(["judge", "order"]) for t in battlegen.tournament_chunks(tournaments, 6, seed)
        )
        arena = (t.drop_columns(["battle_id", "tstamp"]) for t in chunks)
        chunks = itertools.chain(arena, small)
    return battlegen.write_tables(chunks, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battles", type=int, default=100_000)
    ap.add_argument("--models", type=int, default=80)
    ap.add_argument("--tournaments", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--commands", default="graphs,heatmap,overview,keep-k")
    ap.add_argument("--cap-gb", type=float, default=8.0)
    ap.add_argument("--base", type=Path, help="another checkout: each command runs there first, same store")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "arena.parquet"
        write_log(path, args.battles, args.models, args.tournaments, args.seed)
        env = {**os.environ, "LENS_DB": str(Path(tmp) / "lens.duckdb")}
        engine = [sys.executable, "-m", "engine"]
        print(f"load average: {os.getloadavg()}")
        print("| command | tree | wall s | peak RSS GB | status | output |\n|---|---|---|---|---|---|")
        trees = ([("base", args.base)] if args.base else []) + [("this", ROOT)]
        for step, cmd in enumerate([["import", "--dataset", "arena", str(path)]] + [
                [*COMMANDS[n][:1], "--dataset", "arena", *COMMANDS[n][1:], "--format", "csv"]
                for n in args.commands.split(",")]):
            outs = []
            for label, tree in trees[-1:] if step == 0 else trees:  # one import, into the store both read
                out = Path(tmp) / f"out-{step}-{label}.txt"
                run = measure([*engine, *cmd], cap_gb=args.cap_gb, timeout_s=3600, cwd=tree, env=env,
                              out_path=out)
                outs.append(out)
                same = "" if len(outs) < 2 else (
                    "same bytes" if all(filecmp.cmp(a.with_suffix(x), b.with_suffix(x), shallow=False)
                                        for a, b in [outs] for x in (".txt", ".err")) else "DIFFERENT")
                print(f"| {' '.join(cmd[:4])} | {label} | {run.wall_s:.1f} | {run.peak_gb:.2f} "
                      f"| {run.status} | {same} |", flush=True)
        print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
