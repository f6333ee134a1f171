"""Per-host signing of audit files: each host signs its chain heads with its own Ed25519 key, and
the verifier checks them against a keyring of public keys, so no host can forge another's records.

The shared audit key (:mod:`.seal`, ``AGENTOS_AUDIT_KEY``) is a secret every host holds: any
of them can seal records in any other host's name. Here each host holds only its own private key
(``AGENTOS_AUDIT_SIGNING_KEY_FILE``: a PEM or raw 32-byte Ed25519 private key, readable by its owner
only, never stored in the audit file); whoever verifies holds only public keys (a keyring file).
Both can be on together: the shared key seals every record, the host key signs the head.

**What is signed.** One signature per commit, over the **host head** (table
``agentos_audit_host_head``, rewritten in the transaction that writes the records): the host's
name, the key id, the number of records, the last record's id and chain hash (``entry_hash``),
and the first record written while signing. A record's chain hash covers its id in the chain
(the previous record's hash), time, agent, tool and ``tool_args``, which holds the action's
arguments and the whole governance envelope (decision id, verdict, violations, rollout and
attempt); the head's signature therefore binds every record's decision, their order and their
number, back to record 1. The columns Agent OS updates after the insert (``result``,
``execution_time_ms``, ``violation_reason``, and for an allowed record whether it ended ``allowed``
or ``error``) are covered by the unkeyed content hash only: with host signing alone, whoever can
write a copy of the file can change an allowed action's result text and recompute that hash
undetected; the decision and the verdict cannot change. The per-record seal of the shared key
covers those columns too. Signing only the head keeps the writer's cost at one signature
(about 30 us) per commit, shared by every record of a group commit, and the verifier's at one
signature check per file (plus one per key rotation).

**Rotation is a recorded event.** :meth:`AuditTrail.rotate_signing_key` writes a record into the
chain (agent ``agentos.audit``, tool ``agentos.audit_key_rotation``) naming the new public key,
signed by the old key over the host, both key ids, the new public key and the chain hash before
it. From that record on, the file's head must be signed by the new key; a head signed by the old
key is rejected. The old key must be in the keyring (it authorises the new one); the new key need
not be, but if the keyring lists it for another host the rotation is rejected.

**The keyring** is a text file, one key a line, ``#`` starting a comment::

    # host        key id            Ed25519 public key (raw 32 bytes, base64)
    runner-a      3f1c0e5a9b7d2e41  mC0r6x...=

A key id is the first 16 hex digits of SHA-256 of the raw public key (checked when the keyring is
read); a key id listed twice is an error. ``python -m agentlightning.contrib.kernel.agentos.audit.signing
keygen --out KEYFILE --host NAME`` writes a private key and prints its keyring line.

>>> a, b = SigningKey.generate("runner-a"), SigningKey.generate("runner-b")
>>> keyring = Keyring.parse(a.keyring_line() + "\\n" + b.keyring_line())
>>> head = host_head(a, records=3, last_id=3, last_entry_hash="ab" * 32, signed_from=1)
>>> host_head_problem(head, keyring) is None
True
>>> forged = dict(host_head(b, records=3, last_id=3, last_entry_hash="ab" * 32, signed_from=1), host="runner-a")
>>> print(host_head_problem(forged, keyring))  # doctest: +ELLIPSIS
the host head names host 'runner-a' but its key ... is registered to host 'runner-b': one host's key ...
>>> print(host_head_problem(head, Keyring.parse(b.keyring_line())))  # doctest: +ELLIPSIS
the host head was signed with key ... (naming host 'runner-a'), which is not in the keyring: an unknown key, ...
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import json
import os
import re
import socket
import sqlite3
import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "SIGNING_KEY_FILE_ENV",
    "KEYRING_ENV",
    "HOST_NAME_ENV",
    "HOST_HEAD_TABLE",
    "ROTATION_AGENT_ID",
    "ROTATION_TOOL_NAME",
    "SigningKey",
    "SigningKeyError",
    "Keyring",
    "KeyringEntry",
    "KeyringError",
    "HeadSigner",
    "host_name",
    "key_id_of",
    "load_signing_key",
    "load_keyring",
    "host_head",
    "host_head_problem",
    "read_host_head",
    "rotation_of",
    "open_head_signer",
    "main",
]

#: A file holding this host's Ed25519 private key (PEM, or its raw 32 bytes); owner-readable only.
SIGNING_KEY_FILE_ENV = "AGENTOS_AUDIT_SIGNING_KEY_FILE"
#: The keyring the verifier uses when none is passed (a file path).
KEYRING_ENV = "AGENTOS_AUDIT_KEYRING"
#: Overrides the system host name (worker names, audit file names, and the host a head names).
HOST_NAME_ENV = "AGENTOS_HOST_NAME"
#: The table of the host-signed chain head, next to Agent OS's ``audit_log`` in the same file.
HOST_HEAD_TABLE = "agentos_audit_host_head"
#: How a key rotation record is named in the FlightRecorder.
ROTATION_AGENT_ID = "agentos.audit"
ROTATION_TOOL_NAME = "agentos.audit_key_rotation"
ROTATION_ARGS_KEY = "audit_key_rotation"
SIGNING_VERSION = 1
RAW_KEY_BYTES = 32

_UNSAFE_HOST = re.compile(r"[^A-Za-z0-9._-]")
_KEYGEN = "python -m agentlightning.contrib.kernel.agentos.audit.signing keygen --out KEYFILE --host NAME"


class SigningKeyError(ValueError):
    """The host's signing key is missing, unreadable, not Ed25519, or readable by others; the
    message says how to fix it."""


class KeyringError(ValueError):
    """The keyring file cannot be read or has a bad line; the message names the line and the fix."""


def host_name(environ: Optional[Mapping[str, str]] = None) -> str:
    """This host's name (``AGENTOS_HOST_NAME``, else the system's), every character outside
    ``[A-Za-z0-9._-]`` replaced by ``_`` (it is used in URL paths and file names).

    >>> host_name({"AGENTOS_HOST_NAME": "gpu node/7"})
    'gpu_node_7'
    """
    env = os.environ if environ is None else environ
    name = env.get(HOST_NAME_ENV) or socket.gethostname() or "unknown-host"
    return _UNSAFE_HOST.sub("_", name)


def key_id_of(public_raw: bytes) -> str:
    """A public key's id: the first 16 hex digits of SHA-256 of its raw 32 bytes."""
    return hashlib.sha256(public_raw).hexdigest()[:16]


