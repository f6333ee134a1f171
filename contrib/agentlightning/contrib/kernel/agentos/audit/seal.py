"""What Agent OS's FlightRecorder does not do, in one place: a keyed seal on every record, a signed
chain head, and the one verifier that recomputes everything.

The FlightRecorder stays the store of record, in its own format: an ``audit_log`` table whose
rows carry an unkeyed SHA-256 chain (``entry_hash``/``previous_hash``) and a ``content_hash``.
Anyone who can write the file can recompute those, so on their own they only detect accidental
damage. With a key (:func:`load_audit_key`: ``AGENTOS_AUDIT_KEY`` or ``AGENTOS_AUDIT_KEY_FILE``,
never stored in the audit file) the kernel's writer adds, in the same transaction as the rows:

* a **seal** per record: ``HMAC-SHA256(key, every column of the row as stored)``, kept in the
  row's ``metadata`` column (which Agent OS never writes), as
  ``{"agentos_seal": {"v": 1, "key_id": ..., "mac": ...}}``;
* a **signed head**: one row of the table ``agentos_audit_head`` naming the number of records,
  the last record's id and chain hash and the first sealed record, with an HMAC over them, so
  cutting records off the end is detected too.

:func:`verify_rows` (and :func:`verify_file` over a recorder file) recomputes every content hash
and entry hash, checks every link, that the chain starts at its first record, that each
governance envelope agrees with the row's verdict, and, given the key, every seal and the head;
given a keyring of hosts' public keys (:mod:`.signing`), the host-signed head and every key
rotation, so a host cannot pass off records as another host's.

>>> key = AuditKey(b"k" * 32)
>>> row = {"id": 1, "trace_id": "t", "timestamp": "2026-01-01T00:00:00+00:00", "agent_id": "a", "tool_name": "x",
...        "tool_args": None, "input_prompt": None, "policy_verdict": "allowed", "violation_reason": None,
...        "result": None, "execution_time_ms": None, "metadata": None, "previous_hash": None}
>>> row["entry_hash"] = entry_hash(row); row["content_hash"] = content_hash(row)
>>> verify_rows([row])["valid"], verify_rows([row])["sealed"]
(True, False)
>>> row["metadata"] = seal_metadata(row, key)
>>> result = verify_rows([row], key=key, head=sign_head(key, records=1, last_id=1, last_entry_hash=row["entry_hash"],
...                                                        sealed_from=1))
>>> result["valid"], result["sealed"], result["assurance"]
(True, True, 'keyed')
>>> row["result"] = "edited"; row["content_hash"] = content_hash(row)     # rehashed, but not resealed
>>> verify_rows([row], key=key)["error"]
'record 1: seal does not match the record: edited by someone without the audit key'
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import stat
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Union

from agent_os import FlightRecorder

from .record import prebuilt_encoder
from .signing import (
    HOST_HEAD_TABLE,
    KeyHistory,
    Keyring,
    load_keyring,
    read_host_head,
    rotation_of,
)

__all__ = [
    "KEY_ENV",
    "KEY_FILE_ENV",
    "MIN_KEY_BYTES",
    "HEAD_TABLE",
    "AuditKey",
    "AuditKeyError",
    "load_audit_key",
    "content_hash",
    "entry_hash",
    "record_seal",
    "seal_metadata",
    "sign_head",
    "read_head",
    "head_problem",
    "verify_rows",
    "verify_file",
    "UNKEYED_WARNING",
    "SIGNED_ONLY_WARNING",
]

#: The audit key itself (at least :data:`MIN_KEY_BYTES` bytes of text, e.g. 64 hex digits).
KEY_ENV = "AGENTOS_AUDIT_KEY"
#: A file holding the audit key (its bytes, a trailing newline ignored); readable by the owner only.
KEY_FILE_ENV = "AGENTOS_AUDIT_KEY_FILE"
MIN_KEY_BYTES = 32
#: The table of the signed chain head, next to Agent OS's ``audit_log`` in the same file.
HEAD_TABLE = "agentos_audit_head"
SEAL_KEY = "agentos_seal"
SEAL_VERSION = 1
#: The columns of Agent OS 3.7's ``audit_log`` table, in table order.
RECORD_COLUMNS = (
    "id",
    "trace_id",
    "timestamp",
    "agent_id",
    "tool_name",
    "tool_args",
    "input_prompt",
    "policy_verdict",
    "violation_reason",
    "result",
    "execution_time_ms",
    "metadata",
    "entry_hash",
    "previous_hash",
    "content_hash",
)
#: The columns a seal covers, in this order: every column but ``id`` (SQLite assigns it) and
#: ``metadata`` (where the seal itself is kept).
SEALED_COLUMNS = tuple(name for name in RECORD_COLUMNS if name not in ("id", "metadata"))
SIGNED_ONLY_WARNING = (
    "host-signed head, no audit key: the signature binds every record's decision (arguments, governance envelope, "
    "verdict), order and count; the columns written after a record's insert (result, execution_time_ms, "
    f"violation_reason) are covered by the unkeyed content hash only. Set {KEY_ENV} or {KEY_FILE_ENV} as well to "
    "seal them"
)
UNKEYED_WARNING = (
    "no audit key: the hash chain only detects accidental damage; anyone who can write the file can edit a "
    f"record and recompute every hash. Set {KEY_ENV} or {KEY_FILE_ENV} to seal records with a key kept "
    "outside the file"
)
#: ``json.dumps(value, separators=(",", ":"))`` and ``json.dumps(value)``, their encoders built once.
_encode_compact = prebuilt_encoder(json.JSONEncoder(separators=(",", ":")))
_encode = prebuilt_encoder(json.JSONEncoder())
# An uninitialised FlightRecorder: only its pure hash functions are used, so verification follows
# the formula the installed Agent OS writes with.
_HASHER = FlightRecorder.__new__(FlightRecorder)


class AuditKeyError(ValueError):
    """The audit key is missing, too short, unreadable or ambiguous; the message says how to fix it."""


class AuditKey:
    """A secret for sealing audit records. ``key_id`` names it without revealing it.

    >>> AuditKey(b"x" * 32).key_id == AuditKey(b"x" * 32).key_id != AuditKey(b"y" * 32).key_id
    True
    >>> try:
    ...     AuditKey(b"short")
    ... except AuditKeyError as err:
    ...     print(err)
    the audit key is 5 bytes; use at least 32 random bytes, e.g. secrets.token_hex(32)
    """

    __slots__ = ("_keyed", "key_id", "source")

    def __init__(self, secret: Union[bytes, str], source: str = "argument") -> None:
        raw = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if len(raw) < MIN_KEY_BYTES:
            raise AuditKeyError(
                f"the audit key is {len(raw)} bytes; use at least {MIN_KEY_BYTES} random bytes, "
                "e.g. secrets.token_hex(32)"
            )
        # HMAC-SHA256 keyed once (cryptography's HMAC): each MAC continues from a copy of the keyed
        # state, where setting HMAC up for each message costs about as much as hashing the message.
        # Imported here: a kernel without an audit key needs none of it.
        from cryptography.hazmat.primitives.hashes import SHA256
        from cryptography.hazmat.primitives.hmac import HMAC

        self._keyed = HMAC(raw, SHA256())
        self.key_id = self.mac(b"agentos-audit-key-id")[:16]
        self.source = source

    def mac(self, message: bytes) -> str:
        """``hmac.new(key, message, hashlib.sha256).hexdigest()``.

        >>> import hmac, hashlib
        >>> all(AuditKey(secret).mac(b"m") == hmac.new(secret, b"m", hashlib.sha256).hexdigest()
        ...     for secret in (b"k" * 32, b"k" * 64, b"k" * 65, bytes(range(200))))
        True
        """
        keyed = self._keyed.copy()
        keyed.update(message)
        return keyed.finalize().hex()

    def __repr__(self) -> str:
        return f"AuditKey(key_id={self.key_id!r}, source={self.source!r})"


def load_audit_key(
    key: Union[AuditKey, bytes, str, None] = None, *, environ: Optional[Mapping[str, str]] = None
) -> Optional[AuditKey]:
    """``key`` if given, else the key named by the environment (:data:`KEY_ENV` or
    :data:`KEY_FILE_ENV`), else None (records are then unsealed).

    >>> load_audit_key(environ={}) is None
    True
    >>> load_audit_key(environ={KEY_ENV: "0" * 64}).source
    'AGENTOS_AUDIT_KEY'
    """
    if isinstance(key, AuditKey):
        return key
    if key is not None:
        return AuditKey(key)
    env = os.environ if environ is None else environ
    text, path = env.get(KEY_ENV) or None, env.get(KEY_FILE_ENV) or None
    if text and path:
        raise AuditKeyError(f"both {KEY_ENV} and {KEY_FILE_ENV} are set; set only one")
    if text:
        return AuditKey(text.strip(), source=KEY_ENV)
    if path is None:
        return None
    try:
        info = os.stat(path)
        with open(path, "rb") as handle:
            raw = handle.read().rstrip(b"\r\n")
    except OSError as err:
        raise AuditKeyError(f"cannot read the audit key file {path!r} named by {KEY_FILE_ENV}: {err}") from err
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise AuditKeyError(
            f"the audit key file {path!r} is readable by others (mode {stat.filemode(info.st_mode)}); "
            f"run: chmod 600 {path}"
        )
    try:
        return AuditKey(raw, source=f"{KEY_FILE_ENV}={path}")
    except AuditKeyError as err:
        raise AuditKeyError(f"{path!r}: {err}") from None


# ---------------------------------------------------------------------------------- hashes and seals
def content_hash(row: Mapping[str, Any]) -> str:
    """Agent OS's content hash of ``row`` (what ``verify_integrity`` checks), recomputed."""
    return _HASHER._compute_content_hash(
        row["trace_id"],
        row["timestamp"],
        row["agent_id"],
        row["tool_name"],
        row["tool_args"],
        row["policy_verdict"],
        violation_reason=row["violation_reason"],
        result=row["result"],
        execution_time_ms=row["execution_time_ms"],
    )


