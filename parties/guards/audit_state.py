"""The party auditor's settings (``[audit]`` of ``party.toml``) and its state file.

Settings::

    [audit]
    enabled = true                  # default true
    state = "audit-alice.json"      # default: audit-<name>.json next to party.toml
    [audit.jobs]                    # per job: audited or not (default: every sum-style job on private data)
    "mine.vertical" = true
    secure_sum = true

State file (JSON, mode 0600, rewritten atomically: a fresh ``O_EXCL`` temporary
file, fsync, rename, fsync of the directory)::

    {"format": "ppdm-party-audit/1", "party": "alice",
     "audits": [{"data": "vector", "job": "secure_sum",
                 "sessions": [{"session": "5f3a…", "analyst": "analyst",
                               "parties": ["alice", "bob", "carol"], "admitted": "2026-…Z"}]}]}

Per (data key, job) it lists the admitted sessions whose party sets added
information — each one's set was outside the span of the earlier ones — in
the order they were admitted; a session whose party set lay in that span
revealed nothing new and needs no entry (the decisions depend only on the
span). So the file holds at most one entry per party per (data key, job).

A missing file is an empty state. Anything else that is not a valid state of
*this* party — unreadable, not JSON, another format, another party's file, a
malformed entry, a session that would not have been admitted — stops the
daemon with one line (:class:`AuditStateError`): a state is never reset
silently, since a reset would let the analyst difference new sessions
against the old results. While a daemon runs it holds an exclusive lock
(``flock``) on ``.<state file>.lock``, so two daemons never share one state.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parties.identity.keyfiles import TLSError, private_dir, write_private
from parties.identity.tls import validate_name

__all__ = [
    "STATE_FORMAT",
    "AuditSettings",
    "AuditStateError",
    "AuditedSession",
    "StateLock",
    "load_state",
    "parse_audit",
    "save_state",
]

STATE_FORMAT = "ppdm-party-audit/1"
MAX_STATE_BYTES = 64 << 20
SESSION_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # as parties.runtime.sessions.check_session_id


class AuditStateError(ValueError):
    """An invalid ``[audit]`` table or audit state file: one line naming it."""


@dataclass(frozen=True)
class AuditSettings:
    """``[audit]``: whether to audit, which jobs, where the state lives (``None``: next to party.toml)."""

    enabled: bool = True
    state: Path | None = None
    jobs: Mapping[str, bool] = field(default_factory=dict)  # per job, overriding the default

    def audits(self, job: str, *, private_data: bool, sum_style: bool) -> bool:
        """Is a session of ``job`` audited? Default: iff its result is a sum over the parties' private inputs."""
        if not self.enabled:
            return False
        if job in self.jobs:
            return self.jobs[job]
        return private_data and sum_style


def default_state_path(base: Path, name: str) -> Path:
    return base / f"audit-{name}.json"


def parse_audit(t: Any, *, base: Path, name: str) -> AuditSettings:
    """Validate an ``[audit]`` table (relative ``state`` paths are relative to ``base``)."""
    if t is None:
        return AuditSettings(state=default_state_path(base, name))
    if not isinstance(t, Mapping):
        raise AuditStateError("audit must be a table [audit]")
    extra = sorted(set(t) - {"enabled", "state", "jobs"})
    if extra:
        raise AuditStateError(f"unknown key audit.{extra[0]} (allowed: enabled, jobs, state)")
    enabled = t.get("enabled", True)
    if not isinstance(enabled, bool):
        raise AuditStateError(f"audit.enabled must be true or false, got {enabled!r}")
    state = default_state_path(base, name)
    if "state" in t:
        v = t["state"]
        if not isinstance(v, str) or not v:
            raise AuditStateError(f"audit.state must be a non-empty path, got {v!r}")
        p = Path(os.path.expanduser(v))
        state = p if p.is_absolute() else base / p
    jobs = t.get("jobs", {})
    if not isinstance(jobs, Mapping):
        raise AuditStateError('audit.jobs must be a table of job = true/false, e.g. { "mine.vertical" = true }')
    for j, on in jobs.items():
        if not isinstance(on, bool):
            raise AuditStateError(f"audit.jobs.{j} must be true or false, got {on!r}")
    return AuditSettings(enabled=enabled, state=state, jobs=dict(jobs))


@dataclass(frozen=True)
class AuditedSession:
    """One admitted session as the state file keeps it."""

    session: str  # the analyst's session id
    analyst: str
    parties: tuple[str, ...]
    admitted: str  # UTC time, ISO 8601

    def to_json(self) -> dict:
        return {
            "session": self.session,
            "analyst": self.analyst,
            "parties": list(self.parties),
            "admitted": self.admitted,
        }


