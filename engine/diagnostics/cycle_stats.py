"""Cycle statistics of a judge (paper 003, Sections 3.3, 4.1-4.2 and Table 8).

- Cycle enumeration per graph: directed simple cycles of length 3..L. ``edges="bad"`` enumerates
  the cycles of ``adj`` (a tie is both edges) that are not made of ties only, the project's C3_bad /
  C4_bad generalised to every length (lengths 3 and 4 equal engine.cycles' counts);
  ``edges="strict"`` uses strict wins only (Condorcet cycles, as in paper 003).
  Enumeration uses ``networkx.simple_cycles(G, length_bound=L)`` one graph at a time: the number
  of cycles grows combinatorially, so this is a diagnostic, not a hot path; ``length_bound`` keeps
  it bounded (default 5, the longest cycle of paper 003's five-model graphs).
- Inconsistency rates: share of graphs with at least one cycle (paper 003's stance level) and
  share of prompts with a cyclic graph among their variants / turns (its motion level).
- Participation: per model, the share of all cycles that pass through it (paper 003, Table 7).
- Distribution fit of per-prompt cycle counts: negative binomial by maximum likelihood (scipy's
  ``nbinom(n, p)``), with R² of its CDF against the empirical CDF on 0..max, and AIC against
  Poisson, zero-inflated Poisson and zero-inflated negative binomial fits (paper 003, Section 4.2
  and Table 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import networkx as nx
import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ..errors import LensError

CycleEdges = Literal["bad", "strict"]


def graph_cycles(adj: np.ndarray, *, length_bound: int = 5, edges: CycleEdges = "bad") -> list[tuple[int, ...]]:
    """Simple cycles (length 3..length_bound) of one (n, n) adjacency, as vertex tuples."""
    a = np.asarray(adj, dtype=bool)
    tie = a & a.T
    use = a & ~tie if edges == "strict" else a
    g = nx.DiGraph()
    g.add_nodes_from(range(a.shape[0]))
    g.add_edges_from(zip(*(x.tolist() for x in np.nonzero(use)), strict=True))
    out = []
    for cyc in nx.simple_cycles(g, length_bound=length_bound):
        k = len(cyc)
        if k < 3:
            continue
        if edges == "bad" and all(tie[cyc[s], cyc[(s + 1) % k]] for s in range(k)):
            continue
        out.append(tuple(cyc))
    return out


def cycle_table(stack, *, length_bound: int = 5, edges: CycleEdges = "bad") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per graph: key columns, ``cycles`` and ``len_3 … len_L``; and per (graph, model) the number
    of those cycles through the model (long format: graph, model, cycles)."""
    if edges not in ("bad", "strict"):
        raise LensError(f"Unknown cycle edge set {edges!r}; choose bad or strict.")
    if length_bound < 3:
        raise LensError(f"The cycle length bound must be at least 3; got {length_bound}.")
    lengths = np.zeros((stack.T, length_bound + 1), dtype=np.int64)
    through = np.zeros((stack.T, stack.n), dtype=np.int64)
    for t in range(stack.T):  # per-graph enumeration: see the module docstring
        for cyc in graph_cycles(stack.adj[t], length_bound=length_bound, edges=edges):
            lengths[t, len(cyc)] += 1
            through[t, list(cyc)] += 1
    table = stack.keys.reset_index(drop=True).copy()
    table.insert(0, "graph", np.arange(stack.T, dtype=np.int64))
    table["cycles"] = lengths.sum(axis=1)
    for k in range(3, length_bound + 1):
        table[f"len_{k}"] = lengths[:, k]
    t_idx, m_idx = np.nonzero(through)
    part = pd.DataFrame({"graph": t_idx.astype(np.int64), "model": np.array(stack.models, dtype=object)[m_idx],
                         "cycles": through[t_idx, m_idx]})
    return table, part


