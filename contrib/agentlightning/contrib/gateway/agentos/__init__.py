"""The governed gateway for Agent Lightning 1.0: the kernel in front of 1.0's own proxy, rewards through its hooks.

Needs agentlightning 1.0 (Python >= 3.12; ``pip install 'agentlightning-contrib-agentos[agl10]'``)
and the kernel core, nothing of the 0.3 rooms.

* :func:`create_governed_app` / ``agentos-gateway``: 1.0's API gateway behind :class:`GovernanceLayer`;
* :class:`GovernanceConfig`: the ``governance`` section (policies, recorder directory, penalty table);
* :mod:`.hooks` (``GovernanceHooks``) and :mod:`.lagrangian_hooks` (``LagrangianGovernanceHooks``):
  the governed reward as each rollout's last ``reward`` event.
"""

from .app import create_governed_app, split_config
from .config import CONFIG_ENV, GovernanceConfig
from .events import DECISION_EVENT, REASON_GOVERNED, REASON_HOOK_FAILED, REWARD_SOURCE
from .govern import GatewayDecision, TextAction, UnreadableAction, govern_response, refusal_text
from .layer import GovernanceLayer

__all__ = [
    "CONFIG_ENV",
    "DECISION_EVENT",
    "GatewayDecision",
    "GovernanceConfig",
    "GovernanceLayer",
    "REASON_GOVERNED",
    "REASON_HOOK_FAILED",
    "REWARD_SOURCE",
    "TextAction",
    "UnreadableAction",
    "create_governed_app",
    "govern_response",
    "refusal_text",
    "split_config",
]
