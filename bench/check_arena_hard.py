"""Check ``leaderboard --baseline`` against arena-hard-auto's own arithmetic on the same judgment files.

Three computations of each model's win rate against the baseline, on the same Arena-Hard judgment
files (``model_judgment/<judge>/<model>.jsonl``):

- ours: the CLI as a process (``import``, then ``leaderboard --baseline B --bootstrap 100 --format
  json``);
- ``v0.1 re-implemented``: arena-hard-auto v0.1's show_result arithmetic written here from reading its
  code (never copied): each record's game 1 as a battle (baseline as model_a), game 2 reversed, a
  ``>>`` label repeated 3 times, an unparsed label dropped; every battle doubled, a tie once won and
  once lost; an unpenalised logistic regression on +-ln 10 columns (solved here by Newton's method);
  Elo = 400 * coefficient + 1000 moved so that the baseline has 1000; win rate 1 / (1 + 10^((Elo_b -
  Elo_m) / 400)); intervals: 2.5 and 97.5 percentiles over 100 fits on battle rows drawn with
  replacement. Also v2's point estimate (the mean of the per-battle scores of a model, which v2 reports
  through the mean of 100 bootstrap means);
- ``peer`` (``--peer-repo`` and ``--peer-python``): arena-hard-auto's own functions at its v0.1 commit
  (``show_result.get_battles_from_row``, ``utils_math.compute_mle_elo``, ``get_bootstrap_result``,
  ``predict_win_rate``) run in its own virtual environment, imported from a checkout, never from ours.

Point estimates are compared to 1e-6 (exit status 1 beyond); bootstrap intervals draw different
resamples (numpy's global state in the peer, our generator here), so they are compared in
distribution only: the widths are printed side by side.

Usage::

    python bench/check_arena_hard.py FILE... --baseline gpt-4-0314 [--baseline-model]
    python bench/check_arena_hard.py --synthetic 8 --baseline base   # 8 models x 500 questions, seeded
    ... --peer-repo /tmp/ah-v01 --peer-python /work/venvs/arena-hard/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
TOLERANCE = 1e-6


# --- arena-hard-auto v0.1's show_result arithmetic, re-implemented ---------------------------------

def v01_battles(records: list[dict], baseline: str, weight: int = 3) -> list[tuple[str, str, str]]:
    """(model_a, model_b, winner) rows: model_a is always the baseline; game 1 showed it as A, game 2 as
    B; ``>>`` gives ``weight`` rows, an unknown or missing label none."""
    out = []
    for r in records:
        games = r["games"]
        for k, game in enumerate(games[:2]):
            label = (game or {}).get("score")
            if label not in LABELS:
                continue
            if label == "A=B":
                winner = "tie"
            else:
                shown_a_won = label.startswith("A")
                baseline_won = shown_a_won if k == 0 else not shown_a_won
                winner = "model_a" if baseline_won else "model_b"
            times = weight if ">>" in label else 1
            out += [(r.get("baseline") or baseline, r["model"], winner)] * times
    return out


def v01_elo(battles: list[tuple[str, str, str]], baseline: str) -> dict[str, float]:
    """The doubled-battle logistic regression (no penalty, no intercept) solved by Newton's method with
    the baseline's coefficient held at 0 (the fit is free up to a shift, which the anchor removes);
    Elo = 400 c + 1000, the baseline at 1000. Where no finite maximum exists (a resample in which a
    model never loses) the iterations run off towards it, as the peer's unpenalised solver does."""
    models = sorted({m for a, b, _ in battles for m in (a, b)})
    free = [m for m in models if m != baseline]
    col = {m: k for k, m in enumerate(free)}
    n = len(battles)
    X = np.zeros((2 * n, len(free)))
    Y = np.zeros(2 * n)
    for i, (a, b, w) in enumerate(battles):
        for j in (i, i + n):
            if a in col:
                X[j, col[a]] += np.log(10.0)
            if b in col:
                X[j, col[b]] -= np.log(10.0)
        Y[i] = Y[i + n] = 1.0 if w == "model_a" else 0.0
        if w == "tie":
            Y[i] = 1.0  # the first copy of a tie is a win of model_a, the second a loss
    c = np.zeros(len(free))
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-(X @ c)))
        grad = X.T @ (p - Y)
        hess = (X * (p * (1.0 - p))[:, None]).T @ X
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]  # singular only where the MLE is at infinity
        c -= step
        if np.max(np.abs(step)) < 1e-13:
            break
    return {baseline: 1000.0, **{m: 400.0 * c[col[m]] + 1000.0 for m in free}}


