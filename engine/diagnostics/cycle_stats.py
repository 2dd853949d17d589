"""Cycle statistics of a judge (paper 003, Sections 3.3, 4.1-4.2 and Table 8).

- Cycle counts per graph: directed simple cycles of length 3..L. ``edges="bad"`` counts the cycles
  of ``adj`` (a tie is both edges) that are not made of ties only, the project's C3_bad / C4_bad
  generalised to every length (lengths 3 and 4 equal engine.graphs.cycles' counts);
  ``edges="strict"`` uses strict wins only (Condorcet cycles, as in paper 003).
  Length bound: by default none, i.e. every length up to the graph's number of models (a 9-model
  graph has cycles of length 3..9, and most of them are long), counted exactly by the batched
  subset DP of ``cycle_dp`` for graphs of at most ``EXACT_MAX`` models; larger graphs fall back to
  ``networkx.simple_cycles`` per graph with the stated bound ``FALLBACK_BOUND``. An explicit
  ``length_bound`` cuts every graph at that length. The per-graph table says which bound was used
  (``length_bound``) and ``len_c`` is NA for a length a graph's bound cut off (0 means none exist).
- Inconsistency rates: share of graphs with at least one cycle (paper 003's stance level) and
  share of prompts with a cyclic graph among their variants / turns (its motion level).
- Participation: per model, the share of all cycles that pass through it (paper 003, Table 7).
- Distribution fit of per-prompt cycle counts: negative binomial by maximum likelihood (scipy's
  ``nbinom(n, p)``), with R² of its CDF against the empirical CDF on 0..max (``r2_on="cdf"``, the
  default) or of its PMF against the empirical PMF (``r2_on="pmf"``), and AIC against Poisson,
  zero-inflated Poisson and zero-inflated negative binomial fits (paper 003, Section 4.2 and
  Table 8). Paper 003 plots both (its Figure 2) and reads as an R² on the PMF; its defaults are
  ``edges="strict"`` (Condorcet cycles) with ``r2_on="pmf"``; the project's are ``"bad"``/``"cdf"``.

Every summary carries ``length_bound`` (the largest bound among its graphs) and ``all_lengths``
(True when no graph of the group had a cycle length cut off).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
from scipy import special  # optimize and stats are imported where used: every CLI command imports this module

from engine.diagnostics import cycle_dp
from engine.errors import LensError

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.graphs.stack import GraphStack

CycleEdges = Literal["bad", "strict"]


def graph_cycles(
    adj: np.ndarray, *, length_bound: int = 5, edges: CycleEdges = "bad"
) -> list[tuple[int, ...]]:
    """Simple cycles (length 3..length_bound) of one (n, n) adjacency, as vertex tuples."""
    import networkx as nx  # here: the pages that import this module rarely list cycles (0.5 s at start)

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


EXACT_MAX = 12
"""Graphs with at most this many models get every cycle length, counted exactly (cycle_dp)."""
FALLBACK_BOUND = 5
"""Default length bound for larger graphs (networkx enumeration per graph)."""


def _edge_sets(adj: np.ndarray, edges: CycleEdges) -> tuple[np.ndarray, np.ndarray | None]:
    """(edges to count cycles on, edges whose cycles are subtracted: the all-tie ones for "bad")."""
    tie = adj & adj.swapaxes(-1, -2)
    if edges == "strict":
        return adj & ~tie, None
    return adj, tie


def cycle_table(
    stack: GraphStack | GraphBuckets,
    *,
    length_bound: int | None = None,
    edges: CycleEdges = "bad",
    exact_max: int = EXACT_MAX,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per graph of at least 3 models: ``graph`` (its position in the stack), key columns, ``models``
    (models compared in it), ``length_bound`` (the longest cycle counted), ``cycles`` and
    ``len_3 … len_L`` (Int64, NA for lengths cut off by the bound); and per (graph, model) the
    number of those cycles through the model (long format: graph, model, cycles).
    ``length_bound=None``: every length for graphs of ≤ ``exact_max`` models, else ``FALLBACK_BOUND``.

    Graphs of fewer than 3 models can hold no cycle and are left out (not counted as acyclic):
    ``table.attrs["left_out"]`` is how many. ``stack``: a GraphStack or GraphBuckets, computed
    per size bucket over each graph's own models."""
    from engine.graphs.buckets import as_buckets

    if edges not in ("bad", "strict"):
        raise LensError(f"Unknown cycle edge set {edges!r}; choose bad or strict.")
    if length_bound is not None and length_bound < 3:
        raise LensError(f"The cycle length bound must be at least 3; got {length_bound}.")
    b = as_buckets(stack)
    buckets = b.at_least(3)
    graph = np.concatenate([bk.graph for bk in buckets]) if buckets else np.zeros(0, np.int64)
    k_of = np.concatenate([np.full(bk.T, bk.k, np.int64) for bk in buckets]) if buckets else graph.copy()
    exact = k_of <= min(exact_max, cycle_dp.MAX_VERTICES)
    bound = (
        np.where(exact, k_of, FALLBACK_BOUND)
        if length_bound is None
        else np.full(graph.size, int(length_bound))
    )
    width = int(max(3, k_of.max(initial=3)))
    lengths = np.zeros((graph.size, width + 1), dtype=np.int64)
    part_g, part_m, part_c = [], [], []
    cap = None if length_bound is None else int(length_bound)
    row = 0
    for bk in buckets:  # one batch per graph size: each graph over its own k models
        rows = np.arange(row, row + bk.T)
        row += bk.T
        adj = bk.adj & ~np.eye(bk.k, dtype=bool)
        if bk.k <= min(exact_max, cycle_dp.MAX_VERTICES):
            use, minus = _edge_sets(adj, edges)
            ln, th = cycle_dp.cycles_by_length(use, cap)
            if minus is not None:
                ln_m, th_m = cycle_dp.cycles_by_length(minus, cap)
                ln, th = ln - ln_m, th - th_m
            lengths[rows, : bk.k + 1] = ln
        else:  # large graphs: networkx per graph, bounded (module docstring)
            th = np.zeros((bk.T, bk.k), dtype=np.int64)
            for i in range(bk.T):
                for cyc in graph_cycles(adj[i], length_bound=int(bound[rows[i]]), edges=edges):
                    lengths[rows[i], len(cyc)] += 1
                    th[i, list(cyc)] += 1
        t_idx, s_idx = np.nonzero(th)
        part_g.append(bk.graph[t_idx])
        part_m.append(bk.members[t_idx, s_idx])
        part_c.append(th[t_idx, s_idx])
    order = np.argsort(graph, kind="stable")
    graph, k_of, bound, lengths = graph[order], k_of[order], bound[order], lengths[order]
    table = b.keys.iloc[graph].reset_index(drop=True).copy()
    table.insert(0, "graph", graph.astype(np.int64))
    table["models"] = k_of.astype(np.int64)
    table["length_bound"] = bound.astype(np.int64)
    table["cycles"] = lengths.sum(axis=1)
    for c in range(3, width + 1):  # up to the largest graph: cut lengths show as NA
        col = pd.array(lengths[:, c], dtype="Int64")
        col[(c > bound) & (c <= k_of)] = pd.NA  # cut off by the bound: unknown, not zero
        table[f"len_{c}"] = col
    pg = np.concatenate(part_g) if part_g else np.zeros(0, np.int64)
    pm = np.concatenate(part_m) if part_m else np.zeros(0, np.int64)
    pc = np.concatenate(part_c) if part_c else np.zeros(0, np.int64)
    po = np.lexsort((pm, pg))
    part = pd.DataFrame({"graph": pg[po].astype(np.int64), "model": np.array(b.models, dtype=object)[pm[po]],
                         "cycles": pc[po].astype(np.int64)})
    table.attrs["left_out"] = b.n_below(3)
    return table, part


