"""Does the judge panel's ranking agree with the human ranking better than the pooled one? (issue 28, point 2)

On vicuna80 (five LLM judges, human votes on the same battles): the human ranking is Bradley-Terry on the
human votes alone; "pooled" is Bradley-Terry on the five LLM judges' votes pooled (the leaderboard without
--judge, human left out); "panel" is ``leaderboard --ranker panel --param judges=<the five>``; each LLM judge
alone is listed beside them. Agreement with the human ranking: Kendall's tau-b and Spearman's rho of the
scores over the nine models (scipy), and the number of discordant model pairs.

    python bench/panel_human_check.py [--db PATH]   # a new store gets vicuna80 on first use
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

LLM_JUDGES = ("bard", "claude", "gpt-3.5-turbo", "gpt-4", "vicuna-13b")


def main() -> int:
    import tempfile

    import numpy as np
    import pandas as pd
    from scipy.stats import kendalltau, spearmanr

    from engine.ingest.shipped import open_store
    from engine.ranking.leaderboard import leaderboard

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    db = args.db or str(Path(tempfile.mkdtemp()) / "lens.duckdb")
    store = open_store(db, ensure_default=True)
    try:
        human = leaderboard(store, "vicuna80", judge="human", ranker="bt").scores
        boards = {
            "panel": leaderboard(store, "vicuna80", ranker="panel",
                                 ranker_params={"judges": ",".join(LLM_JUDGES)}).scores,
            "pooled bt": leaderboard(store, "vicuna80", judge=list(LLM_JUDGES), ranker="bt").scores,
            **{f"{j} alone (bt)": leaderboard(store, "vicuna80", judge=j, ranker="bt").scores
               for j in LLM_JUDGES},
        }
    finally:
        store.close()
    rows = []
    for name, s in boards.items():
        common = [m for m in human.index if m in s.index]
        h, o = human[common].to_numpy(), s[common].to_numpy()
        i, j = np.triu_indices(len(common), 1)
        discordant = int((np.sign(h[i] - h[j]) * np.sign(o[i] - o[j]) < 0).sum())
        rows.append({"ranking": name, "models": len(common), "kendall_tau": kendalltau(h, o).statistic,
                     "spearman": spearmanr(h, o).statistic, "discordant_pairs": discordant})
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("\nhuman order:", " > ".join(human.sort_values(ascending=False).index))
    for name in ("panel", "pooled bt"):
        print(f"{name} order:", " > ".join(boards[name].sort_values(ascending=False).index))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
