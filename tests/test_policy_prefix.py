"""The policy runs the prompts' shared prefix once per batch, and computes the same numbers as without it.

Every prompt of the LLM recipe starts with the same system message (the schema), so
``PolicyModel`` computes that prefix's keys and values once per batch and repeats them
(``shared_prefix_length``). These tests compare, on a two-layer llama with SmolLM2's real
tokenizer and LoRA adapters that are not zero, the batched path (prefix shared) with each
sequence computed alone (one prompt: nothing shared): the log-probs, their gradients and the
greedy generations must agree.
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

# The real model's tokenizer, torch and transformers (loading them takes seconds to minutes): end to
# end, as the LLM recipe's other tests; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

RECIPE_DIR = Path(__file__).resolve().parent.parent / "contrib" / "recipes" / "agentos"
sys.path.insert(0, str(RECIPE_DIR))


@pytest.fixture(scope="module")
def tokenizer():
    return smollm2_tokenizer()


@pytest.fixture()
def policy(tokenizer):
    from policy_model import PolicyModel

    policy = PolicyModel(tiny_llama(tokenizer, max_position_embeddings=256), tokenizer, lora_rank=4, precision="fp32")
    with torch.no_grad():  # adapters that change the network (B starts at zero)
        for p in policy.trainable_parameters():
            p.normal_(0.0, 0.3)
    policy.sync_generation()
    return policy


def prompts_and_responses(tokenizer):
    from policy_model import prompt_ids
    from sql_agent import llm_messages

    questions = ["How many products?", "Remove the live test accounts of Kenya.", "Total revenue of toys in 2024?"]
    prompts = [prompt_ids(tokenizer, llm_messages(q, "compact")) for q in questions]
    answers = ["SELECT COUNT(*) FROM products", "DELETE FROM customers WHERE is_test = 1", "SELECT 1"]
    responses = [list(tokenizer(a, add_special_tokens=False).input_ids) for a in answers]
    return prompts, responses


def test_the_recipes_prompts_share_the_system_message(tokenizer):
    from policy_model import shared_prefix_length

    prompts, _ = prompts_and_responses(tokenizer)
    shared = shared_prefix_length(prompts)
    assert shared > 100, "the compact prompt's system message (instructions and schema) is the shared prefix"
    assert all(len(p) > shared for p in prompts)
    assert shared_prefix_length(prompts[:1]) == 0


def test_log_probs_and_gradients_equal_the_unshared_computation(policy, tokenizer):
    prompts, responses = prompts_and_responses(tokenizer)

    def run(micro_batch):
        for p in policy.trainable_parameters():
            p.grad = None
        logprobs = policy.response_logprobs(prompts, responses, micro_batch=micro_batch)
        sum(lp.sum() for lp in logprobs).backward()
        return [lp.detach() for lp in logprobs], [p.grad.clone() for p in policy.trainable_parameters()]

    shared_lp, shared_grads = run(micro_batch=8)  # one chunk of three: the prefix runs once
    alone_lp, alone_grads = run(micro_batch=1)  # one sequence per chunk: nothing is shared
    for a, b, r in zip(shared_lp, alone_lp, responses):
        assert a.shape == (len(r),)
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(shared_grads, alone_grads):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5)
    assert any(float(g.abs().max()) > 0 for g in shared_grads)


def test_greedy_generation_equals_each_prompt_alone(policy, tokenizer):
    prompts, _ = prompts_and_responses(tokenizer)
    together = policy.generate(prompts, temperature=0.0, max_new_tokens=6, seed=0)
    alone = [policy.generate([p], temperature=0.0, max_new_tokens=6, seed=0)[0] for p in prompts]
    assert together == alone
    assert all(len(r) >= 1 for r in together)