def entry_hash(row: Mapping[str, Any]) -> str:
    """Agent OS's chain hash of ``row`` (fixed at insert; Agent OS never checks it), recomputed."""
    data = f"{row['trace_id']}:{row['timestamp']}:{row['agent_id']}:{row['tool_name']}:{row['tool_args']}:pending"
    return _HASHER._compute_hash(data, row["previous_hash"])


def hashed_part(row: Mapping[str, Any]) -> bytes:
    """What both of Agent OS's hashes of ``row`` begin with (after the previous hash, in the chain
    hash): the writer encodes it once for both. :func:`entry_hash_of` and :func:`content_hash_of`
    are :func:`entry_hash` and :func:`content_hash` from it (the verifier uses Agent OS's own
    functions, so a writer that drifted from them writes records that fail verification).

    >>> row = {"trace_id": "t", "timestamp": "s", "agent_id": "a", "tool_name": "x", "tool_args": "{}",
    ...        "policy_verdict": "allowed", "violation_reason": None, "result": None, "execution_time_ms": None,
    ...        "previous_hash": None}
    >>> part = hashed_part(row)
    >>> entry_hash_of(None, part) == entry_hash(row), content_hash_of(part, row) == content_hash(row)
    (True, True)
    """
    return f"{row['trace_id']}:{row['timestamp']}:{row['agent_id']}:{row['tool_name']}:{row['tool_args']}".encode()


