"""Generated verdict datasets of every shape the importer accepts, for the seam tests.

``Shape`` names what a dataset holds (judges, annotators, turns, paraphrase variants, sampling
replicates, presentation orders, ties, invalid rows, repeated battles, one pair per prompt, sparse
many-model graphs); ``verdicts(shape)`` draws its rows from ``shape.seed``; ``shapes()`` is the
hypothesis strategy over shapes; ``imported(tmp, shape)`` writes the rows as a real CSV verdict file
and imports it into a real DuckDB store in a temp folder, as ``python -m engine import`` does.

Hypothesis draws the shape (a handful of small integers and flags, so a failure shrinks to a
readable one); numpy draws the rows from the shape's seed, so one example builds one store.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import strategies as st

ORDERS = ("both", "AB", "none", "mixed")
"""How verdicts are presented: every pair in both orders (two rows, ``order`` AB then BA, naming the
same model_a, that combine into one vote), one row shown AB, one row with no order recorded, or each
pair by chance one of those."""


@dataclass(frozen=True)
class Shape:
    """What a generated dataset holds. ``paraphrases`` / ``samples``: variants per prompt besides the
    original (kinds paraphrase / sample); ``wider_samples``: sampling replicates compare every pair of
    the prompt's models while originals and paraphrases compare a sparse subset (so the coverage
    reference over all graphs differs from the one over the perturbed pool); ``one_pair``: each prompt
    compares one model pair (arena shape); ``sparse``: 70 models, each prompt a few of them;
    ``repeats``: some verdicts repeated as further battles (own battle id) or as the same row again;
    ``annotators``: human voters per verdict (0: none recorded); ``prob``: judges give P(A wins)."""

    seed: int
    n_models: int = 5
    n_prompts: int = 6
    judges: int = 1
    annotators: int = 0
    turns: int = 1
    paraphrases: int = 0
    samples: int = 0
    wider_samples: bool = False
    orders: str = "none"
    tie_p: float = 0.15
    invalid_p: float = 0.0
    repeats: bool = False
    one_pair: bool = False
    sparse: bool = False
    categories: int = 1
    prob: bool = False

    @property
    def one_vote_per_graph_pair(self) -> bool:
        """Each (graph, model pair) holds one vote, so the graph's combined edge is that vote and the
        graph stack's win / tie counts equal the vote counts."""
        return not self.repeats and self.annotators == 0


def _pairs(rng: np.random.Generator, shape: Shape, models: np.ndarray, dense: bool) -> list[tuple[int, int]]:
    """The model pairs one graph compares: all of ``models`` when ``dense``, else a random part
    holding at least one triangle (so most graphs can carry a cycle)."""
    allp = list(itertools.combinations(models.tolist(), 2))
    if dense or len(models) < 3:
        return allp
    keep = [p for p in allp if rng.random() < 0.6]
    tri = set(itertools.combinations(models[:3].tolist(), 2))
    return sorted(set(keep) | tri)


def verdicts(shape: Shape) -> pd.DataFrame:
    """The rows of a dataset of this shape, in the import format (one row per verdict)."""
    rng = np.random.default_rng(shape.seed)
    n_models = 70 if shape.sparse else shape.n_models
    names = np.array([f"m{i:02d}" for i in range(n_models)], dtype=object)
    strength = rng.normal(0.0, 1.0, n_models)
    variants = ([(0, "original")] + [(v, "paraphrase") for v in range(1, shape.paraphrases + 1)]
                + [(shape.paraphrases + v, "sample") for v in range(1, shape.samples + 1)])
    rows: list[dict] = []
    for q in range(shape.n_prompts):
        if shape.one_pair:
            members = np.sort(rng.choice(n_models, 2, replace=False))
        else:
            size = int(rng.integers(3, 6)) if shape.sparse else int(rng.integers(3, n_models + 1))
            members = np.sort(rng.choice(n_models, size, replace=False))
        base_pairs = _pairs(rng, shape, members, dense=not shape.wider_samples)
        category = f"c{q % shape.categories}"
        for judge, (variant, kind), turn in itertools.product(range(shape.judges), variants,
                                                              range(1, shape.turns + 1)):
            pairs = _pairs(rng, shape, members, dense=True) if kind == "sample" else base_pairs
            for i, j in pairs:
                verdict = _verdict(rng, shape, strength, i, j)
                for copy in range(1 + int(shape.repeats and rng.random() < 0.3)):
                    orders = _orders(rng, shape)
                    swap = rng.random() < 0.5  # which model the row names model_a
                    for order in orders:
                        a, b = (j, i) if swap else (i, j)
                        win = {"A": "B", "B": "A"}.get(verdict, verdict) if swap else verdict
                        if order == "BA" and rng.random() < 0.2 and win in ("A", "B"):
                            win = "tie"  # the second presentation does not always agree
                        row = {
                            "judge": f"j{judge}",
                            "prompt_id": str(q + 1),
                            "category": category,
                            "variant": variant,
                            "variant_kind": kind,
                            "turn": turn,
                            "model_a": names[a],
                            "model_b": names[b],
                            "winner": win,
                            "order": None if order == "none" else order,
                            "annotator": f"h{rng.integers(shape.annotators)}" if shape.annotators else None,
                            "battle_id": f"b{copy}" if shape.repeats else None,
                        }
                        if shape.prob:
                            p = {"A": 0.8, "B": 0.2, "tie": 0.5, "invalid": np.nan}[win]
                            row["prob_a"] = p
                        rows.append(row)
                    if shape.repeats and copy == 0 and rng.random() < 0.15:
                        rows.append(dict(rows[-1]))  # the very same row again: a repeated vote
    return pd.DataFrame(rows)


