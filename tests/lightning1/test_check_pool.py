"""The gateway's check pool fails closed: a worker killed mid-check, one that hangs past its deadline, one that
answers nonsense. Each time the response is withheld (the harness gets no tool call), the failure is recorded as a
blocked decision (on the attempt and in the gateway's own trail), every trail file verifies with the key, and the
pool has a new worker (a new process, a new file) for the next response.

The workers are real processes of the real gateway; what goes wrong is done inside a worker by a policy of the
test's own (``python:`` in the configuration), as a bug or an attack in a policy or the kernel would.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import pytest

from agentlightning.contrib.gateway.agentos import DECISION_EVENT
from agentlightning.contrib.kernel.agentos.audit import open_flight_recorder
from agentlightning.contrib.kernel.agentos.audit.record import decision_from_record
from agentlightning.contrib.kernel.agentos.audit.seal import verify_file

from .scripted_model import ScriptedModel

AUDIT_KEY = "c0ffee" * 11
DEADLINE_S = 3.0

#: A policy that, inside the worker process checking it, does to that process what the query says.
MISBEHAVING_POLICY = """
import os, signal, sys, time

from agentlightning.contrib.kernel.agentos import Policy


class Misbehave(Policy):
    name = "Misbehave"

    def evaluate(self, action, context):
        query = str(action.args.get("query", ""))
        if "KILL_ME" in query:
            os.kill(os.getpid(), signal.SIGKILL)
        if "STOP_ME" in query:  # the whole process stops: no thread of it answers again
            os.kill(os.getpid(), signal.SIGSTOP)
        if "SLOW" in query:  # the check takes a second
            time.sleep(1.0)
        if "GARBLE" in query:  # bytes that are no message, on the worker's channel to the gateway (its argv's fd)
            frame = b"\\xff" * 16
            os.write(int(sys.argv[1]), len(frame).to_bytes(8, "big") + frame)
        if "NONSENSE" in query:  # the worker's own reply to this check goes wrong (the worker runs as __main__)
            sys.modules["__main__"].decision_event_data = lambda *args, **kwargs: {"not": "an event"}
        return []


def make():
    return Misbehave()