_CRYPTO: Optional[SimpleNamespace] = None


def _crypto() -> SimpleNamespace:
    """The parts of ``cryptography`` used here, imported on first use: a kernel that signs nothing
    does not pay for importing them (tens of milliseconds per process)."""
    global _CRYPTO
    if _CRYPTO is None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

        _CRYPTO = SimpleNamespace(
            InvalidSignature=InvalidSignature,
            serialization=serialization,
            Ed25519PrivateKey=Ed25519PrivateKey,
            Ed25519PublicKey=Ed25519PublicKey,
        )
    return _CRYPTO


def _raw_public(public: "Ed25519PublicKey") -> bytes:
    serialization = _crypto().serialization
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class SigningKey:
    """A host's Ed25519 private key and the host it signs for. ``key_id`` names it publicly.

    >>> key = SigningKey.generate("runner-a")
    >>> SigningKey.from_bytes(key.private_pem(), host="runner-a").key_id == key.key_id
    True
    >>> "PRIVATE" in repr(key)
    False
    """

    __slots__ = ("_private", "public_raw", "key_id", "host", "source")

    def __init__(self, private: "Ed25519PrivateKey", host: str, source: str = "argument") -> None:
        if not isinstance(private, _crypto().Ed25519PrivateKey):
            raise SigningKeyError(f"a signing key must be an Ed25519 private key, got {type(private).__name__}")
        if not isinstance(host, str) or not host or _UNSAFE_HOST.search(host):
            raise SigningKeyError(f"the signing host must be a name of [A-Za-z0-9._-], got {host!r}")
        self._private = private
        self.public_raw = _raw_public(private.public_key())
        self.key_id = key_id_of(self.public_raw)
        self.host = host
        self.source = source

    @classmethod
    def generate(cls, host: str) -> "SigningKey":
        return cls(_crypto().Ed25519PrivateKey.generate(), host, source="generated")

    @classmethod
    def from_bytes(cls, data: bytes, *, host: str, source: str = "argument") -> "SigningKey":
        """A key from a PEM (PKCS#8 ``PRIVATE KEY``) or from its raw 32 bytes."""
        crypto = _crypto()
        text = data.strip()
        try:
            if text.startswith(b"-----BEGIN"):
                private = crypto.serialization.load_pem_private_key(text, password=None)
            elif len(data) == RAW_KEY_BYTES:
                private = crypto.Ed25519PrivateKey.from_private_bytes(data)
            else:
                raise SigningKeyError(
                    f"{source}: not an Ed25519 private key (expected a PEM 'PRIVATE KEY' or its raw {RAW_KEY_BYTES} "
                    f"bytes, got {len(data)} bytes); create one with: {_KEYGEN}"
                )
        except (ValueError, TypeError) as err:
            if isinstance(err, SigningKeyError):
                raise
            raise SigningKeyError(f"{source}: cannot read an Ed25519 private key ({err}); create one with: {_KEYGEN}")
        if not isinstance(private, crypto.Ed25519PrivateKey):
            raise SigningKeyError(
                f"{source}: a {type(private).__name__.lstrip('_')} key, not Ed25519; create one with: {_KEYGEN}"
            )
        return cls(private, host, source=source)

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self._private.sign(message)).decode("ascii")

    @property
    def public_key(self) -> str:
        """The raw public key, base64 (as the keyring and a rotation record carry it)."""
        return base64.b64encode(self.public_raw).decode("ascii")

    def keyring_line(self) -> str:
        return f"{self.host} {self.key_id} {self.public_key}"

    def private_pem(self) -> bytes:
        serialization = _crypto().serialization
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    def __repr__(self) -> str:
        return f"SigningKey(host={self.host!r}, key_id={self.key_id!r}, source={self.source!r})"


