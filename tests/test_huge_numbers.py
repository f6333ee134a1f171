"""An int too large for a float (10**400) at each numeric boundary of the reward rooms: the error
each boundary documents for a number that is not finite, never a bare ``OverflowError``."""

from __future__ import annotations

import pytest

from agentlightning.contrib.env.agentos import GovernedEnvironment
from agentlightning.contrib.kernel.agentos import GovernanceConfigError, GovernanceKernel, LagrangianPenalty, SQLPolicy
from agentlightning.contrib.kernel.agentos.reward.formula import shape_governed_reward
from agentlightning.contrib.kernel.agentos.reward.shaping import CompositeReward
from agentlightning.contrib.kernel.agentos.violations import SeverityTable, finite_float

HUGE = 10**400
TABLE = SeverityTable.preset("penalties")


def test_finite_float_reads_a_huge_int_as_not_finite():
    assert (finite_float(HUGE), finite_float(-HUGE), finite_float(2**1023)) == (None, None, float(2**1023))


def test_a_huge_base_reward_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="the base reward must be a finite number"):
        shape_governed_reward(HUGE, [], TABLE)


@pytest.mark.parametrize("field", ["target_violation_rate", "learning_rate", "multiplier"])
def test_a_huge_lagrangian_setting_is_a_configuration_error(field):
    with pytest.raises(GovernanceConfigError, match=f"LagrangianPenalty.{field} must be a finite number"):
        LagrangianPenalty(**{field: HUGE})


def test_a_huge_composite_weight_or_component_value_is_refused():
    with pytest.raises(GovernanceConfigError, match="weight must be a finite number"):
        CompositeReward([(lambda r: 1.0, HUGE)])
    with pytest.raises(TypeError, match="not a finite number"):
        CompositeReward([(lambda r: HUGE, 1.0)])(None)


def test_a_huge_task_reward_from_the_environments_reward_fn_is_a_clear_error():
    env = GovernedEnvironment(
        GovernanceKernel([SQLPolicy(deny=["DROP"])]),
        task_generator=lambda rng: "count the users",
        executor=lambda state, action: "ok",
        reward_fn=lambda state, action, result: HUGE,
    )
    env.reset(seed=0)
    with pytest.raises(ValueError, match="reward_fn returned a non-finite reward"):
        env.step("SELECT 1")