"""


def call(query: str) -> list:
    return [{"name": "run_sql", "arguments": json.dumps({"query": query})}]


SCRIPT = {
    "kill": call("SELECT 'KILL_ME'"),
    "stop": call("SELECT 'STOP_ME'"),
    "garble": call("SELECT 'GARBLE'"),
    "nonsense": call("SELECT 'NONSENSE'"),
    "read": call("SELECT count(*) FROM users"),
}


@pytest.fixture
def pooled_gateway(start_gateway, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTOS_AUDIT_KEY", AUDIT_KEY)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY_FILE", raising=False)
    policy_file = tmp_path / "misbehave.py"
    policy_file.write_text(MISBEHAVING_POLICY)
    with ScriptedModel(SCRIPT) as model:
        gateway = start_gateway(
            check_processes=2,
            check_deadline_s=DEADLINE_S,
            policy_timeout_s=60.0,  # the kernel's own time-out must not be what fires
            policies=[
                {"python": f"{policy_file}:make"},
                {"sql": {"deny": ["DROP"], "tools": ["run_sql"], "dialect": "sqlite"}},
            ],
        )
        gateway.register_model(model.endpoint)
        yield gateway


def ask(gateway, question: str) -> httpx.Response:
    rollout_id = gateway.new_rollout({"question": question})
    body = {"model": "policy", "messages": [{"role": "user", "content": question}]}
    response = httpx.post(f"{gateway.proxy_url(rollout_id)}/chat/completions", json=body, timeout=60)
    return rollout_id, response


def decision_events(gateway, rollout_id: str) -> list:
    return [e["data"] for e in gateway.events(rollout_id) if e["event_type"] == DECISION_EVENT]


def trail_records(path: Path) -> list:
    return [d["agentos"] for row in open_flight_recorder(path).get_log() if (d := decision_from_record(row))]


def gateway_trail(gateway) -> Path:
    return Path(gateway.app.kernel.audit.recorder.db_path)


@pytest.mark.parametrize(
    "question, fate",
    [
        ("kill", "killed by signal 9"),
        ("stop", "gave no answer within its deadline and was killed"),
        ("garble", "sent a malformed reply"),
        ("nonsense", "(not a governed response) and was killed"),
    ],
)
def test_a_worker_that_fails_mid_check_withholds_the_response_and_the_failure_is_recorded(
    pooled_gateway, question, fate
):
    gateway = pooled_gateway
    pool = gateway.app.checks
    pids_before = {w.process.pid for w in pool._live}
    started = time.monotonic()
    rollout_id, response = ask(gateway, question)
    elapsed = time.monotonic() - started

    assert response.status_code == 502, response.text
    assert "tool_calls" not in response.text and "withheld" in response.json()["error"]
    assert elapsed < DEADLINE_S + 10  # bounded: the deadline, plus this loaded machine's share of the CPU

    (event,) = decision_events(gateway, rollout_id)
    assert event["blocked"] is True and event["source"] == "response"
    assert fate in event["reason"], event["reason"]
    # Recorded by the gateway process itself (the worker could not), in the gateway's own keyed trail.
    recorded = trail_records(gateway_trail(gateway))
    assert [(r["decision_id"], r["verdict"], r["rollout_id"]) for r in recorded] == [
        (event["decision_id"], "blocked", rollout_id)
    ]

    # The pool replaced the worker: the next response is judged by a live worker, the harness gets its call.
    for _ in range(2):  # both workers, whichever the failed one's replacement is
        read_rollout, read = ask(gateway, "read")
        assert read.status_code == 200, read.text
        assert read.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "run_sql"
        assert [e["verdict"] for e in decision_events(gateway, read_rollout)] == ["allowed"]
    pids_after = {w.process.pid for w in pool._live}
    assert len(pids_after) == 2 and len(pids_after - pids_before) == 1
    assert all(w.process.poll() is None for w in pool._live)
    started = time.monotonic()  # the replacement starts while the other worker serves; its file once it is ready
    while not all(w.trail for w in pool._live) and time.monotonic() - started < 120:
        time.sleep(0.1)

    # Every trail verifies with the key: the gateway's, the failed worker's (up to its last commit), the new ones.
    trails = sorted(gateway_trail(gateway).parent.glob("gateway-*.db"))
    assert len(trails) == 4 and set(pool.trails) | {gateway_trail(gateway)} == set(trails)
    for trail in trails:
        result = verify_file(trail, key=AUDIT_KEY)
        # An empty file (the killed worker died before its first commit) has nothing to seal.
        assert result["valid"] and (result["sealed"] or result["total_entries"] == 0), (trail, result)
    allowed_in_workers = [r for t in pool.trails for r in trail_records(t) if r["verdict"] == "allowed"]
    assert len(allowed_in_workers) >= 2  # the two reads, each durable in its worker's file before it was forwarded


def test_checks_run_in_as_many_processes_as_the_gateway_has_cores_by_default(start_gateway, tmp_path):
    gateway = start_gateway()
    cores = len(os.sched_getaffinity(0))
    pool = gateway.app.checks
    if cores == 1:
        assert pool is None  # one core: the checks stay in the gateway's process
        return
    assert pool.processes == cores and len({w.process.pid for w in pool._live}) == cores
    assert os.getpid() not in {w.process.pid for w in pool._live}


def test_one_check_process_keeps_the_checks_in_the_gateway_process(start_gateway):
    assert start_gateway(check_processes=1).app.checks is None


@pytest.mark.parametrize("value", [0, -1, True, "2", 1.5])
def test_a_bad_check_processes_value_is_refused_naming_the_fix(value, tmp_path):
    from agentlightning.contrib.gateway.agentos import GovernanceConfig
    from agentlightning.contrib.kernel.agentos import GovernanceConfigError

    with pytest.raises(GovernanceConfigError, match="check_processes must be an integer >= 1"):
        GovernanceConfig.from_mapping(
            {"recorder_dir": str(tmp_path), "policies": [{"sql": {"deny": ["DROP"]}}], "check_processes": value}
        )


def test_a_check_worker_starts_without_importing_1_0s_server():
    """A worker needs the kernel core and the response reader; 1.0's server (FastAPI, its routes) cost each
    worker about 0.7 s more CPU to start, paid again at every restart."""
    import subprocess
    import sys

    probe = (
        "import sys, agentlightning.contrib.gateway.agentos.check_worker; "
        "print(sorted(m for m in ('agentlightning.server.app', 'fastapi', 'uvicorn') if m in sys.modules))"
    )
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert imported.strip() == "[]"


def test_replies_larger_than_the_channel_buffer_and_more_checks_than_places_arrive_whole(tmp_path, monkeypatch):
    """The gateway reads replies into a buffer (64 KiB to start with): a reply of several megabytes grows it, and
    each check gets its own reply whatever the reads cut; a third check waits for one of the worker's two places."""
    import asyncio

    from agentlightning.contrib.gateway.agentos import GovernanceConfig
    from agentlightning.contrib.gateway.agentos.check_pool import CheckPool
    from agentlightning.contrib.kernel.agentos import ActionContext

    monkeypatch.setenv("AGENTOS_AUDIT_KEY", AUDIT_KEY)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY_FILE", raising=False)
    governance = GovernanceConfig.from_mapping(
        {"recorder_dir": str(tmp_path), "policies": [{"sql": {"deny": ["DROP"], "tools": ["run_sql"]}}]}
    )
    pool = CheckPool(governance, 1, deadline_s=120.0, per_worker=2)
    texts = [f"{i}" * (3_000_000 if i == 1 else 10) for i in range(3)]  # one large reply between two small ones

    def response(i: int) -> dict:
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run_sql", "arguments": call_query(i)}}
        message = {"role": "assistant", "content": texts[i], "tool_calls": [call]}
        return {"id": f"r{i}", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}

    async def judge_all() -> list:
        return await asyncio.gather(
            *(
                pool.govern(response(i), "chat/completions", ActionContext(agent_id="t", rollout_id=f"ro-{i}"), None)
                for i in range(3)
            )
        )

    try:
        results = asyncio.run(judge_all())
    finally:
        pool.close()  # after its loop has ended, as a gateway's close() is
    for i, (governed, events) in enumerate(results):
        message = governed["choices"][0]["message"]
        assert message["content"] == texts[i] and json.loads(message["tool_calls"][0]["function"]["arguments"]) == {
            "query": f"SELECT {i}"
        }
        assert [(e["verdict"], e["tool_call_id"]) for e in events] == [("allowed", f"c{i}")]
    (trail,) = pool.trails
    assert verify_file(trail, key=AUDIT_KEY)["valid"] and len(trail_records(trail)) == 3


