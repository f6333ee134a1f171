"""Hosts in network namespaces on this machine: one store host, runner hosts, one virtual LAN.

The store host's namespace holds a bridge with the LAN's first address; each runner host is a
namespace of its own, joined to the bridge by a veth pair, with the next address. No namespace has
a default route and nothing is attached to the machine's own namespace, so the hosts reach each
other and nothing else (their loopback and the LAN's addresses only). Cutting a host off is
``ip link set <its veth> down`` in its namespace: its packets to the store then fail at once with
"Network is unreachable", as on a host whose link went down.

Needs root (``ip netns``). Names are unique per process (``aglhosts-<pid>-<role>``); namespaces
left by a process that no longer exists (a run killed before its clean-up) are removed by the next
run. Run standalone to measure the shipper over the namespace link:

    python tests/netns_topology.py bench --records 1000 --rollouts 20
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, TypeVar

# The recipes' agl store helpers (the tests run the recipes' own code).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "contrib" / "recipes" / "agentos"))
from agl_store_server import store_healthy, wait_until_healthy  # noqa: E402

PREFIX = "aglhosts-"
LAN = "10.47.0"  # the namespaces' own LAN: no route leads there from outside them, nor out of them
STORE_PORT = 4747
HERE = Path(__file__).resolve().parent
CLONE_NEWNET = 0x40000000
_LIBC = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


class NetnsUnavailable(RuntimeError):
    """Network namespaces cannot be made here; the message says what to run instead."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    # Bounded, and generous: `ip netns pids` reads every process's namespace, slow on a loaded machine.
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True, timeout=120)


def require_netns() -> None:
    """Raise :class:`NetnsUnavailable` naming the fix when this process cannot make namespaces."""
    if shutil.which("ip") is None:
        raise NetnsUnavailable(
            "the `ip` command (iproute2) is missing: install it (apt-get install iproute2) and run as root"
        )
    if os.geteuid() != 0:
        raise NetnsUnavailable(
            "making network namespaces needs root: run `sudo .venv/bin/python -m pytest tests/test_hosts_netns.py` "
            "(CI runs .ci/run as root)"
        )


