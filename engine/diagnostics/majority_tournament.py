"""The model-level majority tournament of a selection's pair counts, and its Condorcet cycles.

Is the aggregate itself transitive? Over all the votes (or the battles of a pair-count dataset), model i
beats j by majority when its half-tie count is larger, W~_ij = W_ij + T_ij / 2 > W~_ji (equal counts: a
majority tie, the reciprocal edge pair); pairs never compared have no edge. This is the eq. 5 graph of
``engine.rankers.majority.graph_from_counts`` taken over the pooled counts, with ``exact_half="both"``.

On that one graph (``engine.graphs.cycles``):

- Condorcet 3-cycles: the compared triples whose majority relation is cyclic, i.e. the graph's bad
  directed 3-cycles (C3 − C3_tie: each non-transitive triple carries exactly one), in total and through
  each model;
- acyclic: whether the strict majority relation (ties left out) holds no directed cycle of any length,
  read from its strongly connected components (``engine.graphs.structure.scc_membership``); the top
  cycle is the component no outside model beats;
- the Condorcet winner (loser): the model that beats (loses to) every other model by strict majority,
  which needs every pair with it compared.

Dense (n, n): refused above ``MAJORITY_MODELS_MAX`` models in one sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.graphs.cycles import cycle_counts_arrays, vertex_cycle_counts
from engine.graphs.structure import scc_membership
from engine.rankers.majority import graph_from_counts
from engine.rankers.votes import PairCounts

MAJORITY_MODELS_MAX = 3_000
"""Largest model set the dense majority tournament is built for ((n, n) arrays, n^3 products)."""
CYCLES_LISTED = 20
"""How many Condorcet 3-cycles ``MajorityTournament.cycles`` lists (the strongest first)."""


@dataclass(frozen=True)
class MajorityTournament:
    """The majority tournament (module docstring): ``adj`` (n, n) bool, i → j when i beats j by majority
    or ties it; ``strict`` the edges without the ties; ``share`` (n, n) W~_ij / (W~_ij + W~_ji), NaN where
    uncompared; ``games`` (n, n) the pair's votes or battles."""

    models: tuple[str, ...]
    adj: np.ndarray
    strict: np.ndarray
    share: np.ndarray
    compared: np.ndarray
    games: np.ndarray

    @property
    def n(self) -> int:
        """Number of models."""
        return len(self.models)

    def condorcet_cycles(self) -> int:
        """Compared triples whose majority relation is cyclic."""
        return int(cycle_counts_arrays(self.adj[None])["c3_bad"][0]) if self.n >= 3 else 0

    def top_cycle(self) -> np.ndarray:
        """(n,) bool: the models of the strict relation's unbeaten components, those no model outside the
        component beats (one component, the top cycle, when every pair is compared)."""
        if self.n == 0:
            return np.zeros(0, dtype=bool)
        same = scc_membership(self.strict[None])[0]
        beaten_from_outside = (self.strict & ~same).any(axis=0)  # j: some i outside j's component beats j
        return ~(same & beaten_from_outside[None, :]).any(axis=1)  # no member of i's component is beaten

    def acyclic(self) -> bool:
        """Whether the strict majority relation has no directed cycle (every component a single model)."""
        if self.n == 0:
            return True
        return bool((scc_membership(self.strict[None])[0].sum(axis=1) == 1).all())

    def condorcet(self, loser: bool = False) -> str | None:
        """The Condorcet winner (or loser): beats (loses to) every other model by strict majority."""
        m = self.strict.T if loser else self.strict
        hit = np.flatnonzero(m.sum(axis=1) == self.n - 1) if self.n > 1 else np.zeros(0, dtype=np.int64)
        return self.models[int(hit[0])] if hit.size else None

    def per_model(self) -> pd.DataFrame:
        """One row per model: strict majority wins, losses and ties over the models it met, the Condorcet
        3-cycles through it, and whether it is in the top cycle; the top cycle first (on sparse data the most
        wins is not the top: a model that met many weak ones), then by wins, losses and name."""
        ties = self.adj & self.adj.T
        through = (vertex_cycle_counts(self.adj[None])["c3_bad"][0] if self.n >= 3
                   else np.zeros(self.n, dtype=np.int64))
        out = pd.DataFrame({
            "model": list(self.models),
            "majority_wins": self.strict.sum(axis=1).astype(np.int64),
            "majority_losses": self.strict.sum(axis=0).astype(np.int64),
            "majority_ties": ties.sum(axis=1).astype(np.int64),
            "opponents": self.compared.sum(axis=1).astype(np.int64),
            "condorcet_cycles": np.asarray(through, dtype=np.int64),
            "top_cycle": self.top_cycle(),
        })
        return out.sort_values(["top_cycle", "majority_wins", "majority_losses", "model"],
                               ascending=[False, False, True, True], kind="stable").reset_index(drop=True)

    def cycles(self, limit: int = CYCLES_LISTED) -> pd.DataFrame:
        """Up to ``limit`` Condorcet 3-cycles a → b → c → a on strict edges, the best supported first (by
        the fewest battles on any of its three pairs), each with its three majority shares."""
        s = self.strict
        rows = []
        for i in range(self.n):
            js, ks = np.nonzero(s[i][:, None] & s & s[:, i][None, :])
            keep = (js > i) & (ks > i)  # each cycle once, from its smallest model
            for j, k in zip(js[keep], ks[keep], strict=True):
                fewest = min(self.games[i, j], self.games[j, k], self.games[k, i])
                rows.append((self.models[i], self.models[j], self.models[k], self.share[i, j],
                             self.share[j, k], self.share[k, i], fewest))
        cols = ["a", "b", "c", "share_ab", "share_bc", "share_ca", "fewest_battles"]
        out = pd.DataFrame(rows, columns=cols)
        return out.sort_values(["fewest_battles", "a", "b", "c"], ascending=[False, True, True, True],
                               kind="stable").head(limit).reset_index(drop=True)

    def summary(self) -> dict:
        """The tournament's facts in one dict (the CLI's notes, the page's metrics)."""
        n = self.n
        return {
            "models": n,
            "compared_pairs": int(np.triu(self.compared, 1).sum()),
            "pairs": n * (n - 1) // 2,
            "majority_ties": int(np.triu(self.adj & self.adj.T, 1).sum()),
            "condorcet_cycles": self.condorcet_cycles(),
            "acyclic": self.acyclic(),
            "top_cycle": int(self.top_cycle().sum()),
            "condorcet_winner": self.condorcet(),
            "condorcet_loser": self.condorcet(loser=True),
        }


