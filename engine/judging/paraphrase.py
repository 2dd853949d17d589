"""Prompt perturbation: k paraphrases per prompt, kept only if a strict equivalence check says YES.

Stage 1 asks the generator for a JSON array of exactly k rewrites of each original prompt; stage 2
shows the original and the candidates to a checker that answers a JSON array of YES/NO, one per
candidate (paper 000, Appendix C.1). Accepted rewrites become variants 1..m of the prompt (variant 0
is the original), with ``variant_kind='paraphrase'``, ``parent_variant=0`` and a lineage row naming
both calls. An unparsable reply rejects that prompt's candidates (counted, never guessed at).
Both stages use the call cache, so rerunning is free and gives the same variants.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..store import Store
from .backends import ChatRequest, Decoding
from .parsing import parse_json_array
from .persist import ensure_dataset
from .runner import Runner
from .templates import Template

PARAPHRASE_DECODING = Decoding(max_tokens=1024)
CHECK_DECODING = Decoding(max_tokens=64)


@dataclass(frozen=True)
class PerturbReport:
    prompts: int
    candidates: int
    accepted: int
    unparsable_generations: int
    unparsable_checks: int
    variants: pd.DataFrame


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
    chk_reqs = [
        ChatRequest(
            checker.render(
                n=len(cands[i]), text=originals.at[i, "text"], candidates=_candidate_list(cands[i])
            ),
            CHECK_DECODING,
            checker.id,
            checker.version,
        )
        for i in todo
    ]
    chk_res = checker_runner.call(chk_reqs, desc="equivalence") if chk_reqs else []
    variants, lineage = [], []
    bad_chk = 0
    for i, r in zip(todo, chk_res, strict=True):
        if r is None:
            continue
        verdicts = parse_json_array(r.text, len(cands[i]))
        if verdicts is None or not all(
            isinstance(v, str) and v.strip().upper() in ("YES", "NO") for v in verdicts
        ):
            bad_chk += 1
            continue
        p = originals.loc[i]
        v = 0
        for j, (c, ok) in enumerate(zip(cands[i], verdicts, strict=True)):
            if ok.strip().upper() != "YES":
                continue
            v += 1
            variants.append(
                {
                    "prompt_id": p["prompt_id"],
                    "variant": v,
                    "turn": turn,
                    "category": p["category"],
                    "variant_kind": "paraphrase",
                    "parent_variant": 0,
                    "text": c,
                }
            )
            lineage.append(
                {
                    "prompt_id": p["prompt_id"],
                    "variant": v,
                    "turn": turn,
                    "parent_variant": 0,
                    "candidate_index": j,
                    "generator_call": runner.key(gen_reqs[i]),
                    "check_call": checker_runner.key(chk_reqs[todo.index(i)]),
                }
            )
    vdf = pd.DataFrame(
        variants,
        columns=["prompt_id", "variant", "turn", "category", "variant_kind", "parent_variant", "text"],
    )
    ldf = pd.DataFrame(
        lineage,
        columns=[
            "prompt_id",
            "variant",
            "turn",
            "parent_variant",
            "candidate_index",
            "generator_call",
            "check_call",
        ],
    )
    done_ids = pd.DataFrame({"prompt_id": [originals.at[i, "prompt_id"] for i in todo]})
    with store.transaction() as cur:
        ensure_dataset(cur, dataset, "judge run", "perturb")
        cur.register("_ids", done_ids)
        cur.execute(
            "DELETE FROM prompts WHERE dataset = ? AND turn = ? AND variant_kind = 'paraphrase' AND prompt_id IN (SELECT prompt_id FROM _ids)",
            [dataset, turn],
        )
        cur.execute(
            "DELETE FROM variant_lineage WHERE dataset = ? AND turn = ? AND prompt_id IN (SELECT prompt_id FROM _ids)",
            [dataset, turn],
        )
        cur.register("_pv", vdf)
        cur.execute(
            "INSERT INTO prompts SELECT ?, prompt_id, variant, turn, category, variant_kind, parent_variant, text FROM _pv",
            [dataset],
        )
        cur.register("_l", ldf)
        cur.execute(
            "INSERT INTO variant_lineage SELECT ?, prompt_id, variant, turn, parent_variant, candidate_index, generator_call, check_call FROM _l",
            [dataset],
        )
        for t in ("_ids", "_pv", "_l"):
            cur.unregister(t)
    return PerturbReport(len(originals), sum(len(c) for c in cands if c), len(vdf), bad_gen, bad_chk, vdf)


def lineage(store: Store, dataset: str) -> pd.DataFrame:
    """The lineage rows of a dataset's paraphrased variants."""
    return (
        store.cursor()
        .execute("SELECT * FROM variant_lineage WHERE dataset = ? ORDER BY prompt_id, variant", [dataset])
        .df()
    )


__all__ = ["PerturbReport", "perturb", "lineage"]
