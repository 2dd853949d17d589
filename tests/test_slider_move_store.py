"""A Truncation slider move (a fragment run) opens no store file once its inputs are cached: the page
caption's "version N" (``Choice.caption``, every page's) is read once per dataset version
(``app_pages._lens.revision_for``), not on every move (an open and a release of the DuckDB file each time:
30 ms of CPU, 0.3-0.7 s of wall time at load 20). A write to the dataset moves its version, so the
caption then shows the new count, read from the store as before."""

from __future__ import annotations

import streamlit as st

from app_pages import _lens
from engine.store import writes
from engine.store.connection import Store
from engine.views.appstate import CacheKey
from engine.views.viz import escape_md


def test_caption_reads_the_revision_once_per_version(shipped_db_copy, monkeypatch):
    monkeypatch.setenv("LENS_DB", str(shipped_db_copy))
    st.cache_resource.clear()
    st.cache_data.clear()
    store = _lens.get_store()
    with _lens.store_session():
        key = CacheKey.of(store, "vicuna80", "gpt-4", None)
        revision = store.dataset_revision("vicuna80")
        first = _lens.Choice(key, "bt").caption()
    assert first == escape_md(f"dataset vicuna80 (version {revision}) · judge gpt-4 · all categories")

    opened = []
    real = Store._connect

    def counting(self):
        opened.append(self.path)
        return real(self)

    monkeypatch.setattr(Store, "_connect", counting)
    with _lens.store_session():  # a slider move: the fragment's own session
        moved = _lens.Choice(key, "bt").caption()
    assert opened == [] and moved == first
    monkeypatch.setattr(Store, "_connect", real)

    with store.transaction() as tx:  # a change to the dataset (an import, a judge run): revision + 1
        writes.bump_dataset(tx, "vicuna80")
    with _lens.store_session():
        key2 = CacheKey.of(store, "vicuna80", "gpt-4", None)
        after = _lens.Choice(key2, "bt").caption()
        assert store.dataset_revision("vicuna80") == revision + 1
    assert key2.version != key.version
    assert after == escape_md(f"dataset vicuna80 (version {revision + 1}) · judge gpt-4 · all categories")
    st.cache_resource.clear()
    st.cache_data.clear()
