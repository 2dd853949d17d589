"""The cached calls behind one page, cold, in one process: wall and CPU seconds and peak RSS.

    LENS_DB=COPY_OF_STORE python bench/pages_cold_calls.py REPO PAGE   # PAGE: stack|cycles|inspector|judges
                                                        # or cycles-page, truncation-page, inspector-page,
                                                        # judges-page, leaderboard-page

Runs the checkout REPO's ``app_pages/_lens`` functions that page PAGE calls on its first open (the
graphs of the sidebar's default choice: dataset ``bench``, all judges; then the page's own tables and
pickers), outside a browser: where a first open goes, and before/after in one run by giving two
checkouts one after the other. CPU seconds are the number to compare on a loaded machine (wall time
there mostly measures the other processes). Not the user's measure: that is bench/app_page_timing.py in
Chromium. Give it a copy of a bench store (the app may write its caches).

``cycles-page``: every cached call of app_pages/3_cycles.py's first open in the checkout's own way (its
overview, its model x model matrices under the default ranker bt, its graph table's keys), whether or not
the checkout builds every graph first; reported as "rest" (graphs 0). ``truncation-page`` and
``inspector-page`` likewise for app_pages/2_truncation.py (its counts before the sliders; the sliders' boards
when the pool holds two graphs or more) and app_pages/4_inspector.py (its pickers, menu, the first prompt's
variant names, graph view and drawing), each as the checkout's own page makes them. ``judges-page``:
app_pages/5_judges.py's two cached calls on a first open (its overview, not split by category, and the judge
report section), whatever graphs each checkout builds for them. ``leaderboard-page``: the Leaderboard's
point board as its first open computes it before the page is shown (the default ranker bt, B = 0; the
bootstrap intervals follow in a worker thread and are not counted).
"""

from __future__ import annotations

import logging
import os
import resource
import sys
import time
import warnings


def main(repo: str, page: str, dataset: str = "bench") -> str:
    sys.path.insert(0, repo)
    os.chdir(repo)
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    from app_pages import _lens
    from engine.views.appstate import CacheKey

    with _lens.store_session():
        key = CacheKey.of(_lens.get_store(), dataset, None, None)
        if page == "cycles-page":
            return _cycles_page(_lens, key)
        if page == "judges-page":
            return _timed(page, lambda: _judges_page(_lens, key))
        if page == "leaderboard-page":
            return _timed(page, lambda: _lens.leaderboard_result(key, "bt", None, 1.0, 0, _lens.SEED))
        if page in ("truncation-page", "inspector-page"):
            return _timed(page, lambda: (_truncation_page if page == "truncation-page" else _inspector_page)(
                _lens, key))
        wall0, cpu0 = time.perf_counter(), time.process_time()
        graphs = _lens.stack_for(key)
        wall1, cpu1 = time.perf_counter(), time.process_time()
        if page == "cycles":
            _lens.cycle_overview(key)
        elif page == "inspector":  # what the page script does: its judge list, the judge's cut, the menu
            from engine.views.inspector import graph_choices, judged_by, variant_names

            tree = graph_choices(graphs)
            judges = getattr(tree, "judges", None)
            if judges is None:  # main e59b42a's page walked the dict
                judges = list(dict.fromkeys(j for vs in tree.values() for js in vs.values() for j in js))
            judged_by(tree, judges[0])
            _lens.prompt_options_for(key, judges[0])
            variant_names(graphs)
        elif page == "judges":
            _lens.judge_diagnostics(dataset, key.version, None, False)
        wall2, cpu2 = time.perf_counter(), time.process_time()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return (f"{page}\twall graphs {wall1 - wall0:.2f} rest {wall2 - wall1:.2f}\tcpu graphs {cpu1 - cpu0:.2f} "
            f"rest {cpu2 - cpu1:.2f}\tpeak {peak:.2f} GB\tload {os.getloadavg()[0]:.1f}")


def _cycles_page(_lens, key) -> str:
    """The Cycles page's cached calls on a first open, as the checkout's page script makes them."""
    from engine.views.cycles_view import graphs_table
    from engine.views.viz import graphs_by_score

    wall0, cpu0 = time.perf_counter(), time.process_time()
    ov = _lens.cycle_overview(key)
    _lens.pair_matrices_for(key, "bt")
    try:  # this branch's keys of the listed prompts; main e59b42a took every graph's keys
        from app_pages._cycles3_cache import listed_prompt_keys_for

        keys = listed_prompt_keys_for(key)
    except ImportError:
        keys = _lens.stack_for(key).keys
    graphs_table(graphs_by_score(ov.graphs, 1.0), keys)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return (f"cycles-page\twall graphs 0.00 rest {wall:.2f}\tcpu graphs 0.00 rest {cpu:.2f}"
            f"\tpeak {peak:.2f} GB\tload {os.getloadavg()[0]:.1f}")


def _timed(page: str, run) -> str:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    return (f"{page}\twall graphs 0.00 rest {wall:.2f}\tcpu graphs 0.00 rest {cpu:.2f}"
            f"\tpeak {peak:.2f} GB\tload {os.getloadavg()[0]:.1f}")


def _truncation_page(_lens, key) -> None:
    """The Truncation page's reads before its sliders (and the sliders' two boards when it gets there)."""
    if hasattr(_lens, "truncation_pool_for"):
        counts = _lens.truncation_pool_for(key)
        n_pool, n_graphs = counts.n_pool, counts.n_graphs
    else:  # main a048c3e: every graph built
        n_graphs, n_pool = _lens.stack_for(key).T, _lens.pool_size_for(key)
        _lens.slider_context(key)
    if n_pool >= 2:
        from engine.views.truncation_view import default_keep_k

        _lens.leaderboard_result(key, "bt", n_pool if n_pool < n_graphs else None, 1.0, _lens.B_DEFAULT, 0)
        _lens.leaderboard_result(key, "bt", default_keep_k(n_pool), 1.0, _lens.B_DEFAULT, 0)


def _judges_page(_lens, key) -> None:
    """The Judges page's first open: every judge's overview and the judge report of the selection."""
    from app_pages import _judge_report

    _lens.judge_diagnostics(key.dataset, key.version, key.category, False)
    _judge_report._report(key.dataset, key.version, key.category)


def _inspector_page(_lens, key) -> None:
    """The Prompt inspector's first open: pickers, the first judge's menu, the first prompt's graph."""
    from engine.views.inspector import graph_position, judged_by, prompt_variant_names

    if hasattr(_lens, "choice_tree_for"):
        tree = _lens.choice_tree_for(key)
    else:  # main a048c3e: every graph built
        from engine.views.inspector import graph_choices

        tree = graph_choices(_lens.stack_for(key))
    judge = tree.judges[0]
    cut = judged_by(tree, judge)
    prompts, _, _ = _lens.prompt_options_for(key, judge)
    prompt = prompts[0]
    variant = sorted(cut[prompt])[0]
    if hasattr(_lens, "prompt_graphs_for"):
        graphs = _lens.prompt_graphs_for(key, prompt)
        prompt_variant_names(graphs, prompt)
        t = graph_position(graphs, prompt, variant, judge)
        _lens.graph_view_for(key, prompt, t)
        _lens.inspector_html_for(key, prompt, t, "PGED", None)
    else:
        graphs = _lens.stack_for(key)
        prompt_variant_names(graphs, prompt)
        t = graph_position(graphs, prompt, variant, judge)
        _lens.graph_view_for(key, t)
        _lens.inspector_html_for(key, t, "PGED", None)


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2]))
