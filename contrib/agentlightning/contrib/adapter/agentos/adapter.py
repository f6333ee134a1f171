"""``FlightRecorderAdapter``: an Agent OS FlightRecorder into LightningStore spans, files and streams.

>>> import asyncio, os, tempfile
>>> from agentlightning.store.memory import InMemoryLightningStore
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> path = os.path.join(tempfile.mkdtemp(), "audit.db")
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
>>> for q in ["SELECT 1", "DROP TABLE users"]:
...     _ = kernel.check("database_query", {"query": q})
>>> kernel.close()
>>> adapter = FlightRecorderAdapter(path)
>>> store = InMemoryLightningStore()
>>> asyncio.run(adapter.emit_to_store(store)), asyncio.run(adapter.emit_to_store(store))
(2, 0)
>>> adapter.get_violation_summary()["policies_violated"]
{'SQLPolicy': 1}
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Dict, List, Literal, Optional, Set, Tuple, Union

from agentlightning.store.base import LightningStore
from agentlightning.types import Span

from agentlightning.contrib.kernel.agentos.audit import warn_if_default_recorder_path
from agentlightning.contrib.kernel.agentos.audit.reader import (
    AuditError,
    AuditRecord,
    RecorderFileError,
    RecorderLike,
    RecorderReader,
)
from agentlightning.contrib.kernel.agentos.audit.seal import AuditKey, load_audit_key, verify_file
from agentlightning.contrib.kernel.agentos.audit.signing import Keyring, load_keyring
from agentlightning.contrib.kernel.agentos.must_await import MustAwait
from agentlightning.contrib.kernel.agentos.semconv import AGENT_OS_UNVERIFIED

from .export import ExportError, write_export
from .spans import ENTRY_POLICY_CHECK, ENTRY_SIGNAL, ENTRY_TOOL_CALL, entry_type, record_span_id, record_to_span

__all__ = [
    "AUDIT_ROLLOUT_METADATA_KEY",
    "MustAwait",
    "FlightRecorderAdapter",
    "adapters_for_directory",
    "create_emitter",
]

logger = logging.getLogger(__name__)

#: Metadata key marking the rollout that holds records made outside any rollout.
AUDIT_ROLLOUT_METADATA_KEY = "agentos.audit_rollout"

#: The attempt statuses agentlightning's store changes when a span arrives (a span is a heartbeat:
#: ``preparing`` and ``unresponsive`` become ``running``). Records of such an attempt go to the audit
#: rollout, so that an import never revives an attempt the store gave up on (its rollout would never
#: be retried) nor starts one nobody runs; the spans keep the rollout and attempt they were made in
#: as ``agent_os.rollout_id``/``agent_os.attempt_id``.
STATUSES_A_SPAN_REWRITES = ("preparing", "unresponsive")
Placement = Literal["rollout", "audit"]


@dataclass
class _Cursor:
    """Which records were exported: every id <= ``low_water``, plus the ids in ``done``.

    A record still ``pending`` on disk (its outcome not yet flushed) is not exported and holds
    ``low_water`` below it, so it is picked up once its final state is on disk.
    """

    low_water: int = 0
    done: Set[int] = field(default_factory=set)

    def scan(
        self, reader: RecorderReader, upto_id: Optional[int] = None
    ) -> Tuple[List[AuditRecord], Callable[[], None]]:
        records: List[AuditRecord] = []
        first_pending: Optional[int] = None
        last_seen = self.low_water
        for record in reader.records(self.low_water, upto_id):
            last_seen = record.record_id
            if record.record_id in self.done:
                continue
            if record.pending:
                if first_pending is None:
                    first_pending = record.record_id
                continue
            records.append(record)

        def commit() -> None:
            self.done.update(r.record_id for r in records)
            self.low_water = (first_pending - 1) if first_pending is not None else max(last_seen, self.low_water)
            self.done = {i for i in self.done if i > self.low_water}

        return records, commit


class FlightRecorderAdapter:
    """Turns the records of one Agent OS ``FlightRecorder`` into agentlightning ``Span`` objects.

    Args:
        flight_recorder: an open ``agent_os.FlightRecorder`` (flushed before every read, so
            batched records are included) or the path of an existing FlightRecorder file, e.g. a
            runner's ``audit_dir/worker-0.db``; the file is only ever read.
        include_policy_checks / include_signals / include_tool_calls: which entry types become
            spans (see :mod:`.spans`); ``include_signals=False`` also drops signal attributes.
        trace_id_prefix: spans get trace id ``f"{prefix}-{agent_id}"``; it also names the audit
            rollout (one per prefix per store).
        placement: ``"rollout"`` (default) puts a record's span into the rollout and attempt it
            was made in, when the store has them, else into the audit rollout; ``"audit"`` puts
            every span into the audit rollout and leaves training rollouts untouched.
        strict: unknown columns or envelope fields are errors (``False``: kept as
            ``agent_os.extra.*`` attributes).
        readable_names: span names carry a readable summary after the entry type
            (``agent_os.policy_check: blocked by SQLPolicy (critical)``), because the dashboard's
            traces table shows names, not attribute values; ``False`` gives the bare
            ``agent_os.policy_check`` of the reference API.
        key: the audit key the file was sealed with (default: ``AGENTOS_AUDIT_KEY`` /
            ``AGENTOS_AUDIT_KEY_FILE``, or none).
        keyring: the hosts' public keys the file's host-signed head is checked with (a
            ``Keyring`` or its file; default: ``AGENTOS_AUDIT_KEYRING``, or none). With one, a file
            whose head is not signed by a key the keyring registers to its host fails.

    :meth:`emit_to_store` and :meth:`export_to_file` verify the file first (every hash, link,
    seal and the signed head; :meth:`verify_integrity`) and refuse a file that fails, or that is
    not sealed although a key is set, unless called with ``force=True``: then every span carries
    ``agent_os.unverified`` with the reason. They import the records up to the last one verified.
    ``get_spans``/``get_new_spans``/``stream`` are a live view and do not verify.

    Every span has ``agentos.kind = "audit"``: the runner's violation spans (``agentos.kind =
    "violation"``) stay the only ones ``governance_stats`` counts.
    """

    def __init__(
        self,
        flight_recorder: RecorderLike,
        *,
        include_policy_checks: bool = True,
        include_signals: bool = True,
        include_tool_calls: bool = True,
        trace_id_prefix: str = "agentos",
        placement: Placement = "rollout",
        strict: bool = True,
        readable_names: bool = True,
        chunk_size: int = 2000,
        key: Union[AuditKey, bytes, str, None] = None,
        keyring: Union[Keyring, str, Path, None] = None,
    ) -> None:
        if not isinstance(trace_id_prefix, str) or not trace_id_prefix:
            raise ValueError(f"trace_id_prefix must be a non-empty string, got {trace_id_prefix!r}")
        if placement not in ("rollout", "audit"):
            raise ValueError(f"placement must be 'rollout' or 'audit', got {placement!r}")
        warn_if_default_recorder_path(flight_recorder)
        self.reader = RecorderReader(flight_recorder, strict=strict, chunk_size=chunk_size)
        self.flight_recorder = flight_recorder
        self.include_policy_checks = bool(include_policy_checks)
        self.include_signals = bool(include_signals)
        self.include_tool_calls = bool(include_tool_calls)
        self.trace_id_prefix = trace_id_prefix
        self.placement: Placement = placement
        self.readable_names = bool(readable_names)
        self.key = load_audit_key(key)
        self.keyring = load_keyring(keyring)
        self._lock = threading.Lock()
        self._cursor = _Cursor()
        self._store_state: "weakref.WeakKeyDictionary[Any, _StoreState]" = weakref.WeakKeyDictionary()
        self._streams: List[Tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    # ------------------------------------------------------------------ basics
    @property
    def path(self) -> Path:
        """The FlightRecorder file this adapter reads."""
        return self.reader.path

    def wants(self, record: AuditRecord) -> bool:
        """Whether ``record``'s entry type is included."""
        kind = entry_type(record)
        return (
            (kind == ENTRY_POLICY_CHECK and self.include_policy_checks)
            or (kind == ENTRY_SIGNAL and self.include_signals)
            or (kind == ENTRY_TOOL_CALL and self.include_tool_calls)
        )

    def to_span(self, record: AuditRecord, unverified: Optional[str] = None, **placement: Any) -> Span:
        """The span of one record with this adapter's options (marked when ``unverified``)."""
        span = record_to_span(
            record,
            trace_id_prefix=self.trace_id_prefix,
            include_signals=self.include_signals,
            readable_names=self.readable_names,
            **placement,
        )
        if unverified is not None:
            span.attributes[AGENT_OS_UNVERIFIED] = unverified
        return span

    def _verified(self, force: bool, doing: str) -> Tuple[Optional[int], Optional[str]]:
        """(the last record id verified, None) or, forced past a failed verification, (None, why)."""
        result = self.verify_integrity()
        problem = None if result["valid"] else result.get("error", "verification failed")
        if problem is None and self.key is not None and not result.get("sealed"):
            problem = f"the file is not sealed although an audit key is set ({result.get('warning', '')})"
        if problem is None:
            return result["last_id"], None
        if not force:
            raise AuditError(
                f"{str(self.path)!r} was not {doing}: it failed verification: {problem}. Pass force=True to go "
                f"ahead anyway; every span is then marked {AGENT_OS_UNVERIFIED!r}"
            )
        logger.warning("%s: %s although it failed verification (force=True): %s", self.path, doing, problem)
        return None, problem

    def records(self) -> List[AuditRecord]:
        """Every record on disk (pending ones included), oldest first."""
        with self._lock:
            return list(self.reader.records())

    def get_spans(self) -> List[Span]:
        """Spans of every included record whose outcome is on disk (no cursor involved)."""
        with self._lock:
            return [self.to_span(r) for r in self.reader.records() if not r.pending and self.wants(r)]

    # ------------------------------------------------------------------ incremental
    def get_new_spans(self) -> List[Span]:
        """Spans of the records added (or finalised) since the previous call; each record once.

        A batch is all-or-nothing: if a record is invalid, :class:`RecordError` is raised and the
        next call starts from the same place.
        """
        with self._lock:
            records, commit = self._cursor.scan(self.reader)
            spans = [self.to_span(r) for r in records if self.wants(r)]
            commit()
            return spans

    async def stream(
        self, *, poll_interval: float = 0.1, stop_event: Optional[asyncio.Event] = None
    ) -> AsyncIterator[Span]:
        """Yield new spans as records reach the file, until ``stop_event`` is set or :meth:`stop`
        is called; the records already on disk at that point are still yielded (nothing lost).

        Between polls it waits on the stop event (no busy loop); reads run in a worker thread.
        """
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)) or poll_interval <= 0:
            raise ValueError(f"poll_interval must be a positive number of seconds, got {poll_interval!r}")
        stop = stop_event if stop_event is not None else asyncio.Event()
        entry = (asyncio.get_running_loop(), stop)
        self._streams.append(entry)
        try:
            while True:
                stopping = stop.is_set()
                spans = await asyncio.to_thread(self.get_new_spans)
                for span in spans:
                    yield span
                if stopping:
                    return
                if not spans:
                    try:
                        await asyncio.wait_for(stop.wait(), timeout=poll_interval)
                    except asyncio.TimeoutError:
                        pass
        finally:
            self._streams.remove(entry)

    def stop(self) -> None:
        """End every running :meth:`stream` (after it drains what is on disk); thread-safe."""
        for loop, event in list(self._streams):
            loop.call_soon_threadsafe(event.set)

    # ------------------------------------------------------------------ store
    def emit_to_store(self, store: LightningStore, *, force: bool = False) -> "MustAwait":
        """Add the spans of every included, final record not yet in ``store``; returns how many
        were added (0 when called again with nothing new). A coroutine: ``await`` it (or
        ``asyncio.run(...)`` it); dropped without awaiting, it logs an error (:class:`MustAwait`).

        Works with any ``LightningStore``: an ``InMemoryLightningStore``, or a
        ``LightningStoreClient`` of a running ``agl store``. Span ids derive from the records'
        chain hashes and the target attempt's spans are checked before adding, so repeated calls
        (from this or another process) never duplicate a span. The file is verified first (see the
        class docstring; ``force=True`` imports a file that fails, marked), and records are read
        and validated before anything is added.
        """
        if not isinstance(store, LightningStore):
            raise TypeError(
                f"store must be an agentlightning LightningStore (or LightningStoreClient), got {type(store).__name__}"
            )
        return MustAwait(
            self._emit_to_store(store, force),
            "adapter.emit_to_store(store)",
            "nothing was done (no span was added to the store)",
        )

    async def _emit_to_store(self, store: LightningStore, force: bool = False) -> int:
        state = self._state_for(store)
        async with state.lock:
            upto, unverified = await asyncio.to_thread(self._verified, force, "imported into the store")
            with self._lock:
                records, commit = state.cursor.scan(self.reader, upto)
            wanted = [r for r in records if self.wants(r)]
            added = await self._add(store, state, wanted, unverified)
            with self._lock:
                commit()
            return added

    def _state_for(self, store: Any) -> "_StoreState":
        try:
            state = self._store_state.get(store)
            if state is None:
                state = self._store_state[store] = _StoreState()
            return state
        except TypeError:  # a store that cannot be weakly referenced: no per-store cache
            return _StoreState()

    async def _target_of(self, store: LightningStore, state: "_StoreState", record: AuditRecord) -> Tuple[str, str]:
        rollout_id, attempt_id = record.rollout_id, record.attempt_id
        if self.placement == "rollout" and rollout_id:
            key = (rollout_id, attempt_id)
            if key not in state.targets:
                attempts = await store.query_attempts(rollout_id)
                target = attempts[-1] if attempt_id is None and attempts else None
                target = next((a for a in attempts if a.attempt_id == attempt_id), target)
                if target is not None:
                    state.made_in[key] = (rollout_id, target.attempt_id)
                if target is None or target.status in STATUSES_A_SPAN_REWRITES:
                    state.targets[key] = None  # the audit rollout: the store's view of the attempt is kept
                else:
                    state.targets[key] = (rollout_id, target.attempt_id)
            target = state.targets[key]
            if target is not None:
                return target
        if state.audit_target is None:
            state.audit_target = await self._audit_rollout(store)
        return state.audit_target  # type: ignore[return-value]

    async def _audit_rollout(self, store: LightningStore, create: bool = True) -> Optional[Tuple[str, str]]:
        """The rollout for records made outside any rollout (or whose rollout is not in the store):
        found by its metadata, or created once (unless ``create`` is False: then None) and marked
        succeeded so no runner ever takes it. If several exist (shippers that started together each
        created one), the earliest is the one."""
        found = [
            r
            for r in await store.query_rollouts()
            if (r.metadata or {}).get(AUDIT_ROLLOUT_METADATA_KEY) == self.trace_id_prefix
        ]
        if found:
            rollout = min(found, key=lambda r: (r.start_time, r.rollout_id))
            attempt = await store.get_latest_attempt(rollout.rollout_id)
            if attempt is None:
                raise RuntimeError(f"audit rollout {rollout.rollout_id} has no attempt")
            return rollout.rollout_id, attempt.attempt_id
        if not create:
            return None
        attempted = await store.start_rollout(
            input={
                "agentos_audit": f"Agent OS FlightRecorder records made outside any rollout ({self.trace_id_prefix})"
            },
            metadata={AUDIT_ROLLOUT_METADATA_KEY: self.trace_id_prefix},
        )
        await store.update_attempt(attempted.rollout_id, attempted.attempt.attempt_id, status="succeeded")
        # Shippers on other hosts may have created one at the same moment: every shipper uses the
        # earliest, so none puts a record where another will not look for it (a later creator sees
        # the earlier ones, which the store started before it).
        earliest = await self._audit_rollout(store, create=False)
        return earliest or (attempted.rollout_id, attempted.attempt.attempt_id)

    async def _add(
        self, store: LightningStore, state: "_StoreState", records: List[AuditRecord], unverified: Optional[str] = None
    ) -> int:
        groups: Dict[Tuple[str, str], List[AuditRecord]] = {}
        for record in records:
            groups.setdefault(await self._target_of(store, state, record), []).append(record)
        added = 0
        for (rollout_id, attempt_id), group in groups.items():
            # A record goes to its attempt, or to the audit rollout while its attempt is one a span would
            # rewrite: an earlier import may have put it in the other place, so both are looked at.
            places = {(rollout_id, attempt_id)}
            for record in group:
                made_in = state.made_in.get((record.rollout_id or "", record.attempt_id))
                if made_in is not None:
                    places.add(made_in)
                if made_in is not None and state.audit_target is None:
                    state.audit_target = await self._audit_rollout(store, create=False)
                if made_in is not None and state.audit_target is not None:
                    places.add(state.audit_target)
            present = {span.span_id for place in places for span in await store.query_spans(*place)}
            new: List[AuditRecord] = []
            for record in group:
                span_id = record_span_id(record)
                if span_id not in present:
                    present.add(span_id)
                    new.append(record)
            if not new:
                continue
            sequence_ids = await store.get_many_span_sequence_ids([(rollout_id, attempt_id)] * len(new))
            spans = [
                self.to_span(record, unverified, rollout_id=rollout_id, attempt_id=attempt_id, sequence_id=sequence_id)
                for record, sequence_id in zip(new, sequence_ids)
            ]
            stored = await store.add_many_spans(spans)
            added += len(stored)
        return added

    # ------------------------------------------------------------------ files
    def export_to_file(self, path: Union[str, Path], *, format: Optional[str] = None, force: bool = False) -> int:
        """Write the spans of every included record (pending ones too, so the chain is whole) to
        ``path``: a JSON array, or JSON Lines for ``.jsonl`` (or ``format="jsonl"``), streamed
        for large runs. Atomic: on any error no file (or the previous one) is left at ``path``.
        Returns the number of spans written. The recorder file is verified first (``force=True``
        exports one that fails, every span marked). Verify the export later with :func:`verify_export`.
        """
        if Path(path).resolve() == self.path.resolve():
            raise ExportError(f"export path {str(path)!r} is the FlightRecorder file itself")
        upto, unverified = self._verified(force, "exported")
        with self._lock:
            entries = ((self.to_span(r, unverified), r) for r in self.reader.records(0, upto) if self.wants(r))
            return write_export(path, entries, format=format)

    # ------------------------------------------------------------------ summaries and integrity
    def get_violation_summary(self) -> Dict[str, Any]:
        """Totals over the records on disk.

        ``total_entries`` (records), ``total_violations`` (violations, each counted once; a record
        blocked without the kernel's envelope counts one, under policy ``"unknown"``),
        ``violating_entries`` (records with at least one violation), ``violation_rate`` (their
        fraction of the records, as ``violation_rate`` is a fraction everywhere in the package),
        ``policies_violated`` (violations by policy), plus ``blocked_entries``,
        ``violations_by_severity``, ``signals_sent`` and ``pending_entries``.
        """
        total = violating = blocked = pending = signals = 0
        by_policy: Counter = Counter()
        by_severity: Counter = Counter()
        with self._lock:
            for record in self.reader.records():
                total += 1
                pending += record.pending
                blocked += record.blocked
                signals += len(record.signals)
                if record.policy_violated:
                    violating += 1
                    violations = record.violations
                    for violation in violations:
                        by_policy[violation["policy_name"]] += 1
                        by_severity[violation["severity"]] += 1
                    if not violations:  # blocked by something that wrote no governance envelope
                        by_policy["unknown"] += 1
        return {
            "total_entries": total,
            "total_violations": sum(by_policy.values()),
            "violating_entries": violating,
            "violation_rate": violating / total if total else 0.0,
            "policies_violated": dict(by_policy),
            "blocked_entries": blocked,
            "violations_by_severity": dict(by_severity),
            "signals_sent": signals,
            "pending_entries": pending,
        }

    def verify_integrity(self) -> Dict[str, Any]:
        """The kernel's verifier over the recorder file (``audit.seal.verify_file``): every
        content and entry hash recomputed, links, the first record, the envelopes' verdicts and,
        with the key, every seal and the signed head (``{"valid", "sealed", "assurance", ...}``)."""
        if not self.path.is_file():
            raise RecorderFileError(f"FlightRecorder file {str(self.path)!r} no longer exists")
        self.reader.flush()
        return verify_file(self.path, key=self.key, keyring=self.keyring)

    def chain_head(self) -> Optional[str]:
        """The newest record's chain hash: keep it with an export to detect a truncated tail."""
        with self._lock:
            return self.reader.head()

    def close(self) -> None:
        """Stop streams and close the reader (the FlightRecorder itself is left open)."""
        self.stop()
        self.reader.close()

    def __enter__(self) -> "FlightRecorderAdapter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"FlightRecorderAdapter({str(self.path)!r}, placement={self.placement!r}, "
            f"trace_id_prefix={self.trace_id_prefix!r})"
        )