Ledgers = dict[tuple[str, str], list[AuditedSession]]


def _bad(path: Path, what: str) -> AuditStateError:
    return AuditStateError(
        f"audit state {path}: {what} — the daemon never resets an audit state; "
        "repair the file or restore it from a backup"
    )


def _session(path: Path, where: str, v: Any, party: str) -> AuditedSession:
    if not isinstance(v, dict) or set(v) != {"session", "analyst", "parties", "admitted"}:
        raise _bad(path, f"{where} must be an object with session, analyst, parties, admitted")
    sid = v["session"]
    if not isinstance(sid, str) or not SESSION_ID.match(sid):
        raise _bad(path, f"{where}.session is not a session id")
    try:
        validate_name(v["analyst"], "analyst name")
        parties = v["parties"]
        if not isinstance(parties, list) or not parties:
            raise _bad(path, f"{where}.parties must be a non-empty list of party names")
        for p in parties:
            validate_name(p, "party name")
    except TLSError as e:
        raise _bad(path, f"{where}: {e}") from None
    if len(set(parties)) != len(parties):
        raise _bad(path, f"{where}.parties names a party twice")
    if party not in parties:
        raise _bad(path, f"{where}: {party!r} is not one of its parties, so it cannot have contributed to it")
    if not isinstance(v["admitted"], str):
        raise _bad(path, f"{where}.admitted must be a time")
    return AuditedSession(sid, v["analyst"], tuple(parties), v["admitted"])


def load_state(path: Path, party: str) -> Ledgers:
    """The sessions of every (data key, job) in the state file of ``party`` (empty if the file does not exist)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise AuditStateError(f"cannot read audit state {path}: {e.strerror or e}") from None
    if len(raw) > MAX_STATE_BYTES:
        raise _bad(path, f"larger than {MAX_STATE_BYTES >> 20} MiB")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise _bad(path, "not valid JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise _bad(path, f"not a party audit state (expected format {STATE_FORMAT!r})")
    if doc.get("party") != party:
        raise _bad(path, f"it is the audit state of party {doc.get('party')!r}, not of {party!r}")
    audits = doc.get("audits")
    if not isinstance(audits, list) or set(doc) != {"format", "party", "audits"}:
        raise _bad(path, "expected exactly the keys format, party, audits (a list)")
    out: Ledgers = {}
    for i, a in enumerate(audits):
        where = f"audits[{i}]"
        if not isinstance(a, dict) or set(a) != {"data", "job", "sessions"}:
            raise _bad(path, f"{where} must be an object with data, job, sessions")
        data, job, sessions = a["data"], a["job"], a["sessions"]
        if not (isinstance(data, str) and data and isinstance(job, str) and job and isinstance(sessions, list)):
            raise _bad(path, f"{where}: data and job must be names, sessions a list")
        if (data, job) in out:
            raise _bad(path, f"{where}: ({data!r}, {job!r}) appears twice")
        out[data, job] = [_session(path, f"{where}.sessions[{k}]", s, party) for k, s in enumerate(sessions)]
    return out


def save_state(path: Path, party: str, ledgers: Mapping[tuple[str, str], Sequence[AuditedSession]]) -> None:
    """Write the state atomically (mode 0600; the rename and the directory are fsynced)."""
    doc = {
        "format": STATE_FORMAT,
        "party": party,
        "audits": [
            {"data": d, "job": j, "sessions": [s.to_json() for s in ss]} for (d, j), ss in sorted(ledgers.items()) if ss
        ],
    }
    data = json.dumps(doc, indent=1).encode() + b"\n"
    try:
        write_private(path, data, overwrite=True)
        fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except (TLSError, OSError) as e:
        raise AuditStateError(f"cannot write audit state {path}: {getattr(e, 'strerror', None) or e}") from None


class StateLock:
    """An exclusive ``flock`` on ``.<state>.lock`` next to the state file, held while the daemon runs.

    ``what`` names the state in errors; ``error`` is the exception raised (one line)."""

    def __init__(self, path: Path, what: str = "audit state", error: type[ValueError] | None = None):
        err = error or AuditStateError
        self.path = path.parent / f".{path.name}.lock"
        try:
            private_dir(path.parent)
        except TLSError as e:
            raise err(f"{what} {path}: {e}") from None
        try:
            self.fd: int | None = os.open(
                self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600
            )
        except OSError as e:
            raise err(f"cannot open the {what} lock {self.path}: {e.strerror or e}") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            self.fd = None
            raise err(f"{what} {path} is in use by another running daemon (lock {self.path})") from None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None
