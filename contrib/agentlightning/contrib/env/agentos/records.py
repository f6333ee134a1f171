"""What a :class:`GovernedEnvironment` remembers about its steps and episodes.

One :class:`StepRecord` per ``step()`` (the kernel's :class:`Decision` and the reward's parts) and
one :class:`EpisodeRecord` per episode. They are what :func:`record_episodes_to_store` turns into
LightningStore rollouts, so the reward decomposition here is the one the store shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from agentlightning.contrib.kernel.agentos import Decision, PolicyViolation
from agentlightning.contrib.kernel.agentos.governed_reward import GovernedReward
from agentlightning.contrib.kernel.agentos.stats import decisions_summary

__all__ = ["StepRecord", "EpisodeRecord", "violation_info"]


def violation_info(violation: PolicyViolation) -> Dict[str, Any]:
    """A violation as plain data for ``info["violations"]`` (no timestamp, so equal steps give equal infos).

    >>> v = PolicyViolation("blocked", "SQLPolicy", "DROP statement denied: DROP TABLE t", "critical")
    >>> violation_info(v)["severity"], violation_info(v)["penalty"]
    ('critical', -100.0)
    """
    return {
        "policy_name": violation.policy_name,
        "severity": violation.severity.value,
        "violation_type": violation.violation_type.value,
        "description": violation.description,
        "action_blocked": bool(violation.action_blocked),
        "penalty": violation.penalty,
    }


@dataclass
class StepRecord:
    """One governed step. ``reward = task_reward + step_penalty + violation_penalty + success_bonus``."""

    step: int
    action: Any
    decision: Decision
    task_reward: float
    step_penalty: float
    violation_penalty: float
    success_bonus: float
    reward: float
    cost: float
    success: bool
    error: Optional[str] = None
    result: Any = None

    @property
    def executed(self) -> bool:
        """The kernel allowed the action (it ran, or raised ``error``)."""
        return self.decision.allowed

    @property
    def violations(self) -> List[PolicyViolation]:
        return list(self.decision.violations)


@dataclass
class EpisodeRecord:
    """One episode: its task, its steps and how it ended.

    ``termination`` is ``"critical"`` (a critical violation with ``terminate_on_critical``),
    ``"success"`` (``terminate_on_success``), ``"max_steps"`` (truncated), ``"reset"`` (the
    caller reset or closed the environment before the episode ended) or ``None`` while it runs.
    ``success``: some step succeeded and the episode was not ended by a critical violation.
    """

    episode_id: str
    index: int
    task: Any
    observation: Any
    agent_id: str
    steps: List[StepRecord] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    termination: Optional[str] = None
    finished: bool = field(default=False, repr=False)  #: metrics and recording have taken it into account

    @property
    def done(self) -> bool:
        return self.termination is not None

    @property
    def return_(self) -> float:
        """The episode return: the sum of the step rewards."""
        return float(sum(s.reward for s in self.steps))

    @property
    def violation_count(self) -> int:
        return sum(len(s.decision.violations) for s in self.steps)

    @property
    def cost(self) -> float:
        return float(sum(s.cost for s in self.steps))

    @property
    def success(self) -> bool:
        return any(s.success for s in self.steps) and self.termination != "critical"

    def governed_reward(self) -> GovernedReward:
        """The episode's return decomposed as one governed reward span.

        ``base`` is the task rewards plus the step penalties, ``policy_penalty`` the severity-scaled
        violation penalties and ``clean_bonus`` the success bonuses, so
        ``final = base + policy_penalty + clean_bonus`` is the episode return.
        """
        return GovernedReward(
            final=self.return_,
            base=float(sum(s.task_reward + s.step_penalty for s in self.steps)),
            policy_penalty=float(sum(s.violation_penalty for s in self.steps)),
            clean_bonus=float(sum(s.success_bonus for s in self.steps)),
            cost=self.cost,
            violation_count=self.violation_count,
        )

    def summary(self) -> Dict[str, Any]:
        """Plain-data summary; the same keys as the runner's ``"agentos"`` attempt metadata, plus the episode's."""
        return {
            **decisions_summary([s.decision for s in self.steps]),
            "input_blocked": False,
            "source": "GovernedEnvironment",
            "episode_id": self.episode_id,
            "episode": self.index,
            "steps": len(self.steps),
            "return": self.return_,
            "cost": self.cost,
            "success": self.success,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "termination": self.termination,
            "reward": self.governed_reward().to_dict(),
        }