@dataclass
class _StoreState:
    cursor: _Cursor = field(default_factory=_Cursor)
    targets: Dict[Tuple[str, Optional[str]], Optional[Tuple[str, str]]] = field(default_factory=dict)
    #: The store's attempt each record key was made in (when the store has it), wherever its span goes.
    made_in: Dict[Tuple[str, Optional[str]], Tuple[str, str]] = field(default_factory=dict)
    audit_target: Optional[Tuple[str, str]] = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def create_emitter(flight_recorder: RecorderLike, **options: Any) -> FlightRecorderAdapter:
    """Factory of the reference API: ``create_emitter(recorder, include_signals=False, ...)``.

    >>> import os, tempfile
    >>> from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder
    >>> rec = open_flight_recorder(os.path.join(tempfile.mkdtemp(), "audit.db"))
    >>> create_emitter(rec, trace_id_prefix="my-run").get_new_spans()
    []
    """
    return FlightRecorderAdapter(flight_recorder, **options)


def adapters_for_directory(
    audit_dir: Union[str, Path], pattern: str = "*.db", **options: Any
) -> List[FlightRecorderAdapter]:
    """One adapter per FlightRecorder file in ``audit_dir`` (e.g. an ``AgentOSRunner``'s
    ``audit_dir`` with ``worker-0.db``, ``worker-1.db``), sorted by name.

    >>> try:
    ...     adapters_for_directory("/nonexistent")
    ... except RecorderFileError as err:
    ...     print(err)
    audit directory '/nonexistent' does not exist
    """
    directory = Path(audit_dir)
    if not directory.is_dir():
        raise RecorderFileError(f"audit directory {str(directory)!r} does not exist")
    files = sorted(p for p in directory.glob(pattern) if p.is_file())
    if not files:
        raise RecorderFileError(f"no FlightRecorder files matching {pattern!r} in {str(directory)!r}")
    return [FlightRecorderAdapter(path, **options) for path in files]
