"""What every page shares: the one store, the sidebar's current choice, cached engine calls.

Pages are short scripts that read the shared choice and render; all computation is an engine
call. Results are cached with ``st.cache_data`` keyed by ``engine.views.appstate.CacheKey`` (dataset
version + filters) and the parameters, so a slider move only recomputes what changed.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import traceback
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import streamlit as st

from app_pages._charts_last import stop
from engine.errors import LensError
from engine.foreground import foreground
from engine.ingest.shipped import open_store
from engine.judging.completeness import incomplete_sentences
from engine.store.connection import (
    Store,
    StoreBusy,
    damaged_store_error,
    is_damaged_store,
    resolve_db_path,
)
from engine.store.datasets import dataset_choices, dataset_stamps, dataset_versions, stamped_version
from engine.terminal import escape_controls
from engine.views.appstate import ALL, CacheKey
from engine.views.dataview import without_paths
from engine.views.viz import escape_md

LOCK_WAIT_S = float(os.environ.get("LENS_LOCK_WAIT", "20"))
"""How long a page waits while another process (a judge run, an import) holds the store file."""


_HEAP_FROZEN = False


def freeze_startup_heap() -> None:
    """Once per server process, before the first page runs: move every object alive after the app's
    imports (modules, classes, functions: never garbage) out of the garbage collector's sight
    (``gc.freeze``). Streamlit runs a full collection after every script and fragment run
    (``runner.postScriptGC``), holding the interpreter lock while it walks every tracked object:
    ~0.1 s of CPU per run with pandas, Plotly and the engine loaded, paid by each slider move and each
    new tab before its last message goes out. The collection still runs and still frees everything a
    run leaves behind; only the import-time objects are skipped (bench/app_roundtrip.py).

    No collection first: on the server's first run it walked ~140,000 objects to free about ten (0.08 s of the
    Leaderboard's first open, holding the interpreter lock); those few, if any, stay frozen."""
    global _HEAP_FROZEN
    if _HEAP_FROZEN:
        return
    _HEAP_FROZEN = True
    import plotly.graph_objects  # noqa: F401 - every chart page's import (the default page's too): frozen with the rest

    gc.freeze()


@st.cache_resource(show_spinner="Opening the store…")
def _store(path: str) -> Store:
    # keep_open=False: the file is held only while a script run (or a fragment) is in a session,
    # so `python -m engine judge|import …` can write to the same store while the app is open.
    wait = float(os.environ.get("LENS_LOCK_WAIT", LOCK_WAIT_S))
    return open_store(path, keep_open=False, lock_wait_s=wait)


def get_store() -> Store:
    """The one Store of this server process (per $LENS_DB path)."""
    return _store(str(resolve_db_path()))


def store_session():
    """``with store_session():`` holds the store file for one script run or fragment run."""
    return get_store().session()


def user_text(exc: BaseException | str) -> str:
    """An error as a page shows it: server file paths cut to their names (the store file, an upload's
    temp file), then escaped so Markdown and Streamlit syntax in it show as written."""
    return escape_md(without_paths(str(exc), [str(resolve_db_path())]))


def busy_notice(exc: StoreBusy, key: str) -> None:
    """The store is held by another process (a judge run, an import): a warning and a retry button."""
    st.warning(user_text(exc), icon=":material/hourglass_top:")
    st.button("Try again", icon=":material/refresh:", key=key)


@dataclass
class SessionOutcome:
    """What ``guarded_session`` ended with: ``busy`` when the store was held past the lock wait."""

    busy: bool = False


@contextmanager
def guarded_session(key: str = "busy_retry"):
    """``with guarded_session():`` = ``store_session()`` for a script run (app.py) or a fragment run
    (the inspector's graph), where a store held past the lock wait ends the block with
    ``busy_notice`` instead of a traceback, a stray ``LensError`` with its sentence, a store file found
    damaged (``engine.store.connection.is_damaged_store``) with the sentence the command line gives and
    any other error with ``internal_error`` (never a traceback or a server path). ``key`` names the retry
    button (one per caller). The run is foreground work (``engine.foreground``): the warming grids'
    background threads pause while it runs, so a slider move's rerun does not share the interpreter with
    them."""
    outcome = SessionOutcome()
    try:
        with foreground(), store_session():
            yield outcome
    except StoreBusy as exc:
        outcome.busy = True
        busy_notice(exc, key)
    except LensError as exc:  # a user mistake no page caught: its sentence, never a traceback
        show_error(exc)
    except Exception as exc:  # noqa: BLE001 - a bug or a damaged store: one sentence here, details in the log
        if is_damaged_store(exc):  # a damaged part of the store file first read by this page
            show_error(damaged_store_error(resolve_db_path(), exc, verb="read"))
        else:
            internal_error(exc)


def internal_error(exc: BaseException) -> None:
    """An unexpected error: a sentence naming only its kind on the page (a traceback would show server
    file paths and code), the full traceback in the server's log (stderr), control characters escaped
    (``engine.terminal``)."""
    trace = "".join(traceback.format_exception(exc))  # escaped: store names reach the server's terminal
    logging.getLogger("tournament_lens.app").error("page failed\n%s", escape_controls(trace).rstrip())
    st.error(
        f"This page stopped on an unexpected error ({type(exc).__name__}); the details are in the "
        "server's log. Try another choice in the sidebar, or reload the page."
    )


@dataclass(frozen=True)
class Choice:
    """The sidebar's current selection, as every page reads it."""

    key: CacheKey
    ranker: str

    @property
    def dataset(self) -> str:
        return self.key.dataset

    def caption(self) -> str:
        """One line naming exactly the data behind a result (escaped by the caller's st.caption)."""
        judge = self.key.judge or "all judges"
        cat = self.key.category or "all categories"
        # the dataset's own count, not the cache number
        version = revision_for(self.key.dataset, self.key.version)
        text = f"dataset {self.key.dataset} (version {version}) · judge {judge} · {cat}"
        return escape_md(text)


@st.cache_data(max_entries=64, show_spinner=False)
def revision_for(dataset: str, version: int) -> int:
    """The dataset's change count as users see it (``Store.dataset_revision``) at this store-wide
    ``version``: the two move together on every write (``engine.store.writes``), so it is read once per
    version, and a slider move's caption opens no store file."""
    return get_store().dataset_revision(dataset)


def warn_incomplete(datasets: list[str] | None) -> int:
    """A warning box per unfinished judge, generate or perturb run of ``datasets`` (every dataset when
    None): the run left its dataset part-written (``engine.judging.completeness``). Returns how many."""
    sentences = incomplete_sentences(get_store(), datasets)
    for sentence in sentences:
        st.warning(escape_md(sentence[0].upper() + sentence[1:]), icon=":material/warning:")
    return len(sentences)


