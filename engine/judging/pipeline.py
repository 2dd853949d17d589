"""One judge run, end to end: inputs → pairs (round robin or SWIM) → protocol → stored verdicts.

Verdicts are written after every chunk of pairs, and every model call is cached as it completes, so
the app shows a growing dataset during a long run, and a killed run resumes by rerunning the same
command: cached calls are read back, not repeated, and each pair's verdicts are replaced, not doubled.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import LensError
from ..store import Store
from . import inputs as inp
from .persist import finish_run, start_run, write_answers, write_prompts, write_verdicts
from .protocols import PROTOCOLS, PairJob, ProtocolConfig, run_protocol
from .runner import Runner, RunStats
from .schedule import SwimResult, round_robin_pairs, swim


@dataclass(frozen=True)
class JudgeReport:
    run_id: int
    dataset: str
    judge: str
    pairs: int
    verdicts: int
    invalid: int
    stats: RunStats
    swim: SwimResult | None = None


def load_inputs(
    store: Store,
    dataset: str,
    source: str,
    *,
    models: list[str] | None = None,
    categories: list[str] | None = None,
    limit_per_category: int | None = None,
) -> tuple[int, int]:
    """Copy questions and answers from a folder like data/mt_bench into the dataset; (prompts, answers)."""
    folder = inp.resolve_inputs(source)
    q = inp.select_prompts(inp.read_questions(folder), categories, limit_per_category)
    a = inp.read_answers(folder, models)
    a = a[a["prompt_id"].isin(set(q["prompt_id"])) & a["turn"].isin(set(q["turn"]))]
    write_prompts(store, dataset, q, source=str(folder))
    write_answers(store, dataset, a, source=str(folder))
    return len(q), len(a)


def build_jobs(
    store: Store,
    dataset: str,
    *,
    models: list[str] | None = None,
    variants: list[int] | None = None,
    pairs: list[tuple[str, str]] | None = None,
    turn: int = 1,
) -> list[PairJob]:
    """Pair jobs for every prompt instance of ``dataset`` where both models have an answer."""
    prompts = store.prompt_texts(dataset)
    answers = store.answer_texts(dataset)
    if prompts.empty:
        raise LensError(
            f"Dataset {dataset!r} has no prompt texts to judge; load some with --inputs mt_bench."
        )
    prompts = prompts[prompts["turn"] == turn]
    if variants is not None:
        prompts = prompts[prompts["variant"].isin(variants)]
    answers = answers[answers["turn"] == turn]
    have = sorted(set(answers["model"]))
    if models:
        unknown = [m for m in models if m not in have]
        if unknown:
            raise LensError(
                f"Dataset {dataset!r} holds no answers of model {unknown[0]!r}; it has {', '.join(have)}."
            )
        answers = answers[answers["model"].isin(models)]
    text = {(r.prompt_id, r.variant, r.model): r.text for r in answers.itertuples(index=False)}
    all_pairs = pairs if pairs is not None else round_robin_pairs(models or have)
    jobs = []
    for p in prompts.itertuples(index=False):
        for a, b in all_pairs:
            ta, tb = text.get((p.prompt_id, p.variant, a)), text.get((p.prompt_id, p.variant, b))
            if ta is None or tb is None:
                continue
            jobs.append(
                PairJob(
                    str(p.prompt_id),
                    int(p.variant),
                    int(p.turn),
                    p.category,
                    p.variant_kind,
                    p.text,
                    a,
                    b,
                    ta,
                    tb,
                )
            )
    return jobs


def judge_run(
    store: Store,
    dataset: str,
    runner: Runner,
    *,
    protocol: str = "swapped",
    cfg: ProtocolConfig | None = None,
    judge: str | None = None,
    models: list[str] | None = None,
    variants: list[int] | None = None,
    schedule: str = "round-robin",
    seed: int = 0,
    chunk_size: int = 32,
    params: dict | None = None,
) -> JudgeReport:
    """Judge ``dataset``'s prompt instances with ``runner``'s backend and store the verdicts."""
    if protocol not in PROTOCOLS:
        raise LensError(f"Unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}.")
    if schedule not in ("round-robin", "swim"):
        raise LensError(f"Unknown schedule {schedule!r}; choose round-robin or swim.")
    cfg = cfg or ProtocolConfig.default()
    judge = judge or f"{runner.backend.model}:{protocol}"
    source = f"judge:{runner.backend.name}:{runner.backend.model}:{protocol}:{cfg.pairwise.id}@{cfg.pairwise.version}"
    run_id = start_run(
        store, "judge", dataset, runner.backend.name, runner.backend.model, protocol, params or {}
    )
    runner.run_id = run_id
    counts = {"pairs": 0, "verdicts": 0, "invalid": 0}

    def run_jobs(jobs: list[PairJob]) -> pd.DataFrame:
        frames = []
        for i in range(0, len(jobs), chunk_size):
            rows = run_protocol(protocol, jobs[i : i + chunk_size], cfg, runner)
            write_verdicts(store, dataset, judge, rows, source=source, first_line=counts["verdicts"] + 1)
            counts["pairs"] += len(jobs[i : i + chunk_size])
            counts["verdicts"] += len(rows)
            counts["invalid"] += int((rows["winner"] == "invalid").sum())
            frames.append(rows)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    status = "failed"
    swim_result = None
    try:
        if schedule == "round-robin":
            jobs = build_jobs(store, dataset, models=models, variants=variants)
            if not jobs:
                raise LensError(
                    f"Dataset {dataset!r} has no prompt with answers from two of the chosen models."
                )
            run_jobs(jobs)
        else:
            have = models or sorted(set(store.answer_texts(dataset)["model"]))
            if len(have) < 2:
                raise LensError("SWIM needs at least two models with answers.")

            def judge_pair(p: str, x: str) -> pd.DataFrame:
                a, b = sorted((p, x))
                return run_jobs(build_jobs(store, dataset, models=have, variants=variants, pairs=[(a, b)]))

            swim_result = swim(have, judge_pair, seed=seed)
        status = "done"
    finally:
        finish_run(store, run_id, runner.stats, status)
    return JudgeReport(
        run_id,
        dataset,
        judge,
        counts["pairs"],
        counts["verdicts"],
        counts["invalid"],
        runner.stats,
        swim_result,
    )
