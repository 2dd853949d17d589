"""Benchmark: our half-tie BT and its bootstrap against evalica, choix and a FastChat-style fit.

Same synthetic data for everyone: n models, N outcomes, each outcome its own prompt (pairs drawn
uniformly, outcomes from a Davidson model with nu = 0.5). Reported as seconds and ratios measured in
the same run (no absolute targets). Usage:

    python bench/rankers.py                      # both sizes, evalica bootstrap only at the small one
    python bench/rankers.py --sizes 20x76000     # one size
    python bench/rankers.py --evalica-bootstrap-large   # also the ~10 GB evalica bootstrap at 100 x 1M

Targets (issue 3): our BT from the verdict table (grouping included) >= 4x faster than evalica's row
API and no slower than choix's dense ILSR on counts; our bootstrap (B = 100) >= 5x faster than the
FastChat-style loop and 50x faster than evalica's at 100 x 1,000,000, in under 2 GB.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.graphs.denoise import backward_arcs, denoise  # noqa: E402
from engine.rankers.bt import fit_bt  # noqa: E402
from engine.rankers.counts import fit_bt_verdicts, verdict_counts  # noqa: E402
from engine.ranking.bootstrap import bootstrap_bt_verdicts  # noqa: E402


def make_data(n: int, N: int, seed: int = 0, categorical: bool | str = True) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n)
    i = rng.integers(0, n, N)
    j = (i + rng.integers(1, n, N)) % n
    a, b, t = np.exp(theta[i]), np.exp(theta[j]), 0.5 * np.exp((theta[i] + theta[j]) / 2)
    u = rng.random(N) * (a + b + t)
    winner = np.where(u < a, "A", np.where(u < a + b, "B", "tie"))
    models = np.array([f"model-{k:03d}" for k in range(n)], dtype=object)
    df = pd.DataFrame({
        "prompt_id": np.char.add("p", np.arange(N).astype(str)).astype(object),
        "model_a": models[i], "model_b": models[j], "winner": winner.astype(object),
    })
    if categorical == "arrow":
        df = df.astype({c: "string[pyarrow]" for c in df.columns})
    elif categorical:
        df = df.astype(
            {"prompt_id": "category", "model_a": "category", "model_b": "category", "winner": "category"}
        )
    return df


def timed(fn, repeat: int = 3):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def grouped_counts(df: pd.DataFrame) -> pd.DataFrame:
    """FastChat-style aggregation: counts per (model_a, model_b, winner)."""
    return df.groupby(["model_a", "model_b", "winner"], observed=True).size().reset_index(name="n")


def fastchat_style_fit(counts: pd.DataFrame, models: list[str]) -> np.ndarray:
    """BT by L-BFGS on aggregated counts (ties half a win each way), logistic loss with base e."""
    pos = {m: k for k, m in enumerate(models)}
    a = counts["model_a"].map(pos).to_numpy(np.int64)
    b = counts["model_b"].map(pos).to_numpy(np.int64)
    w = counts["winner"].astype(str).to_numpy()
    y = np.where(w == "A", 1.0, np.where(w == "B", 0.0, 0.5))
    c = counts["n"].to_numpy(np.float64)

    def f(th):
        d = th[a] - th[b]
        p = 1 / (1 + np.exp(-d))
        loss = -(c * (y * np.log(p) + (1 - y) * np.log1p(-p))).sum()
        g = c * (p - y)
        grad = np.bincount(a, g, len(models)) - np.bincount(b, g, len(models))
        return loss, grad

    th = minimize(
        f, np.zeros(len(models)), jac=True, method="L-BFGS-B", options={"gtol": 1e-8, "maxiter": 1000}
    ).x
    return th - th.mean()


def fastchat_style_bootstrap(df: pd.DataFrame, B: int, seed: int) -> np.ndarray:
    models = sorted(set(df["model_a"].astype(str)) | set(df["model_b"].astype(str)))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(B):  # FastChat resamples rows, regroups and refits, once per resample
        sample = df.iloc[rng.integers(0, len(df), len(df))]
        out.append(fastchat_style_fit(grouped_counts(sample), models))
    return np.vstack(out)


def wtilde_dense(df: pd.DataFrame) -> tuple[np.ndarray, tuple[str, ...]]:
    vc = verdict_counts(df)
    return vc.wtilde(), vc.models


def bench_size(n: int, N: int, evalica_boot: bool, B: int = 100) -> list[dict]:
    import choix
    import evalica

    rows = []
    df = make_data(n, N)
    df_obj = make_data(n, N, categorical=False)
    df_arrow = make_data(n, N, categorical="arrow")
    winners = (
        df["winner"]
        .astype(str)
        .map({"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw})
        .tolist()
    )
    xs, ys = df["model_a"].astype(str).tolist(), df["model_b"].astype(str).tolist()
    wt, models = wtilde_dense(df)
    counts = grouped_counts(df)

    t_ours, res = timed(lambda: fit_bt_verdicts(df))
    t_ours_obj, _ = timed(lambda: fit_bt_verdicts(df_obj))
    t_ours_arrow, _ = timed(lambda: fit_bt_verdicts(df_arrow))

    def choix_from_rows():
        a, b = df["model_a"].cat.codes.to_numpy(), df["model_b"].cat.codes.to_numpy()
        w = df["winner"].astype(str).to_numpy()
        mat = np.zeros((n, n))
        np.add.at(mat, (a, b), np.where(w == "A", 1.0, np.where(w == "tie", 0.5, 0.0)))
        np.add.at(mat, (b, a), np.where(w == "B", 1.0, np.where(w == "tie", 0.5, 0.0)))
        return choix.ilsr_pairwise_dense(mat, tol=1e-8, max_iter=1000)

    t_choix_rows, _ = timed(choix_from_rows)
    t_ours_fit, _ = timed(lambda: fit_bt(wt, None, models))
    t_ev, ev = timed(lambda: evalica.bradley_terry(xs, ys, winners))
    cw = (
        counts["winner"]
        .astype(str)
        .map({"A": evalica.Winner.X, "B": evalica.Winner.Y, "tie": evalica.Winner.Draw})
        .tolist()
    )
    t_ev_counts, _ = timed(lambda: evalica.bradley_terry(counts["model_a"].astype(str).tolist(),
                                                         counts["model_b"].astype(str).tolist(), cw,
                                                         weights=counts["n"].astype(float).tolist()))
    t_choix, ch = timed(lambda: choix.ilsr_pairwise_dense(wt, tol=1e-8, max_iter=1000))
    t_fc, fc = timed(lambda: fastchat_style_fit(counts, list(models)))
    t_fc_group, _ = timed(lambda: fastchat_style_fit(grouped_counts(df), list(models)))
    ours = res.scores.reindex(list(models)).to_numpy()
    agree = {
        "choix": float(np.abs(ours - (ch - ch.mean())).max()),
        "fastchat": float(np.abs(ours - fc).max()),
        "evalica": float(
            np.abs(ours - (lambda v: v - v.mean())(np.log(ev.scores.reindex(list(models)).to_numpy()))).max()
        ),
    }
    size = f"{n} x {N:,}"
    rows += [
        {
            "size": size,
            "task": "BT fit",
            "method": "ours, verdict table (categorical columns), grouping included",
            "seconds": t_ours,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "ours, verdict table (object string columns), grouping included",
            "seconds": t_ours_obj,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "ours, verdict table (string[pyarrow] columns), grouping included",
            "seconds": t_ours_arrow,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "evalica.bradley_terry, row API (Rust core)",
            "seconds": t_ev,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "evalica.bradley_terry on pre-grouped counts (fit only)",
            "seconds": t_ev_counts,
        },
        {"size": size, "task": "BT fit", "method": "ours, Newton on W+T/2 (fit only)", "seconds": t_ours_fit},
        {
            "size": size,
            "task": "BT fit",
            "method": "choix.ilsr_pairwise_dense on W+T/2 (fit only)",
            "seconds": t_choix,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "choix.ilsr_pairwise_dense, dense matrix built from the rows",
            "seconds": t_choix_rows,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "FastChat-style L-BFGS on grouped counts (fit only)",
            "seconds": t_fc,
        },
        {
            "size": size,
            "task": "BT fit",
            "method": "FastChat-style L-BFGS, grouping included",
            "seconds": t_fc_group,
        },
    ]
    t_boot, boot = timed(lambda: bootstrap_bt_verdicts(df, B=B, seed=1), repeat=1)
    t_boot_obj, _ = timed(lambda: bootstrap_bt_verdicts(df_obj, B=B, seed=1), repeat=1)
    t_fcb, fcb = timed(lambda: fastchat_style_bootstrap(df, B, 1), repeat=1)
    rows += [
        {
            "size": size,
            "task": f"bootstrap B={B}",
            "method": "ours (categorical), batched over graph patterns",
            "seconds": t_boot,
        },
        {
            "size": size,
            "task": f"bootstrap B={B}",
            "method": "ours (object strings), batched over graph patterns",
            "seconds": t_boot_obj,
        },
        {
            "size": size,
            "task": f"bootstrap B={B}",
            "method": "FastChat-style: resample rows, regroup, L-BFGS, single process",
            "seconds": t_fcb,
        },
    ]
    sd_ratio = float(np.median(boot.samples.std(0) / fcb.std(0)))
    b_ev = B if evalica_boot else 5
    t_evb, _ = timed(lambda: evalica.bootstrap(evalica.bradley_terry, xs, ys, winners, n_resamples=b_ev,
                                               bootstrap_method="percentile", random_state=1), repeat=1)
    label = (
        "evalica.bootstrap (percentile)"
        if b_ev == B
        else f"evalica.bootstrap (percentile), B={b_ev} run, x{B // b_ev} extrapolated"
    )
    rows.append({"size": size, "task": f"bootstrap B={B}", "method": label, "seconds": t_evb * B / b_ev})
    for r in rows:
        r["agreement"] = ""
    rows[0]["agreement"] = "max |ours - peer| log-strength: " + ", ".join(
        f"{k} {v:.1e}" for k, v in agree.items()
    )
    rows[-2]["agreement"] = f"median sd ratio ours/FastChat-style {sd_ratio:.3f}"
    return rows


def peak_rss_ours(n: int, N: int, B: int = 100) -> tuple[float, float]:
    """Fresh process: resident memory (GB) after building the data, and the bootstrap's own peak
    allocation on top of it (tracemalloc sees numpy's buffers)."""
    code = (
        "import sys, gc, tracemalloc; sys.path.insert(0, '.'); from bench.rankers import make_data; "
        "from engine.ranking.bootstrap import bootstrap_bt_verdicts; "
        f"df = make_data({n}, {N}); gc.collect(); "
        "rss = int(open('/proc/self/statm').read().split()[1]) * 4096; tracemalloc.start(); "
        f"bootstrap_bt_verdicts(df, B={B}, seed=1); print(rss, tracemalloc.get_traced_memory()[1])"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=True)
    rss, peak = (int(x) for x in out.stdout.split())
    return rss / 1e9, peak / 1e9


def greedy_fas_quality(trials: int = 300, seed: int = 2026) -> dict:
    """How often Algorithm 1's greedy FAS weight equals the exact minimum (brute force, n <= 7)."""
    rng = np.random.default_rng(seed)
    optimal, excess = 0, []
    for _ in range(trials):
        n = int(rng.integers(4, 8))
        w = rng.integers(0, 4, size=(n, n)).astype(float) * (rng.random((n, n)) < 0.7)
        np.fill_diagonal(w, 0)
        perms = np.array(list(itertools.permutations(range(n))))
        pos = np.argsort(perms, axis=1)
        best = float(((pos[:, :, None] > pos[:, None, :]) * w[None]).sum(axis=(1, 2)).min())
        got = float(w[backward_arcs(w, denoise(w).order)].sum())
        optimal += got <= best + 1e-9
        excess.append(got / best - 1 if best > 0 else 0.0)
    return {"trials": trials, "optimal_share": optimal / trials, "mean_excess": float(np.mean(excess)),
            "max_excess": float(np.max(excess))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="*", default=["20x76000", "100x1000000"])
    ap.add_argument("--evalica-bootstrap-large", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    args = ap.parse_args()
    rows = []
    for s in args.sizes:
        n, N = (int(x) for x in s.split("x"))
        rows += bench_size(n, N, evalica_boot=N < 500_000 or args.evalica_bootstrap_large)
    df = pd.DataFrame(rows)
    with pd.option_context("display.max_colwidth", 90, "display.width", 250):
        print(df.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for size, g in df.groupby("size", sort=False):
        t = dict(zip(g["method"], g["seconds"], strict=True))
        ours = t["ours, verdict table (categorical columns), grouping included"]
        ev = t["evalica.bradley_terry, row API (Rust core)"]
        print(f"\n{size}: evalica row / ours from rows, by column type: "
              + ", ".join(f"{kind} {ev / t[f'ours, verdict table ({kind} columns), grouping included']:.1f}x"
                          for kind in ("categorical", "object string", "string[pyarrow]")))
        fit_ratio = t["choix.ilsr_pairwise_dense on W+T/2 (fit only)"] / t["ours, Newton on W+T/2 (fit only)"]
        print(
            f"{size}: choix dense ILSR vs ours, fit only on W+T/2: choix / ours = "
            f"{fit_ratio:.2f}x; "
            f"from rows (categorical codes): choix / ours = "
            f"{t['choix.ilsr_pairwise_dense, dense matrix built from the rows'] / ours:.2f}x"
        )
        boot = t["ours (categorical), batched over graph patterns"]
        print(f"{size}: FastChat-style bootstrap / ours = "
              f"{t['FastChat-style: resample rows, regroup, L-BFGS, single process'] / boot:.1f}x"
              + "; evalica bootstrap / ours = "
              + ", ".join(f"{t[k] / boot:.1f}x ({k})" for k in t if k.startswith("evalica.bootstrap")))
    if not args.no_memory:
        for s in args.sizes:
            n, N = (int(x) for x in s.split("x"))
            base, peak = peak_rss_ours(n, N)
            print(f"{n} x {N:,}: resident after building the data {base:.2f} GB; "
                  f"peak extra allocation of our bootstrap B=100 {peak:.3f} GB")
    print("\ngreedy FAS (paper 002, Algorithm 1) vs exact minimum, random weighted digraphs n = 4..7:",
          greedy_fas_quality())


if __name__ == "__main__":
    main()
