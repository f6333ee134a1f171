"""The value types at the kernel boundary: severities, violations, actions, contexts."""

from __future__ import annotations

from datetime import datetime

import pytest

from agentlightning.contrib.kernel.agentos import (
    Action,
    ActionContext,
    GovernanceConfigError,
    PolicyViolation,
    Severity,
    ViolationType,
    governance_context,
)
from agentlightning.contrib.kernel.agentos.actions import current_context


@pytest.mark.parametrize(
    "severity, penalty", [("critical", -100.0), ("high", -50.0), ("medium", -10.0), ("low", -1.0), ("LOW", -1.0)]
)
def test_penalty_derives_from_severity_in_reward_space(severity, penalty):
    violation = PolicyViolation(ViolationType.BLOCKED, "SQLPolicy", "DROP denied", severity)
    assert violation.penalty == penalty
    assert violation.penalty_is_explicit is False
    assert violation.action_blocked is True
    assert violation.timestamp.tzinfo is not None


def test_explicit_penalty_is_kept_and_flagged():
    violation = PolicyViolation("warned", "Custom", "slow", "critical", penalty=-3)
    assert violation.penalty == -3.0
    assert violation.penalty_is_explicit is True
    assert violation.action_blocked is False


def test_positive_penalty_is_rejected_with_the_sign_convention():
    with pytest.raises(GovernanceConfigError, match=r"penalty must be <= 0 .*did you mean -100.0"):
        PolicyViolation("blocked", "P", "d", "critical", penalty=100.0)


@pytest.mark.parametrize("bad", ["severe", "", "crit"])
def test_unknown_severity_names_valid_ones(bad):
    with pytest.raises(GovernanceConfigError, match="unknown severity .*critical, high, medium, low"):
        PolicyViolation("blocked", "P", "d", bad)


def test_non_string_severity_and_type_are_type_errors():
    with pytest.raises(TypeError, match="severity must be a str or Severity"):
        Severity.parse(3)
    with pytest.raises(GovernanceConfigError, match="unknown violation_type 'nuked'"):
        PolicyViolation("nuked", "P", "d", "low")


def test_violation_roundtrips_through_dict():
    violation = PolicyViolation(
        ViolationType.SIGNAL_SENT, "Kernel", "SIGSTOP sent", "high", timestamp=datetime(2026, 1, 1)
    )
    again = PolicyViolation.from_dict(violation.to_dict())
    assert again == violation
    assert again.timestamp.isoformat() == "2026-01-01T00:00:00+00:00"


def test_action_validates_at_the_boundary():
    with pytest.raises(TypeError, match="tool_name must be a non-empty str"):
        Action("", {})
    with pytest.raises(TypeError, match="args must be a mapping"):
        Action("database_query", "SELECT 1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="keys must be str"):
        Action("t", {1: "x"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="cost_usd must be finite and >= 0"):
        Action("t", {}, cost_usd=-1)
    with pytest.raises(TypeError, match="cost_usd must be a number"):
        Action("t", {}, cost_usd="1")  # type: ignore[arg-type]


def test_action_owns_a_copy_of_its_args():
    args = {"query": "SELECT 1"}
    action = Action("database_query", args)
    args["query"] = "DROP TABLE users"
    assert action.args["query"] == "SELECT 1"


def test_governance_context_nests_and_restores():
    assert current_context() == ActionContext()
    with governance_context(agent_id="a", rollout_id="r1"):
        with governance_context(rollout_id="r2") as inner:
            assert inner == ActionContext(agent_id="a", rollout_id="r2")
        assert current_context().rollout_id == "r1"
    assert current_context().rollout_id is None
    with pytest.raises(TypeError, match="rollout_id must be a str or None"):
        ActionContext(rollout_id=5)  # type: ignore[arg-type]
