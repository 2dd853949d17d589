"""The Data page's reference-map section: how each model name of a dataset reaches the LMArena
reference, and a map kept with the dataset (uploaded as a CSV or edited in the table).

The engine decides the names (``engine.ranking.reference.name_map_table``) and keeps the map
(``engine.store.model_maps``); this module only renders them and passes the user's edits on."""

from __future__ import annotations

import io

import pandas as pd
import streamlit as st

from app_pages._lens import opened_expander, show_error, user_text
from engine.errors import LensError
from engine.store.connection import Store
from engine.views.viz import escape_md

HOW_HELP = (
    "stored: the map kept with the dataset · shipped: data/mappings · exact: the same name on the reference "
    "· normalised: the same name ignoring case and every character that is not a letter or digit · "
    "ambiguous: several reference names (or several of the dataset's names) match, so none is taken · "
    "unmatched: no reference name matches"
)


def _changed_rows(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The rows whose reference name the user changed in the editor (model, reference_model)."""
    merged = before[["model", "reference_model"]].merge(after[["model", "reference_model"]], on="model",
                                                         suffixes=("_old", ""))
    merged["reference_model"] = merged["reference_model"].fillna("").astype(str).str.strip()
    edited = merged["reference_model"] != merged["reference_model_old"]
    return merged.loc[edited, ["model", "reference_model"]]


def _keep(store: Store, dataset: str, rows: pd.DataFrame, what: str) -> None:
    """Store the map (replacing the kept one), then rerun the page with a message saying so."""
    from engine.ranking.reference import keep_map

    try:
        keep_map(store, dataset, rows)
    except LensError as exc:
        show_error(exc)
        return
    st.session_state["data_stored"] = (
        f"{what} Dataset {dataset} now keeps a map of {len(rows)} model name(s) (version "
        f"{store.dataset_revision(dataset)}); its reference columns and curves use it.")
    st.rerun()


def reference_map_section(store: Store, names: list[str]) -> None:
    """The expander: the name table of one dataset, an editor for the kept map, an upload."""
    from engine.ranking.reference import name_map_table, read_mapping
    from engine.store.model_maps import stored_map

    # drawn only while open (opened_expander): its name table reads the store, ~60 ms a rerun when closed
    box = opened_expander("Reference names: map model names to the LMArena reference", "refmap_open")
    if box is None:
        return
    with box:
        if not names:
            st.info("The store holds no dataset.")
            return
        sidebar_ds = st.session_state.get("dataset")
        pick = st.selectbox("Dataset", names, key="refmap_pick",
                            index=names.index(sidebar_ds) if sidebar_ds in names else 0)
        try:
            table = name_map_table(store, pick)
        except LensError as exc:
            show_error(exc)
            return
        placed = int(table["reference_model"].ne("").sum())
        st.markdown(f"**{placed} of {len(table)}** models of {escape_md(pick)} have a reference name "
                    "(the Leaderboard's reference columns and the Truncation curves need two).")
        for note in table.attrs["notes"]:
            sentence = note.removeprefix("reference: ")
            st.info(user_text(sentence[:1].upper() + sentence[1:]), icon=":material/info:")
        kept = stored_map(store, pick)
        st.caption("Edit a reference name to keep it with the dataset (empty: not on the reference); "
                   "names you leave alone keep being found as the column *how* says; edits not kept are "
                   "dropped when this section is closed. " + HOW_HELP)
        version = store.dataset_version(pick)
        edited = st.data_editor(
            table[["model", "reference_model", "how", "candidates"]], hide_index=True, width="stretch",
            disabled=["model", "how", "candidates"], key=f"refmap_editor_{pick}_{version}",
            column_config={"reference_model": st.column_config.TextColumn("reference name", width="medium")},
        )
        changed = _changed_rows(table, edited)
        c1, c2 = st.columns(2)
        if c1.button(f"Keep {len(changed)} edited name(s) with the dataset", key="refmap_save",
                     disabled=changed.empty):
            merged = pd.concat([changed, kept]).drop_duplicates("model", keep="first")
            _keep(store, pick, merged, f"Kept {len(changed)} edited name(s).")
        if c2.button("Forget the kept map", key="refmap_clear", disabled=kept.empty,
                     help=f"The map kept with {pick} has {len(kept)} row(s); without it, names are matched "
                          "by name (and a shipped map)."):
            _keep(store, pick, kept.iloc[:0], "Forgot the kept map.")
        up = st.file_uploader("Or upload a map (CSV with columns model and arena_model, or reference_model)",
                              type=["csv"], key="refmap_upload")
        if up is not None:
            try:
                rows = read_mapping(io.BytesIO(up.getvalue()), up.name)
            except LensError as exc:
                show_error(exc)
                return
            rows = rows.rename(columns={"arena_model": "reference_model"})[["model", "reference_model"]]
            unknown = sorted(set(rows["model"]) - set(table["model"]))
            st.caption(f"{escape_md(up.name)}: {len(rows)} row(s)"
                       + (f"; {len(unknown)} name(s) not in {escape_md(pick)} (e.g. {escape_md(unknown[0])}) "
                          "are kept too, for a later import" if unknown else "") + ".")
            if st.button(f"Keep the uploaded map with {pick}", key="refmap_keep_upload", type="primary"):
                merged = pd.concat([rows, kept]).drop_duplicates("model", keep="first")
                _keep(store, pick, merged, f"Kept the map {up.name}.")