def _bounds(table: pd.DataFrame, by: tuple[str, ...]) -> pd.DataFrame:
    """Per group: the largest length bound used and whether no graph had a length cut off."""
    t = table.assign(_all=(table["length_bound"] >= table["models"]))
    return t.groupby(list(by), sort=True, dropna=False).agg(length_bound=("length_bound", "max"),
                                                            all_lengths=("_all", "all")).reset_index()


def _with_bounds(out: pd.DataFrame, table: pd.DataFrame, by: tuple[str, ...]) -> pd.DataFrame:
    if "length_bound" not in table.columns or out.empty:
        return out
    return out.merge(_bounds(table, by), on=list(by), how="left")


def length_distribution(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group and cycle length (3 up to the group's largest graph): cycles, their share of the
    group's counted cycles, and ``graphs_cut``: graphs of the group whose length bound left that
    length uncounted (cycles is NA when that is all of them)."""
    cols = [c for c in table.columns if c.startswith("len_")]
    long = table[[*by, "models", *cols]].melt(id_vars=[*by, "models"], var_name="length", value_name="cycles")
    long["length"] = long["length"].str[4:].astype(np.int64)
    long["cut"] = long["cycles"].isna().astype(np.int64)
    long["possible"] = (long["length"] <= long["models"]).astype(np.int64)
    out = long.groupby([*by, "length"], sort=True, dropna=False).agg(
        cycles=("cycles", lambda c: c.sum(min_count=1)), graphs_cut=("cut", "sum"),
        possible=("possible", "sum")).reset_index()
    out = out[out["possible"] > 0].drop(columns="possible").reset_index(drop=True)
    out["cycles"] = out["cycles"].astype("Int64")  # NA: every graph of the group had this length cut off
    total = out.groupby(list(by), dropna=False)["cycles"].transform("sum")
    share = out["cycles"].astype(np.float64) / total.where(total > 0).astype(np.float64)
    out["share"] = share.to_numpy(np.float64, na_value=np.nan)
    return _with_bounds(out, table, by)


def inconsistency_rates(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group: graphs, share of graphs with a cycle, prompts, share of prompts with a cyclic graph,
    cycles per graph and per prompt, and the length bound."""
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
    return _with_bounds(out, table, by)


def participation(table: pd.DataFrame, part: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Per group and model: cycles through the model and that count over all the group's cycles."""
    keyed = part.merge(table[["graph", *by]], on="graph")
    out = keyed.groupby([*by, "model"], sort=True, dropna=False)["cycles"].sum().reset_index()
    total = table.groupby(list(by), dropna=False)["cycles"].sum().rename("total_cycles").reset_index()
    out = out.merge(total, on=list(by))
    out["participation_rate"] = out["cycles"] / out["total_cycles"]
    out = out.sort_values([*by, "participation_rate"], ascending=[True] * len(by) + [False]).reset_index(
        drop=True
    )
    return _with_bounds(out, table, by)


def prompt_counts(table: pd.DataFrame, by: tuple[str, ...] = ("judge",)) -> pd.DataFrame:
    """Cycles per prompt (summed over its graphs), the unit of the distribution fit."""
    out = table.groupby([*by, "prompt_id"], sort=True, dropna=False)["cycles"].sum().reset_index()
    return _with_bounds(out, table, by)


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
    r2_on: str = "cdf"


R2_ON: tuple[str, ...] = ("cdf", "pmf")
"""What the fits' R² compares with the empirical distribution on 0..max: the CDF or the PMF."""


def _r2(ecdf: np.ndarray, fitted: np.ndarray) -> float:
    ss_tot = float(((ecdf - ecdf.mean()) ** 2).sum())
    ss_res = float(((ecdf - fitted) ** 2).sum())
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


def _nb_logpmf(k: np.ndarray, lgk1: np.ndarray, n: float, p: float) -> np.ndarray:
    """log NB(k; n, p) in scipy's parametrisation, with gammaln(k + 1) precomputed (the fits call
    this thousands of times; scipy.stats' per-call overhead dominated them)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(k > 0, k * np.log1p(-p), 0.0)
    return special.gammaln(k + n) - special.gammaln(n) - lgk1 + n * np.log(p) + tail


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct values as float, their counts, gammaln(value + 1))."""
    vals, cnt = np.unique(x, return_counts=True)
    vals = vals.astype(np.float64)
    return vals, cnt.astype(np.float64), special.gammaln(vals + 1.0)


def nbinom_mle(x: np.ndarray) -> tuple[float, float, float]:
    """(n, p, log-likelihood) of the negative binomial MLE: for a fixed n the best p is n/(n + x̄),
    so only log n is searched (bounded to [e^-12, e^16]; a sample with variance ≤ mean drives n up
    to the bound, the Poisson limit)."""
    from scipy import optimize

    xbar = float(x.mean())
    vals, cnt, lgk1 = _distinct(x)

    def nll(log_n: float) -> float:
        n = float(np.exp(log_n))
        return -float(cnt @ _nb_logpmf(vals, lgk1, n, n / (n + xbar)))

    grid = np.linspace(-12, 16, 57)
    start = grid[int(np.argmin([nll(g) for g in grid]))]
    res = optimize.minimize_scalar(
        nll, bounds=(max(start - 0.5, -12), min(start + 0.5, 16)), method="bounded", options={"xatol": 1e-10}
    )
    n = float(np.exp(res.x))
    return n, n / (n + xbar), -float(res.fun)


def zip_mle(x: np.ndarray) -> tuple[float, float, float]:
    """(π, μ, log-likelihood) of the zero-inflated Poisson MLE."""
    from scipy import optimize, stats

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
    from scipy import optimize

    zeros = int((x == 0).sum())
    vals, cnt, lgk1 = _distinct(x[x > 0])

    def nll(theta: np.ndarray) -> float:
        pi, n, p = special.expit(theta[0]), float(np.exp(theta[1])), special.expit(theta[2])
        ll0 = np.log(pi + (1 - pi) * p**n)
        llk = cnt.sum() * np.log1p(-pi) + cnt @ _nb_logpmf(vals, lgk1, n, p)
        return -(zeros * ll0 + llk)

    p0 = min(max(start[1], 1e-9), 1 - 1e-9)
    best = None
    for pi0 in (1e-4, 0.1, 0.3):  # a few starts: the likelihood can have a flat ridge in π
        res = optimize.minimize(nll, x0=np.array([special.logit(pi0), np.log(start[0]), special.logit(p0)]),
                                method="Nelder-Mead", options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 2000})
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None  # the loop above ran at least once
    th = best.x
    return float(special.expit(th[0])), float(np.exp(th[1])), float(special.expit(th[2])), -float(best.fun)


@dataclass(frozen=True)
class NBPoissonFit:
    """The negative binomial and Poisson fits of a sample of counts (``fit_nb_poisson``): the part of
    ``CountFit`` that the Cycles page shows, without the zero-inflated fits (their optimisers cost two
    orders of magnitude more than the rest)."""

    nb_n: float
    nb_p: float
    nb_loglik: float
    nb_aic: float
    nb_r2: float
    poisson_mu: float
    poisson_aic: float
    poisson_r2: float
    samples: int
    mean: float
    variance: float
    r2_on: str = "cdf"


def _checked_counts(counts: np.ndarray | pd.Series, r2_on: str) -> np.ndarray:
    """The counts as int64, refused in one sentence when they cannot be fitted."""
    if r2_on not in R2_ON:
        raise LensError(f"R² is computed on the cdf or the pmf; got {r2_on!r}.")
    x = np.asarray(counts, dtype=np.int64)
    if x.size < 2:
        raise LensError("A distribution fit needs at least two counts.")
    if (x < 0).any():
        raise LensError("Cycle counts must be non-negative.")
    return x


def _empirical(x: np.ndarray, r2_on: str) -> tuple[np.ndarray, np.ndarray]:
    """(0..max, the empirical CDF or PMF on it) that the fits' R² compare with."""
    ks = np.arange(int(x.max()) + 1)
    if r2_on == "pmf":
        return ks, np.bincount(x, minlength=ks.size) / x.size
    return ks, np.searchsorted(np.sort(x), ks, side="right") / x.size


def fit_nb_poisson(counts: np.ndarray | pd.Series, r2_on: str = "cdf") -> NBPoissonFit:
    """Negative binomial and Poisson fits of non-negative integer counts, R² on the CDF (default) or the
    PMF: the same numbers as ``fit_counts``'s ``nb_*`` and ``poisson_*`` fields, which are computed here."""
    x = _checked_counts(counts, r2_on)
    return _fit_nb_poisson(x, *_empirical(x, r2_on), r2_on)


def _fit_nb_poisson(x: np.ndarray, ks: np.ndarray, emp: np.ndarray, r2_on: str) -> NBPoissonFit:
    """``fit_nb_poisson`` of checked counts, given 0..max and the empirical CDF or PMF on it."""
    from scipy import stats

    n, p, ll_nb = nbinom_mle(x)
    mu = float(x.mean())
    ll_po = float(stats.poisson.logpmf(x, mu).sum()) if mu > 0 else 0.0
    if r2_on == "pmf":
        nb_fit, po_fit = stats.nbinom.pmf(ks, n, p), stats.poisson.pmf(ks, mu)
    else:
        nb_fit, po_fit = stats.nbinom.cdf(ks, n, p), stats.poisson.cdf(ks, mu)
    return NBPoissonFit(
        nb_n=n, nb_p=p, nb_loglik=ll_nb, nb_aic=4 - 2 * ll_nb, nb_r2=_r2(emp, nb_fit),
        poisson_mu=mu, poisson_aic=2 - 2 * ll_po, poisson_r2=_r2(emp, po_fit),
        samples=int(x.size), mean=mu, variance=float(x.var(ddof=1)), r2_on=r2_on,
    )


def fit_counts(counts: np.ndarray | pd.Series, r2_on: str = "cdf") -> CountFit:
    """Negative binomial, Poisson and zero-inflated Poisson and negative binomial fits of non-negative
    integer counts; R² on the CDF (default) or the PMF (``r2_on="pmf"``, paper 003's reading). The first
    two are ``fit_nb_poisson``'s (every field of it is a field of CountFit)."""
    from scipy import stats

    x = _checked_counts(counts, r2_on)
    ks, emp = _empirical(x, r2_on)
    base = _fit_nb_poisson(x, ks, emp, r2_on)
    n, p, ll_nb = base.nb_n, base.nb_p, base.nb_loglik
    pi, zmu, ll_zip = zip_mle(x)
    bpi, bn, bp, ll_zinb = zinb_mle(x, (n, p))
    if ll_zinb < ll_nb:  # the NB is the π = 0 member of the family: never report a worse optimum
        bpi, bn, bp, ll_zinb = 0.0, n, p, ll_nb
    if r2_on == "pmf":  # the same fits, compared point by point with the empirical PMF
        zfit = np.where(ks == 0, pi, 0.0) + (1 - pi) * stats.poisson.pmf(ks, zmu)
        zbfit = np.where(ks == 0, bpi, 0.0) + (1 - bpi) * stats.nbinom.pmf(ks, bn, bp)
    else:
        zfit = pi + (1 - pi) * stats.poisson.cdf(ks, zmu)
        zbfit = bpi + (1 - bpi) * stats.nbinom.cdf(ks, bn, bp)
    return CountFit(
        **vars(base),
        zip_pi=pi, zip_mu=zmu, zip_aic=4 - 2 * ll_zip, zip_r2=_r2(emp, zfit),
        zinb_pi=bpi, zinb_n=bn, zinb_p=bp, zinb_aic=6 - 2 * ll_zinb, zinb_r2=_r2(emp, zbfit),
    )


def count_fits(table: pd.DataFrame, by: tuple[str, ...] = ("judge",), r2_on: str = "cdf") -> pd.DataFrame:
    """Per group: the fits of per-prompt cycle counts as one row (groups with < 2 prompts skipped);
    ``r2_on`` as in ``fit_counts``."""
    pc = prompt_counts(table, by)
    rows = []
    for key, g in pc.groupby(list(by), sort=True, dropna=False):  # one fit per judge
        if len(g) < 2:
            continue
        key = key if isinstance(key, tuple) else (key,)
        rows.append({**dict(zip(by, key, strict=True)), **vars(fit_counts(g["cycles"].to_numpy(), r2_on))})
    columns = [*by, *(f.name for f in dataclasses.fields(CountFit))]  # the header, even with no group to fit
    return _with_bounds(pd.DataFrame(rows, columns=columns), table, by)
