"""Local Hugging Face transformers backend: budgeted forward passes with the model's chat template.

Runs on the GPU in bf16 when one is present, else on the CPU in fp32 (``dtype`` overrides). Device
type and dtype are part of ``identity``, hence of every call's cache key: CPU fp32 results are never
reused for a GPU bf16 run. Models load offline from a local folder, optionally from a GGUF file.

Every forward pass holds at most ``token_budget`` padded tokens (rows × padded length, plus the new
tokens of a generation or a cached prefix per row; ``batching``): requests are sorted by token
length, longest first, and cut where the next one would pass the budget, so short prompts go many
to a pass and long ones few, and a pass pads little. A pass that runs out of GPU memory halves the
budget (it stays lowered, ``oom_splits`` counts it) and is cut again, down to one request.

Two paths. A greedy request for one token (the soft protocol: ``normalise`` turns its letters
request into one token, since only the first step is read) is **one forward pass**, no
``generate``: the logits after the prompt give the token, its top-k logprobs and the letters'
logprobs. Prompts with a long common token prefix (the two presentation orders of a pair share the
system prompt, the template head and the question; round-robin pairs with the same first answer
share that too) can compute the prefix once (``prefix_groups``) and continue it from its cached keys
and values for every member: on by default on the CPU, where it saves compute, off on a GPU, where the
extra passes cost more than they save. Every other request is generated with ``generate`` (left padding, one
step per new token for the whole pass), budgeted the same way but without prefix reuse.

When a request asks for ``top_logprobs``, the k most likely next tokens and their log-probabilities
are read from the raw logits at each step (paper 001, Section 3.1), and the tokens named in
``Decoding.logprob_tokens`` (the soft letters, in every vocabulary spelling such as ``A`` and
`` A``) are reported at each step too, wherever they rank, so a small model that does not put a
letter in its top k still gets an exact softmax over the verdict tokens (``full_logprobs``).
"""

from __future__ import annotations

import copy
import inspect
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import numpy as np

from engine.errors import LensError
from engine.judging.backends import ChatRequest, ChatResult
from engine.judging.batching import budget_batches, padded_tokens, prefix_groups
from engine.judging.parsing import TOKEN_WRAPPING

DTYPES = ("float32", "bfloat16", "float16")
DEFAULT_BATCH_SIZE = 32  # requests per backend call (the runner stores each call's results together)
DEFAULT_BUDGET_CPU = 1024  # padded tokens per pass on a CPU: as fast as larger ones here, less memory (notes)
DEFAULT_BUDGET_GPU = 131072  # an H100 with 135M and 1.4B models: best for generation (notes/gpu-34)


def reuses_prefixes(device: str) -> bool:
    """Whether shared prompt prefixes are computed once by default on ``device``: on the CPU, where compute
    is the bound, yes; on a GPU no, since each group's own prefix pass, cache copy and extra launches cost
    more than the tokens they save (an H100: soft passes 2.4-5x slower with reuse, docs/notes/gpu-34.md)."""
    return not device.startswith("cuda")


def cache_keyword(lm) -> str:
    """The name under which ``lm``'s forward pass takes (and its output returns) the key/value cache:
    ``cache`` where the installed transformers has it (5.2x renamed ``past_key_values``, which it still
    accepts with a FutureWarning until 5.40), else ``past_key_values`` (transformers 4.45 onwards, which
    requirements-gpu.txt allows: a ``cache`` keyword there would be swallowed by ``**kwargs`` unused).
    The cache object is the same either way (a ``DynamicCache``), so the numbers are too."""
    return "cache" if "cache" in inspect.signature(lm.forward).parameters else "past_key_values"


