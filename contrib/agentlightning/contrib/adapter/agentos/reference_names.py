"""The reference tutorial's spelling for the adapter room: the only second name this room keeps.

The "RL Training Governance" tutorial of the agentmesh-lightning package (the API our users already
know) writes ``FlightRecorderEmitter(recorder)``. That spelling works from this room's top as a
second name of :class:`.FlightRecorderAdapter`. No other name in the package has an alias:
version 0.1.0 was never released, so there is no former name to keep.

The tutorial's runner spellings (``GovernedRunner``, ``PolicyViolationType``) are in the runner
room's ``reference_names`` (a room imports the kernel, never another room).
"""

from .adapter import FlightRecorderAdapter

__all__ = ["FlightRecorderEmitter"]

FlightRecorderEmitter = FlightRecorderAdapter
