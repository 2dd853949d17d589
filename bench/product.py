"""Product benchmark: the real command line as processes on synthetic battle logs, beside peers.

    python bench/product.py                         # every workload of issue 12 (long: 10M rows)
    python bench/product.py --sizes 100k,1m         # arena logs of these sizes, 100 and 200 models
    python bench/product.py --quick                 # about a minute: 20k x 50 and a small tournament
    python bench/product.py --workloads 1mx100,t10000x20 --app    # chosen workloads + app pages

For each workload it writes the battles as Parquet (and CSV) in chunks (bench/battlegen.py), then
runs, each as its own process with wall time and peak RSS of the process tree measured
(bench/procmeter.py) and a memory cap (``--cap-gb``; a process past it is killed and reported as
"killed past N GB"):

- ``python -m engine --db STORE import FILE --dataset bench --skip-invalid`` (Parquet, and CSV);
- ``leaderboard --dataset bench``; ``leaderboard --dataset bench --bootstrap 100 --seed 0``;
- ``diagnose --dataset bench --table overview``;
- with ``--steps ...,style`` (arena workloads): the same battles with style columns in their own store,
  ``leaderboard`` / ``leaderboard --style-control`` / ``leaderboard --ci sandwich`` and arena-rank's own
  style-controlled fit with sandwich intervals (bench/arena_rank_runner.py in /work/venvs/arena-rank);
- peers on the same Parquet file in the same run: ``bench/peer_evalica.py`` (pandas read +
  ``evalica.bradley_terry``) and ``bench/peer_fastchat.py`` (FastChat-style bootstrap: resample the
  battles, count, fit BT, ``--fastchat-rounds`` rounds).

Workload names: ``<N>x<models>`` for an arena log (``100k``, ``1m``, ``10m`` or a number), and
``t<prompts>x<models>`` for per-prompt tournaments in both presentation orders. ``--app`` also
measures every app page on the first arena workload's store (bench/app_page_timing.py). Prints one
Markdown table (and writes it with the machine's load average to ``--md``); nothing is asserted:
the machine is shared and timings are noisy, so the load average is recorded beside each workload.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent  # the checkout whose engine is measured (--repo changes it)
sys.path.insert(0, str(BENCH))

import battlegen  # noqa: E402
from procmeter import Run, measure  # noqa: E402

DEFAULT_WORKLOADS = "100kx100,100kx200,1mx100,1mx200,10mx100,10mx200,t10000x20"
QUICK_WORKLOADS = "20kx50,t200x10"


def parse_count(text: str) -> int:
    """``100k`` -> 100000, ``1m`` -> 1000000, ``2500`` -> 2500."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([km]?)", text.strip().lower())
    if not m:
        raise SystemExit(f"not a count: {text!r} (use e.g. 100k, 1m, 2500)")
    return int(float(m.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2)])


def parse_workloads(spec: str) -> list[tuple[str, int, int, str]]:
    """``1mx100,t10000x20`` -> [(kind, n, models, label), …]."""
    out = []
    for item in filter(None, (s.strip() for s in spec.split(","))):
        kind = "tournament" if item.startswith("t") else "arena"
        body = item[1:] if kind == "tournament" else item
        n_text, _, m_text = body.partition("x")
        n, models = parse_count(n_text), int(m_text or 100)
        label = (f"tournaments {n:,} prompts x {models} models x 2 orders" if kind == "tournament"
                 else f"arena {n:,} battles x {models} models")
        out.append((kind, n, models, label))
    return out


