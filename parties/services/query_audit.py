"""``ppdm audit serve``: aggregate queries on one private table behind an online auditor, over mTLS.

    ppdm audit serve --table salaries.csv --auditor simulatable-max --config party.toml

Model and guarantees
--------------------
* Identity: the same mutual TLS as the party daemons (:mod:`parties.identity.tls`): the service's
  certificate and CA come from ``party.toml`` (:mod:`parties.config`); a caller must present
  a certificate from that CA whose common name is one of the config's ``analysts``.
* One auditor state for all analysts, so analysts pooling their answers gain nothing over
  one analyst (per-analyst states would let colluders split a differencing attack).
* Every query, its decision and (when answered) its answer are appended to the audit log —
  JSONL next to the config (``audit-<table>.jsonl``, mode 0600) — and ``fsync``'ed *before* the
  reply leaves. On start the log is replayed, so a restart (or a crash) never resets the
  auditor. The log's header pins the table's SHA-256 and the auditor kind: a changed table or
  auditor refuses to start (replaying old answers against other data would be unsound).
* A denial tells the analyst only that the query was denied, never which records it concerns.
* Bounded input: at most :data:`MAX_QUERY_BYTES` per query; every call needs a deadline.

The auditors, what they prevent and what they cannot: :mod:`anonymize.audit`, docs/auditing.md.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import logging
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from anonymize.audit import TableAuditor
from anonymize.errors import AnonymizeError
from parties.proto.ppdm.v1 import audit_pb2 as pb
from parties.proto.ppdm.v1 import audit_pb2_grpc as pb_grpc

__all__ = ["AuditLog", "AuditService", "AuditLogError", "MAX_QUERY_BYTES", "serve_audit", "log_path_for"]

try:
    from importlib.metadata import version as _version

    VERSION = _version("ppdm")
except Exception:  # pragma: no cover - running from a source tree
    VERSION = "0+unknown"

MAX_QUERY_BYTES = 16 << 10
LOG_FORMAT = "ppdm.audit-log/1"
DENIAL = "denied: with the answers already given, the answer could determine an individual value"

log = logging.getLogger("ppdm.audit")


class AuditLogError(Exception):
    """The audit log cannot be used (one line naming the file and what to do)."""


def log_path_for(config_path: Path, table: Path) -> Path:
    """The default audit log: ``audit-<table stem>.jsonl`` next to the config."""
    return config_path.resolve().parent / f"audit-{table.stem}.jsonl"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class Replayed:
    answered: int = 0
    denied: int = 0
    seq: int = 0


class AuditLog:
    """Append-only JSONL: a header line, then one line per query; each append is fsync'ed."""

    def __init__(self, path: Path, header: dict):
        self.path = path
        self.header = header
        self.fd: int | None = None

    def open(self, ta: TableAuditor) -> Replayed:
        """Create the log, or check its header and replay it into ``ta``; then open it for appends."""
        p = self.path
        done = Replayed()
        if p.exists():
            raw = p.read_bytes()
            if raw and not raw.endswith(b"\n"):  # a crash mid-append: that reply was never sent
                cut = raw.rfind(b"\n") + 1
                log.warning("%s: dropping an incomplete last line (%d bytes)", p, len(raw) - cut)
                with open(p, "r+b") as fh:
                    fh.truncate(cut)
                    os.fsync(fh.fileno())
                raw = raw[:cut]
            lines = raw.decode("utf-8", "replace").splitlines()
            if lines:
                self._check_header(lines[0])
                done = self._replay(lines[1:], ta)
        fresh = not p.exists() or p.stat().st_size == 0
        self.fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if fresh:
            self._append(self.header)
        return done

    def _check_header(self, line: str) -> None:
        try:
            h = json.loads(line)
        except json.JSONDecodeError:
            raise AuditLogError(f"{self.path}: line 1 is not an audit log header") from None
        if not isinstance(h, dict) or h.get("format") != LOG_FORMAT:
            raise AuditLogError(f"{self.path}: not a ppdm audit log (expected format {LOG_FORMAT!r})")
        for key, what in (("auditor", "auditor"), ("table_sha256", "table (SHA-256)"), ("options", "auditor options")):
            if h.get(key) != self.header[key]:
                raise AuditLogError(
                    f"{self.path} was written for another {what} ({h.get(key)!r}, now {self.header[key]!r}); "
                    "replaying its answers against this one would be unsound — move the log away to start a "
                    "new audit (the analysts keep the answers they already have)"
                )

    def _replay(self, lines: list[str], ta: TableAuditor) -> Replayed:
        done = Replayed()
        for no, line in enumerate(lines, start=2):
            try:
                e = json.loads(line)
                seq, decision = e["seq"], e["decision"]
            except (json.JSONDecodeError, KeyError, TypeError):
                raise AuditLogError(f"{self.path} line {no}: not an audit log entry") from None
            done.seq = max(done.seq, int(seq))
            if decision != "answer":
                done.denied += 1
                continue
            try:
                out = ta.record(e["query"])
            except (AnonymizeError, KeyError) as err:
                raise AuditLogError(f"{self.path} line {no}: cannot replay: {err}") from None
            if out.value != e.get("answer"):
                raise AuditLogError(
                    f"{self.path} line {no}: the table now gives a different answer than the one released"
                )
            done.answered += 1
        return done

    def _append(self, entry: dict) -> None:
        assert self.fd is not None
        data = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        os.fsync(self.fd)

    def append(self, entry: dict) -> None:
        self._append(entry)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _caller(context) -> str | None:
    cns = (context.auth_context() or {}).get("x509_common_name") or []
    if not cns:
        return None
    v = cns[0]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


