"""Data: upload verdicts (CSV, JSONL, Parquet), map columns, read the validation report, import;
rename and delete datasets; export verdicts and results."""

from __future__ import annotations

import hashlib
import io
import json

import streamlit as st

from app_pages._data_counts import pair_count_upload
from app_pages._data_importopts import judge_input, set_and_baseline
from app_pages._data_refmap import reference_map_section
from app_pages._data_texts import texts_section
from app_pages._lens import (
    MU_DEFAULT,
    column_picker,
    current,
    datasets_table,
    fit_columns,
    get_store,
    or_stop,
    remember,
    results_zip_for,
    revision_for,
    show_error,
    user_text,
    warn_incomplete,
)
from engine.errors import LensError
from engine.ingest import importer as ingest
from engine.ingest.formats import tool as tool_format
from engine.ingest.synthetic import write_synthetic
from engine.ingest.verdict_export import (
    export_verdicts,
    map_left_out_note,
    texts_left_out,
    texts_left_out_note,
)
from engine.ingest.verdict_files import sniff_tool
from engine.ingest.verdicts import FORMATS, OPTIONAL, REQUIRED, TEXTS, parse_value_map
from engine.store.pair_counts import pair_count_datasets
from engine.views.dataview import SKIP_LABEL, columns_line, datasets_view, file_name, refusal_message
from engine.views.viz import escape_md

st.title("Data")
st.caption(
    "A verdict file has one row per judge verdict: prompt_id, model_a, model_b, winner (A, B or tie) "
    "and optional judge, variant, category, order, prob_a, explanation, question, answer_a, answer_b, "
    "battle_id, "
    "tstamp. The judgment files of FastChat (MT-Bench pairwise and human), Arena-Hard, AlpacaEval, evalica / "
    "LLMFAO "
    "and Chatbot Arena logs are recognised by their fields. Every file is validated before anything is "
    "stored; "
    "a bad row is reported with its line and reason."
)
store = get_store()
SYNTHETIC_NAME = "synthetic-demo"

if "data_stored" in st.session_state:
    st.success(user_text(st.session_state.pop("data_stored")))
st.subheader("Datasets in the store")
ds = datasets_table()
listing = datasets_view(ds)
num = st.column_config.NumberColumn
listing_config = {
    "name": st.column_config.TextColumn("name", pinned=True),
    "version": num("version", width=60, help="How many times the dataset was imported into or changed."),
    "verdicts": num("verdicts", width=80),
    "battles": num("battles", width=80, help="Its verdicts that are not invalid, or, for a dataset of pair "
                   "counts (no verdicts), the wins, ties and both-bad outcomes summed over its pairs."),
    "invalid": num("invalid", width=60, help="Verdicts whose judge output could not be read as a winner."),
    "judges": num("judges", width=60),
    "models": num("models", width=64),
    "prompts": num("prompts", width=72),
    "description": st.column_config.TextColumn("description"),
    "source": st.column_config.TextColumn("source", width=200),
    "synthetic": st.column_config.CheckboxColumn("synthetic", width=80),
    "updated_at": st.column_config.DatetimeColumn("updated", format="YYYY-MM-DD HH:mm", width=140),
}
# the main columns fit 1280 px with the whole name (a fixed layout of every column cut
# "chatbot_arena_2024_08_14" to "chatbot_ar" and scrolled sideways); the others on request
listed = column_picker(list(listing.columns), ("name", "verdicts", "battles", "judges", "prompts",
                                               "description"),
                       ("version", "invalid"), listing_config, "data_listing_columns",
                       "Name, verdicts, battles, judges, prompts and description")
st.dataframe(
    listing,
    hide_index=True,
    width="stretch",
    column_order=listed,
    column_config=fit_columns(listing_config, listed, {"name": listing["name"]}, fill="description",
                              least=120),
)
names = ds["name"].tolist()
warn_incomplete(names)  # every listed dataset an unfinished judge run left part-written

