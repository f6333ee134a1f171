"""What a :class:`GovernedEnvironment` remembers about its steps and episodes.

One :class:`StepRecord` per ``step()`` (the kernel's :class:`Decision` and the step's
:class:`GovernedReward`, from the kernel's one reward formula), one :class:`EpisodeRecord` per
episode, and the :class:`EpisodeMetrics` totals behind ``get_metrics()``. Records are what
:func:`record_episodes_to_store` turns into LightningStore rollouts, so the reward decomposition
here is the one the store shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from agentlightning.contrib.kernel.agentos import Decision, PolicyViolation
from agentlightning.contrib.kernel.agentos.outcome import GovernanceOutcome
from agentlightning.contrib.kernel.agentos.reward.formula import GovernedReward
from agentlightning.contrib.kernel.agentos.views import forwarded
from agentlightning.contrib.kernel.agentos.violations import SeverityTable, penalty_of

__all__ = ["StepRecord", "EpisodeRecord", "EpisodeMetrics", "violation_info"]


def violation_info(violation: PolicyViolation, penalties: Optional[SeverityTable] = None) -> Dict[str, Any]:
    """A violation as plain data for ``info["violations"]`` (no timestamp, so equal steps give equal
    infos), its ``penalty`` priced by the environment's table ``penalties`` (its kernel's; None: the
    price the kernel wrote on it).

    >>> v = PolicyViolation("blocked", "SQLPolicy", "DROP statement denied: DROP TABLE t", "critical")
    >>> violation_info(v)["severity"], violation_info(v)["penalty"]
    ('critical', -100.0)
    """
    info = {key: value for key, value in violation.to_dict().items() if key not in _NOT_IN_INFO}
    info["penalty"] = penalty_of(violation, penalties)
    return info


#: Record fields left out of ``info``: the time differs between equal steps, and whether the
#: penalty was set by the policy or written by the kernel is the reward's business.
_NOT_IN_INFO = ("timestamp", "penalty_is_explicit", "priced_by_kernel")


@dataclass
class StepRecord:
    """One governed step: the kernel's decision and the step's reward, decomposed.

    ``governed_reward`` comes from ``EnvironmentConfig.shape``: its ``base`` is
    ``task_reward + step_penalty``, so ``reward = task_reward + step_penalty + violation_penalty
    + success_bonus``.
    """

    step: int
    action: Any
    decision: Decision
    task_reward: float
    step_penalty: float
    governed_reward: GovernedReward
    success: bool
    error: Optional[str] = None
    result: Any = None

    reward = forwarded("governed_reward.final", "The step's reward (``governed_reward.final``).")
    violation_penalty = forwarded(
        "governed_reward.policy_penalty", "The step's violations priced by the environment's penalty table (<= 0)."
    )
    success_bonus = forwarded(
        "governed_reward.clean_bonus", "The success bonus paid for this step (0 unless it succeeded)."
    )
    cost = forwarded("governed_reward.cost", 'The step\'s constraint cost (``info["cost"]``).')
    executed = forwarded("decision.allowed", "The kernel allowed the action (it ran, or raised ``error``).")

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
    #: The penalty table that priced the episode's violations: its kernel's (its spans show the same prices).
    penalties: Optional[SeverityTable] = field(default=None, repr=False)

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
        """The episode's return decomposed as one governed reward span: the sum of its steps'.

        ``base`` is the task rewards plus the step penalties, ``policy_penalty`` the violations'
        prices by :attr:`penalties` and ``clean_bonus`` the success bonuses, so
        ``final = base + policy_penalty + clean_bonus`` is the episode return.
        """
        rewards = [s.governed_reward for s in self.steps]
        return GovernedReward(
            final=self.return_,
            base=float(sum(r.base for r in rewards)),
            policy_penalty=float(sum(r.policy_penalty for r in rewards)),
            clean_bonus=float(sum(r.clean_bonus for r in rewards)),
            cost=self.cost,
            violation_count=self.violation_count,
            clamped=any(r.clamped for r in rewards),
        )

    def summary(self) -> Dict[str, Any]:
        """Plain-data summary; the same keys as the runner's ``"agentos"`` attempt metadata, plus the episode's."""
        outcome = GovernanceOutcome(
            tuple(s.decision for s in self.steps), reward=self.governed_reward(), penalties=self.penalties
        )
        return {
            **outcome.summary(),
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
        }


class EpisodeMetrics:
    """The totals behind ``GovernedEnvironment.get_metrics()``, over every episode started.

    ``successful_episodes`` counts episodes (not steps), finished ones plus the running one if it
    has succeeded so far, so ``success_rate`` is at most 1; the rates divide by ``total_episodes``.

    >>> metrics = EpisodeMetrics()
    >>> metrics.start_episode()
    1
    >>> metrics.summary()["total_episodes"], metrics.summary()["success_rate"]
    (1, 0.0)
    """

    def __init__(self) -> None:
        self.episodes = 0
        self.steps = 0
        self.violations = 0
        self.successful_finished = 0

    def start_episode(self) -> int:
        """Count a new episode; returns its index (1 for the first)."""
        self.episodes += 1
        return self.episodes

    def add_step(self, step: StepRecord) -> None:
        self.steps += 1
        self.violations += len(step.decision.violations)

    def finish_episode(self, episode: EpisodeRecord) -> None:
        self.successful_finished += int(episode.success)

    def summary(self, running: Optional[EpisodeRecord] = None) -> Dict[str, Any]:
        """The metrics, with ``running`` (the episode under way, if any) counted as far as it got."""
        episodes = self.episodes
        successful = self.successful_finished
        if running is not None and not running.finished:
            successful += int(running.success)
        return {
            "total_episodes": episodes,
            "total_steps": self.steps,
            "total_violations": self.violations,
            "successful_episodes": successful,
            "success_rate": successful / episodes if episodes else 0.0,
            "violations_per_episode": self.violations / episodes if episodes else 0.0,
            "steps_per_episode": self.steps / episodes if episodes else 0.0,
        }
