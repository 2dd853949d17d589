"""Check our style-controlled and plain Bradley-Terry boards (ratings, beta, sandwich intervals) against
arena-rank 0.1.1 itself, run in its own virtual environment on the same battles.

    python -m venv /work/venvs/arena-rank && /work/venvs/arena-rank/bin/pip install arena-rank==0.1.1
    python bench/check_arena_rank.py                       # vicuna80 (features counted from its answers)
    python bench/check_arena_rank.py --data vicuna80,1mx100 --md docs/notes/stylefit-24.md

For each data set: a store (the shipped vicuna80, whose style counts come from its stored answer texts;
or bench/battlegen.py's arena log with explicit per-side style columns, imported), then our CLI as a
process (``leaderboard --style-control --format json`` and ``leaderboard --ci sandwich --format json``),
then the battles exactly as our fits see them (one per vote, as its first verdict names them, with its
eight counts) written to Parquet, and bench/arena_rank_runner.py on them in arena-rank's venv. Reported:
max |ours - arena-rank| of ratings, lower and upper bounds (natural-log units; arena-rank's display
units 1000 + 400/ln 10 * r are 173.7 times these) and coefficients, for arena-rank's default L-BFGS
stopping rule (ftol = gtol = 1e-9), for a tight refit (tolerances 0, up to 5,000 iterations; hours at a
million battles on this machine, ``--no-tight`` skips it), which tells its stopping error from a
difference in the model, and arena-rank's own gradient and sandwich evaluated at our parameters (a
gradient of about 0 there: our point is its optimum). Target: 1e-6.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import battlegen  # noqa: E402

ELO = 400.0 / math.log(10.0)
Z = 1.959963984540054
FEATURES = ("tokens", "headers", "lists", "bold")


def engine(store: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", "--db", str(store), *args], cwd=REPO,
                          capture_output=True, text=True, check=True)


def prepare(name: str, work: Path) -> tuple[Path, str]:
    """A store holding the data set; returns (store, dataset name)."""
    store = work / f"check-{name}.duckdb"
    if name == "vicuna80":
        if not store.exists():
            engine(store, "datasets")
        return store, "vicuna80"
    n, models = battlegen_size(name)
    pq = work / f"arena-style-{n}x{models}.parquet"
    if not pq.exists():
        battlegen.write("arena", pq, n, models, style=True)
    if not store.exists():
        engine(store, "import", str(pq), "--dataset", "bench", "--skip-invalid")
    return store, "bench"


def battlegen_size(name: str) -> tuple[int, int]:
    """``1mx100`` -> (1000000, 100)."""
    size, _, models = name.partition("x")
    mult = {"k": 1_000, "m": 1_000_000}.get(size[-1].lower(), 1)
    return int(float(size.rstrip("kmKM")) * mult), int(models or 100)


def battles_as_fitted(store: Path, dataset: str, out_dir: Path) -> tuple[Path, Path]:
    """The votes as our fits see them, as arena-rank's input: all votes (plain) and those with all eight
    counts (style), model_a as the vote's first verdict names it."""
    from engine.rankers.votes import votes as make_votes
    from engine.ranking.style_board import style_battles
    from engine.ranking.vote_query import store_vote_rows
    from engine.store.connection import Store

    s = Store(store, read_only=True)
    try:
        rows = store_vote_rows(s, dataset, style=True)
    finally:
        s.close()
    v = make_votes(rows)
    a, b, y, counts = style_battles(rows, v)
    names = np.asarray(rows.models, dtype=object)
    frame = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                          "winner": np.where(y == 1, "model_a", np.where(y == 0, "model_b", "tie"))})
    for k, col in enumerate(f"{f}_{side}" for side in "ab" for f in FEATURES):
        frame[col] = counts[:, k]
    plain, style = out_dir / f"{dataset}-plain.parquet", out_dir / f"{dataset}-style.parquet"
    frame[["model_a", "model_b", "winner"]].to_parquet(plain)
    frame[np.isfinite(counts).all(axis=1)].reset_index(drop=True).to_parquet(style)
    return plain, style


def ours(store: Path, dataset: str) -> dict:
    """Our CLI's JSON boards (style-controlled, plain with sandwich intervals) and their wall times."""
    out = {}
    for key, args in (("style", ["--style-control"]), ("plain", ["--ci", "sandwich"])):
        t0 = time.perf_counter()
        r = engine(store, "leaderboard", "--dataset", dataset, "--format", "json", *args)
        out[key] = json.loads(r.stdout)
        out[key + "_seconds"] = time.perf_counter() - t0
    return out