# the section is a persisted control (not st.tabs): a rename or delete reruns the page and keeps the
# user in the section they were in, and only the chosen section's work runs
SECTIONS = ["Import", "Rename / delete", "Export"]
st.session_state["data_section"] = st.session_state.get("_data_section", SECTIONS[0])
section = st.segmented_control("Section", SECTIONS, key="data_section", required=True,
                               label_visibility="collapsed", on_change=remember, args=("data_section",))


@st.cache_resource(max_entries=4, show_spinner="Validating the file…")
def _validated(digest: str, _data: bytes, name: str, options: str):
    """The upload's validation report, once per content (``digest``), file name and options (column
    map, format, value map, judge: JSON): a rerun of the page (a click, a typed name) reuses it
    instead of reading the whole file again. The rows stay staged on disk (engine.ingest.staging); the
    dataset is named when storing."""
    o = json.loads(options)
    return ingest.validate_file(_data, name, column_map=o["map"] or None, fmt=o["fmt"], dataset="upload",
                                value_map=o["values"] or None, judge=o["judge"], set_columns=o["set"],
                                baseline_model=o["baseline"], derive_judge=True)


def _stored(message: str, select: str | None = None) -> None:
    """After a change to the store: clear caches, say what happened, rerun in the same section."""
    st.cache_data.clear()
    st.session_state["data_stored"] = message
    if select is not None:
        st.session_state["_select_dataset"] = select
    st.rerun()


