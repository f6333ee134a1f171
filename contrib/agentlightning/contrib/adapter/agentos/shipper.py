"""The trail is the outbox: audit records reach the store by themselves, after any outage.

Every decision is committed to its runner process's FlightRecorder file before its action runs;
the runner's spans reach the store only if the store answers at that moment (a partitioned host's
violation spans are lost). :class:`TrailShipper` sends a file's committed records the store has
not acknowledged, with :meth:`FlightRecorderAdapter.emit_to_store` (verified first; span ids from
the records' chain hashes, so sending again never duplicates), again and again until they are in:

* in the runner process, while it runs: ``runner.init(agent, hooks=[ShipTrail()])`` ships the
  runner's own file from a thread every ``interval`` seconds, retrying after an outage with no
  operator action;
* for files left behind (a killed host's, a stopped run's):
  ``python -m agentlightning.contrib.adapter.agentos ship --store-url URL AUDIT_DIR``.

:func:`store_blocked_decisions` and :func:`trail_blocked_decisions` say whether the store holds
every blocked decision of the trails: the decision ids of the runner's check spans and the
shipped audit spans against those of the files' blocked records.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Set, Union

from agentlightning.store.base import LightningStore
from agentlightning.types import Hook

from agentlightning.contrib.kernel.agentos.agl03.store_errors import unreachable_store
from agentlightning.contrib.kernel.agentos.audit.reader import RecorderReader
from agentlightning.contrib.kernel.agentos.audit.signing import KeyringError, load_keyring
from agentlightning.contrib.kernel.agentos.semconv import (
    AGENT_OS_DECISION_ID,
    AGENT_OS_POLICY_RESULT,
    AGENTOS_DECISION_ID,
    AGENTOS_KIND,
    AGENTOS_VERDICT,
    KIND_AUDIT,
    KIND_CHECK,
)

from .adapter import FlightRecorderAdapter

__all__ = [
    "ShipTrail",
    "TrailShipper",
    "main",
    "ship_files",
    "store_blocked_decisions",
    "trail_blocked_decisions",
]

logger = logging.getLogger(__name__)

PathLike = Union[str, Path]


async def ship_files(store: LightningStore, paths: Iterable[PathLike], **adapter_options: Any) -> Dict[str, int]:
    """Send every file's records the store does not hold yet; returns the spans added per file
    (0 for a file already in). Each file is verified first and refused if it fails."""
    added = {}
    for path in paths:
        with FlightRecorderAdapter(path, **adapter_options) as adapter:
            added[str(path)] = await adapter.emit_to_store(store)
    return added


class TrailShipper:
    """Ships FlightRecorder files to a store from a thread of its own, until stopped.

    ``paths`` is the files to ship, or a callable returning them (read at each round, so a file
    that appears later is shipped too). Each file keeps one adapter, whose cursor remembers what
    this store acknowledged; a round that fails (the store unreachable) is retried ``interval``
    seconds later from the same place. :meth:`wake` starts a round at once (``ShipTrail`` calls
    it after each rollout); :meth:`stop` ships one last round, then ends the thread.
    """

    def __init__(self, store: LightningStore, paths: Any, *, interval: float = 5.0, **adapter_options: Any) -> None:
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        self.store = store
        self._paths = paths if callable(paths) else (lambda: list(paths))
        self.interval = float(interval)
        self.adapter_options = adapter_options
        self._adapters: Dict[str, FlightRecorderAdapter] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        self.shipped = 0
        self.rounds = 0
        self.failures = 0
        self.last_error: Optional[BaseException] = None

    def start(self) -> "TrailShipper":
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentos-trail-shipper", daemon=True)
                self._thread.start()
        return self

    def wake(self) -> None:
        """Ship now (the next round starts at once)."""
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Ship one last round and end the thread."""
        with self._lock:
            thread, self._thread = self._thread, None
        self._stopping.set()
        self._wake.set()
        if thread is not None:
            thread.join(timeout=timeout)
        for adapter in self._adapters.values():
            adapter.close()
        self._adapters.clear()

    async def ship_once(self) -> int:
        """One round: every file's records the store has not acknowledged; the spans added."""
        added = 0
        for path in self._paths():
            key = str(path)
            if key not in self._adapters:
                if not Path(key).is_file():
                    continue
                self._adapters[key] = FlightRecorderAdapter(key, **self.adapter_options)
            added += await self._adapters[key].emit_to_store(self.store)
        return added

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            while True:
                stopping = self._stopping.is_set()
                self._wake.clear()
                self._round(loop)
                if stopping:
                    return
                self._wake.wait(timeout=self.interval)
        finally:
            loop.close()

    def _round(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            added = loop.run_until_complete(asyncio.wait_for(self.ship_once(), timeout=max(self.interval, 30.0)))
        except Exception as err:
            self.failures += 1
            if self.last_error is None:
                logger.warning(
                    "trail shipper: the store did not take the audit records (%s: %s); retrying every %.1f s, "
                    "nothing is lost (they stay in the files)",
                    type(err).__name__,
                    err,
                    self.interval,
                )
            self.last_error = err
            return
        if self.last_error is not None:
            logger.warning("trail shipper: the store takes the audit records again")
            self.last_error = None
        self.rounds += 1
        self.shipped += added


class ShipTrail(Hook):
    """An agentlightning hook that ships the runner's own FlightRecorder file to the runner's store:
    ``runner.init(agent, hooks=[ShipTrail()])``. The first rollout's end starts a :class:`TrailShipper`
    on the file ``runner.kernel.audit`` writes, which ships every ``interval`` seconds (each round
    verifies the whole file first, so rounds are spaced rather than one per rollout) and retries
    after an outage. ``stop()`` ships a last round."""

    def __init__(self, *, interval: float = 5.0, **adapter_options: Any) -> None:
        super().__init__()
        self.interval = interval
        self.adapter_options = adapter_options
        self.shipper: Optional[TrailShipper] = None

    async def on_rollout_end(self, *, agent: Any, runner: Any, rollout: Any, spans: Any) -> None:
        if self.shipper is None:
            audit = getattr(getattr(runner, "kernel", None), "audit", None)
            if audit is None:
                logger.warning(
                    "ShipTrail: the runner's kernel writes no audit file (pass audit_dir=...): nothing to ship"
                )
                return
            path = Path(audit.path)
            self.shipper = TrailShipper(
                runner.get_store(), [path], interval=self.interval, **self.adapter_options
            ).start()

    def stop(self) -> None:
        if self.shipper is not None:
            self.shipper.stop()


def trail_blocked_decisions(paths: Iterable[PathLike]) -> Set[str]:
    """The decision ids of the blocked, final records of the files."""
    blocked: Set[str] = set()
    for path in paths:
        reader = RecorderReader(path)
        try:
            for record in reader.records():
                envelope = record.envelope or {}
                if record.blocked and not record.pending and envelope.get("decision_id"):
                    blocked.add(envelope["decision_id"])
        finally:
            reader.close()
    return blocked


async def store_blocked_decisions(store: LightningStore) -> Set[str]:
    """The decision ids of blocked decisions the store holds, as the runner's check spans or as
    shipped audit spans (one decision counted once, wherever it came from)."""
    blocked: Set[str] = set()
    for rollout in await store.query_rollouts():
        for span in await store.query_spans(rollout.rollout_id):
            attributes = span.attributes or {}
            kind = attributes.get(AGENTOS_KIND)
            if kind == KIND_CHECK and attributes.get(AGENTOS_VERDICT) == "blocked":
                blocked.add(str(attributes.get(AGENTOS_DECISION_ID)))
            elif kind == KIND_AUDIT and attributes.get(AGENT_OS_POLICY_RESULT) == "blocked":
                blocked.add(str(attributes.get(AGENT_OS_DECISION_ID)))
    return blocked


def _files(paths: Iterable[PathLike]) -> list:
    """The FlightRecorder files named: a file as it is, a directory's ``*.db`` files."""
    files = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.glob("*.db") if p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"{str(path)!r} is neither a FlightRecorder file nor a directory of them")
    return files


