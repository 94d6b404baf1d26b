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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from typing import Any

import grpc
from google.protobuf.message import DecodeError

from mpc.errors import PeerFailedError, ProtocolError, ProtocolTimeoutError

from . import jobs as jobs_mod
from .config import ConfigError, PartyConfig, load_config
from .grpc_channel import (
    KEEPALIVE_OPTIONS,
    MAX_RECEIVE_BYTES,
    GrpcChannel,
    PeerPool,
    map_rpc_error,
    short_details,
)
from .proto.ppdm.v1 import party_pb2 as pb
from .proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from .sessions import (
    BufferFull,
    Busy,
    InvalidRequest,
    Refused,
    Session,
    SessionGone,
    SessionManager,
    SessionState,
    check_tag,
)
from .tls import Credentials
from .watchdog import PeerUnreachable, Watchdog

__all__ = ["Daemon", "main", "VERSION", "server_options"]

try:
    from importlib.metadata import version as _v

    VERSION = _v("ppdm")
except Exception:  # pragma: no cover - not installed
    VERSION = "0+unknown"

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


def _caller(context) -> str | None:
    cns = (context.auth_context() or {}).get("x509_common_name") or []
    if not cns:
        return None
    v = cns[0]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _classify(e: BaseException, job: str) -> tuple[str, str]:
    """``(kind, message)`` of a job failure; unexpected exceptions are reported by type only."""
    if isinstance(e, ProtocolTimeoutError):
        return "timeout", str(e)
    if isinstance(e, PeerFailedError):
        return "peer", str(e)
    if isinstance(e, (Refused, jobs_mod.UnknownJobError)):
        return "refused", str(e)
    if isinstance(e, ProtocolError):
        return "job", str(e) or e.__class__.__name__
    return "internal", f"job {job!r} raised {e.__class__.__name__} (details in that party's log)"


