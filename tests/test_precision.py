"""The LLM recipe's precision: detected from the CPU, forcible, and both paths train.

bfloat16 is fast only on a CPU with bf16 instructions and 10-50x slower than fp32 elsewhere, so
the recipe must not assume it. These tests check the detection against PyTorch's own CPU probe
on whatever machine runs them, and run one forward/backward pass and one generation in *each*
precision (a two-layer model with SmolLM2's real tokenizer, so it is seconds even where bf16 is
emulated).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from .tiny_llama import smollm2_tokenizer, tiny_llama

torch = pytest.importorskip("torch")
# Installed is enough here (importing peft pulls in transformers: seconds at collection); the
# recipe imports them when it builds a model.
for _needed in ("peft", "gguf"):
    if importlib.util.find_spec(_needed) is None:
        pytest.skip(f"{_needed} is not installed (it is in the llm extra)", allow_module_level=True)

RECIPE_DIR = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"
sys.path.insert(0, str(RECIPE_DIR))

import precision  # noqa: E402


def test_features_decide_the_precision():
    assert precision.choose_from_features(avx512_bf16=True, amx_tile=False)[0] == "bf16"
    assert precision.choose_from_features(avx512_bf16=False, amx_tile=True)[0] == "bf16"
    assert precision.choose_from_features(avx512_bf16=False, amx_tile=False)[0] == "fp32"


def test_auto_follows_this_cpus_bf16_instructions():
    has_bf16 = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    chosen, why = precision.detect_precision()
    assert chosen == ("bf16" if has_bf16 else "fp32"), why
    assert precision.resolve_precision("auto") == chosen


def test_timing_fallback_picks_a_precision_where_the_probe_is_missing(monkeypatch):
    monkeypatch.delattr(torch.cpu, "_is_amx_tile_supported")
    assert precision._torch_features() is None
    chosen, measured = precision.choose_by_timing(size=32)
    assert chosen in ("bf16", "fp32") and "ms in fp32" in measured and "ms in bf16" in measured


def test_forcing_and_bad_values():
    assert precision.resolve_precision("bf16") == "bf16"
    assert precision.resolve_precision("fp32") == "fp32"
    with pytest.raises(ValueError, match="precision must be one of 'auto', 'bf16', 'fp32', got 'half'"):
        precision.resolve_precision("half")


def test_the_recipe_takes_precision_on_its_command_line():
    import train_sql_llm

    assert train_sql_llm.parse_args([]).precision == "auto"
    assert train_sql_llm.parse_args(["--precision", "fp32"]).precision == "fp32"
    with pytest.raises(SystemExit):
        train_sql_llm.parse_args(["--precision", "fp16"])


@pytest.fixture(scope="module")
def tokenizer():
    return smollm2_tokenizer()


@pytest.mark.parametrize("chosen", ["fp32", "bf16"])
@pytest.mark.e2e  # the real model's tokenizer (loading it takes seconds to minutes)
def test_both_precisions_score_train_and_generate(tokenizer, chosen):
    from policy_model import PolicyModel

    policy = PolicyModel(tiny_llama(tokenizer, max_position_embeddings=128), tokenizer, lora_rank=4, precision=chosen)
    assert policy.precision == chosen
    expected = {"fp32": torch.float32, "bf16": torch.bfloat16}[chosen]
    assert {p.dtype for p in policy.generation.parameters()} == {expected}
    prompt, response = [1, 2, 3, 4], [5, 6, 7]
    (logprobs,) = policy.response_logprobs([prompt], [response])
    assert logprobs.shape == (3,) and logprobs.dtype == torch.float32 and bool((logprobs < 0).all())
    # under bf16 the forward runs in autocast (bf16 activations); under fp32 it does not
    seen = []
    hook = (
        policy.model.get_base_model()
        .model.layers[0]
        .mlp.register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    )
    policy.response_logprobs([prompt], [response])
    hook.remove()
    assert seen == [expected]
    before = policy.fingerprint()
    optimizer = torch.optim.SGD(policy.trainable_parameters(), lr=1.0)
    loss = -policy.response_logprobs([prompt], [response])[0].sum()
    loss.backward()
    optimizer.step()
    assert policy.fingerprint() != before, "the LoRA update changed nothing"
    policy.sync_generation()
    (out,) = policy.generate([prompt], temperature=1.0, max_new_tokens=4, seed=0)
    assert 1 <= len(out) <= 4 and all(isinstance(t, int) for t in out)