def _verdict(rng: np.random.Generator, shape: Shape, strength: np.ndarray, i: int, j: int) -> str:
    u = rng.random()
    if u < shape.invalid_p:
        return "invalid"
    if u < shape.invalid_p + shape.tie_p:
        return "tie"
    return "A" if rng.random() < 1.0 / (1.0 + np.exp(strength[j] - strength[i])) else "B"


def _orders(rng: np.random.Generator, shape: Shape) -> tuple[str, ...]:
    kind = shape.orders if shape.orders != "mixed" else ORDERS[int(rng.integers(3))]
    return {"both": ("AB", "BA"), "AB": ("AB",), "none": ("none",)}[kind]


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """The rows as a CSV verdict file (empty cells for missing values)."""
    frame.to_csv(path, index=False)
    return path


def import_csv(store, path: Path, dataset: str = "seam"):
    """Import one verdict file into ``store`` as the CLI's ``import`` does (all or nothing)."""
    from engine.ingest.importer import import_files

    return import_files(store, [path], dataset)


_MIGRATED: list[Path] = []  # this process's migrated empty store file, made on first use


def fresh_store(db: Path):
    """A new, empty Store at ``db``: a copy of one migrated empty file made once per process (as the
    ``empty_store`` fixture does), then opened. Creating a store runs every migration, each its own
    commit: ~0.12 s of CPU against ~0.025 s for the copy and the open. For the helpers here that are
    not fixtures (``imported``, test_pages_truncation_pool's ``new_store``)."""
    import shutil
    import tempfile

    from engine.store.connection import Store

    if not _MIGRATED:
        template = Path(tempfile.mkdtemp(prefix="lens-test-migrated-")) / "lens.duckdb"
        Store(template).close()
        _MIGRATED.append(template)
    shutil.copyfile(_MIGRATED[0], db)
    return Store(db)


def imported(folder: Path, shape: Shape, dataset: str = "seam"):
    """(a fresh on-disk Store holding the shape's dataset, its database path, the generated rows).

    The store's first-use step (importing the shipped vicuna80 when a CLI command opens it) is
    recorded as done, so a CLI call on it costs no 1 s import of data the seam tests never read."""
    from engine.ingest.shipped import INIT_STEP
    from engine.ingest.shipped_counts import INIT_STEP_ARENA_COUNTS
    from engine.store.init_log import record_init_step

    folder.mkdir(parents=True, exist_ok=True)
    rows = verdicts(shape)
    db = folder / "lens.duckdb"
    store = fresh_store(db)
    record_init_step(store, INIT_STEP, "seam tests: no default dataset")
    record_init_step(store, INIT_STEP_ARENA_COUNTS, "seam tests: no shipped arena counts")
    import_csv(store, write_csv(rows, folder / "verdicts.csv"), dataset)
    return store, db, rows