if section == "Import":
    into = st.radio(
        "Import into",
        ["a new dataset", "an existing dataset"],
        key="data_target",
        horizontal=True,
        disabled=not names,
        help="Add a file (one judge's verdicts, say) to a dataset already stored.",
    )
    adding = into == "an existing dataset" and bool(names)
    up = st.file_uploader("Verdict file", type=["csv", "tsv", "jsonl", "json", "parquet"], key="data_upload")
    if adding:
        name = st.selectbox("Dataset to add the file to", names, key="data_into")
    else:
        name = st.text_input("Name of the new dataset", key="data_name", placeholder="e.g. my-judge-run")
    f1, f2, f3 = st.columns(3)
    fmt_pick = f1.selectbox(
        "Format",
        ["detect", *FORMATS],
        key="data_format",
        help="detect: from the file's name, bytes and fields; a container name (csv, jsonl, …) "
        "reads canonical columns; a tool name reads that tool's judgment file",
    )
    fmt = None if fmt_pick == "detect" else fmt_pick
    data, up_name, cols, tool = None, None, [], None
    if up is not None:
        data, up_name = up.getvalue(), file_name(up.name)  # messages name the file, never a path
        try:
            cols = ingest.file_columns(data, up_name, fmt)
        except LensError:  # (a file too wide to offer its columns: at most COLUMNS_MAX are listed)
            cols = []  # the validation report below names the problem
        tool = sniff_tool(data, up_name, fmt)
    judge_pick = judge_input(f2, data, up_name, cols, tool, fmt)
    values_text = f3.text_input(
        "Value map",
        key="data_values",
        placeholder="winner:left=A, winner:right=B",
        help="COLUMN:VALUE=NEW, comma-separated: read another spelling as a canonical value.",
    )
    set_values, baseline = set_and_baseline(tool)
    if up is not None and data is not None and up_name is not None and pair_count_upload(
        store, data, up_name, name, adding
    ):
        pass  # a pair-count file: stored as counts by its own section (issue 25)
    elif up is not None and data is not None and up_name is not None:
        value_map = or_stop(parse_value_map, [v for v in values_text.split(",") if v.strip()])
        st.markdown(
            f"**{escape_md(up_name)}** · {len(data):,} bytes · columns: {escape_md(columns_line(cols))}"
            + (f" · read as **{escape_md(tool_format(tool).title)}**" if tool else "")
        )
        lowered = {c.strip().lower() for c in cols}
        need_map = [c for c in REQUIRED if c not in lowered] if tool is None else []
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
        options = json.dumps({"map": column_map, "fmt": fmt, "values": value_map, "judge": judge_pick or None,
                              "set": set_values, "baseline": baseline}, sort_keys=True)
        with store.unheld():  # another process may write to the store while the file is read
            report = or_stop(_validated, hashlib.sha256(data).hexdigest(), data, up_name, options)
        c1, c2, c3, c4 = st.columns(4)
        c1.metric("Rows read", report.rows_read)
        c2.metric("Valid rows", report.n_good)
        c3.metric("Rejected rows", report.n_rejected)
        c4.metric(
            "Unparsable judge outputs", report.n_invalid, help="Stored as invalid, never counted as a tie."
        )
        if report.n_rejected:
            st.error(f"{report.n_rejected} row(s) cannot be imported; fix them in the file, or tick "
                     f"“{SKIP_LABEL}” below.")
            shown = report.rejected_head(1000)
            if report.n_rejected > len(shown):
                st.caption(f"The first {len(shown):,} of {report.n_rejected:,} rejected rows:")
            # the line number narrow, so a long reason is not cut at the frame's edge (an even split
            # gave each column half of the 1280 px page)
            st.dataframe(shown[["source_line", "reason"]], hide_index=True, width="stretch",
                         column_config={"source_line": st.column_config.NumberColumn("line", width="small"),
                                        "reason": st.column_config.TextColumn("reason", width="large")})
        else:
            st.success("Every row is valid.")
        for note in report.notes():  # repeated rows kept, columns not kept
            st.info(escape_md(note))
        with st.expander("Preview of the valid rows"):
            st.dataframe(report.preview(50), hide_index=True, width="stretch")
        skip = st.checkbox(SKIP_LABEL, key="data_skip", disabled=not report.n_rejected)
        label = f"Add to dataset {name}" if adding else "Import as a new dataset"
        if st.button(label, key="data_import", type="primary"):
            target = (name or "").strip()
            if not target:
                st.error("Give the new dataset a name first.")
            elif store.has_dataset(target) and not adding:
                st.error(f"A dataset named {escape_md(target)} exists already; choose another name.")
            else:
                try:
                    result = ingest.store_report(store, report, target, skip_invalid=skip)
                except LensError as exc:
                    show_error(exc)
                else:
                    if result.status == "stored":
                        what = f"Added {up_name} to dataset" if adding else "Stored dataset"
                        _stored(f"{what} {target}: {result.summary()}.", select=target)
                    else:
                        st.error(escape_md(refusal_message(result)))

    with st.expander("No verdict file at hand? Add the labelled synthetic dataset"):
        st.caption(
            "A generated dataset with a known true ranking of 20 models: 8 categories × 10 prompts, each "
            "prompt judged as written, in 4 paraphrases and in 4 sampling replicates, 40 % of the graphs "
            "confused by a biased judge (engine/ingest/synthetic.py, seed fixed). It exercises what vicuna80 "
            "cannot: "
            "paraphrase variants, the sampling-only pool, and curves against the ground truth. It is marked "
            "synthetic everywhere it appears."
        )
        synth = st.text_input("Name", value=SYNTHETIC_NAME, key="synth_name")
        if st.button("Generate and import", key="synth_make"):
            target = synth.strip()
            if not target:
                st.error("Give the synthetic dataset a name first.")
            elif store.has_dataset(target):
                st.error(f"A dataset named {escape_md(target)} exists already; choose another name.")
            else:
                try:
                    with st.spinner("Generating and validating about 137,000 verdicts…"):
                        result = write_synthetic(store, target, replace=False)
                except LensError as exc:
                    show_error(exc)
                else:
                    _stored(f"Stored synthetic dataset {target}: {result.summary()}.", select=target)
    texts_section(store, names, _stored)

