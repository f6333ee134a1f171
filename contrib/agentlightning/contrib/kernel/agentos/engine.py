"""Agent OS's own ``PolicyEngine`` as a policy: its allow-lists and attribute conditions, with
severity added (Agent OS denials are plain strings)."""

from __future__ import annotations

from typing import Any, List, Optional, Union

from agent_os import PolicyEngine

from .actions import Action, ActionContext
from .policies import Policy
from .violations import PolicyViolation, Severity

__all__ = ["AgentOSPolicy", "AGENT_OS_SQL_DENIAL_PREFIX"]

#: How ``PolicyEngine.check_violation`` words the verdict of its SQL regex.
AGENT_OS_SQL_DENIAL_PREFIX = "Destructive SQL blocked:"


class AgentOSPolicy(Policy):
    """Ask a real ``agent_os.PolicyEngine`` (``check_violation``) about every action.

    The engine is deny-by-default: a role may only use the tools given to it with
    ``engine.add_constraint(role, [...])`` and, with ``add_conditional_permission``, only when
    its conditions hold on the arguments and the context set by ``engine.set_agent_context``.
    ``role`` is the engine role to check; by default the acting agent's ``agent_id``.

    Agent OS's regex SQL check both misses and over-blocks, so by default (``defer_sql=True``)
    its SQL verdict is left to :class:`SQLPolicy`, which the kernel then requires. Pass
    ``defer_sql=False`` to keep the regex verdict as well.

    >>> from agent_os import PolicyEngine
    >>> engine = PolicyEngine()
    >>> engine.add_constraint("analyst", ["database_query"])
    >>> policy = AgentOSPolicy(engine, role="analyst", severity="high")
    >>> policy.evaluate(Action("send_email", {}), ActionContext())[0].description
    'Role analyst cannot use tool send_email'
    """

    runs_inline = True

    def __init__(
        self,
        engine: Any,
        *,
        role: Optional[str] = None,
        severity: Union[Severity, str] = Severity.HIGH,
        defer_sql: bool = True,
        **kwargs: Any,
    ) -> None:
        if not isinstance(engine, PolicyEngine):
            raise TypeError(
                f"engine must be an agent_os.PolicyEngine, got {type(engine).__module__}.{type(engine).__name__}; "
                f"build one with agent_os.PolicyEngine() and add_constraint(role, tools)"
            )
        if role is not None and (not isinstance(role, str) or not role):
            raise TypeError(f"role must be a non-empty str or None, got {role!r}")
        if not isinstance(defer_sql, bool):
            raise TypeError(f"defer_sql must be a bool, got {type(defer_sql).__name__}")
        kwargs.setdefault("name", "AgentOSPolicy")
        super().__init__(severity=severity, **kwargs)
        self.engine = engine
        self.role = role
        self.defer_sql = defer_sql

    def evaluate(self, action: Action, context: ActionContext) -> List[PolicyViolation]:
        role = self.role or context.agent_id
        reason = self.engine.check_violation(role, action.tool_name, dict(action.args))
        if reason is None:
            return []
        # The SQL regex runs last in check_violation, so a regex denial means every role,
        # condition and path check before it passed.
        if self.defer_sql and reason.startswith(AGENT_OS_SQL_DENIAL_PREFIX):
            return []
        return [self.violation(reason)]
