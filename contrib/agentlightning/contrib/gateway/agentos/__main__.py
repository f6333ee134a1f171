"""``agentos-gateway``: Agent Lightning 1.0's API gateway, governed. One command, 1.0's own configuration.

The configuration is 1.0's ``server.yaml`` (host, port, key, default_proxy) composed with a
``governance`` section (see :mod:`.config`); override either with Hydra's syntax, as for
``agl-server``::

    agentos-gateway port=8080 governance.recorder_dir=./audit
    agentos-gateway --config-dir ./my_configs --config-name my_gateway

The packaged file listens on 127.0.0.1 and reads its key from ``AGL_KEY`` (empty: no key). Off
loopback a key is required; without one the command exits, saying how to set it::

    export AGL_KEY=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')
    agentos-gateway host=0.0.0.0

The trainer's hooks read the same file: point ``AGENTOS_GATEWAY_CONFIG`` at it (see :mod:`.hooks`).
"""

from __future__ import annotations

import sys

import hydra
import uvicorn
from omegaconf import DictConfig

from agentlightning.contrib.kernel.agentos import GovernanceConfigError

from .app import create_governed_app


@hydra.main(version_base=None, config_path="configs", config_name="agentos_gateway")
def main(config: DictConfig) -> None:
    try:
        application = create_governed_app(config)
    except GovernanceConfigError as error:
        sys.exit(f"agentos-gateway: {error}")
    try:
        uvicorn.run(application, host=str(config.host), port=int(config.port), workers=1, timeout_keep_alive=120)
    finally:
        application.close()


if __name__ == "__main__":
    main()
