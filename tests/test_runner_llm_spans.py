"""One model call is one ``openai.chat.completion`` span, whatever the agent imports after the tracer starts.

AgentOps' import monitor (installed by the tracer's start) reads the relative import
``from .autogen import ...`` (torch's ``torch.distributed.tensor``, imported by peft) and
``from .agents import ...`` as the agentic libraries ``autogen`` and ``agents``: it uninstruments
OpenAI, whose chat wrapper stays, and the next ``import openai`` wraps it a second time, so every
call is recorded twice (``contrib/agentlightning/contrib/runner/agentos/tracing.py`` has the
whole story). Each scenario runs in a fresh interpreter (AgentOps' instrumentation is
process-wide and cannot be undone): a runner starts its tracer, its agent imports a package with
those relative imports for the first time (a local one, and torch's own module where torch is
installed), then calls an OpenAI-compatible server on loopback twice with the ``openai`` client.

* ``AgentOSRunner`` (its default ``AgentOpsTracer``) and a plain ``LitAgentRunner`` with
  ``ImportSafeAgentOpsTracer``: one span per call, each the only ``openai.chat.completion`` of its
  trace, and AgentOps still instruments OpenAI (the spans exist) and still sees absolute imports;
* agentlightning's plain ``AgentOpsTracer``, the control: two nested spans per call. If this one
  ever records one span per call, the AgentOps release in use no longer has the fault.
"""

from __future__ import annotations

import importlib.util

import pytest

from .loopback_chat import LOOPBACK_CHAT_SERVER, run_child_script

# Fresh interpreters importing agentlightning (seconds each): end to end; `pytest -m "not e2e"` leaves it out.
pytestmark = pytest.mark.e2e

CHILD = (
    """\
import asyncio, builtins, json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import agentlightning as agl
from agentlightning.store.memory import InMemoryLightningStore
from agentlightning.tracer.agentops import AgentOpsTracer
from agentops import instrumentation

from agentlightning.contrib.kernel.agentos import SQLPolicy
from agentlightning.contrib.runner.agentos import AgentOSRunner
from agentlightning.contrib.runner.agentos.tracing import ImportSafeAgentOpsTracer

RUNNER, LATE_IMPORTS = sys.argv[1], sys.argv[2].split(",")


"""
    + LOOPBACK_CHAT_SERVER
    + """

class LateImportAgent(agl.LitAgent):
    def rollout(self, task, resources, rollout):
        for name in LATE_IMPORTS:  # first imported here, after the runner's tracer started
            __import__(name)
        from openai import OpenAI  # as an agent module does; any later `import openai` in the process would do

        client = OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="unused")
        for _ in range(2):
            client.chat.completions.create(model="policy", messages=[{"role": "user", "content": task}])
        return 1.0


async def main():
    store = InMemoryLightningStore()
    await store.add_resources({})  # the agent needs none: its server is in this script
    if RUNNER == "agentos":
        runner = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    elif RUNNER == "import-safe":
        runner = agl.LitAgentRunner(ImportSafeAgentOpsTracer())
    else:
        runner = agl.LitAgentRunner(AgentOpsTracer())
    runner.init(LateImportAgent())
    runner.init_worker(0, store)
    seen = []  # what AgentOps' monitor is asked about: it still sees absolute imports
    is_installed = instrumentation._is_installed_package
    instrumentation._is_installed_package = lambda module, key: seen.append(key) or is_installed(module, key)
    rollout = await runner.step("say SELECT 1")
    import autogen  # noqa: F401  (absolute, a local module of that name: the monitor looks at it, and skips it)
    instrumentation._is_installed_package = is_installed
    spans = await store.query_spans(rollout.rollout_id)
    calls = [s for s in spans if s.name == "openai.chat.completion"]
    print(json.dumps({
        "calls": [{"span": s.span_id, "parent": s.parent_id, "trace": s.trace_id} for s in calls],
        "absolute_import_seen": "autogen" in seen,
        "agentops_instruments_openai": [type(i).__name__ for i in instrumentation._active_instrumentors],
    }))


asyncio.run(main())
"""
)

# The two relative imports AgentOps mistakes for libraries, in a package of their own.
PACKAGE = {
    "relative_imports/__init__.py": "from .autogen import op_variants\nfrom .agents import Agent\n",
    "relative_imports/autogen.py": "op_variants = ()\n",
    "relative_imports/agents.py": "class Agent:\n    pass\n",
    "autogen.py": "",
}

LATE_IMPORTS = [pytest.param("relative_imports", id="local-package")]
if importlib.util.find_spec("torch") is not None:
    LATE_IMPORTS.append(pytest.param("torch,torch.distributed.tensor", id="torch-dtensor"))


def run_child(tmp_path, runner: str, late_imports: str) -> dict:
    return run_child_script(tmp_path, CHILD, PACKAGE, runner, late_imports)


@pytest.mark.parametrize("late_imports", LATE_IMPORTS)
@pytest.mark.parametrize("runner", ["agentos", "import-safe"])
def test_one_span_per_model_call_after_late_imports(tmp_path, runner, late_imports):
    seen = run_child(tmp_path, runner, late_imports)
    calls = seen["calls"]
    assert len(calls) == 2, f"two model calls recorded as {len(calls)} openai.chat.completion spans: {calls}"
    assert len({c["trace"] for c in calls}) == 1  # both in the rollout's trace
    assert not {c["parent"] for c in calls} & {c["span"] for c in calls}, "one call's span is the parent of another"
    assert seen["agentops_instruments_openai"] == ["OpenaiInstrumentor"]
    assert seen["absolute_import_seen"] is True


@pytest.mark.parametrize("late_imports", LATE_IMPORTS)
def test_control_agentops_alone_records_each_call_twice(tmp_path, late_imports):
    calls = run_child(tmp_path, "agentops", late_imports)["calls"]
    assert len(calls) == 4, (
        f"the plain AgentOpsTracer recorded 2 calls as {len(calls)} spans: if 2, this AgentOps release no "
        f"longer mistakes relative imports for libraries, and the guard in tracing.py may be retired"
    )
    inner = [c for c in calls if c["parent"] in {o["span"] for o in calls}]
    assert len(inner) == 2  # each call: an outer span and, inside it, the same call again
