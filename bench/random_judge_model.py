"""A judge model folder with random weights, for measuring the local backend's speed on a GPU.

How fast a transformers model judges depends on its shape (layers, widths, heads, vocabulary) and on the
prompts' token counts, not on the values of its weights, so a GPU bench needs no downloaded checkpoint: this
writes a plain transformers folder (config, bf16 safetensors with seeded random weights, and a tokenizer with
its chat template copied from an existing model folder) that ``--backend local --model FOLDER`` loads offline.
Its verdicts are noise; only its timings and memory mean anything.

The shapes in ``bench/model_shapes/`` are plain architecture configs: ``smollm2-135m.json`` is SmolLM2-135M's
own (as converted from the GGUF the tests use), ``qwen2-1.5b-layers.json`` is Qwen2.5-1.5B's layer sizes
(28 layers, width 1536, 12 query and 2 key/value heads, MLP 8960) with SmolLM2's 49,152-token vocabulary, so
both share one tokenizer: about 1.4B parameters.

    python bench/random_judge_model.py --shape bench/model_shapes/qwen2-1.5b-layers.json \
        --tokenizer ~/.cache/tournament-lens/models/SmolLM2-135M-Instruct-Q4_1 --out /tmp/q15 [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                   "special_tokens_map.json")


def make_model(shape: Path, tokenizer: Path, out: Path, device: str = "cpu", seed: int = 0) -> dict:
    """Write the folder; return its parameter count and the seconds it took."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    t0 = time.perf_counter()
    spec = json.loads(shape.read_text())
    config = AutoConfig.for_model(spec.pop("model_type"), **spec)
    torch.manual_seed(seed)
    with torch.device(device):
        lm = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    lm.save_pretrained(out)
    for name in TOKENIZER_FILES:
        if (tokenizer / name).exists():
            shutil.copy(tokenizer / name, out / name)
    params = sum(p.numel() for p in lm.parameters())
    return {"shape": shape.name, "parameters": params, "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", required=True, type=Path)
    ap.add_argument("--tokenizer", required=True, type=Path, help="a model folder whose tokenizer to copy")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--device", default="cpu", help="where the random weights are made (cuda is faster)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(json.dumps(make_model(args.shape, args.tokenizer, args.out, args.device, args.seed)), flush=True)


if __name__ == "__main__":
    main()
