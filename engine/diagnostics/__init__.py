"""Judge diagnostics (issue 5): non-transitivity, structure, cycles, position bias, agreement.

One module per concept (see each docstring for the paper section):
``nontransitivity`` (PNT, hard and soft; the B.5 heatmap), ``sntd`` (soft deviation),
``entropy`` (ELSPR ρ_non-trans, H², τ), ``cycle_stats`` (lengths, rates, participation, fits),
``position`` (order consistency, first-position rate, McNemar), ``order_stress`` (paper 003's
order-permutation test), ``agreement`` (pairwise agreement, Cohen's κ), ``summary`` (paper 000,
Figure 4). ``diagnose`` names each result table so the CLI and the app ask for it by name.

May import: ``engine.experiments`` (the result cache), ``engine.ranking``, ``engine.rankers``,
``engine.graphs``, ``engine.store``, ``engine.errors``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from engine.diagnostics import agreement as _agreement
from engine.diagnostics import (
    cycle_stats,
    entropy,
    fas_gap,
    nontransitivity,
    order_stress,
    position,
    sntd,
    summary,
)
from engine.diagnostics.verdict_pairs import has_known_order
from engine.errors import LensError
from engine.graphs.buckets import build_buckets
from engine.graphs.stack import DEFAULT_POLICY, check_policy

if TYPE_CHECKING:
    from engine.graphs.buckets import GraphBuckets
    from engine.store.connection import Store

TABLES: dict[str, str] = {
    "overview": "one row per judge: PNT, SNTD, ρ_non-trans, τ_avg, order consistency, first-position win "
                "rate, McNemar p (both tie rules), agreement and κ with the reference judge",
    "pnt": "PNT per group (default judge): triples, non-transitive triples and their kinds",
    "patterns": "counts of the 14 non-transitive patterns of paper 001 B.1 (numbered 1-14) per group",
    "sntd": "mean SNTD per group over triples with judge probabilities (default: one divergence of the "
    "order-averaged probabilities, as the app shows; --sntd per-order: paper 001's eq. 3, the "
    "divergence averaged over the presentation orders)",
    "heatmap": "mean PNT / SNTD on a grid of two win-rate gaps per judge (paper 001, B.5)",
    "entropy": "ρ_non-trans, τ_avg and mean H² per group (paper 004)",
    "entropy-graphs": "per graph: vertices, vertices in non-transitive SCCs, H², τ",
    "cycles": "graph- and prompt-level inconsistency rates and cycle counts per group",
    "cycle-lengths": "cycle-length distribution per group",
    "participation": "share of cycles through each model per group",
    "cycle-fit": "negative binomial / Poisson / zero-inflated Poisson fits of per-prompt cycle counts",
    "cycle-graphs": "per graph: cycles by length",
    "cycle-prompts": "per prompt: cycles summed over its graphs (the unit of the distribution fit)",
    "position": "order consistency, first-position win rate and McNemar's test (both tie rules) per group",
    "stress": "order-permutation stress test per group (paper 003)",
    "agreement": "agreement and Cohen's κ between judges (or against a reference judge), on each item's "
                 "verdict after both presentation orders are combined (which model won, not which position)",
    "structure": "mean bad cycles, draw rate and largest SCC by judge and category (paper 000, Fig. 4)",
    "fas": "per group: cyclic graphs, graphs where PGED's greedy feedback arc set removed more arcs than the "
           "minimum, and by how many (exact minimum for graphs of up to 20 models)",
    "fas-graphs": "per graph: arcs, arcs removed by the greedy feedback arc set, by the minimum one, and the "
                  "excess",
    "judges": "the judge report, one row per judge against a reference (default human when present): "
              "agreement, kappa by model and as shown, position bias, length bias, self-preference, PNT and "
              "cycle rate (engine.diagnostics.judge_report)",
}


def _verdicts(store_or_verdicts, dataset: str | None, judge) -> pd.DataFrame:
    if isinstance(store_or_verdicts, pd.DataFrame):
        v = store_or_verdicts
        if dataset is not None and "dataset" in v.columns:
            v = v[v["dataset"] == dataset]
        if judge is not None:
            judges = [judge] if isinstance(judge, str) else list(judge)
            v = v[v["judge"].isin(judges)]
    else:
        if dataset is None:
            raise LensError("Name the dataset to diagnose.")
        v = store_or_verdicts.verdicts(dataset, judge=judge)
    if v.empty:
        who = f" for judge {judge}" if judge else ""
        raise LensError(f"There are no verdicts{who} in dataset {dataset!r}.")
    return v


GRAPH_COLUMNS: tuple[str, ...] = (
    "dataset",
    "judge",
    "prompt_id",
    "variant",
    "turn",
    "category",
    "variant_kind",
)
EXTRA_BY: dict[str, tuple[str, ...]] = {
    "pnt": ("model_a", "model_b", "model_c"), "sntd": ("model_a", "model_b", "model_c"),
    "position": ("lo", "hi"),
}
UNGROUPED: tuple[str, ...] = ("overview", "entropy-graphs", "cycle-graphs", "fas-graphs", "judges")
"""Tables with one row per judge or per graph: ``by`` does not apply to them."""
CACHE_VERSION = 5
"""Part of every cache key: bump when a table's columns or numbers change, so old results are not served."""