def our_parameters(board: dict, fit: str, path: Path) -> Path:
    """Our fit's natural-log strengths (sum zero) and beta, for arena-rank's gradient at our point."""
    t = pd.DataFrame(board["table"])
    theta = t["score"].to_numpy(np.float64)
    theta = theta - theta.mean()  # ratings of sum zero, arena-rank's gauge (any scale offset dropped)
    entry = {"competitors": t["model"].tolist(), "theta": theta.tolist()}
    if fit == "style":
        entry["beta"] = [board["style"]["features"][f]["beta"] for f in FEATURES]
    path.write_text(json.dumps({fit: entry}))
    return path


def peer(venv: Path, parquet: Path, only: str, out: Path, tight: bool, at: Path | None = None) -> dict:
    cmd = [str(venv / "bin" / "python"), str(BENCH / "arena_rank_runner.py"), str(parquet), str(out),
           f"--only={only}"] + (["--tight"] if tight else []) + ([f"--at={at}"] if at else [])
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=REPO)
    res = json.loads(out.read_text())
    res["process_seconds"] = time.perf_counter() - t0
    return res


def diffs(board: dict, ar: dict) -> dict[str, float]:
    """max |ours - arena-rank| (natural-log units) of ratings, bounds and, for the style fit, beta."""
    t = pd.DataFrame(board["table"]).set_index("model")
    comp = ar["competitors"]
    r = (np.asarray(ar["ratings"]) - 1000.0) / ELO
    lo = (np.asarray(ar["rating_lower"]) - 1000.0) / ELO
    hi = (np.asarray(ar["rating_upper"]) - 1000.0) / ELO
    out = {"ratings": float(np.abs(t.loc[comp, "score"].to_numpy() - r).max()),
           "lower": float(np.abs(t.loc[comp, "ci_low"].to_numpy() - lo).max()),
           "upper": float(np.abs(t.loc[comp, "ci_high"].to_numpy() - hi).max())}
    if "coeffs" in ar:
        feats = board["style"]["features"]
        mine = np.array([feats[f]["beta"] for f in FEATURES])
        out["beta"] = float(np.abs(mine - np.asarray(ar["coeffs"])).max())
        # beta's interval is not compared: arena-rank reports none, and ours takes the ridge's curvature
        # into the Hessian (engine/rankers/sandwich.py), which its ratings' matrix leaves out
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="vicuna80", help="vicuna80 and/or battlegen sizes, e.g. 1mx100")
    ap.add_argument("--venv", default="/work/venvs/arena-rank", type=Path)
    ap.add_argument("--work", default="/tmp/lens-arena-check", type=Path)
    ap.add_argument("--no-tight", action="store_true", help="skip arena-rank's tight refits")
    ap.add_argument("--md", help="append the table to this Markdown file")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    lines = ["| data | fit | arena-rank run | ratings | lower | upper | beta | beta lower | ours (s) | "
             "arena-rank (s) |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in filter(None, a.data.split(",")):
        store, dataset = prepare(name, a.work)
        mine = ours(store, dataset)
        plain_pq, style_pq = battles_as_fitted(store, dataset, a.work)
        for fit, pq in (("style", style_pq), ("plain", plain_pq)):
            at = our_parameters(mine[fit], fit, a.work / f"ours-{name}-{fit}.json")
            ar = peer(a.venv, pq, fit, a.work / f"ar-{name}-{fit}.json", tight=not a.no_tight, at=at)
            runs = [(fit, "default (ftol = gtol = 1e-9)")]
            if not a.no_tight and f"{fit}_tight" in ar:
                runs.append((f"{fit}_tight", "tight (tolerances 0)"))
            if f"{fit}_at_ours" in ar:
                grad = ar[f"{fit}_at_ours"]["max_abs_gradient"]
                runs.append((f"{fit}_at_ours", f"its sandwich at our point (its gradient there {grad:.1e})"))
            for key, label in runs:
                d = diffs(mine[fit], ar[key])
                cells = [f"{d[k]:.1e}" if k in d else "" for k in ("ratings", "lower", "upper", "beta",
                                                                     "beta_lower")]
                lines.append(f"| {name} ({ar['rows']:,} battles) | {fit} | {label} | " + " | ".join(cells)
                             + f" | {mine[fit + '_seconds']:.1f} | {ar[key]['seconds']:.1f} |")
                print(lines[-1], flush=True)
    table = "\n".join(lines)
    print()
    print(table)
    if a.md:
        with open(a.md, "a", encoding="utf-8") as fh:
            fh.write(f"\n`python bench/check_arena_rank.py --data {a.data}` "
                     f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; max |ours - arena-rank| in "
                     "natural-log units; seconds: our CLI process, arena-rank's fit + sandwich call)\n\n")
            fh.write(table + "\n")


if __name__ == "__main__":
    main()
