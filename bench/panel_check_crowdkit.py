"""The judge panel (``leaderboard --ranker panel``) against crowd-kit's NoisyBradleyTerry on vicuna80.

crowd-kit pulls in scikit-learn and nltk; it installs beside our requirements (requirements-dev.txt, and
tests/test_panel.py checks it on drawn data), and this script also runs in its own environment
(/work/venvs/crowdkit, ``pip install crowd-kit``) once (``--peer``, no engine import) and here once.

Data: vicuna80's five LLM judges (every verdict records its order), written as
crowd-kit's rows (worker = judge, left = model shown first, right = model shown second, label = the
winner). crowd-kit has no ties: every verdict is written twice, a tie once with each model as the
label, so crowd-kit's log-likelihood is exactly twice ours (ties half a win each side) and both have the
same maximum. Our fit runs with ridge=0 (crowd-kit's own prior is 1e-5 times a virtual-item term).

What is compared (docs/notes/i28panel-28.md):
1. crowd-kit's ``_compute_log_likelihood`` (regularisation 0) at our fitted parameters, against twice
   our negative log-likelihood there (the same function);
2. our maximum against crowd-kit's objective minimised by L-BFGS-B with numerical differences
   (crowd-kit's objective, not its gradient; strengths centred);
3. crowd-kit's own ``fit`` (its gradient, n_iter 100 by default and 10,000): its objective value
   against ours, its skills/biases/scores against ours, and its gradient against differences of its
   objective.

    python bench/panel_check_crowdkit.py [--venv /work/venvs/crowdkit] \
        [--out docs/notes/i28panel-crowdkit.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def peer(data_csv: str, ours_json: str) -> dict:
    """The crowd-kit half (runs in crowd-kit's environment)."""
    import numpy as np
    import pandas as pd
    from crowdkit.aggregation import NoisyBradleyTerry
    from scipy.optimize import approx_fprime, minimize

    data = pd.read_csv(data_csv, dtype=str, keep_default_na=False)
    ours = json.loads(Path(ours_json).read_text())
    labels, np_data = np.unique(data[["left", "right", "label"]].values, return_inverse=True)
    np_data = np_data.reshape(-1, 3) + 1
    workers, np_workers = np.unique(data["worker"].values, return_inverse=True)
    L, Wn = labels.size, workers.size
    assert list(labels) == ours["models"] and list(workers) == ours["judges"]
    f = NoisyBradleyTerry._compute_log_likelihood
    g = NoisyBradleyTerry._compute_gradient
    x_ours = np.concatenate([[0.0], ours["strengths"], ours["q"], ours["gamma"]])
    out: dict = {"rows": len(data), "models": L, "judges": Wn}
    out["crowdkit_nll_at_ours"] = f(x_ours, np_data, np_workers, L, Wn, 0.0)
    out["twice_our_nll"] = 2 * ours["nll"]
    # 2. crowd-kit's objective minimised without its gradient
    res = minimize(f, x_ours + 0.05, args=(np_data, np_workers, L, Wn, 0.0), method="L-BFGS-B",
                   options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-9, "maxfun": 10 ** 7})
    s = res.x[1:L + 1] - res.x[1:L + 1].mean()
    out["objective_min"] = {
        "nll": float(res.fun),
        "max_abs_strength_diff": float(np.abs(s - np.array(ours["strengths"])).max()),
        "max_abs_q_diff": float(np.abs(res.x[L + 1:L + 1 + Wn] - np.array(ours["q"])).max()),
        "max_abs_gamma_diff": float(np.abs(res.x[L + 1 + Wn:] - np.array(ours["gamma"])).max()),
    }
    # 3. crowd-kit's own fit
    fits = {}
    for n_iter in (100, 10000):
        m = NoisyBradleyTerry(n_iter=n_iter).fit(data)
        sc = np.log(m.scores_.reindex(labels).to_numpy() / (1 - m.scores_.reindex(labels).to_numpy()))
        x_ck = np.concatenate([[0.0], sc, np.log(m.biases_.to_numpy() / (1 - m.biases_.to_numpy())),
                               np.log(m.skills_.to_numpy() / (1 - m.skills_.to_numpy()))])
        sc = sc - sc.mean()
        fits[str(n_iter)] = {
            "nll": f(x_ck, np_data, np_workers, L, Wn, 0.0),
            "skills": dict(zip(workers, m.skills_.to_numpy().tolist(), strict=True)),
            "biases": dict(zip(workers, m.biases_.to_numpy().tolist(), strict=True)),
            "max_abs_strength_diff": float(np.abs(sc - np.array(ours["strengths"])).max()),
            "spearman_with_ours": float(pd.Series(sc).corr(pd.Series(ours["strengths"]), method="spearman")),
        }
    out["crowdkit_fit"] = fits
    x = x_ours + np.random.default_rng(0).normal(0, 0.1, x_ours.size)
    analytic = g(x, np_data, np_workers, L, Wn, 0.0)
    numeric = approx_fprime(x, f, 1e-6, np_data, np_workers, L, Wn, 0.0)
    out["crowdkit_gradient_vs_differences"] = {
        "strengths_max_abs_diff": float(np.abs(analytic[1:L + 1] - numeric[1:L + 1]).max()),
        "q_gamma_max_abs_diff": float(np.abs(analytic[L + 1:] - numeric[L + 1:]).max()),
        "q_gamma_max_abs_numeric": float(np.abs(numeric[L + 1:]).max()),
    }
    return out


