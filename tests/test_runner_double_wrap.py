"""A process whose OpenAI client is already instrumented twice is refused by ``AgentOSRunner.init_worker``.

The runner keeps AgentOps' import monitor away from relative imports once its own tracer has
started (``tests/test_runner_llm_spans.py``). What it cannot undo is a process in which a plain
``AgentOpsTracer`` started first and a relative import AgentOps mistakes for an agentic library
(``from .autogen import ...``, ``from .agents import ...``) already ran: AgentOps uninstrumented
OpenAI, left the chat wrappers, and the next ``import openai`` wraps them again. Each scenario runs
in a fresh interpreter (AgentOps' instrumentation is process-wide) with an OpenAI-compatible server
on loopback, and imports the governed runner's package only after the plain tracer started:

* ``doubled``: the plain runner's agent makes 2 calls and records 4 spans; the detector names the
  doubled methods from their wrapt wrapper chains, and the governed runner refuses to start;
* ``pending``: OpenAI was uninstrumented but not yet imported again; the governed runner refuses,
  and with the refusal switched off the same process records 2 calls as 4 spans;
* ``late-package``: no stray import, only the governed package imported after AgentOps' monitor:
  it does not itself make AgentOps uninstrument OpenAI, and the runner starts (2 calls, 2 spans);
* ``clean``: the governed runner starts first; the agent's late relative imports change nothing.
"""

from __future__ import annotations

import sys

import pytest
import wrapt

from agentlightning.contrib.runner.agentos.tracing import doubled_wrappers, wrapper_layers

from .loopback_chat import LOOPBACK_CHAT_SERVER, run_child_script

CHILD = (
    """\
import asyncio, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import agentlightning as agl
from agentlightning.store.memory import InMemoryLightningStore
from agentlightning.tracer.agentops import AgentOpsTracer

SCENARIO, CHECK = sys.argv[1], sys.argv[2] == "check"


"""
    + LOOPBACK_CHAT_SERVER
    + """

class TwoCalls(agl.LitAgent):
    def rollout(self, task, resources, rollout):
        if SCENARIO == "clean":
            import relative_imports  # noqa: F401  (first imported after the governed runner's tracer started)
        from openai import OpenAI

        client = OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="unused")
        for _ in range(2):
            client.chat.completions.create(model="policy", messages=[{"role": "user", "content": task}])
        return 1.0


async def spans_of_two_calls(runner, store):
    rollout = await runner.step("say SELECT 1")
    return sum(span.name == "openai.chat.completion" for span in await store.query_spans(rollout.rollout_id))


async def main():
    store = InMemoryLightningStore()
    await store.add_resources({})  # the agent needs none: its server is in this script
    report = {}
    if SCENARIO != "clean":
        plain = agl.LitAgentRunner(AgentOpsTracer())
        plain.init(TwoCalls())
        plain.init_worker(0, store)  # AgentOps' import monitor is the import hook from here on
        import openai  # noqa: F401  (the monitor instruments it, once)
        if SCENARIO in ("doubled", "pending"):
            import relative_imports  # noqa: F401  (AgentOps uninstruments OpenAI; its chat wrappers stay)
        if SCENARIO == "doubled":
            report["plain_runner_spans"] = await spans_of_two_calls(plain, store)

    from agentops import instrumentation
    from agentlightning.contrib.kernel.agentos import SQLPolicy
    from agentlightning.contrib.runner.agentos import AgentOSRunner, runner as runner_module
    from agentlightning.contrib.runner.agentos.tracing import DoubleInstrumentationError, doubled_openai_methods

    report["openai_instrumented"] = instrumentation._is_package_instrumented("openai")
    report["doubled"] = [d.method for d in doubled_openai_methods()]
    if not CHECK:
        runner_module.refuse_double_instrumentation = lambda: None
    governed = AgentOSRunner([SQLPolicy(deny=["DROP"])], log_violations=False)
    governed.init(TwoCalls())
    try:
        governed.init_worker(1, store)
    except DoubleInstrumentationError as error:
        report["refused"] = str(error)
    else:
        report["governed_spans"] = await spans_of_two_calls(governed, store)
        report["doubled_after"] = [d.method for d in doubled_openai_methods()]
    print(json.dumps(report))


asyncio.run(main())
"""
)

# The two relative imports AgentOps mistakes for libraries, in a package of their own.
PACKAGE = {
    "relative_imports/__init__.py": "from .autogen import op_variants\nfrom .agents import Agent\n",
    "relative_imports/autogen.py": "op_variants = ()\n",
    "relative_imports/agents.py": "class Agent:\n    pass\n",
}

CHAT_CREATE = "openai.resources.chat.completions.completions.Completions.create"
ASYNC_CHAT_CREATE = "openai.resources.chat.completions.completions.AsyncCompletions.create"


def run_child(tmp_path, scenario: str, check: bool = True) -> dict:
    return run_child_script(tmp_path, CHILD, PACKAGE, scenario, "check" if check else "skip")