def remove_stale_namespaces() -> List[str]:
    """Delete this helper's namespaces whose creating process is gone (a run killed mid-way)."""
    removed = []
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ", 1)[0]
        if not name.startswith(PREFIX):
            continue
        owner = name[len(PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _kill_namespace_processes(name)
            _ip("netns", "del", name, check=False)
            removed.append(name)
    return removed


def _namespace_pids(name: str) -> List[int]:
    out = _ip("netns", "pids", name, check=False).stdout
    return [int(pid) for pid in out.split() if pid.isdigit()]


def _kill_namespace_processes(name: str) -> List[int]:
    pids = _namespace_pids(name)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


class Hosts:
    """A store host and runner hosts on one virtual LAN; :meth:`close` removes every trace."""

    def __init__(self, runner_hosts: List[str]) -> None:
        require_netns()
        remove_stale_namespaces()
        self.tag = f"{PREFIX}{os.getpid()}-{time.monotonic_ns() % 1_000_000}"
        self.store_ns = f"{self.tag}-store"
        self.namespaces: Dict[str, str] = {"store": self.store_ns}
        self.addresses: Dict[str, str] = {"store": f"{LAN}.1"}
        self.veths: Dict[str, str] = {}
        self.ports: Dict[str, str] = {}
        self.processes: List[subprocess.Popen] = []
        try:
            self._build(runner_hosts)
        except BaseException:
            self.close()
            raise

    def _build(self, runner_hosts: List[str]) -> None:
        _ip("netns", "add", self.store_ns)
        _ip("-n", self.store_ns, "link", "set", "lo", "up")
        _ip("-n", self.store_ns, "link", "add", "lan", "type", "bridge")
        _ip("-n", self.store_ns, "addr", "add", f"{LAN}.1/24", "dev", "lan")
        _ip("-n", self.store_ns, "link", "set", "lan", "up")
        for index, host in enumerate(runner_hosts, start=2):
            ns = f"{self.tag}-{host}"
            _ip("netns", "add", ns)
            self.namespaces[host] = ns
            _ip("-n", ns, "link", "set", "lo", "up")
            # Both ends are made inside the namespaces: nothing appears in the machine's own.
            port = f"port{index}"
            _ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", self.store_ns)
            _ip("-n", self.store_ns, "link", "set", port, "master", "lan")
            _ip("-n", self.store_ns, "link", "set", port, "up")
            self.addresses[host] = f"{LAN}.{index}"
            _ip("-n", ns, "addr", "add", f"{LAN}.{index}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            self.veths[host] = "eth0"
            self.ports[host] = port

    @property
    def store_url(self) -> str:
        return f"http://{self.addresses['store']}:{STORE_PORT}"

    def popen(
        self, host: str, argv: List[str], *, log: Path, cwd: Path, env: Dict[str, str], append: bool = False
    ) -> subprocess.Popen:
        """Start ``argv`` on ``host`` (inside its namespace), its output to ``log``."""
        with open(log, "a" if append else "w") as out:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.namespaces[host], *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
            )
        self.processes.append(process)
        return process

    def run(self, host: str, argv: List[str], *, cwd: Path, env: Dict[str, str], timeout: float):
        """Run ``argv`` on ``host`` to its end."""
        return subprocess.run(
            ["ip", "netns", "exec", self.namespaces[host], *argv],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env,
            timeout=timeout,
        )

    def start_store(self, log: Path, env: Dict[str, str], timeout: float = 300.0) -> subprocess.Popen:
        """``agl store`` on the store host, bound to its LAN address; returns once it answers there."""
        agl = Path(sys.executable).with_name("agl")
        argv = [str(agl), "store", "--host", self.addresses["store"], "--port", str(STORE_PORT)]
        process = self.popen("store", [*argv, "--log-level", "WARNING"], log=log, cwd=log.parent, env=env)

        def answers() -> bool:
            return self.call_in("store", lambda: store_healthy(self.store_url))

        wait_until_healthy(process, answers, self.store_url, timeout, lambda: tail(log), poll_s=0.5)
        return process

    def call_in(self, host: str, function: Callable[[], T]) -> T:
        """``function()`` with ``host``'s network: in a thread of this process that joined the host's
        namespace (a namespace is per thread), so the test talks to the hosts without starting an
        interpreter there."""
        outcome: Dict[str, Any] = {}

        def joined() -> None:
            try:
                fd = os.open(f"/run/netns/{self.namespaces[host]}", os.O_RDONLY)
                try:
                    if _LIBC.setns(fd, CLONE_NEWNET) != 0:
                        error = ctypes.get_errno()
                        raise OSError(error, f"setns into {self.namespaces[host]}: {os.strerror(error)}")
                finally:
                    os.close(fd)
                outcome["value"] = function()
            except BaseException as err:  # handed to the caller's thread
                outcome["error"] = err

        thread = threading.Thread(target=joined, name=f"netns-{host}", daemon=True)
        thread.start()
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def cut(self, host: str, *, silently: bool = False) -> None:
        """Cut ``host`` off the LAN: its own link down (its sends fail at once with "Network is
        unreachable"), or, ``silently``, the LAN's port to it down (its link stays up and its packets
        are lost: calls hang until their time-outs, as when a switch or a cable fails further away)."""
        if silently:
            _ip("-n", self.store_ns, "link", "set", self.ports[host], "down")
        else:
            _ip("-n", self.namespaces[host], "link", "set", self.veths[host], "down")

    def heal(self, host: str) -> None:
        _ip("-n", self.store_ns, "link", "set", self.ports[host], "up")
        _ip("-n", self.namespaces[host], "link", "set", self.veths[host], "up")

    def kill_host(self, host: str) -> List[int]:
        """``kill -9`` every process of ``host`` at once, as when the machine dies."""
        return _kill_namespace_processes(self.namespaces[host])

    def close(self) -> None:
        """Kill every process of the hosts and delete their namespaces; each step is tried even if
        another failed (a loaded machine can make ``ip netns pids`` slow), and a second pass follows
        a failed one."""
        for attempt in range(2):
            failed = False
            for ns in self.namespaces.values():
                try:
                    _kill_namespace_processes(ns)
                except (OSError, subprocess.SubprocessError):
                    failed = True
            for process in self.processes:
                if process.poll() is None:
                    process.kill()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    failed = True
            if not failed:
                break
        for ns in self.namespaces.values():
            try:
                _ip("netns", "del", ns, check=False)
            except subprocess.SubprocessError:
                pass


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


def host_env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def bench(argv: List[str]) -> None:
    """The shipper's throughput from a runner host to the store host over the namespace link."""
    parser = argparse.ArgumentParser(prog="netns_topology.py bench")
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--rollouts", type=int, default=20)
    args = parser.parse_args(argv)
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix="netns_bench_"))
    hosts = Hosts(["runner"])
    try:
        env = host_env()
        hosts.start_store(workdir / "agl-store.log", env)
        script = HERE / "benchmarks" / "bench_trail_shipper.py"
        argv_bench = [sys.executable, str(script), "--records", str(args.records), "--rollouts", str(args.rollouts)]
        result = hosts.run("runner", [*argv_bench, "--store-url", hosts.store_url], cwd=workdir, env=env, timeout=1800)
        print(result.stdout, end="")
        print(result.stderr, end="", file=sys.stderr)
    finally:
        hosts.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["bench"]:
        bench(sys.argv[2:])
    else:
        print(__doc__)
