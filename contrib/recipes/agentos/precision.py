"""Which floating-point precision the LLM recipe computes in: bfloat16 where the CPU has it, fp32 otherwise.

bfloat16 is only fast on a CPU with bf16 instructions (AVX512-BF16 or AMX); on a CPU without them
(AVX2 only, e.g. many AMD EPYC machines) PyTorch emulates it, far slower than fp32
(docs/performance.md, "Figures behind the code's shape"). So the precision is *detected*, never
assumed:

1. PyTorch's own CPU feature probe (``torch.cpu._is_avx512_bf16_supported`` and
   ``_is_amx_tile_supported``, read through cpuinfo on every platform torch supports) says
   whether the instructions exist;
2. where that probe is missing, a short timing of one small matmul in each precision decides
   (bf16 must be clearly faster to be chosen).

``--precision bf16`` or ``--precision fp32`` forces a choice; ``auto`` (the default) detects.

>>> resolve_precision("fp32")
'fp32'
>>> resolve_precision("bf16")
'bf16'
>>> resolve_precision("fp16")
Traceback (most recent call last):
...
ValueError: precision must be one of 'auto', 'bf16', 'fp32', got 'fp16'
>>> choose_from_features(avx512_bf16=False, amx_tile=False)
('fp32', 'the CPU has no bfloat16 instructions (no AVX512-BF16, no AMX): fp32 is faster')
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, Optional, Tuple

PRECISIONS = ("auto", "bf16", "fp32")

#: bf16 must beat fp32 by this factor in the fallback timing to be chosen (noise on a shared machine).
TIMING_MARGIN = 1.3


def choose_from_features(*, avx512_bf16: bool, amx_tile: bool) -> Tuple[str, str]:
    """The precision for a CPU with (or without) the bfloat16 instructions, and why."""
    if amx_tile:
        return "bf16", "the CPU has AMX tiles: bf16 is faster"
    if avx512_bf16:
        return "bf16", "the CPU has AVX512-BF16: bf16 is faster"
    return "fp32", "the CPU has no bfloat16 instructions (no AVX512-BF16, no AMX): fp32 is faster"


def _torch_features() -> Optional[Tuple[bool, bool]]:
    """(AVX512-BF16, AMX) from PyTorch's CPU probe, or None where this torch build lacks it."""
    import torch

    probe_bf16: Optional[Callable[[], bool]] = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    probe_amx: Optional[Callable[[], bool]] = getattr(torch.cpu, "_is_amx_tile_supported", None)
    if probe_bf16 is None or probe_amx is None:
        return None
    return bool(probe_bf16()), bool(probe_amx())


def choose_by_timing(size: int = 128) -> Tuple[str, str]:
    """Time one ``size x 576 x 576`` matmul in fp32 and in bf16 (best of 3) and pick the faster."""
    import torch

    a, b = torch.randn(size, 576), torch.randn(576, 576)

    def best(x: Any, y: Any) -> float:
        x @ y  # warm-up: the first call pays for kernel selection
        times = []
        for _ in range(3):
            started = time.perf_counter()
            x @ y
            times.append(time.perf_counter() - started)
        return min(times)

    fp32 = best(a, b)
    bf16 = best(a.to(torch.bfloat16), b.to(torch.bfloat16))
    measured = f"a {size}x576x576 matmul took {fp32 * 1e3:.2f} ms in fp32, {bf16 * 1e3:.2f} ms in bf16"
    if bf16 * TIMING_MARGIN < fp32:
        return "bf16", measured
    return "fp32", measured


@functools.lru_cache(maxsize=1)
def detect_precision() -> Tuple[str, str]:
    """The faster precision on this CPU and why (computed once per process)."""
    features = _torch_features()
    if features is None:
        return choose_by_timing()
    return choose_from_features(avx512_bf16=features[0], amx_tile=features[1])


def resolve_precision(requested: str = "auto") -> str:
    """``requested`` itself when forced (``bf16``/``fp32``), the detected one for ``auto``."""
    if requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {requested!r}")
    return detect_precision()[0] if requested == "auto" else requested


def torch_dtype(precision: str) -> Any:
    """The torch dtype of a resolved precision (``bf16`` -> ``torch.bfloat16``, ``fp32`` -> ``torch.float32``)."""
    import torch

    return {"bf16": torch.bfloat16, "fp32": torch.float32}[resolve_precision(precision)]