def _by(params: dict, default: tuple[str, ...], table: str = "") -> tuple[str, ...]:
    """The grouping columns asked for, checked against those the table can group by."""
    by = params.get("by") or default
    by = tuple([by] if isinstance(by, str) else by)
    allowed = (*GRAPH_COLUMNS, *EXTRA_BY.get(table, ()))
    bad = [c for c in by if c not in allowed]
    if bad:
        raise LensError(f"Cannot group the {table or 'diagnostics'} table by {', '.join(bad)}; "
                        f"choose from {', '.join(allowed)}.")
    return by


def overview(verdicts: pd.DataFrame, *, reference: str | None = "human", policy: str = DEFAULT_POLICY,
             tie_band: tuple[float, float] = nontransitivity.DEFAULT_TIE_BAND,
             big_graphs: GraphBuckets | None = None, n_graphs: int | None = None) -> pd.DataFrame:
    """One row per judge of ``verdicts`` with the headline numbers of every diagnostic.

    Every judge gets its row, whether or not its graphs hold a triple: on a battle log (one pair per
    prompt) the cycle columns are empty (0 triples, NaN) and the row still carries what applies there,
    first-position win rates and the agreement with the reference judge (before, the table had no rows).

    ``big_graphs`` and ``n_graphs``: the verdicts' graphs of three or more models already built (by the same
    ``policy``) and how many graphs the verdicts hold in all; the triad and entropy columns count nothing
    else, so they are those of every graph, and only the small graphs' count enters the note. The soft
    columns (``pnt_soft``, ``sntd_mean``) are then there when a big graph carries a judge probability.
    """
    stack = build_buckets(verdicts, policy=policy) if big_graphs is None else big_graphs
    judges = sorted(verdicts["judge"].dropna().astype(str).unique())
    pos = position.position_table(verdicts, policy=policy)
    ag = (_agreement.agreement(verdicts, reference=reference, policy=policy)
          if reference is not None and reference in set(verdicts["judge"]) else None)
    return overview_of_tables(judges, stack, pos, ag, reference=reference, tie_band=tie_band,
                              n_graphs=n_graphs if big_graphs is not None else None)


