"""Reference rankings: LMArena ratings (per-category JSON or leaderboard CSV) mapped to dataset names.

Files: the arena-catalog JSON ``{category: {model: {rating, rating_q025, rating_q975}}}`` and the
leaderboard CSVs (a ``model`` column plus ``arena_elo``/``arena_score``/``rating``). The shipped
copies live in ``data/arena_reference`` (see PROVENANCE.md there).

A dataset's model names reach the reference's names in layers, the first that names a model wins:
a map file given for one command (``compare --model-map``), the map stored with the dataset
(``engine.store.model_maps``: uploaded or edited on the Data page, ``datasets map``), the shipped
``data/mappings/<dataset>.models.csv`` (columns model, arena_model, arena_display, match, note), and
last the names themselves (``engine.ranking.name_match``: exact, then case- and punctuation-insensitive,
one-to-one). A map's target is looked up case-insensitively on either reference name; an empty target
says the model is not on the reference. What is left out is listed in the result's attrs:
``unmapped`` (a map says not on the reference), ``missing`` (a map names a reference model that the
reference lacks), ``unmatched`` (no reference name matches), ``ambiguous`` (model → the reference
names it could mean); ``reference_notes`` says each in a sentence. Ratings must be finite numbers:
a NaN or infinite rating is refused, naming the model.
"""

from __future__ import annotations

import functools
import io
import json
import math
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.errors import LensError
from engine.frames import records
from engine.graphs.stack import GraphStack
from engine.ingest.limits import name_problem
from engine.ranking.distances import ordinal_ranks
from engine.ranking.name_match import match_names
from engine.store.connection import Store
from engine.store.model_maps import MAP_FRAME_COLUMNS, set_stored_map

DATA = Path(__file__).resolve().parents[2] / "data"
REFERENCE_DIR = DATA / "arena_reference"
MAPPING_DIR = DATA / "mappings"
DEFAULT_REFERENCE = REFERENCE_DIR / "leaderboard-text_2025-03-07.json"
DEFAULT_CATEGORY = "full"
ARENA = "arena"
"""The name that stands for the shipped LMArena snapshot (``DEFAULT_REFERENCE``) on the command line."""
MAP_COLUMNS = ("arena_model", "reference_model")
RATING_COLUMNS = ("rating", "arena_elo", "arena_score", "score", "elo")


def parsed_json(path: Path) -> Any:
    """``path``'s JSON, parsed once per version of the file (its size and modification time): a page's first
    open asks for the shipped reference's categories and ratings several times (seven parses of 0.7 MB,
    ~0.05 s of CPU, on the Leaderboard's first open). Shared, so callers only read it."""
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    return json.loads(Path(path).read_text())


def _read_json(path: Path, category: str | None) -> pd.Series:
    try:
        data = parsed_json(path)
    except json.JSONDecodeError as exc:
        raise LensError(
            f"The reference file {path} is not valid JSON ({exc.msg} at line {exc.lineno})."
        ) from None
    if not isinstance(data, dict) or not data:
        raise LensError(f"The reference file {path} is not a {{category: {{model: rating}}}} object.")
    cat = category or DEFAULT_CATEGORY
    if cat not in data:
        raise LensError(
            f"The reference file {path.name} has no category {cat!r}; it has {', '.join(sorted(data))}."
        )
    ratings = {}
    for model, entry in data[cat].items():
        value: Any = entry.get("rating") if isinstance(entry, dict) else entry  # JSON: float() decides
        try:
            ratings[str(model)] = float(value)
        except (TypeError, ValueError):
            raise LensError(f"Reference model {model!r} in category {cat!r} has no numeric rating.") from None
        if not math.isfinite(ratings[str(model)]):
            raise LensError(
                f"Reference model {model!r} in category {cat!r} of {path.name} has the rating {value!r}; "
                "a rating must be a finite number."
            )
    return pd.Series(ratings, dtype="float64")