def ours_and_data(tmp: Path) -> tuple[str, str, dict]:
    """Our ridge-0 fit of vicuna80's LLM judges, and the same verdicts as crowd-kit's rows."""
    import numpy as np
    import pandas as pd

    sys.path.insert(0, str(REPO))
    from engine.ingest.shipped import open_store
    from engine.rankers.panel import fit_panel
    from engine.ranking.panel_board import panel_cells
    from engine.ranking.vote_query import store_relation

    store = open_store(str(tmp / "lens.duckdb"), ensure_default=True)  # a new store holds vicuna80
    try:
        judges = ["bard", "claude", "gpt-3.5-turbo", "gpt-4", "vicuna-13b"]
        cells, _ = panel_cells(store.cursor(), store_relation(store, "vicuna80"), judge=judges)
    finally:
        store.close()
    fit = fit_panel(cells, ridge=0.0)
    rows = []
    for j, f, g, fw, sw, t in zip(cells.judge, cells.first, cells.second, cells.first_wins, cells.second_wins,
                                  cells.ties, strict=True):
        worker, left, right = cells.judges[j], cells.models[f], cells.models[g]
        rows += [(worker, left, right, left)] * int(2 * fw) + [(worker, left, right, right)] * int(2 * sw)
        rows += [(worker, left, right, left), (worker, left, right, right)] * int(t)
    data = pd.DataFrame(rows, columns=["worker", "left", "right", "label"])
    data_csv, ours_json = tmp / "rows.csv", tmp / "ours.json"
    data.to_csv(data_csv, index=False)
    ours = {"models": list(cells.models), "judges": list(cells.judges), "strengths": fit.strengths.tolist(),
            "gamma": fit.gamma.tolist(), "q": fit.q.tolist(), "nll": fit.neg_log_likelihood,
            "converged": fit.converged, "reliability": (1 / (1 + np.exp(-fit.gamma))).tolist(),
            "side_bias": (1 / (1 + np.exp(-fit.q))).tolist()}
    ours_json.write_text(json.dumps(ours))
    return str(data_csv), str(ours_json), ours


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", nargs=2, metavar=("ROWS", "OURS"), help=argparse.SUPPRESS)
    ap.add_argument("--venv", default="/work/venvs/crowdkit")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.peer:
        print(json.dumps(peer(*args.peer)))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        data_csv, ours_json, ours = ours_and_data(Path(tmp))
        got = subprocess.run([f"{args.venv}/bin/python", __file__, "--peer", data_csv, ours_json],
                             capture_output=True, text=True, check=True)
    report = {"ours": ours, "crowdkit": json.loads(got.stdout.strip().splitlines()[-1])}
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