def overview_of_tables(judges: list[str], stack: GraphBuckets, pos: pd.DataFrame, ag: pd.DataFrame | None,
                       *, reference: str | None,
                       tie_band: tuple[float, float] = nontransitivity.DEFAULT_TIE_BAND,
                       n_graphs: int | None = None) -> pd.DataFrame:
    """``overview``'s table from its parts: the judges (sorted), the graphs (``stack``), the per-judge
    ``position_table`` and the ``agreement`` table against ``reference`` (None: no reference among the
    judges), whether made from a verdict frame or from verdict counts grouped in the store
    (``engine.diagnostics.judge_counts``); ``n_graphs``: every graph's count when ``stack`` holds only the
    graphs of three or more models."""
    pnt = nontransitivity.pnt_summary(stack)[["judge", "triples", "pnt"]]
    out = pd.DataFrame({"judge": judges}).merge(pnt, on="judge", how="left")
    out["triples"] = out["triples"].fillna(0).astype(np.int64)
    if stack.has_soft:
        out = out.merge(nontransitivity.pnt_summary(stack, source="soft", tie_band=tie_band)[["judge", "pnt"]]
                        .rename(columns={"pnt": "pnt_soft"}), on="judge", how="left")
        out = out.merge(sntd.sntd_summary(stack)[["judge", "sntd_mean"]], on="judge", how="left")
    out = out.merge(
        entropy.entropy_summary(stack)[["judge", "rho_nontrans", "tau_avg"]], on="judge", how="left"
    )
    out = out.merge(
        pos[
            [
                "judge",
                "order_consistency",
                "first_win_rate",
                "first_win_rate_decisive",
                "both_orders",
                "p_ordinal",
                "p_ties_dropped",
            ]
        ].rename(columns={"p_ordinal": "mcnemar_p_ordinal", "p_ties_dropped": "mcnemar_p_ties_dropped"}),
        on="judge",
        how="left",
    )
    for c in ("order_consistency", "first_win_rate", "first_win_rate_decisive", "mcnemar_p_ordinal",
              "mcnemar_p_ties_dropped"):  # NaN, not object, where no order is known
        out[c] = pd.to_numeric(out[c], errors="coerce").astype(np.float64)
    out["both_orders"] = out["both_orders"].astype("boolean")
    if ag is not None:
        ag = ag.rename(columns={"judge_1": "judge", "items": f"items_vs_{reference}",
                               "agreement": f"agreement_vs_{reference}", "kappa": f"kappa_vs_{reference}"})
        out = out.merge(ag.drop(columns=["judge_2"]), on="judge", how="left")
        out[f"items_vs_{reference}"] = out[f"items_vs_{reference}"].astype("Int64")
    out = out.sort_values("judge").reset_index(drop=True)
    note = small_graph_note(stack, "overview", n_graphs=n_graphs)
    if note:
        out.attrs["notes"] = [note]
    return out


def _no_order(dataset: str | None, consequence: str) -> LensError:
    return LensError(
        f"No verdict{' in dataset ' + repr(dataset) if dataset else ''} records which answer was "
        f"shown first (order AB/BA), so {consequence}; import the order column, or import with --set "
        "order=AB when model_a was always shown first."
    )


def _refuse_unordered_store(store, dataset: str, judge: str | list[str] | None, table: str) -> None:
    """The position and stress tables' refusal (``_no_order``), asked of the store in SQL before any verdict
    is read: a battle log that records no presentation order gets its sentence at once, not after reading
    every verdict into memory (1.56 GB and 4.4 s of CPU for a million). The same test as ``has_known_order``
    on the verdicts ``_verdicts`` would read (a valid verdict with an order); a selection with no verdict at
    all is left to ``_verdicts``' own sentence."""
    from engine.store.sql import params

    rel = store.verdict_relation(dataset, judge=judge)
    row = store.cursor().execute(
        f"SELECT EXISTS (SELECT 1 FROM {rel}), "
        f"EXISTS (SELECT 1 FROM {rel} WHERE winner <> 'invalid' AND \"order\" IS NOT NULL)",
        params(rel)).fetchone()
    if row is not None and row[0] and not row[1]:
        raise _no_order(dataset, "position bias cannot be measured" if table == "position"
                        else "the order-permutation stress test cannot be run")


def _single_judge_agreement(store, dataset: str, judge: str | list[str] | None, params: dict
                            ) -> pd.DataFrame | None:
    """The agreement table of a selection that holds one judge, decided in SQL before any verdict is read
    (a million one-judge battles were read, 7 s of CPU and 1.56 GB, to print no row): ``agreement``'s empty
    table and ``_single_judge_note``. None where it must be computed: two judges or more, no verdict at all
    (``_verdicts``' own sentence), or a reference other than the one judge (a row of 0 items)."""
    from engine.store.sql import params as sql_params

    rel = store.verdict_relation(dataset, judge=judge)
    row = store.cursor().execute(
        f"SELECT count(*) > 0, list(DISTINCT judge ORDER BY judge) FILTER (WHERE judge IS NOT NULL) "
        f"FROM (SELECT judge FROM {rel})", sql_params(rel)).fetchone()
    if row is None or not row[0]:
        return None
    judges = [str(j) for j in row[1] or []]
    reference = params.get("reference")
    if len(judges) > 1 or (reference is not None and reference not in judges):
        return None
    out = _agreement.agreement_of_items(pd.DataFrame({"judge": pd.Series(dtype=object)}), (),
                                        reference=reference, by_category=_agreement_by(params))
    note = _single_judge_note(judges)
    if note:
        out.attrs["notes"] = [note]
    return out


