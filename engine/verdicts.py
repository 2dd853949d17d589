"""Verdict files → a validated canonical frame plus a report of every rejected row (pure, no DB).

``engine/verdict_files.py`` reads the files (CSV/TSV, JSON Lines, JSON array, Parquet, the
Vicuna-bench review format) into raw rows with their true line numbers; this module turns those
rows into the canonical frame of ``schema.VERDICT_DTYPES`` (README.md, "Data format"): defaults, winner spellings, checks, duplicates, prompt and answer texts. Nothing is dropped silently: a row is either in ``good`` or in ``rejected`` with one
sentence saying why, so ``rows_read == n_good + n_rejected`` always holds. An unparsable judge
output (``error``, review score -1) is a *valid* row with winner ``invalid``: counted, stored,
never turned into a tie (graphs.build_stack leaves it out).
"""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .errors import LensError
from .formats import TOOL_NAMES
from .formats import tool as tool_format
from .schema import DEFAULT_JUDGE, DEFAULT_TURN, VARIANT_KINDS, VERDICT_COLUMNS, VERDICT_DTYPES
from .verdict_files import (  # noqa: F401 - re-exported: the import vocabulary lives with the readers
    CANONICAL,
    COLUMN_ALIASES,
    FORMATS,
    KNOWN_JUDGES,
    OPTIONAL,
    REQUIRED,
    REVIEW_SCORES,
    TEXTS,
    RawRows,
    cell_text,
    detect_format,
    no_gc,
    parse_review_name,
    read_rows,
)

WINNER_VALUES: dict[str, str] = {
    "a": "A", "model_a": "A", "1": "A", "1.0": "A",
    "b": "B", "model_b": "B", "2": "B", "2.0": "B",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "1.5": "tie",
    "error": "invalid", "invalid": "invalid",
}
"""Accepted winner spellings (lower-cased) → canonical value; ``error`` = unparsable judge output."""
_WINNER_HELP = "A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error"


@dataclass(frozen=True, eq=False)
class ValidationReport:
    """What a verdict file holds, before anything is stored.

    ``good``: canonical verdict frame (schema.VERDICT_DTYPES); ``rejected``: one row per refused
    input row with ``source_file, source_line, reason`` and the row's original fields;
    ``prompts`` / ``answers``: texts found in the file (columns of the tables of the same name);
    ``rows_read``: data rows seen (blank lines are not rows).
    """

    dataset: str
    source: str
    format: str
    good: pd.DataFrame
    rejected: pd.DataFrame
    prompts: pd.DataFrame
    answers: pd.DataFrame
    rows_read: int
    dropped: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # file → columns not kept
    repeats: int = 0  # valid rows equal to an earlier row in everything but their line (kept)
    file_hashes: Mapping[str, str] = field(default_factory=dict)  # file → sha256 of its bytes

    @property
    def n_good(self) -> int:
        return int(len(self.good))

    @property
    def n_rejected(self) -> int:
        return int(len(self.rejected))

    @property
    def n_invalid(self) -> int:
        """Stored-able rows whose judge output was unparsable (winner ``invalid``)."""
        return int((self.good["winner"] == "invalid").sum())

    @property
    def ok(self) -> bool:
        return self.n_rejected == 0

    def counts(self) -> dict[str, int]:
        return {
            "rows_read": self.rows_read,
            "good": self.n_good,
            "rejected": self.n_rejected,
            "invalid": self.n_invalid,
        }

    def notes(self) -> list[str]:
        """What the import kept and left out beside the rejected rows: the tool format the files were
        read as, repeated rows, dropped columns."""
        out = []
        if self.format in TOOL_NAMES:
            out.append(f"Read as {tool_format(self.format).title} (--format {self.format}).")
        if self.repeats:
            out.append(f"{self.repeats} row{'s' if self.repeats != 1 else ''} "
                       f"repeat{'' if self.repeats != 1 else 's'} an earlier row; kept as separate verdicts.")
        for f, cols in self.dropped.items():
            if cols:
                out.append(f"{PurePath(f).name}: column{'s' if len(cols) != 1 else ''} not kept "
                           f"(not verdict fields): {', '.join(cols)}.")
        return out

    def sentences(self) -> list[str]:
        """One sentence per rejected row: ``<file> line <n>: <reason>.``"""
        rej = self.rejected
        return [
            f"{f} line {int(n)}: {r}."
            for f, n, r in zip(rej["source_file"], rej["source_line"], rej["reason"], strict=True)
        ]