def uptime() -> str:
    """The load average line, recorded with each workload (the machine is shared)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def engine_cmd(store: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "engine", "--db", str(store), *args]


def data_files(kind: str, n: int, models: int, work: Path, csv: bool) -> tuple[Path, Path | None, int]:
    """Generate (or reuse) the workload's Parquet and CSV files; returns them and the row count."""
    stem = work / f"{kind}-{n}x{models}"
    pq = stem.with_suffix(".parquet")
    t0 = time.perf_counter()
    if not pq.exists():
        battlegen.write(kind, pq, n, models)
    cs = stem.with_suffix(".csv") if csv else None
    if cs is not None and not cs.exists():
        battlegen.write(kind, cs, n, models)
    import pyarrow.parquet as papq
    rows = papq.ParquetFile(pq).metadata.num_rows
    print(f"  data: {rows:,} rows ready in {time.perf_counter() - t0:.1f} s ({pq.name})", flush=True)
    return pq, cs, rows


def fresh_store(path: Path) -> None:
    """An empty store (the shipped vicuna80 is imported on first use: not part of the measurement)."""
    for p in (path, path.with_name(path.name + ".wal")):
        p.unlink(missing_ok=True)
    subprocess.run(engine_cmd(path, "datasets"), cwd=REPO, check=True, capture_output=True)


