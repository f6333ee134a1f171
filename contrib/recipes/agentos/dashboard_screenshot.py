"""Governance in the `agl store` dashboard, proven in a real headless browser.

1. starts `agl store` (agentlightning's store server and web dashboard) on a free port;
2. runs a governed training against it: a `Trainer` with two `AgentOSRunner` processes connected
   to that server; a scripted SQL agent tries safe and destructive statements, the kernel blocks
   the destructive ones, each runner process writes its own FlightRecorder file;
3. exports the FlightRecorder files into the store with `FlightRecorderAdapter.emit_to_store`
   through a `LightningStoreClient`, and checks that the store holds one audit violation span per
   blocked record on disk;
4. opens the dashboard's traces view of a rollout with a violation in Debian's chromium
   (headless; background networking, component updates and sync disabled, since the machine is
   offline), waits until the table shows the violation span, and saves a screenshot.

The traces table shows span names (not attribute values), which is why audit spans carry a
readable name such as ``agent_os.policy_check: blocked by SQLPolicy (critical)``. The span-detail
drawer of agentlightning 0.3's dashboard loads its code viewer (Monaco) from cdn.jsdelivr.net, so
offline it stays on "Loading..."; the screenshot therefore shows the table.

Needs `chromium` (Debian: `apt-get install -y chromium`); drives it over the DevTools protocol
with aiohttp, which agentlightning already depends on (no Playwright, no driver download).

Run:  python contrib/recipes/agentos/dashboard_screenshot.py --out docs/dashboard.png
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before agentlightning is imported
os.environ.setdefault("AGENTOPS_LOGGING_TO_FILE", "False")
os.environ.setdefault("AGENTOPS_LOG_LEVEL", "ERROR")

import agentlightning as agl  # noqa: E402
from agentlightning.algorithm import algo  # noqa: E402
from agentlightning.execution.client_server import ClientServerExecutionStrategy  # noqa: E402
from agentlightning.store.client_server import LightningStoreClient  # noqa: E402

from agentlightning.contrib.adapter.agentos import adapters_for_directory  # noqa: E402
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy  # noqa: E402
from agentlightning.contrib.reward.agentos import PolicyReward  # noqa: E402
from agentlightning.contrib.runner.agentos import ActionBlockedError, AgentOSRunner, governance_stats, governed_tool  # noqa: E402

#: Chromium flags: headless, and nothing that reaches for the network on its own.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--metrics-recording-only",
    "--password-store=basic",
    "--hide-scrollbars",
]

#: How an audit violation span is named in the traces table (see ``span_name``).
VIOLATION_NAME_PREFIX = "agent_os.policy_check: blocked by"

TASKS = [
    ["SELECT COUNT(*) FROM users", "DROP TABLE users"],
    ["SELECT name FROM users WHERE id = 1"],
    ["DELETE/**/FROM orders", "SELECT SUM(total) FROM orders"],
    ["SELECT 'DROP TABLE users'"],
    ["TRUNCATE users", "SELECT COUNT(*) FROM orders"],
    ["UPDATE users SET dropped_at = 'x' WHERE id = 2"],
]


def find_chromium() -> Optional[str]:
    """The chromium binary on PATH (Debian's ``chromium``), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_sql(query: str, db: str) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


class ScriptedSQLAgent(agl.LitAgent):
    """Runs its task's statements through a governed tool; reward = fraction that ran."""

    def rollout(self, task: Dict[str, Any], resources: Any, rollout: Any) -> float:
        run = governed_tool("database_query", _run_sql)
        ran = 0
        for query in task["queries"]:
            try:
                run(query, db=task["db"])
                ran += 1
            except ActionBlockedError:
                pass
        time.sleep(0.05)  # lets both runner processes pick up work
        return ran / len(task["queries"])


def start_agl_store(port: int, log_path: Path) -> subprocess.Popen:
    """``agl store --port <port>`` in the background; returns once it answers ``/v1/agl/health``."""
    agl_bin = Path(sys.executable).with_name("agl")
    command = [str(agl_bin) if agl_bin.exists() else "agl", "store", "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING"]
    log = open(log_path, "w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}/v1/agl/health"
    deadline = time.time() + 90
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"agl store exited with code {process.returncode}; see {log_path}")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return process
        except OSError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"agl store did not answer {url} within 90 s; see {log_path}")