REFERENCE_TABLES: tuple[str, ...] = ("agreement", "overview", "judges")
"""The tables that compare each judge with a reference judge (``reference``)."""


def _with_reference(table: str, judge: str | list[str] | None,
                    reference: str | None) -> tuple[list[str], str | list[str] | None]:
    """(the judges asked for, the judge filter to read): a judge filter that leaves out the reference of a
    REFERENCE_TABLES table is read with the reference added (``--judge gpt-4 --reference human`` compares
    gpt-4 with human, where the filter alone left no human verdict: no items, or no reference columns),
    and the rows are then cut back to the judges asked for. ``judges``' default reference is human."""
    if judge is None or table not in REFERENCE_TABLES or reference is None:
        return [], judge
    asked = [judge] if isinstance(judge, str) else list(judge)
    ref = "human" if reference == "default" else reference
    return (asked, judge) if ref in asked else (asked, [*asked, ref])


def _single_judge_note(v: pd.DataFrame | list[str]) -> str | None:
    """Why the agreement table has no row when the selection holds fewer than two judges (the Judges
    page says the same above its κ matrix): κ needs a second judge's verdicts on the same items. ``v``:
    the verdicts, or their judges' names."""
    judges = v if isinstance(v, list) else sorted(v["judge"].dropna().astype(str).unique())
    if len(judges) > 1:
        return None
    only = judges[0] if judges else "no judge"
    return (f"The selection holds a single judge ({only}): agreement and Cohen's κ compare two judges on the "
            "items both rated, so there is no row. Import another judge's verdicts on the same prompts to "
            "compare them.")


def _agreement_by(params: dict) -> bool:
    """``by`` for the agreement table: rows are always judge pairs; only category can be added."""
    by = params.get("by")
    if not by:
        return bool(params.get("by_category", False))
    by = (by,) if isinstance(by, str) else tuple(by)
    bad = [c for c in by if c not in ("judge", "category")]
    if bad:
        raise LensError(f"The agreement table is per pair of judges and can only be broken down by category; "
                        f"cannot group it by {', '.join(bad)}.")
    return "category" in by or bool(params.get("by_category", False))


