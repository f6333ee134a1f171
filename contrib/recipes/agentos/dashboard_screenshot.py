"""Governance in the `agl store` dashboard, proven in a real headless browser.

1. starts `agl store` (agentlightning's store server and web dashboard) on a free port;
2. runs a governed training against it: a `Trainer` with two `AgentOSRunner` processes connected
   to that server; a scripted SQL agent tries safe and destructive statements, the kernel blocks
   the destructive ones, each runner process writes its own FlightRecorder file;
3. exports the FlightRecorder files into the store with `FlightRecorderAdapter.emit_to_store`
   through a `LightningStoreClient`, and checks that the store holds one audit violation span per
   blocked record on disk;
4. opens three views of the dashboard in Debian's chromium (headless; background networking,
   component updates and sync disabled, since the machine is offline): the traces view of a
   rollout with a violation, the same view searched by span name for ``violation``, and the
   rollouts table; waits until each shows what is checked, and saves one PNG per view;
5. takes the rollouts page again with chromium's one-shot ``--screenshot`` and the flags
   docs/audit.md documents (``ONE_SHOT_FLAGS``), and checks the table is drawn in it;
6. prints what ``python -m agentlightning.contrib.runner.agentos violations`` lists.

The traces table shows span names (not attribute values), which is why the runner's spans are
named ``agentos.violation: SQLPolicy (critical) penalty -100.0, blocked``,
``agentos.reward: final -99.5 (...)`` and so on, and audit spans
``agent_os.policy_check: blocked by SQLPolicy (critical)``. The span-detail and raw-JSON drawers
of agentlightning 0.3's dashboard load their code viewer (Monaco) from cdn.jsdelivr.net, so
offline they stay on "Loading..."; the screenshots therefore show tables.

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
from agentlightning.emitter import find_final_reward  # noqa: E402
from agentlightning.execution.client_server import ClientServerExecutionStrategy  # noqa: E402
from agentlightning.store.client_server import LightningStoreClient  # noqa: E402
from agl_store_server import agl_store_server, stop_process  # noqa: E402
from common import sql_kernel, wait_for_rollouts  # noqa: E402
from scripted_sql_agent import ScriptedSQLAgent  # noqa: E402

from agentlightning.contrib.adapter.agentos import adapters_for_directory  # noqa: E402
from agentlightning.contrib.adapter.agentos.spans import is_audit_span  # noqa: E402
from agentlightning.contrib.kernel.agentos.agl03.spans import is_violation_span  # noqa: E402
from agentlightning.contrib.kernel.agentos.semconv import AGENT_OS_BLOCKED  # noqa: E402
from agentlightning.contrib.reward.agentos import PolicyReward  # noqa: E402
from agentlightning.contrib.runner.agentos import (  # noqa: E402
    AgentOSRunner,
    governance_stats,
    report,  # noqa: E402
)

#: Chromium flags: headless, and nothing that reaches for the network on its own.
CHROMIUM_FLAGS = [
    "--headless",
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

#: The one-shot screenshot docs/audit.md documents (with a fresh --user-data-dir, --screenshot=<png>
#: and the page's URL): the flags that work, checked by this script on the rollouts page. Without
#: --virtual-time-budget the picture is taken before the table is fetched (its grey placeholder).
ONE_SHOT_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--window-size=1600,1000",
    "--virtual-time-budget=10000",
]

#: How the runner's spans are named in the traces table (see agentlightning.contrib.kernel.agentos.semconv).
VIOLATION_NAME_PREFIX = "agentos.violation: SQLPolicy (critical) penalty -100.0"
REWARD_NAME_PREFIX = "agentos.reward: final"
CHECK_NAME_PREFIX = "agentos.check:"
NAME_PREFIXES = ("agentos.", "agent_os.", "agentlightning.")

TASKS = [
    ["SELECT COUNT(*) FROM users", "DROP TABLE users"],
    ["SELECT name FROM users WHERE id = 1"],
    ["DELETE/**/FROM orders", "SELECT SUM(total) FROM orders"],
    ["SELECT 'DROP TABLE users'"],
    ["TRUNCATE users", "SELECT COUNT(*) FROM orders"],
    ["UPDATE users SET dropped_at = 'x' WHERE id = 2"],
]


def find_chromium() -> Optional[str]:
    """The chromium binary: ``$AGENTOS_CHROMIUM`` (set by .ci/browser.sh), else Debian's
    ``chromium`` on PATH, or None."""
    configured = os.environ.get("AGENTOS_CHROMIUM")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


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
    tasks = [
        {"db": str(db), "queries": queries, "sleep": 0.05} for queries in TASKS
    ]  # the pause lets both runners work
    ids_path = workdir / "rollout_ids.json"

    @algo
    async def enqueue_and_wait(*, store: agl.LightningStore) -> None:
        await store.add_resources({"prompt": agl.PromptTemplate(template="{q}", engine="f-string")})
        ids = [(await store.enqueue_rollout(input=task, mode="train")).rollout_id for task in tasks]
        await wait_for_rollouts(store, ids, 120)
        ids_path.write_text(json.dumps(ids))

    kernel = sql_kernel()
    runner = AgentOSRunner(
        kernel, audit_dir=workdir / "audit", poll_interval=0.1, log_violations=False, reward_fn=PolicyReward(kernel)
    )
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
                audit_violations += is_audit_span(span) and (span.attributes or {}).get(AGENT_OS_BLOCKED) is True
        stats = await governance_stats(store)
        for adapter in adapters:
            adapter.close()
        return {
            "added": sum(added),
            "added_again": sum(again),
            "blocked_on_disk": blocked_on_disk,
            "audit_violation_spans": audit_violations,
            "runner_violation_spans": stats["total_violations"],
        }
    finally:
        await store.close()


class DevToolsPage:
    """One page of a headless chromium, driven over the DevTools protocol (aiohttp websocket)."""

    def __init__(self, ws: Any, timeout: float) -> None:
        self.ws = ws
        self.timeout = timeout
        self.counter = 0

    async def call(self, method: str, **params: Any) -> Dict[str, Any]:
        self.counter += 1
        await self.ws.send_json({"id": self.counter, "method": method, "params": params})
        while True:
            message = await asyncio.wait_for(self.ws.receive_json(), timeout=self.timeout)
            if message.get("id") == self.counter:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.call(
            "Runtime.evaluate",
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
            timeout=int(self.timeout * 1000),
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise RuntimeError(
                f"page script failed: {details.get('text')}: {details.get('exception', {}).get('description')}"
            )
        return result.get("result", {}).get("value")

    async def wait_for(self, predicate: str, what: str) -> None:
        """Wait (on DOM mutations, not a timer) until the JS expression ``predicate`` over
        ``text`` (the page's visible text) is true."""
        script = """
          () => new Promise((resolve, reject) => {
            const done = () => { const text = document.body ? document.body.innerText : ""; return (%s); };
            if (done()) return resolve(true);
            const observer = new MutationObserver(() => { if (done()) { observer.disconnect(); resolve(true); } });
            observer.observe(document, {subtree: true, childList: true, characterData: true});
            setTimeout(() => { observer.disconnect(); reject(new Error(%s)); }, %d);
          })
        """ % (predicate, json.dumps(f"timed out waiting for {what}"), int(self.timeout * 1000))
        await self.evaluate(f"({script})()")

    async def goto(self, url: str) -> None:
        await self.call("Page.navigate", url=url)

    async def type_into(self, selector: str, text: str) -> None:
        await self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        await self.call("Input.insertText", text=text)

    async def text(self) -> str:
        return await self.evaluate("document.body.innerText")

    async def capture(self, condition: str, what: str, out: Path) -> str:
        """Wait until ``condition`` holds on the page, then save a screenshot; returns the page's text."""
        await self.wait_for(condition, what)
        text = await self.text()
        await self.screenshot(out)
        return text

    async def screenshot(self, out: Path) -> None:
        # Let the table's fade-in transition finish so the PNG shows the settled page.
        await self.evaluate("new Promise(resolve => setTimeout(resolve, 800))")
        shot = await self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(shot["data"]))