def load_signing_key(
    key: Union[SigningKey, str, Path, None] = None,
    *,
    host: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Optional[SigningKey]:
    """``key`` if a :class:`SigningKey`; else the key in the file ``key`` names, or the file named by
    :data:`SIGNING_KEY_FILE_ENV`; else None (heads are then not host-signed). The host is ``host``,
    else :func:`host_name`.

    >>> load_signing_key(environ={}) is None
    True
    >>> try:
    ...     load_signing_key(environ={SIGNING_KEY_FILE_ENV: "/nonexistent/host.key"})
    ... except SigningKeyError as err:
    ...     print(err)  # doctest: +ELLIPSIS
    cannot read the signing key file '/nonexistent/host.key' named by ...: No such file or directory; point ...
    """
    if isinstance(key, SigningKey):
        return key
    env = os.environ if environ is None else environ
    if key is not None:
        path, named_by = str(key), "signing_key="
    else:
        path, named_by = env.get(SIGNING_KEY_FILE_ENV) or "", SIGNING_KEY_FILE_ENV
        if not path:
            return None
    try:
        info = os.stat(path)
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise SigningKeyError(
            f"cannot read the signing key file {path!r} named by {named_by}: {err.strerror or err}; point "
            f"{SIGNING_KEY_FILE_ENV} at this host's private key, or create one with: {_KEYGEN}"
        ) from err
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SigningKeyError(
            f"the signing key file {path!r} is readable by others (mode {stat.filemode(info.st_mode)}); "
            f"run: chmod 600 {path}"
        )
    return SigningKey.from_bytes(data, host=host or host_name(env), source=f"{named_by}={path}")


# ---------------------------------------------------------------------------------- the keyring
class KeyringEntry(NamedTuple):
    host: str
    key_id: str
    public: "Ed25519PublicKey"
    public_key: str  # base64 of the raw 32 bytes


def _public_from_base64(text: str) -> Tuple["Ed25519PublicKey", bytes]:
    raw = base64.b64decode(text.encode("ascii"), validate=True)
    if len(raw) != RAW_KEY_BYTES:
        raise ValueError(f"an Ed25519 public key is {RAW_KEY_BYTES} bytes, this one is {len(raw)}")
    return _crypto().Ed25519PublicKey.from_public_bytes(raw), raw


class Keyring:
    """Public keys by key id, each registered to one host.

    >>> a, b = SigningKey.generate("runner-a"), SigningKey.generate("runner-b")
    >>> ring = Keyring.parse(a.keyring_line() + "\\n# a comment\\n" + b.keyring_line())
    >>> ring.get(b.key_id).host, len(ring)
    ('runner-b', 2)
    >>> try:
    ...     Keyring.parse("runner-a 0000000000000000 " + a.public_key)
    ... except KeyringError as err:
    ...     print(err)  # doctest: +ELLIPSIS
    keyring line 1: key id 0000000000000000 is not this public key's (...); copy the line keygen printed
    """

    def __init__(self, entries: Iterable[KeyringEntry] = (), source: str = "keyring") -> None:
        self.source = source
        self._entries: Dict[str, KeyringEntry] = {}
        for entry in entries:
            self._add(entry, where=source)

    def _add(self, entry: KeyringEntry, where: str) -> None:
        known = self._entries.get(entry.key_id)
        if known is not None and known.host != entry.host:
            raise KeyringError(f"{where}: key id {entry.key_id} is listed for {known.host!r} and {entry.host!r}")
        self._entries[entry.key_id] = entry

    @classmethod
    def of(cls, *keys: SigningKey) -> "Keyring":
        """The keyring of these keys' public halves (tests, and a host checking its own files)."""
        return cls(
            KeyringEntry(key.host, key.key_id, _public_from_base64(key.public_key)[0], key.public_key) for key in keys
        )

    @classmethod
    def parse(cls, text: str, source: str = "keyring") -> "Keyring":
        ring = cls(source=source)
        for number, line in enumerate(text.splitlines(), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            where = f"{source} line {number}"
            if len(words) != 3:
                raise KeyringError(
                    f"{where}: expected 'host key_id base64-public-key', got {len(words)} field(s): {line.strip()!r}"
                )
            host, key_id, encoded = words
            if _UNSAFE_HOST.search(host):
                raise KeyringError(f"{where}: host {host!r} has characters outside [A-Za-z0-9._-]")
            try:
                public, raw = _public_from_base64(encoded)
            except (ValueError, binascii.Error) as err:
                raise KeyringError(f"{where}: not an Ed25519 public key in base64 ({err})") from None
            if key_id_of(raw) != key_id:
                raise KeyringError(
                    f"{where}: key id {key_id} is not this public key's ({key_id_of(raw)}); "
                    "copy the line keygen printed"
                )
            ring._add(KeyringEntry(host, key_id, public, encoded), where=where)
        return ring

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Keyring":
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise KeyringError(
                f"cannot read the keyring {str(path)!r}: {err}; a keyring is a text file of "
                f"'host key_id base64-public-key' lines (keygen prints each host's)"
            ) from err
        return cls.parse(text, source=str(path))

    def get(self, key_id: Any) -> Optional[KeyringEntry]:
        return self._entries.get(key_id) if isinstance(key_id, str) else None

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Keyring({self.source!r}, {len(self)} key(s))"


def load_keyring(
    keyring: Union[Keyring, str, Path, None] = None, *, environ: Optional[Mapping[str, str]] = None
) -> Optional[Keyring]:
    """``keyring`` if a :class:`Keyring`, the keyring file it names, else the one named by
    :data:`KEYRING_ENV`, else None (host heads are then reported, not checked)."""
    if isinstance(keyring, Keyring):
        return keyring
    if keyring is not None:
        return Keyring.load(keyring)
    env = os.environ if environ is None else environ
    path = env.get(KEYRING_ENV)
    return Keyring.load(path) if path else None


def _verify(entry: KeyringEntry, message: bytes, signature: Any) -> bool:
    try:
        entry.public.verify(base64.b64decode(str(signature).encode("ascii"), validate=True), message)
    except (_crypto().InvalidSignature, ValueError, binascii.Error):
        return False
    return True


# ---------------------------------------------------------------------------------- the host head
HOST_HEAD_COLUMNS = ("host", "key_id", "records", "last_id", "last_entry_hash", "signed_from", "signature")
HOST_HEAD_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {HOST_HEAD_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), host TEXT NOT NULL, "
    "key_id TEXT NOT NULL, records INTEGER NOT NULL, last_id INTEGER NOT NULL, last_entry_hash TEXT NOT NULL, "
    "signed_from INTEGER NOT NULL, signature TEXT NOT NULL)"
)
HOST_HEAD_UPSERT = (
    f"INSERT OR REPLACE INTO {HOST_HEAD_TABLE} (id, {', '.join(HOST_HEAD_COLUMNS)}) VALUES (1, ?, ?, ?, ?, ?, ?, ?)"
)


def _head_message(head: Mapping[str, Any]) -> bytes:
    return json.dumps(
        ["agentos-host-head", SIGNING_VERSION]
        + [head["host"], head["key_id"], head["records"], head["last_id"], head["last_entry_hash"], head["signed_from"]]
    ).encode()


def host_head(key: SigningKey, *, records: int, last_id: int, last_entry_hash: str, signed_from: int) -> Dict[str, Any]:
    """The host-signed chain head: the host, its key, how many records, the last one."""
    head: Dict[str, Any] = {
        "host": key.host,
        "key_id": key.key_id,
        "records": records,
        "last_id": last_id,
        "last_entry_hash": last_entry_hash,
        "signed_from": signed_from,
    }
    head["signature"] = key.sign(_head_message(head))
    return head


def read_host_head(conn: sqlite3.Connection) -> Optional[Dict[str, Any]]:
    """The host-signed head stored in the file of ``conn`` (None if the file has none)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (HOST_HEAD_TABLE,)
    ).fetchone()
    if not exists:
        return None
    row = conn.execute(f"SELECT {', '.join(HOST_HEAD_COLUMNS)} FROM {HOST_HEAD_TABLE} WHERE id = 1").fetchone()
    return None if row is None else dict(zip(HOST_HEAD_COLUMNS, row))


def host_head_problem(
    head: Mapping[str, Any], keyring: Keyring, *, current_key: Optional[KeyringEntry] = None
) -> Optional[str]:
    """What is wrong with a host head under ``keyring`` (None if genuine). ``current_key`` is the
    key the file's last rotation record handed over to (its public key comes from that record)."""
    key_id = head.get("key_id")
    entry = current_key if current_key is not None and current_key.key_id == key_id else keyring.get(key_id)
    if entry is None:
        return (
            f"the host head was signed with key {key_id} (naming host {head.get('host')!r}), which is not in the "
            f"keyring: an unknown key, or a host not registered ({keyring.source})"
        )
    if entry.host != head.get("host"):
        return (
            f"the host head names host {head.get('host')!r} but its key {key_id} is registered to host "
            f"{entry.host!r}: one host's key cannot sign for another"
        )
    if not _verify(entry, _head_message(head), head.get("signature")):
        return "the host head does not match its signature: the head was edited, or signed by another key"
    return None


# ---------------------------------------------------------------------------------- rotation records
def _rotation_message(host: str, old_key_id: str, new_key_id: str, new_public_key: str, previous_hash: Any) -> bytes:
    return json.dumps(
        ["agentos-key-rotation", SIGNING_VERSION, host, old_key_id, new_key_id, new_public_key, previous_hash]
    ).encode()


def rotation_problem(old: SigningKey, new: Any) -> Optional[str]:
    """Why ``new`` cannot take over from ``old`` (None if it can)."""
    if not isinstance(new, SigningKey):
        return f"the new signing key must be a SigningKey or its file, got {type(new).__name__}"
    if new.host != old.host:
        return f"a rotation keeps the host: the new key is for {new.host!r}, the current one for {old.host!r}"
    if new.key_id == old.key_id:
        return f"the new signing key is the current one ({old.key_id}); generate a new key"
    return None


def rotation_args(old: SigningKey, new: SigningKey, previous_hash: Optional[str]) -> Dict[str, Any]:
    """The ``tool_args`` of the record that hands ``old``'s host over to ``new``, signed by ``old``."""
    problem = rotation_problem(old, new)
    if problem:
        raise SigningKeyError(problem)
    fields = {
        "host": old.host,
        "old_key_id": old.key_id,
        "new_key_id": new.key_id,
        "new_public_key": new.public_key,
        "previous_hash": previous_hash,
    }
    fields["signature"] = old.sign(_rotation_message(**fields))
    return {ROTATION_ARGS_KEY: fields}


def rotation_of(row: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The rotation a record announces (None if it is not a rotation record)."""
    if row.get("agent_id") != ROTATION_AGENT_ID or row.get("tool_name") != ROTATION_TOOL_NAME:
        return None
    try:
        decoded = json.loads(row.get("tool_args") or "null")
    except ValueError:
        return None
    # Only the writer's rotation record holds this key (a decision's tool_args hold the arguments
    # and the envelope), so a decision about a tool of this name is never taken for one.
    if not isinstance(decoded, dict) or ROTATION_ARGS_KEY not in decoded:
        return None
    fields = decoded[ROTATION_ARGS_KEY]
    return fields if isinstance(fields, dict) else {}


class KeyHistory:
    """The verifier's walk through a file's signing keys: rotation records, in chain order."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring
        self.current: Optional[KeyringEntry] = None  # the key the last rotation handed over to
        self.retired: Dict[str, int] = {}  # key id -> the record that retired it
        self.rotations: List[Dict[str, Any]] = []

    def problem(self, row: Mapping[str, Any], fields: Mapping[str, Any]) -> Optional[str]:
        """Check one rotation record and take the new key on (None if genuine)."""
        record_id = row.get("id")
        names = ("host", "old_key_id", "new_key_id", "new_public_key", "previous_hash", "signature")
        if set(fields) != set(names):
            return f"record {record_id}: a key rotation record without the fields {', '.join(names)}"
        old_id, new_id = fields["old_key_id"], fields["new_key_id"]
        if self.current is not None and old_id != self.current.key_id:
            return (
                f"record {record_id}: a key rotation signed by key {old_id}, but the file's signing key is "
                f"{self.current.key_id} since an earlier rotation: only the current key can hand over"
            )
        old = self.current if self.current is not None else self.keyring.get(old_id)
        if old is None:
            return f"record {record_id}: a key rotation from key {old_id}, which is not in the keyring"
        if old.host != fields["host"]:
            return (
                f"record {record_id}: a key rotation naming host {fields['host']!r} from key {old_id}, which is "
                f"registered to host {old.host!r}"
            )
        if fields["previous_hash"] != row.get("previous_hash"):
            return f"record {record_id}: a key rotation record moved from its place in the chain"
        message = _rotation_message(**{name: fields[name] for name in names[:-1]})
        if not _verify(old, message, fields["signature"]):
            return f"record {record_id}: the key rotation does not match the old key's signature"
        try:
            public, raw = _public_from_base64(str(fields["new_public_key"]))
        except (ValueError, binascii.Error) as err:
            return f"record {record_id}: the key rotation's new public key is not an Ed25519 key ({err})"
        if key_id_of(raw) != new_id:
            return f"record {record_id}: the key rotation's new key id {new_id} is not its public key's"
        registered = self.keyring.get(new_id)
        if registered is not None and registered.host != old.host:
            return (
                f"record {record_id}: a key rotation of host {old.host!r} to key {new_id}, which the keyring "
                f"registers to host {registered.host!r}"
            )
        if new_id in self.retired or new_id == old_id:
            return f"record {record_id}: a key rotation back to key {new_id}, which this file already retired"
        self.retired[old_id] = record_id
        self.current = KeyringEntry(old.host, new_id, public, str(fields["new_public_key"]))
        self.rotations.append({"record": record_id, "host": old.host, "old_key_id": old_id, "new_key_id": new_id})
        return None

    def head_problem(self, head: Mapping[str, Any]) -> Optional[str]:
        key_id = head.get("key_id")
        if key_id in self.retired:
            return (
                f"the host head was signed with key {key_id}, which this file retired at record "
                f"{self.retired[key_id]} (rotated to {self.current.key_id if self.current else '?'}): heads after a "
                "rotation are signed by the new key"
            )
        if self.current is not None and key_id != self.current.key_id:
            return (
                f"the host head was signed with key {key_id}, but the file's last rotation hands over to key "
                f"{self.current.key_id}"
            )
        return host_head_problem(head, self.keyring, current_key=self.current)


# ---------------------------------------------------------------------------------- the writer's side
class HeadSigner:
    """What an :class:`~.trail.AuditTrail` needs to sign its heads: the key, the first record it
    signed, and a rotation under way (written in the same commit as its record)."""

    def __init__(self, key: SigningKey, signed_from: int) -> None:
        self.key = key
        self.signed_from = signed_from
        self._next: Optional[SigningKey] = None

    def write_head(self, conn: sqlite3.Connection, *, records: int, last_id: int, last_entry_hash: str) -> None:
        """Sign and store the head (inside the writer's transaction), with the key a rotation in
        this transaction hands over to."""
        key = self._next or self.key
        head = host_head(
            key, records=records, last_id=last_id, last_entry_hash=last_entry_hash, signed_from=self.signed_from
        )
        conn.execute(HOST_HEAD_UPSERT, tuple(head[name] for name in HOST_HEAD_COLUMNS))

    def rotation_args(self, new: SigningKey, previous_hash: Optional[str]) -> Dict[str, Any]:
        """The rotation record's ``tool_args``, signed by the key signing now (a rotation earlier in
        the same transaction hands over first); the heads of this transaction use ``new``."""
        args = rotation_args(self._next or self.key, new, previous_hash)
        self._next = new
        return args

    def settle(self, committed: bool) -> None:
        """After the transaction: the new key stays if it committed, else the old one signs on."""
        if committed and self._next is not None:
            self.key = self._next
        self._next = None


def open_head_signer(
    conn: sqlite3.Connection,
    path: Union[str, Path],
    key: Union[SigningKey, str, Path, None],
    *,
    last_id: int,
    last_entry_hash: Optional[str],
    records: int,
) -> Optional[HeadSigner]:
    """The signer of a trail opening ``path`` (None without a signing key), after checking the
    file may be continued with it: a file signed by another host, by another key, or whose head
    does not match its end is refused, and so is a host-signed file without a key."""
    signing_key = load_signing_key(key)
    stored = read_host_head(conn)
    fix = "keep it as evidence and write to a new file"
    if signing_key is None:
        if stored is not None:
            raise SigningKeyError(
                f"the audit file {str(path)!r} is signed by host {stored['host']!r} (key {stored['key_id']}), but no "
                f"signing key is set: set {SIGNING_KEY_FILE_ENV} to that host's key, or write to a new file"
            )
        return None
    conn.execute(HOST_HEAD_SCHEMA)
    if stored is None:
        return HeadSigner(signing_key, signed_from=last_id + 1)
    problem = None
    if stored["host"] != signing_key.host:
        problem = f"it is signed by host {stored['host']!r}, and this trail signs for host {signing_key.host!r}"
    elif stored["key_id"] != signing_key.key_id:
        problem = (
            f"its head is signed with key {stored['key_id']}, this trail's key is {signing_key.key_id} (a new key "
            "is taken on with AuditTrail.rotate_signing_key while the old one signs)"
        )
    elif host_head_problem(stored, Keyring.of(signing_key)) is not None:
        problem = "its host head does not match its signature"
    elif (stored["last_id"], stored["last_entry_hash"], stored["records"]) != (last_id, last_entry_hash, records):
        problem = (
            f"its host head names record {stored['last_id']} ({stored['records']} records) as the last, but the file "
            f"ends at record {last_id} ({records} records): it was truncated or edited"
        )
    if problem is not None:
        raise SigningKeyError(f"the audit file {str(path)!r} cannot be continued: {problem}; {fix}")
    return HeadSigner(signing_key, signed_from=stored["signed_from"])


# ---------------------------------------------------------------------------------- the command
def _file_host(path: Path) -> Optional[str]:
    """The host a runner's audit file name claims (``worker-<n>@<host>-<pid>.db``), if it has that form."""
    match = re.match(r"^worker-\d+@([A-Za-z0-9._-]+)-\d+\.db$", path.name)
    return match.group(1) if match else None


def main(argv: Optional[List[str]] = None) -> int:
    """``keygen`` a host key; ``verify`` audit files with a keyring (exit 1 if any fails)."""
    from .seal import load_audit_key, verify_file

    parser = argparse.ArgumentParser(
        prog="python -m agentlightning.contrib.kernel.agentos.audit.signing",
        description="Per-host Ed25519 signing of audit files: make a host's key, verify files with a keyring.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    keygen = commands.add_parser("keygen", help="write a new private key (mode 600) and print its keyring line")
    keygen.add_argument("--out", required=True, help="the private key file to create (refuses to overwrite)")
    keygen.add_argument("--host", default=None, help=f"the host it signs for (default: {HOST_NAME_ENV} or hostname)")
    verify = commands.add_parser("verify", help="verify FlightRecorder files (or directories of *.db) with a keyring")
    verify.add_argument("--keyring", default=None, help=f"the keyring file (default: ${KEYRING_ENV})")
    verify.add_argument(
        "--host",
        default=None,
        help="the host every file must be signed by (default: the host a worker-<n>@<host>-<pid>.db name claims)",
    )
    verify.add_argument("--json", action="store_true", help="print each file's result as JSON")
    verify.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    try:
        if args.command == "keygen":
            key = SigningKey.generate(args.host or host_name())
            fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(key.private_pem())
            print(key.keyring_line())
            return 0
        keyring = load_keyring(args.keyring)
        if keyring is None:
            print(f"no keyring: pass --keyring FILE or set {KEYRING_ENV}", file=sys.stderr)
            return 2
        audit_key = load_audit_key()
    except (SigningKeyError, KeyringError, ValueError, OSError) as err:
        print(str(err), file=sys.stderr)
        return 2
    files: List[Path] = []
    for path in map(Path, args.paths):
        files.extend(sorted(path.glob("*.db")) if path.is_dir() else [path])
    failed = 0
    for path in files:
        result = verify_file(path, key=audit_key, keyring=keyring, host=args.host or _file_host(path))
        failed += not result["valid"]
        if args.json:
            print(json.dumps(result, sort_keys=True))
        elif result["valid"] and not result.get("signed"):
            print(f"{path}: valid, {result['total_entries']} records, nothing signed yet (no records)")
        elif result["valid"]:
            signer = result.get("signed_by") or {}
            rotated = f", {len(result['rotations'])} key rotation(s)" if result.get("rotations") else ""
            print(
                f"{path}: valid, {result['total_entries']} records, signed by host {signer.get('host')!r} "
                f"(key {signer.get('key_id')}){rotated}"
            )
        else:
            print(f"{path}: INVALID: {result['error']}")
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main())