def call_query(i: int) -> str:
    return json.dumps({"query": f"SELECT {i}"})


def misbehaving_pool(tmp_path, monkeypatch, processes=1, **options):
    """A check pool of ``processes`` workers whose kernels have the misbehaving policy alone."""
    from agentlightning.contrib.gateway.agentos import GovernanceConfig
    from agentlightning.contrib.gateway.agentos.check_pool import CheckPool

    monkeypatch.setenv("AGENTOS_AUDIT_KEY", AUDIT_KEY)
    monkeypatch.delenv("AGENTOS_AUDIT_KEY_FILE", raising=False)
    policy_file = tmp_path / "misbehave.py"
    policy_file.write_text(MISBEHAVING_POLICY)
    governance = GovernanceConfig.from_mapping(
        {"recorder_dir": str(tmp_path), "policies": [{"python": f"{policy_file}:make"}]}
    )
    return CheckPool(governance, processes, **options)


def pool_judge(pool):
    """``judge(query)``: the pool's check of a model response calling ``run_sql(query)``."""
    from agentlightning.contrib.kernel.agentos import ActionContext

    def judge(query: str, rollout_id: str = "ro-1"):
        arguments = json.dumps({"query": query})
        call = {"id": "c0", "type": "function", "function": {"name": "run_sql", "arguments": arguments}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        response = {"id": "r0", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}]}
        return pool.govern(response, "chat/completions", ActionContext(agent_id="t", rollout_id=rollout_id), None)

    return judge


def cores_of(pid: int) -> set:
    """The cores each thread of process ``pid`` may run on, together."""
    cores = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        cores |= os.sched_getaffinity(int(task))
    return cores


@pytest.fixture
def two_cores():
    """This thread (the gateway's, in these tests) may run on two cores only, as ``taskset -c 0,1`` would make it."""
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("needs two cores")
    os.sched_setaffinity(0, sorted(allowed)[:2])
    yield sorted(allowed)[:2]
    os.sched_setaffinity(0, allowed)


