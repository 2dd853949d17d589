"""What a reader of a leaderboard should know beside the table: one sentence per fit detail
(keep-K and its threshold, models left off, regularisation, convergence, the ranker's own notes,
bootstrap, invalid verdicts, the counting unit). The CLI prints them; the library never does."""

from __future__ import annotations

from typing import Any

from engine.graphs.truncation import DEFAULT_SCORE
from engine.rankers import ranker_object
from engine.ranking.board import UNIT_NOTES, Leaderboard


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def components_note(components: list[list[str]]) -> str:
    """One sentence naming the comparison graph's components (at most 8 models named per component)."""
    parts = [
        f"{k} ({', '.join(ms[:8])}{f' and {len(ms) - 8} more' if len(ms) > 8 else ''})"
        for k, ms in enumerate(components[:10], start=1)
    ]
    more = f" and {len(components) - 10} more" if len(components) > 10 else ""
    return (
        f"comparison graph: {len(components)} components that no verdict links: {'; '.join(parts)}{more}; "
        "scores and ranks compare only within a component (column component), never across."
    )


def board_notes(board: Leaderboard) -> list[str]:
    """One sentence per fit detail a reader of the table should know (regularisation, convergence,
    nu, Elo's K and order, Kemeny exact or heuristic and its tie-break, PGED's mode, bootstrap
    regularisations, the policy for pairs never compared). The CLI prints them; the library never does."""
    p, d, r = board.params, board.result.details, board.params["ranker"]
    obj = ranker_object(r)
    out: list[str] = []
    if p.get("keep_k") is not None:
        thr = p.get("threshold")
        thr_text = ", ".join(f"{k} {_fmt(v)}" for k, v in thr.items()) if isinstance(thr, dict) else _fmt(thr)
        out.append(
            f"keep-K: ranked the {p['n_graphs']} graph(s) of smallest truncation score (S_mu = C3_bad + "
            f"{_fmt(p['mu'])}*C4_bad{' scaled by coverage' if DEFAULT_SCORE == 'coverage' else ''}) "
            f"out of {p['n_graphs_pool']} in the {p['pool']} pool"
            f"{' (K per category)' if p.get('per_category') else ''}; threshold S_K = {thr_text}."
        )
        if p.get("keep_note"):
            out.append(f"keep-K: {p['keep_note']}")
    if p.get("dropped_models"):
        dropped = p["dropped_models"]
        one = len(dropped) == 1
        prefix = "keep-K: " if p.get("keep_k") is not None else ""
        out.append(
            f"{prefix}{', '.join(dropped)} {'has' if one else 'have'} no comparison in the ranked graphs "
            f"and {'is' if one else 'are'} left off the board."
        )
    if p.get("components"):
        out.append(components_note(p["components"]))
    reg = d.get("regularisation")
    if reg and float(d.get("alpha", 0.0) or 0.0) > 0:
        out.append(f"{r}: {reg}.")
    if d.get("converged") is False:
        out.append(
            f"{r}: the fit did not converge ({d.get('convergence') or d.get('message', 'no reason given')})."
        )
    out.extend(obj.notes(d, p, board.table if obj.notes_read_table else None))
    if d.get("pairs_without_probability"):
        out.append(
            f"{r}: {d['pairs_without_probability']} compared pair(s) had no judge probability and count "
            "as hard outcomes."
        )
    if obj.counting and p.get("n_uncompared_pairs"):
        out.append(
            f"{r}: {p['n_uncompared_pairs']} pair(s) of models were never compared; "
            f"{d.get('uncompared_pairs')}."
        )
    if p.get("bootstrap"):
        if p.get("bootstrap_unit") == "prompt":
            out.append(
                f"bootstrap: resampled prompts (all graphs of a prompt together), {p['bootstrap']} times"
                + obj.prompt_unit_words
                + "."
            )
        if p.get("bootstrap_n_undefined"):
            out.append(
                f"bootstrap: {p['bootstrap_n_undefined']} of {p['bootstrap']} resamples left some model "
                "without "
                f"the comparisons its {r} score needs; that model's intervals use the other resamples."
            )
        if p.get("bootstrap_not_estimable"):
            why = p["bootstrap_not_estimable"]
            groups: dict[str, list[str]] = {}
            for model, reason in why.items():
                groups.setdefault(reason, []).append(model)
            parts = [f"{', '.join(ms[:8])}{f' and {len(ms) - 8} more' if len(ms) > 8 else ''} ({reason})"
                     for reason, ms in groups.items()]
            out.append(
                f"bootstrap: the interval of {'; '.join(parts)} cannot be estimated from the resamples, so "
                "it is shown as not estimable (ci_note), not as a zero-width interval."
            )
        if p.get("bootstrap_n_regularised"):
            out.append(f"bootstrap: {p['bootstrap_n_regularised']} of {p['bootstrap']} resamples needed the "
                       "stated regularisation.")
        if p.get("bootstrap_n_unconverged"):
            out.append(
                f"bootstrap: {p['bootstrap_n_unconverged']} of {p['bootstrap']} resample fits did not "
                "converge."
            )
        if p.get("bootstrap_method") == "one refit per resample":
            out.append(f"bootstrap: {r} has no batched form here; refitted once per resample.")
    if p.get("n_invalid_verdicts"):
        out.append(f"{p['n_invalid_verdicts']} invalid verdict(s) left out (never counted as ties).")
    if p.get("unit") == "battles" and p.get("baseline") is not None:
        pass  # verdicts fitted as battles for a baseline: engine.ranking.baseline.baseline_notes says how
    elif p.get("unit") == "battles":  # a pair-count dataset (engine.ranking.pair_count_board)
        out.append(f"unit: {p.get('n_votes'):,} battles summed per model pair (pair counts: no prompts, no "
                   "verdicts); ties include the both-bad ties.")
    elif (
        p.get("unit") == "votes"
        and p.get("n_votes") is not None
        and p.get("n_votes") != p.get("n_verdicts_valid")
    ):
        out.append(
            f"unit: {p['n_votes']} votes from {p['n_verdicts_valid']} valid verdicts; {UNIT_NOTES['votes']}."
        )
    elif p.get("unit") == "votes":
        out.append(f"unit: {p.get('n_votes')} votes, one per valid verdict; {UNIT_NOTES['votes']}.")
    elif p.get("unit") == "graphs":
        out.append(f"unit: {UNIT_NOTES['graphs']} (wins, losses, ties and votes count graph edges).")
    return out
