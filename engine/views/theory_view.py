"""How heavy a Theory lab setting is, so one slider move cannot hold the server for a minute.

``engine.experiments.simulate.recovery_curve`` draws, for each odd t of ``odd_grid(t_max)`` and each of the
two
graph models, ``reps`` sets of t graphs over n models and counts every pair in every graph: its
work grows as n² · reps · Σt (the triangle-free model's (reps, t, n, n) comparison dominates;
measured on the 2-core dev box: about 20-40 ns per unit, so n = 30, t ≤ 399, 800 replicates took
75 s). A setting up to ``LIVE_WORK`` runs on every slider move; up to ``MAX_WORK`` it waits for a
button; above that the page asks for fewer replicates or a smaller t.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LIVE_WORK = 4e7
"""Work units run on every move (the page's opening setting, n = 10, t ≤ 121, 200 replicates: 3.0e7)."""
MAX_WORK = 1e9
"""Work units a button may start (tens of seconds at most); more is refused with a suggestion."""


def lab_work(n: int, t_max: int, reps: int) -> float:
    """n² · reps · Σt over the odd t the lab simulates (``engine.experiments.simulate.odd_grid``)."""
    from engine.experiments.simulate import odd_grid

    return float(n) * float(n) * float(reps) * float(np.sum(odd_grid(int(t_max))))


@dataclass(frozen=True)
class LabPlan:
    """What the page does with a setting: ``mode`` is "live", "button" or "refused"; ``work`` its
    units; ``text`` one sentence for the page (empty when live)."""

    mode: str
    work: float
    text: str


def lab_plan(n: int, t_max: int, reps: int, *, live: float = LIVE_WORK, cap: float = MAX_WORK) -> LabPlan:
    """Run live, on a button press, or not at all, with the sentence that says which and why."""
    work = lab_work(n, t_max, reps)
    times = work / live
    if work <= live:
        return LabPlan("live", work, "")
    if work <= cap:
        return LabPlan("button", work, (
            f"This setting is {times:.1f}× the work the lab runs on every move (n² · replicates · Σt = "
            f"{work:.2g}); it runs when you press the button, and can take several seconds."))
    fit = max((r for r in (100, 200, 400, 800) if lab_work(n, t_max, r) <= cap), default=None)
    hint = (f"use at most {fit} replicates" if fit is not None and fit < reps
            else "lower n or the largest t")
    return LabPlan("refused", work, (
        f"This setting is too heavy for a shared server (n² · replicates · Σt = {work:.2g}, the limit is "
        f"{cap:.2g}): {hint}."))