def _read_csv(path: Path, category: str | None) -> pd.Series:
    if category is not None:
        raise LensError(
            f"The leaderboard CSV {path.name} has one overall ranking; it has no category {category!r}."
        )
    df = pd.read_csv(path)
    cols = {c.lower(): c for c in df.columns}
    if "model" not in cols:
        raise LensError(f"The reference CSV {path.name} has no 'model' column.")
    rating = next((cols[c] for c in RATING_COLUMNS if c in cols), None)
    if rating is None:
        raise LensError(
            f"The reference CSV {path.name} has none of the rating columns {', '.join(RATING_COLUMNS)}."
        )
    values = pd.to_numeric(df[rating], errors="coerce")
    bad = values.isna()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0]) + 2
        raise LensError(
            f"Line {row} of {path.name} has a non-numeric {rating} value {df[rating].iloc[row - 2]!r}."
        )
    inf = ~values.map(math.isfinite)
    if inf.any():
        k = int(inf.to_numpy().nonzero()[0][0])
        raise LensError(f"Line {k + 2} of {path.name}: model {df[cols['model']].iloc[k]!r} has the rating "
                        f"{df[rating].iloc[k]!r}; a rating must be a finite number.")
    return pd.Series(values.to_numpy(), index=df[cols["model"]].astype(str), dtype="float64")


def reference_file(spec: str | Path | None) -> Path:
    """The file behind a reference spec: None or 'arena' → the shipped snapshot, else the path itself."""
    return DEFAULT_REFERENCE if spec is None or str(spec) == ARENA else Path(spec)


def load_reference(path: str | Path | None = None, category: str | None = None) -> pd.Series:
    """Rating by reference model name (higher is better), sorted best first ('arena' or None: the
    shipped snapshot)."""
    p = reference_file(path)
    if not p.exists():
        raise LensError(f"The reference file {p} does not exist.")
    s = _read_json(p, category) if p.suffix.lower() == ".json" else _read_csv(p, category)
    s = s[~s.index.duplicated(keep="first")].sort_values(ascending=False)
    s.index.name = "model"
    s.name = "rating"
    return s


def reference_categories(path: str | Path | None = None) -> list[str]:
    """Categories of a per-category JSON reference (a CSV has none)."""
    p = reference_file(path)
    if p.suffix.lower() != ".json":
        return []
    return sorted(parsed_json(p))


def mapping_path(dataset: str, kind: str = "models") -> Path | None:
    """``data/mappings/<dataset>.<kind>.csv``, or None for a dataset name that is not a plain file name
    (a separator, a leading dot, a control character): such a name can have no shipped mapping, and
    must not reach a file outside that folder."""
    name = str(dataset)
    if (not name or name.startswith(".") or "/" in name or "\\" in name
            or any(ord(ch) < 32 for ch in name) or Path(name).name != name):
        return None
    return MAPPING_DIR / f"{name}.{kind}.csv"


def has_mapping(dataset: str, kind: str = "models") -> bool:
    """Whether the dataset has a shipped mapping file of this kind (models or categories)."""
    path = mapping_path(dataset, kind)
    return path is not None and path.exists()


def load_mapping(dataset: str) -> pd.DataFrame:
    """The dataset's model-name mapping (model → arena_model / arena_display)."""
    path = mapping_path(dataset, "models")
    if path is None:
        raise LensError(
            f"There is no model-name mapping for dataset {dataset!r} (its name is not a plain file name)."
        )
    if not path.exists():
        raise LensError(f"There is no model-name mapping for dataset {dataset!r} (expected {path}).")
    return load_mapping_file(path)


def load_mapping_file(path: str | Path) -> pd.DataFrame:
    """A model-name mapping CSV: ``model`` (the dataset's name) and ``arena_model`` or
    ``reference_model`` (the reference's name; empty: not on the reference), optional ``arena_display``."""
    path = Path(path)
    if not path.exists():
        raise LensError(f"The model-name mapping file {path} does not exist.")
    return read_mapping(path, path.name)


