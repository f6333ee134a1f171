"""One batch of governed rollouts through Agent Lightning 1.0, written as training rows (runs in the 1.0 environment).

``python gateway_collect.py batch.json rows.json``: 1.0's own ``AglRolloutManager`` (the trainer's
rollout manager) enqueues one rollout per input of ``batch.json`` on the governed gateway, the
``agl-controller`` local runner starts the harness (``gateway_sql_agent.GatewaySQLAgent``) for each,
``GovernanceHooks`` (loaded with 1.0's ``load_hooks``, as the trainer loads ``agentlightning.hooks``)
writes the governed reward, and the manager builds each ``CompletedRollout``: its triplets (prompt
and response token ids, the reward on the last one) are the rows 1.0's trainer trains on. They
are written to ``rows.json`` with the gateway's decisions, for the CPU GRPO update of
``train_sql_gateway.py`` (which imports :func:`collect` in the 1.0 environment; the update runs in
its model process, where torch is). Beside it,
``completed-<rows.json>`` holds each ``CompletedRollout`` as 1.0 built it (events included), what
1.0's verl ``RolloutAdapter`` takes (``verl_adapter_rows.py``).

The control arm (``"governed": false``) runs the same against 1.0's own ungoverned gateway, with
no hooks: the trained reward is the agent's own.

``batch.json``: ``{"url", "config", "model", "model_endpoint", "governed", "inputs": [task, ...]}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from agentlightning.hooks import load_hooks
from agentlightning.verl.agl_rollout_manager import AglRolloutManager

import agentlightning.contrib.gateway.agentos.hooks as governance_hooks
from agentlightning.contrib.gateway.agentos import DECISION_EVENT


def collect(batch: dict) -> tuple:
    hooks = None
    if batch.get("governed", True):
        os.environ["AGENTOS_GATEWAY_CONFIG"] = batch["config"]
        hooks = load_hooks(governance_hooks.__file__)
        hooks.on_startup()
    manager = AglRolloutManager(
        agl_base_url=batch["url"],
        agl_key="",
        model=batch["model"],
        step=int(batch.get("step", 0)),
        poll_interval_seconds=0.5,
        rollout_timeout_seconds=600,
        hooks=hooks,
        local_agent_class="gateway_sql_agent:GatewaySQLAgent",
        local_env_map={"AGENTOS_TASK": "input"},
    )
    manager.register_model([batch["model_endpoint"]])
    started = time.perf_counter()
    inputs = batch["inputs"]
    completed = manager.enqueue_and_wait_until_completed({k: [i[k] for i in inputs] for k in inputs[0]}, is_train=True)
    rows = []
    for rollout in completed:
        decisions = [e["data"] for e in rollout.events if e["event_type"] == DECISION_EVENT]
        rows.append(
            {
                "input": rollout.input,
                "state": rollout.rollout_state.value if rollout.rollout_state else None,
                "final_reward": rollout.final_reward,
                "triplets": [
                    {"prompt_ids": t.prompt["token_ids"], "response_ids": t.response["token_ids"], "reward": t.reward}
                    for t in rollout.triplets or []
                ],
                "decisions": [
                    {
                        "verdict": d["verdict"],
                        "tool": d["tool_name"],
                        "violations": [(v["policy_name"], v["severity"], v["description"]) for v in d["violations"]],
                    }
                    for d in decisions
                ],
                "reward_events": [e["data"] for e in rollout.events if e["event_type"] == "reward"],
            }
        )
    return {"seconds": time.perf_counter() - started, "rows": rows}, [r.model_dump(mode="json") for r in completed]


if __name__ == "__main__":
    batch_path, rows_path = Path(sys.argv[1]), Path(sys.argv[2])
    collected, completed = collect(json.loads(batch_path.read_text()))
    rows_path.write_text(json.dumps(collected))
    rows_path.with_name(f"completed-{rows_path.name}").write_text(json.dumps(completed))
