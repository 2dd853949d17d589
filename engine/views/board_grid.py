"""The Truncation page's kept boards of one selection (count rankers), shared by kept set and made ahead.

A keep-K or μ move ranks the graphs keep-K keeps at (K, μ): with a count ranker, the kept graphs' votes
(``engine.views.appstate.app_leaderboard``'s votes path), their B = 200 bootstrap intervals included. On
a 70-model selection those intervals are 200 Bradley-Terry fits of 70 models, ~0.3 s of CPU per move,
most of the move. Two things make most moves look-ups instead, neither changing a number:

- the board depends on the kept graphs, not on (K, μ): neighbouring μ steps usually keep the same K
  graphs (82 % of adjacent steps on the 70-model sparse set, 84 % on vicuna80 gpt-4), and those settings
  share one board, made once (only μ and the kept threshold, which are the setting's, are its own);
- ``BoardGrid.warm`` has the curve grid's background thread (``engine.views.curve_grid.WarmGrid``: one
  item at a time in the server) make the boards of the settings one and two slider steps away while the
  reader looks at the page.

Every board is made by ``app_leaderboard`` itself on the selection's context and votes, whichever thread
makes it (tests/test_board_grid.py: the grid's boards against ``app_leaderboard`` from scratch).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.errors import LensError
from engine.views.curve_grid import WarmGrid

BOARD_K_REACH = 2
"""How many K on each side of the keep-K slider's value ``BoardGrid.warm`` makes the kept boards of."""

BOARD_MU_REACH = 2
"""How many μ steps on each side of the μ slider's value ``BoardGrid.warm`` makes the kept boards of."""


class BoardGrid(WarmGrid):
    """One selection's keep-K boards of the count rankers (``engine.views.appstate.AppBoard``), one per
    (ranker, kept graphs, bootstrap, seed), and a background thread making them ahead of the sliders.

    ``ctx``: the SliderContext keep-K cuts from; ``votes``: the selection's votes; ``reference`` /
    ``reference_note`` / ``extra_params``: as ``app_leaderboard`` takes them."""

    _thread_name = "lens-board-grid"

    def __init__(self, ctx, votes, *, reference=None, reference_note: str = "",
                 extra_params: dict | None = None) -> None:
        super().__init__()
        self.ctx, self.votes = ctx, votes
        self.reference, self.reference_note = reference, reference_note
        self.extra_params = dict(extra_params or {})
        self._first: dict[tuple, tuple[int, float]] = {}  # an item's (K, μ): the setting that makes it

    def _item(self, ranker: str, keep_k: int, mu: float, bootstrap: int, seed: int) -> tuple:
        """The board's key: the kept graphs (not K and μ), ranker, bootstrap and seed."""
        idx, _ = self.ctx.kept(int(keep_k), float(mu))
        item = (str(ranker), idx.tobytes(), int(bootstrap), int(seed))
        with self._lock:
            self._first.setdefault(item, (int(keep_k), float(mu)))
        return item

    def board(self, ranker: str, keep_k: int, mu: float, bootstrap: int, seed: int):
        """``app_leaderboard(ctx, ranker=ranker, keep_k=keep_k, mu=mu, bootstrap=bootstrap, seed=seed,
        votes=votes, …)``: the board of these kept graphs, made once, with this setting's μ and threshold."""
        item = self._item(ranker, keep_k, mu, bootstrap, seed)
        made = self._get(item)
        _, threshold = self.ctx.kept(int(keep_k), float(mu))
        return replace(made, table=made.table.copy(), distances=dict(made.distances),
                       params={**made.params, "mu": float(mu), "threshold": threshold})

    def has(self, ranker: str, keep_k: int, mu: float, bootstrap: int, seed: int) -> bool:
        """Whether the board of the graphs kept at (``keep_k``, ``mu``) is made (not merely being made)."""
        return self._has(self._item(ranker, keep_k, mu, bootstrap, seed))

    def warm(self, ranker: str, keep_k: int, mu: float, *, k_max: int, mus: Sequence[float], bootstrap: int,
             seed: int, reach: int = BOARD_K_REACH, mu_reach: int = BOARD_MU_REACH) -> None:
        """Have the background thread make the boards a next move from (``keep_k``, ``mu``) needs, nearest
        first: at each distance d = 1 … the K ± d boards at this μ, then the boards at μ ``d`` steps of
        ``mus`` either way at this K (settings that keep the same graphs as a board made or planned are one
        item). A new call replaces the previous plan. Returns at once."""
        steps = [float(m) for m in mus]
        here = min(range(len(steps)), key=lambda i: abs(steps[i] - float(mu)))
        k, settings = int(keep_k), []
        for d in range(1, max(reach, mu_reach) + 1):
            if d <= reach:
                settings += [(j, float(mu)) for j in (k - d, k + d) if 1 <= j <= int(k_max)]
            if d <= mu_reach:
                settings += [(k, steps[i]) for i in (here + d, here - d) if 0 <= i < len(steps)]
        plan = []
        for j, m in settings:
            try:
                plan.append(self._item(ranker, j, m, bootstrap, seed))
            except LensError:  # a setting the page would refuse: nothing to make ahead
                continue
        self._start(plan)

    def _make(self, item: tuple):
        from engine.views.appstate import app_leaderboard

        ranker, _, bootstrap, seed = item
        with self._lock:
            keep_k, mu = self._first[item]
        return app_leaderboard(self.ctx, ranker=ranker, keep_k=keep_k, mu=mu, bootstrap=bootstrap, seed=seed,
                               reference=self.reference, reference_note=self.reference_note,
                               votes=self.votes, extra_params=self.extra_params)
