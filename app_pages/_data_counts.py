"""The Data page's upload of a pair-count file (issue 25, point 7): a file with the columns
``model_a, model_b, wins_a, wins_b, ties[, both_bad]`` is read and stored as a dataset of counts
(``engine.ingest.pair_count_files``), never as verdicts; the verdict upload's form is skipped for it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st

from app_pages._lens import show_error
from engine.errors import LensError
from engine.views.viz import escape_md


def pair_count_upload(store, data: bytes, name: str, target: str | None, adding: bool) -> bool:
    """Offer the upload ``data`` (file name ``name``) as pair counts when it is a pair-count file and
    return True; False (nothing shown) for any other file."""
    from engine.ingest.pair_count_files import is_pair_count_file

    with tempfile.TemporaryDirectory(prefix="lens_pair_counts_") as folder:  # gone after every run
        path = Path(folder) / Path(name).name
        path.write_bytes(data)
        if not is_pair_count_file(path):
            return False
        return _offer(store, path, data, name, target, adding)


def _offer(store, path: Path, data: bytes, name: str, target: str | None, adding: bool) -> bool:
    """The pair-count file at ``path`` (the upload ``name``): its summary, and the button storing it."""
    from engine.ingest.pair_count_files import import_pair_counts, read_pair_count_files

    st.markdown(f"**{escape_md(name)}** · {len(data):,} bytes · read as **pair counts** (wins, ties per "
                "model pair; no prompts)")
    try:
        table = read_pair_count_files([path])
    except LensError as exc:
        show_error(exc)
        return True
    for sentence in table.sentences():
        st.info(escape_md(sentence.replace(str(path), name)))
    if adding:
        st.error("Pair counts are a dataset of their own; choose “a new dataset” to import them.")
        return True
    if st.button("Import pair counts as a new dataset", key="data_import_counts", type="primary"):
        dataset = (target or "").strip()
        if not dataset:
            st.error("Give the new dataset a name first.")
        elif store.has_dataset(dataset):
            st.error(f"A dataset named {escape_md(dataset)} exists already; choose another name.")
        else:
            try:
                result = import_pair_counts(store, [path], dataset, source=name)
            except LensError as exc:
                show_error(exc)
            else:
                st.cache_data.clear()
                got = result.table
                st.session_state["data_stored"] = (f"Stored dataset {dataset}: {len(got.pairs):,} pairs, "
                                                   f"{got.n_battles:,} battles (pair counts).")
                st.session_state["_select_dataset"] = dataset
                st.rerun()
    return True
