"""Data: upload verdicts (CSV, JSONL, Parquet), map columns, read the validation report, import;
rename, delete and export datasets."""

from __future__ import annotations

import io

import streamlit as st

from engine import ingest
from engine.appstate import file_columns
from engine.errors import LensError
from engine.verdicts import OPTIONAL, REQUIRED, TEXTS
from engine.viz import escape_md
from pages._lens import get_store, show_error

st.title("Data")
st.caption(
    "A verdict file has one row per judge verdict: prompt_id, model_a, model_b, winner (A, B or tie) "
    "and optional judge, variant, category, order, prob_a, explanation, question, answer_a, answer_b. "
    "Every file is validated before anything is stored; a bad row is reported with its line and reason."
)
store = get_store()

if "data_stored" in st.session_state:
    st.success(escape_md(st.session_state.pop("data_stored")))
st.subheader("Datasets in the store")
ds = store.datasets()
st.dataframe(ds, hide_index=True, width="stretch")

tab_import, tab_manage, tab_export = st.tabs(["Import", "Rename / delete", "Export"])

with tab_import:
    up = st.file_uploader("Verdict file", type=["csv", "tsv", "jsonl", "json", "parquet"], key="data_upload")
    name = st.text_input("Name of the new dataset", key="data_name", placeholder="e.g. my-judge-run")
    if up is not None:
        data = up.getvalue()
        cols = file_columns(data, up.name)
        st.markdown(f"**{escape_md(up.name)}** · {len(data):,} bytes · columns: {escape_md(', '.join(cols)) or '—'}")
        lowered = {c.strip().lower() for c in cols}
        need_map = [c for c in REQUIRED if c not in lowered]
        with st.expander("Map columns", expanded=bool(need_map)):
            st.caption("Pick the file column that holds each verdict field when the names differ.")
            column_map: dict[str, str] = {}
            grid = st.columns(4)
            for i, target in enumerate((*REQUIRED, *OPTIONAL, *TEXTS)):
                pick = grid[i % 4].selectbox(
                    target + (" *" if target in REQUIRED else ""), ["(same name)", *cols], key=f"map_{target}"
                )
                if pick != "(same name)":
                    column_map[pick] = target
        try:
            report = ingest.validate_file(data, up.name, column_map=column_map or None, dataset=name or "upload")
        except LensError as exc:
            show_error(exc)
            st.stop()
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Rows read", report.rows_read)
        c2.metric("Valid rows", report.n_good)
        c3.metric("Rejected rows", report.n_rejected)
        c4.metric("Unparsable judge outputs", report.n_invalid, help="Stored as invalid, never counted as a tie.")
        if report.n_rejected:
            st.error(f"{report.n_rejected} row(s) cannot be imported; fix them or import only the valid rows.")
            st.dataframe(report.rejected[["source_line", "reason"]], hide_index=True, width="stretch")
        else:
            st.success("Every row is valid.")
        with st.expander("Preview of the valid rows"):
            st.dataframe(report.good.head(50), hide_index=True, width="stretch")
        skip = st.checkbox("Import only the valid rows", key="data_skip", disabled=not report.n_rejected)
        if st.button("Import as a new dataset", key="data_import", type="primary"):
            target = name.strip()
            if not target:
                st.error("Give the new dataset a name first.")
            elif store.has_dataset(target):
                st.error(f"A dataset named {escape_md(target)} exists already; choose another name.")
            else:
                try:
                    result = ingest.store_report(store, report, target, skip_invalid=skip)
                except LensError as exc:
                    show_error(exc)
                else:
                    if result.status == "stored":
                        st.cache_data.clear()
                        st.session_state["data_stored"] = f"Stored dataset {target}: {result.summary()}."
                        st.session_state["_select_dataset"] = target
                        st.rerun()
                    else:
                        st.error(f"Nothing was stored: {result.message}.")

with tab_manage:
    names = ds["name"].tolist()
    if names:
        pick = st.selectbox("Dataset", names, key="manage_pick")
        new = st.text_input("New name", key="manage_new")
        r1, r2, _ = st.columns([1, 1, 4])
        if r1.button("Rename", key="manage_rename"):
            try:
                ingest.rename_dataset(store, pick, new.strip())
            except LensError as exc:
                show_error(exc)
            else:
                st.cache_data.clear()
                if st.session_state.get("dataset") == pick:
                    st.session_state["_select_dataset"] = new.strip()
                st.session_state["data_stored"] = f"Renamed dataset {pick} to {new.strip()}."
                st.rerun()
        confirm = st.checkbox("I understand that deleting removes every verdict of this dataset", key="manage_confirm")
        if r2.button("Delete", key="manage_delete", disabled=not confirm):
            try:
                removed = ingest.delete_dataset(store, pick)
            except LensError as exc:
                show_error(exc)
            else:
                st.cache_data.clear()
                st.session_state["data_stored"] = f"Deleted dataset {pick} and its {removed:,} verdicts."
                st.rerun()

with tab_export:
    names = ds["name"].tolist()
    if names:
        pick = st.selectbox("Dataset to export", names, key="export_pick")
        fmt = st.radio("Format", ["csv", "jsonl", "parquet"], horizontal=True, key="export_fmt")
        buffer = io.BytesIO()
        try:
            rows = ingest.export_verdicts(store, pick, buffer, fmt=fmt)
        except LensError as exc:
            show_error(exc)
        else:
            st.download_button(f"Download {rows:,} verdicts as .{fmt}", buffer.getvalue(), f"{pick}.{fmt}", key="export_go")
