"""What every page shares: the one store, the sidebar's current choice, cached engine calls.

Pages are short scripts that read the shared choice and render; all computation is an engine
call. Results are cached with ``st.cache_data`` keyed by ``engine.appstate.CacheKey`` (dataset
version + filters) and the parameters, so a slider move only recomputes what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from engine.appstate import ALL, CacheKey, dataset_choices
from engine.errors import LensError
from engine.store import Store, open_store, resolve_db_path
from engine.viz import escape_md


@st.cache_resource(show_spinner="Opening the store…")
def _store(path: str) -> Store:
    return open_store(path)


def get_store() -> Store:
    """The one Store of this server process (per $LENS_DB path)."""
    return _store(str(resolve_db_path()))


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
        text = f"dataset {self.key.dataset} (version {self.key.version}) · judge {judge} · {cat}"
        return escape_md(text)


def current() -> Choice:
    """The current sidebar choice; stops the page with a message when there is no dataset."""
    store = get_store()
    dataset = st.session_state.get("dataset")
    if not dataset or not store.has_dataset(dataset):
        st.info("No dataset is selected. Import one on the Data page.")
        st.stop()
    key = CacheKey.of(store, dataset, st.session_state.get("judge"), st.session_state.get("category"))
    return Choice(key, st.session_state.get("ranker", "bt"))


def show_error(exc: LensError) -> None:
    """A user mistake: one sentence in an error box, no traceback."""
    st.error(str(exc))


@st.cache_data(max_entries=32, show_spinner=False)
def choices(dataset: str, version: int):
    return dataset_choices(get_store(), dataset)


B_DEFAULT = 200
"""Bootstrap draws behind every interval the app shows."""
SEED = 0
"""The app's fixed seed: the same choice always shows the same numbers."""
CURVE_RESAMPLES = 100
"""Bootstrap draws behind each point's band on the sensitivity curves."""


def _filters(key: CacheKey) -> dict:
    return {"judge": key.judge, "category": key.category}


@st.cache_data(max_entries=16, show_spinner="Loading verdicts…")
def verdicts_for(key: CacheKey):
    """The canonical verdict frame of the current choice (invalid verdicts included)."""
    return get_store().verdicts(key.dataset, **_filters(key))


@st.cache_data(max_entries=16, show_spinner="Building tournament graphs…")
def stack_for(key: CacheKey):
    """The GraphStack of the current choice (one graph per judge, prompt, variant and turn)."""
    from engine.graphs import build_stack

    return build_stack(verdicts_for(key))


@st.cache_data(max_entries=16, show_spinner=False)
def counts_for(key: CacheKey):
    """Per-graph cycle counts (C3, C4, their tie and bad parts), in stack order."""
    from engine.cycles import cycle_counts

    return cycle_counts(stack_for(key))


@st.cache_data(max_entries=64, show_spinner=False)
def triads_for(key: CacheKey, t: int):
    """The non-transitive triads of graph ``t`` (model_a, model_b, model_c, kind)."""
    from engine.triads import cyclic_triads

    return cyclic_triads(stack_for(key), t)


@st.cache_data(max_entries=16, show_spinner="Counting cycles…")
def cycle_overview(key: CacheKey):
    """The Cycles page's heatmaps, distributions and graph table for the current choice."""
    from engine.viz import cycle_overview as build
    from engine.viz import nb_fit_frame

    return build(stack_for(key), nb_fit=nb_fit_frame)


@st.cache_data(max_entries=64, show_spinner="Denoising…")
def denoised_for(key: CacheKey, t: int) -> dict:
    """Graph ``t`` after PGED (feedback-arc-set removal) and ELSPR (SCC reconstruction).

    Returns ``{method: ((n, n) bool adjacency over the stack's models, removed edges as
    (winner, loser) model names)}``.
    """
    from engine.viz import denoised_view

    stack = stack_for(key)
    return denoised_view(stack.subset([t]))


@st.cache_data(max_entries=8, show_spinner="Comparing judges…")
def judge_diagnostics(dataset: str, version: int, category: str | None, by_category: bool):
    """The Judges page's tables for every judge of ``dataset`` (``version`` keys the cache)."""
    from engine.graphs import build_stack
    from engine.viz import judge_overview

    verdicts = get_store().verdicts(dataset, category=category)
    return judge_overview(verdicts, build_stack(verdicts), by_category)


@st.cache_data(max_entries=8, show_spinner=False)
def reference_for_key(dataset: str, category: str | None):
    """(reference ratings or None, a note naming it or saying why there is none)."""
    from engine.appstate import reference_for

    return reference_for(dataset, category)


@st.cache_resource(max_entries=16, show_spinner=False)
def slider_context(key: CacheKey):
    """Per-selection work shared by every slider move (read-only, so cached without copies)."""
    from engine.appstate import SliderContext

    return SliderContext.of(stack_for(key))


@st.cache_data(max_entries=128, show_spinner="Ranking…")
def leaderboard_result(key: CacheKey, ranker: str, keep_k: int | None, mu: float, bootstrap: int, seed: int):
    """The leaderboard (AppBoard) of the current choice, keep-K by S_mu when ``keep_k`` is given."""
    from engine.appstate import app_leaderboard

    ref, note = reference_for_key(key.dataset, key.category)
    return app_leaderboard(
        slider_context(key), ranker=ranker, keep_k=keep_k, mu=mu, bootstrap=bootstrap, seed=seed,
        reference=ref, reference_note=note,
        extra_params={"dataset": key.dataset, "dataset_version": key.version, "judge": key.judge,
                      "category": key.category},
    )


@st.cache_data(max_entries=32, show_spinner="Computing sensitivity curves…")
def curves_result(key: CacheKey, ranker: str, mu: float, keep_k: int):
    """(distance vs K at this mu, distance vs mu at this K, distance name) against the reference."""
    from engine.curves import keep_k_curve, mu_curve

    ref, note = reference_for_key(key.dataset, key.category)
    if ref is None:
        raise LensError(f"No sensitivity curves: {note.rstrip('.')}.")
    stack = stack_for(key)
    kc = keep_k_curve(stack, ref, mu=mu, per_category=False, resamples=CURVE_RESAMPLES, seed=SEED)
    mc = mu_curve(stack, ref, k=keep_k, per_category=False, resamples=CURVE_RESAMPLES, seed=SEED)
    pick = lambda f: f[f["distance"] == "spearman"].sort_values(f.columns[0]).reset_index(drop=True)  # noqa: E731
    return pick(kc), pick(mc), "Spearman ρ distance"


@st.cache_data(max_entries=8, show_spinner="Running the Table-2 protocols…")
def protocol_table(key: CacheKey, ranker: str, mu: float):
    """The Table-2 frame (protocols × distances, mean ± sd over resamples) for the current choice."""
    from engine.resampling import run_protocols, table2

    ref, note = reference_for_key(key.dataset, key.category)
    if ref is None:
        raise LensError(f"No protocol table: {note.rstrip('.')}.")
    return table2(run_protocols(stack_for(key), ref))


@st.cache_data(max_entries=64, show_spinner="Simulating…")
def recovery_result(n: int, p: float, t_max: int, reps: int, seed: int):
    """Recovery probability against t (about 25 points up to ``t_max``) for both graph models."""
    from engine.simulate import recovery_curve

    ts = np.unique(np.linspace(1, t_max, 25).round().astype(int))
    return recovery_curve(n, p, ts, reps=reps, seed=seed)


__all__ = ["ALL", "Choice", "current", "get_store", "show_error", "choices"]
