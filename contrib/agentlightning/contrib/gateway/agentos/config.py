"""The ``governance`` section of the gateway's configuration: policies, recorder directory, penalty table.

It sits beside Agent Lightning 1.0's own server configuration (``host``, ``port``, ``key``,
``default_proxy``) in one file, and is read by the gateway (policies, recorder, text actions)
and by the hooks (the penalty table, a :class:`RewardConfig` of the kernel core). The gateway's
kernel prices violations by that table (``build_kernel``), so the decision events, the audit
records and the hooks' reward say one price::

    governance:
      recorder_dir: ./agentos_audit        # one FlightRecorder file per gateway process
      policies:                            # in order; each entry is one policy
        - sql: {deny: [DROP, DELETE, TRUNCATE, ALTER], tools: [run_sql], arg: query, dialect: sqlite}
        - tool_rules: {tools: {run_sql: {args: {query: {type: str}}}}}   # every other tool: blocked
        - python: ./my_policies.py:make_policy   # a Policy of your own (or module:factory on the path)
      penalties: {critical_penalty: -100, clean_bonus: 0}   # RewardConfig fields
      text_action: null                    # or {tool: run_sql, argument: query}
      policy_timeout_s: 1.0
      workers: 2                           # threads that run kernel checks, off the event loop
      check_processes: null                # worker processes judging responses (null: the cores available;
                                           # 1: in the gateway's own process)
      check_deadline_s: 30                 # a worker that has not answered by then is killed, the response withheld

>>> config = GovernanceConfig.from_mapping({"recorder_dir": "/tmp/x", "policies": [{"sql": {"deny": ["DROP"]}}]})
>>> [type(p).__name__ for p in config.build_policies()], config.reward.critical_penalty
(['SQLPolicy'], -100.0)
>>> try:
...     GovernanceConfig.from_mapping({"recorder_dir": "/tmp/x", "policies": [{"sqll": {}}]})
... except GovernanceConfigError as error:
...     print(error)  # doctest: +NORMALIZE_WHITESPACE
governance.policies[0]: unknown policy 'sqll'; use one of ['cost_control', 'python', 'sql', 'tool_allow_list',
'tool_rules']
"""

from __future__ import annotations

import importlib
import importlib.util
import ipaddress
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

from agentlightning.contrib.kernel.agentos import (
    CostControlPolicy,
    GovernanceConfigError,
    GovernanceKernel,
    Policy,
    RewardConfig,
    SQLPolicy,
    ToolAllowListPolicy,
    ToolRulesPolicy,
)

from .govern import TextAction

__all__ = [
    "CONFIG_ENV",
    "KEY_ENV",
    "MIN_KEY_LENGTH",
    "GovernanceConfig",
    "POLICY_BUILDERS",
    "PYTHON_POLICY",
    "gateway_key",
    "is_loopback",
]

#: The environment variable naming the gateway's configuration file, read by the hooks.
CONFIG_ENV = "AGENTOS_GATEWAY_CONFIG"
#: The environment variable the packaged agentos_gateway.yaml reads its key from (1.0 agents get AGL_KEY too).
KEY_ENV = "AGL_KEY"
#: The shortest key the gateway accepts (``secrets.token_urlsafe(32)`` is 43 characters).
MIN_KEY_LENGTH = 32


def is_loopback(host: str) -> bool:
    """Whether ``host`` (the address the gateway listens on) reaches this machine only.

    >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "10.0.0.5", "gateway.internal")]
    [True, True, True, False, False, False, False]
    """
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name may resolve anywhere


def gateway_key(server_config: Mapping[str, Any]) -> str:
    """The gateway's key from 1.0's server keys (``host``, ``key``), checked before anything listens.

    A key, when set, is required on every route but ``/healthz``, whatever the address. Without one
    the gateway serves loopback only: off loopback it refuses to start, saying how to set one.

    >>> gateway_key({"host": "127.0.0.1", "key": ""})
    ''
    >>> try:
    ...     gateway_key({"host": "0.0.0.0", "key": ""})
    ... except GovernanceConfigError as error:
    ...     print(str(error)[:93])
    the gateway would listen on '0.0.0.0', which is not a loopback address, without a key: anyone
    """
    host = str(server_config.get("host") or "")
    key = server_config.get("key")
    key = "" if key is None else str(key)
    if key and len(key) < MIN_KEY_LENGTH:
        raise GovernanceConfigError(
            f"the gateway's key is {len(key)} characters; use at least {MIN_KEY_LENGTH}, for example "
            f"`export {KEY_ENV}=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')`"
        )
    if not key and not is_loopback(host):
        raise GovernanceConfigError(
            f"the gateway would listen on {host!r}, which is not a loopback address, without a key: anyone who "
            "can reach it could create rollouts, register model servers and post rewards. Set a key of at least "
            f"{MIN_KEY_LENGTH} characters: `export {KEY_ENV}=$(python -c 'import secrets; "
            'print(secrets.token_urlsafe(32))\')` (the packaged file reads `key: ${oc.env:AGL_KEY,""}`; '
            "in a file of your own write the same line, or pass 'key=${oc.env:AGL_KEY}' on the command line), "
            "and give the same key to agl-controller (agl_server.key) and the trainer. Or listen on loopback "
            "only: host=127.0.0.1."
        )
    return key


