"""The Leaderboard's point board of a new dataset version, kept by the import that made that version.

The very first open of the Leaderboard after an import at a million votes read the votes, the graphs that can
hold a triad and the reference, and ranked them (~0.55 s of CPU on the first view's path;
docs/notes/lb39-39.md) before its first view: the board was kept in the store (``engine.views.stored_board``)
only by that server's bootstrap job, after the view. ``keep_point_board`` computes the board the app's first
open shows first for the choice it opens on (every judge, every category, the default ranker ``RANKER``, the
app's ``SEED``, no bootstrap) from the same readers the app's caches wrap, and keeps it under the very key the
app reads (``board_key``: the dataset's new version, the choice, the reference files and the code digest with
the app's glue files, ``stored_board.APP_GLUE_FILES``): the app then reads it (a few kB) instead of the votes.
Its bootstrap stays the app's job, after the first view (seconds at a million votes: not an import's).

Kept only where the app would show that point board first: a count ranker's board of a verdict dataset of at
least ``leaderboard_first.DEFER_MIN_VOTES`` votes (below, the app computes the whole board at once; a
pair-count dataset has its own board), and at most ``KEEP_MAX_VOTES``. Never stale: the key holds the version
the import wrote; any later write moves it. Costs the import the board's computation (~0.5 s of CPU at a
million votes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.store.connection import Store
    from engine.views.appstate import AppBoard

RANKER = "bt"
"""The ranker the app's sidebar opens on (app.py's ``_choice("Ranker", …, "bt")``,
``app_pages._lens.linked_choice``)."""

SEED = 0
"""The app's fixed seed (``app_pages._lens.SEED``; tests/app/test_import_board.py checks they agree)."""

KEEP_MAX_VOTES = 2_000_000
"""Above this many votes the import keeps no board (the app's first open computes it, as before): at 10M votes
x 200 models the board cost the import ~10 s of CPU on its ~61 s and raised its peak memory from 1.16 to
1.77 GB (the import's bound is 2 GB; docs/notes/lb39-39.md). At a million votes: ~0.55 s, no higher peak."""


def board_extra_params(dataset: str, version: int, judge: str | None, category: str | None) -> dict:
    """The choice's parameters every first board carries (``first_board``'s ``extra_params``): the app's
    glue (``app_pages._lbopen_cache``) and ``point_board`` give the same."""
    return {"dataset": dataset, "dataset_version": version, "judge": judge, "category": category}


def board_key(dataset: str, judge: str | None, category: str | None, ranker: str, bootstrap: int,
              seed: int) -> dict:
    """The parameters a Leaderboard board of this choice is kept under (``stored_board.board_params`` with the
    digest of the engine and the app's glue files): the app's ``_lbopen_cache.board_key`` is this."""
    from engine.views.stored_board import APP_GLUE_FILES, board_params, code_digest

    return board_params(dataset, judge, category, ranker, bootstrap, seed, code_digest(APP_GLUE_FILES))


def point_board(store: Store, dataset: str) -> tuple[int, AppBoard] | None:
    """(the dataset's version, the point board the app's first open shows for the default choice), or None
    where the app would not show such a board first (a pair-count dataset, no vote, fewer than
    ``DEFER_MIN_VOTES`` votes). Read and computed as the app's ``first_board_for`` does: the votes in scan
    order (``RANKER`` is order-free), the graphs that can hold a triad, the reference, ``first_board``."""
    from engine.rankers.votes import votes
    from engine.ranking.reference import reference_for
    from engine.ranking.vote_query import store_vote_rows
    from engine.store.pair_counts import is_pair_count_dataset
    from engine.store.sql import scalar
    from engine.views import leaderboard_first

    if not leaderboard_first.first_open_applies(RANKER, None) or is_pair_count_dataset(store, dataset):
        return None
    version = store.dataset_version(dataset)
    rows = int(scalar(store.cursor(), "SELECT count(*) FROM verdicts WHERE dataset = ?", [dataset]))
    if rows > KEEP_MAX_VOTES * 2:
        # not read at all: over the bound (a battle log's vote is one row, a pair judged in both orders
        # two); a log of 2-4M rows is still read to count its votes (review of round 39)
        return None
    v = votes(store_vote_rows(store, dataset, order_by=None, judge=None, category=None))
    if len(v) == 0 or not leaderboard_first.DEFER_MIN_VOTES <= len(v) <= KEEP_MAX_VOTES:
        return None
    ctx = leaderboard_first.cycle_context(store, dataset, None, None, votes=v)
    ref, note = reference_for(dataset, None, store)
    board = leaderboard_first.first_board(v, ctx, ranker=RANKER, bootstrap=0, seed=SEED, reference=ref,
                                          reference_note=note,
                                          extra_params=board_extra_params(dataset, version, None, None))
    return version, board


SWITCH = "LENS_IMPORT_BOARD"
"""``$LENS_IMPORT_BOARD=0``: the import keeps no board (its memory then is the import's alone: the board's
reads add ~50 bytes a vote, up to ``KEEP_MAX_VOTES``; tests/test_ingest_limits.py measures the import's
batches)."""


def keep_point_board(store: Store, dataset: str) -> bool:
    """Compute ``point_board`` and keep it in the store under the app's key (``board_key``); returns whether
    a board was stored (never where ``$LENS_IMPORT_BOARD`` is 0). A failure is logged and never raised: the
    import it follows has succeeded, and the app computes the board itself as before."""
    import logging
    import os
    import time

    from engine.views.stored_board import has_board, store_board

    if os.environ.get(SWITCH, "").strip() == "0":
        return False
    try:
        start = time.perf_counter()
        made = point_board(store, dataset)
        if made is None:
            return False
        version, board = made
        params = board_key(dataset, None, None, RANKER, 0, SEED)
        if has_board(store, dataset, version, params):
            return False
        return store_board(store, dataset, version, params, board, time.perf_counter() - start)
    except Exception:  # noqa: BLE001 - an optimisation: the app's first open computes the board instead
        logging.getLogger(__name__).warning("keeping the Leaderboard's point board of %r failed", dataset,
                                            exc_info=True)
        return False
