"""PPR at scale: ``leaderboard --method ppr`` as a process on 1M arena-shaped battles x 100 models x 4 judges.

Data: the shared arena-shaped battle log (bench/battlegen.py; /work/benchdata/arena-1000000x100.parquet).
Its winner is the *human* judge's verdict; three proxy judges re-judge every battle: each keeps the human
verdict with probability 0.85 / 0.75 / 0.65 and otherwise picks the side of the alphabetically first model
(a biased judge). Two shapes:

* ``few``: the human judged 10 % of the battles (100,000), the proxies all 1M (3.1M verdicts);
* ``all``: the human judged every battle (4M verdicts), PPR keeps ``--human-n 100000`` of them.

Each row: wall seconds and peak RSS of the CLI process (bench/procmeter.py), on a copy of a store made once
(the import is not timed). The authors' code (dense k x n matrices) runs beside it on a 100,000-battle
slice in its own venv, as a process, with the same procmeter, on the same battles:

    python bench/ppr_scale.py --work /tmp/ppr_scale [--peer-dir /work/ppr_peer --peer-python ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from procmeter import measure  # noqa: E402

AGREE = {"proxy1": 0.85, "proxy2": 0.75, "proxy3": 0.65}

PEER_TIMER = r'''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from src import estimate as est, ranksets as rs
d = np.load(sys.argv[2])
k = int(d["k"])
def summ(a, b, wa, wb, ha=None, hb=None):
    n = len(a)
    m1 = np.zeros((k, n)); m2 = np.zeros((k, n))
    m1[a, np.arange(n)] = 1; m2[b, np.arange(n)] = 1
    s = {"model_a_matrix": m1, "model_b_matrix": m2,
         "winner1_predicted": wa[:, None], "winner2_predicted": wb[:, None]}
    if ha is not None:
        s["winner1_human"] = ha[:, None]; s["winner2_human"] = hb[:, None]
    return s
Dn = summ(d["la"], d["lb"], d["pwa"], d["pwb"], d["hwa"], d["hwb"])
DN = summ(d["ua"], d["ub"], d["uwa"], d["uwb"])
lam = est.lhat_opt(k, Dn, DN)
th, sig = est.estimate(k, Dn, DN, lhat=lam)
print(json.dumps({"lambda": lam, "ranksets": rs.find_ranksets(k, th, sig, 0.05)}))
'''


def build(work: Path, src: Path, shape: str) -> Path:
    """The store for one shape (made once; later runs copy it)."""
    db = work / f"ppr-{shape}.duckdb"
    if db.exists():
        return db
    t = pq.read_table(src, columns=["battle_id", "prompt_id", "model_a", "model_b", "winner"])
    rng = np.random.default_rng(7)
    n = t.num_rows
    winner = np.asarray(t["winner"].to_pylist(), dtype=object)
    a = np.asarray(t["model_a"].to_pylist(), dtype=object)
    b = np.asarray(t["model_b"].to_pylist(), dtype=object)
    biased = np.where(a < b, "A", "B")
    parts = []
    human_rows = np.arange(n) if shape == "all" else np.sort(rng.choice(n, size=n // 10, replace=False))
    parts.append(t.take(pa.array(human_rows)).append_column("judge", pa.array(["human"] * len(human_rows))))
    for judge, agree in AGREE.items():
        keep = rng.random(n) < agree
        w = np.where(keep, winner, biased)
        parts.append(t.set_column(t.schema.get_field_index("winner"), "winner", pa.array(w.tolist()))
                     .append_column("judge", pa.array([judge] * n)))
    path = work / f"ppr-{shape}.parquet"
    pq.write_table(pa.concat_tables(parts), path)
    subprocess.run([sys.executable, "-m", "engine", "--db", str(db), "import", "--dataset", "ppr", str(path)],
                   check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True)
    return db


def run_cli(db: Path, work: Path, extra: list[str], label: str) -> None:
    copy = work / f"run-{label}.duckdb"
    shutil.copyfile(db, copy)
    cmd = [sys.executable, "-m", "engine", "--db", str(copy), "leaderboard", "--dataset", "ppr",
           "--method", "ppr", "--human", "human", "--proxy", "proxy1,proxy2,proxy3", "--alpha", "0.05",
           "--format", "csv", *extra]
    r = measure(cmd, cap_gb=4, timeout_s=300, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                out_path=work / f"{label}.csv")
    rows = max(0, len((work / f"{label}.csv").read_text().splitlines()) - 1)
    print(f"| ours, CLI process | {label} | {r.wall_s:.1f} | {r.peak_gb:.2f} | {r.status} | {rows} rows |",
          flush=True)


def peer_slice(work: Path, peer_dir: Path, peer_python: str, n: int) -> None:
    """Our estimator and the peer's on the same n-battle slice (10 % labelled), each as a process."""
    rng = np.random.default_rng(3)
    k = 100
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    u = rng.random(n)
    hwa, hwb = (u < 0.45).astype(float), ((u >= 0.45) & (u < 0.9)).astype(float)
    flip = rng.random(n) < 0.25
    pwa, pwb = np.where(flip, hwb, hwa), np.where(flip, hwa, hwb)
    lab = np.zeros(n, bool)
    lab[rng.choice(n, n // 10, replace=False)] = True
    arrays = {"k": k, "la": a[lab], "lb": b[lab], "hwa": hwa[lab], "hwb": hwb[lab], "pwa": pwa[lab],
              "pwb": pwb[lab], "ua": a[~lab], "ub": b[~lab], "uwa": pwa[~lab], "uwb": pwb[~lab]}
    npz = work / f"slice-{n}.npz"
    np.savez(npz, **arrays)
    ours = (f"import json, sys, numpy as np; sys.path.insert(0, {str(REPO)!r});"
            "from engine.ranking.ppr import Battles, ppr_estimate, rank_sets;"
            f"d = np.load({str(npz)!r}); k = int(d['k']);"
            "h = Battles(d['la'], d['lb'], d['hwa'], d['hwb']); p = h.with_wins(d['pwa'], d['pwb']);"
            "u = Battles(d['ua'], d['ub'], d['uwa'], d['uwb']); e = ppr_estimate(k, h, p, u);"
            "lo, hi = rank_sets(e.theta, e.cov, 0.05);"
            "print(json.dumps({'lambda': e.lam, 'ranksets': [[int(x), int(y)] for x, y in zip(lo, hi)]}))")
    results = {}
    for who, cmd in (("ours, estimator process", [sys.executable, "-c", ours]),
                     ("peer (authors' code), process",
                      [peer_python, "-c", PEER_TIMER, str(peer_dir), str(npz)])):
        out = work / f"slice-{who.split(',')[0].split(' ')[0]}.json"
        r = measure(cmd, cap_gb=8, timeout_s=600, cwd=peer_dir, out_path=out)
        results[who] = json.loads(out.read_text()) if r.ok else None
        print(f"| {who} | slice {n:,} battles x {k} models, 1 proxy | {r.wall_s:.1f} | {r.peak_gb:.2f} | "
              f"{r.status} | |", flush=True)
    mine, theirs = results.values()
    if mine and theirs:
        same = mine["ranksets"] == theirs["ranksets"] and abs(mine["lambda"] - theirs["lambda"]) < 1e-12
        print(f"| | rank-sets and lambda equal on the slice: {same} | | | | |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="/tmp/ppr_scale")
    ap.add_argument("--src", default="/work/benchdata/arena-1000000x100.parquet")
    ap.add_argument("--peer-dir", default="/work/ppr_peer")
    ap.add_argument("--peer-python", default="/work/venvs/ppr/bin/python")
    ap.add_argument("--slice", type=int, default=100_000)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| who | data | wall s | peak GB | status | output |")
    print("|---|---|---|---|---|---|")
    run_cli(build(work, Path(args.src), "few"), work, [], "few")
    run_cli(build(work, Path(args.src), "all"), work, ["--human-n", "100000"], "all")
    if Path(args.peer_dir).exists():
        peer_slice(work, Path(args.peer_dir), args.peer_python, args.slice)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
