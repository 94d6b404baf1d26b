"""The party daemon: an mTLS gRPC server running joint jobs with its peers.

    ppdm party serve --config party.toml
    python -m parties.daemon --config party.toml

Model and guarantees
--------------------
* Identity is the TLS client certificate (CA = the configured one, client
  certificates required). ``Deliver`` and ``Abort`` accept only configured
  peers, ``StartJob`` only configured analysts, ``Health`` either.
* Bounded resources: one gRPC message is at most one 1 MiB chunk plus slack;
  one protocol message at most ``max_message_bytes``; unread bytes per
  session at most ``max_session_buffer_bytes``; at most ``max_sessions``
  sessions at once; every call carries a deadline.
* A failing job fails its session here and ``Abort`` is sent to the other
  parties; a watchdog fails the session when a peer dies. The daemon itself
  survives every failed session.
* Logs name sessions, jobs, parties, tags, sizes and errors — never payloads,
  parameter values or data.
* Prints ``party NAME listening on HOST:PORT`` when ready; SIGTERM/SIGINT abort
  running sessions (peers are told) and stop the server.

This module is the process: the :class:`Daemon` (server, peer pool, session
table, housekeeping, aborts sent to peers, the watchdog's Health probe) and
:func:`main`. The RPC handlers are :class:`parties.service.PartyService`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import Any

import grpc

from mpc.errors import PeerFailedError

from . import jobs as jobs_mod
from .config import ConfigError, PartyConfig, load_config
from .grpc_channel import (
    KEEPALIVE_OPTIONS,
    MAX_RECEIVE_BYTES,
    PeerPool,
    map_rpc_error,
    short_details,
)
from .proto.ppdm.v1 import party_pb2 as pb
from .proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from .service import PartyService
from .sessions import Session, SessionManager, SessionState
from .tls import Credentials
from .watchdog import PeerUnreachable

__all__ = ["Daemon", "main", "serve", "server_options"]

ABORT_TIMEOUT = 2.0
PING_TIMEOUT = 2.0
CONFIRM_TIMEOUT = 2.0  # > the peer channels' maximum reconnect backoff
REAP_INTERVAL = 1.0


def server_options() -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES),
        ("grpc.so_reuseport", 0),  # never share a port with another daemon
        ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
        *KEEPALIVE_OPTIONS,
    ]


class Daemon:
    """One party: config, credentials, sessions, peer connections and the gRPC server."""

    def __init__(self, config: PartyConfig, creds: Credentials | None = None):
        self.config = config
        self.creds = creds or config.credentials()
        self.me = config.name
        self.limits = config.limits
        self.log = logging.getLogger(f"ppdm.party.{self.me}")
        self.sessions = SessionManager(self.me, self.limits)
        self.pool = PeerPool(self.creds, config.peers)
        self.server: grpc.aio.Server | None = None
        self.address: str | None = None
        self._bg: set[asyncio.Task] = set()  # aborts being sent to peers
        self._housekeeping: list[asyncio.Task] = []
        self._stopping = asyncio.Event()
        self._stopped = False

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> str:
        loaded = jobs_mod.load_job_modules(self.config.job_modules)
        self.server = grpc.aio.server(options=server_options(), maximum_concurrent_rpcs=1000)
        pb_grpc.add_PartyServicer_to_server(PartyService(self), self.server)
        try:
            port = self.server.add_secure_port(self.config.listen, self.creds.server_credentials())
        except RuntimeError as e:
            raise OSError(f"cannot listen on {self.config.listen}: {e}") from None
        if not port:
            raise OSError(f"cannot listen on {self.config.listen} (address in use or not local?)")
        await self.server.start()
        host = self.config.listen.rpartition(":")[0]
        self.address = f"{host}:{port}"
        self._housekeeping.append(asyncio.create_task(self._reaper()))
        self.log.info("jobs: %s (modules: %s)", ", ".join(jobs_mod.registered_jobs()), ", ".join(loaded) or "built-in")
        return self.address

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
        self.log.info("stopped")

    def _spawn(self, coro) -> asyncio.Task:
        t = asyncio.create_task(coro)
        self._bg.add(t)
        t.add_done_callback(self._bg.discard)
        return t

    async def _reaper(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            self.sessions.expire()

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


async def serve(config: PartyConfig, *, exit_with_parent: bool = False) -> None:
    d = Daemon(config)
    addr = await d.start()
    print(f"party {config.name} listening on {addr}", flush=True)
    await d.serve_until_signal(exit_with_parent=exit_with_parent)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parties.daemon", description="Run a ppdm party daemon.")
    ap.add_argument("--config", required=True, help="path of party.toml")
    ap.add_argument("--log-level", default=os.environ.get("PPDM_LOG_LEVEL", "INFO"))
    ap.add_argument("--exit-with-parent", action="store_true", help="stop when the parent process exits")
    args = ap.parse_args(argv)
    try:
        cfg = load_config(args.config)
        cfg.credentials()
    except ConfigError as e:
        print(f"ppdm party: error: {e}", file=sys.stderr)
        return 2
    configure_logging(cfg.name, args.log_level)
    try:
        asyncio.run(serve(cfg, exit_with_parent=args.exit_with_parent))
    except (OSError, jobs_mod.JobError) as e:
        print(f"ppdm party: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    except Exception as e:  # e.g. a job module that fails to import: one line, not a traceback
        if os.environ.get("PPDM_DEBUG"):
            raise
        print(f"ppdm party: error: {cfg.name} could not run: {e.__class__.__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
