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


LAYERS = ["errors", "blas", "heap", "foreground", "frames", "terminal", "store", "style", "ingest", "graphs",
          "rankers", "ranking", "experiments", "diagnostics", "judging", "views", "cli", "__main__",
          "__init__"]
"""Engine layers bottom-up, as README's Layout lists them: a module may import its own layer and below."""


def _engine_imports(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            yield node, "relative"
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("engine."):
            yield node, node.module
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("engine."):
                    yield node, a.name


def test_no_engine_module_imports_a_layer_above_its_own():
    """The folders are the layers: lazy imports inside functions count too (they run all the same)."""
    upward = []
    for path in (REPO / "engine").rglob("*.py"):
        mine = path.relative_to(REPO / "engine").parts[0].removesuffix(".py")
        assert mine in LAYERS, f"{path} is in no layer of README's Layout"
        for node, module in _engine_imports(path):
            if module == "relative":
                upward.append(f"{path.relative_to(REPO)}:{node.lineno} relative import")
                continue
            theirs = module.split(".")[1]
            if theirs != mine and LAYERS.index(theirs) > LAYERS.index(mine):
                upward.append(f"{path.relative_to(REPO)}:{node.lineno} imports {module}")
    assert upward == []


def test_engine_top_holds_few_loose_modules_and_each_package_says_what_it_owns():
    loose = sorted(p.name for p in (REPO / "engine").glob("*.py"))
    assert len(loose) <= 12, loose
    for init in (REPO / "engine").glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 60, f"{init} needs a docstring naming what the package owns"
