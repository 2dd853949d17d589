"""Prompt perturbation: k paraphrases per prompt, kept only if a strict equivalence check says YES.

Stage 1 asks the generator for a JSON array of exactly k rewrites of each original prompt; stage 2
shows the original and the candidates to a checker that answers a JSON array of ``"YES"``/``"NO"``
(exactly those words), one per candidate (paper 000, Appendix C.1). An unparsable reply rejects that
prompt's candidates (counted, never guessed at); a failed call changes nothing.

Variants are stable: a stored variant is never renumbered, rewritten or deleted here, because
answers and verdicts refer to it by number. An accepted rewrite whose text is already a variant of
that prompt keeps that variant (and its lineage); a new one gets the next free number (above every
number the prompt has in prompts, answers or verdicts), with ``variant_kind='paraphrase'``,
``parent_variant=0`` and a lineage row naming both calls. So reruns are additive and idempotent:
``perturb -k 3`` then ``perturb -k 1`` keeps every variant made by the first. Both stages use the
call cache, so a rerun with the same k is free and gives the same variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from engine.frames import records
from engine.judging.backends import ChatRequest, Decoding
from engine.judging.parsing import parse_json_array
from engine.judging.persist import LINEAGE_COLUMNS, PROMPT_COLUMNS, highest_variants, lineage, write_variants
from engine.judging.runner import Runner
from engine.judging.templates import Template
from engine.store.connection import Store

PARAPHRASE_DECODING = Decoding(max_tokens=1024)
CHECK_DECODING = Decoding(max_tokens=64)


@dataclass(frozen=True)
class PerturbReport:
    """What a perturb run did: prompts seen, candidates, accepted and new variants, unparsable replies."""

    prompts: int
    candidates: int
    accepted: int
    unparsable_generations: int
    unparsable_checks: int
    variants: pd.DataFrame  # every accepted rewrite with its (kept or new) variant number
    added: int = 0  # accepted rewrites that became new variants


def _candidate_list(cands: list[str]) -> str:
    return "\n".join(f"CANDIDATE {i}:\n{c}" for i, c in enumerate(cands, 1))


def perturb(
    store: Store,
    dataset: str,
    runner: Runner,
    k: int,
    generator: Template,
    checker: Template,
    *,
    checker_runner: Runner | None = None,
    decoding: Decoding = PARAPHRASE_DECODING,
    check_decoding: Decoding = CHECK_DECODING,
    turn: int = 1,
) -> PerturbReport:
    """Make, check and store paraphrase variants of every original prompt of ``dataset``."""
    checker_runner = checker_runner or runner
    prompts = store.prompt_texts(dataset)
    originals = prompts[(prompts["variant"] == 0) & (prompts["turn"] == turn)].reset_index(drop=True)
    gen_reqs = [
        ChatRequest(generator.render(k=k, text=t), decoding, generator.id, generator.version)
        for t in originals["text"]
    ]
    gen_res = runner.call(gen_reqs, desc="paraphrase")
    cands: list[list[str] | None] = []
    bad_gen = 0
    for r in gen_res:
        arr = parse_json_array(r.text, k) if r is not None else None
        if r is not None and (arr is None or not all(isinstance(x, str) and x.strip() for x in arr)):
            bad_gen += 1
            arr = None
        cands.append([x.strip() for x in arr] if arr else None)
    todo = [i for i, c in enumerate(cands) if c]
    checked = {i: c for i, c in enumerate(cands) if c}  # the prompts whose candidates are checked
    chk_reqs = [
        ChatRequest(
            checker.render(
                n=len(checked[i]), text=originals.at[i, "text"], candidates=_candidate_list(checked[i])
            ),
            check_decoding,
            checker.id,
            checker.version,
        )
        for i in todo
    ]
    chk_res = checker_runner.call(chk_reqs, desc="equivalence") if chk_reqs else []
    accepted: dict[int, list[tuple[int, str]]] = {}  # prompt row → [(candidate index, text)]
    bad_chk = 0
    for i, r in zip(todo, chk_res, strict=True):
        if r is None:
            continue  # the check failed after all retries: nothing changes for this prompt
        verdicts = parse_json_array(r.text, len(checked[i]))
        if verdicts is None or not all(isinstance(v, str) and v.strip() in ("YES", "NO") for v in verdicts):
            bad_chk += 1
            continue
        accepted[i] = [
            (j, c) for j, (c, ok) in enumerate(zip(checked[i], verdicts, strict=True)) if ok.strip() == "YES"
        ]
    existing = prompts[(prompts["variant_kind"] == "paraphrase") & (prompts["turn"] == turn)]
    known = {(r.prompt_id, r.text): int(r.variant) for r in records(existing)}
    top = highest_variants(store, dataset)
    variants, lineage_rows = [], []
    added = 0
    for i, items in accepted.items():
        p = originals.loc[i]
        pid = str(p["prompt_id"])
        for j, c in items:
            v = known.get((pid, c))
            if v is None:
                v = top.get(pid, 0) + 1
                top[pid] = v
                known[(pid, c)] = v
                added += 1
                lineage_rows.append(
                    {
                        "prompt_id": pid,
                        "variant": v,
                        "turn": turn,
                        "parent_variant": 0,
                        "candidate_index": j,
                        "generator_call": runner.key(gen_reqs[i]),
                        "check_call": checker_runner.key(chk_reqs[todo.index(i)]),
                    }
                )
            variants.append(
                {
                    "prompt_id": pid,
                    "variant": v,
                    "turn": turn,
                    "category": p["category"],
                    "variant_kind": "paraphrase",
                    "parent_variant": 0,
                    "text": c,
                }
            )
    vdf = pd.DataFrame(
        variants,
        columns=list(PROMPT_COLUMNS),
    ).drop_duplicates(["prompt_id", "variant"])
    ldf = pd.DataFrame(
        lineage_rows,
        columns=list(LINEAGE_COLUMNS),
    )
    new_keys = {(r["prompt_id"], r["variant"]) for r in lineage_rows}
    fresh = vdf[[(pid, v) in new_keys for pid, v in zip(vdf["prompt_id"], vdf["variant"], strict=True)]]
    if not fresh.empty:
        write_variants(store, dataset, fresh, ldf)
    return PerturbReport(
        len(originals),
        sum(len(c) for c in cands if c),
        len(vdf),
        bad_gen,
        bad_chk,
        vdf.reset_index(drop=True),
        added,
    )


__all__ = ["PerturbReport", "perturb", "lineage"]
