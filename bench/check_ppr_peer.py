"""Check our prediction-powered rank-sets against the authors' own code on the same subsamples.

The peer: github:Networks-Learning/prediction-powered-ranking (MIT), the code of Chatzi et al., NeurIPS
2024. It runs in its own virtual environment (its pins: numpy 1.26.4, scipy 1.13.0), never in ours:

    python -m venv /work/venvs/ppr && /work/venvs/ppr/bin/pip install numpy==1.26.4 scipy==1.13.0
    git -C <snapshot>.git archive HEAD src data | tar x -C /work/ppr_peer
    python bench/check_ppr_peer.py --peer-dir /work/ppr_peer --peer-python /work/venvs/ppr/bin/python

Step 1 (peer venv): for each LLM judge, n and seed, the peer's own data pipeline (``src.data_process``:
common instances, the per-pair balanced subsample, the n-battle labelled subsample and the rest) picks
the battles, and its ``src.estimate`` / ``src.ranksets`` give lambda, the estimates, the covariance and
the rank-sets (PPR, human only, LLM only). The driver below only calls the peer's functions and writes
their inputs and outputs as JSON.
Step 2 (ours): ``engine.ranking.ppr`` on the same battles: estimates and covariance within 1e-12, lambda
within 1e-12, rank-sets equal. Step 3: the same battles imported into a fresh store and ranked by the CLI
as a process (``leaderboard --method ppr``, matched by battle_id): rank-sets equal per model.
Prints one line per case and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from engine.ranking.ppr import Battles, ppr_estimate, rank_sets, win_rate_estimate  # noqa: E402

JUDGES = {"claude-3-opus": "claude-3-opus-20240229", "gpt-4-0125-preview": "gpt-4-0125-preview",
          "gpt-3.5-turbo": "gpt-3.5-turbo"}
MODELS = ["vicuna-13b", "koala-13b", "gpt-3.5-turbo", "gpt-4", "oasst-pythia-12b", "alpaca-13b", "claude-v1",
          "RWKV-4-Raven-14B", "chatglm-6b", "fastchat-t5-3b", "palm-2", "claude-instant-v1"]
"""The paper's twelve models (the peer's scripts/config.json)."""

PEER_DRIVER = r'''
import json, sys
import numpy as np
from src import data_process as dp, estimate as est, ranksets as rs
cfg = json.loads(sys.argv[1])
models, k, out = cfg["models"], len(cfg["models"]), []
human = dp.input_json("data/human.json")
for judge, fname in cfg["judges"].items():
    llm = dp.input_json(f"data/{fname}.json")
    for n in cfg["n"]:
        for seed in cfg["seeds"]:
            hc, lc = dp.get_common_instances(seed, human, llm, models)
            hc, lc = dp.filter_data(seed, hc, models), dp.filter_data(seed, lc, models)
            hs, ls = dp.filter_data(seed, hc, models, n=n), dp.filter_data(seed, lc, models, n=n)
            big = dp.get_big_dataset_llm(lc, ls)
            Dn, DN = dp.summarize_dataset(models, ls, hs), dp.summarize_dataset(models, big)
            lam = est.lhat_opt(k, Dn, DN)
            th, sig = est.estimate(k, Dn, DN, lhat=lam)
            th_h, sig_h = est.sample_avg(k, Dn, "human")
            th_l, sig_l = est.sample_avg(k, DN)
            res = {"judge": judge, "n": n, "seed": seed, "lambda": lam,
                   "theta": th.ravel().tolist(), "sigma": sig.tolist(),
                   "theta_human": th_h.ravel().tolist(), "sigma_human": sig_h.tolist(),
                   "theta_llm_big": th_l.ravel().tolist(),
                   "small_human": hs, "small_llm": ls, "big_llm": big, "ranksets": {}}
            for a in cfg["alpha"]:
                res["ranksets"][str(a)] = {"ppr": rs.find_ranksets(k, th, sig, a),
                                           "human": rs.find_ranksets(k, th_h, sig_h, a),
                                           "llm_big": rs.find_ranksets(k, th_l, sig_l, a)}
            out.append(res)
json.dump(out, open(cfg["out"], "w"))
'''


def battles(rows: list[dict], orient: list[dict] | None = None) -> Battles:
    """Battles of the peer's rows (model index = position in MODELS); a tie of either kind wins for
    neither side. ``orient``: rows giving model_a / model_b (the human rows of the same battles)."""
    ref = orient or rows
    a = np.array([MODELS.index(r["model_a"]) for r in ref])
    b = np.array([MODELS.index(r["model_b"]) for r in ref])
    win = [r["winner"] for r in rows]
    return Battles(a, b, np.array([w == "model_a" for w in win], float),
                   np.array([w == "model_b" for w in win], float))


def run_peer(peer_dir: Path, peer_python: str, cfg: dict) -> list[dict]:
    """The peer's results for every case (its own environment, its own working directory)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = {**cfg, "out": str(Path(tmp) / "peer.json")}
        subprocess.run([peer_python, "-c", PEER_DRIVER, json.dumps(cfg)], cwd=peer_dir, check=True)
        return json.loads(Path(cfg["out"]).read_text())


