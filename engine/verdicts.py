"""Verdict files → a validated canonical frame plus a report of every rejected row (pure, no DB).

Reads CSV/TSV, JSON Lines, a JSON array, Parquet, and the *review* format of the Vicuna-bench
rating files (one JSONL file per ordered model pair, the pair and the judge named by the file
name, ``score`` 1/2/3/-1). Header names are case-insensitive and a few aliases are accepted
(DESIGN.md, "Verdicts: the one input format"). Every data row keeps its file and the line number
a user sees in an editor (CSV: header = line 1; JSONL: physical line; Parquet/JSON array: row
index + 1). Nothing is dropped silently: a row is either in ``good`` or in ``rejected`` with one
sentence saying why, so ``rows_read == n_good + n_rejected`` always holds. An unparsable judge
output (``error``, review score -1) is a *valid* row with winner ``invalid``: counted, stored,
never turned into a tie (graphs.build_stack leaves it out).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np
import pandas as pd

from .errors import LensError
from .schema import DEFAULT_JUDGE, DEFAULT_TURN, VARIANT_KINDS, VERDICT_COLUMNS, VERDICT_DTYPES

FORMATS: tuple[str, ...] = ("csv", "jsonl", "json", "parquet", "review")
"""Accepted ``fmt`` values; ``None`` means detect from the file name and its first bytes."""

REQUIRED: tuple[str, ...] = ("prompt_id", "model_a", "model_b", "winner")
OPTIONAL: tuple[str, ...] = (
    "judge", "variant", "variant_kind", "turn", "category", "order", "prob_a", "annotator", "explanation",
)
TEXTS: tuple[str, ...] = ("question", "answer_a", "answer_b")
"""Optional texts: they go to the ``prompts`` / ``answers`` tables, not to each verdict."""

CANONICAL: frozenset[str] = frozenset((*REQUIRED, *OPTIONAL, *TEXTS))

COLUMN_ALIASES: dict[str, str] = {
    "question_id": "prompt_id",  # lmsys battles, MT-Bench judgments
    "rationale": "explanation",
    "position": "order",
}

WINNER_VALUES: dict[str, str] = {
    "a": "A", "model_a": "A", "1": "A", "1.0": "A",
    "b": "B", "model_b": "B", "2": "B", "2.0": "B",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "1.5": "tie",
    "error": "invalid", "invalid": "invalid",
}
"""Accepted winner spellings (lower-cased) → canonical value; ``error`` = unparsable judge output."""
_WINNER_HELP = "A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error"

REVIEW_SCORES: dict[str, str] = {"1": "A", "2": "B", "3": "tie", "-1": "invalid"}
"""Review format: 1 = the first shown answer wins, 2 = the second, 3 = tie, -1 = unparsable."""

KNOWN_JUDGES: tuple[str, ...] = (
    "gpt-3.5-turbo", "vicuna-13b", "gpt-4", "gpt35", "gpt4", "claude", "bard", "human",
)
"""Judge names recognised at the end of a review file name (others: the last dash-separated word)."""

_REVIEW_NAME = re.compile(r"^(?P<first>.+?)-vs-(?P<rest>.+)-reviewer(?:[-_].*)?$")
_MODEL_PREFIX = re.compile(r"^answer[-_]")


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

    def sentences(self) -> list[str]:
        """One sentence per rejected row: ``<file> line <n>: <reason>.``"""
        rej = self.rejected
        return [
            f"{f} line {int(n)}: {r}."
            for f, n, r in zip(rej["source_file"], rej["source_line"], rej["reason"], strict=True)
        ]


# ---------------------------------------------------------------------------------------------
# Reading: bytes → raw rows (original fields), with per-row parse problems
# ---------------------------------------------------------------------------------------------
@dataclass
class _Raw:
    """Rows of one or more files: canonical-named values, original fields, lines, parse problems."""

    canon: list[dict]  # canonical name → cell, per row
    orig: list[dict]  # the row's original fields, for the rejected-rows report
    file: list[str]
    line: list[int]
    problem: list[str | None]  # a reason found while parsing, else None


def detect_format(data: bytes, filename: str) -> str:
    """Pick a reader from the file name (extension, review-name pattern) and its first bytes."""
    name = PurePath(filename).name.lower()
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if data[:4] == b"PAR1" or name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    if head.startswith(b"["):
        return "json"
    if head.startswith(b"{") or name.endswith((".jsonl", ".ndjson", ".json")):
        first = head.split(b"\n", 1)[0]
        if _REVIEW_NAME.match(PurePath(filename).stem) and b'"score"' in first and b'"winner"' not in first:
            return "review"
        return "jsonl"
    return "csv"


def _split_lines(data: bytes) -> tuple[list[str], set[int]]:
    """Decode line by line so one bad byte costs one line, not the file; returns bad line numbers."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8").split("\n"), set()
    except UnicodeDecodeError:
        pass
    lines, bad = [], set()
    for i, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            bad.add(i)
            lines.append(raw.decode("utf-8", errors="replace"))
    return lines, bad