POLICY_BUILDERS: Dict[str, Callable[..., Policy]] = {
    "sql": SQLPolicy,
    "tool_allow_list": ToolAllowListPolicy,
    "cost_control": CostControlPolicy,
    "tool_rules": ToolRulesPolicy,
}
#: The policy entry that builds a policy of the user's own: ``{python: "module:factory"}`` (or a
#: file, ``"./my_policies.py:factory"``), or ``{python: {factory: ..., options: {...}}}``.
PYTHON_POLICY = "python"

_KEYS = {
    "recorder_dir",
    "policies",
    "penalties",
    "text_action",
    "policy_timeout_s",
    "workers",
    "agent_id",
    "check_processes",
    "check_deadline_s",
}

#: Numbers the kernels this process builds, so each gets its own recorder file.
_KERNELS_IN_THIS_PROCESS = itertools.count(1)


def _text_action(text: Any) -> TextAction:
    """``governance.text_action``: ``{tool, argument}``, and at most one of ``fenced: true`` or ``prefix: <text>``."""
    shape = (
        "null or {tool: <name>, argument: <name>} with fenced: true or prefix: <text> if the harness runs only those"
    )
    if not isinstance(text, Mapping) or not {"tool", "argument"} <= set(text) <= {
        "tool",
        "argument",
        "fenced",
        "prefix",
    }:
        raise GovernanceConfigError(f"governance.text_action must be {shape}, got {text!r}")
    fenced, prefix = text.get("fenced", False), text.get("prefix")
    if not isinstance(fenced, bool) or (prefix is not None and (not isinstance(prefix, str) or not prefix.strip())):
        raise GovernanceConfigError(
            f"governance.text_action: fenced must be true or false, prefix a non-empty text; got {text!r}"
        )
    if fenced and prefix is not None:
        raise GovernanceConfigError(f"governance.text_action: fenced or prefix, not both; got {text!r}")
    return TextAction(
        str(text["tool"]), str(text["argument"]), fenced=fenced, prefix=prefix.strip() if prefix else None
    )


@dataclass
class GovernanceConfig:
    """The validated ``governance`` section (see the module docstring)."""

    recorder_dir: Path
    policies: List[Mapping[str, Any]]
    reward: RewardConfig = field(default_factory=RewardConfig)
    text_action: Optional[TextAction] = None
    policy_timeout_s: float = 1.0
    workers: int = 2
    agent_id: str = "agentos-gateway"
    check_processes: Optional[int] = None  #: None: one per core available to the gateway (``os.sched_getaffinity``)
    check_deadline_s: float = 30.0

    @classmethod
    def from_mapping(cls, section: Any) -> "GovernanceConfig":
        if not isinstance(section, Mapping):
            raise GovernanceConfigError(
                "the gateway needs a 'governance' section (a mapping with recorder_dir and policies), "
                f"got {type(section).__name__}"
            )
        unknown = sorted(set(section) - _KEYS)
        if unknown:
            raise GovernanceConfigError(f"governance: unknown key(s) {unknown}; known: {sorted(_KEYS)}")
        if not section.get("recorder_dir"):
            raise GovernanceConfigError(
                "governance.recorder_dir is required: every decision is written to a FlightRecorder file there"
            )
        policies = section.get("policies")
        if not isinstance(policies, list) or not policies:
            raise GovernanceConfigError(
                "governance.policies must be a non-empty list, e.g. [{sql: {deny: [DROP, DELETE]}}]; "
                "a governed gateway without a policy would allow everything"
            )
        penalties = section.get("penalties") or {}
        if not isinstance(penalties, Mapping):
            raise GovernanceConfigError(
                f"governance.penalties must be a mapping of RewardConfig fields, got {penalties!r}"
            )
        bad = sorted(set(penalties) - set(RewardConfig.field_names()))
        if bad:
            raise GovernanceConfigError(
                f"governance.penalties: unknown field(s) {bad}; known: {RewardConfig.field_names()}"
            )
        text = section.get("text_action")
        if text is not None:
            text = _text_action(text)
        workers = section.get("workers", 2)
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise GovernanceConfigError(f"governance.workers must be an integer >= 1, got {workers!r}")
        processes = section.get("check_processes")
        if processes is not None and (isinstance(processes, bool) or not isinstance(processes, int) or processes < 1):
            raise GovernanceConfigError(
                f"governance.check_processes must be an integer >= 1 (1: checks in the gateway's own process) "
                f"or null (one per available core), got {processes!r}"
            )
        deadline = section.get("check_deadline_s", 30.0)
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0:
            raise GovernanceConfigError(f"governance.check_deadline_s must be seconds > 0, got {deadline!r}")
        config = cls(
            recorder_dir=Path(os.path.expanduser(str(section["recorder_dir"]))),
            policies=[dict(p) if isinstance(p, Mapping) else p for p in policies],
            reward=RewardConfig(**dict(penalties)),
            text_action=text,
            policy_timeout_s=float(section.get("policy_timeout_s", 1.0)),
            workers=workers,
            agent_id=str(section.get("agent_id", "agentos-gateway")),
            check_processes=processes,
            check_deadline_s=float(deadline),
        )
        config.build_policies()  # a bad policy entry fails here, at start-up, with its position
        return config

    @classmethod
    def from_file(cls, path: Any) -> "GovernanceConfig":
        """The ``governance`` section of a gateway configuration file (YAML, as the gateway reads it)."""
        from omegaconf import OmegaConf

        loaded = OmegaConf.to_container(OmegaConf.load(str(path)), resolve=True)
        if not isinstance(loaded, Mapping) or "governance" not in loaded:
            raise GovernanceConfigError(f"{path} has no 'governance' section")
        return cls.from_mapping(loaded["governance"])

    def build_policies(self) -> List[Policy]:
        built: List[Policy] = []
        for position, entry in enumerate(self.policies):
            where = f"governance.policies[{position}]"
            if not isinstance(entry, Mapping) or len(entry) != 1:
                raise GovernanceConfigError(f"{where}: each entry is one policy, e.g. {{sql: {{deny: [DROP]}}}}")
            ((name, options),) = entry.items()
            if name == PYTHON_POLICY:
                built.extend(_python_policies(options, f"{where}.{name}"))
                continue
            if name not in POLICY_BUILDERS:
                known = sorted([*POLICY_BUILDERS, PYTHON_POLICY])
                raise GovernanceConfigError(f"{where}: unknown policy {name!r}; use one of {known}")
            options = options or {}
            if not isinstance(options, Mapping):
                raise GovernanceConfigError(f"{where}.{name}: options must be a mapping, got {options!r}")
            try:
                built.append(POLICY_BUILDERS[name](**dict(options)))
            except (TypeError, GovernanceConfigError) as error:
                raise GovernanceConfigError(f"{where}.{name}: {error}") from None
        return built

    def build_kernel(self) -> GovernanceKernel:
        """A kernel with the configured policies, the penalty table of ``governance.penalties`` (the one the
        hooks' reward prices by) and a FlightRecorder file of its own in ``recorder_dir``
        (``gateway-<pid>-<n>.db``: a recorder file has one writer, so two gateways in one process get two files)."""
        self.recorder_dir.mkdir(parents=True, exist_ok=True)
        recorder = self.recorder_dir / f"gateway-{os.getpid()}-{next(_KERNELS_IN_THIS_PROCESS)}.db"
        return GovernanceKernel(
            self.build_policies(),
            recorder=recorder,
            policy_timeout_s=self.policy_timeout_s,
            penalties=self.reward.severity_penalties,
        )