def diagnose(
    store_or_verdicts,
    dataset: str | None = None,
    judge: str | list[str] | None = None,
    table: str = "overview",
    **params,
) -> pd.DataFrame:
    """The named diagnostics table (see ``TABLES``) for a store (``Store``) or a verdict frame.

    Parameters by table: ``by`` (grouping columns; refused by the per-judge / per-graph tables in
    ``UNGROUPED``), ``policy`` (combine policy), ``source`` and ``tie_band`` (PNT, patterns),
    ``grid``/``sigma``/``win_rates`` (heatmap; ``win_rates`` maps model → rate),
    ``length_bound`` (None: every length where tractable)/``edges`` (cycles),
    ``max_permutations``/``seed`` (stress), ``reference``/``by_category`` (agreement, overview),
    ``sntd_variant`` (sntd: ``averaged`` or ``per-order``, engine.diagnostics.sntd), ``r2_on``
    (cycle-fit: ``cdf`` or ``pmf``; paper 003's defaults are ``edges="strict"``, ``r2_on="pmf"``).
    ``position`` and ``stress`` raise LensError when the verdicts carry no usable presentation order.
    """
    if table not in TABLES:
        raise LensError(f"Unknown diagnostics table {table!r}; choose one of {', '.join(TABLES)}.")
    if table in UNGROUPED and params.get("by"):
        row = "judge" if table in ("overview", "judges") else "graph"
        raise LensError(f"The {table} table has one row per {row} "
                        "and cannot be grouped; drop --by.")
    asked, with_ref = _with_reference(table, judge, params.get("reference"))
    if with_ref is not judge:  # the judges asked for, compared with a reference they leave out
        out = diagnose(store_or_verdicts, dataset, judge=with_ref, table=table, **params)
        cut = out[out["judge_1" if table == "agreement" else "judge"].isin(asked)].reset_index(drop=True)
        cut.attrs.update(out.attrs)  # the notes
        return cut
    if table in ("position", "stress") and not isinstance(store_or_verdicts, pd.DataFrame) and dataset:
        _refuse_unordered_store(store_or_verdicts, dataset, judge, table)
    if table == "agreement" and not isinstance(store_or_verdicts, pd.DataFrame) and dataset:
        check_policy(params.get("policy", DEFAULT_POLICY))  # the verdicts' path refuses it in combine_counts
        single = _single_judge_agreement(store_or_verdicts, dataset, judge, params)
        if single is not None:
            return single
    v = _verdicts(store_or_verdicts, dataset, judge)
    policy = params.get("policy", DEFAULT_POLICY)
    band = tuple(params.get("tie_band") or nontransitivity.DEFAULT_TIE_BAND)
    if table == "overview":
        return overview(v, reference=params.get("reference", "human"), policy=policy, tie_band=band)
    if table == "judges":  # issue 28: the judge report
        from engine.diagnostics.judge_report import judge_report, store_lengths, style_length_betas

        lengths = (None if isinstance(store_or_verdicts, pd.DataFrame) or dataset is None
                   else store_lengths(store_or_verdicts, dataset))
        judges = sorted(v["judge"].dropna().astype(str).unique())
        betas = (style_length_betas(store_or_verdicts, dataset, judges)
                 if dataset is not None and lengths is not None and len(lengths) else None)
        return judge_report(v, reference=params.get("reference", "default"), policy=policy, lengths=lengths,
                            style_betas=betas)
    if table == "position":
        if not has_known_order(v):
            raise _no_order(dataset, "position bias cannot be measured")
        return position.position_table(v, _by(params, ("judge",), "position"), policy)
    if table == "stress":
        if not has_known_order(v):
            raise _no_order(dataset, "the order-permutation stress test cannot be run")
        by = _by(params, ("judge",), "stress")
        st = order_stress.stress_test(v, max_permutations=int(params.get("max_permutations", 5040)),
                                      seed=int(params.get("seed", 0)))
        if st.empty:
            raise LensError("No pair of these verdicts was judged in both presentation orders, so the "
                            "order-permutation stress test has nothing to permute.")
        return order_stress.stress_summary(st, by)
    if table == "agreement":
        out = _agreement.agreement(v, reference=params.get("reference"), by_category=_agreement_by(params),
                                   policy=policy)
        note = _single_judge_note(v) if out.empty else None
        if note:
            out.attrs["notes"] = [note]
        return out
    stack = build_buckets(v, policy=policy)
    out = _graph_table(stack, table, params, v)
    fas_note = fas_gap.fas_gap_note(out.attrs.pop("fas_rows")) if "fas_rows" in out.attrs else None
    notes = [n for n in (small_graph_note(stack, table), _empty_note(out, table, stack), fas_note) if n]
    if notes:
        out.attrs["notes"] = notes
    return out


SMALL_GRAPH_TABLES: tuple[str, ...] = (
    "overview", "pnt", "patterns", "sntd", "heatmap", "entropy", "cycles", "cycle-lengths", "participation",
    "cycle-fit", "cycle-graphs", "cycle-prompts", "structure", "fas", "fas-graphs",
)
"""Tables whose triad / cycle statistics leave out graphs of fewer than 3 models."""


def small_graph_count(stack: GraphBuckets, n_graphs: int | None = None) -> int:
    """How many graphs have fewer than 3 models: ``stack.n_below(3)``, or with ``n_graphs`` (the selection's
    graph count, ``stack`` holding only the graphs whose verdicts name 3+ models, valid or not) every graph
    but the stack's of 3+ models: the graphs never built and those whose valid verdicts compare fewer."""
    if n_graphs is None:
        return stack.n_below(3)
    return int(n_graphs) - (stack.T - stack.n_below(3))


def small_graph_note(stack: GraphBuckets, table: str, *, n_graphs: int | None = None) -> str | None:
    """One sentence saying how many graphs a triad / cycle table left out for having < 3 models;
    ``n_graphs``: the selection's graph count when ``stack`` holds only the graphs that name 3+ models."""
    total = stack.T if n_graphs is None else int(n_graphs)
    k = small_graph_count(stack, n_graphs)
    if table not in SMALL_GRAPH_TABLES or not k:
        return None
    what = "its bad-cycle columns" if table == "structure" else "every cycle and triad statistic"
    return (
        f"{k} of {total} graph{'s' if total != 1 else ''} have fewer than 3 models and are left out of "
        f"{what}: no cycle or triad fits in 2 models."
    )


