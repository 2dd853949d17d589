"""Issue 15 item 6: the app listens on this machine only by default, and an error nobody handled
shows one sentence, never a traceback or a server path (AppTest on a damaged store)."""

from __future__ import annotations

import shutil
import tomllib

import duckdb
from apphelpers import new_app
from conftest import REPO


def test_the_server_binds_loopback_and_hides_error_details():
    cfg = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["client"]["showErrorDetails"] == "none"
    assert cfg["client"]["disableDataExport"] is True  # issue 23 bug 10 (tests/test_browser.py checks it)


def _page_text(at) -> str:
    parts = []
    for kind in ("error", "warning", "markdown", "caption", "info", "text", "code", "exception"):
        for el in getattr(at, kind, []):
            parts.append(str(getattr(el, "value", "")) + str(getattr(el, "message", "")))
    return "\n".join(parts)


def test_a_damaged_store_is_one_sentence_without_traceback_or_path(shipped_db, tmp_path, monkeypatch):
    db = tmp_path / "damaged.duckdb"
    shutil.copy(shipped_db, db)
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE verdicts")  # every page and the sidebar read it: a real, unhandled failure
    con.close()
    at = new_app(db, monkeypatch)
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("This page stopped on an unexpected error (")
    assert errors[0].endswith(
        "the details are in the server's log. Try another choice in the sidebar, or reload the page."
    )
    text = _page_text(at)
    assert (
        "Traceback" not in text and str(REPO) not in text and str(tmp_path) not in text and ".py" not in text
    )
