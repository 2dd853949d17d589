"""One judge run, end to end: inputs → pairs (round robin or SWIM) → protocol → stored verdicts.

All pairs go through the runner's one pool at once (bounded by its concurrency), and each pair's
rows are written as pairs complete, a small batch at a time (``VerdictWriter``), while every model
call is cached the moment it completes. So the app shows a growing dataset during a long run, and
a killed run resumes by rerunning the same command: cached calls are read back, not repeated, and
each pair's verdicts are replaced, not doubled. ``schedule="swim"`` ranks the models with SWIM;
with ``add_model`` it inserts one model into the judge's stored leaderboard instead.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.errors import LensError
from engine.frames import records
from engine.judging import inputs as inp
from engine.judging.persist import (
    finish_run,
    run_status,
    start_run,
    write_answers,
    write_prompts,
    write_verdicts,
)
from engine.judging.protocols import (
    PROTOCOLS,
    ROW_COLUMNS,
    PairJob,
    ProtocolConfig,
    default_judge_name,
    make_unit,
    truncated_pairs,
)
from engine.judging.run_errors import STORE_ERRORS
from engine.judging.runner import Runner, RunStats
from engine.judging.schedule import (
    SwimResult,
    opponents_for,
    round_robin_pairs,
    swim,
    swim_add,
    swim_comparisons,
)
from engine.store.connection import Store


@dataclass(frozen=True)
class JudgeReport:
    """What a judge run did: its id, pairs and verdicts written (invalid among them), call stats and
    status."""

    run_id: int
    dataset: str
    judge: str
    pairs: int
    verdicts: int
    invalid: int
    stats: RunStats
    swim: SwimResult | None = None
    truncated: int = 0
    status: str = "done"


def load_inputs(
    store: Store,
    dataset: str,
    source: str,
    *,
    models: list[str] | None = None,
    categories: list[str] | None = None,
    limit_per_category: int | None = None,
    turns: tuple[int, ...] = (1,),
) -> tuple[int, int]:
    """Copy questions and answers from a folder like data/mt_bench into the dataset; (prompts, answers).
    ``turns``: the questions' turns to load (the first by default; judging turn t needs turns 1 … t, its
    conversation: ``build_jobs``). A shipped folder's model map
    (``data/mappings/<folder>.models.csv``, e.g. mt_bench's) is kept with a dataset of another name that
    this call creates, so its answers' models reach the reference as they do under the shipped name; a
    dataset that exists keeps the map it has, or none if its map was cleared."""
    folder = inp.resolve_inputs(source)
    new = not store.has_dataset(dataset)
    q = inp.select_prompts(inp.read_questions(folder, turns), categories, limit_per_category)
    a = inp.read_answers(folder, models, turns)
    a = a[a["prompt_id"].isin(set(q["prompt_id"])) & a["turn"].isin(set(q["turn"]))]
    write_prompts(store, dataset, q, source=str(folder))
    write_answers(store, dataset, a, source=str(folder))
    if new:
        keep_shipped_map(store, dataset, folder)
    return len(q), len(a)


def keep_shipped_map(store: Store, dataset: str, folder: Path) -> bool:
    """Keep the shipped model map of a shipped inputs folder (``data/<name>`` with
    ``data/mappings/<name>.models.csv``) as ``dataset``'s own map when the dataset has none and is not
    ``<name>`` (which the shipped map reaches by its name); whether it did. Why: ``judge --dataset my-run
    --inputs mt_bench`` placed 2 of MT-Bench's 6 models on the reference (the others' names differ from
    the Arena's), so its reference columns and curves were measured over 2 models."""
    from engine.ranking.reference import has_mapping, load_mapping
    from engine.store.model_maps import set_stored_map, stored_map

    name = folder.resolve().name
    if (dataset == name or folder.resolve() != (inp.DATA_DIR / name).resolve() or not has_mapping(name)
            or not stored_map(store, dataset).empty):
        return False
    shipped = load_mapping(name)
    set_stored_map(store, dataset, pd.DataFrame({"model": shipped["model"].astype(str),
                                                 "reference_model": shipped["arena_model"].fillna("")}))
    return True


def build_jobs(
    store: Store,
    dataset: str,
    *,
    models: list[str] | None = None,
    variants: list[int] | None = None,
    pairs: list[tuple[str, str]] | None = None,
    turn: int = 1,
) -> list[PairJob]:
    """Pair jobs for every prompt instance of ``dataset`` where both models have an answer. ``turn`` > 1: the
    question and each answer are that turn's conversation (``conversation``: every earlier question and the
    model's own earlier answers, then the turn's), for a prompt where both models answered every turn up to
    it; the verdicts are the turn's."""
    prompts = store.prompt_texts(dataset)
    answers = store.answer_texts(dataset)
    if prompts.empty:
        raise LensError(
            f"Dataset {dataset!r} has no prompt texts to judge; load some with --inputs mt_bench."
        )
    if turn > 1:
        prompts, answers = conversation(prompts, answers, turn)
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
    text = {(r.prompt_id, r.variant, r.model): r.text for r in records(answers)}
    all_pairs = pairs if pairs is not None else round_robin_pairs(models or have)
    jobs = []
    for p in records(prompts):
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


def conversation(prompts: pd.DataFrame, answers: pd.DataFrame,
                 turn: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The prompt and answer texts of ``turn`` > 1 as a judge reads them: the question is every question up to
    the turn, the earlier ones marked as context; an answer is the model's own answers up to it, likewise.
    A prompt instance lacking an earlier question, or a model lacking an earlier answer, is left out: the
    turn's answer builds on the model's own earlier ones, which the judge must see (one pairwise prompt of the
    turn alone does not show them)."""
    key = ["prompt_id", "variant"]

    def joined(frame: pd.DataFrame, by: list[str], word: str) -> pd.DataFrame:
        up_to = frame[frame["turn"].between(1, turn)].sort_values("turn", kind="stable")
        # one row per turn of an instance (the tables' key): all turns 1 … turn are there when there are turn
        whole = up_to[up_to.groupby(by, sort=False)["turn"].transform("size") == turn]
        texts = whole.groupby(by, sort=False)["text"].agg(list).map(lambda ts: _turns_text(ts, word))
        last = whole[whole["turn"] == turn].set_index(by)
        return last.assign(text=texts.reindex(last.index)).reset_index()

    return joined(prompts, key, "Question"), joined(answers, [*key, "model"], "Answer")


def _turns_text(texts: list[str], word: str) -> str:
    """Turns 1 … t of a conversation's one side, the last the one judged; the questions' side opens with a
    line saying what is judged (the shipped templates speak of one question and two answers)."""
    t = len(texts)
    head = ([f"(A conversation of {t} turns: judge only the answers to question {t}. The earlier questions, "
             "and each assistant's own earlier answers shown with its answer, are context.)"]
            if word == "Question" else [])
    parts = [f"[{word} {k} of {t}, context]\n{text}" for k, text in enumerate(texts[:-1], 1)]
    return "\n\n".join([*head, *parts, f"[{word} {t} of {t}, the one judged]\n{texts[-1]}"])


class VerdictWriter:
    """Collects finished pairs' rows and writes them to ``verdicts`` in small batches.

    ``add`` is called on the runner's (main) thread once per finished pair; every ``every`` pairs,
    or ``every_s`` seconds, ``flush`` writes the buffered rows in one transaction. Rows are numbered
    (``source_line``) in the order they are written.
    """

    def __init__(
        self, store: Store, dataset: str, judge: str, source: str, *, every: int = 4096, every_s: float = 2.0
    ):
        self.store, self.dataset, self.judge, self.source = store, dataset, judge, source
        self.every, self.every_s = every, every_s
        self.buffer: list[dict] = []
        self.pairs = self.verdicts = self.invalid = 0
        self._since = 0
        self._last = time.monotonic()

    def add(self, rows: list[dict]) -> None:
        """Buffer one finished pair's rows; flush when enough pairs or seconds have gone by."""
        self.buffer.extend(rows)
        self.pairs += 1
        self._since += 1
        if self._since >= self.every or time.monotonic() - self._last >= self.every_s:
            self.flush()

    def due(self) -> float:
        """For ``Runner.drive(on_tick=)``: flush buffered rows ``every_s`` after the last write, even when
        no further pair finishes (a slow server); the monotonic time of the next due flush, else ``inf``."""
        if self.buffer and time.monotonic() - self._last >= self.every_s:
            self.flush()
        return self._last + self.every_s if self.buffer else float("inf")

    def flush(self) -> None:
        # ---- THE VERDICT WRITE POINT: the only place a judge run writes verdicts (one transaction
        # per small batch of finished pairs; the calls behind them are already in judge_calls).
        """Write the buffered rows as one transaction (the only place a judge run writes verdicts)."""
        if self.buffer:
            rows = pd.DataFrame(self.buffer, columns=ROW_COLUMNS)
            write_verdicts(
                self.store, self.dataset, self.judge, rows, source=self.source, first_line=self.verdicts + 1
            )
            self.verdicts += len(rows)
            self.invalid += int((rows["winner"] == "invalid").sum())
            self.buffer = []
        self._since = 0
        self._last = time.monotonic()


def judge_source(runner: Runner, protocol: str, cfg: ProtocolConfig) -> str:
    """The ``source_file`` of a judge run's verdicts: backend, model, protocol and template references."""
    refs = ",".join(t.ref for t in cfg.templates_for(protocol))
    return f"judge:{runner.backend.name}:{runner.backend.model}:{protocol}:{refs}"


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
    add_model: str | None = None,
    flush_every: int = 4096,
    flush_every_s: float = 2.0,
    params: dict | None = None,
    force: bool = False,
    turn: int = 1,
) -> JudgeReport:
    """Judge ``dataset``'s prompt instances with ``runner``'s backend and store the verdicts.

    ``add_model`` (SWIM only): insert that model into the leaderboard of ``judge``'s stored verdicts
    on the other models, judging it against ceil(log2 M) of them per prompt; stored rows of other
    pairs are not touched. ``force``: start even if a live run of the same calls is recorded
    (``persist.start_run``). ``turn``: the conversation turn judged (``build_jobs``; round robin only).
    """
    if turn > 1 and schedule != "round-robin":
        raise LensError("Judging a later turn (--turn) works with the round-robin schedule: SWIM ranks from "
                        "a judge's stored verdicts, of whichever turn they are.")
    if protocol not in PROTOCOLS:
        raise LensError(f"Unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}.")
    if schedule not in ("round-robin", "swim"):
        raise LensError(f"Unknown schedule {schedule!r}; choose round-robin or swim.")
    if add_model is not None and schedule != "swim":
        raise LensError("Adding a model (--add-model) needs the swim schedule.")
    cfg = cfg or ProtocolConfig.default()
    judge = judge or default_judge_name(runner.backend.model, protocol, cfg)
    source = judge_source(runner, protocol, cfg)
    run_id = start_run(
        store,
        "judge",
        dataset,
        runner.backend.name,
        runner.backend.model,
        protocol,
        params or {},
        force=force,
    )
    runner.run_id = run_id
    writer = VerdictWriter(store, dataset, judge, source, every=flush_every, every_s=flush_every_s)
    truncated = 0
    swim_result = None
    error: BaseException | None = None

    def run_jobs(jobs: list[PairJob], collect: list[dict] | None = None) -> None:
        nonlocal truncated
        truncated += truncated_pairs(jobs, cfg.max_answer_chars)

        def done(rows: list[dict]) -> None:
            if collect is not None:
                collect.extend(rows)
            writer.add(rows)

        runner.drive((make_unit(protocol, j, cfg) for j in jobs), done, on_tick=writer.due)

    try:
        if schedule == "round-robin":
            jobs = build_jobs(store, dataset, models=models, variants=variants, turn=turn)
            if not jobs:
                raise LensError(
                    f"Dataset {dataset!r} has no prompt with answers from two of the chosen models"
                    + (f" on every turn up to {turn}." if turn > 1 else ".")
                )
            with runner.progress_bar(len(jobs), f"judge ({protocol})", "pair"):
                run_jobs(jobs)
        else:
            swim_result = _run_swim(
                store, dataset, runner, judge, models, variants, seed, add_model, run_jobs
            )
        writer.flush()
    except BaseException as exc:
        error = exc
        with contextlib.suppress(Exception):  # the first error is the one to report
            writer.flush()  # pairs that finished before the error are real verdicts
        raise
    finally:
        try:
            finish_run(
                store, run_id, runner.stats, run_status(runner.stats, error), truncated_pairs=truncated
            )
        except STORE_ERRORS:
            if error is None:
                raise
            # the run already failed (often: the store is unavailable); that error is the one to report
    return JudgeReport(
        run_id,
        dataset,
        judge,
        writer.pairs,
        writer.verdicts,
        writer.invalid,
        runner.stats,
        swim_result,
        truncated,
        run_status(runner.stats),
    )


def _run_swim(
    store: Store, dataset, runner, judge, models, variants, seed, add_model, run_jobs
) -> SwimResult:
    """SWIM from scratch over ``models``, or (``add_model``) one insertion into the stored leaderboard."""
    answers = store.answer_texts(dataset)
    have = models or sorted(set(answers["model"]))
    n_prompts = len(build_jobs(store, dataset, models=have[:2], variants=variants)) if len(have) >= 2 else 0

    def judge_pair(p: str, x: str) -> pd.DataFrame:
        a, b = sorted((p, x))
        rows: list[dict] = []
        run_jobs(build_jobs(store, dataset, models=[a, b], variants=variants, pairs=[(a, b)]), rows)
        return pd.DataFrame(rows, columns=ROW_COLUMNS)

    if add_model is None:
        if len(have) < 2:
            raise LensError("SWIM needs at least two models with answers.")
        with runner.progress_bar(swim_comparisons(len(have)) * n_prompts, "judge (swim)", "pair"):
            return swim(have, judge_pair, seed=seed)
    if add_model not in set(answers["model"]):
        raise LensError(f"Dataset {dataset!r} holds no answers of model {add_model!r} to add.")
    stored = store.verdicts(dataset, judge=judge) if store.has_dataset(dataset) else pd.DataFrame()
    if not stored.empty:
        stored = stored[(stored["model_a"] != add_model) & (stored["model_b"] != add_model)]
    ranked = sorted(set(stored["model_a"]) | set(stored["model_b"])) if not stored.empty else []
    if models:
        ranked = [m for m in ranked if m in models]
    if not ranked:
        raise LensError(
            f"Dataset {dataset!r} has no stored verdicts of judge {judge!r} to add {add_model!r} to; "
            "judge the other models first, or name their judge with --judge-name."
        )
    with runner.progress_bar(opponents_for(len(ranked)) * max(n_prompts, 1), "judge (swim add)", "pair"):
        return swim_add(add_model, ranked, stored, judge_pair, seed=seed)