# ---------------------------------------------------------------------------------------------
# Normalising + validating: raw rows → canonical frame / rejected rows
# ---------------------------------------------------------------------------------------------
def _winner_key(v: object) -> str | None:
    """Winner cell → lookup key; numbers keep their decimal (1.5) so AlpacaEval values map."""
    if isinstance(v, float | np.floating) and not math.isnan(v):
        return str(float(v)) if not float(v).is_integer() else str(int(v))
    t = cell_text(v)
    return None if t is None else " ".join(t.lower().split())


def _text_or_none(v: object) -> str | None:
    """Free text (explanations, questions, answers): kept as written; blank → None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    t = v if isinstance(v, str) else str(v)
    return t if t.strip() else None


def _clean_text(cells: list) -> np.ndarray:
    """Cells → stripped text or None (object array). All-text columns go through Arrow in C;
    mixed columns (JSON numbers, Parquet ints/floats) cell by cell with ``cell_text``."""
    try:
        arr = pa.array(cells, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([cell_text(v) for v in cells] + [None], dtype=object)[:-1]
    t = pc.utf8_trim_whitespace(arr)
    t = pc.if_else(pc.equal(pc.utf8_length(t), 0), pa.scalar(None, pa.string()), t)
    return t.to_numpy(zero_copy_only=False).astype(object)


def _free_text(cells: list) -> np.ndarray:
    """Free text (explanations, questions, answers) kept as written; blank or missing → None."""
    try:
        arr = pa.array(cells, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.array([_text_or_none(v) for v in cells] + [None], dtype=object)[:-1]
    blank = pc.fill_null(pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(arr)), 0), True)
    keep = pc.invert(blank).to_numpy(zero_copy_only=False)
    out = arr.to_numpy(zero_copy_only=False).astype(object)
    out[~keep] = None
    return out


def _is_none(a: np.ndarray) -> np.ndarray:
    return pd.isna(a) if len(a) else np.zeros(0, dtype=bool)


_CONTROL = r"[\x00-\x1f\x7f-\x9f]"
"""Unicode category Cc (C0 and C1 control characters, tab and newline included)."""
ID_COLUMNS: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "judge", "category", "annotator")
"""Columns that name things (graph keys, vertices, filters): no control characters allowed."""


def _has_control(a: np.ndarray) -> np.ndarray:
    """Per cell of a text/None object array: does it contain a control character?

    ``a\\x00`` and ``a`` would otherwise be two different models that print the same.
    """
    if not len(a):
        return np.zeros(0, dtype=bool)
    hit = pc.match_substring_regex(pa.array(a, type=pa.string(), from_pandas=True), _CONTROL)
    return pc.fill_null(hit, False).to_numpy(zero_copy_only=False)


def _control_names(v: str) -> str:
    found = list(dict.fromkeys(f"U+{ord(ch):04X}" for ch in v if unicodedata.category(ch) == "Cc"))
    return ", ".join(found)


def _normalise(raw: RawRows, dataset: str, model_names: Mapping[str, str] | None,
               judge_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Canonical values and the reason (or None) per row; also the texts.

    A row that could not be read (a parse problem: wrong field count, bad bytes, not JSON) keeps
    that one reason, its cells being unreliable; otherwise every problem of the row is listed, in
    one sentence joined by semicolons. Column at a time: text columns through Arrow, checks as
    boolean masks; only the sentences of rejected rows are built one by one.
    """
    n = len(raw.line)
    reasons = np.array(list(raw.problem) + [None], dtype=object)[:-1]
    readable = _is_none(reasons)

    def col(name: str) -> list:
        return raw.cols.get(name) or [None] * n

    def flag(bad: np.ndarray, text) -> None:
        m = np.asarray(bad, dtype=bool) & readable
        for i in np.flatnonzero(m):
            t = text(i) if callable(text) else text
            reasons[i] = t if reasons[i] is None else f"{reasons[i]}; {t}"

    def rename(a: np.ndarray, names: Mapping[str, str]) -> np.ndarray:
        return np.array([names.get(v, v) if v is not None else None for v in a] + [None], dtype=object)[:-1]

    txt = {c: _clean_text(col(c)) for c in
           ("prompt_id", "model_a", "model_b", "judge", "category", "annotator", "variant_kind", "order")}
    if model_names:
        for c in ("model_a", "model_b"):
            txt[c] = rename(txt[c], model_names)
    judge = txt["judge"].copy()
    judge[_is_none(judge)] = DEFAULT_JUDGE
    if judge_names:
        judge = rename(judge, judge_names)
    ids = {**txt, "judge": judge}
    for c in ID_COLUMNS:
        if c in ("prompt_id", "model_a", "model_b"):
            flag(_is_none(txt[c]), f"{c} is empty")
        values = ids[c]
        flag(_has_control(values), lambda i, c=c, values=values:
             f"{c} {values[i]!r} contains a control character ({_control_names(values[i])})")
    ma, mb = txt["model_a"], txt["model_b"]
    flag(~_is_none(ma) & (ma == mb), lambda i: f"model_a and model_b are the same model ({ma[i]})")

    wraw = col("winner")
    wtxt = _clean_text(wraw)
    if all(isinstance(v, str) or v is None for v in wraw):
        low = pc.utf8_lower(pa.array(wtxt, type=pa.string(), from_pandas=True))
        keys = pd.Series(pc.replace_substring_regex(low, r"\s+", " ").to_numpy(zero_copy_only=False), dtype=object)
    else:
        keys = pd.Series([_winner_key(v) for v in wraw], dtype=object)
    winner = keys.map(WINNER_VALUES).astype(object).to_numpy(copy=True)
    winner[_is_none(winner)] = None
    flag(_is_none(wtxt), "winner is empty")
    flag(~_is_none(wtxt) & _is_none(winner), lambda i: f"winner value {cell_text(wraw[i])!r} is not one of {_WINNER_HELP}")

    ints = {}
    for name, default in (("variant", 0), ("turn", DEFAULT_TURN)):
        cells = col(name)
        present = ~_is_none(_clean_text(cells))
        num = pd.to_numeric(pd.Series(cells, dtype=object).where(present, None), errors="coerce").to_numpy(float)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(num) & (num >= 0) & (np.floor(num) == num)
        flag(present & ~ok, lambda i, cells=cells, name=name:
             f"{name} {cell_text(cells[i])!r} is not a non-negative integer")
        ints[name] = np.where(present & ok, np.nan_to_num(num), default).astype(np.int64)

    order = pd.Series(txt["order"], dtype=object).str.upper().to_numpy(copy=True)
    order[_is_none(order)] = None
    flag(~_is_none(order) & ~np.isin(order, ["AB", "BA"]),
         lambda i: f"order {txt['order'][i]!r} is not AB or BA")

    vk = pd.Series(txt["variant_kind"], dtype=object).str.lower().to_numpy(copy=True)
    vk[_is_none(vk)] = None
    flag(~_is_none(vk) & ~np.isin(vk, list(VARIANT_KINDS)),
         lambda i: f"variant_kind {txt['variant_kind'][i]!r} is not one of {', '.join(VARIANT_KINDS)}")
    vk = np.where(_is_none(vk), np.where(ints["variant"] == 0, "original", "paraphrase"), vk).astype(object)

    pcells = col("prob_a")
    ptxt = _clean_text(pcells)
    present = ~_is_none(ptxt)
    prob = pd.to_numeric(pd.Series(pcells, dtype=object).where(present, None), errors="coerce").to_numpy(float)
    flag(present & np.isnan(prob), lambda i: f"prob_a {ptxt[i]!r} is not a number")
    with np.errstate(invalid="ignore"):
        flag(present & ~np.isnan(prob) & ((prob < 0) | (prob > 1)), lambda i: f"prob_a {ptxt[i]} is outside [0, 1]")

    stamp = _seconds(col("tstamp"))
    flag(stamp.bad, lambda i: f"tstamp {cell_text(col('tstamp')[i])!r} is not a time "
                              "(seconds since 1970, or a date such as 2024-05-01T12:00:00Z)")
    scells = col("strength")
    stxt = _clean_text(scells)
    spresent = ~_is_none(stxt)
    snum = pd.to_numeric(pd.Series(scells, dtype=object).where(spresent, None), errors="coerce").to_numpy(float)
    flag(spresent & ~np.isin(snum, [1.0, 2.0]), lambda i: f"strength {stxt[i]!r} is not 1 or 2")
    strength = pd.array(np.where(spresent & np.isin(snum, [1.0, 2.0]), snum, np.nan), dtype="Float64")

    frame = pd.DataFrame({
        "dataset": pd.Series([dataset] * n, dtype=object),
        "judge": pd.Series(judge, dtype=object),
        "prompt_id": pd.Series(txt["prompt_id"], dtype=object),
        "variant": pd.Series(ints["variant"], dtype=np.int64),
        "variant_kind": pd.Series(vk, dtype=object),
        "turn": pd.Series(ints["turn"], dtype=np.int64),
        "category": pd.Series(txt["category"], dtype=object),
        "model_a": pd.Series(ma, dtype=object),
        "model_b": pd.Series(mb, dtype=object),
        "winner": pd.Series(winner, dtype=object),
        "order": pd.Series(order, dtype=object),
        "prob_a": pd.Series(np.where(present, prob, np.nan), dtype=np.float64),
        "annotator": pd.Series(txt["annotator"], dtype=object),
        "explanation": pd.Series(_free_text(col("explanation")), dtype=object),
        "battle_id": pd.Series(_clean_text(col("battle_id")), dtype=object),
        "tstamp": pd.Series(stamp.values, dtype=np.float64),
        "strength": pd.Series(strength, dtype="Float64").astype("Int64"),
        "source_file": pd.Series(raw.file, dtype=object),
        "source_line": pd.Series(raw.line, dtype=np.int64),
    })
    texts = pd.DataFrame({c: pd.Series(_free_text(col(c)), dtype=object) for c in TEXTS})
    return frame, reasons, texts


