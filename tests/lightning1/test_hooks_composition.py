"""A user's ``GovernanceHooks`` subclass that posts its own reward: trained on it plus the penalty.

Through the real path: ``agentos-gateway``, 1.0's ``agl-controller`` starting the unchanged harness,
and 1.0's ``AglRolloutManager`` running the user's hooks file loaded by ``load_hooks`` (the
documented example in docs/agentlightning-1.0.md, as it is, and the same with ``super()`` first).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

from agentlightning.schemas import Event

from agentlightning.contrib.gateway.agentos import DECISION_EVENT, GovernanceConfig
from agentlightning.contrib.gateway.agentos import hooks as agentos_hooks
from agentlightning.contrib.gateway.agentos.events import decision_event_data
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy

from .scripted_model import ScriptedModel
from .test_controller import SCRIPT, run_the_script, services  # noqa: F401 (the gateway and controller fixture)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agentlightning-1.0.md"


def documented_hooks() -> str:
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"<!-- own-reward-hooks-py[^\n]*\n\s*```py\n(.*?)```", text, re.S)
    assert match, "docs/agentlightning-1.0.md has no own-reward hooks example"
    return textwrap.dedent(match.group(1))


def test_the_users_own_reward_plus_the_penalty_is_trained_on(services, tmp_path, monkeypatch):  # noqa: F811
    url, config = services
    monkeypatch.setenv("AGENTOS_GATEWAY_CONFIG", str(config))
    documented = tmp_path / "my_hooks.py"
    documented.write_text(documented_hooks())
    super_first = tmp_path / "super_first.py"  # the other natural order: super() first, then the reward
    call_super = "        super().on_succeeded(rollout, events, store)\n"
    first_line = "        attempt_id = rollout.status.last_attempt_id\n"
    super_first.write_text(documented_hooks().replace(call_super, "").replace(first_line, first_line + call_super))
    assert super_first.read_text().index("super()") < super_first.read_text().index("store.add_event")
    rewards = {}
    with ScriptedModel(SCRIPT) as model:  # one model server, registered once, for both managers
        for hooks_file in (documented, super_first):
            databases = {q: tmp_path / f"{hooks_file.stem}-{q}.db" for q in SCRIPT}
            completed = run_the_script(url, str(hooks_file), model, databases, register=hooks_file == documented)
            for rollout in completed:
                assert rollout.rollout_state.value == "succeeded"
                last = [
                    (e["data"].get("source"), e["data"]["value"]) for e in rollout.events if e["event_type"] == "reward"
                ]
                rewards[hooks_file.stem, rollout.input["question"]] = (rollout.final_reward, last[-1])
    # The checker's 3.0 is the base: 3.0 - 100 for the blocked DROP, 3.0 for the clean read, in both orders.
    for stem in ("my_hooks", "super_first"):
        assert rewards[stem, "drop"] == (-97.0, ("agentos", -97.0))
        assert rewards[stem, "read"] == (3.0, ("agentos", 3.0))


class Writer:
    def __init__(self):
        self.events = []

    def add_event(self, rollout_id, attempt_id, event_type, data):
        self.events.append((event_type, data))


def attempt():
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])])
    decision = decision_event_data(
        kernel.check("run_sql", {"query": "DROP TABLE t"}), choice_index=0, tool_call_id=None
    )
    events = [
        Event(event_type=DECISION_EVENT, rollout_id="ro-1", attempt_id="0", timestamp=0.0, data=decision),
        Event(event_type="reward", rollout_id="ro-1", attempt_id="0", timestamp=0.0, data={"value": 1.0}),
    ]
    rollout = SimpleNamespace(rollout_id="ro-1", status=SimpleNamespace(last_attempt_id="0"), input={"question": "q"})
    return rollout, {"0": events}


CONFIG = GovernanceConfig.from_mapping({"recorder_dir": "unused", "policies": [{"sql": {}}]})


def test_without_super_the_governed_reward_is_still_the_last_one():
    class Forgetful(agentos_hooks.GovernanceHooks):
        def on_succeeded(self, rollout, events, store):
            store.add_event(rollout.rollout_id, "0", "reward", {"value": 5.0, "source": "mine"})

    writer = Writer()
    Forgetful(CONFIG).on_succeeded(*attempt(), writer)
    assert [(t, d.get("source"), d["value"]) for t, d in writer.events] == [
        ("reward", "mine", 5.0),
        ("reward", "agentos", -95.0),
    ]


def test_a_subclass_that_raises_still_gets_the_fail_closed_reward():
    class Broken(agentos_hooks.GovernanceHooks):
        def on_succeeded(self, rollout, events, store):
            store.add_event(rollout.rollout_id, "0", "reward", {"value": 5.0, "source": "mine"})
            raise RuntimeError("checker crashed")

    writer = Writer()
    Broken(CONFIG).on_succeeded(*attempt(), writer)  # does not raise: 1.0 would drop the queued events
    (_, last) = writer.events[-1]
    assert (last["source"], last["reason"], last["value"]) == ("agentos", "agentos.hook_failed", -100.0)
    assert "checker crashed" in last["message"]


def test_two_levels_of_subclasses_write_one_governed_reward():
    class Scored(agentos_hooks.GovernanceHooks):
        def on_succeeded(self, rollout, events, store):
            store.add_event(rollout.rollout_id, "0", "reward", {"value": 2.0, "source": "scored"})
            super().on_succeeded(rollout, events, store)

    class Logged(Scored):
        def on_succeeded(self, rollout, events, store):
            super().on_succeeded(rollout, events, store)
            store.add_event(rollout.rollout_id, "0", "my.log", {"note": "done"})

    writer = Writer()
    Logged(CONFIG).on_succeeded(*attempt(), writer)
    assert [(t, d.get("source"), d.get("value")) for t, d in writer.events] == [
        ("reward", "scored", 2.0),
        ("my.log", None, None),
        ("reward", "agentos", -98.0),
    ]
