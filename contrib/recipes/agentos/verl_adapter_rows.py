"""1.0's own verl ``RolloutAdapter`` on the 1.0 recipe's recorded rollouts: the batch carries the governed reward.

``train_sql_gateway.py`` records, per step and arm, each ``CompletedRollout`` exactly as 1.0's
``AglRolloutManager`` built it (``completed-rows-<step>.json``: events, triplets of token ids,
``final_reward``). This script hands them to ``agentlightning.verl.rollout_adapter.RolloutAdapter``
(1.0's code, not a re-implementation), at both of its aggregation levels, and reads the reward
back out of the ``DataProto`` it builds: the one non-zero entry of each row's
``token_level_scores`` (placed by the adapter at the row's last response token). For every row it
checks that this equals the last ``reward`` event on the rollout's attempt, which for a governed
rollout is the one ``GovernanceHooks`` wrote (``source: agentos``).

The adapter's module imports torch, tensordict and verl at its top, so this runs in an environment
that has them beside agentlightning 1.0 (not ``.venv312``; see docs/results_gateway.md for the
install and its cost):

    runs/adapter/venv/bin/python contrib/recipes/agentos/verl_adapter_rows.py \\
        runs/gateway_train/governed/completed-rows-*.json --out runs/adapter/batch.json

A ``rows-<step>.json`` written before the recipe recorded whole rollouts is rebuilt into
``CompletedRollout`` objects from its recorded fields (token ids, ``final_reward``, the reward
events); the rebuilt ones are marked so in the output.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple


def load_rollouts(path: Path) -> Tuple[List[Any], bool]:
    """The ``CompletedRollout`` objects of one recorded file, and whether they were rebuilt from an older format."""
    from agentlightning.verl.agl_rollout_manager import CompletedRollout, Triplet

    data = json.loads(path.read_text())
    if isinstance(data, list):  # completed-rows-*.json: the rollouts as 1.0 built them
        return [CompletedRollout.model_validate(r) for r in data], False
    step = int(path.stem.rsplit("-", 1)[-1])
    rollouts = []
    for index, row in enumerate(data["rows"]):
        triplets = [
            Triplet(
                prompt={"token_ids": t["prompt_ids"]},
                response={"token_ids": t["response_ids"], "log_probs": None},
                reward=t["reward"],
            )
            for t in row["triplets"]
        ]
        rollouts.append(
            CompletedRollout(
                rollout_id=f"recorded-{step}-{index}",
                data_id=str(row["input"]["task_id"]),
                step=step,
                sample_idx_in_step=index,
                enqueue_time=0.0,
                input=row["input"],
                final_reward=row["final_reward"],
                triplets=triplets,
                events=[{"event_type": "reward", "data": e} for e in row["reward_events"]],
            )
        )
    return rollouts, True


def last_reward_event(rollout: Any) -> Dict[str, Any]:
    rewards = [e["data"] for e in rollout.events if e.get("event_type") == "reward"]
    return rewards[-1] if rewards else {}


def adapt(rollouts: List[Any], level: str) -> List[Dict[str, Any]]:
    """1.0's ``RolloutAdapter.get_train_data_batch`` at ``level``; one record per training row of the batch."""
    import torch

    from agentlightning.verl.rollout_adapter import RolloutAdapter

    longest_prompt = max(len(t.prompt["token_ids"]) for r in rollouts for t in r.triplets or [])
    longest_response = max(len(t.response["token_ids"]) for r in rollouts for t in r.triplets or [])
    adapter = RolloutAdapter(
        max_prompt_length=longest_prompt,
        max_response_length=longest_response,
        device=torch.device("cpu"),
        pad_token_id=0,
        trace_aggregator_level=level,
    )
    batch, metrics = adapter.get_train_data_batch(rollouts)
    by_id = {r.rollout_id: r for r in rollouts}
    scores = batch.batch["token_level_scores"].float()
    records = []
    for index, rollout_id in enumerate(batch.non_tensor_batch["rollout_id_list"]):
        rollout = by_id[str(rollout_id)]
        event = last_reward_event(rollout)
        nonzero = scores[index][scores[index] != 0]
        trained = float(nonzero.sum()) if len(nonzero) else 0.0
        records.append(
            {
                "level": level,
                "rollout_id": str(rollout_id),
                "data_id": str(batch.non_tensor_batch["data_id_list"][index]),
                "response_tokens": int(batch.batch["attention_mask"][index, -longest_response:].sum()),
                "row_reward": trained,
                "final_reward": rollout.final_reward,
                "last_reward_event": {k: event.get(k) for k in ("value", "source", "reason")},
                "governed": event.get("source") == "agentos",
                "matches_last_reward_event": event.get("value") is not None and trained == float(event["value"]),
            }
        )
    records.append({"level": level, "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float))}})
    return records


def main(argv: List[str] | None = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="completed-rows-*.json (or older rows-*.json)")
    parser.add_argument("--out", type=Path, help="write the per-row records here as JSON")
    args = parser.parse_args(argv)
    import tensordict
    import torch
    import verl

    import agentlightning

    rollouts, rebuilt = [], False
    for path in args.files:
        loaded, was_rebuilt = load_rollouts(path)
        rollouts.extend(loaded)
        rebuilt = rebuilt or was_rebuilt
    rows = [record for level in ("transition", "trajectory") for record in adapt(rollouts, level)]
    training = [r for r in rows if "rollout_id" in r]
    result = {
        "versions": {
            "agentlightning": agentlightning.__version__ if hasattr(agentlightning, "__version__") else "?",
            "torch": torch.__version__,
            "tensordict": tensordict.__version__,
            "verl": getattr(verl, "__version__", "?"),
        },
        "files": [p.name for p in args.files],
        "rebuilt_from_rows": rebuilt,
        "rollouts": len(rollouts),
        "rows": rows,
        "summary": {
            level: {
                "rows": sum(r["level"] == level for r in training),
                "rows_matching_last_reward_event": sum(
                    r["level"] == level and r["matches_last_reward_event"] for r in training
                ),
                "governed_rows": sum(r["level"] == level and r["governed"] for r in training),
                "governed_rows_with_penalty": sum(
                    r["level"] == level and r["governed"] and r["row_reward"] < 0 for r in training
                ),
            }
            for level in ("transition", "trajectory")
        },
    }
    for record in training:
        if record["level"] == "transition":
            event = record["last_reward_event"]
            print(
                f"{record['rollout_id']:>40}  row reward {record['row_reward']:7.1f}  last reward event "
                f"{event['value']!s:>6} ({event['source']})  match {record['matches_last_reward_event']}"
            )
    print(json.dumps({"versions": result["versions"], "summary": result["summary"]}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
