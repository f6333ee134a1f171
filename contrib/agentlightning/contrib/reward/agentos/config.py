"""RewardConfig: every reward-shaping parameter in one validated dataclass."""

from __future__ import annotations

from agentlightning.contrib.kernel.agentos.reward_config import RewardConfig

__all__ = ["RewardConfig"]
