"""The governance outcome of one rollout attempt (or one environment episode), computed once.

While an attempt runs, its decisions are appended to a record; when it ends, they become one
frozen :class:`GovernanceOutcome`. Everything reported about the attempt (the summary stored
in its metadata under ``"agentos"``, the rollout users get back, the input of the reward
function) is derived from that one value, so no two of them can disagree.

>>> from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy
>>> from agentlightning.contrib.kernel.agentos.outcome import GovernanceOutcome
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
>>> outcome = GovernanceOutcome((kernel.check(Action.sql("SELECT 1")), kernel.check(Action.sql("DROP TABLE t"))))
>>> len(outcome.violations), outcome.total_penalty, outcome.cost, outcome.governed
(1, -100.0, 10.0, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from .actions import Decision
from .reward.formula import GovernedReward
from .violations import PolicyViolation, SeverityTable, constraint_cost, penalty_of

__all__ = ["GovernanceOutcome"]


@dataclass(frozen=True)
class GovernanceOutcome:
    """What the kernel decided in one attempt, in order, and the governed reward it earned.

    ``input_blocked`` says whether the task itself was blocked (so the agent never acted on it);
    ``reward`` is the :class:`GovernedReward` written for the attempt, if a reward function ran;
    ``penalties`` is the penalty table its violations are priced by (its kernel's, the one its
    spans and reward use; None: the price each violation's kernel wrote on it).
    """

    decisions: Tuple[Decision, ...] = ()
    input_blocked: bool = False
    reward: Optional[GovernedReward] = None
    penalties: Optional[SeverityTable] = None

    @property
    def violations(self) -> Tuple[PolicyViolation, ...]:
        """Every violation of every decision, in the order they were found."""
        return tuple(v for d in self.decisions for v in d.violations)

    @property
    def signals(self) -> Tuple[str, ...]:
        return tuple(s for d in self.decisions for s in d.signals)

    @property
    def total_penalty(self) -> float:
        """The sum of the violations' penalties (zero or negative, reward space), by :func:`penalty_of`."""
        return self._total_penalty_of(self.violations)

    def _total_penalty_of(self, violations: Tuple[PolicyViolation, ...]) -> float:
        return float(sum(penalty_of(v, self.penalties) for v in violations))

    @property
    def governed(self) -> bool:
        """Whether at least one action went through the kernel (no check: nothing was governed)."""
        return bool(self.decisions)

    @property
    def cost(self) -> float:
        """The constraint cost: the reward's when there is one (it may price violations its own
        way), else the default cost of the violations."""
        return self._cost_of(self.violations)

    def _cost_of(self, violations: Tuple[PolicyViolation, ...]) -> float:
        return self.reward.cost if self.reward is not None else constraint_cost(violations)

    def summary(self) -> Dict[str, Any]:
        """Plain data, as stored in the attempt's metadata under ``"agentos"`` by the runner and
        the environment alike.

        >>> summary = GovernanceOutcome().summary()
        >>> summary["checks"], summary["violations"], summary["input_blocked"], summary["cost"], summary["reward"]
        (0, 0, False, 0.0, None)
        >>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy, Action
        >>> from agentlightning.contrib.kernel.agentos.outcome import GovernanceOutcome as Outcome
        >>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
        >>> outcome = Outcome((kernel.check(Action.sql("SELECT 1")), kernel.check(Action.sql("DROP TABLE t"))))
        >>> outcome.summary()  # doctest: +NORMALIZE_WHITESPACE
        {'checks': 2, 'violations': 1, 'blocked_actions': 1, 'total_penalty': -100.0, 'signals': [],
         'violations_by_policy': {'SQLPolicy': 1}, 'input_blocked': False, 'cost': 10.0, 'reward': None}
        """
        violations = self.violations  # gathered once, for the counts, the penalty and the cost
        by_policy: Dict[str, int] = {}
        for violation in violations:  # a plain count: a collections.Counter costs many times the count itself
            by_policy[violation.policy_name] = by_policy.get(violation.policy_name, 0) + 1
        return {
            "checks": len(self.decisions),
            "violations": len(violations),
            "blocked_actions": sum(d.blocked for d in self.decisions),
            "total_penalty": self._total_penalty_of(violations),
            "signals": list(self.signals),
            "violations_by_policy": by_policy,
            "input_blocked": self.input_blocked,
            "cost": self._cost_of(violations),
            "reward": self.reward.to_dict() if self.reward is not None else None,
        }