def entry_hash_of(previous_hash: Optional[str], part: bytes) -> str:
    """:func:`entry_hash` of the row whose :func:`hashed_part` is ``part``, chained to ``previous_hash``."""
    return hashlib.sha256(b"%s:%s:pending" % ((previous_hash or "genesis").encode(), part)).hexdigest()


def content_hash_of(part: bytes, row: Mapping[str, Any]) -> str:
    """:func:`content_hash` of ``row``, whose :func:`hashed_part` is ``part``."""
    tail = f":{row['policy_verdict']}:{row['violation_reason']}:{row['result']}:{row['execution_time_ms']}"
    return hashlib.sha256(part + tail.encode()).hexdigest()


def record_seal(row: Mapping[str, Any], key: AuditKey) -> str:
    """The HMAC of every sealed column of ``row``, as stored."""
    message = _encode_compact([SEAL_VERSION] + [row.get(name) for name in SEALED_COLUMNS])
    return key.mac(message.encode("utf-8", "surrogatepass"))


def seal_metadata(row: Mapping[str, Any], key: AuditKey) -> str:
    """The ``metadata`` column of a sealed row."""
    return _encode({SEAL_KEY: {"v": SEAL_VERSION, "key_id": key.key_id, "mac": record_seal(row, key)}})


def _seal_of(row: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    raw = row.get("metadata")
    if not raw:
        return None
    try:
        seal = json.loads(raw).get(SEAL_KEY)
    except (ValueError, AttributeError):
        return None
    return seal if isinstance(seal, dict) else None


def _head_message(records: int, last_id: int, last_entry_hash: str, sealed_from: int) -> bytes:
    return _encode(["head", SEAL_VERSION, records, last_id, last_entry_hash, sealed_from]).encode()


def sign_head(key: AuditKey, *, records: int, last_id: int, last_entry_hash: str, sealed_from: int) -> Dict[str, Any]:
    """The signed chain head: how many records, the last one, and the first sealed one."""
    return {
        "records": records,
        "last_id": last_id,
        "last_entry_hash": last_entry_hash,
        "sealed_from": sealed_from,
        "key_id": key.key_id,
        "mac": key.mac(_head_message(records, last_id, last_entry_hash, sealed_from)),
    }


HEAD_COLUMNS = ("records", "last_id", "last_entry_hash", "sealed_from", "key_id", "mac")
HEAD_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {HEAD_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), records INTEGER NOT NULL, "
    "last_id INTEGER NOT NULL, last_entry_hash TEXT NOT NULL, sealed_from INTEGER NOT NULL, key_id TEXT NOT NULL, "
    "mac TEXT NOT NULL)"
)
HEAD_UPSERT = f"INSERT OR REPLACE INTO {HEAD_TABLE} (id, {', '.join(HEAD_COLUMNS)}) VALUES (1, ?, ?, ?, ?, ?, ?)"


