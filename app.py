"""Tournament Lens — the Streamlit entry: page setup, navigation and the sidebar every page shares.

``streamlit run app.py`` opens on the shipped vicuna80 data (the store imports it on first use).
The sidebar's choices (dataset, judge, category, ranker) have explicit widget keys and live in
``st.session_state``, so they persist while the user moves between pages. Pages only render
engine results; see README.md, "The app", for the page list.
"""

from __future__ import annotations

import streamlit as st

if __name__ == "__main__":  # a script run (Streamlit runs the script as __main__); see the file's end
    from app_pages._prewarm import wait_for_prewarm

    wait_for_prewarm()  # the server's head start, if it is still importing: waited for, not raced
    from app_pages._charts_last import charts_last
    from app_pages._lens import (
        ALL,
        busy_notice,
        choices,
        datasets_table,
        freeze_startup_heap,
        get_store,
        guarded_session,
        pick,
        user_text,
    )
    from engine.errors import LensError
    from engine.store.connection import StoreBusy
    from engine.store.schema import DEFAULT_DATASET

# The page icon, a trophy emoji drawn locally: the very data URL Streamlit's frontend makes of page_icon="🏆"
# (tests/app/test_app_favicon.py), with the emoji percent-encoded. Given as the emoji itself, the first run of
# every server process imports Streamlit's emoji catalogue to recognise it (streamlit.string_util.is_emoji),
# compiling a regular expression of every emoji: 0.04-0.1 s of CPU on the app's first open; an ASCII data URL
# is passed through as an image URL. A :material/…: icon would be fetched from fonts.gstatic.com. (A comment,
# not a docstring: Streamlit's magic draws a module-level string on the page.)
FAVICON = ("data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 100 100'>"
           "<text y='.9em' font-size='90'>%F0%9F%8F%86</text></svg>")


def skip_repl_probe() -> None:
    """Served by ``streamlit run``: mark Streamlit's "use streamlit run" warning as given, so the first
    element a server process draws does not look for a Python prompt (``env_util.is_repl`` calls
    ``inspect.stack()``, which reads the source of every frame and scans every loaded module: 0.2-0.4 s of
    CPU with pandas and the engine loaded, paid by the first page any server opens). Under ``streamlit
    run`` neither warning applies; run any other way (no runtime), the warning is left to Streamlit."""
    from streamlit import delta_generator, runtime

    if runtime.exists():
        delta_generator._use_warning_has_been_displayed = True


def pages() -> list:
    """The navigation's pages, made in each script run (a page object belongs to its run's script).

    The page scripts live in app_pages/, not pages/: a folder named pages/ next to app.py switches on
    Streamlit's legacy directory routing, which answered every direct address of a page (a bookmark,
    the Cycles table's links) with a "Page not found" dialog. The url paths are ours, not the file names.
    The default page is served at the root only: Streamlit reserves its url_path but answers it with
    "Page not found" (so /ranking did), hence its url_path is the root itself and its names are aliases."""
    listed = [
        st.Page(
            "app_pages/1_leaderboard.py", url_path="", title="Leaderboard", icon=":material/leaderboard:",
            default=True,
        ),
        st.Page(
            "app_pages/2_truncation.py", url_path="keep-k", title="Truncation", icon=":material/content_cut:"
        ),
        st.Page("app_pages/3_cycles.py", url_path="cycle-map", title="Cycles", icon=":material/cycle:"),
        st.Page(
            "app_pages/4_inspector.py",
            url_path="prompt-inspector",
            title="Prompt inspector",
            icon=":material/account_tree:",
        ),
        st.Page("app_pages/8_head_to_head.py", url_path="head-to-head", title="Head-to-head",
                icon=":material/compare_arrows:"),
        st.Page("app_pages/5_judges.py", url_path="judge-diagnostics", title="Judges",
                icon=":material/balance:"),
        st.Page("app_pages/6_data.py", url_path="datasets", title="Data", icon=":material/database:"),
        st.Page(
            "app_pages/7_theory_lab.py", url_path="theory-lab", title="Theory lab", icon=":material/science:"
        ),
        st.Page("app_pages/9_active.py", url_path="which-calls-next", title="Active judging",
                icon=":material/ads_click:"),
    ]
    by_path = {page.url_path: page for page in listed}
    return listed + [_alias(alias, by_path[path]) for alias, path in PAGE_ALIASES.items()]


# Other addresses a person types or kept from older versions (the page's name, the file-based names of
# the pages/ folder) -> the page's own url path. Each is a hidden page that sends the browser on (a bare
# string here would be drawn on every page: Streamlit's magic writes module-level expressions).
PAGE_ALIASES = {
    "ranking": "",
    "leaderboard": "",
    "truncation": "keep-k",
    "cycles": "cycle-map",
    "inspector": "prompt-inspector",
    "judges": "judge-diagnostics",
    "data": "datasets",
    "theory_lab": "theory-lab",
}