@dataclass(frozen=True)
class _Stamps:
    values: np.ndarray  # seconds since the epoch, NaN where missing or bad
    bad: np.ndarray  # present but not a time


def _seconds(cells: list) -> _Stamps:
    """Time cells → seconds since the epoch: numbers as they are, text as a number or a date
    (a date without a zone is read as UTC)."""
    n = len(cells)
    present = ~_is_none(_clean_text(cells)) if n else np.zeros(0, dtype=bool)
    num = pd.to_numeric(pd.Series(cells, dtype=object).where(present, None),
                        errors="coerce").to_numpy(float, copy=True)
    bad = present & np.isnan(num)
    for i in np.flatnonzero(bad):
        try:
            t = pd.Timestamp(str(cells[i]).strip())
        except (ValueError, TypeError, OverflowError):
            continue
        if pd.isna(t):
            continue
        t = t.tz_localize("UTC") if t.tzinfo is None else t
        num[i] = t.timestamp()
        bad[i] = False
    with np.errstate(invalid="ignore"):
        bad |= present & ~bad & ~np.isfinite(num)
    num[bad] = np.nan
    return _Stamps(num, bad)


def _count_repeats(frame: pd.DataFrame, reasons: np.ndarray) -> int:
    """Valid rows equal to an earlier valid row in everything but their place in the file.

    A repeated row is a repeated vote (crowd and Arena files hold many), so it is kept; a battle
    id column keeps distinct battles apart, and this count is reported in one line.
    """
    content = [c for c in VERDICT_COLUMNS if c not in ("source_file", "source_line")]
    ok = _is_none(reasons)
    if ok.sum() < 2:
        return 0
    sub = frame.loc[ok, content].astype(object).where(frame.loc[ok, content].notna(), "\x00")
    return int(sub.duplicated(keep="first").sum())