elif section == "Rename / delete":
    if not names:
        st.info("The store holds no dataset.")
    else:
        pick = st.selectbox("Dataset", names, key="manage_pick")
        new = st.text_input("New name", key="manage_new")
        r1, r2, _ = st.columns([1, 1, 4])
        if r1.button("Rename", key="manage_rename"):
            try:
                ingest.rename_dataset(store, pick, new.strip())
            except LensError as exc:
                show_error(exc)
            else:
                select = new.strip() if st.session_state.get("dataset") == pick else None
                _stored(f"Renamed dataset {pick} to {new.strip()}.", select=select)
        # the confirmation belongs to one dataset as it is now: another pick, a rename, a delete or a
        # new import (a new version) unticks it, so a tick never carries over to another dataset
        target = (pick, int(ds.set_index("name").loc[pick, "version"]))
        if st.session_state.get("_confirm_for") != target:
            st.session_state["_confirm_for"] = target
            st.session_state["manage_confirm"] = False
        confirm = st.checkbox(f"I understand that deleting removes every verdict of {escape_md(pick)}",
                              key="manage_confirm")
        if r2.button("Delete", key="manage_delete", disabled=not confirm):
            try:
                removed = ingest.delete_dataset(store, pick)
            except LensError as exc:
                show_error(exc)
            else:
                _stored(f"Deleted dataset {pick} and its {removed:,} verdicts.")

else:
    if not names:
        st.info("The store holds no dataset.")
    else:
        st.markdown("**Verdicts**")
        e1, e2 = st.columns([2, 1])
        sidebar_ds = st.session_state.get("dataset")  # the export opens on the sidebar's dataset
        pick = e1.selectbox("Dataset to export", names, key="export_pick",
                            index=names.index(sidebar_ds) if sidebar_ds in names else 0)
        fmt = e2.radio("Format", ["csv", "jsonl", "parquet"], horizontal=True, key="export_fmt")

        def verdict_file(dataset: str = pick, fmt: str = fmt) -> bytes:
            buffer = io.BytesIO()
            export_verdicts(store, dataset, buffer, fmt=fmt)
            return buffer.getvalue()

        n_rows = int(ds.set_index("name").loc[pick, "verdicts"])
        st.download_button(
            f"Download {n_rows:,} verdicts as .{fmt}" if n_rows or pick not in pair_count_datasets(store)
            else f"Download its pair counts as .{fmt}",
            verdict_file,
            f"{pick}.{fmt}",
            key="export_go",
            on_click="ignore",
            help="The file is written when you click; importing it gives the same verdicts back.",
        )
        notes = (texts_left_out_note(pick, *texts_left_out(store, pick)), map_left_out_note(store, pick))
        for left_out in notes:
            if left_out:  # what cannot travel in a verdict file (texts no verdict names, the kept map): said
                st.info(escape_md(left_out[:1].upper() + left_out[1:]), icon=":material/info:")

        st.markdown("**Results of the current selection**")
        ch = current(warn=False)  # the page warned about every incomplete dataset above
        about = (
            f"dataset {ch.key.dataset} (version {revision_for(ch.key.dataset, ch.key.version)}), judge "
            f"{ch.key.judge or 'all judges'}, "
            f"{ch.key.category or 'all categories'}, ranker {ch.ranker}"
        )
        st.caption(
            escape_md(
                f"{about}: the leaderboard (CSV and JSON with its parameters), the per-graph cycle table "
                "(S_μ with "
                f"μ = {MU_DEFAULT:g}) and every judge diagnostic table, in one ZIP. Change the selection in "
                "the sidebar."
            )
        )
        st.download_button(
            "Download results (.zip)", lambda: results_zip_for(ch.key, ch.ranker, MU_DEFAULT, about),
            f"{ch.key.dataset}-results.zip", "application/zip", key="export_results", on_click="ignore",
        )

reference_map_section(store, names)  # app_pages/_data_refmap.py: the model-name map to the reference
