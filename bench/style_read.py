"""Read cost of the style counts: ``store_vote_rows(style=True)`` beside the plain read, as processes.

    python bench/style_read.py --battles 1000000 --models 100 [--dir /tmp/stylebench] [--repeat 3]

Writes an arena-shaped store (bench/count_path.py's generator) whose verdicts carry their eight style
counts, as a conv_metadata or explicit-column import stores them; then runs, each as its own process under
``/usr/bin/time -v``, a read of the dataset's ``VoteRows`` (``engine.ranking.vote_query.store_vote_rows``)
with and without ``style=True``, and prints wall time, user+sys CPU and peak RSS of each (best wall of
``--repeat`` runs). Nothing is asserted. The counts of answer texts (the third source) are made once per
dataset version and then read like stored ones; their one-time counting is timed by ``--texts N``: N
answers of ~2,000 characters of markdown counted through ``engine.style.features.answer_counts``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.count_path import timed, write_arena_store  # noqa: E402

READ = """
import sys, time
from engine.store.connection import Store
from engine.ranking.vote_query import store_vote_rows
store = Store(sys.argv[1], read_only=True)
t = time.perf_counter()
rows = store_vote_rows(store, "arena", style=sys.argv[2] == "style")
print(len(rows), time.perf_counter() - t, file=sys.stderr)
"""

ANSWER = ("# Heading\n\nSome words of an answer, with **bold** and __more__.\n\n1. first item\n"
          "2. second item\n- a bullet\n- another bullet\n\n```python\nprint('no count in code')\n```\n") * 8


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--texts", type=int, default=0, help="also time counting this many answer texts once")
    ap.add_argument("--dir", help="work folder (default: a temp folder)")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="lens-stylebench-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "style.duckdb"
    if db.exists():
        db.unlink()
    write_arena_store(db, args.battles, args.models, style=True).close()
    rows = {}
    for mode in ("plain", "style"):
        runs = [timed([sys.executable, "-c", READ, str(db), mode]) for _ in range(args.repeat)]
        rows[mode] = min(runs, key=lambda r: r["wall_s"])
    rows["style/plain wall"] = round(rows["style"]["wall_s"] / rows["plain"]["wall_s"], 3)
    if args.texts:
        rows["texts"] = count_texts(work, args.texts)
    print(json.dumps({"battles": args.battles, "models": args.models, **rows}, indent=1))


COUNT = """
import sys, time
from engine.store.connection import Store
from engine.style.features import answer_counts
store = Store(sys.argv[1])
t = time.perf_counter()
counts = answer_counts(store, "texts")
print(counts.keys.size, time.perf_counter() - t, file=sys.stderr)
"""


def count_texts(work: Path, n: int) -> dict:
    """Time the one-time counting of ``n`` stored answers (a process), then a second read (cached)."""
    import duckdb

    from engine.store.connection import Store

    db = work / "texts.duckdb"
    if db.exists():
        db.unlink()
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO datasets (name, version) VALUES ('texts', 1)")
    con.execute("INSERT INTO answers (dataset, prompt_id, variant, turn, model, text) "
                "SELECT 'texts', 'p' || i, 0, 1, 'm', ? || i FROM range(?) t(i)", [ANSWER, n])
    con.close()
    first = timed([sys.executable, "-c", COUNT, str(db)])
    again = timed([sys.executable, "-c", COUNT, str(db)])
    return {"answers": n, "chars_each": len(ANSWER), "first_count": first, "cached_read": again}


if __name__ == "__main__":
    main()
