"""One LLM call, one span: AgentOps' import monitor kept away from relative imports.

agentlightning's ``AgentOpsTracer`` starts AgentOps (``init_worker`` calls ``agentops.init``),
which replaces ``builtins.__import__`` with a monitor that instruments a library when it is
imported. AgentOps (0.4) takes the name of an import statement for the library's name even when
the statement is relative: ``from .autogen import ...`` inside torch
(``torch.distributed.tensor``, which peft and transformers' tensor-parallel code import) reads as
the AG2 library ``autogen``, and ``from .agents import ...`` as the OpenAI Agents SDK ``agents``
(this package has an ``agents`` module, which it therefore imports as ``from . import agents``, a
form AgentOps does not misread). An agentic library makes AgentOps uninstrument the LLM providers;
its OpenAI instrumentor then leaves the chat-completion wrappers in place, the library it looked
for is not installed, and the next ``import openai`` anywhere in the process instruments OpenAI
again over the old wrapper. From then on every chat completion is recorded twice (two nested
``openai.chat.completion`` spans, the second the parent of the first), so an adapter that builds
triplets from the LLM spans sees two calls where the agent made one.

A relative import always names a module of the importing package, never a library AgentOps
instruments, so :func:`keep_relative_imports_from_agentops` lets those bypass the monitor; the
monitor still sees every absolute import and instruments what it should. :class:`ImportSafeAgentOpsTracer`
applies it whenever its tracer starts; ``AgentOSRunner`` applies it after its tracer starts,
whichever tracer it was given.

The guard cannot undo what happened before it: a process in which an AgentOps tracer started, and
such an import ran, before the runner's ``init_worker`` already has OpenAI's methods wrapped twice
(or will have them wrapped again by its next ``import openai``). :func:`doubled_openai_methods`
reads that from wrapt's wrapper chains (every ``FunctionWrapper`` layer on every method of the
OpenAI client's API classes, whichever methods the installed AgentOps wraps),
:func:`openai_rewrap_pending` from AgentOps' state, and :func:`refuse_double_instrumentation`
(called by ``AgentOSRunner.init_worker`` after the guard, once per worker, never per call) raises
:class:`DoubleInstrumentationError` for either.

>>> tracer = ImportSafeAgentOpsTracer()
>>> isinstance(tracer, AgentOpsTracer)
True
"""

from __future__ import annotations

import builtins
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, List, Optional, Tuple

import wrapt

from agentlightning.store.base import LightningStore
from agentlightning.tracer.agentops import AgentOpsTracer

__all__ = [
    "DoubleInstrumentationError",
    "DoubledMethod",
    "ImportSafeAgentOpsTracer",
    "doubled_openai_methods",
    "doubled_wrappers",
    "keep_relative_imports_from_agentops",
    "openai_rewrap_pending",
    "refuse_double_instrumentation",
    "wrapper_layers",
]

#: Where the OpenAI client's API methods live: every method AgentOps' OpenAI instrumentation wraps
#: (chat ``create`` and ``parse``, sync and async, ``Responses.create``, completions, embeddings,
#: images, the beta assistants, runs and messages) is a class attribute in one of these modules.
OPENAI_API_MODULES = "openai.resources"


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


def wrapper_layers(attribute: Any) -> Tuple[Any, ...]:
    """The wrapt wrapper functions around a function or method, outermost first.

    Each ``wrapt.wrap_function_wrapper`` (how AgentOps and the OpenTelemetry instrumentations patch a
    method) adds one ``FunctionWrapper`` whose ``__wrapped__`` is what it wraps; a function's own
    ``__wrapped__`` from ``functools.wraps`` (openai's ``required_args``) is not a layer.

    >>> import wrapt
    >>> def add_one(wrapped, instance, args, kwargs):
    ...     return wrapped(*args, **kwargs) + 1
    >>> twice = wrapt.FunctionWrapper(wrapt.FunctionWrapper(abs, add_one), add_one)
    >>> twice(-1), len(wrapper_layers(twice)), wrapper_layers(abs)
    (3, 2, ())
    """
    layers: List[Any] = []
    while isinstance(attribute, (wrapt.FunctionWrapper, wrapt.BoundFunctionWrapper)):
        layers.append(attribute._self_wrapper)
        attribute = attribute.__wrapped__
    return tuple(layers)


@dataclass(frozen=True)
class DoubledMethod:
    """A method wrapped by more than one instrumentation layer: each layer records its own span."""

    method: str  # module.Class.name
    layers: Tuple[str, ...]  # each wrapper function's module.qualname, outermost first

    def __str__(self) -> str:
        count = f"{len(self.layers)} layer{'s' if len(self.layers) > 1 else ''}"
        return f"{self.method} ({count}: {', '.join(self.layers)})"


def _method_attributes(owners: Iterable[type]) -> Iterator[Tuple[str, Any]]:
    for owner in owners:
        for name, attribute in vars(owner).items():
            yield f"{owner.__module__}.{owner.__qualname__}.{name}", attribute


def _described(wrapper: Any) -> str:
    return f"{getattr(wrapper, '__module__', '?')}.{getattr(wrapper, '__qualname__', type(wrapper).__name__)}"