_BAD_BYTES = "the line contains bytes that are not valid UTF-8 text"


def _read_csv(data: bytes, filename: str) -> tuple[list[dict], list[int], list[str | None]]:
    lines, bad = _split_lines(data)
    delim = "\t" if filename.lower().endswith(".tsv") else ","
    reader = csv.reader(io.StringIO("\n".join(lines), newline=""), delimiter=delim)
    header: list[str] | None = None
    rows: list[dict] = []
    line_no: list[int] = []
    problems: list[str | None] = []
    while True:
        start = reader.line_num + 1
        try:
            rec = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            rows.append({})
            line_no.append(start)
            problems.append(f"the row cannot be read as CSV ({exc})")
            continue
        end = reader.line_num
        if not rec or all(not c.strip() for c in rec):
            continue  # blank line: not a row
        if header is None:
            if any(i in bad for i in range(start, end + 1)):
                raise LensError(f"The header (line {start}) of {filename} contains bytes that are not valid UTF-8 text.")
            header = [h.strip() for h in rec]
            continue
        bad_line = next((i for i in range(start, end + 1) if i in bad), None)
        if bad_line is not None:
            rows.append({})
            line_no.append(start)
            problems.append(_BAD_BYTES if bad_line == start else f"line {bad_line} of the row contains bytes that are not valid UTF-8 text")
            continue
        if len(rec) != len(header):
            rows.append(dict(zip(header, rec, strict=False)))
            line_no.append(start)
            problems.append(f"the row has {len(rec)} fields but the header has {len(header)}")
            continue
        rows.append(dict(zip(header, rec, strict=True)))
        line_no.append(start)
        problems.append(None)
    if header is None:
        raise LensError(f"{filename} is empty: it has no header and no rows.")
    rows.insert(0, dict.fromkeys(header))  # keeps the header's columns even when every row failed
    return rows, line_no, problems


