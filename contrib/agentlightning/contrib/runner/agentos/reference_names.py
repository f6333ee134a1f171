"""The reference tutorial's spellings for the runner room: the only second names this package keeps.

The "RL Training Governance" tutorial of the agentmesh-lightning package (the API our users already
know) writes ``GovernedRunner(kernel)`` and
``from agent_lightning_gov.runner import PolicyViolation, PolicyViolationType``. Those spellings
work from this room's top as second names of :class:`.AgentOSRunner` and
:class:`~agentlightning.contrib.kernel.agentos.ViolationType`. No other name in the package has
an alias: version 0.1.0 was never released, so there is no former name to keep.

The tutorial's other spellings live where the dependency direction allows: ``FlightRecorderEmitter``
in the adapter room's ``reference_names`` (a room imports the kernel, never another room), and
``KernelSpace(policy=[...])`` as the ``policy=`` keyword of ``GovernanceKernel`` itself.
"""

from agentlightning.contrib.kernel.agentos.violations import ViolationType

from .runner import AgentOSRunner

__all__ = ["GovernedRunner", "PolicyViolationType"]

GovernedRunner = AgentOSRunner
PolicyViolationType = ViolationType