def read_head(conn: sqlite3.Connection) -> Optional[Dict[str, Any]]:
    """The signed head stored in the file of ``conn`` (None if the file has none)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (HEAD_TABLE,)).fetchone()
    if not exists:
        return None
    row = conn.execute(f"SELECT {', '.join(HEAD_COLUMNS)} FROM {HEAD_TABLE} WHERE id = 1").fetchone()
    return None if row is None else dict(zip(HEAD_COLUMNS, row))


# ---------------------------------------------------------------------------------- the verifier
#: Row verdicts that agree with each envelope verdict (a blocked decision is a blocked row, and
#: only a blocked decision is).
_ROW_VERDICTS = {
    "blocked": frozenset({"blocked"}),
    "allowed": frozenset({"allowed", "error", "pending"}),
    "modified": frozenset({"allowed", "error", "pending"}),
    "warned": frozenset({"allowed", "error", "pending"}),
}


def _envelope_verdict(row: Mapping[str, Any]) -> Optional[str]:
    try:
        decoded = json.loads(row.get("tool_args") or "null")
    except ValueError:
        return None
    envelope = decoded.get("agentos") if isinstance(decoded, dict) else None
    verdict = envelope.get("verdict") if isinstance(envelope, dict) else None
    return verdict if isinstance(verdict, str) else None


def _row_problem(row: Mapping[str, Any], previous: Optional[Mapping[str, Any]]) -> Optional[str]:
    record_id = row.get("id")
    if previous is None:
        if record_id != 1 or row.get("previous_hash") is not None:
            return (
                f"the chain does not start at its first record (first row has id {record_id}"
                f"{', and links to an earlier one' if row.get('previous_hash') is not None else ''}): "
                "records were removed from the start"
            )
    else:
        if not isinstance(record_id, int) or record_id <= previous["id"]:
            return f"record {record_id}: records out of order: id {record_id} after id {previous['id']}"
        if record_id != previous["id"] + 1:
            return f"record {record_id}: record(s) {previous['id'] + 1}..{record_id - 1} missing from the trail"
        if row.get("previous_hash") != previous.get("entry_hash"):
            return f"Hash chain broken at entry {record_id}: previous_hash does not match entry {previous['id']}"
    return _hash_problem(row)


def verify_rows(
    rows: Iterable[Mapping[str, Any]],
    *,
    key: Optional[AuditKey] = None,
    head: Optional[Mapping[str, Any]] = None,
    expected_head: Optional[str] = None,
    require_complete: bool = True,
    require_head: bool = True,
    keyring: Optional[Keyring] = None,
    host_head: Optional[Mapping[str, Any]] = None,
    host: Optional[str] = None,
) -> Dict[str, Any]:
    """Recompute everything over ``rows`` (FlightRecorder rows, in id order).

    Checks each row's content hash and entry hash (recomputed), its link to the previous row,
    that the first row is the chain's first (``require_complete``), that a governance envelope's
    verdict agrees with the row's, and with ``key`` every seal from the first sealed record on
    and the signed ``head`` (the file's; its absence is an error once records are sealed).
    ``expected_head`` is a chain hash kept elsewhere; the last row must have it. An export has
    no signed head (``require_head=False``): its end is anchored by ``expected_head`` only.

    With a ``keyring`` (:class:`.signing.Keyring`), the ``host_head`` (the file's
    host-signed head; its absence is an error unless ``require_head=False``) must be signed by a
    key the keyring registers to the host the head names (or by the key the file's last rotation
    record handed over to), must name the file's last record and count, and must name ``host``
    when given; every key rotation record must be signed by the key it retires. The result then
    has ``signed`` (True when the head checked out), ``signed_by`` (host and key id) and
    ``rotations``.

    Returns ``valid``, ``total_entries``, ``head`` (last chain hash), ``sealed`` (True only if a
    key checked every record and the head), ``unsealed_records``, ``assurance`` (``"keyed"`` or
    ``"unkeyed"``), ``warning`` (what the result does not prove) and, when invalid, ``error`` and
    ``first_tampered_id``.
    """
    total = unsealed = gaps = 0
    previous: Optional[Dict[str, Any]] = None
    first_sealed: Optional[int] = None
    sealed_from = head.get("sealed_from") if (key is not None and head is not None) else None
    history = KeyHistory(keyring) if keyring is not None else None
    rotations = 0

    def invalid(record_id: Any, error: str) -> Dict[str, Any]:
        return {
            "valid": False,
            "total_entries": total,
            "first_tampered_id": record_id,
            "error": error,
            "sealed": False,
            "signed": False,
            "assurance": "keyed" if key is not None else "unkeyed",
        }

    if key is not None and head is not None:
        problem = head_problem(head, key)
        if problem:
            return invalid(None, problem)
    for raw in rows:
        row = dict(raw)
        total += 1
        if not require_complete and (previous is None or row.get("id") != previous["id"] + 1):
            gaps += previous is not None and isinstance(row.get("id"), int) and row["id"] > previous["id"]
            problem = _hash_problem(row)  # a partial trail: no predecessor to link to here
        else:
            problem = _row_problem(row, previous)
        if problem:
            return invalid(row.get("id"), problem)
        rotation = rotation_of(row)
        if rotation is not None:
            rotations += 1
            problem = history.problem(row, rotation) if history is not None else None
            if problem:
                return invalid(row.get("id"), problem)
        seal = _seal_of(row)
        if seal is None:
            unsealed += 1
            if key is not None and (first_sealed is not None or (sealed_from is not None and row["id"] >= sealed_from)):
                return invalid(
                    row["id"],
                    f"record {row['id']}: the record has no seal although records before it are sealed: "
                    "added or rewritten by someone without the audit key",
                )
        else:
            first_sealed = row["id"] if first_sealed is None else first_sealed
            if key is not None:
                if seal.get("key_id") != key.key_id:
                    return invalid(
                        row["id"],
                        f"record {row['id']}: sealed with another key (key id {seal.get('key_id')}, "
                        f"this key's id is {key.key_id})",
                    )
                if not hmac.compare_digest(record_seal(row, key), str(seal.get("mac"))):
                    return invalid(
                        row["id"],
                        f"record {row['id']}: seal does not match the record: edited by someone without the audit key",
                    )
        previous = row
    last_hash = previous.get("entry_hash") if previous else None
    if expected_head is not None and last_hash != expected_head:
        return invalid(
            previous["id"] if previous else None,
            "the last record is not the expected chain head: records were removed from the end (or added)",
        )
    sealed = False
    if key is not None and first_sealed is not None:
        if head is None and not require_head:
            pass
        elif head is None:
            return invalid(
                None,
                f"records are sealed but the signed head ({HEAD_TABLE}) is missing: the end of the "
                "chain cannot be checked, and may have been cut",
            )
        elif previous is None or head["last_id"] != previous["id"] or head["last_entry_hash"] != last_hash:
            return invalid(
                previous["id"] if previous else None,
                f"the signed head names record {head['last_id']} as the last, but the file ends at record "
                f"{previous['id'] if previous else None}: records were removed from the end (or added after it)",
            )
        elif head["records"] != total:
            return invalid(None, f"the signed head counts {head['records']} records, the file holds {total}")
        sealed = unsealed == 0
    elif key is not None and head is not None:
        return invalid(None, "the file has a signed head but no sealed record: seals were removed")
    signed = False
    if history is not None and (host_head is not None or (require_head and total > 0)):
        problem = _host_head_problem(history, host_head, host, previous, total)
        if problem:
            return invalid(previous["id"] if previous else None, problem)
        signed = True
    result: Dict[str, Any] = {
        "valid": True,
        "total_entries": total,
        "head": last_hash,
        "last_id": previous["id"] if previous else 0,
        "sealed": sealed,
        "signed": signed,
        "unsealed_records": unsealed,
        "gaps": gaps,
        "assurance": "keyed" if key is not None else "unkeyed",
    }
    if host_head is not None:
        result["signed_by"] = {
            "host": host_head.get("host"),
            "key_id": host_head.get("key_id"),
            "signed_from": host_head.get("signed_from"),
            "checked": signed,
        }
    if history is not None:
        result["rotations"] = list(history.rotations)
    if key is None and signed:
        result["warning"] = SIGNED_ONLY_WARNING
    elif key is None:
        result["warning"] = UNKEYED_WARNING + (
            " (this file's records are sealed: pass the key to check them)" if first_sealed is not None else ""
        )
    elif unsealed:
        result["warning"] = (
            f"{unsealed} record(s) were written before records were sealed (an older file): those only "
            "detect accidental damage"
        )
    return result


def _host_head_problem(
    history: KeyHistory,
    host_head: Optional[Mapping[str, Any]],
    host: Optional[str],
    last: Optional[Mapping[str, Any]],
    total: int,
) -> Optional[str]:
    """What is wrong with the file's host-signed head, after the walk through its rows."""
    if host_head is None:
        return (
            f"the file has no host-signed head ({HOST_HEAD_TABLE}): it was written without a signing key (set "
            "AGENTOS_AUDIT_SIGNING_KEY_FILE on the host that writes it), or the head was removed"
        )
    problem = history.head_problem(host_head)
    if problem:
        return problem
    if host is not None and host_head.get("host") != host:
        return (
            f"the file is signed by host {host_head.get('host')!r}, not by host {host!r} whose records it claims "
            "to hold"
        )
    last_id, last_hash = (last["id"], last.get("entry_hash")) if last else (None, None)
    if (host_head.get("last_id"), host_head.get("last_entry_hash")) != (last_id, last_hash):
        return (
            f"the host-signed head names record {host_head.get('last_id')} as the last, but the file ends at record "
            f"{last_id}: records were removed from the end (or added after it)"
        )
    if host_head.get("records") != total:
        return f"the host-signed head counts {host_head.get('records')} records, the file holds {total}"
    return None


def _hash_problem(row: Mapping[str, Any]) -> Optional[str]:
    """The checks of a row that need no predecessor (an export that starts mid-chain)."""
    record_id = row.get("id")
    if not row.get("content_hash"):
        return f"Content hash missing at entry {record_id}: field tampering detected"
    if content_hash(row) != row["content_hash"]:
        return f"Content hash mismatch at entry {record_id}: field tampering detected"
    if not row.get("entry_hash") or entry_hash(row) != row["entry_hash"]:
        return f"Entry hash mismatch at entry {record_id}: the recorded action or its place in the chain was edited"
    decided = _envelope_verdict(row)
    if decided in _ROW_VERDICTS and row.get("policy_verdict") not in _ROW_VERDICTS[decided]:
        return (
            f"record {record_id}: the row says {row.get('policy_verdict')!r} but the decision recorded with it was "
            f"{decided!r}: the verdict was edited"
        )
    return None


def iter_file_rows(conn: sqlite3.Connection, chunk_size: int = 2000) -> Iterator[Dict[str, Any]]:
    """Every ``audit_log`` row of ``conn``'s file, in id order, read in chunks."""
    last = 0
    while True:
        cursor = conn.execute("SELECT * FROM audit_log WHERE id > ? ORDER BY id LIMIT ?", (last, chunk_size))
        names = [d[0] for d in cursor.description]
        chunk = cursor.fetchall()
        if not chunk:
            return
        for values in chunk:
            yield dict(zip(names, values))
        last = chunk[-1][0]


def _unreadable(error: str) -> Dict[str, Any]:
    """The verifier's result for a file it could not read at all."""
    return {"valid": False, "total_entries": 0, "first_tampered_id": None, "sealed": False, "error": error}


def verify_file(
    path: Union[str, Path],
    *,
    key: Union[AuditKey, bytes, str, None] = None,
    expected_head: Optional[str] = None,
    keyring: Union[Keyring, str, Path, None] = None,
    host: Optional[str] = None,
) -> Dict[str, Any]:
    """:func:`verify_rows` over a FlightRecorder file, opened read-only, with its signed heads.

    ``key`` defaults to the environment's (:func:`load_audit_key`), ``keyring`` to the keyring
    file named by ``AGENTOS_AUDIT_KEYRING`` (:func:`.signing.load_keyring`); ``host`` is
    the host the file must be signed by.
    """
    audit_key = load_audit_key(key)
    host_keyring = load_keyring(keyring)
    source = Path(path)
    if not source.is_file():
        return _unreadable(f"the audit file {str(source)!r} does not exist (deleted or moved?)")
    try:
        conn = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        return _unreadable(f"cannot open the audit file {str(source)!r}: {err}")
    try:
        conn.execute("BEGIN")  # one snapshot: the head and the rows as of the same moment, while a writer goes on
        head = read_head(conn)
        result = verify_rows(
            iter_file_rows(conn),
            key=audit_key,
            head=head,
            expected_head=expected_head,
            keyring=host_keyring,
            host_head=read_host_head(conn),
            host=host,
        )
    except sqlite3.Error as err:
        return _unreadable(f"cannot read the audit file {str(source)!r}: {err}")
    finally:
        conn.close()
    result["path"] = str(source)
    return result


def head_problem(head: Mapping[str, Any], key: AuditKey) -> Optional[str]:
    """What is wrong with a stored signed head under ``key`` (None if it is genuine)."""
    if head.get("key_id") != key.key_id:
        return f"the head was signed with another key (key id {head.get('key_id')}, this key's id is {key.key_id})"
    expected = key.mac(_head_message(head["records"], head["last_id"], head["last_entry_hash"], head["sealed_from"]))
    if not hmac.compare_digest(expected, str(head.get("mac"))):
        return "the signed head does not match its signature: the head was edited"
    return None