def _read_jsonl(data: bytes, filename: str) -> tuple[list[dict], list[int], list[str | None]]:
    lines, bad = _split_lines(data)
    rows: list[dict] = []
    line_no: list[int] = []
    problems: list[str | None] = []
    for i, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        line_no.append(i)
        if i in bad:
            rows.append({"raw_text": text})
            problems.append(_BAD_BYTES)
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            rows.append({"raw_text": text})
            problems.append(f"the line is not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            rows.append({"raw_text": text})
            problems.append("the line is not a JSON object")
            continue
        rows.append(obj)
        problems.append(None)
    return rows, line_no, problems


def _read_json_array(data: bytes, filename: str) -> tuple[list[dict], list[int], list[str | None]]:
    try:
        arr = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LensError(f"{filename} is not a readable JSON array ({exc}).") from exc
    if not isinstance(arr, list):
        raise LensError(f"{filename} holds one JSON value, not an array of verdict objects.")
    rows, problems = [], []
    for obj in arr:
        ok = isinstance(obj, dict)
        rows.append(obj if ok else {"raw_text": json.dumps(obj)})
        problems.append(None if ok else "the element is not a JSON object")
    return rows, list(range(1, len(arr) + 1)), problems


def _read_parquet(data: bytes, filename: str) -> tuple[list[dict], list[int], list[str | None]]:
    try:
        df = pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise LensError(f"{filename} cannot be read as Parquet ({exc}).") from exc
    df = df.reset_index(drop=True).astype(object).where(df.notna(), None)
    n = len(df)
    if n == 0:
        raise LensError(f"{filename} has no rows.")
    return df.to_dict("records"), list(range(1, n + 1)), [None] * n


def parse_review_name(filename: str) -> tuple[str, str, str]:
    """``<first>-vs-<second>-<judge>-reviewer….jsonl`` → (first model, second model, judge)."""
    stem = PurePath(filename).name
    for ext in (".jsonl", ".json"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
    m = _REVIEW_NAME.match(stem)
    if not m:
        raise LensError(
            f"{PurePath(filename).name} is not named like a review file "
            "(<first>-vs-<second>-<judge>-reviewer….jsonl), so its models and judge are unknown."
        )
    rest = m.group("rest")
    judge = next((j for j in sorted(KNOWN_JUDGES, key=len, reverse=True) if rest.endswith("-" + j)), None)
    if judge is None:
        second, _, judge = rest.rpartition("-")
    else:
        second = rest[: -len(judge) - 1]
    first = _MODEL_PREFIX.sub("", m.group("first"))
    second = _MODEL_PREFIX.sub("", second)
    if not first or not second or not judge:
        raise LensError(f"Cannot tell the two models and the judge from the file name {filename}.")
    return first, second, judge


def _review_rows(rows: list[dict], problems: list[str | None], filename: str) -> list[dict]:
    """Review records → canonical-named records: first shown model = model_a, order AB.

    Rows with a review id carry the judge's rationale in ``text``; rows without one (human votes)
    carry the question there, and repeated rows are separate votes, numbered per question.
    """
    first, second, judge = parse_review_name(filename)
    seen: dict[str, int] = {}
    out = []
    for rec, prob in zip(rows, problems, strict=True):
        if prob is not None:
            out.append({})
            continue
        key = _scalar_text(rec.get("score"))
        if key is None:
            problems[len(out)] = "the row has no score"
        elif key not in REVIEW_SCORES:
            problems[len(out)] = f"score {key!r} is not 1, 2, 3 or -1"
        qid = _scalar_text(rec.get("question_id"))
        is_vote = "review_id" not in rec and "reviewer_id" not in rec
        new = {
            "prompt_id": qid,
            "model_a": first,
            "model_b": second,
            "judge": judge,
            "order": "AB",
            "winner": REVIEW_SCORES.get(key or ""),
        }
        if is_vote:
            seen[qid or ""] = seen.get(qid or "", 0) + 1
            new["annotator"] = f"{judge}_vote{seen[qid or '']}"
            new["question"] = rec.get("text")
        else:
            new["explanation"] = rec.get("text")
        out.append(new)
    return out


def _read(
    data: bytes, filename: str, fmt: str | None, column_map: Mapping[str, str] | None
) -> tuple[_Raw, str]:
    """One file → raw rows with canonical column names (file-level problems raise LensError)."""
    if not data or not data.strip():
        raise LensError(f"{filename} is empty.")
    fmt = fmt or detect_format(data, filename)
    if fmt not in FORMATS:
        raise LensError(f"Unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
    readers = {"csv": _read_csv, "jsonl": _read_jsonl, "review": _read_jsonl, "json": _read_json_array,
               "parquet": _read_parquet}
    rows, lines, problems = readers[fmt](data, filename)
    if fmt == "csv":
        header, rows = list(rows[0]), rows[1:]
    else:
        header = list(dict.fromkeys(k for r in rows for k in r))
    if not lines:
        raise LensError(f"{filename} has a header but no data rows.")
    if fmt == "review":
        canon = _review_rows(rows, problems, filename)
    else:
        chosen = _canonical_columns(header, filename, column_map, check=any(p is None for p in problems))
        canon = [{chosen[k]: v for k, v in r.items() if k in chosen} for r in rows]
    return _Raw(canon, rows, [filename] * len(lines), list(lines), list(problems)), fmt


def _canonical_columns(header: list, filename: str, column_map: Mapping[str, str] | None,
                       check: bool = True) -> dict:
    """Rename the file's columns to canonical names (user map, then case-insensitive + aliases)."""
    user = {str(k).strip().lower(): str(v).strip().lower() for k, v in (column_map or {}).items()}
    for target in user.values():
        if target not in CANONICAL:
            raise LensError(f"The column map names {target!r}, which is not a verdict column "
                            f"({', '.join(sorted(CANONICAL))}).")
    chosen: dict[str, str] = {}
    for col in header:
        low = str(col).strip().lower()
        name = user.get(low) or (low if low in CANONICAL else COLUMN_ALIASES.get(low))
        if name is None:
            continue
        exact = low == name or low in user
        if name in chosen.values():
            prev = next(c for c, n in chosen.items() if n == name)
            if not exact:
                continue  # an alias never overrides the canonical column
            if str(prev).strip().lower() == name or str(prev).strip().lower() in user:
                raise LensError(f"{filename} has two columns that both mean {name!r}: {prev!r} and {col!r}.")
            del chosen[prev]
        chosen[col] = name
    missing = [c for c in REQUIRED if c not in chosen.values()]
    if missing and check:
        found = ", ".join(map(str, header)) or "none"
        raise LensError(
            f"{filename} has no {' / '.join(missing)} column (required: {', '.join(REQUIRED)}; "
            f"found: {found})."
        )
    return chosen


# ---------------------------------------------------------------------------------------------
# Normalising + validating: raw rows → canonical frame / rejected rows
# ---------------------------------------------------------------------------------------------
def _scalar_text(v: object) -> str | None:
    """A cell as stripped text; None for missing/blank. Integral floats print without '.0'."""
    if type(v) is str:
        v = v.strip()
        return v or None
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return None
        return str(int(v)) if v.is_integer() else repr(v)
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, np.integer | int):
        return str(int(v))
    if isinstance(v, np.floating):
        return _scalar_text(float(v))
    if isinstance(v, dict | list):
        return json.dumps(v, ensure_ascii=False)
    s = str(v).strip()
    return s or None


def _winner_key(v: object) -> str | None:
    """Winner cell → lookup key; numbers keep their decimal (1.5) so AlpacaEval values map."""
    if isinstance(v, float | np.floating) and not math.isnan(v):
        return str(float(v)) if not float(v).is_integer() else str(int(v))
    t = _scalar_text(v)
    return None if t is None else " ".join(t.lower().split())


def _nonneg_int(v: object) -> int | None | str:
    """None when missing; the int when a non-negative integer; the original text when not."""
    t = _scalar_text(v)
    if t is None:
        return None
    try:
        f = float(t)
    except ValueError:
        return t
    if not math.isfinite(f) or not f.is_integer() or f < 0:
        return t
    return int(f)


def _text_or_none(v: object) -> str | None:
    """Free text (explanations, questions, answers): kept as written; blank → None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    t = v if isinstance(v, str) else str(v)
    return t if t.strip() else None


def _normalise(raw: _Raw, dataset: str, model_names: Mapping[str, str] | None,
               judge_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """Canonical values and one reason (or None) per row, the first problem found; also the texts.

    Plain lists, one pass per column: the cells are Python objects of any type, and keeping
    them out of pandas until they are clean avoids dtype guessing (NaN vs None, 1 vs 1.0).
    """
    rows = raw.canon
    reasons: list[str | None] = list(raw.problem)

    def col(name: str) -> list:
        return [r.get(name) for r in rows]

    def flag(bad: Iterable[bool], text) -> None:
        for i, b in enumerate(bad):
            if b and reasons[i] is None:
                reasons[i] = text(i) if callable(text) else text

    txt = {c: [_scalar_text(v) for v in col(c)] for c in
           ("prompt_id", "model_a", "model_b", "judge", "category", "annotator", "variant_kind", "order")}
    if model_names:
        for c in ("model_a", "model_b"):
            txt[c] = [model_names.get(s, s) if s is not None else None for s in txt[c]]
    judge = [DEFAULT_JUDGE if s is None else s for s in txt["judge"]]
    if judge_names:
        judge = [judge_names.get(s, s) for s in judge]
    for c in ("prompt_id", "model_a", "model_b"):
        flag((s is None for s in txt[c]), f"{c} is empty")
    ma, mb = txt["model_a"], txt["model_b"]
    flag((a is not None and a == b for a, b in zip(ma, mb, strict=True)),
         lambda i: f"model_a and model_b are the same model ({ma[i]})")

    wraw = col("winner")
    wkey = [_winner_key(v) for v in wraw]
    winner = [WINNER_VALUES.get(k) if k is not None else None for k in wkey]
    flag((k is None for k in wkey), "winner is empty")
    flag((w is None for w in winner),
         lambda i: f"winner value {_scalar_text(wraw[i])!r} is not one of {_WINNER_HELP}")

    ints = {}
    for name, default in (("variant", 0), ("turn", DEFAULT_TURN)):
        vals = [_nonneg_int(v) for v in col(name)]
        flag((isinstance(v, str) for v in vals), lambda i, vals=vals, name=name:
             f"{name} {vals[i]!r} is not a non-negative integer")
        ints[name] = [default if v is None or isinstance(v, str) else v for v in vals]

    order = [None if s is None else s.upper() for s in txt["order"]]
    flag((o is not None and o not in ("AB", "BA") for o in order),
         lambda i: f"order {txt['order'][i]!r} is not AB or BA")

    vk = [None if s is None else s.lower() for s in txt["variant_kind"]]
    flag((k is not None and k not in VARIANT_KINDS for k in vk),
         lambda i: f"variant_kind {txt['variant_kind'][i]!r} is not one of {', '.join(VARIANT_KINDS)}")
    vk = [k if k is not None else ("original" if v == 0 else "paraphrase") for k, v in zip(vk, ints["variant"], strict=True)]

    prob_txt = [_scalar_text(v) for v in col("prob_a")]
    prob = []
    for t in prob_txt:
        try:
            prob.append(math.nan if t is None else float(t))
        except ValueError:
            prob.append(None)
    flag((p is None for p in prob), lambda i: f"prob_a {prob_txt[i]!r} is not a number")
    flag((p is not None and not (0 <= p <= 1) and not math.isnan(p) for p in prob),
         lambda i: f"prob_a {prob_txt[i]} is outside [0, 1]")
    prob = [math.nan if p is None else p for p in prob]

    frame = pd.DataFrame({
        "dataset": pd.Series([dataset] * len(rows), dtype=object),
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
        "prob_a": pd.Series(prob, dtype=np.float64),
        "annotator": pd.Series(txt["annotator"], dtype=object),
        "explanation": pd.Series([_text_or_none(v) for v in col("explanation")], dtype=object),
        "source_file": pd.Series(raw.file, dtype=object),
        "source_line": pd.Series(raw.line, dtype=np.int64),
    })
    texts = pd.DataFrame({c: pd.Series([_text_or_none(v) for v in col(c)], dtype=object) for c in TEXTS})
    return frame, pd.Series(reasons, dtype=object), texts


def _mark_duplicates(frame: pd.DataFrame, reasons: pd.Series) -> None:
    """Exact repeats of an earlier valid row (same content, any line) are rejected, naming both lines."""
    content = [c for c in VERDICT_COLUMNS if c not in ("source_file", "source_line")]
    ok = reasons.isna().to_numpy()
    if ok.sum() < 2:
        return
    sub = frame.loc[ok, content].astype(object).where(frame.loc[ok, content].notna(), "\x00")
    dup = sub.duplicated(keep="first").to_numpy()
    if not dup.any():
        return
    first_idx = sub.groupby(content, sort=False, dropna=False).ngroup()
    firsts = pd.Series(sub.index, index=sub.index).groupby(first_idx.to_numpy()).transform("first")
    idx = sub.index[dup]
    for i in idx:
        j = firsts[i]
        where = (f"line {int(frame.at[j, 'source_line'])}" if frame.at[j, "source_file"] == frame.at[i, "source_file"]
                 else f"{frame.at[j, 'source_file']} line {int(frame.at[j, 'source_line'])}")
        reasons[i] = f"the row repeats {where} exactly (an identical verdict)"


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


def _rejected_frame(raw: _Raw, reasons: pd.Series, bad: np.ndarray) -> pd.DataFrame:
    idx = np.flatnonzero(bad)
    orig = pd.DataFrame([{k: _scalar_text(v) for k, v in raw.orig[i].items()} for i in idx], dtype=object)
    orig.index = idx
    head = pd.DataFrame({
        "source_file": np.asarray(raw.file, dtype=object)[idx],
        "source_line": np.asarray(raw.line, dtype=np.int64)[idx],
        "reason": reasons[bad].astype(str).to_numpy(),
    }, index=idx)
    out = pd.concat([head, orig.drop(columns=[c for c in head.columns if c in orig.columns])], axis=1)
    return out.reset_index(drop=True).astype({"source_line": "int64"})


def validate_raw(raw: _Raw, *, dataset: str, source: str, fmt: str,
                 model_names: Mapping[str, str] | None = None,
                 judge_names: Mapping[str, str] | None = None) -> ValidationReport:
    """Normalise and check rows already read; used by ``validate_bytes`` and ``validate_many``."""
    frame, reasons, texts = _normalise(raw, dataset, model_names, judge_names)
    _mark_duplicates(frame, reasons)
    bad = reasons.notna().to_numpy()
    good = frame.loc[~bad].reset_index(drop=True).astype(VERDICT_DTYPES)
    prompts, answers = _texts_tables(frame, texts, ~bad)
    return ValidationReport(
        dataset=dataset, source=source, format=fmt, good=good,
        rejected=_rejected_frame(raw, reasons, bad), prompts=prompts, answers=answers,
        rows_read=int(len(frame)),
    )


def validate_bytes(
    data: bytes, filename: str, *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate one file's bytes (named ``filename``, which also gives review-format models/judge)."""
    raw, found = _read(data, filename, fmt, column_map)
    return validate_raw(raw, dataset=dataset, source=filename, fmt=found,
                        model_names=model_names, judge_names=judge_names)


def validate_many(
    files: Iterable[tuple[bytes, str]], *, dataset: str, fmt: str | None = None,
    column_map: Mapping[str, str] | None = None, model_names: Mapping[str, str] | None = None,
    judge_names: Mapping[str, str] | None = None,
) -> ValidationReport:
    """Validate several files as one import (duplicates are checked across files too)."""
    raws, fmts, names = [], [], []
    for data, filename in files:
        raw, found = _read(data, filename, fmt, column_map)
        raws.append(raw)
        fmts.append(found)
        names.append(filename)
    if not raws:
        raise LensError("No files to import.")
    merged = _Raw(
        canon=[c for r in raws for c in r.canon],
        orig=[o for r in raws for o in r.orig],
        file=[f for r in raws for f in r.file],
        line=[n for r in raws for n in r.line],
        problem=[p for r in raws for p in r.problem],
    )
    source = names[0] if len(names) == 1 else f"{len(names)} files"
    fmt_used = fmts[0] if len(set(fmts)) == 1 else "mixed"
    return validate_raw(merged, dataset=dataset, source=source, fmt=fmt_used,
                        model_names=model_names, judge_names=judge_names)
