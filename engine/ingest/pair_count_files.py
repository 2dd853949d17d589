"""Read, check and store pair-count files (``engine.ingest.formats.pair_counts``) as a dataset of counts.

DuckDB reads the file (CSV, JSON Lines or a JSON array, Parquet; gzip as DuckDB reads it), checks every
row in SQL and sums the rows per unordered pair within ``SPILL_MEMORY`` (more rows spill to a temporary
folder), so what Python holds grows with the number of distinct pairs, never with the rows or the
battles they count. The first bad row refuses the whole import in one
sentence naming the file and the row; nothing is stored. A pair listed more than once (in either
order) has its counts added; a pair with no battle is left out. Both are said in the report.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd

from engine.errors import LensError
from engine.ingest.formats import pair_counts as fmt
from engine.ingest.limits import NAME_MAX_CHARS, check_dataset_name, lookalike_notes, name_problem
from engine.store.sql import scratch

SPILL_MEMORY = "512MB"
"""DuckDB's memory while it checks and sums the rows; beyond it, the rows spill to a temporary folder."""
WHOLE_MAX = 2**53
"""Counts must be whole numbers below this (exact in a float64, far above any real battle count)."""


@dataclass(frozen=True)
class PairCountFile:
    """A checked pair-count import: one row per unordered pair (``model_a < model_b``, counts seen from
    model_a) and what the report says about it."""

    pairs: pd.DataFrame
    rows_read: int
    rows_merged: int
    rows_empty: int
    not_read: tuple[str, ...]
    sources: tuple[str, ...]

    @property
    def n_models(self) -> int:
        """Distinct models over the stored pairs."""
        return len(set(self.pairs["model_a"]) | set(self.pairs["model_b"]))

    @property
    def n_battles(self) -> int:
        """Battles the counts hold: wins of either side, ties and both-bad ties."""
        cols = [*fmt.COUNT_COLUMNS, *fmt.OPTIONAL]
        return int(self.pairs[cols].to_numpy().sum())

    def sentences(self) -> list[str]:
        """The import report, one sentence each."""
        both_bad = int(self.pairs["both_bad"].sum())
        out = [
            f"Read {self.rows_read:,} pair row(s): {len(self.pairs):,} pairs of {self.n_models:,} models, "
            f"{self.n_battles:,} battles (pair counts: no prompts, no single verdicts).",
        ]
        if self.rows_merged:
            out.append(f"{self.rows_merged:,} row(s) named a pair already listed (in either order); their "
                       "counts were added to it.")
        if self.rows_empty:
            out.append(f"{self.rows_empty:,} pair(s) held no battle and were left out.")
        if both_bad:
            out.append(f"{both_bad:,} both-bad ties are counted as ties by the rankers.")
        if self.not_read:
            out.append(f"Column(s) not read: {', '.join(self.not_read)}.")
        return out + lookalike_notes(set(self.pairs["model_a"]) | set(self.pairs["model_b"]))


def _reader(path: str) -> str:
    """The DuckDB table function that reads ``path`` (by its extension, ``.gz`` looked through)."""
    name = path.lower().removesuffix(".gz")
    if name.endswith(".parquet"):
        return "read_parquet(?)"
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "read_json(?, format = 'auto', records = true)"
    if name.endswith((".csv", ".tsv", ".txt")):
        # the quote pinned to '"' (as the tool writes and the verdict import reads): left to sniff, DuckDB
        # may take ' for the quote when a name starts with one ('q,'',0,0,1 read as one field)
        return "read_csv(?, header = true, all_varchar = true, quote = '\"', escape = '\"')"
    raise LensError(f"{path}: a pair-count file must be .csv, .tsv, .jsonl, .json or .parquet.")


