"""The kernel's Agent Lightning 0.3 glue: the one sub-room of the kernel package that needs agentlightning 0.3.

* :mod:`.spans`: the check and violation spans of a ``Decision`` (names, attributes, 0.3 ``Span``
  objects, emitted into the active trace or added to a ``LightningStore``);
* :mod:`.reward_span`: the reward span of a ``GovernedReward``;
* :mod:`.stats`: governance totals read back from a ``LightningStore`` (``governance_stats``).

Only the 0.3 rooms (runner, reward, env, adapter) and the 0.3 recipes import these modules; the
kernel core never does, so it imports without either Agent Lightning line. This ``__init__`` only
checks that the 0.3 line is there (and says how to install it when it is not): import the module
you need (``from agentlightning.contrib.kernel.agentos.agl03.spans import add_spans``).
"""

try:
    import agentlightning.store  # noqa: F401  (every module here reads or writes a 0.3 LightningStore)
except ImportError as error:
    raise ImportError(
        f"{__name__} needs Agent Lightning 0.3 (its LightningStore): install the 0.3 line with "
        f"python -m pip install '.[agl03]' from the clone (or the wheel's [agl03] extra); under Agent Lightning "
        f"1.0 use the gateway room instead. ({error})"
    ) from error
