"""Data page uploads (issue 15): the upload is validated once per content, not on every interaction,
and the store is let go while it is read."""

from __future__ import annotations

# ruff: noqa: F811 - the fixtures imported from apphelpers are requested by name
from apphelpers import own_app_at  # noqa: F401


def test_upload_is_validated_once_across_interactions(own_app_at, monkeypatch):
    """The audit: the Data page re-validated the whole upload on every interaction."""
    from engine.ingest import importer as ingest

    calls = []
    real = ingest.validate_file

    def counting(*args, **kwargs):
        calls.append(args[1] if len(args) > 1 else kwargs.get("filename"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest, "validate_file", counting)
    data = ("prompt_id,model_a,model_b,winner\n" + "".join(f"c{i},x,y,A\n" for i in range(30))
            + "c0,x,x,B\n").encode()
    at = own_app_at("app_pages/6_data.py")
    at.file_uploader(key="data_upload").set_value(("once.csv", data, "text/csv")).run()
    assert [e.message for e in at.exception] == []
    assert {m.label: m.value for m in at.metric}["Rejected rows"] == "1"
    at.text_input(key="data_name").input("once").run()
    at.checkbox(key="data_skip").check().run()
    at.button(key="data_import").click().run()
    assert [e.message for e in at.exception] == []
    assert calls.count("once.csv") == 1, calls
    from app_pages._lens import get_store

    assert get_store().datasets().set_index("name").loc["once", "verdicts"] == 30
