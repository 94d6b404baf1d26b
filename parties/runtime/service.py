"""The gRPC servicer of a party daemon: ``Deliver``, ``DeliverOne``, ``DeliverStream``, ``StartJob``, ``Abort``,
``Health``.

Each handler identifies the caller by its TLS certificate's common name
(``Deliver``, ``DeliverOne``, ``DeliverStream`` and ``Abort``: configured peers; ``StartJob``: configured
analysts; ``Health``: either), checks the request against the daemon's
:class:`~parties.config.Limits`, and acts on the daemon's
:class:`~parties.runtime.sessions.SessionManager`:

* ``Deliver`` streams one protocol message in chunks into the session's
  mailbox, its bytes reserved before they arrive (bounded in size, time and
  count; a malformed, oversized or truncated stream is refused whole);
  ``DeliverOne`` does the same for a message of one chunk in a single call, and
  ``DeliverStream`` for every message of one session from one peer on one
  long-lived stream (what daemons of this version use);
* ``StartJob`` runs a registered job (:mod:`parties.jobs`) on a
  :class:`~parties.runtime.grpc_channel.GrpcChannel` under the session deadline, with a
  :class:`~parties.runtime.watchdog.Watchdog` on the peers; any failure fails the
  session here and the daemon tells the other parties. Unexpected exceptions
  are reported by type only (their message might carry private data);
* ``Abort`` fails a session a peer gave up on (or, from the analyst who
  started it, the analyst's own session); ``Health`` reports this daemon's
  version, load and the state of one session.

Identity: the caller's certificate common name, its role (peer or analyst) as
configured, and — when ``party.toml`` names a revocation list or pins the
peer's certificate — the certificate itself (:meth:`~parties.identity.tls.Credentials.peer_refusal`).

Sessions are keyed ``ANALYST/ID`` (:func:`~parties.runtime.sessions.session_key`):
``StartJob``, and the analyst's ``Health`` and ``Abort``, name the analyst's
own session ids; peers name the full key. Before a session starts, the
daemon's session guards (:mod:`parties.guards.policy`: the party's policy first) may
refuse it; a refusal is error kind ``refused`` with the line
``refused by 'NAME': <rule>``, and the other parties are told at once.

The daemon's life cycle (server, signals, housekeeping, aborts sent to peers)
is :class:`parties.runtime.daemon.Daemon`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.message import DecodeError

from mpc.errors import PeerFailedError, ProtocolError, ProtocolTimeoutError
from parties import jobs as jobs_mod
from parties.guards import dp_budget
from parties.guards.policy import SessionRequest, run_guards, withdraw_guards
from parties.proto.ppdm.v1 import party_pb2 as pb
from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from parties.runtime.grpc_channel import STREAM_READY, GrpcChannel
from parties.runtime.host import DaemonHost
from parties.runtime.sessions import (
    BufferFull,
    Busy,
    InvalidRequest,
    Refused,
    Session,
    SessionGone,
    SessionState,
    check_session_id,
    check_tag,
    session_key,
    split_session_key,
)
from parties.runtime.streams import IDLE, TOO_SLOW, chunks_of, drain
from parties.runtime.watchdog import Watchdog

if TYPE_CHECKING:
    pass


__all__ = ["DaemonHost", "PartyService", "VERSION"]

try:
    from importlib.metadata import version as _v

    VERSION = _v("ppdm")
except Exception:  # pragma: no cover - not installed
    VERSION = "0+unknown"


def _caller(context) -> tuple[str | None, bytes | None]:
    """The caller's certificate common name and PEM certificate (as the TLS layer verified them)."""
    ac = context.auth_context() or {}
    cns = ac.get("x509_common_name") or []
    pems = ac.get("x509_pem_cert") or []
    pem = pems[0] if pems else None
    if not cns:
        return None, pem
    v = cns[0]
    return (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)), pem


def _classify(e: BaseException, job: str) -> tuple[str, str]:
    """``(kind, message)`` of a job failure; unexpected exceptions are reported by type only."""
    if isinstance(e, ProtocolTimeoutError):
        return "timeout", str(e)
    if isinstance(e, PeerFailedError):
        return "peer", str(e)
    if isinstance(e, (Refused, jobs_mod.UnknownJobError, jobs_mod.PolicyRefusal)):
        return "refused", str(e)
    if isinstance(e, ProtocolError):
        return "job", str(e) or e.__class__.__name__
    return "internal", f"job {job!r} raised {e.__class__.__name__} (details in that party's log)"


