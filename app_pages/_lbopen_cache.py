"""The Leaderboard's first open: the point board at once, its bootstrap intervals computed after it is on
screen (in a worker thread of this server), never a stale interval shown as current; both boards kept in the
store per dataset version, so a later server's first open reads them instead of the votes.

``cycle_context_for`` holds the graphs that can hold a triad (``engine.views.leaderboard_first``);
``first_board_for`` is the whole board of a count ranker without keep-K (``leaderboard_result`` answers from
it), read from the store where a server stored it (``stored_board_for``: ``engine.views.stored_board``, keyed
by the dataset's version, the choice, the reference's files and the code); ``bootstrap_job`` starts (once per
choice) the board with its intervals in the worker thread, which reads the votes and graphs in its own store
session, stores the point board and then the board with its intervals, and hands back the job, whose result
the page shows as soon as it is done.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st

from app_pages._lens import get_store, reference_for_key, votes_for
from engine.views.appstate import AppBoard, CacheKey

_LOG = logging.getLogger(__name__)


def cycle_context_for(key: CacheKey, ranker: str | None = None):
    """The SliderContext of the selection's graphs of three or more models (read-only, so a resource); none
    is read when the selection's votes (the Leaderboard's, cached) show every graph over one pair.
    ``ranker``: the board's ranker, whose votes (``votes_for``; read already by the caller) are the ones
    looked at when the context is not cached yet: which graphs are over one pair does not depend on the
    order the votes were read in, so an Elo board's first open reads its ordered votes and no second,
    scan-order copy. One cached context per selection, whoever asked first."""
    return _cycle_context(key, lambda: votes_for(key, ranker))


@st.cache_resource(max_entries=16, show_spinner="Reading the graphs that can hold a triad…")
def _cycle_context(key: CacheKey, _votes):
    """``cycle_context_for``'s cached context (``_votes``: a call giving the selection's votes, unhashed)."""
    from engine.views.leaderboard_first import cycle_context

    return cycle_context(get_store(), key.dataset, key.judge, key.category, votes=_votes())


def _board(key: CacheKey, ranker: str, bootstrap: int, seed: int, votes, ctx, ref, note: str):
    from engine.views.import_board import board_extra_params
    from engine.views.leaderboard_first import first_board

    return first_board(votes, ctx, ranker=ranker, bootstrap=bootstrap, seed=seed, reference=ref,
                       reference_note=note,
                       extra_params=board_extra_params(key.dataset, key.version, key.judge, key.category))


@st.cache_data(max_entries=32, show_spinner="Ranking…")
def first_board_for(key: CacheKey, ranker: str, bootstrap: int, seed: int):
    """The board of a count ranker over the whole selection (``engine.views.leaderboard_first.first_board``):
    the one stored for this choice and dataset version where there is one (``stored_board_for``: no vote
    read; kept by the import of that version, ``engine.views.import_board``, or by an earlier server's
    bootstrap job), else computed (stored later by the bootstrap job, off the first view's path)."""
    stored = stored_board_for(key, ranker, bootstrap, seed)
    if stored is not None:
        return stored
    ref, note = reference_for_key(key.dataset, key.category)
    return _board(key, ranker, bootstrap, seed, votes_for(key, ranker), cycle_context_for(key, ranker), ref,
                  note)


def board_key(key: CacheKey, ranker: str, bootstrap: int, seed: int) -> dict:
    """The parameters a stored board of this choice is kept under (``engine.views.import_board.board_key``:
    the digest of the engine and of this file and ``_lens``, ``stored_board.APP_GLUE_FILES``, which pass the
    board its inputs); the import keeps its point board under the same key."""
    from engine.views.import_board import board_key as kept_key

    return kept_key(key.dataset, key.judge, key.category, ranker, bootstrap, seed)


class _NotStored(Exception):
    """No board stored for the choice (raised so that Streamlit does not cache the miss)."""


@st.cache_data(max_entries=32, show_spinner=False)
def _stored_board(key: CacheKey, ranker: str, bootstrap: int, seed: int) -> AppBoard:
    from engine.views.stored_board import read_board

    board = read_board(get_store(), key.dataset, key.version, board_key(key, ranker, bootstrap, seed))
    if board is None:
        raise _NotStored
    return board


def stored_board_for(key: CacheKey, ranker: str, bootstrap: int, seed: int) -> AppBoard | None:
    """The board of this choice stored for the dataset's version ``key.version`` (a hit cached in this
    process), or None. A miss is asked again once the store file has changed since it was seen
    (``Store.read_unless_changed``: the bootstrap job may have stored the board since), and not before: the
    rerun of a page whose board is computed, not stored, opens no store file for the question (~30 ms)."""

    def stored() -> bool:  # a hit leaves the board in _stored_board's cache
        try:
            _stored_board(key, ranker, bootstrap, seed)
        except _NotStored:
            return False
        return True

    if not get_store().read_unless_changed(f"stored_board:{key!r}:{ranker}:{bootstrap}:{seed}", stored):
        return None
    try:
        return _stored_board(key, ranker, bootstrap, seed)
    except _NotStored:  # evicted from the cache and gone from the store since
        return None


def keep_board(key: CacheKey, ranker: str, bootstrap: int, seed: int, board: AppBoard,
               seconds: float | None = None) -> bool:
    """Store ``board`` (computed for ``key``) for later servers, unless a board is stored under its key
    already; a failure is logged, never raised (the board shown is not affected). Returns whether it was
    written."""
    from engine.views.stored_board import has_board, store_board

    store = get_store()
    params = board_key(key, ranker, bootstrap, seed)
    try:
        with store.session():
            if has_board(store, key.dataset, key.version, params):
                return False
            return store_board(store, key.dataset, key.version, params, board, seconds)
    except Exception:  # noqa: BLE001 - keeping it is an optimisation: the next server computes it again
        _LOG.warning("storing the Leaderboard's board failed", exc_info=True)
        return False


BOOTSTRAP_NICE = 10
"""How much lower the bootstrap thread's scheduling priority is than the server's other threads (Linux
niceness, per thread): a page a user opens while a million-vote bootstrap runs gets the cores first (the
second open of the Leaderboard competed with it: 2.2 s, 1.7 s of CPU); with the cores idle it runs as fast."""


def _lower_priority() -> None:
    """The worker thread's initializer: its own niceness raised by ``BOOTSTRAP_NICE`` (a Linux thread id is a
    process id to ``setpriority``); nothing where the platform has no per-thread priority."""
    import os

    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + BOOTSTRAP_NICE))
    except (AttributeError, OSError):  # not Linux/Unix, or not allowed: the job runs at the server's priority
        pass


