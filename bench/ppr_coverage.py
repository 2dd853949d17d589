"""Empirical coverage of PPR's rank-sets of the TRUE ranking on generated data, as the number of models grows.

Models of evenly spaced Bradley-Terry strengths (gap ``--gap``), 10 % ties, balanced battles (every pair the
same count), n labelled battles and N = 10 n unlabelled; the proxy agrees with the human 75 % of the time
and otherwise picks the lower-indexed model's side. The true ranking: the models' expected win rates (a tie
a win for neither). For each k: the share of repetitions whose rank-sets all hold the true rank (PPR and
human only) and the mean rank-set size.

    python bench/ppr_coverage.py --k 4,8,12,20 --n 2000 --reps 200 --alpha 0.05
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.ranking.ppr import Battles, ppr_estimate, rank_sets, win_rate_estimate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", default="4,8,12,20")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--gap", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    tie = 0.1
    print("| k | n | N | method | coverage of the true ranking | mean rank-set size |")
    print("|---|---|---|---|---|---|")
    for k in (int(x) for x in args.k.split(",")):
        strength = -args.gap * np.arange(k)
        p_win = 1 / (1 + np.exp(-(strength[:, None] - strength[None, :])))
        rate = np.array([np.mean([(1 - tie) * p_win[i, j] for j in range(k) if j != i]) for i in range(k)])
        truth = 1 + (rate[None, :] > rate[:, None]).sum(axis=1)
        pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)])

        def draw(size: int, pairs=pairs, p_win=p_win) -> tuple[Battles, Battles]:
            per = max(1, size // len(pairs))
            idx = np.repeat(np.arange(len(pairs)), per)
            a, b = pairs[idx, 0], pairs[idx, 1]
            is_tie = rng.random(len(idx)) < tie
            wa = ~is_tie & (rng.random(len(idx)) < p_win[a, b])
            human = Battles(a, b, wa.astype(float), (~is_tie & ~wa).astype(float))
            agree = rng.random(len(idx)) < 0.75
            proxy = human.with_wins(np.where(agree, human.win_a, 1.0), np.where(agree, human.win_b, 0.0))
            return human, proxy

        hits = {"ppr": 0, "human only": 0}
        size = {"ppr": 0.0, "human only": 0.0}
        for _ in range(args.reps):
            human, proxy = draw(args.n)
            _, unlabelled = draw(10 * args.n)
            for method, est in (("ppr", ppr_estimate(k, human, proxy, unlabelled)),
                                ("human only", win_rate_estimate(k, human))):
                lo, hi = rank_sets(est.theta, est.cov, args.alpha)
                hits[method] += bool(np.all((lo <= truth) & (truth <= hi)))
                size[method] += float(np.mean(hi - lo + 1))
        for method in hits:
            print(f"| {k} | {len(human)} | {len(unlabelled)} | {method} | {hits[method] / args.reps:.3f} | "
                  f"{size[method] / args.reps:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