class TransformersBackend:
    """A causal LM with a chat template, loaded once; ``complete`` runs budgeted forward passes."""

    name = "transformers"
    full_logprobs = True  # reports Decoding.logprob_tokens (see the module docstring)

    def __init__(
        self,
        model: str,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
        batch_size: int | None = None,
        label: str | None = None,
        threads: int | None = None,
        dtype: str | None = None,
        token_budget: int | None = None,
        prefix_cache: bool | None = None,
        min_prefix: int = 16,
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
                self.device  # type: ignore[arg-type]  # transformers types its wrapped .to() as taking a model
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
        # requests the runner hands over per call (their results are stored together)
        self.batch_size = max(1, int(batch_size or DEFAULT_BATCH_SIZE))
        on_gpu = self.device.startswith("cuda")
        self.token_budget = int(token_budget or (DEFAULT_BUDGET_GPU if on_gpu else DEFAULT_BUDGET_CPU))
        if self.token_budget < 1:
            raise LensError("The token budget must be at least 1 token.")
        self.prefix_cache = reuses_prefixes(self.device) if prefix_cache is None else bool(prefix_cache)
        self.min_prefix = int(min_prefix)
        self.oom_splits = 0  # how often a pass was cut again after running out of GPU memory
        self.passes: list[tuple[int, int]] = []  # (rows, padded tokens) of every forward pass made
        self.prefix_tokens_saved = 0  # prompt tokens not recomputed thanks to a shared prefix
        self.tokens_in = 0  # prompt tokens fed to the model (padding not counted, a prefix once)
        self._watch: dict[tuple[str, ...], dict[str, list[int]]] = {}
        self._cache_kw = cache_keyword(self.lm)
        self.identity = f"{self.name}[{torch.device(self.device).type},{self.dtype}]"

    def _render(self, req: ChatRequest) -> str:
        # one conversation, tokenize=False: a str (transformers annotates the batched and token forms too)
        return cast(str, self.tokenizer.apply_chat_template(
            req.message_dicts(), add_generation_prompt=True, tokenize=False
        ))

    def _decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        """``tokenizer.decode`` of one token sequence: a str (transformers annotates batches too)."""
        return cast(str, self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens))

    # -- hooks the runner uses ------------------------------------------------------------------
    def normalise(self, req: ChatRequest) -> ChatRequest:
        """A request that reads letters' logprobs needs only the first step: ask for one token.

        The soft protocol reads the letters at the first position that lists either, and this
        backend lists them at every position (``full_logprobs``), so the first position decides and
        the request is one forward pass (``_score``). The call key has ``max_tokens = 1``.
        """
        d = req.decoding
        if d.logprob_tokens and d.max_tokens != 1:
            return replace(req, decoding=replace(d, max_tokens=1))
        return req

    def batch_order(self, req: ChatRequest):
        """How the runner sorts waiting requests of one decoding before handing ``batch_size`` over:
        one-pass requests by their messages (shared prefixes side by side), others longest first."""
        return req.messages if _one_pass(req.decoding) else -req.size()

    # -- public ---------------------------------------------------------------------------------
    def complete(self, requests: list[ChatRequest]) -> list[ChatResult]:
        """Results in the order of ``requests``: one-pass requests by ``_score``, others generated;
        every forward pass holds at most ``token_budget`` padded tokens (``batching``)."""
        out: list[ChatResult | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.decoding.group_key(), []).append(i)
        for idx in groups.values():
            reqs = [requests[i] for i in idx]
            run = self._score if _one_pass(reqs[0].decoding) else self._generate
            for i, res in zip(idx, run(reqs), strict=True):
                out[i] = res
        return out  # type: ignore[return-value]

    # -- planning and memory --------------------------------------------------------------------
    def _budgeted(self, rows: list[int], lengths: list[int], extra: int, run) -> None:
        """``run(batch)`` for ``rows`` cut by the token budget (``extra`` tokens more per row); a
        pass that runs out of GPU memory halves the budget (it stays lowered) and is cut again."""
        torch = self._torch
        for cut in budget_batches([lengths[i] for i in rows], self.token_budget, extra=extra):
            batch = [rows[k] for k in cut]
            padded = padded_tokens(len(batch), max(lengths[i] for i in batch), extra)
            try:
                run(batch)
                self.passes.append((len(batch), padded))
                continue
            except torch.OutOfMemoryError:
                if len(batch) == 1:
                    raise LensError(
                        f"One request does not fit in {self.device} memory even alone; "
                        "lower --max-tokens or use a smaller model."
                    ) from None
            # outside the except block, so the failed pass's tensors are freed before retrying
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            self.token_budget = max(1, padded // 2)
            self.oom_splits += 1
            self._budgeted(batch, lengths, extra, run)

    def _token_ids(self, reqs: list[ChatRequest]) -> list[list[int]]:
        return self.tokenizer([self._render(r) for r in reqs], add_special_tokens=False)["input_ids"]

    # -- one forward pass per request: letters' probabilities -----------------------------------
    def _score(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        """Greedy one-token requests: the next-token distribution after each prompt, one forward
        pass per batch. Prompts with a long common prefix (``prefix_groups``) compute it once and
        reuse its keys and values for every member; the rest are batched by the budget."""
        ids = self._token_ids(reqs)
        n = len(reqs)
        groups = (
            prefix_groups(ids, min_prefix=self.min_prefix)
            if self.prefix_cache
            else [(0, [i]) for i in range(n)]
        )
        shared = [(p, m) for p, m in groups if p > 0 and len(m) > 1]
        alone = [i for p, m in groups if not (p > 0 and len(m) > 1) for i in m]
        logits: list = [None] * n
        start = time.perf_counter()

        def run(prefix_len: int, cache, batch: list[int]) -> None:
            last = self._last_logits([ids[i][prefix_len:] for i in batch], prefix_len, cache)
            for k, i in enumerate(batch):
                logits[i] = last[k]

        with self._torch.inference_mode():
            for p, members in shared:
                cache = self._prefix_cache(ids[members[0]][:p])
                self.prefix_tokens_saved += (len(members) - 1) * p
                suffix = [len(x) - p for x in ids]
                self._budgeted(members, suffix, p, lambda b, p=p, c=cache: run(p, c, b))
            self._budgeted(alone, [len(x) for x in ids], 0, lambda b: run(0, None, b))
        latency = (time.perf_counter() - start) / max(n, 1)
        d = reqs[0].decoding
        eos_ids = self._eos_ids()
        watched = self.spellings(d.logprob_tokens)
        toks, tops, letters = self._read_logits(logits, d.top_logprobs, list(watched.values()))
        out = []
        for i in range(n):
            tok = toks[i]
            top = None
            if d.top_logprobs > 0:
                top = (
                    {
                        **{self._decode([j]): v for v, j in tops[i]},
                        **dict(zip(watched, letters[i], strict=True)),
                    },
                )
            text = "" if tok in eos_ids else self._decode([tok], skip_special_tokens=True)
            out.append(
                ChatResult(
                    text=text,
                    top_logprobs=top,
                    prompt_tokens=len(ids[i]),
                    completion_tokens=1,
                    latency_s=latency,
                )
            )
        return out

    def _read_logits(self, logits: list, k: int, watched: list[list[int]], rows: int = 256):
        """Per row of next-token logits: the greedy token, the top ``k`` (log-probability, token id)
        pairs and the log-sum-exp of each ``watched`` id group, as Python values. Rows go through the
        softmax together (``rows`` at a time, bounding the memory of a wide vocabulary) and reach the CPU
        in one copy per chunk: read row by row, each value was its own device round trip (an H100 spent
        about 3 ms a request outside the model's pass, docs/notes/gpu-34.md; not yet measured with this).
        Each row's numbers are its own log-softmax in float32, as before."""
        torch = self._torch
        toks: list[int] = []
        tops: list[list[tuple[float, int]]] = []
        letters: list[list[float]] = []
        for at in range(0, len(logits), rows):
            lp = torch.log_softmax(torch.stack(logits[at : at + rows]).float(), dim=-1)
            toks += lp.argmax(dim=-1).tolist()
            if k > 0:
                vals, idx = lp.topk(k, dim=-1)
                pairs = zip(vals.tolist(), idx.tolist(), strict=True)
                tops += [list(zip(v, i, strict=True)) for v, i in pairs]
                if watched:
                    sums = torch.stack([torch.logsumexp(lp[:, w], dim=-1) for w in watched], dim=1)
                    letters += sums.tolist()
                else:
                    letters += [[] for _ in range(lp.shape[0])]
        return toks, tops, letters

    def _prefix_cache(self, prefix: list[int]):
        """The keys and values of ``prefix`` (one row), computed once for a group of prompts."""
        torch = self._torch
        x = torch.tensor([prefix], device=self.device)
        out = self.lm(input_ids=x, attention_mask=torch.ones_like(x), use_cache=True, logits_to_keep=1)
        self.passes.append((1, len(prefix)))
        self.tokens_in += len(prefix)
        return getattr(out, self._cache_kw)

    def _last_logits(self, seqs: list[list[int]], prefix_len: int, cache):
        """Logits of the next token after each of ``seqs`` (left-padded, one pass), which continue a
        cached prefix of ``prefix_len`` tokens when ``cache`` is given (copied, not changed)."""
        torch = self._torch
        rows, width = len(seqs), max(len(s) for s in seqs)
        x = torch.full((rows, width), int(self.tokenizer.pad_token_id), dtype=torch.long)
        mask = torch.zeros((rows, prefix_len + width), dtype=torch.long)
        mask[:, :prefix_len] = 1
        for r, s in enumerate(seqs):
            x[r, width - len(s) :] = torch.tensor(s)
            mask[r, prefix_len + width - len(s) :] = 1
        # positions count real tokens only, so a left-padded row sees the positions it has alone
        pos = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, prefix_len:]
        self.tokens_in += sum(len(s) for s in seqs)
        past = None
        if cache is not None:
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(rows)
        out = self.lm(
            input_ids=x.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=pos.to(self.device),
            **{self._cache_kw: past},
            use_cache=past is not None,
            logits_to_keep=1,
        )
        return out.logits[:, -1]

    # -- generation ------------------------------------------------------------------------------
    def _generate(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        """Greedy or sampled generation, batched by the budget counting the new tokens too."""
        d = reqs[0].decoding
        lengths = [len(x) for x in self._token_ids(reqs)]
        out: list[ChatResult | None] = [None] * len(reqs)

        def run(batch: list[int]) -> None:
            for i, res in zip(batch, self._batch([reqs[i] for i in batch]), strict=True):
                out[i] = res

        self._budgeted(list(range(len(reqs))), lengths, d.max_tokens or 512, run)
        return out  # type: ignore[return-value]

    def _batch(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        torch = self._torch
        d = reqs[0].decoding
        texts = [self._render(r) for r in reqs]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(
            self.device
        )
        self.tokens_in += int(enc["attention_mask"].sum())
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
        watched: dict[str, np.ndarray] = {}  # spelling → (batch, steps) logprob of all its token ids
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
            text = self._decode(kept, skip_special_tokens=True)
            top = None
            if tops is not None:
                vals, idx = tops
                top = tuple(
                    {
                        **{
                            self._decode([int(i)]): float(v)
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
                text = self._decode([i])
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


def _one_pass(d) -> bool:
    """A greedy request for one token: one forward pass gives its token and logprobs."""
    return d.max_tokens == 1 and d.temperature == 0