def win_rate(elo_model: float, elo_baseline: float) -> float:
    return 1.0 / (1.0 + 10.0 ** ((elo_baseline - elo_model) / 400.0))


def v01_scores(records: list[dict], baseline: str, rounds: int, seed: int) -> dict[str, tuple]:
    """Per model: (win rate, low, high) as v0.1's show_result computes them (unrounded)."""
    battles = v01_battles(records, baseline)
    elo = v01_elo(battles, baseline)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(rounds):
        pick = rng.integers(0, len(battles), len(battles))
        boots.append(v01_elo([battles[i] for i in pick], baseline))
    out = {}
    for m in elo:
        col = np.array([b.get(m, np.nan) for b in boots])
        lo, hi = np.nanpercentile(col, [2.5, 97.5])
        out[m] = (win_rate(elo[m], 1000.0), win_rate(lo, 1000.0), win_rate(hi, 1000.0))
    return out


def v2_means(records: list[dict], weight: int = 3) -> dict[str, float]:
    """v2's per-battle scores of the model: game 2 as labelled, game 1 mirrored, ``>>`` ``weight``
    times, a tie 0.5; the plain mean per model (v2 reports the mean of bootstrap means of these)."""
    pts: dict[str, list[float]] = {}
    for r in records:
        games = r["games"]
        if any(g is None or g.get("score") not in LABELS for g in games[:2]):
            continue  # v2 drops a record with a null game
        for k, g in enumerate(games[:2]):
            label = g["score"]
            model_shown_a = k == 1
            s = 0.5 if label == "A=B" else float(label.startswith("A") == model_shown_a)
            pts.setdefault(r["model"], []).extend([s] * (weight if ">>" in label else 1))
    return {m: float(np.mean(v)) for m, v in pts.items()}


# --- the peer itself, in its own environment ---------------------------------------------------------

PEER_DRIVER = r"""
import json, sys
repo, baseline, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, repo)
import numpy as np, pandas as pd
from show_result import get_battles_from_row
from utils_math import compute_mle_elo, get_bootstrap_result, predict_win_rate
frames = [pd.read_json(f, lines=True) for f in sys.argv[4:]]
judgments = pd.concat(frames, ignore_index=True)
if "question_id" not in judgments.columns:
    judgments["question_id"] = judgments["uid"]
rows = judgments.apply(lambda r: get_battles_from_row(r, False, 3, baseline, None), axis=1)
battles = pd.DataFrame(rows[rows.map(len) > 0].explode().tolist())
elo = compute_mle_elo(battles, baseline_model=baseline)
point = predict_win_rate(elo.to_dict())[baseline].fillna(0.5)
try:  # on a few battles a resample can hold one outcome only, which the peer's regression refuses
    boot = get_bootstrap_result(battles, compute_mle_elo, rounds, baseline)
    low = predict_win_rate({m: np.percentile(boot[m], 2.5) for m in elo.index})[baseline].fillna(0.5)
    high = predict_win_rate({m: np.percentile(boot[m], 97.5) for m in elo.index})[baseline].fillna(0.5)
except ValueError as exc:
    print(f"peer bootstrap: {exc}", file=sys.stderr)
    low = high = point * float("nan")
print(json.dumps({m: [float(point[m]), float(low[m]), float(high[m])] for m in elo.index}))
"""


def peer_scores(python: str, repo: str, files: list[Path], baseline: str, rounds: int) -> dict[str, list]:
    paths = [str(Path(f).resolve()) for f in files]
    out = subprocess.run([python, "-c", PEER_DRIVER, repo, baseline, str(rounds), *paths],
                         capture_output=True, text=True, cwd=repo, check=True)
    for line in out.stderr.splitlines():
        if line.startswith("peer bootstrap:"):
            print(line)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- ours: the CLI as a process ----------------------------------------------------------------------