def parse_value_map(specs: Iterable[str] | None) -> dict[str, dict[str, str]]:
    """``COLUMN:VALUE=NEW`` specs (``--map-value``, the Data page) → {column: {value: new}}."""
    out: dict[str, dict[str, str]] = {}
    for v in specs or []:
        column, sep, rest = str(v).partition(":")
        old, sep2, new = rest.partition("=")
        if not sep or not sep2 or not column.strip() or not old.strip() or not new.strip():
            raise LensError(f"The value map {v!r} is not of the form COLUMN:VALUE=NEW (e.g. winner:left=A).")
        col = column.strip().lower()
        if col not in CANONICAL:
            raise LensError(f"The value map {v!r} names column {column.strip()!r}, which is not a verdict column "
                            f"({', '.join(sorted(CANONICAL))}).")
        out.setdefault(col, {})[old.strip()] = new.strip()
    return out


def apply_value_map(cols: dict[str, list], value_map: Mapping[str, Mapping[str, str]] | None) -> None:
    """Rewrite cells in place: ``{"winner": {"left": "A"}}`` turns every ``left`` (compared
    case-insensitively, spaces trimmed) of column winner into ``A`` before validation."""
    for column, mapping in (value_map or {}).items():
        cells = cols.get(column)
        if not cells or not mapping:
            continue
        low = {str(k).strip().lower(): v for k, v in mapping.items()}
        for i, v in enumerate(cells):
            t = cell_text(v)
            if t is not None and t.lower() in low:
                cells[i] = low[t.lower()]