def _alias(alias: str, target: st.Page) -> st.Page:
    """A hidden page at ``/alias`` that switches to ``target``, keeping the address's query
    (``?dataset=…&judge=…``)."""

    def forward() -> None:
        st.switch_page(target, query_params=st.query_params.to_dict())

    return st.Page(forward, url_path=alias, title=target.title, visibility="hidden")


def _remember(key: str) -> None:
    """on_change: copy a sidebar widget's value into its persistent twin ``_<key>``."""
    st.session_state[f"_{key}"] = st.session_state[key]


def _choice(label: str, options: list[str], key: str, default: str, **kwargs) -> str:
    """A sidebar selectbox whose choice survives page switches.

    The choice lives in a plain session key ``_<key>`` (widget state can be dropped when the page
    changes); it is written into the widget's key before the widget is made, and back on change.
    A remembered choice the current dataset does not offer falls back to ``default``.
    """
    value = pick(st.session_state.get(f"_{key}"), options, default)
    st.session_state[f"_{key}"] = value
    st.session_state[key] = value
    return st.selectbox(label, options, key=key, on_change=_remember, args=(key,), **kwargs)


def _judge_label(value: str) -> str:
    """The judge picker's text: the pooled choice is spelled out."""
    return "all judges (pooled)" if value == ALL else value


def _seed_from_query() -> None:
    """A link such as ``?dataset=x&judge=y`` sets the sidebar once, when a session starts."""
    if st.session_state.get("_seeded"):
        return
    st.session_state["_seeded"] = True
    for key in ("dataset", "judge", "category", "ranker"):
        value = st.query_params.get(key)
        if value:
            st.session_state[f"_{key}"] = value


def sidebar() -> None:
    """Dataset, judge, category and ranker pickers shared by every page."""
    from engine.rankers import RANKERS
    from engine.store.datasets import stamped_version

    store = get_store()
    datasets = datasets_table()["name"].tolist()
    _seed_from_query()
    if "_select_dataset" in st.session_state:  # set by the Data page after an import or rename
        st.session_state["_dataset"] = st.session_state.pop("_select_dataset")
    with st.sidebar:
        st.markdown("### :material/hub: Tournament Lens")
        if not datasets:
            st.info("The store holds no dataset yet; import one on the Data page.")
            st.session_state["dataset"] = None
            return
        dataset = _choice("Dataset", datasets, "dataset", DEFAULT_DATASET)
        ch = choices(dataset, stamped_version(store, dataset))
        _choice(
            "Judge",
            [ALL, *ch.judges],
            "judge",
            ALL,
            format_func=_judge_label,
            help="Each judge's verdicts form their own graphs. Opens on all judges pooled, as the command "
            f"line does without --judge; {ch.default_judge} is the judge covering the most models.",
        )
        _choice("Category", [ALL, *ch.categories], "category", ALL)
        _choice("Ranker", list(RANKERS), "ranker", "bt", help="How the kept graphs become scores.")
        st.caption(f"Store: `{store.path.name}`")


def main() -> None:
    """Navigation first (its page links need no store), then one guarded store session from the
    sidebar to the end of the page: a store another process holds past the wait is a warning with a
    retry button (``app_pages._lens.guarded_session``), and the page links stay usable."""
    page = st.navigation(pages())
    try:
        get_store()
    except StoreBusy as exc:  # held by another process while this server first opens it
        busy_notice(exc, "busy_open")
        return
    except LensError as exc:  # the store cannot be opened at all (not a DuckDB file, unreadable, cut short)
        st.error(user_text(exc))
        st.button("Try again", icon=":material/refresh:", key="open_retry")
        return
    with guarded_session("busy_retry") as outcome:  # busy store, stray or unexpected errors: one sentence
        sidebar()
        with charts_last():  # a page's Plotly charts reach the browser after its other elements
            page.run()
    if outcome.busy:
        st.sidebar.caption("The store is busy: the dataset, judge and ranker choices return when it is free.")



def run() -> None:
    """One script run: the process's start-up marks, the page config, then ``main``."""
    freeze_startup_heap()  # once per process: the imports' objects leave the per-run collection's walk
    skip_repl_probe()
    if not st.get_option("client.disableDataExport"):
        # Started where .streamlit/config.toml is not read (another folder) or with the option turned off:
        # st.dataframe's toolbar would offer "Download as CSV" with formula cells unguarded. The option
        # reaches the browser with each run's start, so this run ends here and the next starts with it.
        st.set_option("client.disableDataExport", True)
        st.rerun()
    st.set_page_config(page_title="Tournament Lens", page_icon=FAVICON, layout="wide")
    main()


if __name__ == "__main__":  # every script run: Streamlit (and AppTest) run this file as __main__
    run()
else:
    # Imported, not run: `streamlit run app.py` finds this st.App in the file and serves it, importing app.py
    # as a module (so nothing above imported more than Streamlit). Its lifespan starts importing what the
    # first script run needs while the browser loads the frontend (app_pages/_prewarm.py); every session
    # runs this same file as its script.
    from starlette.middleware import Middleware

    from app_pages._prewarm import RequestCount, lifespan

    app = st.App("app.py", lifespan=lifespan, middleware=[Middleware(RequestCount)])
