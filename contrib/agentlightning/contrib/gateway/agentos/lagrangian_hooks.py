"""The Lagrangian variant of the 1.0 hooks: lambda folded into the one scalar reward, tuned from violation rates.

1.0 has one reward channel, so the constraint cost cannot travel beside the reward as it does on
0.3: the penalty is ``-lambda * cost`` inside the scalar (the kernel core's ``shape_reward`` with
``lagrange_multiplier``). lambda is the kernel core's :class:`LagrangianPenalty`: every
``window`` attempts, one dual step from the fraction of those attempts with at least one
violation, ``lambda <- clip(lambda + lr * (rate - target), 0, max)``. Each rollout is priced
with the lambda stamped on it at enqueue time (``on_enqueue`` puts it in the metadata), so a
batch is priced consistently while lambda moves.

This file defines exactly one ``RolloutHooks`` subclass (it imports :mod:`.hooks` as a module),
so ``load_hooks`` accepts its path as it is and constructs it with the defaults (target rate 0.01,
a window of 16 attempts). To change them, subclass it in a file of yours that imports this module
(not the class) and set them in ``__init__``; in code, pass them:
``LagrangianGovernanceHooks(LagrangianPenalty(target_violation_rate=0.05), window=32)``.

>>> from agentlightning.contrib.kernel.agentos import LagrangianPenalty
>>> hooks = LagrangianGovernanceHooks(LagrangianPenalty(target_violation_rate=0.0, multiplier=1.0, learning_rate=2.0),
...                                   window=2)
>>> hooks.observe(violated=True), hooks.observe(violated=False)
(None, 2.0)
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, List, Optional, Sequence

from agentlightning.contrib.gateway.agentos import hooks as governance_hooks
from agentlightning.contrib.kernel.agentos import LagrangianPenalty
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward

__all__ = ["LagrangianGovernanceHooks"]


class LagrangianGovernanceHooks(governance_hooks.GovernanceHooks):
    """:class:`~.hooks.GovernanceHooks` priced by a Lagrange multiplier (see the module docstring)."""

    def __init__(self, lagrangian: Optional[LagrangianPenalty] = None, *, window: int = 16, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be an integer >= 1 (attempts per dual step), got {window!r}")
        self.lagrangian = lagrangian if lagrangian is not None else LagrangianPenalty()
        self.window = window
        self._pending: List[bool] = []

    def on_enqueue(self, request: Any) -> Any:
        """Stamp the current lambda on the rollout, so it is priced at the lambda it was sampled under."""
        metadata = request.metadata
        stamped = dict(metadata if isinstance(metadata, dict) else (metadata.model_dump() if metadata else {}))
        stamped.update(self.lagrangian.rollout_metadata())
        return request.model_copy(update={"metadata": stamped})

    def multiplier_for(self, rollout: Any) -> Optional[float]:
        metadata = getattr(rollout, "metadata", None)
        if metadata is not None and not isinstance(metadata, dict) and hasattr(metadata, "model_dump"):
            metadata = metadata.model_dump()
        return self.lagrangian.multiplier_for(SimpleNamespace(metadata=metadata))

    def after_reward(self, rollout: Any, events: Sequence[Any], reward: GovernedReward) -> None:
        self.observe(violated=reward.violation_count > 0)

    def observe(self, *, violated: bool) -> Optional[float]:
        """Count one attempt; after ``window`` of them, one dual step. Returns the new lambda, or None."""
        self._pending.append(bool(violated))
        if len(self._pending) < self.window:
            return None
        rate = sum(self._pending) / len(self._pending)
        self._pending.clear()
        return self.lagrangian.update(rate)