async def _ship_command(url: str, paths: Iterable[PathLike], keyring: Optional[str] = None) -> int:
    from agentlightning.store.client_server import LightningStoreClient

    files = _files(paths)
    keyring = load_keyring(keyring)  # read once, and a bad keyring is named before the store is contacted
    client = LightningStoreClient(url)
    failed = 0
    try:
        for path in files:
            try:
                added = await ship_files(client, [path], keyring=keyring)
            except Exception as err:  # noqa: BLE001 - one file's problem does not stop the others
                failed += 1
                print(f"{path}: not shipped: {type(err).__name__}: {err}", file=sys.stderr)
                continue
            print(f"{path}: {added[str(path)]} span(s) added")
        trail = trail_blocked_decisions(files)
        stored = await store_blocked_decisions(client)
    finally:
        await client.close()
    missing = len(trail - stored)
    print(
        f"blocked decisions: {len(trail)} in the files, {len(trail & stored)} of them in the store, {missing} missing"
    )
    return 1 if failed or missing else 0


def main(argv: Optional[list] = None) -> int:
    """``python -m agentlightning.contrib.adapter.agentos ship --store-url URL PATH...``."""
    parser = argparse.ArgumentParser(
        prog="python -m agentlightning.contrib.adapter.agentos",
        description="Send audit records to an agl store (each record once, whatever was sent before).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    ship = commands.add_parser(
        "ship", help="send the records of FlightRecorder files (e.g. a stopped host's audit_dir) the store lacks"
    )
    ship.add_argument("--store-url", required=True, help="URL of the agl store, e.g. http://127.0.0.1:4747")
    ship.add_argument(
        "--keyring",
        default=None,
        help="the hosts' public keys: a file whose host-signed head fails is not shipped (default: "
        "$AGENTOS_AUDIT_KEYRING, or none)",
    )
    ship.add_argument("paths", nargs="+", help="FlightRecorder files, or directories of them (*.db)")
    args = parser.parse_args(argv)
    try:
        return asyncio.run(_ship_command(args.store_url, args.paths, args.keyring))
    except (FileNotFoundError, KeyringError) as err:
        print(str(err), file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - one clear line instead of a client traceback
        print(
            unreachable_store("ship to", args.store_url, err, "Nothing was lost: the records stay in the files."),
            file=sys.stderr,
        )
        return 2