def length_distribution(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group and cycle length: cycles and their share of the group's cycles."""
    cols = [c for c in table.columns if c.startswith("len_")]
    long = table[[*by, *cols]].melt(id_vars=list(by), var_name="length", value_name="cycles")
    long["length"] = long["length"].str[4:].astype(np.int64)
    out = long.groupby([*by, "length"], sort=True, dropna=False)["cycles"].sum().reset_index()
    total = out.groupby(list(by), dropna=False)["cycles"].transform("sum")
    out["share"] = np.where(total > 0, out["cycles"] / total.where(total > 0, 1), np.nan)
    return out


def inconsistency_rates(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group: graphs, share of graphs with a cycle, prompts, share of prompts with a cyclic graph,
    cycles per graph and per prompt."""
    t = table.assign(cyclic=(table["cycles"] > 0).astype(np.int64))
    per_prompt = t.groupby([*by, "prompt_id"], sort=True, dropna=False).agg(
        cyclic=("cyclic", "max"), cycles=("cycles", "sum")).reset_index()
    g = t.groupby(list(by), sort=True, dropna=False).agg(
        graphs=("cyclic", "size"), cyclic_graphs=("cyclic", "sum"), cycles=("cycles", "sum")).reset_index()
    p = per_prompt.groupby(list(by), sort=True, dropna=False).agg(
        prompts=("cyclic", "size"), cyclic_prompts=("cyclic", "sum")).reset_index()
    out = g.merge(p, on=list(by))
    out["graph_inconsistency_rate"] = out["cyclic_graphs"] / out["graphs"]
    out["prompt_inconsistency_rate"] = out["cyclic_prompts"] / out["prompts"]
    out["cycles_per_graph"] = out["cycles"] / out["graphs"]
    out["cycles_per_prompt"] = out["cycles"] / out["prompts"]
    return out


def participation(table: pd.DataFrame, part: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group and model: cycles through the model and that count over all the group's cycles."""
    keyed = part.merge(table[["graph", *by]], on="graph")
    out = keyed.groupby([*by, "model"], sort=True, dropna=False)["cycles"].sum().reset_index()
    total = table.groupby(list(by), dropna=False)["cycles"].sum().rename("total_cycles").reset_index()
    out = out.merge(total, on=list(by))
    out["participation_rate"] = out["cycles"] / out["total_cycles"]
    return out.sort_values([*by, "participation_rate"], ascending=[True] * len(by) + [False]).reset_index(drop=True)


def prompt_counts(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Cycles per prompt (summed over its graphs), the unit of the distribution fit."""
    return table.groupby([*by, "prompt_id"], sort=True, dropna=False)["cycles"].sum().reset_index()


@dataclass(frozen=True)
class CountFit:
    """Fits of a sample of counts; parameters in scipy's conventions (nbinom n, p; poisson mu)."""

    nb_n: float
    nb_p: float
    nb_loglik: float
    nb_aic: float
    nb_r2: float
    poisson_mu: float
    poisson_aic: float
    poisson_r2: float
    zip_pi: float
    zip_mu: float
    zip_aic: float
    zip_r2: float
    zinb_pi: float
    zinb_n: float
    zinb_p: float
    zinb_aic: float
    zinb_r2: float
    samples: int
    mean: float
    variance: float


def _r2(ecdf: np.ndarray, fitted: np.ndarray) -> float:
    ss_tot = float(((ecdf - ecdf.mean()) ** 2).sum())
    ss_res = float(((ecdf - fitted) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def nbinom_mle(x: np.ndarray) -> tuple[float, float, float]:
    """(n, p, log-likelihood) of the negative binomial MLE: for a fixed n the best p is n/(n + x̄),
    so only log n is searched (bounded to [e^-12, e^16]; a sample with variance ≤ mean drives n up
    to the bound, the Poisson limit)."""
    xbar = float(x.mean())

    def nll(log_n: float) -> float:
        n = float(np.exp(log_n))
        return -float(stats.nbinom.logpmf(x, n, n / (n + xbar)).sum())

    grid = np.linspace(-12, 16, 57)
    start = grid[int(np.argmin([nll(g) for g in grid]))]
    res = optimize.minimize_scalar(nll, bounds=(max(start - 0.5, -12), min(start + 0.5, 16)), method="bounded",
                                   options={"xatol": 1e-10})
    n = float(np.exp(res.x))
    return n, n / (n + xbar), -float(res.fun)


def zip_mle(x: np.ndarray) -> tuple[float, float, float]:
    """(π, μ, log-likelihood) of the zero-inflated Poisson MLE."""
    zeros = x == 0

    def nll(theta: np.ndarray) -> float:
        pi, mu = special.expit(theta[0]), float(np.exp(theta[1]))
        ll0 = np.log(pi + (1 - pi) * np.exp(-mu))
        llk = np.log1p(-pi) + stats.poisson.logpmf(x[~zeros], mu)
        return -(zeros.sum() * ll0 + llk.sum())

    xbar = max(float(x.mean()), 1e-3)
    res = optimize.minimize(nll, x0=np.array([0.0, np.log(xbar)]), method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 4000})
    return float(special.expit(res.x[0])), float(np.exp(res.x[1])), -float(res.fun)


def zinb_mle(x: np.ndarray, start: tuple[float, float]) -> tuple[float, float, float, float]:
    """(π, n, p, log-likelihood) of the zero-inflated negative binomial MLE, started from the
    negative binomial fit ``start = (n, p)`` with π small (the NB is the π = 0 member)."""
    zeros = x == 0

    def nll(theta: np.ndarray) -> float:
        pi, n, p = special.expit(theta[0]), float(np.exp(theta[1])), special.expit(theta[2])
        ll0 = np.log(pi + (1 - pi) * p**n)
        llk = np.log1p(-pi) + stats.nbinom.logpmf(x[~zeros], n, p)
        return -(zeros.sum() * ll0 + llk.sum())

    p0 = min(max(start[1], 1e-9), 1 - 1e-9)
    best = None
    for pi0 in (1e-4, 0.1, 0.3):  # a few starts: the likelihood can have a flat ridge in π
        res = optimize.minimize(nll, x0=np.array([special.logit(pi0), np.log(start[0]), special.logit(p0)]),
                                method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 6000})
        if best is None or res.fun < best.fun:
            best = res
    th = best.x
    return float(special.expit(th[0])), float(np.exp(th[1])), float(special.expit(th[2])), -float(best.fun)


def fit_counts(counts: np.ndarray | pd.Series) -> CountFit:
    """Negative binomial, Poisson and zero-inflated Poisson fits of non-negative integer counts."""
    x = np.asarray(counts, dtype=np.int64)
    if x.size < 2:
        raise LensError("A distribution fit needs at least two counts.")
    if (x < 0).any():
        raise LensError("Cycle counts must be non-negative.")
    ks = np.arange(int(x.max()) + 1)
    ecdf = np.searchsorted(np.sort(x), ks, side="right") / x.size
    n, p, ll_nb = nbinom_mle(x)
    mu = float(x.mean())
    ll_po = float(stats.poisson.logpmf(x, mu).sum()) if mu > 0 else 0.0
    pi, zmu, ll_zip = zip_mle(x)
    zcdf = pi + (1 - pi) * stats.poisson.cdf(ks, zmu)
    bpi, bn, bp, ll_zinb = zinb_mle(x, (n, p))
    if ll_zinb < ll_nb:  # the NB is the π = 0 member of the family: never report a worse optimum
        bpi, bn, bp, ll_zinb = 0.0, n, p, ll_nb
    zbcdf = bpi + (1 - bpi) * stats.nbinom.cdf(ks, bn, bp)
    return CountFit(
        nb_n=n, nb_p=p, nb_loglik=ll_nb, nb_aic=4 - 2 * ll_nb, nb_r2=_r2(ecdf, stats.nbinom.cdf(ks, n, p)),
        poisson_mu=mu, poisson_aic=2 - 2 * ll_po, poisson_r2=_r2(ecdf, stats.poisson.cdf(ks, mu)),
        zip_pi=pi, zip_mu=zmu, zip_aic=4 - 2 * ll_zip, zip_r2=_r2(ecdf, zcdf),
        zinb_pi=bpi, zinb_n=bn, zinb_p=bp, zinb_aic=6 - 2 * ll_zinb, zinb_r2=_r2(ecdf, zbcdf),
        samples=int(x.size), mean=mu, variance=float(x.var(ddof=1)),
    )


def count_fits(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group: the fits of per-prompt cycle counts as one row (groups with < 2 prompts skipped)."""
    pc = prompt_counts(table, by)
    rows = []
    for key, g in pc.groupby(list(by), sort=True, dropna=False):  # one fit per judge
        if len(g) < 2:
            continue
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), **vars(fit_counts(g["cycles"].to_numpy()))})
    return pd.DataFrame(rows)