def read_mapping(source: str | Path | io.BytesIO, name: str) -> pd.DataFrame:
    """``load_mapping_file``'s reading of a file or an upload's bytes (``name``: what messages call it)."""
    try:
        df = pd.read_csv(source, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise LensError(f"The mapping file {name} is not a readable CSV ({str(exc).strip()}).") from None
    df.columns = [str(c).strip() for c in df.columns]
    target = next((c for c in MAP_COLUMNS if c in df.columns), None)
    if "model" not in df.columns or target is None:
        raise LensError(f"The mapping file {name} needs the columns 'model' and 'arena_model' (or "
                        f"'reference_model'); it has {', '.join(map(repr, df.columns))}.")
    if target != "arena_model":
        df = df.rename(columns={target: "arena_model"})
    dup = df["model"][df["model"].duplicated()]
    if not dup.empty:
        raise LensError(f"The mapping file {name} lists the model {dup.iloc[0]!r} twice.")
    if "arena_display" not in df.columns:
        df["arena_display"] = ""
    return df


def map_reference(ref: pd.Series, mapping: pd.DataFrame, models: Iterable[str] | None = None) -> pd.Series:
    """Re-index a reference by dataset model names: through ``mapping`` (model → arena_model /
    arena_display) for the models it lists, then, when ``models`` (the dataset's names) is given, by
    name matching (``name_match``) for the models no map lists, and only those models; what is left
    out goes to attrs."""
    lower = {str(k).lower(): k for k in ref.index}
    out, how, unmapped, missing = {}, {}, [], []
    dataset_names = None if models is None else set(map(str, models))
    listed = set(mapping["model"])
    for row in records(mapping):
        if dataset_names is not None and row.model not in dataset_names:
            continue  # a map row for a name the dataset does not have (kept for a later import)
        names = [n for n in (row.arena_model, row.arena_display) if n]
        if not names:
            unmapped.append(row.model)
            continue
        hit = next((lower[n.lower()] for n in names if n.lower() in lower), None)
        if hit is None:
            missing.append(row.model)
        else:
            out[row.model] = (hit, float(ref[hit]))
            how[row.model] = str(getattr(row, "source", "") or "map")
    found = match_names(sorted((dataset_names or set()) - listed), ref.index,
                        taken=[h for h, _ in out.values()])
    for model, name in found.matched.items():
        out[model] = (name, float(ref[name]))
        how[model] = found.how[model]
    s = pd.Series({m: v for m, (_, v) in out.items()}, dtype="float64", name="rating")
    s = s.sort_values(ascending=False, kind="stable")
    s.index.name = "model"
    s.attrs["unmapped"] = unmapped
    s.attrs["missing"] = missing
    s.attrs["unmatched"] = list(found.unmatched)
    s.attrs["ambiguous"] = {m: list(c) for m, c in found.ambiguous.items()}
    s.attrs["reference_names"] = {m: n for m, (n, _) in out.items()}
    s.attrs["how"] = how
    return s


def _listed(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def reference_notes(ref: pd.Series) -> list[str]:
    """Sentences for what ``map_reference`` left out: mapped models the reference lacks, models a map
    gives no reference name, names that match no reference name, and names that match several."""
    out = []
    missing, unmapped = ref.attrs.get("missing") or [], ref.attrs.get("unmapped") or []
    unmatched, ambiguous = ref.attrs.get("unmatched") or [], ref.attrs.get("ambiguous") or {}
    if missing:
        out.append(
            f"reference: {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} mapped but not in the "
            "reference, so left out of the distances."
        )
    if unmapped:
        out.append(f"reference: the mapping gives {', '.join(unmapped)} no reference name, so "
                   f"{'it is' if len(unmapped) == 1 else 'they are'} left out of the distances.")
    if unmatched:
        out.append(f"reference: {len(unmatched)} model name(s) match no reference name "
                   f"({_listed(unmatched)}); a model map (datasets map, or the Data page) can place them.")
    if ambiguous:
        parts = [f"{m} ({' or '.join(c)})" for m, c in sorted(ambiguous.items())]
        out.append(f"reference: {len(parts)} model name(s) match ambiguously and were not mapped: "
                   f"{_listed(parts)}; a model map decides.")
    return out


def model_map(store: Store | None, dataset: str, map_file: str | Path | None = None) -> pd.DataFrame:
    """The explicit map entries for a dataset, one row per model (model, arena_model, arena_display,
    source), the first layer that lists a model winning: ``map_file`` ('file'), the map stored with
    the dataset ('stored'), the shipped mapping ('shipped'). Models listed by none are left to name
    matching (``map_reference``)."""
    from engine.store.model_maps import stored_map

    layers = []
    if map_file is not None:
        layers.append(load_mapping_file(map_file).assign(source="file"))
    if store is not None and store.has_dataset(dataset):
        own = stored_map(store, dataset).rename(columns={"reference_model": "arena_model"})
        layers.append(own.assign(arena_display="", source="stored"))
    if has_mapping(dataset):
        layers.append(load_mapping(dataset).assign(source="shipped"))
    cols = ["model", "arena_model", "arena_display", "source"]
    if not layers:
        return pd.DataFrame({c: pd.Series(dtype=str) for c in cols})
    merged = pd.concat([layer[cols] for layer in layers], ignore_index=True)
    return merged.drop_duplicates("model", keep="first").reset_index(drop=True)


def dataset_model_names(store: Store, dataset: str) -> list[str]:
    """Every model name a dataset's verdicts compare, sorted (stored or read in place:
    ``engine.store.datasets.dataset_models``)."""
    from engine.store.datasets import dataset_models

    return sorted(str(m) for m in dataset_models(store, dataset) if m is not None)


def name_map_table(store: Store, dataset: str, category: str | None = None, path: str | Path | None = None,
                   map_file: str | Path | None = None) -> pd.DataFrame:
    """How each of the dataset's models reaches the reference, one row per model: its reference name
    (empty when none), how (file / stored / shipped map, exact, normalised, not on the reference,
    missing from the reference, ambiguous, unmatched), the candidates of an ambiguous name, and the
    reference rating; ``attrs["notes"]``: ``reference_notes``. What the Data page and ``datasets map``
    show."""
    models = dataset_model_names(store, dataset)
    ref = map_reference(load_reference(path, category), model_map(store, dataset, map_file), models)
    names, how = ref.attrs["reference_names"], dict(ref.attrs["how"])
    how.update({m: "not on the reference" for m in ref.attrs["unmapped"]})
    how.update({m: "missing from the reference" for m in ref.attrs["missing"]})
    how.update({m: "ambiguous" for m in ref.attrs["ambiguous"]})
    how.update({m: "unmatched" for m in ref.attrs["unmatched"]})
    table = pd.DataFrame({
        "model": models,
        "reference_model": [names.get(m, "") for m in models],
        "how": [how.get(m, "unmatched") for m in models],
        "candidates": [", ".join(ref.attrs["ambiguous"].get(m, [])) for m in models],
        "rating": [ref.get(m, np.nan) for m in models],
    })
    for col in ("model", "reference_model", "how", "candidates"):  # text even with no model: an empty list
        table[col] = table[col].fillna("").astype(str)  # makes a float column, which no text editor takes
    table.attrs["notes"] = reference_notes(ref)
    return table


def arena_category(dataset: str, category: str, path: str | Path | None = None) -> str:
    """The reference category for a dataset category (data/mappings/<dataset>.categories.csv, with
    fallback)."""
    mp = mapping_path(dataset, "categories")
    if mp is None:
        raise LensError(
            f"There is no category mapping for dataset {dataset!r} (its name is not a plain file name)."
        )
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


def reference_category(dataset: str, category: str, path: str | Path | None = None) -> tuple[str, str]:
    """(the reference category for a dataset category, a note when it is a stand-in): the dataset's
    category mapping when it has one (``arena_category``), else the reference category of the same
    name, else the overall one (``full``), said in the note."""
    if has_mapping(dataset, "categories"):
        return arena_category(dataset, category, path), ""
    cats = reference_categories(path)
    if category in cats:
        return category, ""
    return DEFAULT_CATEGORY, (f"the reference has no category {category!r} and dataset {dataset} no category "
                              f"mapping, so its overall ranking ({DEFAULT_CATEGORY}) stands in")


def reference_for_dataset(
    dataset: str, category: str | None = None, path: str | Path | None = None, store: Store | None = None,
    map_file: str | Path | None = None,
) -> pd.Series:
    """The reference ratings by the dataset's model names (``category`` is a reference category).
    Without ``store`` only the shipped mapping (and ``map_file``) place names; with it, the stored map
    too, and the dataset's other names are matched by name (``map_reference``)."""
    models = dataset_model_names(store, dataset) if store is not None and store.has_dataset(dataset) else None
    mapping = model_map(store, dataset, map_file)
    if models is None and mapping.empty:
        load_mapping(dataset)  # says there is no mapping, in one sentence
    return map_reference(load_reference(path, category), mapping, models)


# ----------------------------------------------------------------------------- the reference of a dataset
# choice


def own_truth(store: Store, dataset: str) -> tuple[pd.Series | None, str]:
    """The synthetic ground truth that belongs to ``dataset`` now, or (None, why not).

    A truth is used only when the dataset is flagged synthetic and the truth names every model
    its verdicts compare: rows left under a name by a store written before ingest moved them with
    a rename (or cleared them on a delete) describe other verdicts, so they are refused here.
    """
    from engine.ingest.synthetic import synthetic_truth
    from engine.store.datasets import dataset_models, is_synthetic

    if not is_synthetic(store, dataset):
        return None, "not a synthetic dataset"
    try:
        truth = synthetic_truth(store, dataset)
    except LensError as exc:
        return None, str(exc)
    models = dataset_models(store, dataset)
    unknown = sorted(models - set(truth.index))
    if unknown:
        return None, (f"the stored ground truth of {dataset} does not name {len(unknown)} of its models "
                      f"(e.g. {unknown[0]}), so it belongs to other verdicts and is not used")
    return truth, f"ground truth of the synthetic dataset, {len(truth)} models"


def reference_for(
    dataset: str, category: str | None, store: Store | None = None
) -> tuple[pd.Series | None, str]:
    """The reference ratings for the current choice and a note saying which, or (None, why not).

    A synthetic dataset (with ``store`` given) is measured against its own ground truth
    (``own_truth``). Otherwise the category goes through the dataset's category mapping to an
    LMArena category (``reference_category``); the dataset's names are placed by its maps and by name
    (``reference_for_dataset``), and fewer than two placed models means no reference (the pages then
    leave the reference columns out). Without ``store`` only a shipped mapping places names. The app
    caches the result per dataset version (a global sequence: every import, rename, replace or map
    change takes a new one), so a renamed, replaced or re-mapped dataset is looked up again.
    """
    stale = ""
    if store is not None:
        truth, why = own_truth(store, dataset)
        if truth is not None:
            return truth, why
        if "ground truth" in why:
            stale = f"; {why}"
    if store is None and not has_mapping(dataset):  # said without the server's mapping folder path
        return None, f"dataset {dataset} has no model-name mapping to the LMArena reference{stale}"
    stand_in = ""
    try:
        ref_cat, stand_in = reference_category(dataset, category) if category else (None, "")
        ref = reference_for_dataset(dataset, ref_cat, store=store)
    except LensError as exc:
        return None, str(exc).rstrip(".") + stale
    if len(ref) < 2:
        left = (ref.attrs.get("unmatched") or []) + list(ref.attrs.get("ambiguous") or {})
        return None, (f"fewer than two models of {dataset} are on the reference leaderboard"
                      + (f" ({len(left)} name(s) match no reference name; the Data page's reference map "
                         "can place them)" if left else "") + stale)
    how = ref.attrs.get("how") or {}
    matched = sum(v in ("exact", "normalised") for v in how.values())
    by_name = f", {matched} by name" if matched else ""
    return ref, (f"LMArena reference, category {ref_cat or 'full'}, {len(ref)} mapped models{by_name}"
                 + (f" ({stand_in})" if stand_in else "") + stale)


# ----------------------------------------------------------------------------- reference ranks of a stack's
# models


def reference_ranks(reference: pd.Series, models: tuple[str, ...]) -> np.ndarray:
    """Ranks 1..n (1 = highest reference rating) of ``models`` in their given order."""
    missing = [m for m in models if m not in reference.index]
    if missing:
        raise LensError(f"The reference has no rating for model(s) {', '.join(missing)}.")
    r = reference.reindex(list(models)).to_numpy(dtype=np.float64)
    return ordinal_ranks(r[None, :])[0]


def reference_of(reference: pd.Series | Mapping[str, pd.Series], category: str | None) -> pd.Series:
    """The reference ranking for ``category`` (one series serves every category)."""
    if isinstance(reference, pd.Series):
        return reference
    if category is not None and category in reference:
        return reference[category]
    raise LensError(f"No reference ranking is given for category {category!r}.")


def common_models(
    stack: GraphStack, reference: pd.Series | Mapping[str, pd.Series], categories: list[str]
) -> tuple[str, ...]:
    """Models of the stack that every needed reference rates (rankings are compared on these)."""
    refs = (
        [reference] if isinstance(reference, pd.Series) else [reference_of(reference, c) for c in categories]
    )
    keep = [m for m in stack.models if all(m in r.index and np.isfinite(r[m]) for r in refs)]
    if len(keep) < 2:
        raise LensError(
            "Fewer than two of the dataset's models have a reference rating, so no ranking can be compared."
        )
    return tuple(keep)


def keep_map(store: Store, dataset: str, mapping: pd.DataFrame) -> int:
    """Keep ``mapping`` (columns model, reference_model) as the dataset's map, after the import's name rules:
    a name that renders blank or as another name matches no stored model (the import refuses such names) and
    would hide itself, so it is refused in one sentence and nothing is kept. Returns the new version
    (``engine.store.model_maps.set_stored_map``, which owns the write and its structural checks)."""
    rows = mapping.loc[:, list(MAP_FRAME_COLUMNS)].fillna("").astype(str)
    for col, what in (("model", "model"), ("reference_model", "reference model")):
        for line, name in enumerate(rows[col].str.strip(), start=1):  # a map is a few hundred rows at most
            problem = name_problem(unicodedata.normalize("NFC", name)) if name else None
            if problem:
                raise LensError(f"Row {line} of the model map names the {what} {name[:80]!r}, which "
                                f"{problem}; nothing was kept.")
    return set_stored_map(store, dataset, mapping)