def stack_and_reference(folder: Path, shape: Shape):
    """(the dense graph stack of the shape's imported dataset, a reference score per model drawn from
    the shape's seed): what the keep-K and mu curve tests slide over on generated data."""
    from engine.graphs.buckets import build_buckets
    from engine.graphs.stack import GRAPH_COLUMNS

    store, _, _ = imported(folder, shape)
    try:
        stack = build_buckets(store.verdicts("seam", columns=GRAPH_COLUMNS)).dense()
    finally:
        store.close()
    reference = pd.Series(np.random.default_rng(shape.seed).normal(size=stack.n), index=list(stack.models))
    return stack, reference


@st.composite
def shapes(draw, *, allow_sparse: bool = True, allow_prob: bool = True) -> Shape:
    """Every accepted shape, small: hypothesis draws the shape, the seed draws the rows."""
    sparse = allow_sparse and draw(st.integers(0, 5)) == 0
    one_pair = not sparse and draw(st.integers(0, 4)) == 0
    return Shape(
        seed=draw(st.integers(0, 2**31 - 1)),
        n_models=draw(st.integers(3, 6)),
        n_prompts=draw(st.integers(30, 45)) if sparse else draw(st.integers(2, 7)),
        judges=draw(st.integers(1, 3)),
        annotators=draw(st.sampled_from((0, 0, 1, 2))),
        turns=draw(st.integers(1, 2)),
        paraphrases=draw(st.integers(0, 2)),
        samples=draw(st.integers(0, 2)),
        wider_samples=draw(st.booleans()),
        orders=draw(st.sampled_from(ORDERS)),
        tie_p=draw(st.sampled_from((0.0, 0.15, 0.4))),
        invalid_p=draw(st.sampled_from((0.0, 0.0, 0.05))),
        repeats=draw(st.booleans()),
        one_pair=one_pair,
        sparse=sparse,
        categories=draw(st.integers(1, 2)),
        prob=allow_prob and draw(st.integers(0, 3)) == 0,
    )


def listing_by_scan(db) -> dict[str, dict]:
    """Every dataset's listing counts the way the listing counted them before the per-version summaries
    (a scan of every verdict and pair count): the second path the summaries are checked against. An attached
    dataset (which that scan counted as empty) is counted from its Parquet files read with pandas, its
    winners as the attach reads them (``error`` is invalid); ``battles`` adds each pair-count row's
    outcomes in Python."""
    import glob as globlib

    from engine.store.connection import Store

    with Store(db) as s:
        frame = s.datasets().set_index("name")
        models = {n: len(s.cursor().execute(
            "SELECT model_a FROM verdicts WHERE dataset = $d UNION SELECT model_b FROM verdicts WHERE "
            "dataset = $d UNION SELECT model_a FROM pair_counts WHERE dataset = $d "
            "UNION SELECT model_b FROM pair_counts WHERE dataset = $d", {"d": n}).fetchall())
            for n in frame.index}
        pair_rows = s.cursor().execute("SELECT dataset, wins_a, wins_b, ties, both_bad FROM pair_counts"
                                       ).fetchall()
        attached = dict(s.cursor().execute("SELECT name, files FROM attached_datasets").fetchall())
    out = {n: {"verdicts": int(r.verdicts), "invalid": int(r.invalid), "judges": int(r.judges),
               "prompts": int(r.prompts), "models": models[n], "battles": int(r.verdicts) - int(r.invalid)}
           for n, r in frame.iterrows()}
    for d, *counts in pair_rows:
        out[d]["battles"] += sum(int(c or 0) for c in counts)
    for name, files in attached.items():
        v = pd.concat([pd.read_parquet(f) for f in sorted(globlib.glob(files))], ignore_index=True)
        bad = v["winner"].isin(["invalid", "error"])
        out[name] = {"verdicts": len(v), "invalid": int(bad.sum()),
                     "judges": v["judge"].nunique() if "judge" in v else 1,
                     "prompts": v["prompt_id"].nunique(),
                     "models": len(set(v["model_a"]) | set(v["model_b"])), "battles": int((~bad).sum())}
    return out


def store_of_frames(folder: Path, frames: dict[str, pd.DataFrame]):
    """A new store at ``folder / "lens.duckdb"`` holding one dataset per frame (its key the dataset's name),
    each imported from a CSV file as the CLI's ``import`` does."""
    store = fresh_store(folder / "lens.duckdb")
    for name, frame in frames.items():
        import_csv(store, write_csv(frame, folder / f"{name}.csv"), name)
    return store