def test_each_worker_runs_on_a_core_of_its_own_and_its_replacement_on_the_same(tmp_path, monkeypatch, two_cores):
    """A worker's threads hand the GIL to one another many times a check; on a core of their own they do not move
    between cores (measured in docs/performance.md: less CPU per check). Two workers on a gateway's two cores take
    one each, every thread of each on its core, and a worker killed mid-check is replaced on the core it left."""
    import asyncio

    pool = misbehaving_pool(tmp_path, monkeypatch, processes=2, deadline_s=60.0)
    judge = pool_judge(pool)
    gateway_cores = two_cores

    async def judge_on_both_kill_one_judge_again() -> tuple:
        await asyncio.gather(judge("SELECT 1", "ro-1"), judge("SELECT 2", "ro-2"))  # one on each worker
        before = {w.process.pid: cores_of(w.process.pid) for w in pool._live}
        with pytest.raises(Exception, match="killed by signal 9"):
            await judge("SELECT 'KILL_ME'")
        while not all(w.trail for w in pool._live):  # the replacement starts; ready once it has opened its file
            await asyncio.sleep(0.1)
        await asyncio.gather(judge("SELECT 3", "ro-1"), judge("SELECT 4", "ro-2"))
        return before, {w.process.pid: cores_of(w.process.pid) for w in pool._live}

    try:
        before, after = asyncio.run(judge_on_both_kill_one_judge_again())
    finally:
        pool.close()
    assert sorted(before.values(), key=min) == [{gateway_cores[0]}, {gateway_cores[1]}], before
    (replacement,) = set(after) - set(before)
    (survivor,) = set(after) & set(before)
    assert after[survivor] == before[survivor] and after[replacement] == set(gateway_cores[:2]) - after[survivor]


def test_a_check_whose_caller_went_away_leaves_its_worker_serving(tmp_path, monkeypatch):
    """A client that disconnects cancels its check while the worker is still judging it: the worker's reply, when
    it comes, is dropped, and the worker (the same process) serves the next check; its place stays taken until then."""
    import asyncio

    pool = misbehaving_pool(tmp_path, monkeypatch, deadline_s=30.0)
    (worker_pid,) = [w.process.pid for w in pool._live]
    judge = pool_judge(pool)

    async def cancel_one_then_judge_another() -> tuple:
        abandoned = asyncio.ensure_future(judge("SELECT 'SLOW'"))
        await asyncio.sleep(0.3)  # the worker is judging it
        abandoned.cancel()
        await asyncio.sleep(1.5)  # its reply has come back by now
        return await judge("SELECT 1")

    try:
        governed, events = asyncio.run(cancel_one_then_judge_another())
        live_pids = [w.process.pid for w in pool._live]
    finally:
        pool.close()
    assert [e["verdict"] for e in events] == ["allowed"]
    assert live_pids == [worker_pid], "the worker was killed for a reply to a check whose caller went away"


def test_a_worker_that_hangs_on_a_check_whose_caller_went_away_is_killed_at_the_deadline(tmp_path, monkeypatch):
    """No one waits for an abandoned check, so the pool keeps its deadline: a worker that has not answered it by then
    is killed and replaced, instead of holding its place (and the checks queued behind it) for ever."""
    import asyncio

    pool = misbehaving_pool(tmp_path, monkeypatch, deadline_s=1.0, per_worker=1)
    (hung,) = [w.process for w in pool._live]
    judge = pool_judge(pool)

    async def abandon_a_check_the_worker_hangs_on() -> None:
        abandoned = asyncio.ensure_future(judge("SELECT 'STOP_ME'"))
        await asyncio.sleep(0.3)
        abandoned.cancel()
        await asyncio.sleep(1.5)  # past the deadline

    try:
        asyncio.run(abandon_a_check_the_worker_hangs_on())
        killed, live = hung.poll() is not None, [w.process for w in pool._live]
    finally:
        pool.close()
    assert killed, "the worker hung on an abandoned check was never killed"
    assert hung not in live and len(live) == 1, "no worker took the hung one's place"


def test_fewer_workers_than_cores_are_left_where_the_system_places_them(tmp_path, monkeypatch, two_cores):
    """Pinned, the workers of two such gateways on one machine would share the first cores while the others idle."""
    pool = misbehaving_pool(tmp_path, monkeypatch, processes=1, deadline_s=60.0)
    try:
        (worker,) = pool._live
        assert cores_of(worker.process.pid) == set(two_cores)
    finally:
        pool.close()