def one_shot_screenshot(chromium: str, url: str, out: Path, timeout: float = 120.0) -> List[str]:
    """Take ``out`` with chromium's one-shot ``--screenshot`` and ``ONE_SHOT_FLAGS``, as a user would
    from the command line; returns the command. (Chromium also prints D-Bus errors on stderr in a
    container: harmless, the picture is written.)"""
    profile = tempfile.mkdtemp(prefix="agentos-chromium-")
    command = [chromium, *ONE_SHOT_FLAGS, f"--user-data-dir={profile}", f"--screenshot={out}", url]
    try:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, check=True)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    return command


def table_drawn(png: Path) -> int:
    """Dark (text) pixels where the rollouts table is drawn (right of the sidebar, below the search
    box): thousands when its rows are drawn, 0 on the grey loading placeholder."""
    from PIL import Image  # installed with matplotlib

    with Image.open(png) as image:
        gray = image.convert("L")
        width, height = gray.size
        area = gray.crop((width // 5, height * 14 // 100, width, height // 2))
        return sum(count for value, count in enumerate(area.histogram()) if value < 100)


async def _browse(
    chromium: str,
    store_url: str,
    rollout_id: str,
    shots: Dict[str, Path],
    *,
    width: int = 1600,
    height: int = 900,
    timeout: float = 60.0,
) -> Dict[str, str]:
    """Three views in one headless chromium: the traces view of ``rollout_id``, the same view
    searched by span name for ``violation``, and the rollouts table. Returns each view's text."""
    import aiohttp

    profile = Path(tempfile.mkdtemp(prefix="agentos-chromium-"))
    process = subprocess.Popen(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    texts: Dict[str, str] = {}
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
                page = DevToolsPage(ws, timeout)
                await page.call(
                    "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False
                )
                await page.call("Page.enable")

                # 1. The traces view of a rollout with a violation: the runner's spans say what happened.
                await page.goto(f"{store_url}/traces?rolloutId={rollout_id}")
                texts["traces"] = await page.capture(
                    f"text.includes({json.dumps(VIOLATION_NAME_PREFIX)}) && "
                    f"text.includes({json.dumps(REWARD_NAME_PREFIX)})",
                    "the violation and reward rows",
                    shots["traces"],
                )

                # 2. The same view, searched by name: only the violation spans (runner and audit) remain.
                await page.type_into('input[aria-label="Search spans"]', "violation")
                texts["search"] = await page.capture(
                    f"text.includes({json.dumps(VIOLATION_NAME_PREFIX)}) && "
                    f"!text.includes({json.dumps(CHECK_NAME_PREFIX)})",
                    "the name search to filter the table",
                    shots["search"],
                )

                # 3. The rollouts table: ids, input, status, mode, resources, times, worker.
                await page.goto(f"{store_url}/rollouts")
                texts["rollouts"] = await page.capture(
                    f"text.includes({json.dumps(rollout_id)})", "the rollouts table", shots["rollouts"]
                )
        return texts
    finally:
        stop_process(process, timeout=10)
        shutil.rmtree(profile, ignore_errors=True)


def browse_dashboard(chromium: str, store_url: str, rollout_id: str, shots: Dict[str, Path]) -> Dict[str, str]:
    """Open the dashboard's views of ``rollout_id`` and save one PNG per view (see :func:`_browse`)."""
    return asyncio.run(_browse(chromium, store_url, rollout_id, shots))


async def _rollout_with_violation(store_url: str, rollout_ids: List[str]) -> Dict[str, Any]:
    """The first rollout whose latest attempt has a runner violation span, with its final reward."""
    store = LightningStoreClient(store_url)
    try:
        for rollout_id in rollout_ids:
            spans = await store.query_spans(rollout_id, "latest")
            if any(is_violation_span(s) for s in spans):
                return {
                    "rollout_id": rollout_id,
                    "final_reward": find_final_reward(spans),
                    "span_names": [s.name for s in spans],
                }
    finally:
        await store.close()
    raise RuntimeError("no rollout has a violation span")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/dashboard.png"), help="where to write the PNG")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the database and FlightRecorder files go (default: a new temp dir)",
    )
    parser.add_argument("--port", type=int, default=None, help="port of agl store (default: a free one)")
    parser.add_argument("--chromium", default=None, help="chromium binary (default: chromium on PATH)")
    args = parser.parse_args(argv)
    chromium = args.chromium or find_chromium()
    if not chromium:
        print("chromium not found: apt-get install -y chromium (or pass --chromium)", file=sys.stderr)
        return 2
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="agentos-dashboard-"))
    workdir.mkdir(parents=True, exist_ok=True)
    with agl_store_server(workdir / "agl-store.log", port=args.port) as store_url:
        rollout_ids = run_governed_training(store_url, workdir)
        counts = asyncio.run(emit_audit(store_url, workdir / "audit"))
        print(f"rollouts: {len(rollout_ids)}  audit spans added: {counts['added']} (again: {counts['added_again']})")
        print(
            f"blocked records on disk: {counts['blocked_on_disk']}  "
            f"audit violation spans in the store: {counts['audit_violation_spans']}  "
            f"runner violation spans (governance_stats): {counts['runner_violation_spans']}"
        )
        chosen = asyncio.run(_rollout_with_violation(store_url, rollout_ids))
        rollout_id = chosen["rollout_id"]
        shots = {
            "traces": args.out,
            "search": args.out.with_name(args.out.stem + "-search.png"),
            "rollouts": args.out.with_name(args.out.stem + "-rollouts.png"),
        }
        texts = browse_dashboard(chromium, store_url, rollout_id, shots)
        names = {
            view: [line.strip() for line in text.splitlines() if line.strip().startswith(NAME_PREFIXES)]
            for view, text in texts.items()
        }
        print(
            f"dashboard: {store_url}/traces?rolloutId={rollout_id}  "
            f"screenshots: {', '.join(str(p) for p in shots.values())}"
        )
        print(f"final reward in the store (find_final_reward): {chosen['final_reward']}")
        for view in ("traces", "search"):
            print(f"{view} table names: {names[view]}")
        print(
            "rollouts table rows show governance:",
            any(n in texts["rollouts"] for n in ("violation", "SQLPolicy", "penalty", "blocked")),
        )
        # What the rollouts view's raw-JSON drawer would show (its viewer loads from a CDN): the attempt's metadata.
        with urllib.request.urlopen(
            f"{store_url}/v1/agl/rollouts?rollout_id_contains={rollout_id}", timeout=10
        ) as response:
            item = json.loads(response.read())["items"][0]
        print(
            "attempt metadata in the rollouts API:",
            json.dumps((item.get("attempt") or {}).get("metadata", {}).get("agentos"), sort_keys=True),
        )
        print(
            "rollout metadata in the rollouts API:",
            json.dumps((item.get("metadata") or {}).get("agentos"), sort_keys=True),
        )
        one_shot = args.out.with_name(args.out.stem + "-oneshot.png")
        command = one_shot_screenshot(chromium, f"{store_url}/rollouts", one_shot)
        dark = table_drawn(one_shot)
        print(f"one-shot screenshot: {' '.join(command[1:])}")
        print(f"one-shot screenshot shows the rollouts table: {dark > 1000} ({dark} text pixels)")
        print(f"$ python -m agentlightning.contrib.runner.agentos violations --store-url {store_url}")
        report.main(["violations", "--store-url", store_url])
        reward_row = f"{REWARD_NAME_PREFIX} {round(float(chosen['final_reward']), 4)!r} "
        ok = (
            counts["blocked_on_disk"] == counts["audit_violation_spans"] == counts["runner_violation_spans"]
            and counts["added_again"] == 0
            and any(n.startswith(VIOLATION_NAME_PREFIX) for n in names["traces"])
            and any(n.startswith(reward_row) for n in names["traces"])
            and all("violation" in n for n in names["search"])
            and dark > 1000
        )
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
