"""Tournament Lens — the Streamlit entry: page setup, navigation and the sidebar every page shares.

``streamlit run app.py`` opens on the shipped vicuna80 data (the store imports it on first use).
The sidebar's choices (dataset, judge, category, ranker) have explicit widget keys and live in
``st.session_state``, so they persist while the user moves between pages. Pages only render
engine results; see DESIGN.md for the page list.
"""

from __future__ import annotations

import streamlit as st

from engine.errors import LensError
from engine.schema import DEFAULT_DATASET
from pages._lens import ALL, choices, get_store

st.set_page_config(page_title="Tournament Lens", page_icon=":material/hub:", layout="wide")

# url paths differ from the names Streamlit derives from the file names ("2_truncation.py" →
# "truncation"): equal names would let the legacy pages/ directory routing run a page without app.py.
PAGES = [
    st.Page("pages/1_leaderboard.py", url_path="ranking", title="Leaderboard", icon=":material/leaderboard:", default=True),
    st.Page("pages/2_truncation.py", url_path="keep-k", title="Truncation", icon=":material/content_cut:"),
    st.Page("pages/3_cycles.py", url_path="cycle-map", title="Cycles", icon=":material/cycle:"),
    st.Page("pages/4_inspector.py", url_path="prompt-inspector", title="Prompt inspector", icon=":material/account_tree:"),
    st.Page("pages/5_judges.py", url_path="judge-diagnostics", title="Judges", icon=":material/balance:"),
    st.Page("pages/6_data.py", url_path="datasets", title="Data", icon=":material/database:"),
    st.Page("pages/7_theory_lab.py", url_path="theory-lab", title="Theory lab", icon=":material/science:"),
]


def _keep_valid(key: str, options: list[str], default: str) -> None:
    """Reset a persisted sidebar choice that the current dataset does not offer."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else (options[0] if options else None)


def _seed_from_query() -> None:
    """A link such as ``?dataset=x&judge=y`` sets the sidebar once, when a session starts."""
    if st.session_state.get("_seeded"):
        return
    st.session_state["_seeded"] = True
    for key in ("dataset", "judge", "category", "ranker"):
        value = st.query_params.get(key)
        if value:
            st.session_state[key] = value


def sidebar() -> None:
    """Dataset, judge, category and ranker pickers shared by every page."""
    from engine.rankers import RANKERS

    try:
        store = get_store()
    except LensError as exc:
        st.error(str(exc))
        st.stop()
    datasets = store.datasets()["name"].tolist()
    _seed_from_query()
    if "_select_dataset" in st.session_state:  # set by the Data page after an import or rename
        st.session_state["dataset"] = st.session_state.pop("_select_dataset")
    with st.sidebar:
        st.markdown("### :material/hub: Tournament Lens")
        if not datasets:
            st.info("The store holds no dataset yet; import one on the Data page.")
            st.session_state["dataset"] = None
            return
        _keep_valid("dataset", datasets, DEFAULT_DATASET)
        dataset = st.selectbox("Dataset", datasets, key="dataset")
        ch = choices(dataset, store.dataset_version(dataset))
        judges = [ALL, *ch.judges]
        _keep_valid("judge", judges, ch.default_judge)
        st.selectbox("Judge", judges, key="judge", help="Each judge's verdicts form their own graphs.")
        cats = [ALL, *ch.categories]
        _keep_valid("category", cats, ALL)
        st.selectbox("Category", cats, key="category")
        rankers = list(RANKERS)
        _keep_valid("ranker", rankers, "bt")
        st.selectbox("Ranker", rankers, key="ranker", help="How the kept graphs become scores.")
        st.caption(f"Store: `{store.path.name}`")


sidebar()
st.navigation(PAGES).run()