def _python_policies(spec: Any, where: str) -> List[Policy]:
    """The policies a user's factory builds: ``spec`` is ``"module:factory"`` (a module on the
    Python path, or a ``.py`` file) or ``{factory: "module:factory", options: {...}}``; the factory
    (a function or a ``Policy`` class) is called with the options and returns a ``Policy`` or a
    list of them. Anything else is a configuration error naming the entry."""
    options: Any = {}
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"factory", "options"})
        if unknown or "factory" not in spec:
            raise GovernanceConfigError(
                f"{where}: give factory: 'module:function' and, if it takes any, options: {{...}}"
                + (f" (unknown key(s) {unknown})" if unknown else "")
            )
        spec, options = spec["factory"], spec.get("options") or {}
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise GovernanceConfigError(f"{where}: expected 'module:factory' or 'path/to/file.py:factory', got {spec!r}")
    if not isinstance(options, Mapping):
        raise GovernanceConfigError(f"{where}.options must be a mapping of the factory's arguments, got {options!r}")
    module_name, attribute = spec.split(":")
    try:
        module = _load_module(module_name)
    except Exception as error:  # noqa: BLE001 - any failure to load is the configuration's error, named
        raise GovernanceConfigError(f"{where}: cannot load {module_name!r}: {type(error).__name__}: {error}") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise GovernanceConfigError(f"{where}: {module_name!r} has no callable {attribute!r}")
    try:
        made = factory(**dict(options))
    except (TypeError, GovernanceConfigError) as error:
        raise GovernanceConfigError(f"{where}: {spec}(**options) failed: {error}") from None
    policies = list(made) if isinstance(made, (list, tuple)) else [made]
    wrong = [type(p).__name__ for p in policies if not isinstance(p, Policy)]
    if wrong or not policies:
        raise GovernanceConfigError(
            f"{where}: {spec} returned {wrong or 'nothing'}, not a Policy (subclass "
            "agentlightning.contrib.kernel.agentos.Policy, or return a list of them)"
        )
    return policies


def _load_module(name: str) -> Any:
    """A module by dotted name, or a ``.py`` file by path (relative to the working directory)."""
    if not name.endswith(".py"):
        return importlib.import_module(name)
    path = Path(os.path.expanduser(name)).resolve()
    spec = importlib.util.spec_from_file_location(f"agentos_gateway_policies_{path.stem}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"no Python file at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