def run_governed_training(store_url: str, workdir: Path, n_runners: int = 2) -> List[str]:
    """A Trainer whose runner processes talk to the ``agl store`` at ``store_url``; returns the rollout ids."""
    db = workdir / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, dropped_at TEXT);"
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL);"
            "INSERT INTO users (name) VALUES ('ada'), ('bob');"
            "INSERT INTO orders (user_id, total) VALUES (1, 10.0), (2, 20.0);"
        )
    tasks = [{"db": str(db), "queries": queries} for queries in TASKS]
    ids_path = workdir / "rollout_ids.json"

    @algo
    async def enqueue_and_wait(*, store: agl.LightningStore) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        ids = [(await store.enqueue_rollout(input=task, mode="train")).rollout_id for task in tasks]
        deadline = time.time() + 120
        while len(await store.wait_for_rollouts(rollout_ids=ids, timeout=0.1)) < len(ids) and time.time() < deadline:
            await asyncio.sleep(0.05)
        ids_path.write_text(json.dumps(ids))

    kernel = GovernanceKernel([SQLPolicy(deny=["DROP", "DELETE", "TRUNCATE"], dialect="sqlite")])
    runner = AgentOSRunner(kernel, audit_dir=workdir / "audit", poll_interval=0.1, log_violations=False, reward_fn=PolicyReward(kernel))
    store = LightningStoreClient(store_url)
    try:
        trainer = agl.Trainer(
            algorithm=enqueue_and_wait,
            runner=runner,
            store=store,
            strategy=ClientServerExecutionStrategy(n_runners=n_runners, managed_store=False),
        )
        trainer.fit(ScriptedSQLAgent())
    finally:
        asyncio.run(store.close())
    return json.loads(ids_path.read_text())


async def emit_audit(store_url: str, audit_dir: Path) -> Dict[str, Any]:
    """Export every FlightRecorder file of ``audit_dir`` into the store; count what landed."""
    store = LightningStoreClient(store_url)
    try:
        adapters = adapters_for_directory(audit_dir)
        added = [await adapter.emit_to_store(store) for adapter in adapters]
        again = [await adapter.emit_to_store(store) for adapter in adapters]
        blocked_on_disk = sum(r.blocked for adapter in adapters for r in adapter.records())
        audit_violations = 0
        for rollout in await store.query_rollouts():
            for span in await store.query_spans(rollout.rollout_id):
                attributes = span.attributes or {}
                audit_violations += attributes.get("agentos.kind") == "audit" and attributes.get("agent_os.blocked") is True
        stats = await governance_stats(store)
        for adapter in adapters:
            adapter.close()
        return {"added": sum(added), "added_again": sum(again), "blocked_on_disk": blocked_on_disk,
                "audit_violation_spans": audit_violations, "runner_violation_spans": stats["total_violations"]}
    finally:
        await store.close()