class _GuardRefusal(Refused):
    """A session guard (the policy first) refused the session (``rule``: the setting, e.g. ``dp.budget``)."""

    def __init__(self, reason: str, rule: str):
        super().__init__(reason)
        self.rule = rule


class PartyService(pb_grpc.PartyServicer):
    """The RPC handlers of one daemon (its sessions, peers, limits and log are the daemon's)."""

    def __init__(self, daemon: DaemonHost):
        self.d = daemon
        self.me, self.config, self.limits, self.log = daemon.me, daemon.config, daemon.limits, daemon.log
        self.sessions, self.pool = daemon.sessions, daemon.pool
        self._streams: dict[str, int] = {}  # open Deliver streams per peer (limits.max_peer_streams)

    # ------------------------------------------------------------------ identity
    async def _identify(self, context, *, peers: bool, analysts: bool, what: str, itself: bool = False) -> str:
        who, pem = _caller(context)
        if who is None:
            self.log.warning("%s refused: no client certificate name (%s)", what, context.peer())
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a client certificate with a common name is required")
        if itself and who == self.me:  # the party's own certificate (the CA signed it; TLS verified it)
            why = self.d.creds.peer_refusal(pem, who)
            if why is None:
                return who
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{self.me} refuses {who!r}: {why}")
        if (peers and who in self.config.peers) or (analysts and who in self.config.analysts):
            peer = self.config.peers.get(who)
            why = self.d.creds.peer_refusal(pem, who, peer.fingerprint if peer is not None else None)
            if why is None:
                return who
            self.log.warning("%s refused: %s (%s)", what, why, context.peer())
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{self.me} refuses {who!r}: {why}")
        self.log.warning(
            "%s refused: %r is not a configured %s (%s)",
            what,
            who,
            "peer" if peers and not analysts else "analyst" if analysts and not peers else "peer or analyst",
            context.peer(),
        )
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"{who!r} may not call {what} on {self.me}")
        raise AssertionError("unreachable")  # context.abort raises

    def _peer_key(self, key: str) -> str:
        """A session key sent by a peer: ``ANALYST/ID`` with a configured analyst."""
        analyst, _ = split_session_key(key)
        if analyst not in self.config.analysts:
            raise Refused(f"session {key[:140]!r} belongs to {analyst!r}, who is not an analyst of {self.me}")
        return key

    # ------------------------------------------------------------------ Deliver
    async def Deliver(self, request_iterator, context):
        sender = await self._identify(context, peers=True, analysts=False, what="Deliver")
        async with self._stream_slot(sender, "Deliver", context):
            return await self._deliver(sender, request_iterator, context)

    async def DeliverStream(self, request_iterator, context):
        """Every message of one session from one peer on one stream (the stream's start is answered with
        initial metadata once the caller is identified and has a stream slot)."""
        sender = await self._identify(context, peers=True, analysts=False, what="DeliverStream")
        async with self._stream_slot(sender, "DeliverStream", context):
            await context.send_initial_metadata((STREAM_READY,))
            return await self._deliver_stream(sender, request_iterator, context)

    async def DeliverOne(self, request, context):
        """One message in one call (its only chunk carries the header and every byte)."""
        sender = await self._identify(context, peers=True, analysts=False, what="DeliverOne")
        async with self._stream_slot(sender, "DeliverOne", context):
            return await self._deliver_one(sender, request, context)

    @contextlib.asynccontextmanager
    async def _stream_slot(self, sender: str, what: str, context):
        """One of the ``max_peer_streams`` messages ``sender`` may have in flight here (refused before
        anything is read: one peer cannot take every RPC slot of this server)."""
        open_now = self._streams.get(sender, 0)
        if open_now >= self.limits.max_peer_streams:
            self.log.warning("%s from %s refused: %d message streams already open", what, sender, open_now)
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many message streams open from {sender} (max_peer_streams {self.limits.max_peer_streams})",
            )
        self._streams[sender] = open_now + 1
        try:
            yield
        finally:
            left = self._streams[sender] - 1
            if left:
                self._streams[sender] = left
            else:
                del self._streams[sender]

    async def _admit_message(self, sender: str, first, context, what: str, it=None) -> Session | None:
        """Check a message's header (``first`` chunk) and reserve its bytes in the session's mailbox:
        the session, or None for a late message of a session already done. A refusal aborts the call;
        on a stream (``it``) the rest of the announced message is read and dropped first
        (:func:`~parties.runtime.streams.drain`)."""
        if not first.HasField("header"):
            self.log.warning("%s from %s refused: first chunk has no header", what, sender)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "first chunk must carry the message header")
        h = first.header
        total = h.total_length

        async def drop(limit: int) -> None:
            if it is not None:
                await drain(it, limit - len(first.data))

        s: Session | None = None
        try:
            check_tag(h.tag)
            key = self._peer_key(h.session)
            if total > self.limits.max_message_bytes:
                raise BufferFull(
                    f"message of {total} bytes exceeds max_message_bytes ({self.limits.max_message_bytes})"
                )
            s = self.sessions.for_delivery(sender, key)
            if s is not None:
                s.mailbox.reserve(total, sender)
        except SessionGone as e:
            await drop(total)
            await context.abort(grpc.StatusCode.ABORTED, e.reason[:300])
        except Busy as e:
            self.log.warning("session %r: message %r from %s refused: %s", h.session[:140], h.tag[:80], sender, e)
            if s is not None:
                self.sessions.discard_if_empty(s)
            await drop(min(total, self.limits.max_message_bytes))
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
        except InvalidRequest as e:
            self.log.warning("%s from %s refused: %s", what, sender, e)
            await drop(min(total, self.limits.max_message_bytes))
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except Refused as e:
            self.log.warning("%s from %s refused: %s", what, sender, e)
            await drop(min(total, self.limits.max_message_bytes))
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        return s

    def _unreserve(self, s: Session | None, sender: str, total: int) -> None:
        """Give back the buffer reserved for a message that will not be delivered."""
        if s is not None:
            s.mailbox.release(total, sender)
            self.sessions.discard_if_empty(s)

    def _put(self, s: Session | None, sender: str, h, payload, total: int) -> None:
        """Hand a whole message to its session's mailbox (or drop a late one)."""
        if s is None:
            self.log.debug("session %s: late message %r from %s dropped (session done)", h.session, h.tag, sender)
            return
        s.mailbox.put(sender, h.tag, payload, reserved=total)
        self.d.metrics.received(sender, total)
        self.log.debug("session %s: %r from %s, %d bytes", h.session, h.tag, sender, total)

    async def _deliver_one(self, sender: str, request, context):
        total, got = request.header.total_length, len(request.data)
        if request.HasField("header") and got != total:
            self.log.warning("DeliverOne from %s refused: %d bytes where %d were announced", sender, got, total)
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"message of {got} bytes where its header announces {total}"
            )
        s = await self._admit_message(sender, request, context, "DeliverOne")
        if s is not None and s.error is not None:
            self._unreserve(s, sender, total)
            await context.abort(grpc.StatusCode.ABORTED, str(s.error)[:300])
        self._put(s, sender, request.header, request.data, total)
        return pb.DeliverAck(received=got)

    async def _first_chunk(self, it, context, what: str, sender: str, deadline: float, idle: float | None):
        """The next chunk of a stream (a message's first), or None when the stream ended; a stream that
        sends nothing for ``idle`` seconds or past ``deadline`` (monotonic), or a malformed chunk, is cut."""
        left = max(0.0, deadline - time.monotonic())
        wait = left if idle is None else min(left, idle)
        try:
            async with asyncio.timeout(wait):
                return await it.__anext__()
        except TimeoutError:
            why = "stream_idle_timeout" if idle is not None and idle <= left else "session_timeout"
            self.log.warning("%s from %s cut: no chunk for %.0f s", what, sender, wait)
            await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, f"no chunk for {wait:g} s ({why})")
        except StopAsyncIteration:
            return None
        except DecodeError:
            self.log.warning("%s from %s refused: malformed chunk", what, sender)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "malformed chunk")

    async def _deliver(self, sender: str, request_iterator, context):
        it = request_iterator.__aiter__()
        idle = self.limits.stream_idle_timeout
        first = await self._first_chunk(
            it, context, "Deliver", sender, time.monotonic() + self.limits.session_timeout, idle
        )
        if first is None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "empty message stream")
        return pb.DeliverAck(received=await self._receive(sender, first, it, context, "Deliver", several=False))

    async def _deliver_stream(self, sender: str, request_iterator, context):
        """The messages of one session on one stream (``DeliverStream``), each received as ``Deliver``
        receives its one. Between messages a stream may stay quiet (a party computing) up to
        ``session_timeout`` from its start; within a message the idle limit applies."""
        it = request_iterator.__aiter__()
        deadline = time.monotonic() + self.limits.session_timeout
        key: str | None = None
        received = 0
        while (first := await self._first_chunk(it, context, "DeliverStream", sender, deadline, None)) is not None:
            if first.HasField("header"):
                if key is None:
                    key = first.header.session
                elif first.header.session != key:
                    self.log.warning("DeliverStream from %s refused: a second session on one stream", sender)
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "one session per message stream")
            received += await self._receive(sender, first, it, context, "DeliverStream", several=True)
        return pb.DeliverAck(received=received)

    async def _receive(self, sender: str, first, it, context, what: str, several: bool) -> int:
        """Receive the message that ``first`` starts (admitted, assembled, put in its mailbox): its bytes.
        ``several``: the stream goes on with more messages (read this one's chunks only); otherwise
        the stream must end with this message."""
        s = await self._admit_message(sender, first, context, what, it)
        h = first.header
        total = h.total_length
        got = len(first.data)
        # a message of several chunks is assembled in place: its peak is the message plus one chunk,
        # not twice the message (the parts and their join) — a peer's buffer cap costs what it says
        buf = bytearray(total) if s is not None and total > got else None
        if buf is not None:
            buf[:got] = first.data
        ok = False
        idle = self.limits.stream_idle_timeout
        try:
            if got > total:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"message longer than its announced {total} bytes"
                )
            if got < total or not several:
                async for c in chunks_of(it, time.monotonic() + self.limits.session_timeout, idle):
                    if c is None:
                        self.log.warning("session %s: malformed chunk from %s", h.session, sender)
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "malformed chunk")
                    if c is IDLE:
                        self.log.warning(
                            "session %s: message from %s cut: no chunk for %.0f s", h.session, sender, idle
                        )
                        await context.abort(
                            grpc.StatusCode.DEADLINE_EXCEEDED, f"no chunk for {idle:g} s (stream_idle_timeout)"
                        )
                    if c is TOO_SLOW:
                        await context.abort(
                            grpc.StatusCode.DEADLINE_EXCEEDED, "message took longer than session_timeout"
                        )
                    if c.HasField("header"):
                        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "header repeated inside a message")
                    got += len(c.data)
                    if got > total:
                        await context.abort(
                            grpc.StatusCode.INVALID_ARGUMENT, f"message longer than its announced {total} bytes"
                        )
                    if s is not None:
                        if buf is not None:
                            buf[got - len(c.data) : got] = c.data
                        if s.error is not None:
                            await context.abort(grpc.StatusCode.ABORTED, str(s.error)[:300])
                    if several and got == total:
                        break
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
            if s is not None and s.error is not None:
                await context.abort(grpc.StatusCode.ABORTED, str(s.error)[:300])
            self._put(s, sender, h, first.data if buf is None else buf, total)
            ok = True
        finally:
            if not ok:
                self._unreserve(s, sender, total)
        return got

    # ------------------------------------------------------------------ Abort / Health
    async def Abort(self, request, context):
        who = await self._identify(context, peers=True, analysts=True, what="Abort")
        reason = " ".join((request.reason or "no reason given").split())[:300]
        if who in self.config.analysts:
            return await self._analyst_abort(who, request.session, reason, context)
        try:
            changed = self.sessions.abort(self._peer_key(request.session), who, reason)
        except InvalidRequest as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        except Busy as e:
            self.log.warning("Abort from %s for session %r refused: %s", who, request.session[:140], e)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(e))
        except Refused as e:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
        if changed:
            self.log.warning("session %s: abort from %s: %s", request.session, who, reason)
        return pb.AbortReply()

    async def _analyst_abort(self, analyst: str, sid: str, reason: str, context):
        """The analyst who started a session gives up on it here; nobody else may."""
        try:
            key = session_key(analyst, sid)
        except InvalidRequest as e:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
        s = self.sessions.sessions.get(key)
        if s is None and self.sessions.owner_conflict(analyst, sid):
            self.log.warning("Abort refused: session %s belongs to another analyst than %s", sid, analyst)
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, f"session {sid} at {self.me} was started by another analyst"
            )
        if s is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no live session {sid} of {analyst!r} at {self.me}")
            raise AssertionError("unreachable")  # context.abort raises
        msg = f"analyst {analyst!r} aborted the session: {reason}"
        if s.state is SessionState.PENDING:
            self.d.refuse_session(key, (), msg)
        elif s.fail(PeerFailedError(msg)):
            self.log.warning("session %s: %s", key, msg)
        return pb.AbortReply()

    async def Health(self, request, context):
        """This daemon's state (serving, sessions, certificate and CRL dates) and one session's.

        A peer asking about a session that waits here for a slot runs it already: the session is
        admitted at once (:meth:`parties.runtime.admission.AdmissionQueue.join`). The party's own
        certificate may call it too (``ppdm party status``).
        """
        who = await self._identify(context, peers=True, analysts=True, what="Health", itself=True)
        state = SessionState.UNKNOWN
        if request.session:
            try:
                if who in self.config.analysts:
                    key = session_key(who, request.session)
                else:
                    key = self._peer_key(request.session)
            except InvalidRequest as e:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
            except Refused as e:
                await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(e))
            if key in self.d.admission:
                if who in self.config.peers:
                    self.d.admission.join(key, who)
                state = self.sessions.state_of(key)
                if state is SessionState.UNKNOWN:
                    state = SessionState.PENDING  # still waiting for a slot here
            else:
                state = self.sessions.state_of(key)
        return self.d.health_reply(pb.HealthReply(name=self.me, version=VERSION, session_state=int(state)))

    # ------------------------------------------------------------------ StartJob
    def _reply_error(self, kind: str, message: str, t0: float, bytes_sent: int = 0) -> pb.StartJobReply:
        return pb.StartJobReply(
            error=pb.JobError(kind=kind, message=message[:1000]), bytes_sent=bytes_sent, seconds=time.monotonic() - t0
        )

    def _admit(self, analyst: str, sid: str, job: str, params_json: str, parties: tuple[str, ...]):
        """Everything checked before a session starts; raises :class:`Refused` (or UnknownJobError)."""
        info = jobs_mod.job_info(job)
        try:
            params = json.loads(params_json) if params_json else {}
        except json.JSONDecodeError as e:
            raise Refused(f"params are not valid JSON ({e.msg} at position {e.pos})") from None
        if not isinstance(params, dict):
            raise Refused("params must be a JSON object")
        if self.me not in parties:
            raise Refused(f"{self.me} is not one of the session's parties {list(parties)}")
        if len(set(parties)) != len(parties):
            raise Refused(f"duplicate party names in {list(parties)}")
        for p in parties:
            if p != self.me and p not in self.config.peers:
                raise Refused(f"party {p!r} is not a configured peer of {self.me}")
        req = SessionRequest(
            party=self.me,
            analyst=analyst,
            session=sid,
            job=job,
            parties=parties,
            params=params,
            private_data=info.private_data,
            sum_style=info.sum_style,
            diagnostic=info.diagnostic,
        )
        refusal = run_guards(self.d.guards, req)
        if refusal is not None:
            raise _GuardRefusal(refusal.reason, refusal.rule)
        return info, params, req

    async def StartJob(self, request, context):
        analyst = await self._identify(context, peers=False, analysts=True, what="StartJob")
        t0 = time.monotonic()
        sid, job, parties = request.session, request.job, tuple(request.parties)
        key: str | None = None
        try:
            check_session_id(sid)
            unusable = self.d.not_serving()
            if unusable is not None:
                raise Refused(unusable)
            if self.sessions.owner_conflict(analyst, sid):
                raise Refused(f"session id {sid} is in use by another analyst")
            key = session_key(analyst, sid)
            info, params, req = self._admit(analyst, sid, job, request.params_json, parties)
            timeout = request.timeout_seconds if request.timeout_seconds > 0 else self.limits.session_timeout
            left = context.time_remaining()
            if left is not None:
                timeout = min(timeout, max(0.1, left - 0.5))
            try:
                s = await self.d.admission.admit(key, parties, job, timeout, analyst)
            except (Refused, SessionGone) as e:  # admitted by the guards, but it cannot start here (or in time)
                withdraw_guards(self.d.guards, req, str(e))  # its job never runs here
                self._guards_finished(req, None, str(e))
                raise
        except SessionGone as e:
            self.log.warning("session %s: job %s not started: %s", (key or sid)[:140], job[:64], e.reason)
            return self._reply_error("peer", e.reason, t0)
        except (Refused, jobs_mod.UnknownJobError) as e:
            what = "refused by policy" if isinstance(e, _GuardRefusal) else "refused"
            self.log.warning(
                "session %s: job %r for %s %s: %s",
                (key or sid)[:140],
                job[:64],
                analyst,
                what,
                e,
                extra={"session": key or sid[:140], "job": job[:64]},
            )
            if isinstance(e, _GuardRefusal):
                self.d.metrics.refused(e.rule.split(".", 1)[0], e.rule)
            else:
                self.d.metrics.refused("daemon", _daemon_rule(e))
            if key is not None:
                self.d.refuse_session(key, parties, f"refused by {self.me!r}: {e}")
            return self._reply_error("refused", f"refused by {self.me!r}: {e}", t0)

        self.log.info(
            "session %s: job %s started by %s, parties %s, timeout %.0f s, params %s",
            key,
            job,
            analyst,
            ",".join(s.parties),
            s.timeout,
            sorted(params),
            extra={"session": key, "job": job},
        )
        self.d.metrics.session_started(job)
        s.on_fail.append(self.d.on_session_fail)
        ch = GrpcChannel(s, self.pool, self.limits.max_message_bytes, on_sent=self.d.metrics.sent)
        ctx = jobs_mod.JobContext(
            name=self.me,
            ch=ch,
            params=params,
            config=self.config,
            session=key,
            job=job,
            deadline=s.deadline,
            log=self.log,
            max_length=self.config.policy.rule(job).max_length,
            privacy=functools.partial(dp_budget.begin, self.me, key),
        )
        s.task = job_task = asyncio.create_task(self._run(self.d.job_function(info, req), ctx, s))
        dog = Watchdog(
            s,
            self.d.ping,
            interval=self.limits.peer_check_interval,
            dead_after=self.limits.peer_dead_after,
            unknown_grace=min(10.0, self.limits.pending_ttl),
            refusals=1,
        )
        s.extra_tasks.append(asyncio.create_task(dog.run()))
        # the session ends when its job task ends, whoever is (or is no longer) waiting for it
        job_task.add_done_callback(functools.partial(self._job_ended, s, req, ch))
        try:
            await asyncio.wait({job_task})
        except asyncio.CancelledError:
            if s.fail(PeerFailedError("the analyst cancelled the job")):
                self.log.info("session %s: job %s cancelled by the analyst", key, job)
            raise
        self._job_ended(s, req, ch, job_task)
        error, result = s.outcome
        dt = time.monotonic() - t0
        if error is not None:
            kind, msg = _classify(error, job)
            if kind == "refused" and not msg.startswith("refused by"):
                msg = f"refused by {self.me!r}: {msg}"
            if kind == "internal":
                # an unexpected exception's message may quote data (a value in a ValueError): the log gets
                # its type and where it was raised — the frames, never the message or the locals
                self.log.error(
                    "session %s: job %s failed after %.2f s: %s raised at %s",
                    key,
                    job,
                    dt,
                    error.__class__.__name__,
                    _where(error, self.log.isEnabledFor(logging.DEBUG)),
                    extra={"session": key, "job": job},
                )
            else:
                self.log.warning(
                    "session %s: job %s failed after %.2f s: %s", key, job, dt, msg, extra={"session": key, "job": job}
                )
            return self._reply_error(kind, msg, t0, ch.bytes_sent)
        _out, text = result
        self.log.info(
            "session %s: job %s done in %.2f s, sent %d bytes, result %d bytes",
            key,
            job,
            dt,
            ch.bytes_sent,
            len(text),
            extra={"session": key, "job": job},
        )
        return pb.StartJobReply(result_json=text, bytes_sent=ch.bytes_sent, seconds=dt)

    def _job_ended(self, s: Session, req: SessionRequest, ch: GrpcChannel, task: asyncio.Task) -> None:
        """End session ``s`` once its job task is done: fail it (peers are told) or finish it. Idempotent.

        Runs as the task's completion callback, so the session ends (and frees
        its slot) even when the ``StartJob`` call was cancelled meanwhile.
        """
        if s.outcome is not None:
            return
        ch.cancel()  # the session's message streams (after a job's success: already closed)
        outside = s.error  # failed from outside: a peer's abort, the watchdog, shutdown, the analyst
        error: BaseException | None
        if task.cancelled():
            error = outside or PeerFailedError("job cancelled")
        else:
            error = task.exception()
        if error is not None and outside is not None and isinstance(error, PeerFailedError):
            error = outside  # the root cause, not the symptom seen by a send
        if error is not None and s.error is None:
            s.fail(_as_protocol_error(error, _classify(error, s.job)[1]))  # tells the peers
        self.sessions.finish(s, error)
        result = None if error is not None else task.result()
        s.outcome = (error, result)
        self.d.metrics.session_ended(
            s.job,
            time.monotonic() - (s.started or time.monotonic()),
            None if error is None else _classify(error, s.job)[0],
        )
        self.d.admission.wake()  # its slot is free: the earliest waiting StartJob that fits takes it
        self._guards_finished(req, None if result is None else result[0], None if error is None else str(error))

    def _guards_finished(self, req: SessionRequest, result: dict[str, Any] | None, error: str | None) -> None:
        """Tell every guard how a session it admitted ended (once per admitted session)."""
        for g in self.d.guards:
            try:
                g.finished(req, result, error)
            except Exception:
                self.log.exception("session %s: session guard %r failed in finished()", req.session, g)

    async def _run(self, fn, ctx: jobs_mod.JobContext, s: Session) -> tuple[dict[str, Any], str]:
        left = s.remaining() or 0.0
        try:
            async with asyncio.timeout(left + 0.25):  # a recv's own deadline error comes first
                out = await fn(ctx)
                if isinstance(ctx.ch, GrpcChannel):
                    await ctx.ch.close()  # done once the peers hold every message the job sent
        except TimeoutError:
            s.check()
            raise ProtocolTimeoutError(
                f"job {s.job!r} did not finish within the session timeout ({s.timeout:g} s)"
            ) from None
        finally:  # what the job opened for the session (an engine, its spill files) ends on every path
            for close in reversed(ctx.cleanup):
                try:
                    await asyncio.to_thread(close)
                except Exception as e:  # a failing close must not hide the job's outcome
                    self.log.warning("session %s: cleanup failed: %s", ctx.session, e.__class__.__name__)
            ctx.cleanup.clear()
        if not isinstance(out, dict):
            raise ProtocolError(f"job {s.job!r} returned {type(out).__name__}, not a dict")
        try:
            return out, json.dumps(out)
        except (TypeError, ValueError) as e:
            raise ProtocolError(f"job {s.job!r} returned a result that is not JSON ({e.__class__.__name__})") from None


def _where(e: BaseException, all_frames: bool) -> str:
    """Where ``e`` was raised: ``file:line in function`` of the innermost frame (every frame, innermost
    last, with ``all_frames``) — file names and line numbers only, nothing of the exception's message."""
    import traceback

    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return "an unknown place"
    shown = frames if all_frames else frames[-1:]
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(shown))


def _daemon_rule(e: BaseException) -> str:
    """The label of a refusal the daemon itself made (metrics ``ppdm_refusals_total{guard="daemon"}``)."""
    from parties.runtime.admission import QueueTimeout

    if isinstance(e, jobs_mod.UnknownJobError):
        return "unknown_job"
    if isinstance(e, QueueTimeout):
        return "queue_timeout"
    if isinstance(e, Busy):
        return "busy"
    if isinstance(e, InvalidRequest):
        return "invalid"
    return "refused"


def _as_protocol_error(e: BaseException, msg: str) -> ProtocolError:
    if isinstance(e, ProtocolError):
        return e
    return ProtocolError(msg)
