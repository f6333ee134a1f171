"""One LLM call, one span: AgentOps' import monitor kept away from relative imports.

agentlightning's ``AgentOpsTracer`` starts AgentOps (``init_worker`` calls ``agentops.init``),
which replaces ``builtins.__import__`` with a monitor that instruments a library when it is
imported. AgentOps (0.4) takes the name of an import statement for the library's name even when
the statement is relative: ``from .autogen import ...`` inside torch (``torch.distributed.tensor``,
which peft and transformers' tensor-parallel code import) reads as the AG2 library ``autogen``,
and ``from .agents import ...`` (this package has an ``agents`` module) as the OpenAI Agents SDK
``agents``. An agentic library makes AgentOps uninstrument the LLM providers; its OpenAI
instrumentor then leaves the chat-completion wrappers in place, the library it looked for is not
installed, and the next ``import openai`` anywhere in the process instruments OpenAI again over
the old wrapper. From then on every chat completion is recorded twice (two nested
``openai.chat.completion`` spans, the second the parent of the first), so an adapter that builds
triplets from the LLM spans sees two calls where the agent made one.

A relative import always names a module of the importing package, never a library AgentOps
instruments, so :func:`keep_relative_imports_from_agentops` lets those bypass the monitor; the
monitor still sees every absolute import and instruments what it should. :class:`ImportSafeAgentOpsTracer`
applies it whenever its tracer starts; ``AgentOSRunner`` applies it after its tracer starts,
whichever tracer it was given.

>>> tracer = ImportSafeAgentOpsTracer()
>>> isinstance(tracer, AgentOpsTracer)
True
"""

from __future__ import annotations

import builtins
from typing import Any, Optional

from agentlightning.store.base import LightningStore
from agentlightning.tracer.agentops import AgentOpsTracer

__all__ = ["ImportSafeAgentOpsTracer", "keep_relative_imports_from_agentops"]


def keep_relative_imports_from_agentops() -> bool:
    """Route relative imports around AgentOps' import monitor, if the monitor is the import hook.

    Returns True when it put the guard in place, False when there was nothing to guard (AgentOps
    did not install its monitor, or the guard, or another hook, is already there). Safe to call
    any number of times.
    """
    from agentops import instrumentation

    monitor = instrumentation._import_monitor
    if builtins.__import__ is not monitor:
        return False
    plain_import = instrumentation._original_builtins_import

    def import_with_agentops_monitor(name: str, globals=None, locals=None, fromlist=(), level: int = 0) -> Any:
        if level:  # relative: a module of the importing package, whatever its last name looks like
            return plain_import(name, globals, locals, fromlist, level)
        return monitor(name, globals, locals, fromlist, level)

    import_with_agentops_monitor.__wrapped__ = monitor  # type: ignore[attr-defined]
    builtins.__import__ = import_with_agentops_monitor
    return True


class ImportSafeAgentOpsTracer(AgentOpsTracer):
    """agentlightning's ``AgentOpsTracer`` whose start also keeps relative imports away from
    AgentOps' import monitor (:func:`keep_relative_imports_from_agentops`), for runners that are
    not an ``AgentOSRunner`` (which guards whatever tracer it has)."""

    def init_worker(self, worker_id: int, store: Optional[LightningStore] = None) -> None:
        super().init_worker(worker_id, store)
        keep_relative_imports_from_agentops()