class BootstrapJobs:
    """The server's bootstrap jobs by choice, the newest 16 kept: one worker thread, so two sessions asking
    for the same intervals share one job and a burst of choices runs one at a time; the thread runs at a
    lower priority than the pages (``BOOTSTRAP_NICE``)."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lens-bootstrap",
                                       initializer=_lower_priority)
        self.jobs: OrderedDict[tuple, Future] = OrderedDict()
        self.lock = threading.Lock()  # sessions run in threads of their own

    def get(self, key: tuple, start) -> Future:
        """The job of ``key``, started with ``start`` on the first ask, and again where the last one ended on
        a store held by another process (``StoreBusy``: the job reads the store in its own thread, so a
        command-line writer may hold it then; a later ask tries again rather than keep that error)."""
        with self.lock:
            job = self.jobs.get(key)
            if _ended_busy(job):
                job = None
            if job is None:
                job = self.pool.submit(start)
                self.jobs[key] = job
                while len(self.jobs) > 16:
                    self.jobs.popitem(last=False)
            self.jobs.move_to_end(key)
            return job


@st.cache_resource(show_spinner=False)
def _jobs() -> BootstrapJobs:
    return BootstrapJobs()


def _ended_busy(job: Future | None) -> bool:
    """Whether ``job`` ended on a store held by another process (``StoreBusy``): it is started again."""
    from engine.store.connection import StoreBusy

    return job is not None and job.done() and isinstance(job.exception(), StoreBusy)


def started_job(key: CacheKey, ranker: str, bootstrap: int, seed: int) -> Future | None:
    """The bootstrap job of this choice when one was started (None: not yet, or the last one ended on a store
    held by another process and is to be started again)."""
    jobs = _jobs()
    with jobs.lock:
        job = jobs.jobs.get((key, ranker, bootstrap, seed))
    if _ended_busy(job):
        return None  # to be started again (``BootstrapJobs.get``)
    return job


def bootstrap_job(key: CacheKey, ranker: str, bootstrap: int, seed: int) -> Future:
    """The job computing the board with ``bootstrap`` resamples (started on the first ask; ``_bootstrapped``
    in the worker thread: nothing is read in the script's thread, whose run ends with the first view). The
    job computes the intervals as background work (``engine.foreground``, ``_bootstrapped``): while a page's
    script or fragment run is on (this session's next page, another session's), it pauses at its next
    checkpoint (between the bootstrap's draws and between its fit's iterations, ~0.05-0.3 s of CPU apart at a
    million votes), so the page gets the cores and the interpreter first; the same calls on the same inputs,
    so the same numbers, only later."""
    return _jobs().get((key, ranker, bootstrap, seed), lambda: _bootstrapped(key, ranker, bootstrap, seed))


def _bootstrapped(key: CacheKey, ranker: str, bootstrap: int, seed: int) -> AppBoard:
    """In the bootstrap worker thread: the board stored for the choice if a server stored it, else the point
    board kept (when it was computed: ``keep_board``) and the board with its intervals computed from the
    votes, graphs and reference (cached: the point board read them, unless it came from the store) and kept.
    The store is held in a session of this thread's own (the script run's may have ended) while it reads and
    while it writes, not while the bootstrap computes: a command-line writer can take the store meanwhile."""
    import time

    from engine.foreground import background, checkpoint

    quiet_worker_threads()
    with get_store().session():
        stored = stored_board_for(key, ranker, bootstrap, seed)
        if stored is not None:
            return stored
        point = first_board_for(key, ranker, 0, seed)
        start = time.perf_counter()
        votes, ctx = votes_for(key, ranker), cycle_context_for(key, ranker)
        ref, note = reference_for_key(key.dataset, key.category, key.version)
    # only the write and the computation pause for the pages' runs (``bootstrap_job``): no cached call of the
    # pages in them (a run asking for a value this thread were making under Streamlit's lock would wait out
    # each pause), and no checkpoint while the store is held
    with background():
        checkpoint()
        keep_board(key, ranker, 0, seed, point)
        board = _board(key, ranker, bootstrap, seed, votes, ctx, ref, note)
    keep_board(key, ranker, bootstrap, seed, board, time.perf_counter() - start)
    return board


QUIET_THREADS = ("lens-bootstrap", "lens-prewarm")
"""The server's own threads that call the pages' cached functions with no script run: the bootstrap worker
and the prewarm (``app_pages._prewarm``)."""


class _NoContextWarning(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warning for ``QUIET_THREADS``: their cached calls run
    with no session (their spinners have nowhere to go, by design)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.threadName.startswith(QUIET_THREADS)


_QUIET = _NoContextWarning()


def quiet_worker_threads() -> None:
    """The filter installed once on Streamlit's logger of that warning."""
    logger = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