def compare_engine(case: dict, alphas: list[float]) -> list[str]:
    """Differences between the engine's numbers and the peer's on one case (empty: equal)."""
    k = len(MODELS)
    if [(r["model_a"], r["model_b"]) for r in case["small_human"]] != \
            [(r["model_a"], r["model_b"]) for r in case["small_llm"]]:
        return ["peer's labelled human and LLM rows are not the same battles"]
    h, p, u = battles(case["small_human"]), battles(case["small_llm"]), battles(case["big_llm"])
    ours, human_only, llm_big = ppr_estimate(k, h, p, u), win_rate_estimate(k, h), win_rate_estimate(k, u)
    bad = []
    for name, mine, theirs in (("lambda", ours.lam, case["lambda"]), ("theta", ours.theta, case["theta"]),
                               ("sigma", ours.cov, case["sigma"]),
                               ("theta_human", human_only.theta, case["theta_human"]),
                               ("sigma_human", human_only.cov, case["sigma_human"]),
                               ("theta_llm", llm_big.theta, case["theta_llm_big"])):
        diff = float(np.max(np.abs(np.asarray(mine, float) - np.asarray(theirs, float))))
        if not diff <= 1e-12:
            bad.append(f"{name} differs by {diff:.3g}")
    for a in alphas:
        for name, e in (("ppr", ours), ("human", human_only), ("llm_big", llm_big)):
            low, high = rank_sets(e.theta, e.cov, a)
            if [[int(x), int(y)] for x, y in zip(low, high, strict=True)] != case["ranksets"][str(a)][name]:
                bad.append(f"{name} rank-sets differ at alpha {a}")
    return bad


def compare_cli(case: dict, alpha: float) -> list[str]:
    """Import the case's battles into a fresh store (battle ids tie a human row to its LLM row) and compare
    ``leaderboard --method ppr``'s rank-sets (a process) with the peer's."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ppr.csv"
        code = {"model_a": "A", "model_b": "B"}
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["judge", "prompt_id", "model_a", "model_b", "winner", "battle_id"])
            for i, (hr, lr) in enumerate(zip(case["small_human"], case["small_llm"], strict=True)):
                w.writerow(["human", hr["question_id"], hr["model_a"], hr["model_b"],
                            code.get(hr["winner"], "tie"), f"s{i}"])
                w.writerow(["llm", lr["question_id"], lr["model_a"], lr["model_b"],
                            code.get(lr["winner"], "tie"), f"s{i}"])
            for i, r in enumerate(case["big_llm"]):
                w.writerow(["llm", r["question_id"], r["model_a"], r["model_b"], code.get(r["winner"], "tie"),
                            f"b{i}"])
        db = str(Path(tmp) / "ppr.duckdb")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "engine", "--db", db, "import", "--dataset", "ppr", str(path)],
                       check=True, capture_output=True, env=env)
        out = subprocess.run([sys.executable, "-m", "engine", "--db", db, "leaderboard", "--dataset", "ppr",
                              "--method", "ppr", "--human", "human", "--proxy", "llm", "--alpha", str(alpha),
                              "--format", "json"], check=True, capture_output=True, text=True, env=env)
    rows = json.loads(out.stdout)["rows"]
    mine = {r["model"]: [r["rank_set_low"], r["rank_set_high"]] for r in rows}
    theirs = dict(zip(MODELS, case["ranksets"][str(alpha)]["ppr"], strict=True))
    return [] if mine == theirs else [f"CLI rank-sets differ at alpha {alpha}: {mine} vs {theirs}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer-dir", default="/work/ppr_peer", help="the peer's src/ and data/")
    ap.add_argument("--peer-python", default="/work/venvs/ppr/bin/python")
    ap.add_argument("--n", default="100,500,1000,2000", help="labelled battles (the paper's n)")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--alpha", default="0.05,0.1,0.3")
    ap.add_argument("--cli-cases", type=int, default=3, help="cases also checked through the CLI")
    args = ap.parse_args()
    alphas = [float(a) for a in args.alpha.split(",")]
    cfg = {"models": MODELS, "judges": JUDGES, "n": [int(x) for x in args.n.split(",")],
           "seeds": [int(x) for x in args.seeds.split(",")], "alpha": alphas}
    cases = run_peer(Path(args.peer_dir), args.peer_python, cfg)
    failures = 0
    for i, case in enumerate(cases):
        bad = compare_engine(case, alphas)
        if i < args.cli_cases:
            bad += compare_cli(case, alphas[0])
        failures += bool(bad)
        print(f"{case['judge']:>20} n={case['n']:>5} seed={case['seed']} labelled={len(case['small_human'])} "
              f"unlabelled={len(case['big_llm'])} lambda={case['lambda']:.4f} "
              f"{'EQUAL' if not bad else 'DIFFERENT: ' + '; '.join(bad)}")
    print(f"{len(cases) - failures} of {len(cases)} cases equal (estimates and covariances to 1e-12, lambda "
          f"to 1e-12, rank-sets exactly at alpha {', '.join(map(str, alphas))}; "
          f"{min(args.cli_cases, len(cases))} also through the CLI)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
