"""The governed gateway for Agent Lightning 1.0: the kernel in front of 1.0's own proxy, rewards through its hooks.

Needs agentlightning 1.0 (Python >= 3.12; ``pip install 'agentlightning-contrib-agentos[agl10]'``)
and the kernel core, nothing of the 0.3 rooms.

* :func:`create_governed_app` / ``agentos-gateway``: 1.0's API gateway behind :class:`GovernanceLayer`;
* :class:`GovernanceConfig`: the ``governance`` section (policies, recorder directory, penalty table);
* :mod:`.hooks` (``GovernanceHooks``) and :mod:`.lagrangian_hooks` (``LagrangianGovernanceHooks``):
  the governed reward as each rollout's last ``reward`` event.
"""

from importlib import import_module
from typing import Any

#: Where each public name lives: loaded on first use, so a check worker (which needs :mod:`.govern` and the
#: kernel core only) does not import 1.0's server to start.
_EXPORTS = {
    "create_governed_app": "app",
    "split_config": "app",
    "CONFIG_ENV": "config",
    "GovernanceConfig": "config",
    "DECISION_EVENT": "events",
    "REASON_GOVERNED": "events",
    "REASON_HOOK_FAILED": "events",
    "REWARD_SOURCE": "events",
    "GatewayDecision": "govern",
    "TextAction": "govern",
    "UnreadableAction": "govern",
    "govern_response": "govern",
    "refusal_text": "govern",
    "GovernanceLayer": "layer",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


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