def current(warn: bool = True) -> Choice:
    """The current sidebar choice; stops the page with a message when there is no dataset. A dataset
    that an unfinished judge, generate or perturb run left part-written gets its warning here, at the
    top of every page that shows it (``warn_incomplete``; ``warn=False`` for a page that has warned
    about every dataset already)."""
    store = get_store()
    dataset = st.session_state.get("dataset")
    if not dataset or dataset not in dataset_versions(store):
        st.info("No dataset is selected. Import one on the Data page.")
        st.stop()
    key = CacheKey.of(store, dataset, st.session_state.get("judge"), st.session_state.get("category"))
    if warn:
        warn_incomplete([dataset])
    return Choice(key, st.session_state.get("ranker", "bt"))


def remember(key: str) -> None:
    """on_change: copy a widget's value into its plain twin ``_<key>`` (widget state alone is
    dropped when the user visits another page; the twin is written back before the widget)."""
    st.session_state[f"_{key}"] = st.session_state[key]


def show_error(exc: LensError) -> None:
    """A user mistake: one sentence in an error box (``user_text``: escaped, no server paths), no
    traceback."""
    st.error(user_text(exc))


def or_stop(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or, on a user mistake, its sentence in an error box and the page
    stopped: what every page does with the one result it cannot render without."""
    try:
        return fn(*args, **kwargs)
    except LensError as exc:
        show_error(exc)
        stop()  # the charts placed so far first (app_pages._charts_last)


def datasets_table():
    """``Store.datasets()``'s frame from the stored per-dataset summaries (``engine.store.datasets.
    dataset_listing``: counted once per dataset version), read again only when a dataset is added,
    changed (its version moves) or removed, or while an attached dataset's files cannot be read (its
    version does not move when they come back: its zeros are not kept)."""
    stamp = dataset_stamps(get_store())
    frame = _datasets_table(stamp)
    if frame.attrs.get("provisional"):
        _datasets_table.clear(stamp)
    return frame


@st.cache_data(max_entries=4, show_spinner=False)
def _datasets_table(stamp: tuple):
    from engine.store.datasets import dataset_listing

    return dataset_listing(get_store(), battles=True)


def choices(dataset: str, version: int):
    """The dataset's judges and categories (``dataset_choices``), kept per version unless its attached
    files could not be read (then asked again at the next run)."""
    got = _choices(dataset, version)
    if got.provisional:
        _choices.clear(dataset, version)
    return got


@st.cache_data(max_entries=32, show_spinner=False)
def _choices(dataset: str, version: int):
    return dataset_choices(get_store(), dataset)


def pick(value: object, options: list[str], default: str) -> str:
    """The sidebar's rule for a remembered or linked choice (app.py's ``_choice``): ``value`` where it is
    offered, else ``default`` where that is, else the first option."""
    if value in options:
        return str(value)
    return default if default in options else options[0]


def linked_choice(query: dict[str, str]) -> tuple[str, str, str, str] | None:
    """(dataset, judge, category, ranker) the sidebar opens on for a first session whose address carries
    ``query`` (``?dataset=…&judge=…``; app.py's ``_seed_from_query`` then ``sidebar``), from the store's
    listing and the dataset's choices (both cached as the sidebar reads them); None when the store holds no
    dataset. Read by the server's prewarm (``app_pages._prewarm``) before the session exists."""
    from engine.rankers import RANKERS
    from engine.store.schema import DEFAULT_DATASET

    datasets = datasets_table()["name"].tolist()
    if not datasets:
        return None
    dataset = pick(query.get("dataset"), datasets, DEFAULT_DATASET)
    ch = choices(dataset, stamped_version(get_store(), dataset))
    return (dataset, pick(query.get("judge"), [ALL, *ch.judges], ALL),
            pick(query.get("category"), [ALL, *ch.categories], ALL),
            pick(query.get("ranker"), list(RANKERS), "bt"))


B_DEFAULT = 200
"""Bootstrap draws behind every interval the app shows."""
SEED = 0
"""The app's fixed seed: the same choice always shows the same numbers."""
MU_DEFAULT = 1.0
"""Paper 000's weight of bad 4-cycles in S_mu (Section 4)."""
CURVE_RESAMPLES = 100
"""Bootstrap draws behind each point's band on the sensitivity curves."""


def _filters(key: CacheKey) -> dict:
    return {"judge": key.judge, "category": key.category}


@st.cache_data(max_entries=16, show_spinner="Loading verdicts…")
def verdicts_for(key: CacheKey):
    """The canonical verdict frame of the current choice (invalid verdicts included)."""
    return get_store().verdicts(key.dataset, **_filters(key))


def votes_for(key: CacheKey, ranker: str | None = None):
    """The votes of the current choice (``engine.rankers.votes``) as ``ranker`` reads them: in the order an
    order-dependent ranker (Elo) reads them on the command line (``engine.ranking.count_board.
    store_vote_order``: time order when a verdict of the dataset has a timestamp, else source order), with
    that order's words on them (``Votes.order_used``), so the app's Elo board is the CLI's and the same in
    every server process; in DuckDB's scan order, with no ORDER BY, for every other ranker (None: the votes
    only counted, e.g. for which graphs are over one pair), whose result does not depend on the order. The
    order-free read is one cache entry shared by every count ranker and the cycle context."""
    return _votes_read(key, vote_order_for(key, ranker))


def vote_order_for(key: CacheKey, ranker: str | None) -> tuple[str, str] | None:
    """The order ``ranker`` reads the selection's votes in and its words (``Ranker.vote_order`` with its
    default parameters, the timestamps looked at only when the ranker asks, as on the command line); None
    for an order-free ranker or no ranker."""
    if ranker is None:
        return None
    from engine.rankers.objects import ranker_object

    obj = ranker_object(ranker)
    return obj.vote_order(obj.check({}), lambda: timestamped_for(key.dataset, key.version))


@st.cache_data(max_entries=32, show_spinner=False)
def timestamped_for(dataset: str, version: int) -> bool:
    """Whether a verdict of ``dataset`` (at this version) has a timestamp: what decides an Elo board's vote
    order, as on the command line (``engine.ranking.count_board.store_vote_order``)."""
    from engine.ranking.count_board import store_has_time

    return store_has_time(get_store(), dataset)


@st.cache_resource(max_entries=16, show_spinner="Counting votes…")
def _votes_read(key: CacheKey, order: tuple[str, str] | None):
    """The votes of the current choice read by DuckDB in ``order`` (``Ranker.vote_order``'s (order, words);
    None: the scan order): the count rankers' input. A resource of read-only arrays (``Votes.read_only``), not
    cached data: cached data is a pickled copy per call (41 MB at a million votes, three calls in the
    Leaderboard's first open), and the one object keeps the key sorts its first reader made
    (``Votes.graph_runs``) for the next."""
    from dataclasses import replace

    from engine.rankers.votes import votes
    from engine.ranking.vote_query import store_vote_rows

    rows = store_vote_rows(get_store(), key.dataset, order_by=None if order is None else order[0],
                           **_filters(key))
    v = votes(rows)
    return (v if order is None else replace(v, order_used=order[1])).read_only()


@st.cache_resource(max_entries=16, show_spinner="Building tournament graphs…")
def stack_for(key: CacheKey):
    """The graphs of the current choice (one per judge, prompt, variant and turn) as
    ``engine.graphs.buckets.GraphBuckets``: each graph over its own models, so a battle log of a
    million one-pair graphs holds a million 2 × 2 cells, not a (T, n, n) stack. Read-only, so
    cached as a resource (no copy per rerun); ``keys`` and ``T`` as on a GraphStack. The verdicts are
    read for it and let go (not through ``verdicts_for``, whose cache would hold a second copy), and
    only the columns a graph is built from (``engine.graphs.stack.GRAPH_COLUMNS``): no rationale."""
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS

    return build_buckets(get_store().verdicts(key.dataset, columns=GRAPH_COLUMNS, **_filters(key)))


def dense_stack_for(key: CacheKey, what: str):
    """The current choice as one dense GraphStack, for the computations that still need one model
    axis across graphs (the sensitivity curves, the Table-2 protocols); a sentence instead when no
    graph can hold a cycle (those curves and tables rank by keep-K on cycle scores) or the stack would
    exceed ``engine.views.appstate.DENSE_CELL_LIMIT``."""
    from app_pages._lbopen_cache import cycle_context_for
    from engine.views.appstate import DENSE_CELL_LIMIT

    big = cycle_context_for(key)
    if big is not None and big.stack.at_least(3):  # so the check below is the first to refuse, if any
        T, n = truncation_pool_for(key).n_graphs, selection_models_for(key)
        if T * n * n > DENSE_CELL_LIMIT:  # refused from counts: a battle log's graphs are never built for it
            raise dense_refusal(what, T, n, DENSE_CELL_LIMIT)
    graphs = stack_for(key)
    if not graphs.at_least(3):
        raise LensError(f"No {what}: no graph of the selection has 3 or more models, so none can hold a "
                        "cycle and keep-K has nothing to choose by.")
    if graphs.T * graphs.n * graphs.n > DENSE_CELL_LIMIT:
        raise dense_refusal(what, graphs.T, graphs.n, DENSE_CELL_LIMIT)
    return graphs.dense()


def dense_refusal(what: str, graphs: int, models: int, limit: int) -> LensError:
    """The sentence refusing a dense stack of ``graphs`` graphs over ``models`` models."""
    return LensError(f"No {what}: the {graphs:,} graphs over {models} models are too many for them "
                     f"(more than {limit:,} graph × model × model cells); choose a judge or category.")


@st.cache_resource(max_entries=16, show_spinner="Listing the prompts…")
def choice_tree_for(key: CacheKey):
    """The Prompt inspector's pickers (``engine.views.inspector.ChoiceTree``: prompt → variant → judges
    with a graph) from the keys the store lists (``engine.store.graph_keys``), not from every graph built:
    the page draws one prompt's graph at a time. Read-only, so a resource."""
    from engine.store.graph_keys import prompt_variant_judges
    from engine.views.inspector import ChoiceTree

    rows = prompt_variant_judges(get_store(), key.dataset, **_filters(key))
    return ChoiceTree.of_indexed(rows.prompts, rows.text_rank, rows.prompt, rows.variant, rows.judge)


@st.cache_resource(max_entries=64, show_spinner="Reading the prompt's graphs…")
def prompt_graphs_for(key: CacheKey, prompt: str):
    """The graphs of one prompt of the current choice (its variants, turns and judges) as
    ``engine.graphs.buckets.GraphBuckets``: each graph is built from its own verdicts alone, so these are
    the graphs ``stack_for`` holds for that prompt, read without the rest."""
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS

    return build_buckets(get_store().verdicts(key.dataset, columns=GRAPH_COLUMNS, prompt_id=prompt,
                                              **_filters(key)))


@st.cache_data(max_entries=64, show_spinner="Reading the graph…")
def graph_view_for(key: CacheKey, prompt: str, t: int):
    """Graph ``t`` of ``prompt``'s graphs (``prompt_graphs_for``) as the inspector shows it (models,
    triads, pair loads, PGED and ELSPR changes)."""
    from engine.views.inspector import graph_view

    return graph_view(prompt_graphs_for(key, prompt), t)


@st.cache_data(max_entries=64, show_spinner=False)
def inspector_html_for(key: CacheKey, prompt: str, t: int, method: str, triad: int | None) -> tuple[str, str]:
    """(the before / after drawing of graph ``t`` of ``prompt`` with ``triad`` highlighted, about 0.5 MB of
    HTML; a sentence on the models left out when the graph has more than ``FOCUS_LIMIT`` models, else "")."""
    from engine.views.inspector_draw import focus_models, focus_summary, inspector_html, restrict_view

    view = graph_view_for(key, prompt, t)
    keep = focus_models(view, triad)
    shown = view if len(keep) == len(view.models) else restrict_view(view, keep)
    return inspector_html(shown, method, triad), focus_summary(view, keep)


@st.cache_data(max_entries=16, show_spinner=False)
def prompt_options_for(key: CacheKey, judge: str):
    """The prompt picker's options for ``judge`` (the worst ``MENU_MAX`` of the prompts it judged), their
    labels (bad triads and S_μ of that judge's graphs) and the number of its prompts; the whole menu (a
    row per prompt: text, bad triads, S_μ) is built here and not kept."""
    from app_pages._lbopen_cache import cycle_context_for
    from engine.views.cycles_view import selection_overview
    from engine.views.inspector import judged_by, prompt_menu, prompt_options

    # cycle_overview(key).graphs (per-graph cycle counts of the graphs of 3+ models, all its graphs frame
    # holds) without the SQL counts of the other graphs that the Cycles page's matrices need
    ctx = cycle_context_for(key)
    graphs = selection_overview(None if ctx is None else ctx.stack, 0, []).graphs
    menu = prompt_menu(graphs, prompt_texts_for(key.dataset, key.version), judge=judge)
    return prompt_options(menu, judged_by(choice_tree_for(key), judge))


@st.cache_data(max_entries=64, show_spinner=False)
def triad_view_for(key: CacheKey, prompt: str, t: int, triad: int):
    """The verdicts, rationales and answers behind triad ``triad`` of graph ``t`` of ``prompt``."""
    from engine.views.inspector_triads import triad_view

    view = graph_view_for(key, prompt, t)
    answers = get_store().answer_texts(key.dataset, str(view.key["prompt_id"]))
    verdicts = get_store().verdicts(key.dataset, prompt_id=prompt, **_filters(key))
    return triad_view(view, triad, verdicts, answers)


@st.cache_data(max_entries=16, show_spinner=False)
def prompt_texts_for(dataset: str, version: int):
    """Every stored question of ``dataset`` (``version`` keys the cache)."""
    return get_store().prompt_texts(dataset)


@st.cache_data(max_entries=16, show_spinner="Counting cycles…")
def cycle_overview(key: CacheKey):
    """The Cycles page's heatmaps, distributions and graph table for the current choice, from its graphs of
    3 or more models (shared with the Leaderboard's cycle columns) and SQL counts for the rest
    (``engine.views.cycles_view.selection_overview``): the selection's million one-pair graphs never built."""
    from app_pages._cycles3_cache import selection_win_ties_for
    from app_pages._lbopen_cache import cycle_context_for
    from engine.views.cycles_view import selection_overview
    from engine.views.viz import nb_fit_frame

    ctx = cycle_context_for(key)
    models, _, _, n_graphs = selection_win_ties_for(key)
    return selection_overview(None if ctx is None else ctx.stack, n_graphs, models, nb_fit=nb_fit_frame)


@st.cache_data(max_entries=16, show_spinner="Building the model × model matrices…")
def pair_matrices_for(key: CacheKey, ranker: str):
    """Win fraction, battles and bad triads per model pair, in the ranker's point order (no bootstrap),
    and the win probabilities the ranker's fit predicts."""
    from app_pages._cycles3_cache import selection_win_ties_for
    from engine.views.matrix_view import pair_matrices_from

    board = leaderboard_result(key, ranker, None, 1.0, 0, SEED)
    order = board.table["model"].tolist()
    models, W, T, _ = selection_win_ties_for(key)  # SQL counts: the one-pair graphs are never built
    return pair_matrices_from(models, W, T, order, cycle_overview(key).per_pair.to_numpy(), board=board)


@st.cache_data(max_entries=8, show_spinner="Comparing judges…")
def judge_diagnostics(dataset: str, version: int, category: str | None, by_category: bool):
    """The Judges page's tables for every judge of ``dataset`` (``version`` keys the cache)."""
    from app_pages._judge_report import judge_counts_for
    from app_pages._lbopen_cache import cycle_context_for
    from engine.store.graph_tally import graph_count
    from engine.views.judges_view import judge_overview_of_store

    # every judge: the graphs of 3+ models cached for the sidebar's "(all)" (PNT, SNTD and the entropies
    # count nothing else; the one-pair graphs of a battle log are only counted, in SQL); κ and the position
    # tables from verdict counts grouped in the store (a frame of a million verdicts cost 25 s of CPU), the
    # counts shared with the page's judge report
    ctx = cycle_context_for(CacheKey(dataset, version, None, category))
    counted = judge_counts_for(dataset, version, category)
    counts, n_graphs = counted if counted is not None else (None, graph_count(get_store(), dataset,
                                                                              category=category))
    return judge_overview_of_store(get_store(), dataset, category, None if ctx is None else ctx.stack,
                                   by_category, n_graphs=n_graphs, counts=counts)


def reference_for_key(dataset: str, category: str | None, version: int | None = None):
    """(reference ratings or None, a note naming it or saying why there is none): a synthetic
    dataset's ground truth, else the LMArena ratings of the mapped models. ``version``: the dataset's
    version when the caller holds it (a CacheKey's), so a cached answer needs no read of the store."""
    return _reference(dataset, stamped_version(get_store(), dataset) if version is None else version,
                      category)


@st.cache_data(max_entries=8, show_spinner=False)
def _reference(dataset: str, version: int, category: str | None):
    from engine.ranking.reference import reference_for

    return reference_for(dataset, category, get_store())


@st.cache_resource(max_entries=16, show_spinner=False)
def slider_context(key: CacheKey):
    """Per-selection work shared by every slider move (read-only, so cached without copies)."""
    from engine.views.appstate import SliderContext

    return SliderContext.of(stack_for(key))


@st.cache_data(max_entries=16, show_spinner="Counting graphs…")
def truncation_pool_for(key: CacheKey):
    """The Truncation page's graph counts (``engine.views.truncation_view.TruncationPool``) from the
    selection's graphs of three or more models (shared with the Leaderboard and Cycles pages) and a SQL
    tally of the rest: a battle log's million one-pair graphs, which keep-K can never keep, are not built
    to say that none can be kept."""
    from app_pages._lbopen_cache import cycle_context_for
    from engine.store.graph_tally import graph_tally
    from engine.views.truncation_view import truncation_pool

    tally = graph_tally(get_store(), key.dataset, **_filters(key))
    return truncation_pool(cycle_context_for(key), tally)


def pool_context_for(key: CacheKey):
    """The SliderContext keep-K cuts from: the selection's graphs of three or more models
    (``app_pages._lbopen_cache.cycle_context_for``), the only graphs keep-K can keep, each scored and
    tie-broken as in the whole selection's context (tests/test_truncation_pool_boards.py); the whole
    selection's context when none has three models (its refusal then says why)."""
    from app_pages._lbopen_cache import cycle_context_for

    big = cycle_context_for(key)
    return slider_context(key) if big is None else big


def pool_size_for(key: CacheKey) -> int:
    """How many graphs the Truncation page's keep-K chooses from (originals and paraphrases)."""
    return slider_context(key).n_pool


@st.cache_data(max_entries=32, show_spinner="Fitting the win rates against the baseline…")
def baseline_result(key: CacheKey, ranker: str, baseline: str, bootstrap: int, seed: int,
                    style_ci: str | None = None):
    """Each model's win rate against ``baseline`` (Arena-Hard's score, ``engine.views.baseline_view``)
    and the notes saying how it was computed; ``style_ci``: from the style-controlled fit with intervals
    by this method (None: the plain fit)."""
    from engine.views.baseline_view import baseline_table

    return baseline_table(get_store(), key.dataset, ranker, baseline, bootstrap=bootstrap, seed=seed,
                          style_control=style_ci is not None, ci=style_ci, **_filters(key))


@st.cache_data(max_entries=32, show_spinner=False)
def pair_counts_for(dataset: str, version: int) -> bool:
    """Whether the dataset (at this version) holds pair counts, not verdicts: asked once, so a slider move
    whose other inputs are cached never opens the store file (an open and a release per move)."""
    from engine.store.pair_counts import is_pair_count_dataset

    return is_pair_count_dataset(get_store(), dataset)


@st.cache_data(max_entries=16, show_spinner=False)
def selection_models_for(key: CacheKey) -> int:
    """How many models the selection's graphs are over (``engine.views.truncation_view.selection_models``)."""
    from engine.views.truncation_view import selection_models

    return selection_models(get_store(), key.dataset, **_filters(key))


def intervals_follow(ranker: str) -> bool:
    """Whether a board of ``ranker`` can be shown from its point fit before its bootstrap intervals: a count
    ranker (not the panel, whose intervals come with its fit), whose ranks, scores and counts do not depend
    on the bootstrap (tests/test_truncation_pool_boards.py)."""
    from engine.rankers.objects import ranker_object

    r = ranker_object(ranker)
    return bool(r.counts and not r.judged_verdicts)


@st.cache_data(max_entries=128, show_spinner="Ranking…")
def leaderboard_result(key: CacheKey, ranker: str, keep_k: int | None, mu: float, bootstrap: int, seed: int):
    """The leaderboard (AppBoard) of the current choice, keep-K by S_mu when ``keep_k`` is given."""
    from engine.views.appstate import app_leaderboard

    if pair_counts_for(key.dataset, key.version):  # counts, no graph (issue 25)
        from engine.views.pair_count_view import pair_count_app_board

        ref, note = reference_for_key(key.dataset, key.category, key.version)
        return pair_count_app_board(get_store(), key.dataset, ranker=ranker, bootstrap=bootstrap, seed=seed,
                                    reference=ref, reference_note=note)
    from engine.rankers.objects import ranker_object

    if ranker_object(ranker).judged_verdicts:  # the CLI's store path: verdicts, orders, fit intervals
        from engine.views.panel_view import panel_app_board

        ref, note = reference_for_key(key.dataset, key.category, key.version)
        return panel_app_board(get_store(), key.dataset, judge=key.judge, category=key.category,
                               keep_k=keep_k, reference=ref, reference_note=note)
    from engine.views.leaderboard_first import first_open_applies

    if first_open_applies(ranker, keep_k):  # a count ranker on every graph: graphs of < 3 models never built
        from app_pages._lbopen_cache import first_board_for

        return first_board_for(key, ranker, bootstrap, seed)  # reads the reference itself where it computes
    if keep_k is not None and _board_grid_applies(key, ranker):  # the kept graphs' board, shared by kept set
        return board_grid_for(key, ranker).board(ranker, keep_k, mu, bootstrap, seed)
    ref, note = reference_for_key(key.dataset, key.category, key.version)
    return app_leaderboard(
        slider_context(key), ranker=ranker, keep_k=keep_k, mu=mu, bootstrap=bootstrap, seed=seed,
        reference=ref, reference_note=note, votes=votes_for(key, ranker), extra_params=_board_params(key),
    )


def _board_params(key: CacheKey) -> dict:
    """The selection's names a board's params carry."""
    return {"dataset": key.dataset, "dataset_version": key.version, "judge": key.judge,
            "category": key.category}


def _board_grid_applies(key: CacheKey, ranker: str) -> bool:
    """Whether ``leaderboard_result``'s keep-K boards of ``ranker`` come from the selection's board grid: a
    count ranker ranking the kept graphs' votes (not pair counts, not the panel)."""
    from engine.rankers.objects import ranker_object

    r = ranker_object(ranker)
    return bool(r.counts and not r.judged_verdicts) and not pair_counts_for(key.dataset, key.version)


def board_grid_for(key: CacheKey, ranker: str | None = None):
    """The selection's keep-K boards of the count rankers, one per kept set, made once and the next moves'
    made ahead of them (``engine.views.board_grid.BoardGrid``). Keep-K keeps pool graphs only, and a count
    ranker ranks the kept graphs' votes: the graphs of 3+ models (the page's counts read them already) are
    context enough, not every one-pair graph of a battle log. One grid per vote order (``vote_order_for``):
    the order-free rankers share the scan-order votes' grid (``ranker`` None: that one), Elo's ranks its
    votes in the CLI's order."""
    return _board_grid(key, vote_order_for(key, ranker))


@st.cache_resource(max_entries=16, show_spinner=False)
def _board_grid(key: CacheKey, order: tuple[str, str] | None):
    from engine.views.board_grid import BoardGrid

    ref, note = reference_for_key(key.dataset, key.category, key.version)
    return BoardGrid(pool_context_for(key), _votes_read(key, order), reference=ref, reference_note=note,
                     extra_params=_board_params(key))


def board_made_for(key: CacheKey, ranker: str, keep_k: int, mu: float, bootstrap: int, seed: int) -> bool:
    """Whether the keep-K board at (``keep_k``, ``mu``) is made already (a look-up: the page then shows it
    at once, intervals included, instead of its point board first)."""
    return (_board_grid_applies(key, ranker)
            and board_grid_for(key, ranker).has(ranker, keep_k, mu, bootstrap, seed))


def warm_boards_for(key: CacheKey, ranker: str, keep_k: int, mu: float, k_max: int, mus, bootstrap: int,
                    seed: int) -> None:
    """Have the selection's board grid make the keep-K boards around (``keep_k``, ``mu``) in the background
    (``engine.views.board_grid.BoardGrid.warm``), for a ranker whose boards come from it."""
    if _board_grid_applies(key, ranker):
        board_grid_for(key, ranker).warm(ranker, keep_k, mu, k_max=k_max, mus=mus, bootstrap=bootstrap,
                                         seed=seed)


@st.cache_resource(max_entries=16, show_spinner=False)
def curve_grid_for(key: CacheKey):
    """The selection's sensitivity curves, each made once and the next move's made ahead of it
    (``engine.views.curve_grid.CurveGrid``; paper protocol: half-tie BT, Spearman distance to the
    reference); a LensError when the selection has no reference or no dense stack for them."""
    from engine.experiments.curves import DEFAULT_MU_GRID
    from engine.views.curve_grid import CurveGrid

    ref, note = reference_for_key(key.dataset, key.category, key.version)
    if ref is None:
        raise LensError(f"No sensitivity curves: {note.rstrip('.')}.")
    return CurveGrid(dense_stack_for(key, "sensitivity curves"), ref, curve_mus=DEFAULT_MU_GRID,
                     resamples=CURVE_RESAMPLES, seed=SEED)


@st.cache_data(max_entries=32, show_spinner="Computing the keep-K curve…")
def keep_k_curve_for(key: CacheKey, mu: float):
    """Spearman distance to the reference against K at this μ (paper protocol: half-tie BT), from the
    selection's curve grid: made with the fits earlier curves of the selection made (the same numbers,
    ``engine.views.truncation_view.keep_k_view`` with the grid's ``FitCache``), or made ahead of this move by
    its warming thread."""
    return curve_grid_for(key).keep_k_frame(mu)


@st.cache_data(max_entries=256, show_spinner="Computing the μ curve…")
def mu_curve_for(key: CacheKey, keep_k: int):
    """Spearman distance to the reference against μ at this K (paper protocol: half-tie BT), from the
    selection's curve grid (``engine.views.truncation_view.mu_view``'s frame)."""
    return curve_grid_for(key).mu_frame(keep_k)


@st.cache_data(max_entries=64, show_spinner=False)
def curve_markup_for(key: CacheKey, x: str, at: float, title: str, metric: str,
                     best: int) -> tuple[str, np.ndarray]:
    """The Truncation page's drawing of one sensitivity curve without its setting line
    (``app_pages._curve_figure.curve_svg``, ``setting=False``): the keep-K curve at μ = ``at`` (``x`` "k")
    or the μ curve at K = ``at`` (``x`` "mu"), and the numbers it was drawn from (``curve_rows``: the page
    keeps them on the server for tests, the markup does not carry them). Kept per curve: the markup does not
    depend on the sliders' setting (the red line is ``setting_svg``'s), and a pooled vicuna80 keep-K curve
    is ~60 kB of it, ~10 ms of a move's CPU to rebuild. The setting passed to ``curve_svg`` is the curve's
    first x, inside its range like every slider value, so the axes are the ones the slider's setting
    gives."""
    from app_pages._curve_figure import curve_rows, curve_svg

    frame = keep_k_curve_for(key, float(at)) if x == "k" else mu_curve_for(key, int(at))
    return (curve_svg(frame, x, float(frame[x].iloc[0]), title, metric, best=best, setting=False),
            curve_rows(frame, x))


def warm_curves_for(key: CacheKey, keep_k: int, mu: float, k_max: int, mus) -> None:
    """Have the selection's curve grid make the curves around (``keep_k``, ``mu``) in the background, so
    the next slider move finds them made (``engine.views.curve_grid.CurveGrid.warm``)."""
    curve_grid_for(key).warm(keep_k, mu, k_max=k_max, mus=mus)


def protocol_params(mu: float):
    """The engine's Table-2 protocol sizes (paper 000's defaults) at this μ: what the table runs with
    and what its caption names."""
    from engine.experiments.protocols import ProtocolParams

    return ProtocolParams(mu=float(mu))


@st.cache_data(max_entries=8, show_spinner="Running the Table-2 protocols…")
def protocol_table(key: CacheKey, mu: float):
    """(the Table-2 summary: protocols × categories, no-spread counts and why, at this μ; the sizes
    it ran with, category pools included, for the caption)."""
    from engine.experiments.protocol_runs import run_protocols
    from engine.views.truncation_view import protocol_sizes, protocol_view

    ref, note = reference_for_key(key.dataset, key.category, key.version)
    if ref is None:
        raise LensError(f"No protocol table: {note.rstrip('.')}.")
    params = protocol_params(mu)
    frame = run_protocols(dense_stack_for(key, "protocol table"), ref, params=params)
    return protocol_view(frame), protocol_sizes(params, frame)


@st.cache_data(max_entries=64, show_spinner="Simulating…")
def recovery_result(n: int, p: float, t_max: int, reps: int, seed: int):
    """Recovery probability against odd t up to ``t_max`` (about 25 points) for both graph models."""
    from engine.experiments.simulate import odd_grid, recovery_curve

    return recovery_curve(n, p, odd_grid(t_max), reps=reps, seed=seed)


def results_zip_for(key: CacheKey, ranker: str, mu: float, about: str) -> bytes:
    """Leaderboard, per-graph cycle table, judge diagnostics and judge report of ``key`` in one ZIP (built on
    click)."""
    from engine.views.exports import results_zip
    from engine.views.judge_report_view import judge_report_of_store

    board = leaderboard_result(key, ranker, None, 1.0, B_DEFAULT, SEED)
    judges = judge_diagnostics(key.dataset, key.version, key.category, False)
    report = judge_report_of_store(get_store(), key.dataset, key.category)  # every judge, as the Judges page
    return results_zip(board, cycle_overview(key), judges, mu=mu, about=about, judge_report=report)


def show_table(frame, column_config: dict, formats: dict[str, str], **kwargs) -> None:
    """st.dataframe where numeric columns with missing values show "—" (not "None"): those
    columns become right-aligned text with the label and help of their column config."""
    from engine.views.viz import numbers_as_text

    shown, changed = numbers_as_text(frame, formats)
    config = dict(column_config)
    for col in changed:
        old = config.get(col) or {}
        config[col] = st.column_config.TextColumn(
            old.get("label", col), help=old.get("help"), alignment="right", width=old.get("width")
        )
    st.dataframe(shown, column_config=config, **kwargs)


def table_height(rows: int, most: int = 640) -> int:
    """The pixel height of an st.dataframe that shows ``rows`` rows and its header (35 px each, 3 px of
    border), at most ``most``: a taller frame draws empty filler rows below the last one."""
    return min(38 + 35 * max(rows, 1), most)


def column_picker(order: list[str], main: tuple[str, ...], default_extra: tuple[str, ...], config: dict,
                  key: str, about: str, *, names=None, give_up: tuple[str, ...] = ()) -> list[str]:
    """A "More columns" picker above a wide table: ``main`` columns are always shown, the reader adds
    any other of ``order`` (``default_extra`` at first, chosen to fit beside the main ones at 1280 px,
    tests/test_browser_stress.py). Returns the columns to show, in ``order``.

    ``names`` (the model column's texts, or a dict of several name columns' texts) and ``give_up``: default
    columns left out at first, in that order, while the longest name would not fit beside the rest
    (``extra_for_names``); such a picker has a key of its own, so a choice made for short names is not
    carried to long ones (a keyed picker keeps its state)."""
    optional = [c for c in order if c not in main]
    wanted = [c for c in default_extra if c in optional]
    default = wanted if names is None else extra_for_names(order, main, wanted, config, names, give_up)
    left_out = [c for c in wanted if c not in default]
    labels = ", ".join((config.get(c) or {}).get("label") or c for c in left_out)
    why = f" {labels} left out at first so the longest model name fits." if left_out else ""
    extra = st.multiselect(
        "More columns", optional, default=default, key=key + "".join(f"-{c}" for c in left_out),
        format_func=lambda c: (config.get(c) or {}).get("label") or c,
        help=f"{about} are always shown; pick the other columns here.{why}",
    )
    return [c for c in order if c in main or c in extra]


def metric_row(*metrics: tuple[str, object] | tuple[str, object, str]) -> None:
    """Figures side by side, each (label, value[, help]) as wide as its text: in four equal columns a
    long label or value (a model's name) was cut with an ellipsis at 1280 px; here a figure that does
    not fit moves to the next line instead (a horizontal container wraps)."""
    with st.container(horizontal=True, gap="large"):
        for label, value, *more in metrics:
            st.metric(label, value, help=more[0] if more else None, width="content")


TABLE_PX_1280 = 820
"""The width of a full-width table (``width="stretch"``) in a 1280 px window with the sidebar open: the
widths the tables fitted to 1280 px add up to (tests/test_browser_stress.py's TABLES_FIT)."""
NAMED_WIDTHS = {"small": 75, "medium": 200, "large": 400}
"""Streamlit's named column widths in px."""
MODEL_PX_MIN = 180
"""The model column's width when every name is short: the width it had before audit38."""


_GLYPH_PX = {c: px for chars, px in {
    " ": 2.8, "|": 3.4, "ij',.:;": 3.5, "l": 3.6, "I": 3.7, "!f": 4.1, "()[]{}": 4.3, "-": 4.4, "t": 4.8,
    "r/\\": 4.9, "*s": 5.9, '?z"': 6.0, "x": 6.3, "c": 6.4, "vy": 6.6, "Y": 6.7, "JL": 6.8,
    "Fke#$+0123456789<=>^~_": 7.0, "ag": 7.1, "X": 7.2, "V": 7.3, "E": 7.4, "ST": 7.5, "Z`oA": 7.6,
    "hun": 7.7, "bdpq": 7.8, "PRC": 8.0, "K": 8.2, "B": 8.3, "&": 8.6, "DG": 8.7, "UN": 9.1, "H": 9.2,
    "OQ": 9.3, "w": 10.1, "M": 10.2, "W": 11.0, "%": 11.6, "m": 11.7, "@": 11.9,
}.items() for c in chars}
"""Each printable ASCII character's advance in the grid's 14 px Source Sans, rounded up to 0.1 px: canvas
measureText in Chromium on the app's page (nits39)."""


def name_px(text: str) -> int:
    """At least the px the grid's 14 px Source Sans needs for ``text`` and its cell padding (16 px): each
    character's measured advance (``_GLYPH_PX``; another character 9.3, a wide East Asian one 14), and 18 px
    of padding. Measured whole in Chromium (audit38, nits39): "65b-guanaco-vicuna-generations-topp0.9-temp0.7"
    294 px, "Meta-Llama-3.1-405B-Instruct-Turbo" 212, "gemini-2.0-flash-lite-preview-02-05" 205,
    "chatbot_arena_2024_08_14" 163; these give 317, 234, 225, 182 (audit38's estimate of 7 px a lower-case
    character gave 344, 270, 263, 186: the qlora names took room the other columns needed)."""
    import unicodedata

    def px(c: str) -> float:
        if c in _GLYPH_PX:
            return _GLYPH_PX[c]
        return 14.0 if unicodedata.east_asian_width(c) in ("W", "F") else 9.3

    return math.ceil(sum(px(c) for c in text)) + 18


def fit_columns(config: dict, shown: list[str], names: dict, *, fill: str | None = None,
                least: int = MODEL_PX_MIN, fill_least: int = 120, frame_px: int = TABLE_PX_1280) -> dict:
    """``config`` with widths for the name columns (``names``: column -> its texts) and the ``fill``
    column, so that a table of the ``shown`` columns fits a ``frame_px`` table (1280 px) without a
    sideways scroll while showing whole names where the room allows (audit38: a fixed 180 px cut
    "65b-guanaco-vicuna-generations-topp0.9-temp0.7" to "65b-guanaco-vicuna-generati", and the Data
    page's 9 columns cut "chatbot_arena_2024_08_14" to "chatbot_ar"). Each name column is as wide as its
    longest text, at least ``least``, at most an equal share of what the other shown columns leave;
    ``fill`` (a long free text) takes the rest, at least ``fill_least``. A shown column of no fixed width
    leaves ``config`` as it was (its room is unknown)."""
    named = [c for c in shown if c in names]
    left = _room(config, [c for c in shown if c not in names and c != fill], frame_px)
    if not named or left is None:
        return config
    room = left - (fill_least if fill in shown else 0)
    out = dict(config)
    for c in named:
        longest = max((name_px(str(n)) for n in names[c]), default=0)
        out[c] = {**(config.get(c) or {}), "width": max(least, min(longest, room // len(named)))}
    if fill in shown:
        rest = left - sum(out[c]["width"] for c in named)
        out[fill] = {**(config.get(fill) or {}), "width": max(fill_least, rest)}
    return out


def widen_name_column(config: dict, shown: list[str], names, column: str = "model") -> dict:
    """``fit_columns`` for a leaderboard: its model column as wide as its longest name allows."""
    return fit_columns(config, shown, {column: names})


def extra_for_names(order: list[str], main: tuple[str, ...], default_extra: list[str], config: dict, names,
                    give_up: tuple[str, ...], column: str = "model",
                    frame_px: int = TABLE_PX_1280) -> list[str]:
    """``default_extra`` less the columns of ``give_up`` (in that order) the longest of ``names`` needs to be
    shown whole in ``column`` beside the rest (``fit_columns``' room at 1280 px): nothing left out where the
    names fit, at most all of ``give_up`` (audit38: with the reference columns a leaderboard had 194 px for
    names, and the field's names of 26-35 characters were cut). ``names`` may be a dict of several name
    columns and their texts (Active judging's model A and model B), which share the room equally as
    ``fit_columns`` gives it: each must hold the longest name of them all."""
    by_column = dict(names) if isinstance(names, dict) else {column: names}
    longest = max((name_px(str(n)) for texts in by_column.values() for n in texts), default=0)
    extra = list(default_extra)
    for c in give_up:
        room = _room(config, [x for x in order if (x in main or x in extra) and x not in by_column], frame_px)
        if room is None or room // len(by_column) >= longest:
            break
        if c in extra:
            extra.remove(c)
    return extra


def _room(config: dict, others: list[str], frame_px: int = TABLE_PX_1280) -> int | None:
    """The px a full-width table at 1280 px leaves beside the fixed-width columns ``others`` (None: one of
    them has no fixed width, so the room is unknown)."""
    widths = [(config.get(c) or {}).get("width") for c in others]
    widths = [NAMED_WIDTHS.get(w, w) if isinstance(w, str) else w for w in widths]
    if any(not isinstance(w, int) for w in widths):
        return None
    return frame_px - 4 - sum(widths)


def board_display(table):
    """A leaderboard table as shown: reference columns as text with "—" where a model is unmapped."""
    from engine.views.viz import dash_missing

    return dash_missing(table, ["ref_rank", "ref_diff"])


def board_columns(reference_note: str, ranker: str, score_label: str | None = None, digits: int = 3) -> dict:
    """Column headers, formats, widths and help texts of every leaderboard table the app shows
    (``digits``: the score's decimals, fewer for large scores so nothing is clipped)."""
    num = st.column_config.NumberColumn
    text = st.column_config.TextColumn
    fmt = f"%.{digits}f"
    return {
        "rank_ub": num(
            "rank (UB)",
            width=64,
            format="%d",
            help="LMArena's rank (UB): 1 + the number of models whose 95 % score interval lies wholly above "
            "this one (their lower bound above this model's upper bound); the best rank the intervals allow.",
        ),
        "rank": num("rank", width=48, pinned=True,
                    help="The ranker's own order of the point scores: 1 = best; models with equal scores "
                    "share a rank."),
        "rank_change": num(
            "Δ rank",
            format="%+d",
            width=56,
            help="Rank on all graphs minus rank on the kept graphs (positive: moved up when truncating).",
        ),
        "model": text("model", width=180, pinned=True),
        "score": num(
            "score",
            format=fmt,
            width=70,
            help=score_label or f"The {ranker} ranker's score (higher is better).",
        ),
        "interval": text(
            "95% CI", width=118, help="Bootstrap percentile interval of the score as +above / -below it."
        ),
        "votes": num(
            "votes", width=58, help="Votes the model took part in (one per compared pair and graph)."
        ),
        "n_prompts": num("prompts", width=64, help="Prompts with a graph in which the model was compared."),
        "rank_range": text("rank CI", width=64, help="95 % bootstrap interval of the rank."),
        "ci_low": num("CI low", format=fmt, width=70, help="2.5 % bootstrap percentile of the score."),
        "ci_high": num("CI high", format=fmt, width=70, help="97.5 % bootstrap percentile of the score."),
        "wins": num(
            "W",
            width=56,
            help="Graphs where the model beat the other model of a pair (summed over pairs).",
        ),
        "losses": num("L", width=56, help="Lost pairs summed over graphs."),
        "ties": num("T", width=56, help="Tied pairs summed over graphs."),
        "win_rate": num("win rate", format="%.2f", width=64, help="(W + T/2) / (W + L + T)."),
        "cycle_share": num(
            "on bad triad",
            format="%.2f",
            width="small",
            help="Share of the graphs where the model was compared in which it lies on a bad triad.",
        ),
        "bad_triads": num(
            "bad triads", width=72, help="Non-transitive triads the model lies on, summed over graphs."
        ),
        "ref_rank": text(
            "ref. rank", alignment="right", width=64, help=f"{reference_note}. — = not on the reference."
        ),
        "ref_diff": text(
            "Δ vs ref.",
            alignment="right",
            width=64,
            help="Rank here among the mapped models minus the reference rank (+ = lower here). "
            "— = not on the reference.",
        ),
        "n_graphs_model": num("graphs", width="small", help="Graphs in which the model was compared."),
        "rank_low": num("rank CI low"),
        "rank_high": num("rank CI high"),
    }


def vote_order_note(board) -> str:
    """" · votes in <order>" for a caption when the board's ranker reads its votes in an order (Elo: time,
    else source order; the order the CLI's board names in its ranker details), else "": an order-free board
    has none to name."""
    from engine.rankers.objects import ranker_object

    p = board.params
    order = (p.get("ranker_details") or {}).get("order")
    if not p.get("ranker") or not ranker_object(str(p["ranker"])).sequential or not order:
        return ""
    return f" · votes in {order}"


def bootstrap_note(board) -> str:
    """How the intervals were made, for a caption (and why a move can take seconds)."""
    p = board.params
    from engine.rankers.objects import ranker_object

    if p.get("ranker") and ranker_object(str(p["ranker"])).judged_verdicts:
        return "intervals from the panel's fit (95 % Wald, observed information), no bootstrap"
    method = p.get("bootstrap_method") or ""
    text = f"bootstrap B={p.get('bootstrap', B_DEFAULT)}, seed {p.get('seed', SEED)}"
    if method == "one refit per resample":
        text += (f" (the {p.get('ranker')} ranker has no batched bootstrap: each of the B resamples is a "
                 "separate fit, so a change takes seconds)")
    return text


__all__ = ["ALL", "Choice", "current", "get_store", "guarded_session", "show_error", "choices", "user_text"]


def opened_expander(label: str, key: str):
    """An expander whose content the page draws only once the reader opens it: its container while it is
    open, else None. Streamlit sends a closed expander's content all the same, hidden; this one reruns the
    script when opened or closed (the innermost fragment around it alone, ``on_change="rerun"``) and says
    whether it is open (``.open``), so a new tab or a slider move does not draw what nobody sees (issue 26:
    Head-to-head's closed meetings were ~120 of its 299 elements). A run that does not draw it drops its
    state: on another page, pair or triad it opens closed."""
    box = st.expander(label, key=key, on_change="rerun")
    return box if box.open else None


def verdict_list(verdicts: list[tuple[str, str | None]]) -> None:
    """Numbered verdicts, each a Markdown line (already escaped) and its judge's rationale shown as plain
    text, or a caption saying none was stored: the Prompt inspector's triad pairs and the Head-to-head
    page's meetings."""
    for k, (line, rationale) in enumerate(verdicts, start=1):
        st.markdown(f"Verdict {k} · {line}")
        if rationale:
            st.text(rationale)
        else:
            st.caption("No rationale was stored for this verdict.")