class PartyService(pb_grpc.PartyServicer):
    def __init__(self, daemon: Daemon):
        self.d = daemon

    async def Deliver(self, request_iterator, context):
        return await self.d.deliver(request_iterator, context)

    async def StartJob(self, request, context):
        return await self.d.start_job(request, context)

    async def Abort(self, request, context):
        return await self.d.abort(request, context)

    async def Health(self, request, context):
        return await self.d.health(request, context)


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

    # ------------------------------------------------------------------ identity
    async def _identify(self, context, *, peers: bool, analysts: bool, what: str) -> str:
        who = _caller(context)
        if who is None:
            self.log.warning("%s refused: no client certificate name (%s)", what, context.peer())
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a client certificate with a common name is required")
        if (peers and who in self.config.peers) or (analysts and who in self.config.analysts):
            return who
        self.log.warning(
            "%s refused: %r is not a configured %s (%s)",
            what,
            who,
            "peer" if peers and not analysts else "analyst" if analysts and not peers else "peer or analyst",
            context.peer(),
        )
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{who!r} may not call {what} on {self.me}")
        raise AssertionError("unreachable")  # context.abort raises

    # ------------------------------------------------------------------ Deliver
    async def deliver(self, request_iterator, context):
        sender = await self._identify(context, peers=True, analysts=False, what="Deliver")
        it = request_iterator.__aiter__()
        try:
            first = await it.__anext__()
        except StopAsyncIteration:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty message stream")
        except DecodeError:
            self.log.warning("Deliver from %s refused: malformed chunk", sender)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "malformed chunk")
        if not first.HasField("header"):
            self.log.warning("Deliver from %s refused: first chunk has no header", sender)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "first chunk must carry the message header")
        h = first.header
        total = h.total_length
        s: Session | None = None
        try:
            check_tag(h.tag)
            if total > self.limits.max_message_bytes:
                raise BufferFull(
                    f"message of {total} bytes exceeds max_message_bytes ({self.limits.max_message_bytes})"
                )
            s = self.sessions.for_delivery(sender, h.session)
            if s is not None:
                s.mailbox.reserve(total)
        except SessionGone as e:
            await context.abort(grpc.StatusCode.ABORTED, e.reason[:300])
        except Busy as e:
            self.log.warning("session %r: message %r from %s refused: %s", h.session[:64], h.tag[:80], sender, e)
            if s is not None:
                self.sessions.discard_if_empty(s)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
        except InvalidRequest as e:
            self.log.warning("Deliver from %s refused: %s", sender, e)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except Refused as e:
            self.log.warning("Deliver from %s refused: %s", sender, e)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        parts = [first.data]
        got = len(first.data)
        ok = False
        try:
            if got > total:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"message longer than its announced {total} bytes"
                )
            async for c in _chunks_of(it, time.monotonic() + self.limits.session_timeout):
                if c is None:
                    self.log.warning("session %s: malformed chunk from %s", h.session, sender)
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "malformed chunk")
                if c is _TOO_SLOW:
                    await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "message took longer than session_timeout")
                if c.HasField("header"):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "header repeated inside a message")
                got += len(c.data)
                if got > total:
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT, f"message longer than its announced {total} bytes"
                    )
                if s is not None:
                    parts.append(c.data)
                    if s.error is not None:
                        await context.abort(grpc.StatusCode.ABORTED, str(s.error)[:300])
            if got != total:
                self.log.warning(
                    "session %s: message %r from %s truncated (%d of %d bytes)",
                    h.session,
                    h.tag[:80],
                    sender,
                    got,
                    total,
                )
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"message ended after {got} of {total} bytes")
            if s is None:
                self.log.debug("session %s: late message %r from %s dropped (session done)", h.session, h.tag, sender)
            else:
                s.mailbox.put(sender, h.tag, parts[0] if len(parts) == 1 else b"".join(parts), reserved=total)
                ok = True
                self.log.debug("session %s: %r from %s, %d bytes", h.session, h.tag, sender, total)
        finally:
            if s is not None and not ok:
                s.mailbox.release(total)
                self.sessions.discard_if_empty(s)
        return pb.DeliverAck(received=got)

    # ------------------------------------------------------------------ Abort / Health
    async def abort(self, request, context):
        sender = await self._identify(context, peers=True, analysts=False, what="Abort")
        reason = " ".join((request.reason or "no reason given").split())[:300]
        try:
            changed = self.sessions.abort(request.session, sender, reason)
        except InvalidRequest as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except Refused as e:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        if changed:
            self.log.warning("session %s: aborted by %s: %s", request.session, sender, reason)
        return pb.AbortReply()

    async def health(self, request, context):
        await self._identify(context, peers=True, analysts=True, what="Health")
        state = self.sessions.state_of(request.session) if request.session else SessionState.UNKNOWN
        return pb.HealthReply(
            name=self.me, version=VERSION, active_sessions=self.sessions.active, session_state=int(state)
        )

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
    def _on_fail(self, s: Session, error: BaseException, source: str | None) -> None:
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

    # ------------------------------------------------------------------ StartJob
    def _reply_error(self, kind: str, message: str, t0: float, bytes_sent: int = 0) -> pb.StartJobReply:
        return pb.StartJobReply(
            error=pb.JobError(kind=kind, message=message[:1000]), bytes_sent=bytes_sent, seconds=time.monotonic() - t0
        )

    async def start_job(self, request, context):
        analyst = await self._identify(context, peers=False, analysts=True, what="StartJob")
        t0 = time.monotonic()
        sid, job = request.session, request.job
        try:
            fn = jobs_mod.get_job(job)
            try:
                params = json.loads(request.params_json) if request.params_json else {}
            except json.JSONDecodeError as e:
                raise Refused(f"params are not valid JSON ({e.msg} at position {e.pos})") from None
            if not isinstance(params, dict):
                raise Refused("params must be a JSON object")
            parties = list(request.parties)
            for p in parties:
                if p != self.me and p not in self.config.peers:
                    raise Refused(f"party {p!r} is not a configured peer of {self.me}")
            timeout = request.timeout_seconds if request.timeout_seconds > 0 else self.limits.session_timeout
            left = context.time_remaining()
            if left is not None:
                timeout = min(timeout, max(0.1, left - 0.5))
            s = self.sessions.start(sid, parties, job, timeout)
        except SessionGone as e:
            self.log.warning("session %s: job %s not started: %s", sid[:64], job[:64], e.reason)
            return self._reply_error("peer", e.reason, t0)
        except (Refused, jobs_mod.UnknownJobError) as e:
            self.log.warning("session %s: job %r refused: %s", sid[:64], job[:64], e)
            return self._reply_error("refused", str(e), t0)

        self.log.info(
            "session %s: job %s started by %s, parties %s, timeout %.0f s, params %s",
            sid,
            job,
            analyst,
            ",".join(s.parties),
            s.timeout,
            sorted(params),
        )
        s.on_fail.append(self._on_fail)
        ch = GrpcChannel(s, self.pool, self.limits.max_message_bytes)
        ctx = jobs_mod.JobContext(
            name=self.me,
            ch=ch,
            params=params,
            config=self.config,
            session=sid,
            job=job,
            deadline=s.deadline,
            log=self.log,
        )
        s.task = job_task = asyncio.create_task(self._run(fn, ctx, s))
        dog = Watchdog(
            s,
            self.ping,
            interval=self.limits.peer_check_interval,
            dead_after=self.limits.peer_dead_after,
            unknown_grace=min(10.0, self.limits.pending_ttl),
            refusals=1,
        )
        dog_task = asyncio.create_task(dog.run())
        try:
            await asyncio.wait({job_task})
        except asyncio.CancelledError:
            s.fail(PeerFailedError("the analyst cancelled the job"))
            raise
        finally:
            dog_task.cancel()
            if not job_task.done():
                job_task.cancel()
            await asyncio.gather(job_task, dog_task, return_exceptions=True)
            outside = s.error  # failed from outside: a peer's abort, the watchdog, shutdown
            if job_task.cancelled():
                error: BaseException | None = outside or PeerFailedError("job cancelled")
            else:
                error = job_task.exception()
            if error is not None and outside is not None and isinstance(error, PeerFailedError):
                error = outside  # the root cause, not the symptom seen by a send
            if error is not None and s.error is None:
                s.fail(_as_protocol_error(error, _classify(error, job)[1]))  # tells the peers
            self.sessions.finish(s, error)
        dt = time.monotonic() - t0
        if error is not None:
            kind, msg = _classify(error, job)
            if kind == "internal":
                self.log.error(
                    "session %s: job %s failed after %.2f s: %s: %s",
                    sid,
                    job,
                    dt,
                    error.__class__.__name__,
                    error,
                    exc_info=self.log.isEnabledFor(logging.DEBUG),
                )
            else:
                self.log.warning("session %s: job %s failed after %.2f s: %s", sid, job, dt, msg)
            return self._reply_error(kind, msg, t0, ch.bytes_sent)
        result = job_task.result()
        self.log.info(
            "session %s: job %s done in %.2f s, sent %d bytes, result %d bytes",
            sid,
            job,
            dt,
            ch.bytes_sent,
            len(result),
        )
        return pb.StartJobReply(result_json=result, bytes_sent=ch.bytes_sent, seconds=dt)

    async def _run(self, fn, ctx: jobs_mod.JobContext, s: Session) -> str:
        left = s.remaining() or 0.0
        try:
            async with asyncio.timeout(left + 0.25):  # a recv's own deadline error comes first
                out = await fn(ctx)
        except TimeoutError:
            s.check()
            raise ProtocolTimeoutError(
                f"job {s.job!r} did not finish within the session timeout ({s.timeout:g} s)"
            ) from None
        if not isinstance(out, dict):
            raise ProtocolError(f"job {s.job!r} returned {type(out).__name__}, not a dict")
        try:
            return json.dumps(out)
        except (TypeError, ValueError) as e:
            raise ProtocolError(f"job {s.job!r} returned a result that is not JSON ({e.__class__.__name__})") from None


_TOO_SLOW = object()


async def _chunks_of(it, deadline: float):
    """The remaining chunks of a Deliver stream; then ``None`` for an undecodable chunk,
    ``_TOO_SLOW`` when the stream is still going at ``deadline`` (monotonic)."""
    while True:
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                c = await it.__anext__()
        except StopAsyncIteration:
            return
        except DecodeError:
            yield None
            return
        except TimeoutError:
            yield _TOO_SLOW
            return
        yield c


def _as_protocol_error(e: BaseException, msg: str) -> ProtocolError:
    if isinstance(e, ProtocolError):
        return e
    return ProtocolError(msg)


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
