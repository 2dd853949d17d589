"""Raw verdict rows → the canonical frame of ``schema.VERDICT_DTYPES`` (and the style counts,
``schema.STYLE_COLUMNS``) and one reason (or None) per row: defaults, winner spellings, names and texts
checked in bulk, same-model rows, integer ranges, timestamps, style counts. Pure: no file and no store."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from engine.ingest.cells import (
    FREE_TEXTS,
    ID_COLUMNS,
    all_text,
    arrow_memo,
    arrow_nulls,
    as_arrow,
    boolean_cells,
    cell_numbers,
    cells_present,
    clean_arrow,
    clean_text,
    free_text,
    is_none,
    name_suspects,
    short_repr,
    text_lengths,
    text_series,
    timestamp_seconds,
    winner_key,
)
from engine.ingest.limits import INT_MAX, NAME_MAX_CHARS, TEXT_MAX_CHARS, TSTAMP_RANGE, name_problem
from engine.ingest.raw_rows import CANONICAL, TEXTS, RawRows, cell_text
from engine.store.schema import DEFAULT_JUDGE, DEFAULT_TURN, STYLE_COLUMNS, VARIANT_KINDS
from engine.style.given import given_counts

WINNER_VALUES: dict[str, str] = {
    "a": "A", "model_a": "A", "1": "A", "1.0": "A",
    "b": "B", "model_b": "B", "2": "B", "2.0": "B",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "both_bad": "tie", "1.5": "tie",
    "error": "invalid", "invalid": "invalid",
}
"""Accepted winner spellings (lower-cased) → canonical value; ``error`` = unparsable judge output.
``both_bad`` is how LMArena's later releases (arena-human-preference-140k) write "tie (bothbad)";
arena-rank scores it as a tie (outcome 0.5)."""
_WINNER_HELP = "A, B, tie, model_a, model_b, tie (bothbad), 1, 2, 1.5 or error"


def normalise_rows(raw: RawRows, dataset: str, model_names: Mapping[str, str] | None,
               judge_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """Canonical values and the reason (or None) per row; also the texts.

    A row that could not be read (a parse problem: wrong field count, bad bytes, not JSON) keeps
    that one reason, its cells being unreliable; otherwise every problem of the row is listed, in
    one sentence joined by semicolons. Column at a time: text columns through Arrow, checks as
    boolean masks; only the sentences of rejected rows are built one by one.
    """
    with arrow_memo():  # a column read by several checks is converted to Arrow once
        return _normalise(raw, dataset, model_names, judge_names)


def _normalise(raw: RawRows, dataset: str, model_names: Mapping[str, str] | None,
               judge_names: Mapping[str, str] | None) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame]:
    """``normalise_rows`` inside its memo of Arrow conversions."""
    n = len(raw.line)
    absent = [None] * n  # every column the file lacks is this one list (never changed here)
    reasons = np.array(list(raw.problem) + [None], dtype=object)[:-1]
    readable = is_none(reasons)

    def col(name: str) -> list:
        return raw.cols.get(name) or absent

    def flag(bad: np.ndarray, text: str | Callable[..., str]) -> None:
        m = np.asarray(bad, dtype=bool) & readable
        for i in np.flatnonzero(m):
            t = text(int(i)) if callable(text) else text
            reasons[i] = t if reasons[i] is None else f"{reasons[i]}; {t}"

    for c, cells in raw.cols.items():  # a JSON true is no name, winner, text or number: refused, not read
        bools = boolean_cells(cells) if c in CANONICAL else None
        if bools is not None:
            flag(bools, lambda i, c=c, cells=cells: f"{c} is the boolean {str(bool(cells[i])).lower()}, "
                                                      "which is no value of that column")
    readable &= is_none(reasons)  # a row with a boolean keeps that one reason

    def rename(a: np.ndarray, names: Mapping[str, str]) -> np.ndarray:
        return np.array([names.get(v, v) if v is not None else None for v in a] + [None], dtype=object)[:-1]

    arrow = {c: clean_arrow(col(c)) for c in
             ("prompt_id", "model_a", "model_b", "judge", "category", "annotator", "variant_kind", "order")}
    if model_names:
        for c in ("model_a", "model_b"):
            arrow[c] = as_arrow(rename(arrow[c].to_numpy(zero_copy_only=False), model_names))
    arrow["judge"] = pc.fill_null(arrow["judge"], DEFAULT_JUDGE)
    if judge_names:
        arrow["judge"] = as_arrow(rename(arrow["judge"].to_numpy(zero_copy_only=False), judge_names))
    txt: dict[str, np.ndarray] = {}  # object arrays, made only where Python needs them

    def values(c: str) -> np.ndarray:
        if c not in txt:
            txt[c] = arrow[c].to_numpy(zero_copy_only=False)
        return txt[c]

    for c in ID_COLUMNS:
        if c in ("prompt_id", "model_a", "model_b"):
            flag(arrow_nulls(arrow[c]), f"{c} is empty")
        lens = text_lengths(arrow[c])
        flag(lens > NAME_MAX_CHARS, lambda i, c=c, lens=lens:
             f"{c} is {lens[i]:,} characters long; the limit for a name is {NAME_MAX_CHARS}")
        suspects = name_suspects(arrow[c])
        for i in np.flatnonzero(suspects):  # the patterns are a superset: the words decide
            suspects[i] = name_problem(str(values(c)[i])) is not None
        flag(suspects, lambda i, c=c:
             f"{c} {short_repr(values(c)[i], NAME_MAX_CHARS)} {name_problem(str(values(c)[i]))}")
    same = pc.fill_null(pc.equal(arrow["model_a"], arrow["model_b"]), False).to_numpy(zero_copy_only=False)
    flag(same, lambda i: f"model_a and model_b are the same model ({values('model_a')[i]})")

    wraw = col("winner")
    warr = clean_arrow(wraw)
    if all_text(wraw):
        low = pc.replace_substring_regex(pc.utf8_lower(warr), r"\s+", " ")
        enc = pc.dictionary_encode(low)  # a handful of distinct spellings: map those, then take
        mapped = pd.Series(enc.dictionary.to_numpy(zero_copy_only=False), dtype=object).map(WINNER_VALUES)
        words = np.append(mapped.astype(object).to_numpy(copy=True), np.array([None], object))
        picks = pc.fill_null(enc.indices, len(enc.dictionary))
        winner = words[picks.to_numpy(zero_copy_only=False)]
        # the stored column taken in Arrow from the few words (unmapped ones are NaN: null)
        winner_column = text_series(pa.array(words, type=pa.string(), from_pandas=True).take(picks))
    else:
        keys = pd.Series([winner_key(v) for v in wraw], dtype=object)
        winner = keys.map(WINNER_VALUES).astype(object).to_numpy(copy=True)
        winner_column = None
    winner[is_none(winner)] = None
    wnull = arrow_nulls(warr)
    flag(wnull, "winner is empty")
    flag(
        ~wnull & is_none(winner),
        lambda i: f"winner value {short_repr(cell_text(wraw[i]))} is not one of {_WINNER_HELP}",
    )

    ints = {}
    for name, default in (("variant", 0), ("turn", DEFAULT_TURN)):
        cells = col(name)
        present = cells_present(cells)
        num = cell_numbers(cells, present)
        with np.errstate(invalid="ignore"):
            whole = np.isfinite(num) & (num >= 0) & (np.floor(num) == num)
            ok = whole & (num <= INT_MAX)
        flag(present & ~whole, lambda i, cells=cells, name=name:
             f"{name} {short_repr(cell_text(cells[i]))} is not a non-negative integer")
        flag(present & whole & ~ok, lambda i, cells=cells, name=name:
             f"{name} {cell_text(cells[i])} is larger than {INT_MAX:,}, the largest the store keeps")
        ints[name] = np.where(present & ok, np.nan_to_num(num), default).astype(np.int64)

    if arrow["order"].null_count == n:  # no order given: nothing to check, a column of nulls to store
        order = np.full(n, None, dtype=object)
        order_column = text_series(pa.nulls(n, pa.string()))
    else:
        order = pd.Series(values("order"), dtype=object).str.upper().to_numpy(copy=True)
        order[is_none(order)] = None
        order_column = pd.Series(order, dtype=object)
    flag(~is_none(order) & ~np.isin(order, ["AB", "BA"]),
         lambda i: f"order {short_repr(values('order')[i])} is not AB or BA")

    # a row without a kind takes its variant's: 0 the original, any other a paraphrase
    derived = pc.if_else(pa.array(ints["variant"] == 0), "original", "paraphrase")
    if arrow["variant_kind"].null_count == n:  # no kind given: the column is the derived one, made in Arrow
        kind_column = text_series(derived)
    else:
        vk = pd.Series(values("variant_kind"), dtype=object).str.lower().to_numpy(copy=True)
        vk[is_none(vk)] = None
        flag(
            ~is_none(vk) & ~np.isin(vk, list(VARIANT_KINDS)),
            lambda i: f"variant_kind {short_repr(values('variant_kind')[i])} is not one of "
                      f"{', '.join(VARIANT_KINDS)}",
        )
        vk = np.where(is_none(vk), derived.to_numpy(zero_copy_only=False), vk).astype(object)
        kind_column = pd.Series(vk, dtype=object)

    free = {c: free_text(col(c)) for c in FREE_TEXTS}
    for c, column in free.items():
        lens = text_lengths(column)
        flag(lens > TEXT_MAX_CHARS, lambda i, c=c, lens=lens:
             f"{c} is {lens[i]:,} characters long; the limit for a text is {TEXT_MAX_CHARS:,}")

    pcells = col("prob_a")
    present = cells_present(pcells)

    def ptxt(i: int) -> str:
        return clean_text([pcells[i]])[0]
    prob = cell_numbers(pcells, present)
    flag(present & np.isnan(prob), lambda i: f"prob_a {short_repr(ptxt(i))} is not a number")
    with np.errstate(invalid="ignore"):
        flag(
            present & ~np.isnan(prob) & ((prob < 0) | (prob > 1)),
            lambda i: f"prob_a {ptxt(i)} is outside [0, 1]",
        )

    stamp = timestamp_seconds(col("tstamp"))
    flag(stamp.bad, lambda i: f"tstamp {cell_text(col('tstamp')[i])!r} is not a time "
                              "(seconds since 1970, or a date such as 2024-05-01T12:00:00Z)")
    earliest, latest = TSTAMP_RANGE
    with np.errstate(invalid="ignore"):
        out_of_range = ~stamp.bad & ((stamp.values < earliest) | (stamp.values > latest))
    flag(out_of_range, lambda i: f"tstamp {cell_text(col('tstamp')[i])} is outside the years 1 to 9999 "
                                 "(seconds since 1970 are expected"
                                 + ("; is it in milliseconds?)" if 1e11 < stamp.values[i] < 1e16 else ")"))
    scells = col("strength")
    spresent = cells_present(scells)
    snum = cell_numbers(scells, spresent)
    flag(
        spresent & ~np.isin(snum, [1.0, 2.0]),
        lambda i: f"strength {clean_text([scells[i]])[0]!r} is not 1 or 2",
    )
    strength = pd.array(np.where(spresent & np.isin(snum, [1.0, 2.0]), snum, np.nan), dtype="Float64")
    style = given_counts(col, n, flag)

    frame = pd.DataFrame({
        # columns of one value, or of values Arrow already holds, are made in Arrow: the stage writes
        # them as they are, without converting a Python string per row
        "dataset": text_series(pa.repeat(pa.scalar(dataset, pa.string()), n)),
        "judge": text_series(arrow["judge"]),
        "prompt_id": text_series(arrow["prompt_id"]),
        "variant": pd.Series(ints["variant"], dtype=np.int64),
        "variant_kind": kind_column,
        "turn": pd.Series(ints["turn"], dtype=np.int64),
        "category": text_series(arrow["category"]),
        "model_a": text_series(arrow["model_a"]),
        "model_b": text_series(arrow["model_b"]),
        "winner": pd.Series(winner, dtype=object) if winner_column is None else winner_column,
        "order": order_column,
        "prob_a": pd.Series(np.where(present, prob, np.nan), dtype=np.float64),
        "annotator": text_series(arrow["annotator"]),
        "explanation": text_series(pa.nulls(n, pa.string())) if is_none(free["explanation"]).all()
        else pd.Series(free["explanation"], dtype=object),
        "battle_id": text_series(clean_arrow(col("battle_id"))),
        "tstamp": pd.Series(stamp.values, dtype=np.float64),
        "strength": pd.Series(strength, dtype="Float64").astype("Int64"),
        "source_file": _file_column(raw.file),
        "source_line": pd.Series(raw.line, dtype=np.int64),
        **{c: pd.Series(style[:, k], dtype=np.float64) for k, c in enumerate(STYLE_COLUMNS)},
    })
    texts = pd.DataFrame({c: pd.Series(free[c], dtype=object) for c in TEXTS})
    return frame, reasons, texts


def _file_column(files: list) -> pd.Series:
    """The rows' file names: one name repeated in Arrow when the batch is of one file (the usual case),
    else the names as they are."""
    n = len(files)
    if isinstance(files, list) and n and isinstance(files[0], str) and files.count(files[0]) == n:
        return text_series(pa.repeat(pa.scalar(files[0], pa.string()), n))
    return pd.Series(files, dtype=object)
