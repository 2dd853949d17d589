"""The Data page's texts section: prompt and answer texts from their own files (FastChat / Arena-Hard
questions and model answers, LLMFAO prompts / results / models, AlpacaEval outputs) added to a stored
dataset, with the match report before anything is stored (engine.ingest.texts_import computes it)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import streamlit as st

from app_pages._lens import show_error, user_text
from engine.errors import LensError
from engine.ingest.text_files import TextsRead, read_text_files
from engine.ingest.texts_import import match_texts, refusal, store_texts
from engine.store.connection import Store
from engine.views.dataview import file_name
from engine.views.viz import escape_md


@st.cache_resource(max_entries=4, show_spinner="Reading the text files…")
def _read(digests: tuple[str, ...], _sources: list, names: tuple[str, ...]) -> TextsRead:
    """The staged texts of the uploads, once per content and names (a rerun reuses them)."""
    return read_text_files(_sources)


def texts_section(store: Store, names: list[str], stored: Callable[..., None]) -> None:
    """Upload text files for a dataset, show what each gave and how they match its verdicts, store them."""
    with st.expander("Add prompt and answer texts to a dataset"):
        st.caption(
            "Texts kept apart from the verdicts: FastChat / Arena-Hard question.jsonl and "
            "model_answer/<model>.jsonl (the model is the file's name), LLMFAO prompts.jsonl, results.jsonl "
            "and models.jsonl, AlpacaEval outputs (matched by instruction), or records prompt_id, text and "
            "prompt_id, model, text. They are matched to the dataset's verdicts by prompt id, turn and "
            "model; the inspector, the head-to-head browser and style control then use them. A text "
            "already stored for a key is replaced."
        )
        if not names:
            st.info("Import a verdict file first: texts belong to a dataset's verdicts.")
            return
        target = st.selectbox("Dataset the texts belong to", names, key="texts_into")
        ups = st.file_uploader("Text files", type=["jsonl", "json"], accept_multiple_files=True,
                               key="texts_upload")
        if not ups:
            return
        sources = [(u.getvalue(), file_name(u.name)) for u in ups]
        digests = tuple(hashlib.sha256(data).hexdigest() for data, _ in sources)
        try:
            with store.unheld():
                read = _read(digests, sources, tuple(n for _, n in sources))
            match = match_texts(store, target, read)
        except LensError as exc:
            show_error(exc)
            return
        st.dataframe(read.files_table(), hide_index=True, width="stretch")
        for note in read.notes():
            st.info(escape_md(note))
        st.markdown("\n".join(f"- {escape_md(line)}" for line in match.lines()))
        why = refusal(read, match, target)
        if why is not None:
            st.error(user_text(why))
            return
        if st.button(f"Store the texts in {target}", key="texts_store", type="primary"):
            try:
                result = store_texts(store, target, read, match)
            except LensError as exc:
                show_error(exc)
            else:
                stored(result.summary()[0].upper() + result.summary()[1:] + ".", select=target)
