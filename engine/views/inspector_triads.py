"""The prompt inspector's triad view: the stored verdicts of one triad's three pairs, grouped by
pair: the combined outcome (the graph's edge) with the reason it came out that way, each verdict
with its presentation order and rationale, and the answers (``engine.views.inspector`` builds the
graph view the triad comes from)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.views.inspector import TRIAD_KINDS, GraphView, relations


@dataclass(frozen=True)
class VerdictLine:
    """One stored verdict on a pair: who was shown first, what the judge said, and why."""

    first: str | None
    second: str | None
    winner: str | None
    outcome: str
    rationale: str | None
    verdict_id: int | None

    @property
    def shown(self) -> str:
        """Which answer the judge saw first, in words, with both names a rationale may use for it: A / B
        (this tool's templates, Arena-Hard) or Assistant 1 / Assistant 2 (the QLoRA and PRD judges')."""
        if self.first is None:
            return "presentation order not recorded"
        return f"{self.first} shown first (A, Assistant 1), {self.second} second (B, Assistant 2)"


@dataclass(frozen=True)
class PairView:
    """One pair of a triad: the combined outcome (the graph's edge), why, and its verdicts."""

    a: str
    b: str
    result: str
    reason: str
    verdicts: tuple[VerdictLine, ...]

    @property
    def result_text(self) -> str:
        """The verdict in words ("tie" or "X wins")."""
        return "tie" if self.result == "tie" else f"{self.result} wins"

    @property
    def heading(self) -> str:
        """The pair, how its verdicts combined, and the result, on one line."""
        return f"{self.a} vs {self.b}: {self.reason} → {self.result_text}"


@dataclass(frozen=True)
class TriadView:
    """A triad of a graph view with its three pairs' verdicts and the three answers."""

    models: tuple[str, str, str]
    kind: str
    shape: str
    explanation: str
    pairs: tuple[PairView, PairView, PairView]
    answers: dict[str, str | None]


def _verdict_line(row) -> VerdictLine:
    a, b, w, order = row["model_a"], row["model_b"], row["winner"], row["order"]
    order = (
        None
        if order is None or order is pd.NA or (isinstance(order, float) and np.isnan(order))
        else str(order)
    )
    first, second = {"AB": (a, b), "BA": (b, a)}.get(order or "", (None, None))
    winner = {"A": a, "B": b, "tie": "tie"}.get(w)
    outcome = (
        ("tie" if winner == "tie" else f"{winner} wins")
        if winner
        else "unparsable judge output (not counted)"
    )
    why = row.get("explanation")
    why = why if isinstance(why, str) and why.strip() else None
    vid = row.get("verdict_id")
    return VerdictLine(first, second, winner, outcome, why, None if pd.isna(vid) else int(vid))


def _reason(lines: list[VerdictLine]) -> str:
    """Why the verdicts on one pair combine as they do (plurality: no unique most frequent → tie)."""
    valid = [v for v in lines if v.winner is not None]
    if not valid:
        return "no valid verdict"
    if len(valid) == 1:
        return "one verdict"
    outcomes = [v.winner for v in valid]
    orders = {v.first for v in valid if v.first is not None}
    both_orders = len(valid) == 2 and len(orders) == 2
    if len(set(outcomes)) == 1:
        return "both orders agree" if both_orders else f"{len(valid)} verdicts agree"
    if both_orders:
        return "orders disagree"
    counts = pd.Series(outcomes).value_counts()
    return "verdicts split " + ", ".join(f"{n}× {'tie' if o == 'tie' else o}" for o, n in counts.items())


def graph_verdicts(verdicts: pd.DataFrame, key: dict) -> pd.DataFrame:
    """The stored verdicts (invalid ones included) of the graph with ``key`` (judge, prompt, variant,
    turn)."""
    v = verdicts
    mask = (
        (v["judge"].astype(str) == str(key["judge"]))
        & (v["prompt_id"].astype(str) == str(key["prompt_id"]))
        & (v["variant"] == key["variant"])
        & (v["turn"] == key["turn"])
    )
    return v[mask]


def triad_view(
    view: GraphView, index: int, verdicts: pd.DataFrame, answers: pd.DataFrame | None = None
) -> TriadView:
    """Triad ``index`` of ``view``: its pairs (in the triad's orientation) with their verdicts.

    ``verdicts``: stored verdict rows (any superset of the graph's); ``answers``:
    ``Store.answer_texts`` rows (model, variant, turn, text) or None.
    """
    if not 0 <= int(index) < len(view.triads):
        raise LensError(f"There is no triad {index}; this graph has {len(view.triads)}.")
    row = view.triads.iloc[int(index)]
    a, b, c = str(row["model_a"]), str(row["model_b"]), str(row["model_c"])
    mine = graph_verdicts(verdicts, view.key)
    if "verdict_id" in mine.columns:
        mine = mine.sort_values("verdict_id")
    pos = {m: k for k, m in enumerate(view.models)}
    rel = relations(view.adj, view.observed)
    pairs = []
    for x, y in ((a, b), (b, c), (a, c)):
        on = mine[
            ((mine["model_a"] == x) & (mine["model_b"] == y))
            | ((mine["model_a"] == y) & (mine["model_b"] == x))
        ]
        lines = [_verdict_line(r) for _, r in on.iterrows()]
        code = int(rel[pos[x], pos[y]])
        result = {1: x, -1: y, 0: "tie"}.get(code, "not compared")
        pairs.append(PairView(x, y, result, _reason(lines), tuple(lines)))
    texts: dict[str, str | None] = {m: None for m in (a, b, c)}
    if answers is not None and len(answers):
        ans = answers[(answers["variant"] == view.key["variant"]) & (answers["turn"] == view.key["turn"])]
        for m, txt in ans[["model", "text"]].itertuples(index=False):
            if m in texts and isinstance(txt, str):
                texts[m] = txt
    kind = str(row["kind"])
    ab, bc, ac = pairs
    return TriadView((a, b, c), kind, str(row["shape"]), TRIAD_KINDS.get(kind, kind), (ab, bc, ac), texts)