class AuditService(pb_grpc.AuditorServicer):
    """Decides each query under one lock: check, log (fsync), then reply."""

    def __init__(self, name: str, ta: TableAuditor, analysts: tuple[str, ...], alog: AuditLog, done: Replayed):
        self.name, self.ta, self.analysts, self.alog = name, ta, analysts, alog
        self.seq, self.answered, self.denied = done.seq, done.answered, done.denied
        self.lock = asyncio.Lock()

    async def _identify(self, context, what: str) -> str:
        who = _caller(context)
        if who is None or who not in self.analysts:
            log.warning("%s refused: %r is not a configured analyst (%s)", what, who, context.peer())
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{who!r} may not call {what} on {self.name}")
        return who  # type: ignore[return-value]

    async def Ask(self, request, context):
        who = await self._identify(context, "Ask")
        text = request.query_json
        if len(text.encode()) > MAX_QUERY_BYTES:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"query larger than {MAX_QUERY_BYTES} bytes")
        try:
            q = self.ta.parse(text)
        except AnonymizeError as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e).splitlines()[0][:300])
        async with self.lock:
            try:
                out = self.ta.ask(q)
            except AnonymizeError as e:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e).splitlines()[0][:300])
            self.seq += 1
            entry: dict[str, Any] = {
                "seq": self.seq,
                "time": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"),
                "analyst": who,
                "query": q.to_json(),
                "decision": "answer" if out.allowed else "deny",
            }
            if out.allowed:
                entry["answer"] = out.value
                self.answered += 1
            else:
                entry["discloses"] = list(out.decision.discloses)  # operator-only: never sent to the analyst
                self.denied += 1
            self.alog.append(entry)  # fsync'ed before the reply leaves
        log.info("query %d from %s: %s %s", self.seq, who, q.agg, "answered" if out.allowed else "denied")
        if out.allowed:
            return pb.AskReply(answer_json=json.dumps(out.value), seq=self.seq)
        return pb.AskReply(denial=pb.Denial(reason=DENIAL), seq=self.seq)

    async def Status(self, request, context):
        await self._identify(context, "Status")
        return pb.AuditStatusReply(
            name=self.name,
            version=VERSION,
            auditor=self.ta.kind,
            rows=self.ta.n,
            answered=self.answered,
            denied=self.denied,
        )


def server_options() -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", MAX_QUERY_BYTES + 1024),
        ("grpc.max_send_message_length", 1 << 16),
        ("grpc.so_reuseport", 0),
    ]


async def serve_audit(
    *,
    name: str,
    creds,
    listen: str,
    analysts: tuple[str, ...],
    ta: TableAuditor,
    alog: AuditLog,
    ready=print,
) -> None:
    """Replay the log, listen, serve until SIGTERM/SIGINT."""
    done = alog.open(ta)
    service = AuditService(name, ta, analysts, alog, done)
    server = grpc.aio.server(options=server_options(), maximum_concurrent_rpcs=256)
    pb_grpc.add_AuditorServicer_to_server(service, server)
    try:
        port = server.add_secure_port(listen, creds.server_credentials())
    except RuntimeError as e:
        raise OSError(f"cannot listen on {listen}: {e}") from None
    if not port:
        raise OSError(f"cannot listen on {listen} (address in use or not local?)")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            pass
    host = listen.rpartition(":")[0]
    ready(
        f"auditor {name} listening on {host}:{port} ({ta.kind} auditor, {ta.n} rows; "
        f"log {alog.path}: {done.answered} answered and {done.denied} denied replayed)",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        await server.stop(1.0)
        alog.close()