def _texts_tables(frame: pd.DataFrame, texts: pd.DataFrame, ok: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Question and answer texts of valid rows → rows of the prompts / answers tables (first wins)."""
    key = ["dataset", "prompt_id", "variant", "turn"]
    f = frame.loc[ok]
    t = texts.loc[ok]
    mq = t["question"].notna()
    q = f.loc[mq, [*key, "category", "variant_kind"]].assign(text=t.loc[mq, "question"].to_numpy())
    prompts = q.drop_duplicates(key, keep="first").reset_index(drop=True)
    parts = []
    for side in ("a", "b"):
        m = t[f"answer_{side}"].notna()
        parts.append(f.loc[m, key].assign(model=f.loc[m, f"model_{side}"].to_numpy(),
                                          text=t.loc[m, f"answer_{side}"].to_numpy()))
    answers = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    answers = answers.drop_duplicates([*key, "model"], keep="first").reset_index(drop=True)
    prompts = prompts.astype({"variant": "int64", "turn": "int64"})
    answers = answers.astype({"variant": "int64", "turn": "int64"})
    return prompts, answers


def _original_fields(row, header: tuple | None) -> dict:
    if isinstance(row, list):  # CSV values; a short row leaves the last fields empty
        return {h: cell_text(v) for h, v in zip(header or (), row, strict=False)}
    return {k: cell_text(v) for k, v in row.items()}


def _rejected_frame(raw: RawRows, reasons: np.ndarray, bad: np.ndarray) -> pd.DataFrame:
    idx = np.flatnonzero(bad)
    fields = [_original_fields(raw.orig[i], raw.headers.get(raw.file[i])) for i in idx]
    header = list(dict.fromkeys(k for f in fields for k in f))
    if idx.size and raw.file[idx[0]] in raw.headers:
        header = list(dict.fromkeys([*raw.headers[raw.file[idx[0]]], *header]))
    orig = pd.DataFrame(fields, columns=header, dtype=object)
    orig.index = idx
    head = pd.DataFrame({
        "source_file": np.asarray(raw.file, dtype=object)[idx],
        "source_line": np.asarray(raw.line, dtype=np.int64)[idx],
        "reason": reasons[bad].astype(str),
    }, index=idx)
    out = pd.concat([head, orig.drop(columns=[c for c in head.columns if c in orig.columns])], axis=1)
    return out.reset_index(drop=True).astype({"source_line": "int64"})


def validate_raw(raw: RawRows, *, dataset: str, source: str, fmt: str,
                 model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None,
                 value_map: Mapping[str, Mapping[str, str]] | None = None,
                 file_hashes: Mapping[str, str] | None = None) -> ValidationReport:
    """Normalise and check rows already read; used by ``validate_bytes`` and ``validate_many``."""
    apply_value_map(raw.cols, value_map)
    frame, reasons, texts = _normalise(raw, dataset, model_names, judge_names)
    repeats = _count_repeats(frame, reasons)
    bad = ~_is_none(reasons)
    good = frame.loc[~bad].reset_index(drop=True).astype(VERDICT_DTYPES)
    prompts, answers = _texts_tables(frame, texts, ~bad)
    return ValidationReport(
        dataset=dataset, source=source, format=fmt, good=good,
        rejected=_rejected_frame(raw, reasons, bad), prompts=prompts, answers=answers,
        rows_read=int(len(frame)), dropped={f: tuple(c) for f, c in raw.dropped.items()},
        repeats=repeats, file_hashes=dict(file_hashes or {}),
    )


def content_hash(data: bytes, filename: str = "", fmt: str = "") -> str:
    """sha256 hex of a file's bytes: the same file imported twice into one dataset is refused by it.
    A review-format file's name is part of its content (it names the models and the judge)."""
    h = hashlib.sha256()
    if fmt == "review":
        h.update(PurePath(filename).name.encode("utf-8") + b"\x00")
    h.update(data)
    return h.hexdigest()


def set_judge(raw: RawRows, judge: str) -> None:
    """Every row of ``raw`` gets ``judge`` (one judge per file: ``--judge-from filename``, the app)."""
    raw.cols["judge"] = [judge] * len(raw.line)


def judge_from_filename(filename: str) -> str:
    """The judge a file stands for under ``--judge-from filename``: its name without folder and extension."""
    name = PurePath(filename).name
    for ext in (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt", ".parquet", ".pq"):
        if name.lower().endswith(ext):
            return name[: -len(ext)] or name
    return name


def validate_bytes(
    data: bytes, filename: str, *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    judge: str | None = None,
) -> ValidationReport:
    """Validate one file's bytes (named ``filename``, which also gives review-format models/judge);
    ``judge`` puts every row under that judge."""
    with no_gc():
        raw, found = read_rows(data, filename, fmt, column_map)
    if judge:
        set_judge(raw, judge)
    return validate_raw(raw, dataset=dataset, source=filename, fmt=found,
                        model_names=model_names, judge_names=judge_names, value_map=value_map,
                        file_hashes={filename: content_hash(data, filename, found)})


def validate_many(
    files: Iterable[tuple[bytes, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None, value_map: Mapping[str, Mapping[str, str]] | None = None,
    file_judges: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate several files as one import (repeated rows are counted across files too);
    ``file_judges`` puts the rows of a file (by the name given) under its own judge."""
    raws, fmts, names, hashes = [], [], [], {}
    for data, filename in files:
        with no_gc():
            raw, found = read_rows(data, filename, fmt, column_map)
        if file_judges and file_judges.get(filename):
            set_judge(raw, file_judges[filename])
        hashes[filename] = content_hash(data, filename, found)
        raws.append(raw)
        fmts.append(found)
        names.append(filename)
    if not raws:
        raise LensError("No files to import.")
    merged = RawRows(
        cols={k: [v for r in raws for v in (r.cols.get(k) or [None] * len(r.line))]
              for k in dict.fromkeys(k for r in raws for k in r.cols)},
        orig=[o for r in raws for o in r.orig],
        file=[f for r in raws for f in r.file],
        line=[n for r in raws for n in r.line],
        problem=[p for r in raws for p in r.problem],
        headers={k: v for r in raws for k, v in r.headers.items()},
        dropped={k: v for r in raws for k, v in r.dropped.items()},
    )
    source = names[0] if len(names) == 1 else f"{len(names)} files"
    fmt_used = fmts[0] if len(set(fmts)) == 1 else "mixed"
    return validate_raw(merged, dataset=dataset, source=source, fmt=fmt_used,
                        model_names=model_names, judge_names=judge_names, value_map=value_map,
                        file_hashes=hashes)