def _empty_note(out: pd.DataFrame, table: str, stack: GraphBuckets) -> str | None:
    """Why a triad table came out empty (no graph holds a fully compared triple)."""
    if table not in ("pnt", "patterns", "sntd", "heatmap") or not out.empty:
        return None
    if not stack.at_least(3):
        return (f"No graph has 3 or more models (largest: {int(stack.sizes.max(initial=0))}), so there is no "
                "model triple to classify.")
    return "No graph has a model triple with all three pairs compared, so there is no triple to classify."


def _graph_table(
    stack: GraphBuckets, table: str, params: dict, v: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The graph-based tables of ``diagnose`` on the bucketed graphs."""
    band = tuple(params.get("tie_band") or nontransitivity.DEFAULT_TIE_BAND)
    if table == "pnt":
        return nontransitivity.pnt_summary(
            stack, _by(params, ("judge",), "pnt"), source=params.get("source", "hard"), tie_band=band
        )
    if table == "patterns":
        return nontransitivity.pattern_summary(stack, _by(params, ("judge",), "patterns"),
                                               source=params.get("source", "hard"), tie_band=band)
    if table == "sntd":
        if not stack.has_soft:
            raise LensError(
                "These verdicts carry no judge probabilities (prob_a), so SNTD cannot be computed."
            )
        variant = params.get("sntd_variant", "averaged")
        if variant not in sntd.SNTD_VARIANTS:
            raise LensError(
                f"Unknown SNTD variant {variant!r}; choose one of {', '.join(sntd.SNTD_VARIANTS)}."
            )
        return sntd.sntd_summary(stack, _by(params, ("judge",), "sntd"), variant=variant, verdicts=v)
    if table == "heatmap":
        return nontransitivity.gap_heatmap(
            stack,
            by=_by(params, ("judge",), "heatmap"),
            win_rates=params.get("win_rates"),
            grid=int(params.get("grid", 35)),
            sigma=float(params.get("sigma", 1.0)),
            source=params.get("source", "hard"),
            tie_band=band,
        )
    if table == "entropy":
        return entropy.entropy_summary(stack, _by(params, ("judge",), "entropy"))
    if table == "entropy-graphs":
        return entropy.entropy_table(stack)
    if table == "structure":
        return summary.structure_summary(stack, _by(params, summary.DEFAULT_BY, "structure"))
    if table in ("fas", "fas-graphs"):
        rows = fas_gap.fas_gap_table(stack)
        out = rows if table == "fas-graphs" else fas_gap.fas_gap_summary(rows, _by(params, ("judge",), "fas"))
        out.attrs["fas_rows"] = rows
        return out
    # cycle tables
    bound = params.get("length_bound")
    ctab, part = cycle_stats.cycle_table(stack, length_bound=None if bound is None else int(bound),
                                         edges=params.get("edges", "bad"))
    if table == "cycle-graphs":
        return ctab
    by = _by(params, ("judge",), table)
    if table == "cycles":
        return cycle_stats.inconsistency_rates(ctab, by)
    if table == "cycle-lengths":
        return cycle_stats.length_distribution(ctab, by)
    if table == "participation":
        return cycle_stats.participation(ctab, part, by)
    if table == "cycle-fit":
        return cycle_stats.count_fits(ctab, by, r2_on=params.get("r2_on", "cdf"))
    return cycle_stats.prompt_counts(ctab, by)  # cycle-prompts


def diagnose_cached(store: Store, dataset: str, judge: str | list[str] | None = None, table: str = "overview",
                    **params) -> tuple[pd.DataFrame, bool]:
    """(table, hit): ``diagnose`` on a store through engine.experiments.results_cache, keyed by the dataset
    version, the table name, the judge filter and the parameters (a new import misses)."""
    from engine.experiments import results_cache

    key = {"judge": judge if judge is None or isinstance(judge, str) else sorted(judge), **params,
           "_version": CACHE_VERSION}
    return results_cache.cached(store, dataset, f"diagnose:{table}", key,
                                lambda: diagnose(store, dataset, judge=judge, table=table, **params))


__all__ = [
    "CACHE_VERSION",
    "SMALL_GRAPH_TABLES",
    "TABLES",
    "UNGROUPED",
    "diagnose",
    "diagnose_cached",
    "overview",
    "small_graph_count",
    "small_graph_note",
]
