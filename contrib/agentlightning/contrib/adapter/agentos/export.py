"""Audit-trail files: atomic JSON / JSON Lines export, and proof that an export was not edited.

Each exported entry is the span as a dict (``Span.model_dump(mode="json")``) plus one key,
``"agent_os_record"``: the FlightRecorder row exactly as stored (hashes included). That row is
what makes the file verifiable on its own: :func:`verify_export` recomputes, with Agent OS's own
hash functions, each record's content hash (as ``FlightRecorder.verify_integrity`` does), its
chain hash and the link to the previous record, and rebuilds every span from its record to catch
an edited span. Pass ``against=`` the recorder file to also prove the export matches the file.

Files are written to a temporary file next to the target and renamed into place, so a failure
(unwritable directory, a corrupt record half-way through) leaves no partial file behind.

>>> import os, tempfile
>>> from agentlightning.contrib.kernel.agentos import GovernanceKernel, SQLPolicy
>>> from agentlightning.contrib.adapter.agentos import FlightRecorderAdapter
>>> tmp = tempfile.mkdtemp()
>>> kernel = GovernanceKernel([SQLPolicy(deny=["DROP"])], recorder=os.path.join(tmp, "audit.db"))
>>> _ = kernel.check("database_query", {"query": "DROP TABLE t"}); kernel.close()
>>> FlightRecorderAdapter(os.path.join(tmp, "audit.db")).export_to_file(os.path.join(tmp, "trail.json"))
1
>>> verify_export(os.path.join(tmp, "trail.json"))["valid"]
True
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from agentlightning.types import Span

from agentlightning.contrib.kernel.agentos.audit.reader import (
    AuditError,
    AuditRecord,
    RecorderLike,
    RecorderReader,
    parse_record,
)
from agentlightning.contrib.kernel.agentos.audit.seal import AuditKey, load_audit_key, verify_file, verify_rows
from agentlightning.contrib.kernel.agentos.audit.trail import file_path
from agentlightning.contrib.kernel.agentos.semconv import AGENT_OS_RECORDER, AGENT_OS_SIGNAL_TYPE, AGENT_OS_UNVERIFIED

from .spans import record_to_span

__all__ = [
    "ExportError",
    "RECORD_KEY",
    "export_format",
    "write_export",
    "read_export",
    "verify_records",
    "verify_export",
]

#: The key of the raw FlightRecorder row in each exported span dict.
RECORD_KEY = "agent_os_record"
PathLike = Union[str, Path]


class ExportError(AuditError):
    """The export file cannot be written or read."""


def export_format(path: PathLike, format: Optional[str] = None) -> str:
    """``"json"`` (one JSON array) or ``"jsonl"`` (one span per line): explicit, or from the suffix
    (``.jsonl``/``.ndjson`` mean JSON Lines).

    >>> export_format("trail.jsonl"), export_format("trail.json"), export_format("x", "jsonl")
    ('jsonl', 'json', 'jsonl')
    """
    if format is None:
        return "jsonl" if Path(path).suffix.lower() in (".jsonl", ".ndjson") else "json"
    if format not in ("json", "jsonl"):
        raise ValueError(f"format must be 'json' or 'jsonl', got {format!r}")
    return format


def _entry(span: Span, record: AuditRecord) -> Dict[str, Any]:
    data = span.model_dump(mode="json")
    data[RECORD_KEY] = record.row()
    return data


def _target(path: PathLike) -> Path:
    return file_path(path, "export path", "audit.json", ExportError)


def write_export(path: PathLike, entries: Iterable[Tuple[Span, AuditRecord]], *, format: Optional[str] = None) -> int:
    """Write ``(span, record)`` pairs to ``path`` atomically; returns how many were written.

    Anything raised while writing (including by the ``entries`` iterator) removes the temporary
    file and leaves an existing file at ``path`` untouched.
    """
    fmt = export_format(path, format)
    target = _target(path)
    try:
        fd, tmp_name = tempfile.mkstemp(dir=str(target.parent), prefix=f".{target.name}.", suffix=".tmp")
    except OSError as err:
        raise ExportError(f"cannot write export file {str(target)!r}: {err}") from err
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            if fmt == "json":
                out.write("[")
            for span, record in entries:
                text = json.dumps(_entry(span, record), ensure_ascii=False, separators=(",", ":"))
                if fmt == "json":
                    out.write(("\n" if count == 0 else ",\n") + text)
                else:
                    out.write(text + "\n")
                count += 1
            if fmt == "json":
                out.write("\n]\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp_name, target)
    except BaseException as err:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise ExportError(f"cannot write export file {str(target)!r}: {err}") from err
        raise
    return count


#: The first bytes of every SQLite database file (a FlightRecorder file is one).
_SQLITE_HEADER = b"SQLite format 3\x00"


def read_export(path: PathLike) -> Iterator[Dict[str, Any]]:
    """The entries of an export file (JSON array or JSON Lines), one dict at a time for JSON Lines."""
    source = Path(path)
    if not source.is_file():
        raise ExportError(f"export file {str(source)!r} does not exist")
    with open(source, "rb") as raw:
        header = raw.read(len(_SQLITE_HEADER))
    if header == _SQLITE_HEADER:
        raise ExportError(
            f"{str(source)!r} is a FlightRecorder database, not an export: verify the recorder file itself with "
            f"verify_file({str(source)!r}) (from agentlightning.contrib.kernel.agentos.audit.seal) or "
            f"FlightRecorderAdapter({str(source)!r}).verify_integrity(); verify_export reads what export_to_file wrote"
        )
    with open(source, "r", encoding="utf-8") as handle:
        first = handle.read(1)
        while first and first.isspace():
            first = handle.read(1)
        handle.seek(0)
        try:
            if first == "[":
                data = json.load(handle)
                if not isinstance(data, list):
                    raise ExportError(f"{str(source)!r}: expected a JSON array of spans")
                yield from data
            else:
                for number, line in enumerate(handle, 1):
                    if line.strip():
                        try:
                            yield json.loads(line)
                        except ValueError as err:
                            raise ExportError(f"{str(source)!r} line {number}: not JSON ({err})") from None
        except ValueError as err:
            if isinstance(err, AuditError):
                raise
            raise ExportError(f"{str(source)!r} is not a JSON audit export ({err})") from None


def _invalid(total: int, record_id: Any, error: str) -> Dict[str, Any]:
    return {"valid": False, "total_entries": total, "first_tampered_id": record_id, "error": error}


def verify_records(
    records: Iterable[AuditRecord], *, require_complete: bool = True, key: Union[AuditKey, bytes, str, None] = None
) -> Dict[str, Any]:
    """The kernel's one verifier (``audit.seal.verify_rows``) over ``records`` (in id order):
    every content and entry hash recomputed, links, the first record (``require_complete``),
    envelope verdicts and, with ``key`` (default: the environment's), every seal. An export has
    no signed head: anchor its end with ``expected_head`` or ``against`` (:func:`verify_export`).
    """
    return verify_rows(
        (record.row() for record in records),
        key=load_audit_key(key),
        require_complete=require_complete,
        require_head=False,
    )


def _records_of_export(
    path: PathLike, problems: List[Dict[str, Any]], *, trace_id_prefix: Optional[str]
) -> Iterator[AuditRecord]:
    for index, entry in enumerate(read_export(path)):
        if not isinstance(entry, dict) or not isinstance(entry.get(RECORD_KEY), dict):
            raise ExportError(
                f"{str(path)!r} entry {index}: no {RECORD_KEY!r} object; not written by this adapter's export_to_file"
            )
        attributes = entry.get("attributes") or {}
        record = parse_record(entry[RECORD_KEY], source=str(attributes.get(AGENT_OS_RECORDER, path)), strict=False)
        prefix = trace_id_prefix
        if prefix is None:
            trace_id = str(entry.get("trace_id", ""))
            suffix = f"-{record.agent_id}"
            prefix = trace_id[: -len(suffix)] if trace_id.endswith(suffix) else "agentos"
        expected = record_to_span(
            record,
            rollout_id=entry.get("rollout_id"),
            attempt_id=entry.get("attempt_id"),
            sequence_id=entry.get("sequence_id"),
            trace_id_prefix=prefix,
            include_signals=AGENT_OS_SIGNAL_TYPE in attributes,
            readable_names=":" in str(entry.get("name", "")),
        ).model_dump(mode="json")
        unverified = attributes.get(AGENT_OS_UNVERIFIED)
        if unverified is not None and not problems:
            problems.append(
                _invalid(
                    index + 1,
                    record.record_id,
                    f"exported with force=True from a file that failed verification: {unverified}",
                )
            )
        for key in ("name", "span_id", "trace_id", "attributes", "status", "start_time", "end_time"):
            if expected.get(key) != entry.get(key) and not problems:
                problems.append(
                    _invalid(
                        index + 1,
                        record.record_id,
                        f"span {key!r} of record {record.record_id} does not match its record: the span was edited",
                    )
                )
        yield record


def verify_export(
    path: PathLike,
    *,
    against: Optional[RecorderLike] = None,
    require_complete: bool = True,
    expected_head: Optional[str] = None,
    key: Union[AuditKey, bytes, str, None] = None,
) -> Dict[str, Any]:
    """Prove that an export written by ``export_to_file`` was not edited.

    The records go through the kernel's one verifier (:func:`verify_records`; with ``key``, or
    the environment's, every seal too). ``against`` is verified the same way, signed head
    included, before its records are compared.

    Checks every record's hashes and chain links (:func:`verify_records`), that every span still
    matches its record, that the last record is ``expected_head`` when given (an anchor kept
    elsewhere, e.g. ``adapter.chain_head()`` at export time; catches a truncated tail), and with
    ``against`` (the recorder or its file) that each exported record is the file's record with the
    same id. Returns a dict with ``valid`` (bool) and, when invalid, ``error`` and
    ``first_tampered_id``.
    """
    problems: List[Dict[str, Any]] = []
    audit_key = load_audit_key(key)
    records = list(_records_of_export(path, problems, trace_id_prefix=None))
    result = verify_records(records, require_complete=require_complete, key=audit_key)
    if not result["valid"]:
        return result
    if problems:
        return problems[0]
    if expected_head is not None and result["head"] != expected_head:
        return _invalid(
            len(records),
            records[-1].record_id if records else None,
            "the last exported record is not the expected chain head: records were removed from the end",
        )
    if against is not None:
        with RecorderReader(against, strict=False) as reader:
            reader.flush()
            source = verify_file(reader.path, key=audit_key)
            if not source["valid"]:
                return _invalid(
                    len(records),
                    source.get("first_tampered_id"),
                    f"the recorder file {str(reader.path)!r} fails verification: {source['error']}",
                )
            on_disk = {r.record_id: r for r in reader.records()}
        updated = []
        for record in records:
            original = on_disk.get(record.record_id)
            if original is None or original.entry_hash != record.entry_hash:
                return _invalid(
                    len(records),
                    record.record_id,
                    f"record {record.record_id} differs from the recorder file {str(reader.path)!r}",
                )
            if original.content_hash != record.content_hash:
                # A later outcome (log_success with a result, a pending row finalised) rewrites the
                # row's content hash; both states carry a valid hash over their own fields.
                updated.append(record.record_id)
        result["updated_since_export"] = updated
        if require_complete and records:
            missing = [i for i in on_disk if i <= records[-1].record_id and i not in {r.record_id for r in records}]
            if missing:
                return _invalid(
                    len(records), missing[0], f"record {missing[0]} of the recorder file is missing from the export"
                )
    return result