def file_columns(path: str | os.PathLike[str]) -> list[str]:
    """The column names of a file (read by DuckDB without its rows), for detection."""
    src = str(path)
    with scratch() as con:
        try:
            return [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {_reader(src)}", [src]).fetchall()]
        except duckdb.Error as exc:
            raise LensError(f"{src}: cannot be read as a table ({str(exc).splitlines()[0]}).") from exc


def is_pair_count_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` reads as a table with the pair-count columns (False when it does not read)."""
    try:
        return fmt.matches(file_columns(path))
    except LensError:  # DuckDB cannot read it whole: a text file still says what it is by its header
        return fmt.matches(_header_fields(path))


def _header_fields(path: str | os.PathLike[str]) -> list[str]:
    """The first line of a CSV / TSV file split at its delimiter (the one giving most fields), quotes
    taken off; [] for other files. Lets a pair-count file DuckDB cannot read (an unclosed quote, a
    line past its limit) reach the pair-count reader's own sentence instead of the verdict import's."""
    if not str(path).lower().removesuffix(".gz").endswith((".csv", ".tsv", ".txt")):
        return []
    try:
        with open(path, "rb") as fh:
            line = fh.read(65_536).split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    except OSError:
        return []
    fields = max((line.split(d) for d in (",", "\t", ";", "|")), key=len)
    return [f.strip().strip('"') for f in fields]


def _whole(col: str) -> str:
    """SQL: True when the text ``col`` is a whole number of battles (0 <= n < 2^53)."""
    num = f"TRY_CAST(trim({col}) AS DOUBLE)"
    return f"({num} IS NOT NULL AND {num} = floor({num}) AND {num} >= 0 AND {num} < {WHOLE_MAX})"


_GUARD_NEXT = ("'='", "'+'", "'-'", "'@'", "chr(9)", "chr(13)", "''''")
"""SQL literals of the characters after a leading ``'`` that mark it as the CSV formula guard
(``csv_cells._TRIGGERS`` and ``'`` itself)."""


def _unguarded(cell: str) -> str:
    """SQL: the text ``cell`` with the CSV formula guard taken off, as the verdict import reads a CSV
    (``csv_cells.restore_csv_cell``: one leading ``'`` dropped when a formula character or another
    ``'`` follows it), so an exported ``'=cmd`` imports again as ``=cmd``."""
    follows = " OR ".join(f"substr({cell}, 2, 1) = {lit}" for lit in _GUARD_NEXT)
    return (f"(CASE WHEN length({cell}) > 1 AND left({cell}, 1) = '''' AND ({follows}) "
            f"THEN substr({cell}, 2) ELSE {cell} END)")


def _checked_rows(con: duckdb.DuckDBPyConnection, path: str) -> tuple[list[str], int]:
    """Create the view ``pc_rows`` (row number r, names, counts) of one file after checking every row;
    returns (columns not read, rows)."""
    cols = file_columns(path)
    lack = fmt.missing(cols)
    if lack:
        raise LensError(f"{path} has no column {', '.join(lack)}; a pair-count file needs "
                        f"{', '.join(fmt.REQUIRED)} (and may have {', '.join(fmt.OPTIONAL)}).")
    have = fmt.normalised(cols)
    q = {c: '"' + have[c].replace('"', '""') + '"' for c in fmt.COLUMNS if c in have}
    text = {c: f"CAST({q[c]} AS VARCHAR)" for c in q}
    if _reader(path).startswith("read_csv"):  # a CSV the tool wrote (export) guards formula-like names
        text.update({c: _unguarded(text[c]) for c in ("model_a", "model_b")})
    both_bad = text.get("both_bad", "'0'")
    try:
        con.execute(
            f"""CREATE OR REPLACE TEMP TABLE pc_raw AS
                SELECT row_number() OVER () AS r, nfc_normalize(trim({text['model_a']})) AS a,
                       nfc_normalize(trim({text['model_b']})) AS b, {text['wins_a']} AS wa,
                       {text['wins_b']} AS wb, {text['ties']} AS t, coalesce({both_bad}, '0') AS bb
                FROM {_reader(path)}""",
            [path],
        )
    except duckdb.Error as exc:  # a row DuckDB cannot parse (an unclosed quote, a line past its limit)
        raise LensError(f"{path}: cannot be read as a table ({str(exc).splitlines()[0]}); "
                        "nothing was stored.") from exc
    checks = [("a IS NULL OR a = ''", "has no model_a"), ("b IS NULL OR b = ''", "has no model_b"),
              ("a = b", "compares a model with itself")]
    checks += [(f"NOT {_whole(c)}", f"has {name} that is not a whole number of battles (0 or more)")
               for c, name in (("wa", "wins_a"), ("wb", "wins_b"), ("t", "ties"), ("bb", "both_bad"))]
    cases = " ".join(f"WHEN {cond} THEN {i}" for i, (cond, _) in enumerate(checks))
    bad = con.execute(
        f"SELECT r, CASE {cases} END AS k, a, b FROM pc_raw WHERE (CASE {cases} END) IS NOT NULL "
        "ORDER BY r LIMIT 1").fetchone()
    if bad is not None:
        r, k, a, b = bad
        what = checks[int(k)][1] + (f" ({a!r})" if int(k) == 2 else "")
        raise LensError(f"{path}: row {int(r):,} {what}; nothing was stored.")
    n = int(con.execute("SELECT count(*) FROM pc_raw").fetchone()[0])  # type: ignore[index]
    names = con.execute("SELECT DISTINCT a FROM pc_raw UNION SELECT DISTINCT b FROM pc_raw").fetchall()
    for (name,) in names:
        problem = name_problem(str(name))
        if problem is None and len(str(name)) > NAME_MAX_CHARS:  # the verdict import's limit for a name
            problem = f"is {len(str(name)):,} characters long (the limit for a name is {NAME_MAX_CHARS})"
        if problem:
            r = con.execute("SELECT min(r) FROM pc_raw WHERE a = ? OR b = ?", [name, name]).fetchone()[0]  # type: ignore[index]
            raise LensError(f"{path}: row {int(r):,} names the model {str(name)[:80]!r}, which {problem}; "
                            "nothing was stored.")
    return [c for c in cols if c.strip().lower() not in fmt.COLUMNS], n


def read_pair_count_files(paths: Sequence[str | os.PathLike[str]]) -> PairCountFile:
    """Check every row of every file and sum the counts per unordered pair (module docstring)."""
    if not paths:
        raise LensError("Name at least one pair-count file.")
    spill = tempfile.TemporaryDirectory(prefix="lens_pair_counts_")
    con = duckdb.connect(config={"temp_directory": spill.name, "memory_limit": SPILL_MEMORY})
    try:
        con.execute("SET threads = 1")  # row numbers in file order
        con.execute("CREATE TEMP TABLE pc_all (a VARCHAR, b VARCHAR, wa BIGINT, wb BIGINT, t BIGINT, "
                    "bb BIGINT)")
        not_read: dict[str, None] = {}
        rows = 0
        for p in paths:
            path = str(p)
            if not Path(path).is_file():
                raise LensError(f"{path}: no such file.")
            extra, n = _checked_rows(con, path)
            not_read.update(dict.fromkeys(extra))
            rows += n
            con.execute("INSERT INTO pc_all SELECT a, b, CAST(CAST(wa AS DOUBLE) AS BIGINT), "
                        "CAST(CAST(wb AS DOUBLE) AS BIGINT), CAST(CAST(t AS DOUBLE) AS BIGINT), "
                        "CAST(CAST(bb AS DOUBLE) AS BIGINT) FROM pc_raw")
        if rows == 0:
            raise LensError(f"{', '.join(map(str, paths))}: holds no pair row; nothing was stored.")
        pairs = con.execute(
            """SELECT least(a, b) AS model_a, greatest(a, b) AS model_b,
                      sum(CASE WHEN a < b THEN wa ELSE wb END)::BIGINT AS wins_a,
                      sum(CASE WHEN a < b THEN wb ELSE wa END)::BIGINT AS wins_b,
                      sum(t)::BIGINT AS ties, sum(bb)::BIGINT AS both_bad, count(*) AS n_rows
               FROM pc_all GROUP BY ALL ORDER BY model_a, model_b""").df()
    finally:
        con.close()
        spill.cleanup()
    merged = int((pairs["n_rows"] - 1).sum())
    total = pairs[["wins_a", "wins_b", "ties", "both_bad"]].sum(axis=1)
    kept = pairs[total > 0].drop(columns="n_rows").reset_index(drop=True)
    if kept.empty:
        raise LensError(f"{', '.join(map(str, paths))}: no pair holds a battle; nothing was stored.")
    for c in ("wins_a", "wins_b", "ties", "both_bad"):
        kept[c] = kept[c].astype("int64")
    return PairCountFile(kept, rows, merged, int((total == 0).sum()), tuple(not_read),
                         tuple(str(p) for p in paths))


@dataclass(frozen=True)
class PairCountImport:
    """A stored pair-count import: the checked file, the dataset and its revision, the import log id."""

    table: PairCountFile
    dataset: str
    revision: int
    import_id: int


def import_pair_counts(store, paths: Sequence[str | os.PathLike[str]], dataset: str, *, replace: bool = False,
                       description: str | None = None, source: str | None = None) -> PairCountImport:
    """Read, check and store pair-count files as dataset ``dataset`` (all or nothing)."""
    from engine.store import pair_counts as stored

    dataset = check_dataset_name(dataset)
    table = read_pair_count_files(paths)
    src = source or ", ".join(table.sources)
    desc = description or (f"Pair counts: {len(table.pairs):,} pairs of {table.n_models:,} models, "
                           f"{table.n_battles:,} battles.")
    revision, import_id = stored.store_pair_counts(store, dataset, table.pairs, replace=replace,
                                                   description=desc, source=src, rows_read=table.rows_read,
                                                   detail=" ".join(table.sentences()))
    return PairCountImport(table, dataset, revision, import_id)
