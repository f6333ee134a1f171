"""The trainable policy: LoRA adapters on a causal LM, response log-probs, and a fast copy for sampling.

One object, :class:`PolicyModel`, holds

* the *training* model: fp32 base weights (frozen) with ``peft`` LoRA adapters on every linear
  layer of the transformer blocks; forward passes run under bf16 autocast when the precision is
  ``bf16`` (faster than fp32 on a CPU with bf16 instructions), in plain fp32 otherwise;
* the *generation* model: a copy of the same network in the compute precision with the adapters
  merged in, refreshed by :meth:`PolicyModel.sync_generation` after every update (cheaper per
  token than autocast over frozen fp32 weights, which re-converts them every step).

The precision is detected from the CPU (:mod:`precision`): on a CPU without bfloat16
instructions bf16 is emulated and far *slower* than fp32, so it is never assumed.

Why LoRA and not full weights: on this 135M model both cost about the same compute per step, but
LoRA keeps the optimizer state small, lets every seed start from the same frozen warm start by
re-initialising only the adapters, and gives the reference policy for the optional KL term for
free (the same network with the adapters disabled).

Every prompt of the recipe starts with the same system message (the instructions and the
schema: 145 of its 190 tokens on average), so both passes run that shared prefix once per batch
and only the rest of each sequence per row (:func:`shared_prefix_length`): the prefix's keys and
values are computed once and repeated across the batch, with the positions and the attention of
the unshared computation, so the numbers are the same up to floating-point rounding. A training
sequence (prompt and a 40-token answer) then costs about 100 tokens of compute instead of 230 in
micro-batches of 8, and a prompt's prefill about 45 + 145 / batch tokens instead of 190.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence

#: Linear layers of a llama block that get LoRA adapters.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

#: A shared prefix shorter than this is not worth a separate forward pass.
MIN_SHARED_PREFIX = 8


def shared_prefix_length(prompts: Sequence[Sequence[int]], minimum: int = MIN_SHARED_PREFIX) -> int:
    """How many leading tokens every one of ``prompts`` shares, leaving each at least one token of its
    own (the position that predicts the first response token); 0 for one prompt or a short prefix.

    >>> shared_prefix_length([[1] * 10 + [2, 3], [1] * 10 + [4]]), shared_prefix_length([[1, 2, 3], [1, 2, 4]])
    (10, 0)
    >>> shared_prefix_length([[1] * 10, [1] * 12])
    9
    """
    if len(prompts) < 2:
        return 0
    common = len(os.path.commonprefix([list(p) for p in prompts]))
    common = min(common, min(len(p) for p in prompts) - 1)
    return common if common >= minimum else 0


def _prefix_cache(decoder: Any, prefix: Sequence[int], batch: int) -> Any:
    """The keys and values of ``prefix`` in every layer of ``decoder`` (a llama ``model.model``),
    computed once and repeated for ``batch`` rows (differentiable: gradients of every row flow back)."""
    import torch

    cache = decoder(input_ids=torch.tensor([list(prefix)], dtype=torch.long), use_cache=True).past_key_values
    cache.batch_repeat_interleave(batch)
    return cache


class PolicyModel:
    """A causal LM with LoRA adapters (trained) and a merged copy in the compute precision (sampled).

    Args:
        base: an fp32 ``transformers`` causal LM (e.g. :func:`smollm.load_model`); it is wrapped
            in place by ``peft`` and its own weights stay frozen.
        tokenizer: its tokenizer, with a pad token distinct from the end token.
        lora_rank: LoRA rank ``r``.
        lora_alpha: LoRA scaling numerator (the update is scaled by ``alpha / r``).
        seed: seeds the adapters' initialisation.
        precision: ``"auto"`` (detect from the CPU, :func:`precision.resolve_precision`),
            ``"bf16"`` or ``"fp32"``; :attr:`precision` holds the resolved one.
        generation_copy: keep the merged copy :meth:`generate` samples from (False for a model
            that is only trained, like the warm start: it saves a copy of the weights).
    """

    def __init__(
        self,
        base: Any,
        tokenizer: Any,
        *,
        lora_rank: int = 16,
        lora_alpha: float = 32.0,
        seed: int = 0,
        precision: str = "auto",
        generation_copy: bool = True,
    ) -> None:
        import copy

        import torch
        from peft import LoraConfig, get_peft_model

        from precision import resolve_precision, torch_dtype

        self.precision = resolve_precision(precision)
        self._dtype = torch_dtype(self.precision)

        self.tokenizer = tokenizer
        self.pad_id = int(tokenizer.pad_token_id)
        self.end_id = int(tokenizer.convert_tokens_to_ids(tokenizer.eos_token))
        if self.pad_id == self.end_id:
            raise ValueError(
                "the tokenizer's pad token equals its end token; set a distinct pad (smollm.load_tokenizer does)"
            )
        self.generation = copy.deepcopy(base).to(self._dtype).eval() if generation_copy else None
        for p in self.generation.parameters() if self.generation is not None else ():
            p.requires_grad_(False)
        config = LoraConfig(
            r=lora_rank, lora_alpha=lora_alpha, target_modules=list(LORA_TARGETS), lora_dropout=0.0, bias="none"
        )
        torch.manual_seed(seed)
        self.model = get_peft_model(base, config)
        self.model.eval()  # no dropout anywhere; gradients still flow
        self._lora_modules = {
            name[len("base_model.model.") :]: module
            for name, module in self.model.named_modules()
            if hasattr(module, "get_delta_weight") and hasattr(module, "base_layer")
        }
        self._gen_modules = dict(self.generation.named_modules()) if self.generation is not None else {}
        self.sync_generation()

    # -- parameters
    def trainable_parameters(self) -> List[Any]:
        """The LoRA parameters (what the optimizer updates)."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def reset_adapters(self, seed: int) -> None:
        """Re-initialise every adapter (A random from ``seed``, B zero: the policy equals the base again)."""
        import torch

        torch.manual_seed(seed)
        for module in self._lora_modules.values():
            module.reset_lora_parameters("default", True)
        self.sync_generation()

    def fingerprint(self) -> str:
        """SHA-256 over the adapter weights (changes whenever an update changed them)."""
        return fingerprint_state({n: p for n, p in self.model.named_parameters() if p.requires_grad})

    def adapter_matrices(self) -> Dict[str, Any]:
        """Every adapter's matrices, ``NAME.lora_A`` (r x in) and ``NAME.lora_B`` (out x r), keyed by the
        adapted layer's name in the plain model; the layer's update is ``alpha / r * B @ A``."""
        out = {}
        for name, module in self._lora_modules.items():
            out[f"{name}.lora_A"] = module.lora_A["default"].weight.detach().clone()
            out[f"{name}.lora_B"] = module.lora_B["default"].weight.detach().clone()
        return out

    def sync_generation(self) -> None:
        """Copy base + adapter delta of every adapted layer into the generation model."""
        import torch

        if self.generation is None:
            return
        with torch.no_grad():
            for name, module in self._lora_modules.items():
                merged = module.base_layer.weight + module.get_delta_weight("default")
                self._gen_modules[name].weight.copy_(merged.to(self._dtype))

    def compute(self) -> Any:
        """The context forward passes of the training model run in: bf16 autocast, or nothing for fp32."""
        import torch

        if self.precision == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def reference(self) -> Iterator[None]:
        """Inside this block the training model is the frozen base (adapters disabled): the reference policy."""
        with self.model.disable_adapter():
            yield

    # -- sampling
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        temperature: float,
        max_new_tokens: int,
        seed: int,
        top_p: float = 1.0,
    ) -> List[List[int]]:
        """Sample one response per prompt (token ids, ending with the end token unless cut at
        ``max_new_tokens``), in one left-padded batch from the generation copy.
        """
        import torch

        # Layout: [shared prefix][left padding][the rest of the prompt]. The padding is masked and
        # positions follow the mask, so each row is computed as if it were alone; the prefix's keys
        # and values are computed once (no shared prefix: plain left padding).
        shared = shared_prefix_length(prompts)
        tail = max(len(p) - shared for p in prompts)
        width = shared + tail
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):
            input_ids[i, :shared] = torch.tensor(list(p[:shared]), dtype=torch.long)
            attention[i, :shared] = 1
            input_ids[i, width - (len(p) - shared) :] = torch.tensor(list(p[shared:]), dtype=torch.long)
            attention[i, width - (len(p) - shared) :] = 1
        kwargs: Dict[str, Any] = (
            {"do_sample": False}
            if temperature <= 0
            else {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0}
        )
        with torch.no_grad():
            if shared:
                kwargs["past_key_values"] = _prefix_cache(self.generation.model, prompts[0][:shared], len(prompts))
            torch.manual_seed(seed)
            out = self.generation.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=max_new_tokens,
                pad_token_id=self.pad_id,
                eos_token_id=self.end_id,
                **kwargs,
            )
        responses = []
        for row in out[:, width:].tolist():
            ids: List[int] = []
            for t in row:
                if t == self.pad_id:
                    break
                ids.append(t)
                if t == self.end_id:
                    break
            responses.append(ids)
        return responses

    # -- scoring
    def response_logprobs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], *, micro_batch: int = 8
    ) -> List[Any]:
        """Per-token log-probs of each response given its prompt under the training model
        (a list of 1-D float32 tensors, with the autograd graph when gradients are enabled).

        Sequences are grouped by length and right-padded in micro-batches of ``micro_batch``,
        their shared prompt prefix run once per micro-batch; the forward pass runs
        under bf16 autocast when the precision is ``bf16``; the vocabulary projection and the
        log-softmax (in fp32) are computed over the response positions only.
        """
        import torch

        # Micro-batches of sequences of similar length (less padding); results in the callers' order.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]) + len(responses[i]))
        out: List[Any] = [None] * len(prompts)
        for start in range(0, len(order), micro_batch):
            rows = order[start : start + micro_batch]
            chunk = [(prompts[i], responses[i]) for i in rows]
            # The chunk's shared prefix runs once (its keys and values repeated per row); each row
            # runs the rest of its prompt and its response, right-padded, at the positions after it.
            shared = shared_prefix_length([p for p, _ in chunk])
            width = max(len(p) + len(r) for p, r in chunk) - shared
            input_ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
            attention = torch.zeros((len(chunk), shared + width), dtype=torch.long)
            attention[:, :shared] = 1
            for i, (p, r) in enumerate(chunk):
                seq = list(p[shared:]) + list(r)
                input_ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
                attention[i, shared : shared + len(seq)] = 1
            causal_lm = self.model.get_base_model()  # the LoRA layers sit inside it, so they still apply
            with self.compute():
                extra: Dict[str, Any] = {}
                if shared:
                    extra["past_key_values"] = _prefix_cache(causal_lm.model, chunk[0][0][:shared], len(chunk))
                    extra["position_ids"] = torch.arange(shared, shared + width).expand(len(chunk), -1)
                hidden = causal_lm.model(input_ids=input_ids, attention_mask=attention, **extra).last_hidden_state
                # The vocabulary projection only where a response token is predicted: the prompt's
                # positions are most of the sequence, and their 49k-wide logits most of the memory.
                ends = [len(p) - shared for p, _ in chunk]  # where each row's prompt ends
                picked = torch.cat([hidden[i, ends[i] - 1 : ends[i] - 1 + len(r)] for i, (_, r) in enumerate(chunk)])
                logits = causal_lm.lm_head(picked).float()
            targets = torch.tensor([t for _, r in chunk for t in r], dtype=torch.long)
            token_logprobs = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])[:, 0]
            for i, logprobs in zip(rows, torch.split(token_logprobs, [len(r) for _, r in chunk])):
                out[i] = logprobs
        return out


def prompt_ids(tokenizer: Any, messages: Sequence[Dict[str, str]]) -> List[int]:
    """The token ids the model conditions on for chat ``messages`` (chat template, generation prompt added)."""
    return list(
        tokenizer.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=True, return_dict=False)
    )


def fingerprint_state(state: Dict[str, Any], keys: Optional[Sequence[str]] = None) -> str:
    """SHA-256 over tensors of a state dict (all keys, or ``keys``), in key order."""
    digest = hashlib.sha256()
    for key in sorted(keys if keys is not None else state):
        digest.update(key.encode())
        digest.update(state[key].detach().float().numpy().tobytes())
    return digest.hexdigest()