def prewarm_first_open(query: dict[str, str]) -> tuple[CacheKey, str] | None:
    """Before the first session runs: what the Leaderboard's first run reads from the store for the choice
    an address with ``query`` opens on (``app_pages._lens.linked_choice``), into the very caches the run
    reads (the listing and the dataset's choices of the sidebar, the votes, the graphs that can hold a triad,
    the reference and the point board: ``warm_first_open``), in one store session. Called by the server's
    prewarm thread (``app_pages._prewarm``) when the browser asks for the Leaderboard's address, ~0.8 s before
    the session's script runs; a run that meets a value still being computed waits for it (Streamlit computes
    a cached value once per key). Every value is cached under the ``CacheKey`` read here, the dataset's
    version in it, and the run looks its values up under the key it reads itself: a dataset imported,
    replaced or deleted since is a new key, computed afresh, never the prewarmed value. Returns the key and
    ranker warmed (None: the store holds no dataset)."""
    from app_pages._lens import linked_choice

    with get_store().session():
        chosen = linked_choice(query)
        if chosen is None:
            return None
        dataset, judge, category, ranker = chosen
        key = CacheKey.of(get_store(), dataset, judge, category)
        warm_first_open(key, ranker)
    return key, ranker


def warm_first_open(key: CacheKey, ranker: str) -> None:
    """The boards the Leaderboard's ``first_open`` asks for, in its order, without a page: the whole
    board where the page computes it whole (not a count ranker, a pair-count dataset, or fewer than
    ``DEFER_MIN_VOTES`` votes), else the whole board where one is stored (``stored_board_for``), else the
    point board (read where stored; its bootstrap is the page's job, started after its first view). A point
    board not stored has its parts (the reference, the votes, the graphs that can hold a triad) asked for one
    at a time first, each into its own cache entry."""
    from app_pages._lens import B_DEFAULT, SEED, leaderboard_result, pair_counts_for, revision_for
    from engine.views import leaderboard_first

    revision_for(key.dataset, key.version)  # the page's caption
    if not leaderboard_first.first_open_applies(ranker, None) or pair_counts_for(key.dataset, key.version):
        leaderboard_result(key, ranker, None, 1.0, B_DEFAULT, SEED)
        return
    if stored_board_for(key, ranker, B_DEFAULT, SEED) is not None:  # the whole board kept: nothing to read
        return
    if stored_board_for(key, ranker, 0, SEED) is None:  # the point board's parts, one cache entry each
        for step in (lambda: reference_for_key(key.dataset, key.category, key.version),
                     lambda: votes_for(key, ranker), lambda: cycle_context_for(key, ranker)):
            step()
    point = leaderboard_result(key, ranker, None, 1.0, 0, SEED)
    if int(point.params.get("n_votes", 0)) < leaderboard_first.DEFER_MIN_VOTES:
        leaderboard_result(key, ranker, None, 1.0, B_DEFAULT, SEED)


def stop_polling() -> bool:
    """Called in a ``run_every`` fragment's run: tell the browser to stop that fragment's timer (its next runs
    would redraw the same board every second until the page's next full run). Streamlit has no public call
    for it; this sends the message Streamlit itself sends for a nested fragment that is gone
    (``stop_auto_rerun``, 1.67) with the running fragment's id. Returns whether it was sent: False where this
    Streamlit lacks the message or the id (the timer then goes on, each tick drawing the same board)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return False
    try:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        fragment_id = ThreadState.get().fragment_id
    except (ImportError, AttributeError, RuntimeError):  # older: the id on the run's context
        fragment_id = getattr(ctx, "current_fragment_id", None)
    try:
        msg = ForwardMsg()
        msg.stop_auto_rerun.fragment_ids.append(fragment_id)
    except (NameError, AttributeError, TypeError, ValueError):  # no such message, or no id
        return False
    ctx.enqueue(msg)
    return True
