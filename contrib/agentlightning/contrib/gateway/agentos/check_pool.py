"""The gateway's checks in worker processes: governance scales with cores instead of queueing on one GIL.

In one process every check holds the GIL, so a second core adds nothing. :class:`CheckPool` runs
:func:`~.govern.govern_response` in ``processes`` worker processes, each with its own
:class:`GovernanceKernel` built from the same ``governance`` section and its own audit trail file
(``gateway-<worker pid>-1.db`` in ``recorder_dir``: a chain per process, verified like any other
with ``verify_file`` or the keyring's ``verify`` command). A worker records every decision it takes,
durably, before it replies; the gateway forwards nothing before the reply.

Fail closed, in bounded time: a worker that dies, does not answer within ``deadline_s``, or answers
something that is not a governed response raises :class:`CheckFailed` (the layer withholds the
response and records the refusal in its own trail); the worker is killed, the other check it had in
flight fails the same way, and a new one is started while the others serve (a new process: a new
pid, a new file; a hash chain is never continued by another process).
A check whose caller goes away (a client that disconnects) keeps its place on the worker until the worker
replies (its decision is recorded all the same); the reply is dropped and the worker serves on.

With a worker for each of the gateway's cores (its affinity, as ``taskset`` or a container's cpuset
sets it; the default), each worker runs on a core of its own (a replacement on the core its predecessor
left); with fewer workers than cores the system places them. A worker's check threads hand the GIL to one
another several times a check; left to float, they moved between cores about once every three checks and
a check cost more CPU than on a core of its own (measured in ``docs/performance.md``). The gateway's
own process is not pinned.

Workers are started with ``python -m`` of this module (not ``fork``: a trail refuses a forked
writer, and the gateway has threads), and import the kernel core and :mod:`.govern` only, not
1.0's server. Requests and replies are pickles with a length prefix on a socket pair; a worker's
reply carries each decision as its event data (plain dicts: unpickled cheaply in the gateway). On
the gateway's side each socket is an asyncio transport with a :class:`_Channel` protocol: a request
is one ``write``, replies are parsed from a buffer the socket is read into, and the socket stays
registered with the event loop (no future, no reader added and removed, per read).
"""

from __future__ import annotations

import asyncio
import itertools
import pickle
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Tuple

from agentlightning.contrib.kernel.agentos import ActionContext
from agentlightning.contrib.kernel.agentos.cores import available_cores, usable_cores

from .govern import UnreadableAction

__all__ = ["CheckFailed", "CheckPool", "available_cores"]

#: A reply larger than this is malformed (a governed response is the model's response, rewritten).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
_LENGTH = 8
_BUFFER_BYTES = 64 * 1024  # a channel's read buffer to start with (it grows for a larger reply)


class CheckFailed(Exception):
    """A check the pool could not complete: the response is withheld and the reason recorded."""


class _Malformed(Exception):
    """Bytes from a worker that are not a message."""


def _send(sock: socket.socket, message: Any, deadline: Optional[float]) -> None:
    if deadline is not None:
        sock.settimeout(max(deadline - time.monotonic(), 1e-3))
    sock.sendall(_frame(message))


