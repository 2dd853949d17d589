"""Reference rankings: LMArena ratings (per-category JSON or leaderboard CSV) mapped to dataset names.

Files: the arena-catalog JSON ``{category: {model: {rating, rating_q025, rating_q975}}}`` and the
leaderboard CSVs (a ``model`` column plus ``arena_elo``/``arena_score``/``rating``). The shipped
copies live in ``data/arena_reference`` (see PROVENANCE.md there). A dataset's model names are mapped
by ``data/mappings/<dataset>.models.csv`` (columns model, arena_model, arena_display, match, note);
matching is case-insensitive on either reference name. Unmapped models are dropped and listed in the
result's ``attrs["unmapped"]``; mapped models absent from the reference in ``attrs["missing"]``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .errors import LensError

DATA = Path(__file__).resolve().parent.parent / "data"
REFERENCE_DIR = DATA / "arena_reference"
MAPPING_DIR = DATA / "mappings"
DEFAULT_REFERENCE = REFERENCE_DIR / "leaderboard-text_2025-03-07.json"
DEFAULT_CATEGORY = "full"
RATING_COLUMNS = ("rating", "arena_elo", "arena_score", "score", "elo")


def _read_json(path: Path, category: str | None) -> pd.Series:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise LensError(f"The reference file {path} is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    if not isinstance(data, dict) or not data:
        raise LensError(f"The reference file {path} is not a {{category: {{model: rating}}}} object.")
    cat = category or DEFAULT_CATEGORY
    if cat not in data:
        raise LensError(f"The reference file {path.name} has no category {cat!r}; it has {', '.join(sorted(data))}.")
    ratings = {}
    for model, entry in data[cat].items():
        value = entry.get("rating") if isinstance(entry, dict) else entry
        try:
            ratings[str(model)] = float(value)
        except (TypeError, ValueError):
            raise LensError(f"Reference model {model!r} in category {cat!r} has no numeric rating.") from None
    return pd.Series(ratings, dtype="float64")


def _read_csv(path: Path, category: str | None) -> pd.Series:
    if category is not None:
        raise LensError(f"The leaderboard CSV {path.name} has one overall ranking; it has no category {category!r}.")
    df = pd.read_csv(path)
    cols = {c.lower(): c for c in df.columns}
    if "model" not in cols:
        raise LensError(f"The reference CSV {path.name} has no 'model' column.")
    rating = next((cols[c] for c in RATING_COLUMNS if c in cols), None)
    if rating is None:
        raise LensError(f"The reference CSV {path.name} has none of the rating columns {', '.join(RATING_COLUMNS)}.")
    values = pd.to_numeric(df[rating], errors="coerce")
    bad = values.isna()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0]) + 2
        raise LensError(f"Line {row} of {path.name} has a non-numeric {rating} value {df[rating].iloc[row - 2]!r}.")
    return pd.Series(values.to_numpy(), index=df[cols["model"]].astype(str), dtype="float64")


def load_reference(path: str | Path | None = None, category: str | None = None) -> pd.Series:
    """Rating by reference model name (higher is better), sorted best first."""
    p = Path(path) if path is not None else DEFAULT_REFERENCE
    if not p.exists():
        raise LensError(f"The reference file {p} does not exist.")
    s = _read_json(p, category) if p.suffix.lower() == ".json" else _read_csv(p, category)
    s = s[~s.index.duplicated(keep="first")].sort_values(ascending=False)
    s.index.name = "model"
    s.name = "rating"
    return s


def reference_categories(path: str | Path | None = None) -> list[str]:
    """Categories of a per-category JSON reference (a CSV has none)."""
    p = Path(path) if path is not None else DEFAULT_REFERENCE
    if p.suffix.lower() != ".json":
        return []
    return sorted(json.loads(p.read_text()))


def load_mapping(dataset: str) -> pd.DataFrame:
    """The dataset's model-name mapping (model → arena_model / arena_display)."""
    path = MAPPING_DIR / f"{dataset}.models.csv"
    if not path.exists():
        raise LensError(f"There is no model-name mapping for dataset {dataset!r} (expected {path}).")
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    for col in ("model", "arena_model"):
        if col not in df.columns:
            raise LensError(f"The mapping file {path.name} lacks the column {col!r}.")
    if "arena_display" not in df.columns:
        df["arena_display"] = ""
    return df


def map_reference(ref: pd.Series, mapping: pd.DataFrame) -> pd.Series:
    """Re-index a reference by dataset model names through a mapping; unmapped/missing go to attrs."""
    lower = {str(k).lower(): k for k in ref.index}
    out, unmapped, missing = {}, [], []
    for row in mapping.itertuples(index=False):
        names = [n for n in (row.arena_model, row.arena_display) if n]
        if not names:
            unmapped.append(row.model)
            continue
        hit = next((lower[n.lower()] for n in names if n.lower() in lower), None)
        if hit is None:
            missing.append(row.model)
        else:
            out[row.model] = float(ref[hit])
    s = pd.Series(out, dtype="float64", name="rating").sort_values(ascending=False)
    s.index.name = "model"
    s.attrs["unmapped"] = unmapped
    s.attrs["missing"] = missing
    return s


def arena_category(dataset: str, category: str, path: str | Path | None = None) -> str:
    """The reference category for a dataset category (data/mappings/<dataset>.categories.csv, with fallback)."""
    mp = MAPPING_DIR / f"{dataset}.categories.csv"
    if not mp.exists():
        raise LensError(f"There is no category mapping for dataset {dataset!r} (expected {mp}).")
    df = pd.read_csv(mp, dtype=str, keep_default_na=False)
    row = df[df["category"] == category]
    if row.empty:
        raise LensError(f"Dataset {dataset!r} has no category {category!r} in its category mapping.")
    cats = set(reference_categories(path))
    first, fallback = row["arena_category"].iloc[0], row.get("fallback_category", pd.Series([""])).iloc[0]
    if not cats or first in cats:
        return first
    if fallback and fallback in cats:
        return fallback
    raise LensError(f"The reference has neither {first!r} nor a fallback category for {category!r}.")


def reference_for_dataset(dataset: str, category: str | None = None, path: str | Path | None = None) -> pd.Series:
    """The reference ratings by the dataset's model names (``category`` is a reference category)."""
    return map_reference(load_reference(path, category), load_mapping(dataset))
