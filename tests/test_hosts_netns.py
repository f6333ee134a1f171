"""Governed training across hosts, with hosts as network namespaces on this machine.

Three hosts on one virtual LAN (``tests/netns_topology.py``): the store host runs agentlightning
0.3's ``agl store`` (its real HTTP store) and the driver; two runner hosts each run
``AgentOSRunner`` with 0.3's client-server strategy in the runner role (two runner processes per
host) and the trail shipper hook, each with its own disk: its SQLite ``shop.db`` and its audit
files. The driver enqueues governed rollouts with retries (some with destructive SQL the kernel must
block). With rollouts in flight, one runner host is (a) killed with ``kill -9``, or (b) cut off from
the store for 20 s (first silently: the LAN's port to it down, its calls hang; then its own link down
as well: its sends fail at once), then healed. Each runner host signs its audit files with its own
Ed25519 key; the shipper and the verifier hold the keyring of the hosts' public keys. Afterwards:

* the store holds every blocked decision of every host's trail (in (b) with no operator action:
  the partitioned host's own shipper delivers them; in (a) the killed host cannot, and the ``ship``
  command sends its file, as docs/scaling.md says);
* no span is in the store twice;
* no destructive statement ran (each host's SQLite file is intact);
* every rollout succeeded, its latest attempt ended; an attempt superseded by a retry keeps the
  status it had when superseded; no attempt is left ``running`` or ``preparing``;
* every host's trail verifies with the project's verifier and the keyring, signed by its own host;
* the healed host takes work again.

Needs root (network namespaces); without it the test fails and says what to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from . import netns_topology
from .conftest import host_signing_key, make_shop_db, table_counts
from .netns_roles import BAD, drive
from .netns_roles import report as read_store
from .netns_topology import STORE_PORT, Hosts, NetnsUnavailable, host_env, require_netns, tail

ROLES = str(Path(__file__).resolve().parent / "netns_roles.py")
RUNNER_HOSTS = ["host-a", "host-b"]
UNRESPONSIVE_SECONDS = 3.0
WORKER = re.compile(r"^Worker-[01]@(host-[ab])-\d+$")


class Cluster:
    """The three hosts, their processes and their disks (a directory each)."""

    def __init__(self, hosts: Hosts, workdir: Path) -> None:
        self.hosts = hosts
        self.workdir = workdir
        self.keyring = workdir / "hosts.keyring"
        # No shared secret: each host signs its files' heads with its own Ed25519 key, and whoever
        # checks them (the shipper, the verifier) holds the keyring of the hosts' public keys.
        self.env = host_env(AGENTOS_AUDIT_KEYRING=str(self.keyring))
        self.env.pop("AGENTOS_AUDIT_KEY", None)
        self.env.pop("AGENTOS_AUDIT_KEY_FILE", None)
        self.runners: Dict[str, Any] = {}

    def host_dir(self, host: str) -> Path:
        return self.workdir / host

    def start_runner(self, host: str) -> None:
        """Start ``host``'s runner processes (again, after the host was killed: new pids, new files)."""
        argv = [sys.executable, ROLES, "runner", "--store-host", self.hosts.addresses["store"], "--store-port"]
        argv += [str(STORE_PORT), "--n-runners", "2", "--ship-interval", "1.0"]
        env = dict(
            self.env, AGENTOS_HOST_NAME=host, AGENTOS_AUDIT_SIGNING_KEY_FILE=str(self.host_dir(host) / "host.key")
        )
        log = self.workdir / f"{host}.log"
        self.runners[host] = self.hosts.popen(host, argv, log=log, cwd=self.host_dir(host), env=env, append=True)

    def ensure_running(self, host: str) -> None:
        if self.runners[host].poll() is not None:
            self.start_runner(host)

    def start_driver(self, prefix: str, count: int, sleep: float) -> Tuple[threading.Thread, Dict[str, Any]]:
        """The driver on the store host, in a thread of this process; its progress dict stays current."""
        progress: Dict[str, Any] = {}

        def run() -> None:
            try:
                self.hosts.call_in(
                    "store",
                    lambda: asyncio.run(
                        drive(
                            self.hosts.store_url,
                            progress,
                            count=count,
                            sleep=sleep,
                            prefix=prefix,
                            unresponsive_seconds=UNRESPONSIVE_SECONDS,
                            max_attempts=3,
                            timeout=150.0,
                        )
                    ),
                )
            except BaseException as err:
                progress["error"] = repr(err)
                raise

        thread = threading.Thread(target=run, name=f"driver-{prefix}", daemon=True)
        thread.start()
        return thread, progress

    def wait_for(self, what: str, progress: Dict[str, Any], predicate, timeout: float) -> Dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert "error" not in progress, f"the driver failed: {progress['error']}\n{self.logs()}"
            if "ids" in progress and predicate(progress):
                return dict(progress)
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; progress {progress}\n{self.logs()}")

    def drive_until_running_on(
        self, host: str, prefix: str, sleep: float
    ) -> Tuple[threading.Thread, Dict[str, Any], Dict[str, Any]]:
        """With every runner host up, start the driver on 12 rollouts and wait until ``host`` runs one
        of them (and two have finished): the driver, its live progress, and the progress then."""
        for other in RUNNER_HOSTS:
            self.ensure_running(other)
        driver, progress = self.start_driver(prefix, count=12, sleep=sleep)
        in_flight = self.wait_for(
            f"{host} to run rollouts",
            progress,
            lambda p: p["running_by_host"].get(host, 0) >= 1 and p["finished"] >= 2,
            120,
        )
        return driver, progress, in_flight

    def trail_files(self) -> List[Path]:
        return sorted(p for host in RUNNER_HOSTS for p in (self.host_dir(host) / "audit").glob("*.db"))

    def ship(self, host: str) -> Tuple[int, str]:
        """The ``ship`` command on ``host`` for its audit directory: (exit code, what it printed)."""
        from agentlightning.contrib.adapter.agentos.shipper import main

        printed = io.StringIO()
        argv = ["ship", "--store-url", self.hosts.store_url, "--keyring", str(self.keyring)]
        argv.append(str(self.host_dir(host) / "audit"))
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = self.hosts.call_in(host, lambda: main(argv))
        return code, printed.getvalue()

    def report(self, wait_for_trail: float) -> Dict[str, Any]:
        files = self.trail_files()
        return self.hosts.call_in("store", lambda: asyncio.run(read_store(self.hosts.store_url, files, wait_for_trail)))

    def logs(self) -> str:
        names = ["agl-store.log", *(f"{h}.log" for h in RUNNER_HOSTS)]
        return "\n".join(f"--- {name} ---\n{tail(self.workdir / name)}" for name in names)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The store host and two runner hosts, for both scenarios (each host's start costs an
    agentlightning import, seconds of CPU); each scenario has rollouts of its own."""
    try:
        require_netns()
    except NetnsUnavailable as err:
        pytest.fail(f"this end-to-end test runs hosts in network namespaces: {err}")
    workdir = tmp_path_factory.mktemp("hosts")
    hosts = Hosts(RUNNER_HOSTS)
    try:
        made = Cluster(hosts, workdir)
        keyring_lines = []
        for host in RUNNER_HOSTS:
            (workdir / host / "audit").mkdir(parents=True)
            make_shop_db(workdir / host / "shop.db")
            keyring_lines.append(host_signing_key(workdir / host / "host.key", host))
        made.keyring.write_text("\n".join(keyring_lines) + "\n")
        for host in RUNNER_HOSTS:
            made.start_runner(host)
        hosts.start_store(workdir / "agl-store.log", made.env)
        yield made
    finally:
        hosts.close()


def _host_of(worker_id: str) -> str:
    matched = WORKER.match(worker_id or "")
    assert matched, f"worker {worker_id!r} does not name its host and process"
    return matched.group(1)


def _check_the_aftermath(cluster: Cluster, report: Dict[str, Any], progress: Dict[str, Any]) -> Dict[str, Any]:
    """The assertions both scenarios end with; returns figures for the scenario's own."""
    from agentlightning.contrib.kernel.agentos.audit.seal import verify_file
    from agentlightning.contrib.kernel.agentos.audit.signing import main as audit_signing
    from agentlightning.contrib.kernel.agentos.semconv import (
        AGENT_OS_ATTEMPT_ID,
        AGENT_OS_DECISION_ID,
        AGENT_OS_POLICY_RESULT,
        AGENTOS_DECISION_ID,
        AGENTOS_KIND,
        AGENTOS_VERDICT,
        KIND_AUDIT,
        KIND_CHECK,
    )

    rollouts = report["rollouts"]
    ours = {rid: r for rid, r in rollouts.items() if rid in set(progress["ids"])}
    assert len(ours) == len(progress["ids"])
    spans = [dict(s, rollout_id=rid) for rid, r in rollouts.items() for s in r["spans"]]

    # The store holds every blocked decision of every host's trail, and only those.
    assert report["store_blocked"] == report["trail_blocked"], (
        f"{len(set(report['trail_blocked']) - set(report['store_blocked']))} blocked decisions of the trails "
        f"are not in the store; {len(set(report['store_blocked']) - set(report['trail_blocked']))} in the store "
        "are in no trail"
    )

    # No span twice: ids are unique, no decision has two check spans, no record two audit spans.
    span_ids = [s["span_id"] for s in spans]
    twice = [
        {key: s[key] for key in ("span_id", "name", "rollout_id", "attempt_id")}
        | {"kind": s["attributes"].get(AGENTOS_KIND), "record_of": s["attributes"].get(AGENT_OS_ATTEMPT_ID)}
        for s in spans
        if span_ids.count(s["span_id"]) > 1
    ]
    assert not twice, f"spans in the store twice: {twice}"
    checks = [s["attributes"][AGENTOS_DECISION_ID] for s in spans if s["attributes"].get(AGENTOS_KIND) == KIND_CHECK]
    audits = [s for s in spans if s["attributes"].get(AGENTOS_KIND) == KIND_AUDIT]
    audit_records = [(s["attributes"][AGENT_OS_DECISION_ID], s["span_id"]) for s in audits]
    assert len(checks) == len(set(checks)), "a decision's check span is in the store twice"
    assert len({d for d, _ in audit_records}) == len(audit_records), "a record was shipped twice"

    # Every rollout succeeded; its latest attempt ended; nothing is left running.
    blocked_by_attempt: Dict[str, set] = {}
    for span in spans:
        attributes = span["attributes"]
        if attributes.get(AGENTOS_KIND) == KIND_CHECK and attributes.get(AGENTOS_VERDICT) == "blocked":
            blocked_by_attempt.setdefault(span["attempt_id"], set()).add(attributes[AGENTOS_DECISION_ID])
        elif attributes.get(AGENTOS_KIND) == KIND_AUDIT and attributes.get(AGENT_OS_POLICY_RESULT) == "blocked":
            blocked_by_attempt.setdefault(attributes[AGENT_OS_ATTEMPT_ID], set()).add(attributes[AGENT_OS_DECISION_ID])
    retried: Dict[str, int] = {}
    for rollout_id, rollout in ours.items():
        attempts = sorted(rollout["attempts"], key=lambda a: a["sequence_id"])
        latest = attempts[-1]
        assert rollout["status"] == "succeeded", (rollout_id, rollout["status"], attempts)
        assert latest["status"] == "succeeded" and latest["end_time"] is not None, (rollout_id, attempts)
        expected_blocked = sum(q in BAD for q in rollout["input"]["queries"])
        assert len(blocked_by_attempt.get(latest["attempt_id"], ())) == expected_blocked, (rollout_id, attempts)
        for attempt in attempts:
            _host_of(attempt["worker_id"])
            assert attempt["status"] not in ("running", "preparing"), (rollout_id, attempt)
        for attempt in attempts[:-1]:
            retried[_host_of(attempt["worker_id"])] = retried.get(_host_of(attempt["worker_id"]), 0) + 1
            # Superseded: the status it had when the retry began is the status it keeps.
            assert attempt["status"] == progress["superseded_at"][attempt["attempt_id"]], (rollout_id, attempts)
            assert attempt["status"] in ("unresponsive", "timeout", "failed"), (rollout_id, attempts)

    # No destructive statement ran on any host.
    for host in RUNNER_HOSTS:
        assert table_counts(cluster.host_dir(host) / "shop.db") == {"orders": 200, "users": 50}, host

    # Every trail verifies with the project's verifier and the keyring: signed by the host its name says.
    files = cluster.trail_files()
    assert {f.name.split("@")[1].rsplit("-", 1)[0] for f in files} == set(RUNNER_HOSTS)
    for path in files:
        host = path.name.split("@")[1].rsplit("-", 1)[0]
        verified = verify_file(path, keyring=cluster.keyring, host=host)
        assert verified["valid"], (path.name, verified)
        if verified["total_entries"]:  # a worker that never got a rollout has nothing to sign
            assert verified["signed"] and verified["signed_by"]["host"] == host, (path.name, verified)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        verify_command = [
            "verify",
            "--keyring",
            str(cluster.keyring),
            *(str(cluster.host_dir(h) / "audit") for h in RUNNER_HOSTS),
        ]
        assert audit_signing(verify_command) == 0, printed.getvalue()

    # Seen rewritten for a moment (agentlightning's tracer delivers the trace's last span late, a span
    # revives an unresponsive attempt, the runner puts the status back): counted, and the logs say it.
    revived = sum(bool(seen) for seen in progress["after_superseded"].values())
    revived_in_logs = sum(
        (cluster.workdir / f"{host}.log").read_text(errors="replace").count("turned back to running")
        for host in RUNNER_HOSTS
    )
    return {
        "retried_by_host": retried,
        "blocked": len(report["trail_blocked"]),
        "audit_spans": len(audits),
        "revived_for_a_moment": max(revived, revived_in_logs),
    }