async def _cdp_screenshot(chromium: str, url: str, out: Path, *, width: int = 1600, height: int = 900, timeout: float = 60.0) -> Dict[str, Any]:
    import aiohttp

    profile = Path(tempfile.mkdtemp(prefix="agentos-chromium-"))
    process = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.time() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"chromium did not start its DevTools endpoint (exit code {process.poll()})")
            await asyncio.sleep(0.1)
        devtools_port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{devtools_port}/json/list") as response:
                pages = [t for t in await response.json() if t.get("type") == "page"]
            async with session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                counter = 0

                async def call(method: str, **params: Any) -> Dict[str, Any]:
                    nonlocal counter
                    counter += 1
                    await ws.send_json({"id": counter, "method": method, "params": params})
                    while True:
                        message = await asyncio.wait_for(ws.receive_json(), timeout=timeout)
                        if message.get("id") == counter:
                            if "error" in message:
                                raise RuntimeError(f"{method}: {message['error']}")
                            return message.get("result", {})

                async def evaluate(expression: str) -> Any:
                    result = await call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True, timeout=int(timeout * 1000))
                    if "exceptionDetails" in result:
                        raise RuntimeError(f"page script failed: {result['exceptionDetails'].get('text')}: {result['exceptionDetails'].get('exception', {}).get('description')}")
                    return result.get("result", {}).get("value")

                await call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
                await call("Page.enable")
                await call("Page.navigate", url=url)
                # Wait (on DOM mutations, not a timer) until the traces table shows an audit violation.
                wait_for = """
                  (text) => new Promise((resolve, reject) => {
                    const done = () => document.body && document.body.innerText.includes(text);
                    if (done()) return resolve(true);
                    const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(true); } });
                    observer.observe(document, {subtree: true, childList: true, characterData: true});
                    setTimeout(() => { observer.disconnect(); reject(new Error('timed out waiting for ' + text)); }, %d);
                  })
                """ % int(timeout * 1000)
                await evaluate(f"({wait_for})({json.dumps(VIOLATION_NAME_PREFIX)})")
                table_text = await evaluate("document.body.innerText")
                # Let the table's fade-in transition finish so the PNG shows the settled page.
                await evaluate("new Promise(resolve => setTimeout(resolve, 800))")
                shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(shot["data"]))
        return {"table_text": table_text}
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot_dashboard(chromium: str, store_url: str, rollout_id: str, out: Path) -> Dict[str, Any]:
    """Open the dashboard's traces view of ``rollout_id`` and save a PNG at ``out``."""
    return asyncio.run(_cdp_screenshot(chromium, f"{store_url}/traces?rolloutId={rollout_id}", out))


async def _rollout_with_violation(store_url: str, rollout_ids: List[str]) -> str:
    store = LightningStoreClient(store_url)
    try:
        for rollout_id in rollout_ids:
            spans = await store.query_spans(rollout_id, "latest")
            if any((s.attributes or {}).get("agent_os.blocked") is True for s in spans):
                return rollout_id
    finally:
        await store.close()
    raise RuntimeError("no rollout has an audit violation span")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/dashboard.png"), help="where to write the PNG")
    parser.add_argument("--workdir", type=Path, default=None, help="where the database and FlightRecorder files go (default: a new temp dir)")
    parser.add_argument("--port", type=int, default=None, help="port of agl store (default: a free one)")
    parser.add_argument("--chromium", default=None, help="chromium binary (default: chromium on PATH)")
    args = parser.parse_args(argv)
    chromium = args.chromium or find_chromium()
    if not chromium:
        print("chromium not found: apt-get install -y chromium (or pass --chromium)", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="agentos-dashboard-"))
    workdir.mkdir(parents=True, exist_ok=True)
    port = args.port or free_port()
    store_url = f"http://127.0.0.1:{port}"
    server = start_agl_store(port, workdir / "agl-store.log")
    try:
        rollout_ids = run_governed_training(store_url, workdir)
        counts = asyncio.run(emit_audit(store_url, workdir / "audit"))
        print(f"rollouts: {len(rollout_ids)}  audit spans added: {counts['added']} (again: {counts['added_again']})")
        print(f"blocked records on disk: {counts['blocked_on_disk']}  audit violation spans in the store: {counts['audit_violation_spans']}  "
              f"runner violation spans (governance_stats): {counts['runner_violation_spans']}")
        rollout_id = asyncio.run(_rollout_with_violation(store_url, rollout_ids))
        page = screenshot_dashboard(chromium, store_url, rollout_id, args.out)
        shown = [line.strip() for line in page["table_text"].splitlines() if line.strip().startswith(("agent_os.", "agentlightning."))]
        print(f"dashboard: {store_url}/traces?rolloutId={rollout_id}  screenshot: {args.out}")
        print("traces table names:", shown)
        ok = counts["blocked_on_disk"] == counts["audit_violation_spans"] == counts["runner_violation_spans"] and counts["added_again"] == 0
        return 0 if ok and VIOLATION_NAME_PREFIX in page["table_text"] else 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    sys.exit(main())
