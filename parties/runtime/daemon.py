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
* Prints ``party NAME listening on HOST:PORT`` when ready; SIGTERM/SIGINT abort
  running sessions (peers are told) and stop the server.

This module is the process: the :class:`Daemon` (server, peer pool, session
table, housekeeping, aborts sent to peers, the watchdog's Health probe) and
:func:`main`. The RPC handlers are :class:`parties.runtime.service.PartyService`.
"""

from __future__ import annotations

import argparse
import asyncio
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

from mpc.errors import PeerFailedError
from parties import jobs as jobs_mod
from parties.config import ConfigError, PartyConfig, load_config
from parties.guards.audit import AuditGuard, make_audit_guard
from parties.guards.audit_pool import with_audit_round
from parties.guards.audit_state import AuditStateError
from parties.guards.dp_budget import BudgetGuard
from parties.guards.policy import PolicyGuard, SessionGuard, SessionRequest
from parties.identity.tls import Credentials
from parties.proto.ppdm.v1 import party_pb2 as pb
from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from parties.runtime.grpc_channel import (
    KEEPALIVE_OPTIONS,
    MAX_RECEIVE_BYTES,
    PeerPool,
    map_rpc_error,
    short_details,
)
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
        self.pool = PeerPool(self.creds, config.peers, max_streams=self.limits.max_peer_streams)
        self.server: grpc.aio.Server | None = None
        self.address: str | None = None
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
        try:
            port = self.server.add_secure_port(self.config.listen, self.creds.server_credentials())
        except RuntimeError:
            raise ListenError(f"cannot listen on {self.config.listen}: address in use or not local") from None
        if not port:
            raise ListenError(f"cannot listen on {self.config.listen}: address in use or not local")
        await self.server.start()
        host = self.config.listen.rpartition(":")[0]
        self.address = f"{host}:{port}"
        self._housekeeping.append(asyncio.create_task(self._reaper()))
        self.log.info("jobs: %s (modules: %s)", ", ".join(jobs_mod.registered_jobs()), ", ".join(loaded) or "built-in")
        for g in self.guards:
            if isinstance(g, AuditGuard):
                self.log.info("audit of sums over party sets: state %s", g.path)
        rev = self.creds.revocations
        if rev.path:
            self.log.info("revocation list %s: %d revoked certificate(s)", rev.path, len(rev.serials))
        return self.address

    def _start_audit(self) -> None:
        """Put the party's auditor ([audit], :mod:`parties.guards.audit`) right after the policy guard."""
        try:
            guard = make_audit_guard(self.config, jobs_mod.registered_jobs())
        except AuditStateError as e:
            raise ConfigError(f"{self.config.path or 'party config'}: {e}") from None
        if guard is not None:
            self.guards.insert(1, guard)

    def job_function(self, info: jobs_mod.JobInfo, request: SessionRequest) -> jobs_mod.JobFn:
        """What a session runs: a job on private data starts with the pooled audit round (parties.guards.audit_pool)."""
        guard = next((g for g in self.guards if isinstance(g, AuditGuard)), None)
        if not info.private_data and guard is None:
            return info.fn
        return with_audit_round(info.fn, guard, request, pooled=info.private_data)

    async def serve_until_signal(self, exit_with_parent: bool = False) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self._stopping.set)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
                pass
        if exit_with_parent:
            self._housekeeping.append(asyncio.create_task(self._watch_parent(os.getppid())))
        await self._stopping.wait()
        await self.stop()

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
        for s in list(self.sessions.sessions.values()):
            s.fail(PeerFailedError(f"party {self.me!r} is shutting down"))
        if self._bg:
            await asyncio.wait(list(self._bg), timeout=ABORT_TIMEOUT + 0.5)
        for t in list(self._bg):
            t.cancel()
        if self.server is not None:
            await self.server.stop(grace)
        await self.pool.close()
        for g in self.guards:  # e.g. the auditor releases its state file
            close = getattr(g, "close", None)
            if close is not None:
                close()
        self.log.info("stopped")

    def _spawn(self, coro) -> asyncio.Task:
        t = asyncio.create_task(coro)
        self._bg.add(t)
        t.add_done_callback(self._bg.discard)
        return t

    async def _reaper(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            try:
                self.sessions.expire()
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
def configure_logging(name: str, level: str = "INFO") -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


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
    ap.add_argument("--log-level", default=os.environ.get("PPDM_LOG_LEVEL", "INFO"))
    ap.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process exits")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
        cfg.credentials()
    except ConfigError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    configure_logging(cfg.name, args.log_level)
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
