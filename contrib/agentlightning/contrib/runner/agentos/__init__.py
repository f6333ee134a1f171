"""AgentOSRunner: governed rollouts inside the real Agent Lightning runner and Trainer.

>>> from agentlightning.contrib.runner.agentos import AgentOSRunner, governed_tool
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> runner = AgentOSRunner(GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE"])]))
>>> runner.kernel.policy_names
['SQLPolicy']

The top holds the runner and what a user of it touches; the rest is imported from its module:
``agents`` (``TaskActionAgent``, ``ActionOutcome``), ``attempt`` (``RolloutGovernance``,
``RolloutOutcome``, ``active_rollout``), ``quickstart``, ``report`` and ``runner`` (``AgentError``).
``PolicyViolation``, ``PolicyViolationType`` and ``governance_stats`` are the kernel's, kept here
because the reference tutorial and the migration guide import them from the runner. The former
top-level names still work and warn with their new import.
"""

from agentlightning.contrib.kernel.agentos import PolicyViolation
from agentlightning.contrib.kernel.agentos.agl03.stats import governance_stats
from agentlightning.contrib.kernel.agentos.deprecation import moved_names
from agentlightning.contrib.kernel.agentos.violations import PolicyViolationType

# `from . import agents`, never `from .agents import ...`: AgentOps' import monitor reads the latter as the
# OpenAI Agents SDK and uninstruments OpenAI when this package is imported after an AgentOps tracer started
# (tracing.py). Relative all the same, so that the package never loads this module under a second name.
from . import agents
from .runner import AgentOSRunner, GovernedRollout, GovernedRunner
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

#: Names that left the top, and the module each now lives in (the old name warns and still works).
MOVED = {
    "ActionOutcome": f"{__name__}.agents",
    "AgentError": f"{__name__}.runner",
    "RolloutGovernance": f"{__name__}.attempt",
    "RolloutOutcome": f"{__name__}.attempt",
    "RolloutViolations": f"{__name__}.report",
    "TaskActionAgent": f"{__name__}.agents",
    "active_rollout": f"{__name__}.attempt",
    "normalize_mode": f"{__name__}.quickstart",
    "rollout_violations_report": f"{__name__}.report",
}

__getattr__ = moved_names(__name__, MOVED)