@pytest.mark.e2e
def test_a_doubled_openai_client_is_detected_and_the_runner_refuses_to_start(tmp_path):
    seen = run_child(tmp_path, "doubled")
    assert seen["plain_runner_spans"] == 4, "the reproduction no longer doubles: 2 calls were not recorded as 4 spans"
    assert {CHAT_CREATE, ASYNC_CHAT_CREATE} <= set(seen["doubled"]), seen["doubled"]
    assert "governed_spans" not in seen, "the governed runner started in a process that records each call twice"
    refusal = seen["refused"]
    assert CHAT_CREATE in refusal and "2 layers" in refusal
    assert "AgentOpsTracer" in refusal and "ImportSafeAgentOpsTracer()" in refusal and "fresh process" in refusal


@pytest.mark.e2e
def test_an_uninstrumented_client_awaiting_its_second_wrap_is_refused(tmp_path):
    seen = run_child(tmp_path, "pending")
    assert "governed_spans" not in seen, "the governed runner started in a process about to record each call twice"
    assert CHAT_CREATE in seen["refused"] and "ImportSafeAgentOpsTracer()" in seen["refused"]


@pytest.mark.e2e
def test_control_the_pending_state_does_double_the_spans_without_the_refusal(tmp_path):
    seen = run_child(tmp_path, "pending", check=False)
    assert seen["governed_spans"] == 4, f"without the refusal, 2 calls gave {seen['governed_spans']} spans, not 4"
    assert CHAT_CREATE in seen["doubled_after"]


@pytest.mark.e2e
def test_importing_the_governed_package_after_agentops_started_does_not_uninstrument_openai(tmp_path):
    seen = run_child(tmp_path, "late-package")
    assert seen["openai_instrumented"] is True, "importing the governed package made AgentOps uninstrument OpenAI"
    assert seen["doubled"] == [] and "refused" not in seen, seen.get("refused")
    assert seen["governed_spans"] == 2 and seen["doubled_after"] == []


@pytest.mark.e2e
def test_a_clean_process_starts_and_records_one_span_per_call(tmp_path):
    seen = run_child(tmp_path, "clean")
    assert "refused" not in seen, seen.get("refused")
    assert seen["governed_spans"] == 2 and seen["doubled_after"] == []


def test_wrapper_layers_count_wrapt_layers_only():
    import functools

    def create(self):
        return "response"

    @functools.wraps(create)
    def checked_create(self):  # openai's required_args decorator: a __wrapped__ that is not a layer
        return create(self)

    def record(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    class Completions:
        pass

    Completions.create = checked_create
    assert wrapper_layers(vars(Completions)["create"]) == ()
    for expected in (1, 2, 3):
        wrapt.wrap_function_wrapper(Completions, "create", record)
        assert len(wrapper_layers(vars(Completions)["create"])) == expected
        assert len(wrapper_layers(Completions().create)) == expected  # bound through the instance too
    assert Completions().create() == "response"
    (doubled,) = doubled_wrappers([Completions])
    assert doubled.method.endswith("Completions.create") and len(doubled.layers) == 3
    assert all(layer.endswith("record") for layer in doubled.layers)
    assert doubled_wrappers([Completions], at_least=4) == []


def test_no_relative_import_in_the_plugin_reads_as_a_library_agentops_instruments():
    """AgentOps' monitor reads an import statement's module name, and ``name.item`` for each item of
    ``from name import item``, without regard to the leading dots; a plugin module imported after an
    AgentOps tracer started must not look like one of its libraries (``from .agents import`` did)."""
    import ast
    from pathlib import Path

    from agentops.instrumentation import TARGET_PACKAGES

    def instrumented(name: str) -> bool:
        return any(name == target or name.startswith(target + ".") for target in TARGET_PACKAGES)

    plugin = Path(__file__).resolve().parents[1] / "contrib"
    misread = []
    for path in sorted(plugin.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level:
                module = node.module or ""
                read_as = [module] + [f"{module}.{alias.name}" for alias in node.names]
                misread += [
                    f"{path.relative_to(plugin)}:{node.lineno} {name}" for name in read_as if instrumented(name)
                ]
    assert len(TARGET_PACKAGES) > 5 and "agents" in TARGET_PACKAGES  # the list this test reads is still there
    assert misread == [], f"relative imports AgentOps takes for a library it instruments: {misread}"


def test_an_agentops_release_without_the_internals_read_is_refused_with_a_clear_error(monkeypatch):
    import types

    from agentlightning.contrib.runner.agentos import tracing

    stripped = types.ModuleType("agentops.instrumentation")  # a release that renamed its internals
    monkeypatch.setitem(sys.modules, "agentops.instrumentation", stripped)
    with pytest.raises(tracing.DoubleInstrumentationError, match="no _import_monitor in the installed AgentOps"):
        tracing._agentops_monitor_reached()
