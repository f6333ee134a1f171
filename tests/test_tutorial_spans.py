"""The reference tutorial's sections 6.2 (``LightningSpan``) and 6.5 (streaming spans), with only the imports changed.

6.2 builds a ``LightningSpan`` by hand and serialises it with ``to_dict()`` and ``to_json()``;
6.5 streams the emitter's spans while records are written and forwards ``span.to_dict()``.
Both run against a real kernel and its FlightRecorder file.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest

from agentlightning.types import Span

from agentlightning.contrib.adapter.agentos import FlightRecorderEmitter, LightningSpan
from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy


def test_section_6_2_a_lightning_span_built_by_hand_serialises():
    # The tutorial's block, as written (the import is ours).
    span = LightningSpan(
        span_id="entry-001",
        trace_id="agentos-agent-42",
        name="agent_os.policy_check",
        start_time=datetime.now(timezone.utc),
        end_time=datetime.now(timezone.utc),
        attributes={
            "agent_os.entry_type": "policy_check",
            "agent_os.agent_id": "agent-42",
            "agent_os.policy_name": "SQLPolicy",
            "agent_os.policy_result": "denied",
            "agent_os.policy_violated": True,
        },
        events=[],
    )
    span_dict = span.to_dict()
    span_json = span.to_json()

    assert isinstance(span, Span)  # agentlightning's own span type: a LightningStore takes it
    assert span_dict["span_id"] == "entry-001" and span_dict["trace_id"] == "agentos-agent-42"
    assert span_dict["attributes"]["agent_os.policy_violated"] is True
    assert isinstance(span_dict["start_time"], float) and span_dict["start_time"] <= span_dict["end_time"]
    assert json.loads(span_json) == span_dict
    assert LightningSpan.model_validate_json(span_json) == span


def test_section_6_2_a_naive_datetime_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"start_time: a datetime without a time zone.*timezone\.utc"):
        LightningSpan(span_id="s", trace_id="t", name="n", start_time=datetime(2026, 1, 1), attributes={})


def test_section_6_5_stream_yields_spans_that_serialise_while_records_arrive(tmp_path):
    path = tmp_path / "audit.db"
    kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=path)
    kernel.check("database_query", {"query": "SELECT 1"})
    emitter = FlightRecorderEmitter(path)
    forwarded = []

    async def monitor():
        # The tutorial's loop, forwarding to a list instead of an OpenTelemetry exporter.
        async for span in emitter.stream():
            print(f"{span.name}: {span.attributes}")
            forwarded.append(span.to_dict())

    async def main():
        task = asyncio.create_task(monitor())
        await asyncio.sleep(0.3)
        kernel.check("database_query", {"query": "DROP TABLE users"})  # written while the stream runs
        for _ in range(100):
            if len(forwarded) >= 2:
                break
            await asyncio.sleep(0.1)
        emitter.stop()
        await asyncio.wait_for(task, 10)

    asyncio.run(main())
    kernel.close()
    assert len(forwarded) == 2
    assert [d["attributes"]["agent_os.entry_type"] for d in forwarded] == ["tool_call", "policy_check"]
    assert forwarded[1]["attributes"]["agent_os.policy_name"] == "SQLPolicy"
    assert json.loads(json.dumps(forwarded)) == forwarded  # plain JSON values, ready for any exporter