def _frame(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(_LENGTH, "big") + data


def _read(sock: socket.socket, size: int, deadline: Optional[float]) -> bytes:
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            sock.settimeout(remaining)
        count = sock.recv_into(view[got:])
        if not count:
            raise EOFError
        got += count
    return bytes(buffer)


def _receive(sock: socket.socket, deadline: Optional[float]) -> Any:
    size = int.from_bytes(_read(sock, _LENGTH, deadline), "big")
    if size > MAX_MESSAGE_BYTES:
        raise _Malformed(f"a message of {size} bytes (at most {MAX_MESSAGE_BYTES})")
    return _decode(_read(sock, size, deadline))


def _decode(data: bytes) -> Any:
    try:
        return pickle.loads(data)
    except Exception as error:  # noqa: BLE001 - whatever the bytes make the unpickler raise, they are no message
        raise _Malformed(f"{type(error).__name__}: {error}") from None


@dataclass
class _Worker:
    process: subprocess.Popen
    sock: socket.socket
    core: Optional[int]  # the core it runs on (None: where the system places it)
    trail: Optional[Path] = None  # known once the worker has said it is ready
    waiting: Dict[int, asyncio.Future] = field(default_factory=dict)  # its checks in flight, by request id
    fate: Optional[str] = None  # why the pool gave it up
    transport: Optional[asyncio.Transport] = None  # its socket on the event loop, once the pool uses it there
    connecting: Optional[asyncio.Future] = None

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        if self.transport is not None:
            try:
                self.transport.abort()  # the loop stops watching the socket, then closes it
                return
            except RuntimeError:  # the loop has ended: nothing watches the socket any more
                pass
        self.sock.close()


class _Channel(asyncio.BufferedProtocol):
    """The gateway's end of a worker's socket: each complete frame (length, pickle) read is handed to the pool."""

    def __init__(self, pool: "CheckPool", worker: _Worker) -> None:
        self.pool, self.worker = pool, worker
        self.buffer = bytearray(_BUFFER_BYTES)
        self.start = self.end = 0  # the bytes read and not yet parsed: buffer[start:end]
        self.frame = _LENGTH  # the size of the frame being read (its length prefix first)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self.start == self.end and len(self.buffer) > _BUFFER_BYTES:  # a large reply's room is given back
            self.buffer, self.start, self.end = bytearray(_BUFFER_BYTES), 0, 0
        if self.start:  # what is left of a frame moves to the front
            left = self.end - self.start
            self.buffer[:left] = self.buffer[self.start : self.end]
            self.start, self.end = 0, left
        if self.end == len(self.buffer):  # a frame larger than the buffer: room for all of it
            self.buffer.extend(bytes(max(self.frame, 2 * len(self.buffer)) - len(self.buffer)))
        return memoryview(self.buffer)[self.end :]

    def buffer_updated(self, nbytes: int) -> None:
        self.end += nbytes
        try:
            while self.end - self.start >= _LENGTH:
                size = int.from_bytes(self.buffer[self.start : self.start + _LENGTH], "big")
                if size > MAX_MESSAGE_BYTES:
                    raise _Malformed(f"a message of {size} bytes (at most {MAX_MESSAGE_BYTES})")
                stop = self.start + _LENGTH + size
                if stop > self.end:
                    self.frame = _LENGTH + size
                    return
                message = _decode(self.buffer[self.start + _LENGTH : stop])
                self.start, self.frame = stop, _LENGTH
                self.pool._deliver(self.worker, message)
                if self.worker.fate is not None:
                    return
        except (_Malformed, CheckFailed) as error:
            fate = str(error) if isinstance(error, CheckFailed) else self.pool._fate(self.worker, error)
            self.pool._give_up(self.worker, fate)

    def eof_received(self) -> bool:
        return False  # the transport closes; connection_lost says the worker is gone

    def connection_lost(self, error: Optional[Exception]) -> None:
        if self.worker.fate is None:
            self.pool._give_up(self.worker, self.pool._fate(self.worker, error or EOFError()))


class CheckPool:
    """``processes`` workers judging responses (see the module docstring), used from one event loop.

    ``governance`` is the gateway's :class:`~.config.GovernanceConfig` (each worker builds its kernel
    from it). The pool starts every worker and waits until each has opened its trail, so a
    configuration a worker cannot build fails here, at start-up. :meth:`govern` runs on the event
    loop (no thread between the gateway and a worker) and gives each worker up to ``per_worker``
    responses at once (default 4): while checks wait for their records' commit, the next one computes,
    and the more records wait, the more share one commit (4 measured faster than 2 on two cores).
    """

    def __init__(
        self,
        governance: Any,
        processes: int,
        *,
        deadline_s: float,
        per_worker: int = 4,
        start_timeout_s: float = 120.0,
    ) -> None:
        if processes < 1 or per_worker < 1 or deadline_s <= 0:
            raise ValueError(
                f"processes and per_worker must be >= 1 and deadline_s > 0, got {processes}, "
                f"{per_worker} and {deadline_s}"
            )
        self.governance = governance
        self.processes = processes
        self.per_worker = per_worker
        self.deadline_s = deadline_s
        self.start_timeout_s = start_timeout_s
        self.trails: List[Path] = []  # every worker's file, in the order they started
        # The cores the workers are pinned to: the gateway's, when there are workers for all of them (the default,
        # one per core). Fewer workers than cores are left where the system places them: pinned, two gateways
        # on one machine would stack their workers on the same first cores while the others idle.
        cores = usable_cores()
        self.cores = cores if processes >= len(cores) else []
        self._live: List[_Worker] = []  # started, not given up (ready or starting)
        self._turns: Deque[asyncio.Future] = deque()  # callers waiting for a free place, first come first served
        self._ids = itertools.count()
        self._closed = False
        started = [self._start() for _ in range(processes)]
        try:
            for worker in started:
                self._ready(worker, _receive(worker.sock, time.monotonic() + start_timeout_s))
        except (EOFError, OSError, _Malformed) as error:
            raise CheckFailed(f"a governance worker did not start ({self._fate(started[len(self.trails)], error)})")
        finally:
            if len(self.trails) < processes:
                for worker in started:
                    worker.kill()
        for worker in started:
            worker.sock.setblocking(False)

    def _start(self) -> _Worker:
        core = min(self.cores, key=lambda c: sum(w.core == c for w in self._live), default=None)
        ours, theirs = socket.socketpair()
        module = __name__.rpartition(".")[0] + ".check_worker"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                str(theirs.fileno()),
                str(self.per_worker),
                "" if core is None else str(core),
            ],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        worker = _Worker(process, ours, core)
        self._live.append(worker)
        _send(ours, self.governance, time.monotonic() + self.start_timeout_s)
        return worker

    def _ready(self, worker: _Worker, reply: Any) -> None:
        if not (isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "ready" and isinstance(reply[1], str)):
            raise CheckFailed(f"a governance worker could not start: {str(reply)[:500]}")
        worker.trail = Path(reply[1])
        self.trails.append(worker.trail)

    def _fate(self, worker: _Worker, error: BaseException) -> str:
        """What became of a worker that gave no message (it is killed, if it was not dead already)."""
        if worker.fate:
            return worker.fate
        if isinstance(error, _Malformed):
            return f"worker {worker.process.pid} sent a malformed reply ({error}) and was killed"
        if isinstance(error, TimeoutError):
            return f"worker {worker.process.pid} did not start within {self.start_timeout_s:g} s and was killed"
        worker.process.kill()
        code = worker.process.wait()
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        return f"worker {worker.process.pid} {how}"

    async def govern(
        self, response: Dict[str, Any], upstream_path: str, context: ActionContext, text: Any
    ) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
        """:func:`~.govern.govern_response` on a worker: the governed response and each decision's event data
        (with ``choice_index``, ``tool_call_id`` and ``source``). Raises :class:`~.govern.UnreadableAction`
        as ``govern_response`` does, and :class:`CheckFailed` when no worker gives a governed response
        within ``deadline_s`` (counted from the moment a worker takes it)."""
        worker = await self._take()
        request_id = next(self._ids)
        loop = asyncio.get_running_loop()
        answer = loop.create_future()
        worker.waiting[request_id] = answer
        sent, deadline = False, loop.time() + self.deadline_s
        try:
            async with asyncio.timeout_at(deadline):
                worker.transport.write(_frame((request_id, response, upstream_path, context, text)))
                sent = True
                reply = await answer
        except TimeoutError:
            if answer.done() and not answer.cancelled() and answer.exception() is not None:
                raise answer.exception() from None  # the worker failed just as the deadline passed
            self._give_up(worker, f"worker {worker.process.pid} gave no answer within its deadline and was killed")
            raise CheckFailed(f"the governance check failed: {worker.fate}") from None
        finally:
            if sent and answer.cancelled():
                # The caller went away while the worker judges it: the place stays taken, the reply, when it
                # comes, is dropped (``_deliver``), and a worker that gives none by the deadline is killed.
                loop.call_at(deadline, self._overdue, worker, request_id)
            else:
                worker.waiting.pop(request_id, None)
            self._next_turn()
        if isinstance(reply, tuple) and len(reply) == 2 and reply[0] == "unreadable" and isinstance(reply[1], str):
            raise UnreadableAction(reply[1])
        if not _governed_reply(reply):
            self._give_up(
                worker,
                f"worker {worker.process.pid} replied {str(reply)[:300]} (not a governed response) and was killed",
            )
            raise CheckFailed(f"the governance check failed: {worker.fate}")
        return reply[1], reply[2]

    def _free(self) -> Optional[_Worker]:
        """The ready worker with the fewest checks in flight, if it has room for one more."""
        ready = [w for w in self._live if w.trail is not None and w.fate is None]
        best = min(ready, key=lambda w: len(w.waiting), default=None)
        return best if best is not None and len(best.waiting) < self.per_worker else None

    async def _take(self) -> _Worker:
        if self._closed:
            raise CheckFailed("the gateway's check pool is closed")
        worker = None if self._turns else self._free()
        if worker is None:
            turn = asyncio.get_running_loop().create_future()
            self._turns.append(turn)
            try:
                async with asyncio.timeout(self.deadline_s):
                    while worker is None:
                        await turn
                        worker = self._free()
                        if worker is None:
                            turn = asyncio.get_running_loop().create_future()
                            self._turns.appendleft(turn)  # still first in line
            except TimeoutError:
                raise CheckFailed(f"no governance worker was free within {self.deadline_s:g} s") from None
            finally:
                if turn in self._turns:
                    self._turns.remove(turn)
                self._next_turn()  # a place this caller did not take goes to the next one
        if worker.transport is None:
            try:
                await self._connect(worker)
            except OSError as error:  # its socket could not be watched: the worker is no use
                self._give_up(worker, self._fate(worker, error))
                raise CheckFailed(f"the governance check failed: {worker.fate}") from None
        return worker

    async def _connect(self, worker: _Worker) -> None:
        """Put ``worker``'s socket on the running loop (once: the callers that chose it meanwhile wait for it)."""
        if worker.connecting is None:
            worker.connecting = asyncio.ensure_future(
                asyncio.get_running_loop().create_unix_connection(lambda: _Channel(self, worker), sock=worker.sock)
            )
        transport, _ = await asyncio.shield(worker.connecting)
        worker.transport = transport
        if worker.fate is not None:  # given up while it was being connected
            transport.abort()
            raise CheckFailed(f"the governance check failed: {worker.fate}")

    def _next_turn(self) -> None:
        if self._turns and self._free() is not None:
            turn = self._turns.popleft()
            if not turn.done():
                turn.set_result(None)

    def _deliver(self, worker: _Worker, message: Any) -> None:
        """A message from ``worker``: a starting worker's "ready", else the reply to a check in flight. Anything
        else raises :class:`_Malformed` (or :class:`CheckFailed` for a worker that could not start)."""
        if worker.trail is None:
            self._ready(worker, message)
            while self._turns and self._free() is not None:
                self._next_turn()
            return
        if not (isinstance(message, tuple) and len(message) == 2 and message[0] in worker.waiting):
            raise _Malformed(f"not a reply to a check in flight: {str(message)[:200]}")
        answer = worker.waiting.pop(message[0])
        if answer.cancelled():  # its caller went away: the reply has no one to go to, and the place is free again
            self._next_turn()
        elif not answer.done():
            answer.set_result(message[1])

    def _overdue(self, worker: _Worker, request_id: int) -> None:
        """The deadline of a check whose caller went away: a worker still judging it is given up."""
        if request_id in worker.waiting:
            self._give_up(
                worker,
                f"worker {worker.process.pid} gave no answer within its deadline (to a check whose caller went "
                f"away) and was killed",
            )

    def _give_up(self, worker: _Worker, fate: str) -> None:
        """Kill ``worker``, fail every check it has in flight with ``fate``, start another in its place."""
        if worker not in self._live:
            return
        worker.fate = fate
        self._live.remove(worker)
        worker.kill()
        for answer in worker.waiting.values():
            if not answer.done():
                answer.set_exception(CheckFailed(f"the governance check failed: {fate}"))
        worker.waiting.clear()
        if not self._closed:
            try:
                replacement = self._start()
            except OSError as error:  # no process to be had: the pool is one short; callers wait at most their deadline
                raise CheckFailed(f"a governance worker could not be restarted: {error}") from None
            loop = asyncio.get_running_loop()
            loop.create_task(self._await_start(replacement))
            loop.call_later(self.start_timeout_s, self._started_in_time, replacement)

    async def _await_start(self, worker: _Worker) -> None:
        """Watch a replacement's socket: its "ready" (or its failure) arrives on its channel."""
        try:
            await self._connect(worker)
        except (OSError, CheckFailed) as error:
            self._give_up(worker, str(error) if isinstance(error, CheckFailed) else self._fate(worker, error))

    def _started_in_time(self, worker: _Worker) -> None:
        if worker.trail is None and worker.fate is None:
            self._give_up(worker, self._fate(worker, TimeoutError()))

    def close(self) -> None:
        """Stop every worker (each closes its trail when its socket ends) and wait for them."""
        self._closed = True
        workers, self._live = self._live, []
        for worker in workers:
            try:
                worker.sock.shutdown(socket.SHUT_RDWR)
                worker.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
            worker.kill()


_EVENT_KEYS = {"decision_id", "audit_id", "verdict", "blocked", "reason", "violations", "source"}


def _governed_reply(reply: Any) -> bool:
    """Whether ``reply`` is ``("governed", response, [event data, ...])`` (a worker's only other answer is
    ``("unreadable", reason)``)."""
    if not (isinstance(reply, tuple) and len(reply) == 3 and reply[0] == "governed"):
        return False
    governed, events = reply[1], reply[2]
    if not isinstance(governed, dict) or not isinstance(governed.get("choices"), list) or not isinstance(events, list):
        return False
    return all(isinstance(e, dict) and _EVENT_KEYS <= set(e) and isinstance(e["blocked"], bool) for e in events)
