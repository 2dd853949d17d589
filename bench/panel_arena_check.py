"""Panel vs pooled on a generated arena-shaped battle log with a known truth (issue 28, point 2).

Each seed draws 30 models' true strengths (standard normal), 20,000 battles of random pairs each shown in a
random order (AB / BA), and verdicts of four LLM judges on every battle from the panel's own model
(P(first wins) = r * sigma(s_first - s_second) + (1 - r) * b; reliabilities r and side biases b below) plus
a human judge on the first 2,000 battles (plain Bradley-Terry, r = 1). The log is imported as a CSV into a
fresh store, then ranked the way a user would:

- panel: ``leaderboard --ranker panel --param judges=<the four LLM judges>``
- pooled: ``leaderboard --judge <the four> --ranker bt`` (every LLM verdict one vote, judges not weighed)
- human: ``leaderboard --judge human --ranker bt``

Agreement: Kendall's tau-b (scipy) of each ranking's scores with the true strengths and with the human
ranking's scores, per seed and averaged over the seeds.

    python bench/panel_arena_check.py [--seeds 5] [--battles 20000] [--models 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

JUDGES = {"judge-a": (0.9, 0.5), "judge-b": (0.6, 0.85), "judge-c": (0.35, 0.2), "judge-d": (0.75, 0.6)}
"""LLM judge -> (reliability, side bias: the chance a guess picks the answer shown first)."""
HUMAN_SHARE = 0.1


def battle_log(seed: int, n_battles: int, n_models: int):
    """(the verdict rows as a frame, the true strengths by model name)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    s = rng.standard_normal(n_models)
    names = np.array([f"model-{k:02d}" for k in range(n_models)])
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    ab = rng.random(n_battles) < 0.5  # model_a shown first
    first, second = np.where(ab, a, b), np.where(ab, b, a)
    p_bt = 1.0 / (1.0 + np.exp(-(s[first] - s[second])))
    frames = []
    for judge, (r, bias) in {**JUDGES, "human": (1.0, 0.5)}.items():
        take = np.arange(n_battles) if judge != "human" else np.arange(int(HUMAN_SHARE * n_battles))
        first_won = rng.random(take.size) < r * p_bt[take] + (1 - r) * bias
        frames.append(pd.DataFrame({
            "battle_id": [f"b{k}" for k in take], "prompt_id": [f"p{k}" for k in take], "judge": judge,
            "model_a": names[a[take]], "model_b": names[b[take]],
            "winner": np.where(first_won == ab[take], "A", "B"), "order": np.where(ab[take], "AB", "BA")}))
    return pd.concat(frames, ignore_index=True), pd.Series(s, index=names)


def one_seed(seed: int, n_battles: int, n_models: int) -> dict:
    from scipy.stats import kendalltau

    from engine.ingest.importer import import_files
    from engine.ranking.leaderboard import leaderboard
    from engine.store.connection import Store

    frame, truth = battle_log(seed, n_battles, n_models)
    llm = list(JUDGES)
    with tempfile.TemporaryDirectory(prefix="panel-arena-") as tmp:
        work = Path(tmp)
        frame.to_csv(work / "log.csv", index=False)
        with Store(work / "lens.duckdb") as store:
            import_files(store, [work / "log.csv"], "arena")
            panel_params = {"judges": ",".join(llm)}
            boards = {
                "panel": leaderboard(store, "arena", ranker="panel", ranker_params=panel_params).scores,
                "pooled": leaderboard(store, "arena", judge=llm, ranker="bt").scores,
                "human": leaderboard(store, "arena", judge="human", ranker="bt").scores,
            }
    out = {"seed": seed}
    for name, sc in boards.items():
        common = [m for m in truth.index if m in sc.index]
        out[f"{name}_vs_truth"] = kendalltau(truth[common], sc[common]).statistic
        if name != "human":
            h = boards["human"]
            both = [m for m in common if m in h.index]
            out[f"{name}_vs_human"] = kendalltau(h[both], sc[both]).statistic
    return out


def main() -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--battles", type=int, default=20_000)
    ap.add_argument("--models", type=int, default=30)
    args = ap.parse_args()
    rows = pd.DataFrame([one_seed(seed, args.battles, args.models) for seed in range(args.seeds)])
    print(rows.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nmean:", rows.drop(columns="seed").mean().round(3).to_dict())
    better = (rows["panel_vs_truth"] > rows["pooled_vs_truth"]).sum()
    print(f"panel closer to the truth than pooled in {better} of {len(rows)} seeds; closer to the human "
          f"ranking in {(rows['panel_vs_human'] > rows['pooled_vs_human']).sum()} of {len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