def our_scores(files: list[Path], baseline: str, name_baseline: bool, rounds: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "lens.duckdb")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        imp = [sys.executable, "-m", "engine", "--db", db, "import", *map(str, files), "--dataset", "ah"]
        if name_baseline:
            imp += ["--baseline-model", baseline]
        subprocess.run(imp, check=True, capture_output=True, env=env, cwd=ROOT)
        out = subprocess.run([sys.executable, "-m", "engine", "--db", db, "leaderboard", "--dataset", "ah",
                              "--baseline", baseline, "--bootstrap", str(rounds), "--seed", str(seed),
                              "--format", "json"], check=True, capture_output=True, text=True, env=env,
                             cwd=ROOT)
    table = json.loads(out.stdout)["table"]
    return {r["model"]: (r["baseline_win_rate"], r["baseline_ci_low"], r["baseline_ci_high"]) for r in table}


def synthetic_files(folder: Path, n_models: int, baseline: str, n_q: int = 500, seed: int = 0) -> list[Path]:
    """Seeded Arena-Hard judgment files, one per model (labels drawn with a per-model lean, 2% null)."""
    rng = np.random.default_rng(seed)
    files = []
    for k in range(n_models):
        tilt = np.exp(np.array([-2, -1, 0, 1, 2]) * (k - n_models / 2) * 0.6)
        p = np.array([1.0, 2.0, 1.5, 2.0, 1.0]) * tilt
        p /= p.sum()
        model = f"model-{k:02d}"
        lines = []
        for q in range(n_q):
            games = [{"score": None if rng.random() < 0.02 else str(rng.choice(LABELS, p=p))}
                     for _ in range(2)]
            lines.append(json.dumps({"uid": f"q{q:03d}", "category": "hard", "judge": "synthetic-judge",
                                     "model": model, "baseline": baseline, "games": games}))
        path = folder / f"{model}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--baseline-model", action="store_true",
                    help="the records carry no baseline field (v0.1 layout): import with --baseline-model")
    ap.add_argument("--synthetic", type=int, metavar="N", help="N seeded models x 500 questions instead")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--peer-repo", help="a checkout of arena-hard-auto at its v0.1 show_result (0489bf3)")
    ap.add_argument("--peer-python", help="the python of a virtual environment with the peer's packages")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = synthetic_files(Path(tmp), args.synthetic, args.baseline) if args.synthetic else args.files
        if not files:
            ap.error("give judgment files or --synthetic N")
        records = [json.loads(line) for f in files
                   for line in Path(f).read_text().splitlines() if line.strip()]
        ours = our_scores(files, args.baseline, args.baseline_model, args.rounds, args.seed)
        mine = v01_scores(records, args.baseline, args.rounds, args.seed)
        v2 = v2_means(records)
        peer = (peer_scores(args.peer_python, args.peer_repo, files, args.baseline, args.rounds)
                if args.peer_repo and args.peer_python else None)
    print(f"{len(records)} records, {len(v01_battles(records, args.baseline))} battles (>> counted 3 times)")
    cols = ["model", "ours", "v0.1 re-implemented", "abs diff", "v2 mean", "abs diff"]
    cols += ["peer (arena-hard-auto)", "abs diff"] if peer else []
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    worst = 0.0
    for m in sorted(ours, key=lambda m: -ours[m][0]):
        o = ours[m][0]
        d1 = abs(o - mine[m][0])
        row = f"| {m} | {o:.9f} | {mine[m][0]:.9f} | {d1:.1e} |"
        d = [d1]
        if m in v2:
            row += f" {v2[m]:.9f} | {abs(o - v2[m]):.1e} |"
        else:
            row += " (baseline) | |"
        if peer:
            d.append(abs(o - peer[m][0]))
            row += f" {peer[m][0]:.9f} | {d[-1]:.1e} |"
        worst = max(worst, *d)
        print(row)
    print("\n| model | ours 95% interval | v0.1 re-implemented | peer |")
    print("| --- | --- | --- | --- |")
    for m in sorted(ours, key=lambda m: -ours[m][0]):
        p = f"[{peer[m][1]:.4f}, {peer[m][2]:.4f}]" if peer else "-"
        print(f"| {m} | [{ours[m][1]:.4f}, {ours[m][2]:.4f}] | [{mine[m][1]:.4f}, {mine[m][2]:.4f}] | {p} |")
    print(f"\nlargest point-estimate difference: {worst:.2e} (tolerance {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
