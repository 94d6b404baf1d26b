"""The party daemon: an mTLS gRPC server running joint jobs with its peers.

    ppdm party serve --config party.toml
    python -m parties.runtime.daemon --config party.toml

Model and guarantees
--------------------
* Identity is the TLS client certificate (CA = the configured one, client
  certificates required; optionally not on the CA's revocation list and
  matching a pinned fingerprint). ``Deliver`` accepts only configured peers,
  ``StartJob`` only configured analysts, ``Abort`` and ``Health`` either.
* What an analyst may ask is the party's policy, the first of the daemon's
  session guards (:attr:`Daemon.guards`, :mod:`parties.guards.policy`); a session is
  bound to the analyst who started it.
* Bounded resources: one gRPC message is at most one 1 MiB chunk plus slack;
  one protocol message at most ``max_message_bytes``; unread bytes per
  session at most ``max_session_buffer_bytes``, per peer at most
  ``max_peer_buffer_bytes``; at most ``max_sessions`` sessions started by
  analysts and ``max_peer_pending_sessions`` not yet started per peer; every
  call carries a deadline; every session ends and frees its slot.
* A failing job fails its session here and ``Abort`` is sent to the other
  parties; a watchdog fails the session when a peer dies. The daemon itself
  survives every failed session.
* Logs name sessions, jobs, parties, tags, sizes and errors — never payloads,
  parameter values or data.
* Prints ``party NAME listening on HOST:PORT`` when ready.
* Operators' conventions: the standard ``grpc.health.v1`` service (``SERVING``;
  ``NOT_SERVING`` while draining or while its certificates or data are
  unusable), server reflection when ``[server] reflection = true``, Prometheus
  metrics when ``[metrics] address`` is set (:mod:`parties.runtime.metrics`),
  text or JSON logs (:mod:`parties.runtime.logs`).
* SIGTERM/SIGINT drain: no new session is admitted (waiting ones are refused),
  running sessions may finish for ``drain_timeout`` seconds, then they are
  aborted with a clear error at the peers and the server stops; a second signal
  stops at once. SIGHUP (and a check every ``cert_check_interval`` seconds for
  changed files) reloads the certificate, key, CA and revocation list without
  touching running sessions (:mod:`parties.runtime.lifecycle`); expiry within
  7 days is warned about in the log, the metrics and ``ppdm party status``.
* A ``StartJob`` beyond ``max_sessions`` waits in a bounded queue up to its
  deadline (:mod:`parties.runtime.admission`).

This module is the process: the :class:`Daemon` (server, peer pool, session
table, housekeeping, aborts sent to peers, the watchdog's Health probe) and
:func:`main`. The RPC handlers are :class:`parties.runtime.service.PartyService`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import errno
import logging
import os
import resource
import signal
import socket
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health as grpc_health
from grpc_health.v1 import health_pb2, health_pb2_grpc

from mpc.errors import PeerFailedError
from parties import jobs as jobs_mod
from parties.config import ConfigError, PartyConfig, load_config
from parties.guards.audit import AuditGuard, make_audit_guard
from parties.guards.audit_pool import with_audit_round
from parties.guards.audit_state import AuditStateError
from parties.guards.dp_budget import BudgetGuard
from parties.guards.policy import PolicyGuard, SessionGuard, SessionRequest
from parties.guards.releases import (
    PUBLISH_JOBS,
    PublishStateError,
    ReleaseGuard,
    make_release_guard,
    with_release_commit,
)
from parties.identity.tls import Credentials, TLSError
from parties.proto.ppdm.v1 import party_pb2 as pb
from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from parties.runtime.admission import AdmissionQueue
from parties.runtime.grpc_channel import (
    KEEPALIVE_OPTIONS,
    MAX_RECEIVE_BYTES,
    PeerPool,
    map_rpc_error,
    short_details,
)
from parties.runtime.lifecycle import FileStamp, data_problems, tls_dates, tls_problems, tls_warnings
from parties.runtime.logs import FORMATS, LogSettingError, check_level
from parties.runtime.logs import configure_logging as _configure_logging
from parties.runtime.metrics import DaemonMetrics, MetricsServer
from parties.runtime.service import PartyService
from parties.runtime.sessions import Session, SessionManager, SessionState
from parties.runtime.watchdog import PeerUnreachable

__all__ = ["Daemon", "ListenError", "main", "serve", "server_options", "check_listen"]

ABORT_TIMEOUT = 2.0
PING_TIMEOUT = 2.0
CONFIRM_TIMEOUT = 2.0  # > the peer channels' maximum reconnect backoff
REAP_INTERVAL = 1.0


class ListenError(OSError):
    """The daemon cannot listen on its address (in use, not local, ...): one line naming it."""


RESERVED_RPCS = 256  # concurrent RPC slots beyond what the peers' message streams may take


def check_listen(address: str) -> None:
    """Fail fast, with one line naming ``address``, when it cannot be bound (e.g. the port is in use).

    Binds a throw-away socket with ``SO_REUSEADDR`` (as gRPC's listener does)
    on every address ``host`` resolves to; port 0 is always free.
    """
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or int(port) == 0:
        return
    try:
        infos = socket.getaddrinfo(
            None if host in ("", "0.0.0.0", "::", "*") else host,
            int(port),
            type=socket.SOCK_STREAM,
            flags=socket.AI_PASSIVE,
        )
    except socket.gaierror as e:
        raise ListenError(f"cannot listen on {address}: cannot resolve {host!r} ({e.strerror})") from None
    if host in ("0.0.0.0", "::", "*", ""):
        infos = [i for i in infos if (i[0] == socket.AF_INET) == (host != "::")] or infos
    for family, kind, proto, _c, sockaddr in infos:
        try:
            sock = socket.socket(family, kind, proto)
        except OSError:  # e.g. no IPv6 here: gRPC will not use it either
            continue
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(sockaddr)
            except OSError as e:
                # only what gRPC would hit too; an unusable address family is gRPC's to skip
                if e.errno in (errno.EADDRINUSE, errno.EACCES):
                    why = "address already in use" if e.errno == errno.EADDRINUSE else "permission denied"
                    raise ListenError(f"cannot listen on {address}: {why}") from None


def server_options(handshake_timeout: float = 10.0) -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
        # a connection that never completes TLS is closed after this (gRPC's default holds it 120 s)
        ("grpc.server_handshake_timeout_ms", int(handshake_timeout * 1000)),
        ("grpc.so_reuseport", 0),  # never share a port with another daemon
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        *KEEPALIVE_OPTIONS,
    ]


class Daemon:
    """One party: config, credentials, sessions, peer connections and the gRPC server."""

    def __init__(self, config: PartyConfig, creds: Credentials | None = None, guards: Sequence[SessionGuard] = ()):
        self.config = config
        self.creds = creds or config.credentials()
        self.me = config.name
        self.limits = config.limits
        self.log = logging.getLogger(f"ppdm.party.{self.me}")
        #: Session guards, run in order on every StartJob before the session starts (parties.guards.policy):
        #: the party's policy first, then ``guards`` (e.g. an auditor); append more before start().
        #: The privacy-budget guard (parties.guards.dp_budget, [dp]) comes after the policy: it charges
        #: epsilon at admission and gives back what a session did not release when it ends.
        self.guards: list[SessionGuard] = [
            PolicyGuard(config.policy),
            BudgetGuard(config.dp, config.name, config.data),
            *guards,
        ]
        self.sessions = SessionManager(self.me, self.limits)
        self.admission = AdmissionQueue(self.sessions)
        self.pool = PeerPool(self.creds, config.peers, max_streams=self.limits.max_peer_streams)
        self.metrics = DaemonMetrics(read_gauges=self._gauges)
        self.metrics_server: MetricsServer | None = None
        self.health = grpc_health.aio.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.address: str | None = None
        self.draining = False
        self.tls = tls_dates(self.creds)
        self.tls_problems: list[str] = []
        self.tls_warnings: list[str] = []
        self.data_problems: list[str] = []
        self._warned: dict[str, _dt.date] = {}  # each expiry warning once a day
        self._files = FileStamp([config.cert, config.key, config.ca, config.crl])
        self._next_server_tls: grpc.ServerCertificateConfiguration | None = None
        self._retire_after: set[str] = set()  # sessions that may still use the previous credentials' channels
        self._bg: set[asyncio.Task] = set()  # aborts being sent to peers
        self._housekeeping: list[asyncio.Task] = []
        self._stopping = asyncio.Event()
        self._stopped = False

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> str:
        loaded = jobs_mod.load_job_modules(self.config.job_modules)
        unknown = sorted(self.config.policy.named_jobs() - set(jobs_mod.registered_jobs()))
        if unknown:
            raise ConfigError(
                f"{self.config.path or 'party config'}: [policy] names unknown job {unknown[0]!r} "
                f"(known: {', '.join(jobs_mod.registered_jobs())})"
            )
        check_listen(self.config.listen)
        self._start_audit()
        # every peer's streams at their cap still leave slots for Health, StartJob and Abort
        rpcs = len(self.config.peers) * self.limits.max_peer_streams + RESERVED_RPCS
        self.server = grpc.aio.server(
            options=server_options(self.limits.tls_handshake_timeout), maximum_concurrent_rpcs=rpcs
        )
        pb_grpc.add_PartyServicer_to_server(PartyService(self), self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        if self.config.reflection:
            from grpc_reflection.v1alpha import reflection

            names = [
                pb.DESCRIPTOR.services_by_name["Party"].full_name,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            ]
            reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], self.server)
        try:
            port = self.server.add_secure_port(self.config.listen, self._server_credentials())
        except RuntimeError:
            raise ListenError(f"cannot listen on {self.config.listen}: address in use or not local") from None
        if not port:
            raise ListenError(f"cannot listen on {self.config.listen}: address in use or not local")
        await self.server.start()
        host = self.config.listen.rpartition(":")[0]
        self.address = f"{host}:{port}"
        self._start_metrics()
        await self.check_usable()
        self._housekeeping.append(asyncio.create_task(self._reaper()))
        self._housekeeping.append(asyncio.create_task(self._tls_watch()))
        self.log.info("jobs: %s (modules: %s)", ", ".join(jobs_mod.registered_jobs()), ", ".join(loaded) or "built-in")
        for g in self.guards:
            if isinstance(g, AuditGuard):
                self.log.info("audit of sums over party sets: state %s", g.path)
        rev = self.creds.revocations
        if rev.path:
            self.log.info("revocation list %s: %d revoked certificate(s)", rev.path, len(rev.serials))
        return self.address

    # ------------------------------------------------------------------ operators' surfaces
    def _server_credentials(self) -> grpc.ServerCredentials:
        """mTLS server credentials whose certificate can be swapped for new handshakes (:meth:`reload_tls`)."""
        first = grpc.ssl_server_certificate_configuration(
            [(self.creds.key_pem, self.creds.cert_pem)], root_certificates=self.creds.ca_pem
        )

        def fetch() -> grpc.ServerCertificateConfiguration | None:  # called by gRPC before each handshake
            new, self._next_server_tls = self._next_server_tls, None
            return new

        return grpc.dynamic_ssl_server_credentials(first, fetch, require_client_authentication=True)

    def _start_metrics(self) -> None:
        m = self.config.metrics
        if m.address is None:
            return
        tls: dict[str, str] = {}
        if m.tls:
            tls = {"certfile": str(self.config.cert), "keyfile": str(self.config.key), "cafile": str(self.config.ca)}
        try:
            self.metrics_server = MetricsServer(self.metrics.registry, m.address, **tls)
        except OSError as e:
            raise ListenError(f"cannot serve metrics on {m.address}: {e.strerror or e}") from None
        self.log.info("metrics on %s://%s/metrics", "https" if m.tls else "http", self.metrics_server.address)

    def not_serving(self) -> str | None:
        """Why no new session is admitted now (draining, an expired certificate, CA or CRL), or None.

        A ``[data]`` file that is gone does not stop other jobs (a job on it fails with its own error),
        but the standard health service reports ``NOT_SERVING`` for it (:meth:`_set_health`).
        """
        if self.draining:
            return f"party {self.me!r} is shutting down and admits no new session"
        if self.tls_problems:
            return f"party {self.me!r} cannot serve: {self.tls_problems[0]}"
        return None

    async def _set_health(self) -> None:
        usable = self.not_serving() is None and not self.data_problems
        status = health_pb2.HealthCheckResponse.SERVING if usable else health_pb2.HealthCheckResponse.NOT_SERVING
        for service in ("", pb.DESCRIPTOR.services_by_name["Party"].full_name):
            await self.health.set(service, status)

    async def check_usable(self) -> None:
        """Re-read what makes the daemon usable: certificate, CA and CRL dates, data files; warn, set health."""
        now = _dt.datetime.now(_dt.UTC)
        self.tls_problems = tls_problems(self.tls, now)
        self.tls_warnings = tls_warnings(self.tls, now)
        self.data_problems = data_problems(self.config.data)
        for line in self.tls_problems + self.data_problems:
            if self._warned.get(line) != now.date():
                self.log.error("not serving: %s", line)
                self._warned[line] = now.date()
        for line in self.tls_warnings:
            key = line.split(" (in ", 1)[0]
            if self._warned.get(key) != now.date():
                self.log.warning("%s", line)
                self._warned[key] = now.date()
        await self._set_health()

    def reload_tls(self, why: str) -> bool:
        """Load the certificate, key, CA and CRL again; swap them in if the whole set checks out.

        New TLS handshakes present the new certificate, new calls to peers use new channels, the new
        revocation list applies to every call from now on; running sessions are not touched. A set
        that does not load (a bad file, an expired CRL, the party's own certificate revoked) is
        refused with one log line and the daemon keeps what it has. True if swapped.
        """
        try:
            creds = self.config.credentials()
        except (ConfigError, TLSError) as e:
            self.log.error("%s: certificates not reloaded, keeping the current ones: %s", why, e)
            return False
        if creds.name != self.me:  # pragma: no cover - config.credentials() checks it
            return False
        old = self.creds
        self.creds = creds
        self.tls = tls_dates(creds)
        if (creds.cert_pem, creds.key_pem, creds.ca_pem) != (old.cert_pem, old.key_pem, old.ca_pem):
            self._next_server_tls = grpc.ssl_server_certificate_configuration(
                [(creds.key_pem, creds.cert_pem)], root_certificates=creds.ca_pem
            )
            self._retire_after |= set(self.sessions.sessions)
            self.pool.use_credentials(creds)
        rev = creds.revocations
        self.log.info(
            "%s: certificates reloaded (certificate valid until %s%s)",
            why,
            f"{self.tls.certificate:%Y-%m-%d %H:%M} UTC",
            f"; revocation list {rev.path}: {len(rev.serials)} revoked, next update {rev.next_update:%Y-%m-%d %H:%M} UTC"
            if rev.path and rev.next_update is not None
            else "",
        )
        return True

    async def _reload(self, why: str) -> None:
        self.reload_tls(why)
        await self.check_usable()

    async def _tls_watch(self) -> None:
        """Every ``cert_check_interval``: reload changed certificate files, warn of expiry, update health."""
        while True:
            await asyncio.sleep(self.limits.cert_check_interval)
            try:
                if self._files.changed():
                    self.reload_tls("files changed")
                await self.check_usable()
            except Exception:  # pragma: no cover - housekeeping must go on
                self.log.exception("certificate check failed")

    def health_reply(self, reply: pb.HealthReply) -> pb.HealthReply:
        """``reply`` with this daemon's own state (``ppdm party status``)."""
        reply.active_sessions = self.sessions.active
        reply.serving = self.not_serving() is None and not self.data_problems
        reply.admitting = self.not_serving() is None
        reply.draining = self.draining
        reply.running_sessions = self.sessions.running
        reply.queued_sessions = len(self.admission)
        reply.certificate_not_after = self.tls.certificate.isoformat()
        reply.ca_not_after = self.tls.ca.isoformat()
        reply.crl_next_update = "" if self.tls.crl is None else self.tls.crl.isoformat()
        reply.warnings.extend(self.tls_warnings)
        reply.problems.extend(self.tls_problems + self.data_problems)
        return reply

    def _gauges(self):
        """The gauges of a scrape (parties.runtime.metrics): read from the daemon's state, never from data."""
        yield "ppdm_sessions_running", "Sessions running here", [], [([], self.sessions.running)]
        yield "ppdm_sessions_queued", "StartJob calls waiting for a slot", [], [([], len(self.admission))]
        yield (
            "ppdm_serving",
            "1 while serving, 0 while draining or unusable",
            [],
            [([], float(self.not_serving() is None and not self.data_problems))],
        )
        budget = next((g for g in self.guards if isinstance(g, BudgetGuard)), None)
        if budget is not None:
            rows = [([a, k], left) for a, k, left in budget.budget_left()]
            yield "ppdm_privacy_budget_remaining", "Epsilon left per analyst and data key", ["analyst", "data"], rows
        audit = next((g for g in self.guards if isinstance(g, AuditGuard)), None)
        if audit is not None:
            size = audit.path.stat().st_size if audit.path.exists() else 0
            yield "ppdm_audit_state_bytes", "Size of the audit state file", [], [([], float(size))]
        now = _dt.datetime.now(_dt.UTC)
        items = self.tls.items()
        yield (
            "ppdm_tls_not_after_seconds",
            "Expiry (Unix time) of the certificate, the CA and the revocation list",
            ["what"],
            [([k], v.timestamp()) for k, v in items],
        )
        yield (
            "ppdm_tls_expiring",
            "1 when the certificate, CA or revocation list expires within 7 days (or has expired)",
            ["what"],
            [([k], float(v - now <= _dt.timedelta(days=7))) for k, v in items],
        )

    def _start_audit(self) -> None:
        """Put the party's auditor ([audit], :mod:`parties.guards.audit`) right after the policy guard."""
        try:
            guard = make_audit_guard(self.config, jobs_mod.registered_jobs())
        except AuditStateError as e:
            raise ConfigError(f"{self.config.path or 'party config'}: {e}") from None
        if guard is not None:
            self.guards.insert(1, guard)
        try:  # joint publishing's guard ([publish]) right after the policy and the auditor
            release = make_release_guard(
                self.config.name,
                self.config.publish,
                None if self.config.path is None else self.config.path.parent,
                self.config.data,
            )
        except PublishStateError as e:
            raise ConfigError(f"{self.config.path or 'party config'}: {e}") from None
        self.guards.insert(2 if guard is not None else 1, release)

    def job_function(self, info: jobs_mod.JobInfo, request: SessionRequest) -> jobs_mod.JobFn:
        """What a session runs: a job on private data starts with the pooled audit round (parties.guards.audit_pool)."""
        guard = next((g for g in self.guards if isinstance(g, AuditGuard)), None)
        fn = info.fn
        release = next((g for g in self.guards if isinstance(g, ReleaseGuard)), None)
        if release is not None and request.job in PUBLISH_JOBS:  # counted before its share leaves
            fn = with_release_commit(fn, release, request)
        if not info.private_data and guard is None:
            return fn
        return with_audit_round(fn, guard, request, pooled=info.private_data)

    async def serve_until_signal(self, exit_with_parent: bool = False) -> None:
        """Serve until SIGTERM/SIGINT (drain, then stop; a second signal stops at once); SIGHUP reloads."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._on_stop_signal, sig)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
                pass
        try:
            loop.add_signal_handler(signal.SIGHUP, lambda: self._spawn(self._reload("SIGHUP")))
        except (NotImplementedError, RuntimeError, AttributeError):  # pragma: no cover - non-Unix
            pass
        if exit_with_parent:
            self._housekeeping.append(asyncio.create_task(self._watch_parent(os.getppid())))
        await self._stopping.wait()
        await self.stop()

    def _on_stop_signal(self, sig: int) -> None:
        if self.draining:
            self.log.warning("%s again: stopping now", signal.Signals(sig).name)
            self._stopping.set()
            return
        self._spawn(self.drain(signal.Signals(sig).name))

    async def drain(self, why: str = "drain") -> None:
        """Admit nothing new, let running sessions finish for ``drain_timeout`` seconds, then stop."""
        if self.draining:
            return
        self.draining = True
        await self._set_health()
        self.admission.close(f"party {self.me!r} is shutting down and admits no new session")
        running = self.sessions.running
        self.log.info(
            "%s: draining: %d running session(s) may finish within %g s", why, running, self.limits.drain_timeout
        )
        deadline = asyncio.get_running_loop().time() + self.limits.drain_timeout
        while self.sessions.running and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.1)
        left = self.sessions.running
        if left:
            self.log.warning(
                "drain: %d session(s) still running after %g s: aborting them", left, self.limits.drain_timeout
            )
        self._stopping.set()

    async def _watch_parent(self, ppid: int) -> None:
        while True:
            await asyncio.sleep(0.5)
            if os.getppid() != ppid:
                self.log.warning("parent process %d is gone: stopping", ppid)
                self._stopping.set()
                return

    async def stop(self, grace: float = 1.0) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._stopping.set()
        for t in self._housekeeping:
            t.cancel()
        self.draining = True
        self.admission.close(f"party {self.me!r} is shutting down")
        why = f"party {self.me!r} is shutting down: its running sessions had {self.limits.drain_timeout:g} s to finish"
        for s in list(self.sessions.sessions.values()):
            s.fail(PeerFailedError(why))
        if self._bg:
            await asyncio.wait(list(self._bg), timeout=ABORT_TIMEOUT + 0.5)
        for t in list(self._bg):
            t.cancel()
        if self.server is not None:
            await self.health.enter_graceful_shutdown()
            await self.server.stop(grace)
        if self.metrics_server is not None:
            await asyncio.to_thread(self.metrics_server.close)
        await self.pool.close()
        for g in self.guards:  # e.g. the auditor releases its state file
            close = getattr(g, "close", None)
            if close is not None:
                close()
        self.log.info("stopped")

    def _spawn(self, coro) -> asyncio.Task:
        """Run ``coro`` in the background (aborts to peers, reloads, draining); kept until it ends, and a
        failure is logged when it happens: the coroutine and the exception's type, never its message
        (which may quote data)."""
        t = asyncio.create_task(coro)
        self._bg.add(t)
        t.add_done_callback(self._background_done)
        return t

    def _background_done(self, t: asyncio.Task) -> None:
        self._bg.discard(t)
        if t.cancelled():
            return
        e = t.exception()
        if e is not None:
            name = getattr(t.get_coro(), "__qualname__", t.get_name())
            self.log.error("background task %s failed: %s", name, e.__class__.__name__)

    async def _reaper(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            try:
                if self.sessions.expire():
                    self.admission.wake()
                if self._retire_after and not (self._retire_after & set(self.sessions.sessions)):
                    self._retire_after.clear()
                    await self.pool.close_retired()  # no session of the previous credentials is left
            except Exception:  # pragma: no cover - housekeeping must go on
                self.log.exception("session expiry failed")

    async def ping(self, peer: str, sid: str) -> SessionState:
        """Health of ``peer`` for session ``sid`` (the watchdog's probe).

        Raises :class:`PeerUnreachable` only when a *fresh* connection attempt
        fails: a fast UNAVAILABLE may be a stale failure of a peer that has
        restarted since, so it is confirmed by a wait-for-ready call that lets
        the channel reconnect (backoff ≤ 1 s). A peer that accepts the
        connection but answers slowly (busy event loop) is never unreachable.
        """
        stub = self.pool.stub(peer)
        req = pb.HealthRequest(session=sid)
        try:
            r = await stub.Health(req, timeout=PING_TIMEOUT)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            try:
                r = await stub.Health(req, timeout=CONFIRM_TIMEOUT, wait_for_ready=True)
            except grpc.aio.AioRpcError as e2:
                connected = self.pool.connected(peer)
                if e2.code() == grpc.StatusCode.UNAVAILABLE or (
                    e2.code() == grpc.StatusCode.DEADLINE_EXCEEDED and not connected
                ):
                    raise PeerUnreachable(short_details(e)) from None
                raise
        try:
            return SessionState(r.session_state)
        except ValueError:
            return SessionState.UNKNOWN

    # ------------------------------------------------------------------ aborts to peers
    def refuse_session(self, key: str, parties: Iterable[str], reason: str) -> None:
        """A session was refused (or abandoned) here before it ran: fail it and tell its other parties.

        Only the configured peers among ``parties`` are told; a session already
        running here (a duplicate ``StartJob``) is left alone.
        """
        if self.sessions.refuse(key, reason):
            targets = [p for p in dict.fromkeys(parties) if p != self.me and p in self.config.peers]
            if targets:
                self._spawn(self._send_aborts(key, targets, reason))

    def on_session_fail(self, s: Session, error: BaseException, source: str | None) -> None:
        """A session failed here: tell its other parties (unless a peer told us; it tells the others)."""
        if source is not None:  # a peer told us: it tells the others itself
            return
        targets = [p for p in s.peers]
        if targets:
            self._spawn(self._send_aborts(s.id, targets, str(error)))

    async def _send_aborts(self, sid: str, targets: list[str], reason: str) -> None:
        async def one(p: str) -> None:
            try:
                await self.pool.stub(p).Abort(pb.AbortRequest(session=sid, reason=reason[:300]), timeout=ABORT_TIMEOUT)
            except grpc.aio.AioRpcError as e:
                self.log.info(
                    "session %s: could not tell %s about the abort (%s)", sid, p, map_rpc_error(e, p, "Abort")
                )

        await asyncio.gather(*(one(p) for p in targets))


# --------------------------------------------------------------------------- entry point
def configure_logging(name: str, level: str = "INFO", fmt: str = "text") -> None:
    """The daemon's log on stderr (:func:`parties.runtime.logs.configure_logging`)."""
    _configure_logging(level, fmt)


def raise_descriptor_limit() -> tuple[int, int]:
    """Raise this process's soft limit on open files to its hard limit (at most 65,536); the new (soft, hard).

    Each connection costs a descriptor: at a distribution's default of 1,024, a thousand half-open
    connections would leave the daemon none for its peers and analysts.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):  # pragma: no cover - a platform that refuses: keep what we have
            pass
    return soft, hard


async def serve(config: PartyConfig, *, exit_with_parent: bool = False) -> None:
    soft, _ = raise_descriptor_limit()
    d = Daemon(config)
    addr = await d.start()
    d.log.info("open files limit: %s", "unlimited" if soft == resource.RLIM_INFINITY else soft)
    print(f"party {config.name} listening on {addr}", flush=True)
    await d.serve_until_signal(exit_with_parent=exit_with_parent)


def main(argv: list[str] | None = None, *, prog: str = "ppdm party") -> int:
    """Run a daemon until SIGTERM/SIGINT; errors are one line ``PROG: error: ...`` (exit 2: bad config or address)."""
    ap = argparse.ArgumentParser(prog="python -m parties.runtime.daemon", description="Run a ppdm party daemon.")
    ap.add_argument("--config", required=True, help="path of party.toml")
    ap.add_argument(
        "--log-level", default=None, help="DEBUG, INFO, WARNING, ERROR (default: $PPDM_LOG_LEVEL, else INFO)"
    )
    ap.add_argument("--log-format", default="text", help="text (default) or json: one JSON object a line")
    ap.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process exits")
    args = ap.parse_args(argv)
    try:
        if args.log_level is not None:
            level = check_level(args.log_level)
        else:
            level = check_level(os.environ.get("PPDM_LOG_LEVEL") or "INFO", "PPDM_LOG_LEVEL")
        if args.log_format not in FORMATS:
            raise LogSettingError(
                f"--log-format: unknown format {args.log_format!r} (choose from {', '.join(FORMATS)})"
            )
    except LogSettingError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config)
        cfg.credentials()
    except ConfigError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    configure_logging(cfg.name, level, args.log_format)
    try:
        asyncio.run(serve(cfg, exit_with_parent=args.exit_with_parent))
    except (ListenError, ConfigError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except (OSError, jobs_mod.JobError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    except Exception as e:  # e.g. a job module that fails to import: one line, not a traceback
        if os.environ.get("PPDM_DEBUG"):
            raise
        print(f"{prog}: error: {cfg.name} could not run: {e.__class__.__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