def doubled_wrappers(owners: Iterable[type], *, at_least: int = 2) -> List[DoubledMethod]:
    """The methods of ``owners`` wrapped by ``at_least`` wrapt layers (class attributes, read unbound).

    >>> import wrapt
    >>> class Client:
    ...     def create(self):
    ...         return "response"
    >>> def record(wrapped, instance, args, kwargs):
    ...     return wrapped(*args, **kwargs)
    >>> _ = wrapt.wrap_function_wrapper(Client, "create", record)
    >>> doubled_wrappers([Client])
    []
    >>> _ = wrapt.wrap_function_wrapper(Client, "create", record)
    >>> [d.method.rsplit(".", 2)[1:] for d in doubled_wrappers([Client])]
    [['Client', 'create']]
    """
    found = []
    for method, attribute in _method_attributes(owners):
        layers = wrapper_layers(attribute)
        if len(layers) >= at_least:
            found.append(DoubledMethod(method, tuple(_described(layer) for layer in layers)))
    return found


def _openai_api_classes() -> List[type]:
    """The classes of the OpenAI client's API modules imported so far (none before ``import openai``)."""
    classes = []
    for module_name, module in list(sys.modules.items()):
        in_api = module_name == OPENAI_API_MODULES or module_name.startswith(OPENAI_API_MODULES + ".")
        if module is None or not in_api:
            continue
        classes.extend(
            value
            for value in list(vars(module).values())
            if isinstance(value, type) and value.__module__ == module_name  # defined there, not re-exported
        )
    return classes


def doubled_openai_methods(*, at_least: int = 2) -> List[DoubledMethod]:
    """The OpenAI client methods wrapped by ``at_least`` instrumentation layers in this process."""
    return doubled_wrappers(_openai_api_classes(), at_least=at_least)


def _agentops_monitor_reached() -> bool:
    """Whether an absolute ``import`` reaches AgentOps' import monitor (directly or through the guard)."""
    instrumentation = sys.modules.get("agentops.instrumentation")
    if instrumentation is None:
        return False
    monitor, hook = _agentops_internal(instrumentation, "_import_monitor"), builtins.__import__
    return hook is monitor or getattr(hook, "__wrapped__", None) is monitor


def _agentops_internal(instrumentation: Any, name: str) -> Any:
    """AgentOps' module-level ``name``; a release without it is refused with a clear error (the
    check cannot tell whether OpenAI is instrumented twice without it)."""
    try:
        return getattr(instrumentation, name)
    except AttributeError:
        raise DoubleInstrumentationError(
            f"agentops.instrumentation has no {name} in the installed AgentOps release, so AgentOSRunner cannot "
            f"tell whether OpenAI calls will be recorded once. Install the AgentOps release agentlightning 0.3 "
            f"was built with (0.4.x)."
        ) from None


def openai_rewrap_pending() -> List[DoubledMethod]:
    """The OpenAI methods the next ``import openai`` will wrap a second time, if AgentOps is in that state.

    AgentOps uninstrumented OpenAI (a relative import it took for an agentic library that is not
    installed) and left the chat wrappers in place: OpenAI is imported, AgentOps no longer counts it
    as instrumented, its import monitor still instruments providers, and some methods already carry
    a layer. The monitor instruments OpenAI again on the next import statement that names it.
    """
    if "openai" not in sys.modules or not _agentops_monitor_reached():
        return []
    instrumentation = sys.modules["agentops.instrumentation"]
    if _agentops_internal(instrumentation, "_has_agentic_library") or _agentops_internal(
        instrumentation, "_is_package_instrumented"
    )("openai"):
        return []
    return doubled_openai_methods(at_least=1)


class DoubleInstrumentationError(RuntimeError):
    """This process records each OpenAI call more than once; governed training must not start in it."""


def refuse_double_instrumentation() -> None:
    """Raise :class:`DoubleInstrumentationError` if OpenAI calls are, or are about to be, recorded twice.

    Refuse rather than repair. Removing the extra layers cannot be shown correct: the OpenAI
    client keeps copies of its bound methods (``client.chat.completions.with_raw_response.create``
    and the like are built once, around the method as it was then), so a client made before the
    repair would go on recording every call twice; AgentOps' own bookkeeping (which instrumentor
    is active) would no longer match the methods; and any further relative import of that kind
    adds one more layer. A run whose LLM spans are doubled silently corrupts its triplets, so
    the runner does not start, and says how to get a process that records each call once.
    """
    doubled = doubled_openai_methods()
    pending = [] if doubled else openai_rewrap_pending()
    if not doubled and not pending:
        return
    state = (
        f"OpenAI's client methods are wrapped by more than one instrumentation layer: {'; '.join(map(str, doubled))}"
        if doubled
        else (
            f"AgentOps has uninstrumented OpenAI but left its wrappers on {'; '.join(map(str, pending))}, and "
            f"its import monitor will wrap them again at the next `import openai`"
        )
    )
    raise DoubleInstrumentationError(
        f"{state}. Every model call would be recorded as nested duplicate spans, which the triplet "
        f"adapters read as several calls. Cause: an AgentOps tracer (agentlightning's plain AgentOpsTracer, "
        f"or agentops.init) started in this process before this runner, and then a relative import AgentOps "
        f"mistakes for an agentic library ran (`from .autogen import` in torch.distributed.tensor, which "
        f"peft imports; `from .agents import`); or two different instrumentations patch the same methods "
        f"(the layers above name them). This process cannot be repaired. Fix: in a fresh process, start the "
        f"AgentOSRunner (its init_worker) before any plain AgentOpsTracer, or give the other runners "
        f"ImportSafeAgentOpsTracer() from agentlightning.contrib.runner.agentos.tracing in place of "
        f"AgentOpsTracer(); keep one OpenAI instrumentation."
    )
