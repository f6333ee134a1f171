"""Load and faults harness: governed runner processes against one real ``agl store`` server, on loopback.

Used by ``tests/test_load_and_faults.py`` (small sizes, every test run) and by
``tests/benchmarks/bench_load_and_faults.py`` (full size, on demand). Linux only: a
``multiprocessing`` forkserver, ``signal.sigtimedwait`` and glibc's ``mallinfo2``.

A run, top to bottom (everything on 127.0.0.1, every wait with a deadline):

1. ``StoreServer``: ``agl store`` (agentlightning 0.3's in-memory store server) as a subprocess.
2. ``run_load``: runner processes (``WorkerPool``), each an ``AgentOSRunner`` whose kernel is
   ``GovernanceKernel([SQLPolicy(deny=DENY)], recorder=audit-<worker>.db)``, drain the tasks the
   driver enqueued (``make_tasks``: the ground truth); every figure is checked against the tasks:
   spans per rollout, ``governance_stats``, FlightRecorder files, databases, memory samples.
3. The faults, each with its own runner processes on the same server: ``fault_sigkill`` (a runner
   SIGKILLed mid-rollout), ``fault_policies`` (a policy that hangs, one that raises: fail closed),
   ``fault_store_restart`` (the server restarted mid-run, the FlightRecorder files re-imported).

Modules, one idea each: ``world`` (tasks and databases), ``store_server``, ``worker`` (the body
of a runner process), ``memory`` (sampling and its summary), ``pool`` (forking and signalling
runner processes), ``store_calls`` (what the driver asks the store), ``checks`` (comparisons with
the ground truth), ``scenarios`` (the load and the faults).
"""

from .pool import WorkerPool, warm_up_forkserver
from .scenarios import fault_policies, fault_sigkill, fault_store_restart, run_load
from .store_server import StoreServer
from .world import DENY, N_ORDERS, N_USERS, VIOLATING_SQL, make_tasks

__all__ = [
    "DENY",
    "N_ORDERS",
    "N_USERS",
    "VIOLATING_SQL",
    "StoreServer",
    "WorkerPool",
    "fault_policies",
    "fault_sigkill",
    "fault_store_restart",
    "make_tasks",
    "run_load",
    "warm_up_forkserver",
]
