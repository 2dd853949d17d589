"""The app's favicon: the trophy Streamlit's frontend would draw for ``page_icon="🏆"``, given as an ASCII
data URL so that the first run of a server does not import Streamlit's emoji catalogue (app.FAVICON)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import streamlit

REPO = Path(__file__).resolve().parents[2]
EMOJI_SVG = "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 100 100'><text y='.9em' font-size='90'>"


def _favicon() -> str:
    """app.FAVICON read from the source (importing app.py would run the app)."""
    tree = ast.parse((REPO / "app.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FAVICON" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("app.py has no FAVICON")


def test_the_favicon_is_the_frontends_own_trophy_svg() -> None:
    """Decoded, the data URL is the SVG the installed Streamlit frontend builds for an emoji favicon (its
    template read from the shipped JavaScript), with the trophy in it: the same icon as page_icon="🏆"."""
    static = Path(streamlit.__file__).parent / "static"
    bundles = [p.read_text(encoding="utf-8", errors="replace") for p in static.rglob("index.*.js")]
    assert any("data:image/svg+xml," + EMOJI_SVG + "${" in js for js in bundles), "frontend template changed"
    assert unquote(_favicon()) == "data:image/svg+xml," + EMOJI_SVG + "🏆</text></svg>"


def test_the_favicon_does_not_load_the_emoji_catalogue() -> None:
    """Streamlit passes the URL through as the favicon (no media file, no emoji look-up), and a process that
    sets it never imports ``streamlit.emojis`` (a regular expression of every emoji compiled on import)."""
    code = ("import sys; from streamlit.commands.page_config import _get_favicon_string as f; "
            f"out = f({_favicon()!r}); print(out == {_favicon()!r}, 'streamlit.emojis' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert got.stdout.split() == ["True", "False"], got.stdout + got.stderr


def test_app_py_has_no_bare_expression_for_magic_to_draw() -> None:
    """Streamlit's magic writes every bare expression of the script's top level on the page (a string after
    an assignment, meant as its docstring, became a paragraph above every page); only the module docstring
    is left alone. The calls app.py makes at the top level are allowed."""
    tree = ast.parse((REPO / "app.py").read_text(encoding="utf-8"))
    bare = [node.lineno for node in tree.body[1:]
            if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call)]
    assert bare == [], f"app.py lines {bare}: a bare expression, drawn by magic"
