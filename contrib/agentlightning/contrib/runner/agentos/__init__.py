"""AgentOSRunner: governed rollouts inside the real Agent Lightning runner and Trainer.

>>> from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> runner = AgentOSRunner(GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])]))
>>> runner.kernel.policy_names
['SQLPolicy']

The top holds the runner and what a user of it touches; the rest is imported from its module:
``agents`` (``TaskActionAgent``, ``ActionOutcome``), ``attempt`` (``RolloutGovernance``,
``RolloutOutcome``, ``active_rollout``), ``quickstart``, ``report`` and ``runner`` (``AgentError``).
``PolicyViolation`` and ``governance_stats`` are the kernel's, kept here because the reference
tutorial and the migration guide import them from the runner; ``GovernedRunner`` and
``PolicyViolationType`` are the tutorial's spellings (``reference_names``).
"""

from agentlightning.contrib.kernel.agentos import PolicyViolation
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats

# `from . import agents`, never `from .agents import ...`: AgentOps' import monitor reads the latter as the
# OpenAI Agents SDK and uninstruments OpenAI when this package is imported after an AgentOps tracer started
# (tracing.py). Relative all the same, so that the package never loads this module under a second name.
from . import agents
from .reference_names import GovernedRunner, PolicyViolationType
from .runner import AgentOSRunner, GovernedRollout
from .tools import ActionBlockedError, PolicyViolationError, governed_tool

as_agent = agents.as_agent

__all__ = [
    "ActionBlockedError",
    "AgentOSRunner",
    "GovernedRollout",
    "GovernedRunner",
    "PolicyViolation",
    "PolicyViolationError",
    "PolicyViolationType",
    "as_agent",
    "governance_stats",
    "governed_tool",
]
