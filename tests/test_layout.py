"""The engine never imports streamlit, and the layout of README.md, "Layout", exists."""

from __future__ import annotations

import ast

from conftest import REPO


def test_engine_never_imports_streamlit():
    offenders = []
    for path in (REPO / "engine").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "streamlit" or n.startswith("streamlit.") for n in names):
                offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_fixed_layout_exists():
    for rel in ("app.py", "app_pages", "engine/__main__.py", "data", "tests", "bench", "requirements.txt",
                "requirements-dev.txt", ".streamlit/config.toml", "README.md", ".ci/run"):
        assert (REPO / rel).exists(), rel
