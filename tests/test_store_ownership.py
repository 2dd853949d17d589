"""The store owns the shared dataset tables and their version counter (issue 22 item 3).

Read from the source (every string constant and f-string of ``engine/``, ``app.py`` and
``app_pages/``): no module outside ``engine/store/`` inserts into, updates or deletes from the
dataset tables, or writes to a table named at run time; only ``engine.store.writes.new_version``
advances the version sequence and nothing sets ``version`` by arithmetic; and no module quotes a
SQL value by hand (values are bound parameters; identifiers go through ``engine.store.sql``).
Each check was seen to fail with the old code planted back (judging/persist's own UPDATE of
``datasets``, the importer's ``nextval``, ``vote_query.literal``).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from conftest import REPO

SHARED_TABLES = ("verdicts", "prompts", "answers", "datasets", "dataset_files", "synthetic_truth",
                 "attached_datasets", "import_log", "model_maps", "pair_counts")
_WRITE = r"\b(?:INSERT\s+(?:OR\s+(?:REPLACE|IGNORE)\s+)?INTO|UPDATE|DELETE\s+FROM)\s+"
WRITES_SHARED = re.compile(_WRITE + r'"?(?:' + "|".join(SHARED_TABLES) + r')"?\b', re.IGNORECASE)
WRITES_NAMED_AT_RUN_TIME = re.compile(_WRITE + r"\{\}", re.IGNORECASE)
ADVANCES_VERSION = re.compile(
    r"dataset_version_seq|\bversion\s*=\s*version\b|\bSET\s+version\b", re.IGNORECASE
)
QUOTES_BY_HAND = re.compile(r"""replace\(\s*["']'["']\s*,\s*["']''["']\s*\)""")
STORE = REPO / "engine" / "store"


def _sources() -> Iterator[Path]:
    yield REPO / "app.py"
    yield from sorted((REPO / "app_pages").rglob("*.py"))
    yield from sorted((REPO / "engine").rglob("*.py"))


def _strings(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every string constant and f-string (each ``{...}`` part written ``{}``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside_fstring = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                inside_fstring.add(id(v))
                parts.append(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}")
            yield node.lineno, "".join(parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstring:
            yield node.lineno, node.value


@functools.cache
def _sql_like_strings() -> tuple[tuple[Path, int, str], ...]:
    """(file, line, text with whitespace runs as one space) of every string that could be SQL, parsed once."""
    words = re.compile(r"insert|update|delete|version", re.IGNORECASE)
    return tuple((path, line, " ".join(text.split())) for path in _sources() for line, text in _strings(path)
                 if words.search(text))


def _offenders(pattern: re.Pattern, *, outside_store: bool = True) -> list[str]:
    return [f"{path.relative_to(REPO)}:{line}" for path, line, text in _sql_like_strings()
            if not (outside_store and STORE in path.parents) and pattern.search(text)]


def test_only_the_store_writes_the_shared_dataset_tables() -> None:
    assert _offenders(WRITES_SHARED) == []
    assert _offenders(WRITES_NAMED_AT_RUN_TIME) == []


def test_only_the_store_advances_the_version_counter() -> None:
    assert _offenders(ADVANCES_VERSION) == []
    inside = [
        (p.name, t)
        for p in sorted(STORE.glob("*.py"))
        for _, t in _strings(p)
        if "dataset_version_seq" in t and "nextval" in t
    ]
    assert inside == [("writes.py", "SELECT nextval('dataset_version_seq')")]  # new_version, nothing else
    writes = ast.parse((STORE / "writes.py").read_text(encoding="utf-8"))
    (fn,) = [f for f in ast.walk(writes) if isinstance(f, ast.FunctionDef)
             and any(isinstance(c, ast.Constant) and c.value == "SELECT nextval('dataset_version_seq')"
                     for c in ast.walk(f))]
    assert fn.name == "new_version"


def test_no_module_quotes_a_sql_value_by_hand() -> None:
    found = []
    for path in _sources():
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if QUOTES_BY_HAND.search(line):
                found.append(f"{path.relative_to(REPO)}:{no}")
    assert found == []


def test_the_scan_sees_what_it_looks_for() -> None:
    """The patterns match the statements they guard against (a scan that matches nothing proves nothing)."""
    assert WRITES_SHARED.search('INSERT OR REPLACE INTO prompts (dataset) SELECT 1')
    assert WRITES_SHARED.search("UPDATE datasets SET version = ? WHERE name = ?")
    assert WRITES_SHARED.search('DELETE FROM "verdicts" WHERE dataset = ?')
    assert not WRITES_SHARED.search("INSERT INTO judge_runs (kind) VALUES (?)")
    assert WRITES_NAMED_AT_RUN_TIME.search("DELETE FROM {} WHERE dataset = ?")
    assert ADVANCES_VERSION.search("UPDATE datasets SET version = version + 1")
    assert QUOTES_BY_HAND.search("""return "'" + str(value).replace("'", "''") + "'" """)
    inside = [t for p in sorted(STORE.glob("*.py")) for _, t in _strings(p)]
    # the store's own writes
    assert sum(bool(WRITES_SHARED.search(" ".join(t.split()))) for t in inside) >= 15


def test_names_with_quotes_and_dollars_reach_the_store_as_values(tmp_path: Path) -> None:
    """Values are bound, never spliced: a dataset, judge and file path holding ``'`` and ``$`` read
    the same verdicts stored (imported) and read in place (attached Parquet), on the graph path
    (``Store.verdicts``) and the count path (``store_vote_rows``)."""
    import pandas as pd

    from engine.ingest.importer import import_files
    from engine.ranking.vote_query import store_vote_rows
    from engine.store.attached import attach
    from engine.store.connection import Store

    folder = tmp_path / "it's $lens_x"
    folder.mkdir()
    rows = pd.DataFrame({"prompt_id": ["1", "1", "2", "2"], "model_a": ["a", "a", "b", "a"],
                         "model_b": ["b", "c", "c", "b"], "winner": ["A", "tie", "B", "A"],
                         "judge": ["o'brien", "o'brien", "$j", "o'brien"]})
    rows.to_csv(folder / "v.csv", index=False)
    rows.to_parquet(folder / "v.parquet", index=False)
    with Store(tmp_path / "q.duckdb") as s:
        import_files(s, [folder / "v.csv"], "stored 'x'")
        attach(s, "read 'x' $in place", str(folder / "*.parquet"))
        for judge, n in (("o'brien", 3), ("$j", 1), (["o'brien", "$j"], 4)):
            got = [s.verdicts(d, judge=judge)[["prompt_id", "model_a", "model_b", "winner", "judge"]]
                   .reset_index(drop=True) for d in ("stored 'x'", "read 'x' $in place")]
            assert len(got[0]) == n
            pd.testing.assert_frame_equal(got[0], got[1])
            counts = [store_vote_rows(s, d, judge=judge) for d in ("stored 'x'", "read 'x' $in place")]
            assert len(counts[0].a) == len(counts[1].a) == n and counts[0].models == counts[1].models
