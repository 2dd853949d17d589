"""The PPR paper's LMSYS experiment (Chatzi et al. 2024, Section 5) re-run with the engine's estimator.

Data: the paper's own files (github:Networks-Learning/prediction-powered-ranking, data/: 26,919 Chatbot
Arena battles with the human verdict, re-judged by gpt-4-0125-preview, claude-3-opus and gpt-3.5-turbo; the
four files are line-aligned, same battle on the same line). The protocol, as the paper describes it:

* keep the battles among the paper's 12 models; balance them: every pair of models keeps the same number
  of battles (the smallest pair's count), drawn at random;
* labelled: n // 66 battles per pair of that balanced set (human and LLM verdicts), drawn at random;
  unlabelled: the rest of the balanced set (LLM verdicts only);
* methods: PPR (labelled + unlabelled), human only (the labelled human verdicts), LLM only (the LLM's
  verdicts on the whole balanced set); the *baseline* is the rank-sets of every human verdict of the
  balanced set;
* per repetition and method: the mean rank-set size over the models; *intersect*: every model's rank-set
  meets its baseline rank-set; *contain* (the paper's "coverage"): every rank-set contains its baseline
  rank-set. Reported: means over the repetitions.

    python bench/ppr_paper.py --data /work/ppr_peer/data --reps 300 --alpha 0.05,0.1

Prints a Markdown table (one row per judge, n and method).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.ranking.ppr import Battles, ppr_estimate, rank_sets, win_rate_estimate  # noqa: E402

MODELS = ["vicuna-13b", "koala-13b", "gpt-3.5-turbo", "gpt-4", "oasst-pythia-12b", "alpaca-13b", "claude-v1",
          "RWKV-4-Raven-14B", "chatglm-6b", "fastchat-t5-3b", "palm-2", "claude-instant-v1"]
JUDGES = {"gpt-4-0125-preview": "gpt-4-0125-preview", "claude-3-opus": "claude-3-opus-20240229",
          "gpt-3.5-turbo": "gpt-3.5-turbo"}


def load(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Model codes (-1: not one of the 12) and the winner's side (1: model_a, 2: model_b, 0: any tie)."""
    code = {m: i for i, m in enumerate(MODELS)}
    a, b, w = [], [], []
    for line in path.open():
        r = json.loads(line)
        a.append(code.get(r["model_a"], -1))
        b.append(code.get(r["model_b"], -1))
        w.append({"model_a": 1, "model_b": 2}.get(r["winner"], 0))
    return np.array(a), np.array(b), np.array(w)


def battles(a: np.ndarray, b: np.ndarray, side: np.ndarray) -> Battles:
    return Battles(a, b, (side == 1).astype(float), (side == 2).astype(float))


def balanced(rng: np.random.Generator, pair: np.ndarray, per_pair: int | None = None) -> np.ndarray:
    """Indices of a draw with the same number of battles per pair (the smallest pair's, or per_pair)."""
    groups = [np.flatnonzero(pair == p) for p in np.unique(pair)]
    take = min(len(g) for g in groups) if per_pair is None else per_pair
    return np.sort(np.concatenate([rng.choice(g, size=take, replace=False) for g in groups]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="/work/ppr_peer/data")
    ap.add_argument("--n", default="100,150,200,500,1000,1500,2000,2500,3000")
    ap.add_argument("--alpha", default="0.05,0.1")
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=12345678)
    args = ap.parse_args()
    data = Path(args.data)
    ha, hb, hw = load(data / "human.json")
    k = len(MODELS)
    keep = (ha >= 0) & (hb >= 0)
    pair = np.minimum(ha, hb) * k + np.maximum(ha, hb)
    rng = np.random.default_rng(args.seed)
    alphas = [float(x) for x in args.alpha.split(",")]
    print("| judge | n (labelled) | alpha | method | mean rank-set size | intersect | contain |")
    print("|---|---|---|---|---|---|---|")
    for judge, fname in JUDGES.items():
        la, lb, lw = load(data / f"{fname}.json")
        assert np.array_equal(la, ha) and np.array_equal(lb, hb), "files are not line-aligned"
        for n in (int(x) for x in args.n.split(",")):
            stats: dict[tuple[float, str], list[tuple[float, bool, bool]]] = {}
            for _ in range(args.reps):
                common = np.flatnonzero(keep)[balanced(rng, pair[keep])]
                lab_pos = balanced(rng, pair[common], per_pair=n // (k * (k - 1) // 2))
                lab = common[lab_pos]
                unl = np.setdiff1d(common, lab)
                ests = {
                    "baseline": win_rate_estimate(k, battles(ha[common], hb[common], hw[common])),
                    "ppr": ppr_estimate(k, battles(ha[lab], hb[lab], hw[lab]),
                                        battles(ha[lab], hb[lab], lw[lab]),
                                        battles(ha[unl], hb[unl], lw[unl])),
                    "human only": win_rate_estimate(k, battles(ha[lab], hb[lab], hw[lab])),
                    "llm only": win_rate_estimate(k, battles(ha[common], hb[common], lw[common])),
                }
                for alpha in alphas:
                    base_lo, base_hi = rank_sets(ests["baseline"].theta, ests["baseline"].cov, alpha)
                    for method in ("ppr", "human only", "llm only"):
                        lo, hi = rank_sets(ests[method].theta, ests[method].cov, alpha)
                        stats.setdefault((alpha, method), []).append((
                            float(np.mean(hi - lo + 1)),
                            bool(np.all((lo <= base_hi) & (hi >= base_lo))),
                            bool(np.all((lo <= base_lo) & (hi >= base_hi)))))
            for (alpha, method), rows in sorted(stats.items()):
                s = np.array(rows, dtype=float)
                print(f"| {judge} | {n} ({len(lab)}) | {alpha:g} | {method} | {s[:, 0].mean():.2f} | "
                      f"{s[:, 1].mean():.3f} | {s[:, 2].mean():.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
