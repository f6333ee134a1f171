"""Agent Lightning 1.0's own API gateway with the governance layer in front of its proxy.

``create_governed_app(config)`` takes one configuration: 1.0's server keys (``host``, ``port``,
``key``, ``default_proxy``) plus a ``governance`` section, and returns an ASGI app to serve with
uvicorn, as 1.0's ``agl-server`` serves ``create_app``. It refuses (``GovernanceConfigError``) a
configuration that would listen off loopback without a key, or with a short one, and warns when
the audit trail it writes is unkeyed (no ``AGENTOS_AUDIT_KEY`` or ``AGENTOS_AUDIT_KEY_FILE``).
"""

from __future__ import annotations

from typing import Any, Mapping

import structlog
from omegaconf import DictConfig, OmegaConf

from agentlightning.server.app import create_app

from agentlightning.contrib.kernel.agentos.audit.seal import UNKEYED_WARNING

from .check_pool import CheckPool, available_cores
from .config import GovernanceConfig, gateway_key
from .layer import GovernanceLayer

__all__ = ["create_governed_app", "split_config"]

log = structlog.get_logger()


def split_config(config: Mapping[str, Any] | DictConfig) -> tuple[dict, GovernanceConfig]:
    """1.0's server configuration and the validated ``governance`` section of one configuration."""
    raw = OmegaConf.to_container(config, resolve=True) if OmegaConf.is_config(config) else dict(config)
    if not isinstance(raw, dict):
        raise TypeError(f"the gateway configuration must be a mapping, got {type(raw).__name__}")
    governance = GovernanceConfig.from_mapping(raw.pop("governance", None))
    return raw, governance


def create_governed_app(config: Mapping[str, Any] | DictConfig) -> GovernanceLayer:
    """``agentlightning.server.app.create_app`` of the server keys, behind a :class:`GovernanceLayer`
    built from the ``governance`` section (policies, FlightRecorder in ``recorder_dir``).

    With more than one ``check_processes`` (by default, one per core available), responses are judged
    in a :class:`~.check_pool.CheckPool` of worker processes, each with its own kernel and trail file;
    the gateway's own kernel (and file) records the requests it refuses and the checks that failed."""
    server_config, governance = split_config(config)
    key = gateway_key(server_config)
    kernel = governance.build_kernel()
    if kernel.audit is not None and kernel.audit.key is None:
        recorder = str(kernel.audit.recorder.db_path)
        log.warning(f"the gateway's audit trail is unkeyed: {UNKEYED_WARNING}", recorder=recorder)
    app = create_app(server_config)
    processes = governance.check_processes or available_cores()
    checks = CheckPool(governance, processes, deadline_s=governance.check_deadline_s) if processes > 1 else None
    return GovernanceLayer(
        app,
        kernel,
        text_action=governance.text_action,
        agent_id=governance.agent_id,
        workers=max(governance.workers, processes * checks.per_worker if checks else 1),
        key=key,
        checks=checks,
    )