def run_workload(kind: str, n: int, models: int, label: str, a: argparse.Namespace) -> list[dict]:
    """Every measured process of one workload, as result rows."""
    work = Path(a.work)
    pq, cs, rows = data_files(kind, n, models, work, csv=a.csv and kind == "arena" and n <= a.csv_max)
    store = work / f"store-{kind}-{n}x{models}.duckdb"
    load_before = uptime()
    results: list[dict] = []
    out_dir = work / "out"
    out_dir.mkdir(exist_ok=True)

    def step(name: str, cmd: list[str], **extra) -> Run:
        tag = re.sub(r"[^a-z0-9]+", "-", f"{kind}-{n}x{models}-{name}".lower()).strip("-")
        r = measure(cmd, cap_gb=a.cap_gb, timeout_s=a.timeout, cwd=REPO, out_path=out_dir / f"{tag}.out")
        r.extra.update(extra)
        results.append({"workload": label, "kind": kind, "n": n, "models": models, "rows": rows,
                        "process": name, "wall_s": r.wall_s, "peak_gb": r.peak_gb, "status": r.status,
                        "cmd": " ".join(Path(c).name if c == sys.executable else c for c in cmd[1:]),
                        "stderr_tail": r.stderr_tail[-400:], **extra})
        print(f"  {name:<34} {r.wall_s:8.1f} s {r.peak_gb:6.2f} GB  {r.status}", flush=True)
        return r

    want = set(a.steps.split(","))
    if cs is not None and "import" in want:  # CSV import into its own store, dropped after
        csv_store = work / "store-csv.duckdb"
        fresh_store(csv_store)
        step("import (CSV)", engine_cmd(csv_store, "import", str(cs), "--dataset", "bench", "--skip-invalid",
                                         "--rejected", str(out_dir / "rejected-csv.csv")))
        for p in (csv_store, csv_store.with_name(csv_store.name + ".wal")):
            p.unlink(missing_ok=True)
    if want & {"import", "leaderboard", "bootstrap", "diagnose"}:
        fresh_store(store)
        imp = step(
            "import (Parquet)",
            engine_cmd(
                store,
                "import",
                str(pq),
                "--dataset",
                "bench",
                "--skip-invalid",
                "--rejected",
                str(out_dir / "rejected-parquet.csv"),
            ),
        )
        if not imp.ok:
            print("  import failed: the engine steps are skipped", flush=True)
            want -= {"leaderboard", "bootstrap", "diagnose"}
    if (
        "startup" in want and store.exists()
    ):  # the floor under every engine step: start, import, open the store
        step("startup floor: `datasets` (no work)", engine_cmd(store, "datasets", "--format", "csv"))
    if "leaderboard" in want:
        step("leaderboard", engine_cmd(store, "leaderboard", "--dataset", "bench", "--format", "csv"))
    if "bootstrap" in want:
        step(
            f"leaderboard --bootstrap {a.bootstrap}",
            engine_cmd(
                store,
                "leaderboard",
                "--dataset",
                "bench",
                "--bootstrap",
                str(a.bootstrap),
                "--seed",
                "0",
                "--format",
                "csv",
            ),
        )
    if "diagnose" in want:
        step(
            "diagnose --table overview",
            engine_cmd(store, "diagnose", "--dataset", "bench", "--table", "overview", "--format", "csv"),
        )
    if a.attach or "attach" in want:
        attach_steps(step, work, pq, a, kind)
    if "style" in want and kind == "arena":
        style_steps(step, work, n, models, a)
    if "evalica" in want:
        step("peer: evalica bradley_terry", [sys.executable, str(BENCH / "peer_evalica.py"), str(pq)])
    if "fastchat" in want:
        rounds = a.fastchat_rounds if rows <= a.fastchat_full_max else max(1, a.fastchat_rounds // 10)
        fc = step(f"peer: FastChat-style bootstrap B={rounds}",
                  [sys.executable, str(BENCH / "peer_fastchat.py"), str(pq), "--rounds", str(rounds)],
                  rounds=rounds)
        if rounds != a.fastchat_rounds and fc.ok:
            results[-1]["note"] = (f"B={rounds} run; B={a.fastchat_rounds} ≈ "
                                   f"{fc.wall_s * a.fastchat_rounds / rounds:,.0f} s")
    load_after = uptime()
    for r in results:
        r["load_before"], r["load_after"] = load_before, load_after
    if not a.keep:
        for p in (store, store.with_name(store.name + ".wal")):
            p.unlink(missing_ok=True)
    return results


ARENA_RANK_VENV = Path("/work/venvs/arena-rank")
"""arena-rank 0.1.1 in its own venv (it pins jax and numpy): ``python -m venv`` then
``pip install arena-rank==0.1.1``."""


def style_steps(step, work: Path, n: int, models: int, a: argparse.Namespace) -> None:
    """Issue 24's speed rows: the same battles with per-side style columns (bench/battlegen.py
    ``style=True``) in their own store: plain ``leaderboard``, ``leaderboard --style-control`` (sandwich
    intervals, LMArena's default), ``leaderboard --ci sandwich``, and arena-rank's own
    ``ContextualBradleyTerry`` fit + sandwich on the same Parquet file (bench/arena_rank_runner.py in its
    venv; reading the file and the features' (a - b)/(a + b) included)."""
    pq = work / f"arena-style-{n}x{models}.parquet"
    if not pq.exists():
        battlegen.write("arena", pq, n, models, style=True)
    store = work / f"store-style-{n}x{models}.duckdb"
    fresh_store(store)
    imp = step("import (Parquet, style columns)", engine_cmd(store, "import", str(pq), "--dataset", "bench",
                                                             "--skip-invalid"))
    if imp.ok:
        step("leaderboard (style data, plain)", engine_cmd(store, "leaderboard", "--dataset", "bench",
                                                           "--format", "csv"))
        step("leaderboard --style-control", engine_cmd(store, "leaderboard", "--dataset", "bench",
                                                       "--style-control", "--format", "csv"))
        step("leaderboard --ci sandwich", engine_cmd(store, "leaderboard", "--dataset", "bench", "--ci",
                                                     "sandwich", "--format", "csv"))
    py = ARENA_RANK_VENV / "bin" / "python"
    if py.exists():
        step("peer: arena-rank ContextualBradleyTerry + sandwich",
             [str(py), str(BENCH / "arena_rank_runner.py"), str(pq), str(work / "out" / "arena-rank.json"),
              "--only=style"])
    else:
        print(f"  (no arena-rank venv at {ARENA_RANK_VENV}: its row is skipped)", flush=True)
    if not a.keep:
        for p in (store, store.with_name(store.name + ".wal")):
            p.unlink(missing_ok=True)


def has_attach() -> bool:
    """Whether this engine has ``datasets attach`` (Parquet read in place, issue 12)."""
    r = subprocess.run(
        [sys.executable, "-m", "engine", "datasets", "attach", "--help"], cwd=REPO, capture_output=True
    )
    return r.returncode == 0


def attach_steps(step, work: Path, pq: Path, a: argparse.Namespace, kind: str = "arena") -> None:
    """The same battles as a Parquet dataset read in place: attach, leaderboard, bootstrap.

    A dataset read in place takes the canonical winner spellings (A, B, tie), so these rows read a
    copy of the log written with them (the same battles; ``*-short.parquet``).
    """
    if not has_attach():
        print("  (no `datasets attach` in this engine: the in-place rows are skipped)", flush=True)
        return
    if kind == "arena":  # tournaments are written with A / B / tie already
        short = pq.with_name(pq.stem + "-short.parquet")
        if not short.exists():
            n, models = (int(x) for x in pq.stem.split("-")[1].split("x"))
            battlegen.write("arena", short, n, models, short_winners=True)
        pq = short
    store = work / "store-attached.duckdb"
    fresh_store(store)
    att = step(
        "datasets attach (Parquet in place)", engine_cmd(store, "datasets", "attach", "bench-pq", str(pq))
    )
    if att.ok:
        step(
            "leaderboard (attached Parquet)",
            engine_cmd(store, "leaderboard", "--dataset", "bench-pq", "--format", "csv"),
        )
        step(
            f"leaderboard --bootstrap {a.bootstrap} (attached Parquet)",
            engine_cmd(
                store,
                "leaderboard",
                "--dataset",
                "bench-pq",
                "--bootstrap",
                str(a.bootstrap),
                "--seed",
                "0",
                "--format",
                "csv",
            ),
        )
    for p in (store, store.with_name(store.name + ".wal")):
        p.unlink(missing_ok=True)


def fmt_status(r: dict) -> str:
    return "" if r["status"] == "ok" else r["status"]


def markdown(results: list[dict]) -> str:
    """One table: every process of every workload, with its ratio to the evalica process."""
    lines = ["| workload | process | wall | peak RSS | vs evalica process | status |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    by_wl: dict[str, list[dict]] = {}
    for r in results:
        by_wl.setdefault(r["workload"], []).append(r)
    for wl, rows in by_wl.items():
        ev = next((r for r in rows if r["process"].startswith("peer: evalica") and r["status"] == "ok"), None)
        for r in rows:
            done = r["status"] == "ok"
            wall = f"{r['wall_s']:.1f} s" if done else f"> {r['wall_s']:.0f} s"
            ratio = f"{r['wall_s'] / ev['wall_s']:.2f}×" if ev and done and r is not ev else ""
            note = fmt_status(r) + (("; " if fmt_status(r) else "") + r["note"] if r.get("note") else "")
            lines.append(f"| {wl} | `{r['process']}` | {wall} | {r['peak_gb']:.2f} GB | {ratio} | {note} |")
    loads = sorted({(r["workload"], r["load_before"], r["load_after"]) for r in results}, key=lambda t: t[0])
    lines.append("")
    for wl, before, after in loads:
        lines.append(f"- {wl}: before `{before.split('load average:')[-1].strip()}`, "
                     f"after `{after.split('load average:')[-1].strip()}` (load average 1/5/15 min)")
    return "\n".join(lines)


def git_head() -> str:
    r = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=REPO, capture_output=True, text=True)
    return r.stdout.strip() or f"engine at {REPO} (not a git checkout)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", help="arena sizes (100k,1m,10m); with --models instead of --workloads")
    ap.add_argument("--models", default="100,200", help="model counts for --sizes (default 100,200)")
    ap.add_argument("--workloads", help=f"explicit workloads (default {DEFAULT_WORKLOADS})")
    ap.add_argument(
        "--quick",
        action="store_true",
        help=f"about a minute: {QUICK_WORKLOADS}, B=10 bootstraps, no CSV import",
    )
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--fastchat-rounds", type=int, default=100)
    ap.add_argument(
        "--fastchat-full-max",
        type=int,
        default=200_000,
        help="above this many rows the FastChat-style peer runs a tenth of the rounds (extrapolated)",
    )
    ap.add_argument("--cap-gb", type=float, default=8.0, help="memory cap per process tree (default 8)")
    ap.add_argument("--timeout", type=float, default=900.0, help="wall-time cap per process, seconds")
    ap.add_argument("--no-csv", dest="csv", action="store_false", help="skip the CSV import rows")
    ap.add_argument("--csv-max", type=int, default=1_000_000, help="CSV import only up to this many rows")
    ap.add_argument("--work", default="/tmp/lens-bench", help="folder for data files and stores (reused)")
    ap.add_argument("--keep", action="store_true", help="keep the stores after the run")
    ap.add_argument("--steps", default="import,startup,leaderboard,bootstrap,diagnose,evalica,fastchat",
                    help="which processes to run (also: attach; style = issue 24's style-control and "
                    "sandwich rows beside arena-rank on an arena log with style columns); the engine steps "
                    "need the import")
    ap.add_argument(
        "--attach",
        action="store_true",
        help="also time `datasets attach` + leaderboard on the Parquet file read in place (arena workloads)",
    )
    ap.add_argument("--app", action="store_true", help="also time every app page on the first arena store")
    ap.add_argument("--repo", help="measure the engine of another checkout (default: this one)")
    ap.add_argument("--md", help="append the table, with date, commit and load, to this Markdown file")
    ap.add_argument("--json", help="write every result row to this JSON file")
    a = ap.parse_args()
    if a.repo:
        global REPO
        REPO = Path(a.repo).resolve()
    if a.quick:
        a.bootstrap, a.fastchat_rounds, a.csv = 10, 10, False
        spec = a.workloads or QUICK_WORKLOADS
    elif a.sizes:
        spec = ",".join(f"{s}x{m}" for s in a.sizes.split(",") for m in a.models.split(","))
    else:
        spec = a.workloads or DEFAULT_WORKLOADS
    workloads = parse_workloads(spec)
    Path(a.work).mkdir(parents=True, exist_ok=True)
    if a.app:
        a.keep = True
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(
        f"# product benchmark {started}, {git_head()}, {platform.node()}, {os.cpu_count()} cores, cap "
        f"{a.cap_gb:g} GB",
        flush=True,
    )
    results: list[dict] = []
    for kind, n, models, label in workloads:
        print(f"{label}  ({uptime()})", flush=True)
        results.extend(run_workload(kind, n, models, label, a))
    table = markdown(results)
    app_md = ""
    if a.app:
        first = next(((k, n, m) for k, n, m, _ in workloads if k == "arena"), None)
        if first:
            store = Path(a.work) / f"store-{first[0]}-{first[1]}x{first[2]}.duckdb"
            cmd = [
                sys.executable,
                str(BENCH / "app_page_timing.py"),
                "--db",
                str(store),
                "--dataset",
                "bench",
                "--cap-gb",
                str(a.cap_gb),
                "--repo",
                str(REPO),
            ]
            app_md = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True).stdout
    print()
    print(table)
    if app_md:
        print()
        print(app_md)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    if a.md:
        with open(a.md, "a", encoding="utf-8") as f:
            f.write(
                f"\n### Run {started} — `{git_head()}`\n\n`python bench/product.py {' '.join(sys.argv[1:])}` "
                f"(cap {a.cap_gb:g} GB per process, B = {a.bootstrap}, FastChat-style rounds "
                f"{a.fastchat_rounds})\n\n"
            )
            f.write(table + "\n")
            if app_md:
                f.write("\n" + app_md + "\n")
    if not a.keep:
        shutil.rmtree(Path(a.work) / "out", ignore_errors=True)


if __name__ == "__main__":
    main()
