"""A policy that fails after judging, for the kernel's fail-closed paths (kept out of conftest.py,
which imports nothing heavy)."""

from agentlightning.contrib.kernel.agentos import Policy


class CommitFails(Policy):
    """Finds nothing wrong, then cannot commit: ``on_allowed`` raises ``failure`` (set it on an
    instance for another failure)."""

    runs_inline = True
    failure: Exception = RuntimeError("budget store unavailable")

    def evaluate(self, action, context):
        return []

    def on_allowed(self, action, context):
        raise self.failure