@pytest.mark.e2e
def test_a_runner_host_killed_with_kill_9_loses_nothing(cluster):
    driver, progress, in_flight = cluster.drive_until_running_on("host-a", "killed", sleep=2.0)
    assert cluster.hosts.kill_host("host-a"), "host-a had no process to kill"
    driver.join(timeout=160)
    assert progress.get("done"), f"not every rollout finished: {progress}\n{cluster.logs()}"

    # A killed host cannot ship its own trail: the ship command sends its files once the host is back.
    code, shipped = cluster.ship("host-a")
    assert code == 0, shipped
    code, again = cluster.ship("host-a")
    assert code == 0 and re.findall(r"(\d+) span\(s\) added", again) == ["0"] * again.count("added"), again

    report = cluster.report(wait_for_trail=30.0)
    figures = _check_the_aftermath(cluster, report, progress)
    assert figures["retried_by_host"].get("host-a", 0) >= 1, (in_flight["running_by_host"], figures)
    print(f"killed host: {figures}; ship: {shipped.strip()}")
    cluster.start_runner("host-a")  # the host is back: new processes, new names, new files


@pytest.mark.e2e
def test_a_runner_host_cut_off_for_20_s_delivers_its_trail_once_healed(cluster):
    driver, progress, in_flight = cluster.drive_until_running_on("host-b", "partition", sleep=3.0)
    # 20 s cut off: first silently (the LAN's port to it down: its calls hang until their time-outs),
    # then its own link down as well (its sends fail at once with "Network is unreachable").
    cluster.hosts.cut("host-b", silently=True)
    cut_at = time.monotonic()
    try:
        time.sleep(10.0)
        cluster.hosts.cut("host-b")
        time.sleep(20.0 - (time.monotonic() - cut_at))
    finally:
        cluster.hosts.heal("host-b")
    healed_after = time.monotonic() - cut_at
    driver.join(timeout=160)
    assert progress.get("done"), f"not every rollout finished: {progress}\n{cluster.logs()}"

    # The host is back: it takes work again (rollouts enqueued now run on both hosts). Each rollout
    # holds its runner for 2 s, so host-a's two runners alone would need 12 s for these: long enough
    # for host-b's runners to come back from their retry back-off and take some.
    rejoined, after = cluster.start_driver("rejoined", count=12, sleep=2.0)
    rejoined.join(timeout=160)
    assert after.get("done"), f"not every rollout finished: {after}\n{cluster.logs()}"
    assert "host-b" in {_host_of(worker) for worker in after["workers"].values()}, after["workers"]

    # No operator action: the runner hosts' own shippers bring the store up to the trails.
    report = cluster.report(wait_for_trail=40.0)
    both = {key: {**progress[key], **after[key]} for key in ("superseded_at", "after_superseded")}
    figures = _check_the_aftermath(cluster, report, {**both, "ids": progress["ids"] + after["ids"]})
    # What host-b was running when it was cut off was given up and retried.
    assert figures["retried_by_host"].get("host-b", 0) >= 1, (in_flight["running_by_host"], figures)
    print(
        f"cut off for {healed_after:.1f} s: {figures}; "
        f"the store held the trails' decisions {report['waited_for_trail']:.1f} s after the driver ended"
    )