def summary_sentences(facts: dict) -> list[str]:
    """``MajorityTournament.summary`` in sentences (the CLI's notes, the Cycles page's text)."""
    out = [f"Majority tournament of {facts['models']:,} models over {facts['compared_pairs']:,} compared "
           f"pairs (of {facts['pairs']:,}); {facts['majority_ties']:,} majority ties."]
    if facts["acyclic"]:
        out.append("The strict majority relation is acyclic: the aggregate is transitive (no Condorcet "
                   "cycle of any length).")
    else:
        top = facts["top_cycle"]
        out.append(f"The aggregate is not transitive: {facts['condorcet_cycles']:,} Condorcet 3-cycles; the "
                   f"unbeaten component holds {top:,} model{'s' if top != 1 else ''}.")
    win, lose = facts["condorcet_winner"], facts["condorcet_loser"]
    out.append(f"Condorcet winner: {win if win is not None else 'none'}; Condorcet loser: "
               f"{lose if lose is not None else 'none'}.")
    return out


def majority_tournament(pc: PairCounts) -> MajorityTournament:
    """The majority tournament of pair counts (module docstring)."""
    n = pc.n
    if n > MAJORITY_MODELS_MAX:
        raise LensError(f"The majority tournament is built for at most {MAJORITY_MODELS_MAX:,} models; this "
                        f"selection has {n:,}.")
    wt = pc.wtilde()
    compared = (wt + wt.T) > 0
    adj = _majority_edges(wt, compared)
    share = np.divide(wt, wt + wt.T, out=np.full((n, n), np.nan), where=compared)
    strict = adj & ~adj.T
    return MajorityTournament(tuple(pc.models), adj, strict, share, compared, wt + wt.T)


def _majority_edges(wt: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """(n, n) bool: i → j when W~_ij >= W~_ji on a compared pair (equal: both ways), by eq. 5's rule on the
    doubled counts 2 W~_ij against the pair's games (``graph_from_counts``, exact halves both ways)."""
    games = wt + wt.T
    return graph_from_counts((2 * wt)[None], games[None], "both")[0] & compared
