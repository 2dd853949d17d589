"""Run arena-rank 0.1.1 itself on battles written by bench/check_arena_rank.py (in arena-rank's own venv).

    /work/venvs/arena-rank/bin/python bench/arena_rank_runner.py BATTLES.parquet OUT.json [--tight]
        [--only=plain,style] [--at=OURS.json]

BATTLES has model_a, model_b, winner (model_a / model_b / tie) and, for the style fit, the per-side raw
counts tokens_a ... bold_b. The per-feature (a - b) / (a + b) (a total of 0 read as 1) is computed here
with pandas as LMArena's notebook does, then arena-rank's own ``ContextualPairDataset.from_pandas``
(defaults: reweighted, features standardised) and ``ContextualBradleyTerry`` fit it; its
``PairDataset`` / ``BradleyTerry`` fit the plain board. Both with sandwich intervals (95 %). ``--tight``
also refits with L-BFGS tolerances 0 (until max_iter) to see how far its default stopping rule leaves
it from the optimum. ``--at=OURS.json`` ({"style" / "plain": {competitors, theta, beta}}) also evaluates
arena-rank's own loss gradient and sandwich at our parameters (``*_at_ours``). Writes JSON: competitors,
ratings, lower / upper, coefficients, timings.
"""

import json
import sys
import time

import numpy as np
import pandas as pd
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
from arena_rank.utils.data_utils import ContextualPairDataset, PairDataset

FEATURES = ["tokens", "headers", "lists", "bold"]


def at_ours(model, dataset, params: dict, res: dict, name: str) -> None:
    """arena-rank's own loss gradient and sandwich bounds at *our* parameters (``params``: ratings, and
    coeffs for the style fit): a gradient near 0 says our point is its optimum, whatever its L-BFGS
    stopping rule left; the bounds are its arithmetic on our point."""
    import jax
    import jax.numpy as jnp

    p = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in params.items()}
    grad = jax.grad(model.loss_function)(p, dataset.as_dict())
    model.params, model.fitted = p, True
    r = model.compute_ratings_and_cis(dataset, significance_level=0.05)
    res[name] = {k: np.asarray(r[k]).tolist() for k in ("ratings", "rating_lower", "rating_upper")}
    res[name].update(competitors=list(dataset.competitors), seconds=0.0,
                     max_abs_gradient=float(max(np.abs(np.asarray(g)).max() for g in grad.values())))
    if "coeffs" in p:
        res[name]["coeffs"] = np.asarray(r["coeffs"]).tolist()
        H, G = model.compute_hessian_and_covariance(
            p["ratings"], p["coeffs"], dataset.pairs, dataset.features, dataset.outcomes, dataset.weights,
            model.reg, model.hessian_reg, model.n_competitors, model.n_features, dataset.pairs.shape[0])
        Hi = np.linalg.inv(np.asarray(H))
        var = np.diag(Hi @ np.asarray(G) @ Hi) / dataset.pairs.shape[0]
        res[name]["coeff_se"] = np.sqrt(var[len(dataset.competitors):]).tolist()


def main() -> None:
    src, out = sys.argv[1], sys.argv[2]
    tight = "--tight" in sys.argv
    ours_path = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--at=")), None)
    ours: dict = {}
    if ours_path:
        with open(ours_path) as fh:
            ours = json.load(fh)
    only = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), "plain,style")
    df = pd.read_parquet(src)
    res: dict = {"rows": len(df)}
    t0 = time.perf_counter()
    if "plain" in only:
        ds = PairDataset.from_pandas(df)
        plain_runs = [("plain", {})]
        if tight:
            plain_runs.append(("plain_tight", {"ftol": 0.0, "gtol": 0.0, "max_iter": 5000}))
        for name, kw in plain_runs:
            t1 = time.perf_counter()
            bt = BradleyTerry(n_competitors=len(ds.competitors), **kw)
            r = bt.compute_ratings_and_cis(ds, significance_level=0.05)
            res[name] = {k: np.asarray(r[k]).tolist() for k in ("ratings", "rating_lower", "rating_upper")}
            res[name].update(competitors=list(ds.competitors), seconds=time.perf_counter() - t1)
        if "plain" in ours:
            order = [ours["plain"]["competitors"].index(c) for c in ds.competitors]
            at_ours(BradleyTerry(n_competitors=len(ds.competitors)), ds,
                    {"ratings": np.asarray(ours["plain"]["theta"])[order]}, res, "plain_at_ours")
    if "style" in only and all(f"{f}_a" in df.columns for f in FEATURES):
        t1 = time.perf_counter()
        for f in FEATURES:
            a, b = df[f"{f}_a"].astype(float), df[f"{f}_b"].astype(float)
            df[f] = (a - b) / (a + b).replace(0, 1)
        cds = ContextualPairDataset.from_pandas(df, feature_cols=FEATURES)
        runs = [("style", {})]
        if tight:
            runs.append(("style_tight", {"ftol": 0.0, "gtol": 0.0, "max_iter": 5000}))
        for name, kw in runs:
            t2 = time.perf_counter()
            m = ContextualBradleyTerry(n_competitors=len(cds.competitors), n_features=len(FEATURES), **kw)
            r = m.compute_ratings_and_cis(cds, significance_level=0.05)
            res[name] = {k: np.asarray(r[k]).tolist() for k in ("ratings", "rating_lower", "rating_upper")}
            res[name].update(competitors=list(cds.competitors), coeffs=np.asarray(r["coeffs"]).tolist(),
                             seconds=time.perf_counter() - t2)
            # arena-rank's own sandwich arithmetic at its own optimum, kept whole for beta's errors
            H, G = m.compute_hessian_and_covariance(
                m.params["ratings"], m.params["coeffs"], cds.pairs, cds.features, cds.outcomes, cds.weights,
                m.reg, m.hessian_reg, m.n_competitors, m.n_features, cds.pairs.shape[0])
            Hi = np.linalg.inv(np.asarray(H))
            var = np.diag(Hi @ np.asarray(G) @ Hi) / cds.pairs.shape[0]
            res[name]["coeff_se"] = np.sqrt(var[len(cds.competitors):]).tolist()
        if "style" in ours:
            order = [ours["style"]["competitors"].index(c) for c in cds.competitors]
            at_ours(ContextualBradleyTerry(n_competitors=len(cds.competitors), n_features=len(FEATURES)), cds,
                    {"ratings": np.asarray(ours["style"]["theta"])[order], "coeffs": ours["style"]["beta"]},
                    res, "style_at_ours")
        res["style_prepare_seconds"] = t2 - t1
    res["seconds"] = time.perf_counter() - t0
    with open(out, "w") as fh:
        json.dump(res, fh)


if __name__ == "__main__":
    main()