def test_without_root_the_scenarios_fail_and_say_what_to_run(monkeypatch):
    """Never a silent skip: a run that cannot make namespaces fails, naming the command to run."""
    monkeypatch.setattr(netns_topology.os, "geteuid", lambda: 1000)
    with pytest.raises(
        NetnsUnavailable, match=r"needs root: run `sudo \.venv/bin/python -m pytest tests/test_hosts_netns"
    ):
        require_netns()
    with pytest.raises(NetnsUnavailable, match="needs root"):
        Hosts(RUNNER_HOSTS)


def test_shippers_that_start_together_share_one_audit_rollout_and_never_ship_a_record_twice(tmp_path):
    """Each runner process ships its own file; records of attempts a span would rewrite go to the
    audit rollout. Runner processes on several hosts start shipping at the same moment: if each
    creates an audit rollout of its own, a later shipper (the ship command) finds only one of them
    and adds the records of the other again (the store's key is the span id within an attempt, so
    it keeps both)."""
    import agentlightning as agl
    from agentlightning.store.memory import InMemoryLightningStore

    from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter
    from agentlightning.contrib.adapter.agentos.adapter import AUDIT_ROLLOUT_METADATA_KEY
    from agentlightning.contrib.adapter.agentos.shipper import ship_files
    from agentlightning.contrib.kernel.agentos import ActionContext, GovernanceKernel, SQLPolicy

    async def scenario():
        store = InMemoryLightningStore(thread_safe=True)
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        files = []
        for host in RUNNER_HOSTS:
            preparing = await store.start_rollout(input={"host": host})  # its attempt is `preparing`
            path = tmp_path / f"worker-0@{host}-1.db"
            kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
            context = ActionContext(
                rollout_id=preparing.rollout_id, attempt_id=preparing.attempt.attempt_id, agent_id=f"w@{host}"
            )
            kernel.check("database_query", {"query": "DROP TABLE users"}, context=context)
            kernel.close()
            files.append(path)
        # Over HTTP each call takes a while, so both shippers read the rollouts before either adds one.
        real_query = store.query_rollouts

        async def query_rollouts_over_a_network(*args: Any, **kwargs: Any) -> Any:
            found = await real_query(*args, **kwargs)
            await asyncio.sleep(0.05)
            return found

        store.query_rollouts = query_rollouts_over_a_network  # type: ignore[method-assign]
        adapters = [FlightRecorderAdapter(path) for path in files]
        try:
            await asyncio.gather(*(adapter.emit_to_store(store) for adapter in adapters))
        finally:
            for adapter in adapters:
                adapter.close()
        again = await ship_files(store, files)
        rollouts = await store.query_rollouts()
        audit = [r for r in rollouts if (r.metadata or {}).get(AUDIT_ROLLOUT_METADATA_KEY)]
        span_ids = [s.span_id for r in rollouts for s in await store.query_spans(r.rollout_id)]
        return audit, again, span_ids

    audit, again, span_ids = asyncio.run(scenario())
    assert len(span_ids) == len(set(span_ids)) == 2
    assert sum(again.values()) == 0
    # Both were created (nothing orders two shippers on two hosts); the earliest holds both records.
    assert len(audit) == 2
