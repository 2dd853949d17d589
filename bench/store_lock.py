"""Several processes writing one store by turns: is the FILE damaged afterwards, or did a process only see
another inside it? (engine/store/file_lock.py)

Each of ``--processes`` processes opens the store as a judge run does (``keep_open=False``: the file is
let go between writes, waiting for it up to 60 s) and, ``--turns`` times, inserts 3,000 rows in one
session and reads its own count back. ``--second-store`` (the app's pattern, and any command that opens
the store twice): inside each session the process also constructs a second ``Store`` of the same path.

After each run a fresh ``duckdb.connect(path, read_only=True)`` reads every table whole (a damaged
block raises) and counts the rows; reported per run: intrusions (with ``--second-store``: the second
``Store``, opened without waiting while this process is inside the file, found another process holding
it), processes that failed (their last error line),
whether the file is whole, and whether every row is there. ``--repo`` runs another checkout's engine
(e.g. a worktree of main, for before/after in one session).

    python bench/store_lock.py [--processes 4] [--turns 20] [--runs 5] [--second-store] [--repo PATH]

Not run by CI (a benchmark, not a test).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROWS = 3000

CHILD = textwrap.dedent("""
    import sys
    from engine.store.connection import Store, StoreBusy
    path, tag, turns, second = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    store = Store(path, keep_open=False, lock_wait_s=60)
    for k in range(turns):
        with store.session():
            store.con.execute("SELECT 1")  # inside the file from here to the session's end
            if second:
                try:  # this process is inside the file: nobody else can hold it, so no wait is needed
                    Store(path, keep_open=False)
                except StoreBusy:
                    print("intrusion", flush=True)  # another process got into the file meanwhile
            store.con.execute("INSERT INTO turns SELECT ?, range, repeat('x', 300) FROM range(ROWS)", [tag])
            got = store.con.execute("SELECT count(*) FROM turns WHERE tag = ?", [tag]).fetchone()[0]
            assert got == ROWS * (k + 1), (tag, k, got)
    store.close()
""").replace("ROWS", str(ROWS))


def one_run(repo: Path, processes: int, turns: int, second: bool) -> dict:
    """One fresh store, the processes at once, then the whole-file check."""
    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lens.duckdb"
        subprocess.run([sys.executable, "-c", "import sys; from engine.store.connection import Store; "
                        "s = Store(sys.argv[1]); s.con.execute('CREATE TABLE turns (tag VARCHAR, i BIGINT, "
                        "pad VARCHAR)'); s.close()", str(db)], cwd=repo, check=True)
        argv = [sys.executable, "-c", CHILD, str(db)]
        procs = [subprocess.Popen([*argv, f"p{i}", str(turns), str(int(second))],
                                  cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(processes)]
        failed = []
        intrusions = 0
        for p in procs:
            out, err = p.communicate()
            intrusions += out.count("intrusion")
            if p.returncode:
                failed.append(err.strip().splitlines()[-1][:160] if err.strip() else f"exit {p.returncode}")
        try:
            con = duckdb.connect(str(db), read_only=True)
            for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
                con.execute(f'SELECT * FROM "{table}"').fetchall()
            rows = con.execute("SELECT count(*) FROM turns").fetchone()[0]
            con.close()
            damage = None
        except duckdb.Error as exc:
            rows, damage = None, str(exc).strip().splitlines()[0][:160]
    expected = ROWS * turns * (processes - len(failed))
    return {"failed": failed, "intrusions": intrusions, "damage": damage, "rows": rows,
            "rows_expected_at_least": expected}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--second-store", action="store_true")
    ap.add_argument("--repo", type=Path, default=REPO)
    args = ap.parse_args()
    damaged = failing = intruded = 0
    for r in range(args.runs):
        got = one_run(args.repo, args.processes, args.turns, args.second_store)
        damaged += got["damage"] is not None
        failing += bool(got["failed"])
        intruded += got["intrusions"] > 0
        print(f"run {r}: load {os.getloadavg()[0]:.1f} | intrusions {got['intrusions']} | "
              f"processes failed {len(got['failed'])} "
              f"{got['failed'][:2]} | file {'DAMAGED: ' + got['damage'] if got['damage'] else 'whole'} | "
              f"rows {got['rows']} (>= {got['rows_expected_at_least']})", flush=True)
    print(f"{args.repo}: damaged files {damaged}/{args.runs}, runs with an intrusion {intruded}/{args.runs}, "
          f"runs with a failed process {failing}/{args.runs}")


if __name__ == "__main__":
    main()
