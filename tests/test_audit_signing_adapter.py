"""The adapter checks host signatures with a keyring before it imports a file into a store: a file
whose head another host signed is refused, a genuine one is imported (and reports who signed)."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3

import pytest

from agentlightning.store.memory import InMemoryLightningStore

from agentlightning.contrib.adapter.agentos import AuditError, FlightRecorderAdapter
from agentlightning.contrib.kernel.agentos import Action, GovernanceKernel, SQLPolicy, governance_context


def test_the_adapter_refuses_a_file_another_host_signed(tmp_path):
    from agentlightning.contrib.kernel.agentos.audit import AuditTrail, open_flight_recorder
    from agentlightning.contrib.kernel.agentos.audit.signing import (
        HOST_HEAD_COLUMNS,
        HOST_HEAD_UPSERT,
        Keyring,
        SigningKey,
        host_head,
    )

    host_a, host_b = SigningKey.generate("runner-a"), SigningKey.generate("runner-b")
    keyring_file = tmp_path / "hosts.keyring"
    keyring_file.write_text(f"{host_a.keyring_line()}\n{host_b.keyring_line()}\n")
    path = tmp_path / "worker-0@runner-a-7.db"
    kernel = GovernanceKernel(
        [SQLPolicy(deny=["DROP"])], recorder=AuditTrail(open_flight_recorder(path), signing_key=host_a)
    )
    with governance_context(agent_id="Worker-0@runner-a-7"):
        for query in ["SELECT 1", "DROP TABLE users"]:
            kernel.check(Action.sql(query))
    kernel.close()

    genuine = FlightRecorderAdapter(path, keyring=str(keyring_file))
    signer = genuine.verify_integrity()["signed_by"]
    assert (signer["host"], signer["key_id"], signer["checked"]) == ("runner-a", host_a.key_id, True)
    assert asyncio.run(genuine.emit_to_store(InMemoryLightningStore())) == 2

    forged = tmp_path / "forged.db"
    shutil.copy(path, forged)
    conn = sqlite3.connect(forged)
    with conn:
        last_id, last_hash = conn.execute("SELECT id, entry_hash FROM audit_log ORDER BY id DESC LIMIT 1").fetchone()
        head = host_head(host_b, records=2, last_id=last_id, last_entry_hash=last_hash, signed_from=1)
        head["host"] = "runner-a"  # host B signs in host A's name
        conn.execute(HOST_HEAD_UPSERT, tuple(head[name] for name in HOST_HEAD_COLUMNS))
    conn.close()
    with pytest.raises(AuditError, match="registered to host 'runner-b'"):
        asyncio.run(
            FlightRecorderAdapter(forged, keyring=Keyring.load(keyring_file)).emit_to_store(InMemoryLightningStore())
        )
