"""Issue 26, point 6: the command line at 1M and 10M arena battles, this checkout beside another.

    python bench/scale10m.py --base /work/wt/scale10m-base            # 1M x 100 and 10M x 200
    python bench/scale10m.py --base DIR --sizes 1m --steps import     # one size, one step
    python bench/scale10m.py --base DIR --sizes 10m --steps leaderboard,bootstrap,datasets \
        --store 10m=/work/benchdata/10m/store-10000000x200.duckdb --repeats 3   # on a built store

Each step is the command a user runs, as its own process (bench/procmeter.py: wall time and the peak
RSS of the process tree, capped): ``import FILE --dataset bench --skip-invalid`` into a fresh store,
then ``leaderboard --dataset bench`` and ``leaderboard --dataset bench --bootstrap 100 --seed 0`` on
that store, ``datasets`` (the listing), and the evalica peer (bench/peer_evalica.py) on the same Parquet
file. ``--store SIZE=PATH`` skips the import for that size and runs the other steps on a copy of PATH per
checkout (each its own copy: a command may write the store's summaries). The two checkouts alternate step
by step in the same run (``--repeats`` times), so the load average (printed beside each row) is shared;
CPU seconds (user + system of the process) are printed beside the wall time.
The Parquet files are made once by bench/battlegen.py (arena shape) under ``--data`` (by default
/work/benchdata/10m, shared with the listing's benchmark). Nothing is asserted: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from procmeter import measure  # noqa: E402

SIZES = {"1m": (1_000_000, 100), "10m": (10_000_000, 200)}


def data_file(folder: Path, size: str) -> Path:
    """The arena-shaped Parquet file of ``size`` (made once)."""
    n, models = SIZES[size]
    path = folder / f"arena-{n}x{models}.parquet"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(BENCH / "battlegen.py"), "arena", str(path), "--n", str(n),
                        "--models", str(models)], check=True)
    return path


def steps(store: Path, parquet: Path, chosen: list[str]) -> list[tuple[str, list[str]]]:
    """The measured commands on ``store`` (run in a checkout's folder, so its engine is the one timed)."""
    cli = [sys.executable, "-m", "engine", "--db", str(store)]
    out = []
    if "import" in chosen:
        out.append(("import", [*cli, "import", str(parquet), "--dataset", "bench", "--skip-invalid"]))
    if "leaderboard" in chosen:
        out.append(("leaderboard", [*cli, "leaderboard", "--dataset", "bench"]))
    if "bootstrap" in chosen:
        out.append(("leaderboard --bootstrap 100",
                     [*cli, "leaderboard", "--dataset", "bench", "--bootstrap", "100", "--seed", "0"]))
    if "datasets" in chosen:
        out.append(("datasets", [*cli, "datasets"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the other checkout (e.g. a worktree of main)")
    ap.add_argument("--sizes", default="1m,10m")
    ap.add_argument("--steps", default="import,leaderboard,bootstrap,peer")
    ap.add_argument("--data", type=Path, default=Path("/work/benchdata/10m"))
    ap.add_argument("--cap-gb", type=float, default=8.0)
    ap.add_argument("--timeout-s", type=float, default=3600.0)
    ap.add_argument("--store", action="append", default=[], metavar="SIZE=PATH",
                    help="a built store holding dataset bench for SIZE: no import step, the others on copies")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of the steps (each checkout once a round)")
    args = ap.parse_args()
    chosen = args.steps.split(",")
    built = dict(item.split("=", 1) for item in args.store)
    work = Path(tempfile.mkdtemp(prefix="scale10m-"))
    rows = ["| size | step | checkout | wall s | cpu s | peak RSS GB | rows/s | status | load (1 min) |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |"]
    try:
        for size in args.sizes.split(","):
            parquet = data_file(args.data, size)
            n = SIZES[size][0]
            checkouts = {"base": args.base.resolve(), "this": REPO}
            wanted = [s for s in chosen if not (s == "import" and size in built)]
            for k in checkouts:
                if size in built:
                    shutil.copyfile(built[size], work / f"{k}-{size}.duckdb")
                    os.chmod(work / f"{k}-{size}.duckdb", 0o644)
            plans = {k: steps(work / f"{k}-{size}.duckdb", parquet, wanted) for k in checkouts}
            for _ in range(args.repeats):
                for i in range(len(plans["this"])):
                    for k, repo in checkouts.items():
                        name, cmd = plans[k][i]
                        if name == "import":  # into a fresh store every round (a second import is refused)
                            for part in ("", ".wal"):
                                Path(f"{work / f'{k}-{size}.duckdb'}{part}").unlink(missing_ok=True)
                        run = measure(cmd, cap_gb=args.cap_gb, timeout_s=args.timeout_s, cwd=repo,
                                      env={**os.environ, "PYTHONPATH": str(repo)})
                        rate = f"{n / run.wall_s:,.0f}" if name == "import" and run.ok else ""
                        rows.append(f"| {size} | {name} | {k} | {run.wall_s:.1f} | {run.cpu_s:.1f} | "
                                    f"{run.peak_gb:.2f} | {rate} | {run.status} | {os.getloadavg()[0]:.1f} |")
                        print(rows[-1], flush=True)
            if "peer" in chosen:
                run = measure([sys.executable, str(BENCH / "peer_evalica.py"), str(parquet)],
                              cap_gb=args.cap_gb, timeout_s=args.timeout_s)
                rows.append(f"| {size} | peer: pandas + evalica.bradley_terry | | {run.wall_s:.1f} | "
                            f"{run.cpu_s:.1f} | {run.peak_gb:.2f} | | {run.status} | "
                            f"{os.getloadavg()[0]:.1f} |")
                print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
