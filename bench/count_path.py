"""Sanity benchmark of the count path: `leaderboard` as a process beside evalica on the same battles.

    python bench/count_path.py --battles 1000000 --models 100 [--dir /tmp/countbench] [--bootstrap 100]

Generates an arena-shaped log (one model pair per prompt, 10% ties, win probability rising with the
model index) straight into a store with DuckDB, and the same battles as Parquet; then runs, as
separate processes under ``/usr/bin/time -v``: evalica's ``bradley_terry`` reading the Parquet with
pandas, ``python -m engine leaderboard`` and ``leaderboard --bootstrap B``, and ``leaderboard`` over
the Parquet attached in place (``datasets attach``). Prints wall time, user+sys CPU and peak RSS.
Nothing is asserted. The product benchmark (import, diagnose, more sizes) is bench/ of issue 12 item 5.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PEER = """
import sys, evalica, pandas as pd
df = pd.read_parquet(sys.argv[1])
w = df["winner"].map({"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw})
evalica.bradley_terry(df["model_a"], df["model_b"], w)
"""


def write_arena_store(db: Path, battles: int, models: int, pad: int = 3, style: bool = False):
    """A store whose dataset ``arena`` holds ``battles`` one-pair prompts over ``models`` models (names
    ``model_`` + the index zero-padded to ``pad`` digits; ~10 % ties, the rest logistic in the index gap);
    ``style``: each verdict also carries its answers' style counts (``tokens_a .. bold_b``, as a
    conv_metadata import stores them: tokens 0-1999, headers 0-5, lists 0-19, bold 0-9, drawn per side);
    returns the open DuckDB connection for what a caller adds."""
    import duckdb

    from engine.store.connection import Store

    Store(db).close()
    con = duckdb.connect(str(db))
    other = "(CASE WHEN b >= a THEN b + 1 ELSE b END)"
    con.execute("INSERT INTO datasets (name, version) VALUES ('arena', 1)")
    counts = ""
    if style:
        tops = {"tokens": 2000, "headers": 6, "lists": 20, "bold": 10}
        counts = "".join(f", (hash(i, {k}) % {top})::DOUBLE" for k, top in enumerate([*tops.values()] * 2))
    names = ("tokens", "headers", "lists", "bold")
    style_cols = "".join(f", {f}_{s}" for s in "ab" for f in names) if style else ""
    con.execute(f"""
        INSERT INTO verdicts (dataset, judge, prompt_id, variant, turn, model_a, model_b, winner, source_file,
                              source_line{style_cols})
        SELECT 'arena', 'judge', 'p' || i, 0, 1, 'model_' || lpad(a::VARCHAR, {pad}, '0'),
               'model_' || lpad({other}::VARCHAR, {pad}, '0'),
               CASE WHEN r < 0.1 THEN 'tie'
                    WHEN r < 0.1 + 0.9 / (1 + exp(-(a - {other}) / {models / 6})) THEN 'A' ELSE 'B' END,
               'battles.jsonl', i{counts}
        FROM (SELECT i, (hash(i) % {models})::INT a, (hash(i * 7 + 1) % {models - 1})::INT b, random() r
              FROM range({battles}) t(i))""")
    return con


def generate(db: Path, parquet: Path, battles: int, models: int) -> None:
    """A store with dataset ``arena`` and the same battles as one Parquet file."""
    con = write_arena_store(db, battles, models)
    con.execute(
        f"COPY (SELECT prompt_id, model_a, model_b, winner FROM verdicts) TO '{parquet}' (FORMAT parquet)"
    )
    con.close()


def timed(cmd: list[str]) -> dict:
    """Wall seconds, user+sys CPU seconds and peak RSS (MB) of one process."""
    out = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    err = out.stderr

    def grab(pattern: str) -> str:
        return re.search(pattern, err).group(1)

    wall = grab(r"Elapsed \(wall clock\) time.*: (\S+)")
    parts = [float(x) for x in wall.split(":")]
    secs = sum(p * 60 ** k for k, p in enumerate(reversed(parts)))
    cpu = float(grab(r"User time \(seconds\): (\S+)")) + float(grab(r"System time \(seconds\): (\S+)"))
    return {
        "wall_s": secs,
        "cpu_s": cpu,
        "rss_mb": int(grab(r"Maximum resident set size \(kbytes\): (\d+)")) / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=100)
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--dir", help="work folder (default: a temp folder)")
    args = ap.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="countbench-"))
    work.mkdir(parents=True, exist_ok=True)
    db, pq, att = work / "arena.duckdb", work / "arena.parquet", work / "attached.duckdb"
    if not db.exists():
        generate(db, pq, args.battles, args.models)
    if not att.exists():
        subprocess.run(
            [sys.executable, "-m", "engine", "--db", str(att), "datasets", "attach", "arena", str(pq)],
            check=True,
            cwd=REPO,
            capture_output=True,
        )
    peer = work / "peer.py"
    peer.write_text(PEER)
    py = sys.executable
    def board(store: Path, *extra: str) -> list[str]:
        return [py, "-m", "engine", "--db", str(store), "leaderboard", "--dataset", "arena", *extra,
                "--format", "csv"]

    runs = {
        "evalica bradley_terry (Parquet via pandas)": [py, str(peer), str(pq)],
        "leaderboard": board(db),
        f"leaderboard --bootstrap {args.bootstrap}": board(db, "--bootstrap", str(args.bootstrap)),
        "leaderboard (Parquet attached in place)": board(att),
    }
    print(f"{args.battles:,} battles x {args.models} models")
    print("| process | wall s | user+sys s | peak RSS MB |\n| --- | --- | --- | --- |")
    for name, cmd in runs.items():
        r = timed(cmd)
        print(f"| {name} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['rss_mb']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
