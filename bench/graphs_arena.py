"""Benchmark: per-graph analysis on an arena-shaped log (one model pair per prompt), as CLI processes.

    python bench/graphs_arena.py [--battles 100000] [--models 80] [--tournaments 0] [--seed 0]
                                 [--commands graphs,heatmap,overview,keep-k]

Writes a battle log (``--battles`` rows, each a fresh prompt with one random pair of ``--models``
models, winners from a Bradley-Terry model with 10 % ties), plus ``--tournaments`` per-prompt
tournaments of 6 models each (so some graphs can hold a cycle), imports it into a fresh store and
runs each command under ``/usr/bin/time -v``, printing wall seconds, peak RSS and the load average.
Speed is measured, never asserted; the machine is shared, so read the load beside every number.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = {
    "graphs": ["graphs"],
    "heatmap": ["diagnose", "--table", "heatmap", "--no-cache"],
    "overview": ["diagnose", "--table", "overview", "--no-cache"],
    "cycles": ["diagnose", "--table", "cycles", "--no-cache"],
    "keep-k": ["leaderboard", "--keep-k", "100"],
}


def battle_log(battles: int, models: int, tournaments: int, seed: int) -> pd.DataFrame:
    """One pair per prompt (arena shape), then small per-prompt tournaments."""
    rng = np.random.default_rng(seed)
    names = np.array([f"model-{i:03d}" for i in range(models)], dtype=object)
    skill = rng.normal(0, 1, models)
    a = rng.integers(0, models, battles)
    b = (a + rng.integers(1, models, battles)) % models
    p = 1 / (1 + np.exp(skill[b] - skill[a]))
    u = rng.random(battles)
    winner = np.where(u < 0.1, "tie", np.where(rng.random(battles) < p, "A", "B"))
    frames = [pd.DataFrame({"prompt_id": [f"b{i}" for i in range(battles)], "model_a": names[a],
                            "model_b": names[b], "winner": winner})]
    rows = []
    for t in range(tournaments):
        pick = rng.choice(models, 6, replace=False)
        for i in range(6):
            for j in range(i + 1, 6):
                pa = 1 / (1 + np.exp(skill[pick[j]] - skill[pick[i]]))
                rows.append((f"t{t}", names[pick[i]], names[pick[j]], "A" if rng.random() < pa else "B"))
    if rows:
        frames.append(pd.DataFrame(rows, columns=["prompt_id", "model_a", "model_b", "winner"]))
    return pd.concat(frames, ignore_index=True)


def timed(cmd: list[str], env: dict) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MB, exit code, first stderr note) of a CLI process."""
    out = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "engine", *cmd], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    err = out.stderr
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
    secs = (int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))) if wall else float("nan")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    note = next((ln for ln in err.splitlines() if ln.startswith(("note:", "error"))), "")
    return secs, int(rss.group(1)) / 1024 if rss else float("nan"), out.returncode, note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--battles", type=int, default=100_000)
    ap.add_argument("--models", type=int, default=80)
    ap.add_argument("--tournaments", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--commands", default="graphs,heatmap,overview,keep-k")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "arena.csv"
        battle_log(args.battles, args.models, args.tournaments, args.seed).to_csv(path, index=False)
        env = {**os.environ, "LENS_DB": str(Path(tmp) / "lens.duckdb")}
        secs, rss, rc, note = timed(["import", "--dataset", "arena", str(path)], env)
        print(f"load average: {os.getloadavg()}")
        print("| command | wall s | peak RSS MB | exit | note |\n|---|---|---|---|---|")
        print(f"| import | {secs:.1f} | {rss:.0f} | {rc} | {note[:80]} |")
        for name in args.commands.split(","):
            cmd = [*COMMANDS[name][:1], "--dataset", "arena", *COMMANDS[name][1:], "--format", "csv"]
            secs, rss, rc, note = timed(cmd, env)
            print(f"| {' '.join(cmd)} | {secs:.1f} | {rss:.0f} | {rc} | {note[:120]} |", flush=True)
        print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
