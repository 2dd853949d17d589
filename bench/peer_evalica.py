"""Peer process for the product benchmark: read battles from Parquet with pandas, fit evalica's BT.

    python bench/peer_evalica.py BATTLES.parquet

What a user of evalica would write: read the three columns, map the winner spellings to
``evalica.Winner``, call ``evalica.bradley_terry`` (ties half a win each way, its default). Prints
the top five models and their scores, so the run can be checked against the CLI's leaderboard.
"""

from __future__ import annotations

import sys

import evalica
import pandas as pd


def main() -> None:
    df = pd.read_parquet(sys.argv[1], columns=["model_a", "model_b", "winner"])
    to_winner = {"A": evalica.Winner.X, "model_a": evalica.Winner.X, "B": evalica.Winner.Y,
                 "model_b": evalica.Winner.Y}
    winners = [to_winner.get(w, evalica.Winner.Draw) for w in df["winner"]]
    result = evalica.bradley_terry(df["model_a"].tolist(), df["model_b"].tolist(), winners)
    top = result.scores.sort_values(ascending=False).head(5)
    print("model,score")
    for m, s in top.items():
        print(f"{m},{s:.6f}")


if __name__ == "__main__":
    main()
