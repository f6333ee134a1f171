"""The packaged configuration of ``agentos-gateway`` (a package, so Hydra finds it by name)."""
