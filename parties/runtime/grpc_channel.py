"""The :class:`mpc.channel.Channel` of one session, over mTLS gRPC between daemons.

``send`` hands a message of at most :data:`CHUNK_BYTES` to the peer's
``DeliverOne`` in one unary call, and streams a longer one to its ``Deliver`` in
chunks of at most :data:`CHUNK_BYTES` (1 MiB: a client stream of 1 MiB chunks ran
1.2–1.6 GB/s on loopback here, against 0.3 GB/s for one 4 MiB unary call; a
stream's start, writes and half-close cost several event-loop hops, a unary
call one). A peer that answers ``DeliverOne`` with UNIMPLEMENTED (a daemon that
predates it) gets every later message by ``Deliver``. Either way ``send``
returns once the whole message is in the peer's mailbox — so messages with the
same ``(sender, tag)`` arrive in order. ``recv`` waits on this party's mailbox until
the session deadline. The sender's identity travels only as its TLS client
certificate.

Errors are the protocol errors of :mod:`mpc.errors`: a peer that is unreachable,
refuses us or aborted the session → :class:`PeerFailedError`; the deadline →
:class:`ProtocolTimeoutError`; a message the peer refuses for its size →
:class:`ProtocolError`.

:class:`PeerPool` holds one gRPC channel per peer for the whole daemon, with
``grpc.ssl_target_name_override`` set to the peer's *name*: the peer's server
certificate must be issued for that name, so no other party can answer in its
place even at its address.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import cast

import grpc

from mpc.channel import ScopedChannel
from mpc.errors import PeerFailedError, ProtocolError, ProtocolTimeoutError
from parties.config import PeerInfo
from parties.identity.tls import Credentials
from parties.proto.ppdm.v1 import party_pb2 as pb
from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
from parties.runtime.sessions import Session, timeout_error
from parties.runtime.shaping import LinkShaper, WaitCounter

__all__ = [
    "CHUNK_BYTES",
    "STREAM_READY",
    "MAX_RECEIVE_BYTES",
    "GrpcChannel",
    "PeerPool",
    "channel_options",
    "map_rpc_error",
    "short_details",
]

CHUNK_BYTES = 1 << 20
STREAM_READY = ("ppdm-stream", "ready")  # a DeliverStream's initial metadata: the receiver took the stream
MAX_RECEIVE_BYTES = CHUNK_BYTES + (64 << 10)  # one chunk plus header slack

KEEPALIVE_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]


def channel_options(target_name: str, max_receive: int = MAX_RECEIVE_BYTES) -> list[tuple[str, object]]:
    """Options of a client channel to the party named ``target_name``."""
    return [
        ("grpc.ssl_target_name_override", target_name),
        ("grpc.max_receive_message_length", max_receive),
        # a restarted peer is found again quickly. Not grpc.min_reconnect_backoff_ms: gRPC core also
        # uses it as the minimum connect timeout (default 20 s), and a TLS handshake with a loaded
        # daemon takes longer than 200 ms (16 concurrent sessions failed "before receiving SETTINGS")
        ("grpc.initial_reconnect_backoff_ms", 200),
        ("grpc.max_reconnect_backoff_ms", 1_000),
        *KEEPALIVE_OPTIONS,
    ]


def short_details(e: grpc.aio.AioRpcError, limit: int = 160) -> str:
    """A short human reason from an RPC error's details."""
    d = (e.details() or "").strip()
    low = d.lower()
    if "connection refused" in low:
        return "connection refused"
    if "socket closed" in low or "connection reset" in low or "broken pipe" in low or "eof" in low:
        return "connection lost"
    if "hostname verification" in low or "no match found for server name" in low:
        return "TLS: its certificate is not issued for that party name"
    if "peer name" in low or "certificate" in low or "handshake" in low or "ssl" in low or "tls" in low:
        return f"TLS handshake failed: {d[:limit]}"
    return d[:limit] or e.code().name


def map_rpc_error(e: grpc.aio.AioRpcError, peer: str, what: str) -> ProtocolError:
    """Turn a failed call to ``peer`` (doing ``what``) into a protocol error."""
    code = e.code()
    d = short_details(e)
    if code == grpc.StatusCode.UNAVAILABLE:
        return PeerFailedError(f"peer {peer!r} unreachable ({d})")
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return ProtocolTimeoutError(f"{what} to {peer!r} did not finish before the session deadline")
    if code == grpc.StatusCode.ABORTED:
        return PeerFailedError(f"peer {peer!r} has failed the session: {d}")
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return ProtocolError(f"peer {peer!r} refused {what}: {d}")
    if code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.UNAUTHENTICATED):
        return PeerFailedError(f"peer {peer!r} refused us: {d}")
    if code == grpc.StatusCode.CANCELLED:
        return PeerFailedError(f"{what} to {peer!r} was cancelled")
    return PeerFailedError(f"{what} to {peer!r} failed: {code.name}: {d}")


class PeerPool:
    """One gRPC channel per peer, shared by every session of a daemon."""

    def __init__(self, creds: Credentials, peers: Mapping[str, PeerInfo], max_streams: int | None = None):
        self._creds = creds.channel_credentials()
        self._peers = dict(peers)
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._retired: list[grpc.aio.Channel] = []  # channels with the previous credentials, closed at close()
        self._stubs: dict[str, pb_grpc.PartyStub] = {}
        self._max_streams = max_streams
        self._slots: dict[str, asyncio.Semaphore] = {}
        self.stream_only: set[str] = set()  # peers without DeliverOne (UNIMPLEMENTED once): Deliver only
        self.per_message: set[str] = set()  # peers without DeliverStream (UNIMPLEMENTED once): a call per message

    def slots(self, name: str) -> asyncio.Semaphore | None:
        """At most ``max_streams`` messages in flight to ``name`` at once (the peers' ``max_peer_streams``):
        an honest daemon never has a message refused for opening too many streams."""
        if self._max_streams is None:
            return None
        sem = self._slots.get(name)
        if sem is None:
            sem = self._slots[name] = asyncio.Semaphore(self._max_streams)
        return sem

    def __contains__(self, name: str) -> bool:
        return name in self._peers

    def stub(self, name: str) -> pb_grpc.PartyStub:
        s = self._stubs.get(name)
        if s is None:
            info = self._peers.get(name)
            if info is None:
                raise ProtocolError(f"{name!r} is not a configured peer")
            ch = grpc.aio.secure_channel(info.address, self._creds, options=channel_options(name))
            self._channels[name] = ch
            s = self._stubs[name] = pb_grpc.PartyStub(ch)
        return s

    def connected(self, name: str) -> bool:
        """Whether the channel to ``name`` is connected right now."""
        ch = self._channels.get(name)
        return ch is not None and ch.get_state(try_to_connect=False) == grpc.ChannelConnectivity.READY

    def use_credentials(self, creds: Credentials) -> None:
        """Present ``creds`` on every new call (a reloaded certificate). Calls already made finish on the
        channels they started on, which are kept until :meth:`close` or :meth:`close_retired`."""
        self._creds = creds.channel_credentials()
        self._retired.extend(self._channels.values())
        self._channels.clear()
        self._stubs.clear()
        self.stream_only.clear()  # peers are asked again: one may have been upgraded meanwhile
        self.per_message.clear()

    async def close_retired(self) -> None:
        """Close the channels of earlier credentials (no session uses them any more)."""
        chans, self._retired = self._retired, []
        await asyncio.gather(*(c.close(grace=None) for c in chans), return_exceptions=True)

    async def close(self) -> None:
        await self.close_retired()
        chans = list(self._channels.values())
        self._channels.clear()
        self._stubs.clear()
        await asyncio.gather(*(c.close(grace=None) for c in chans), return_exceptions=True)


def _chunks(session: str, tag: str, payload: bytes):
    n = len(payload)
    mv = memoryview(payload)
    first = min(n, CHUNK_BYTES)
    head = payload if first == n and isinstance(payload, bytes) else bytes(mv[:first])  # a whole bytes: no copy
    yield pb.Chunk(header=pb.MessageHeader(session=session, tag=tag, total_length=n), data=head)
    for off in range(first, n, CHUNK_BYTES):
        yield pb.Chunk(data=bytes(mv[off : off + CHUNK_BYTES]))


class GrpcChannel:
    """One party's end of one session between daemons (see :class:`mpc.channel.Channel`)."""

    def __init__(
        self,
        session: Session,
        pool: PeerPool,
        max_message_bytes: int,
        on_sent: Callable[[str, int], None] | None = None,
    ):
        self._on_sent = on_sent  # (peer, bytes) after each message delivered (the daemon's metrics)
        self._session = session
        self._pool = pool
        self._max = max_message_bytes
        self.me: str = session.me
        self.parties: tuple[str, ...] = session.parties
        self.state: dict = {}
        self.bytes_sent = 0
        self._shaper = LinkShaper.from_env()  # benchmarks: emulated WAN links ($PPDM_LINK_SHAPE)
        self._streams: dict[str, _SessionStream] = {}  # the session's message stream to each peer
        self._opening: dict[str, asyncio.Lock] = {}
        self._closed = False

    @property
    def session_id(self) -> str:
        return self._session.id

    def _check_peer(self, p: str) -> None:
        if p == self.me or p not in self.parties:
            raise ProtocolError(f"unknown peer {p!r} (session parties: {list(self.parties)})")

    async def send(self, to: str, tag: str, payload: bytes) -> None:
        self._check_peer(to)
        self._session.check()
        n = len(payload)
        if n > self._max:
            raise ProtocolError(f"message {tag!r} of {n} bytes exceeds max_message_bytes ({self._max})")
        remaining = self._session.remaining()
        if remaining is not None and remaining <= 0:
            raise ProtocolTimeoutError(f"session deadline passed before sending {tag!r} to {to!r}")
        if self._shaper is not None:
            await self._shaper.transmit(to, n)
        stream = await self._stream(to)
        if stream is not None:
            await stream.write(self._session.id, tag, payload)
            self._sent(to, n)
            return
        # wait_for_ready: ride out a reconnect (a peer restarted between sessions); a dead
        # peer is the watchdog's to find. gRPC never retries a started call, so no duplicates.
        slots = self._pool.slots(to)
        if slots is not None:
            await slots.acquire()
        try:
            if n <= CHUNK_BYTES and to not in self._pool.stream_only:
                try:
                    await self._pool.stub(to).DeliverOne(
                        pb.Chunk(
                            header=pb.MessageHeader(session=self._session.id, tag=tag, total_length=n), data=payload
                        ),
                        timeout=self._session.remaining(),
                        wait_for_ready=True,
                    )
                    self._sent(to, n)
                    return
                except grpc.aio.AioRpcError as e:
                    if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                        raise
                    self._pool.stream_only.add(to)  # nothing was delivered: send it again by Deliver
            call = self._pool.stub(to).Deliver(
                _chunks(self._session.id, tag, payload), timeout=self._session.remaining(), wait_for_ready=True
            )
            await call
        except grpc.aio.AioRpcError as e:
            self._session.check()  # the session failed meanwhile: report that, not the symptom
            raise map_rpc_error(e, to, f"message {tag!r} ({n} bytes)") from None
        finally:
            if slots is not None:
                slots.release()
        self._sent(to, n)

    async def _stream(self, to: str) -> _SessionStream | None:
        """The session's message stream to ``to``, opened on first use; None for a peer without
        ``DeliverStream`` (a call per message) or once the channel is closed."""
        st = self._streams.get(to)
        if st is not None or self._closed or to in self._pool.per_message:
            return st
        lock = self._opening.setdefault(to, asyncio.Lock())
        async with lock:
            st = self._streams.get(to)
            if st is None and not self._closed and to not in self._pool.per_message:
                st = await _SessionStream.open(self, to)
                if st is not None and self._closed:  # the session ended while the stream was opening
                    st.cancel()
                    self._session.check()
                    raise PeerFailedError(f"the session ended before its first message to {to!r}")
                if st is not None:
                    self._streams[to] = st
        return st

    async def close(self) -> None:
        """End the session's message streams (the job is done): half-close each and wait until the peer
        has every message in its mailbox. A stream that ends in an error raises it."""
        self._closed = True
        streams, self._streams = list(self._streams.values()), {}
        results = await asyncio.gather(*(st.close() for st in streams), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r

    def cancel(self) -> None:
        """Cancel the session's message streams (the session failed or was cancelled)."""
        self._closed = True
        streams, self._streams = list(self._streams.values()), {}
        for st in streams:
            st.cancel()

    def _sent(self, to: str, n: int) -> None:
        self.bytes_sent += n
        if self._on_sent is not None:
            self._on_sent(to, n)

    async def recv(self, frm: str, tag: str) -> bytes:
        """The next message ``tag`` from ``frm``. A message of several chunks comes as the bytearray it was
        assembled in (no second copy); the protocols read payloads as buffers (``len``, slices,
        ``memoryview``, ``np.frombuffer``), which bytes and bytearray serve alike."""
        self._check_peer(frm)
        try:
            got = self._session.mailbox.get(frm, tag, self._session.remaining())
            return cast(bytes, await WaitCounter.timed(self.state, got))
        except TimeoutError:
            raise timeout_error(frm, tag, self._session.timeout) from None

    def scoped(self, prefix: str) -> ScopedChannel:
        return ScopedChannel(self, prefix)


class _SessionStream:
    """One ``DeliverStream`` call: every message of one session to one peer, in the order sent.

    A write returns once gRPC has taken the message (flow control bounds what is in flight), not
    once the peer has it: a refusal or a lost peer ends the call, and a watcher then fails the
    session (so nobody waits for an answer that cannot come) with the error a per-message call
    would have raised. :meth:`close` half-closes and waits for the peer's ack of the whole stream.
    """

    def __init__(self, ch: GrpcChannel, to: str, call, slots: asyncio.Semaphore | None):
        self._ch, self._to, self._call, self._slots = ch, to, call, slots
        self._lock = asyncio.Lock()  # one message's chunks at a time (gRPC allows one write in flight)
        self._closing = False
        self._watch = asyncio.ensure_future(self._watcher())

    @classmethod
    async def open(cls, ch: GrpcChannel, to: str) -> _SessionStream | None:
        """Start the stream and wait for the peer's initial metadata (it identified us and gave the
        stream a slot); None when the peer has no ``DeliverStream`` (remembered in the pool)."""
        pool, session = ch._pool, ch._session
        slots = pool.slots(to)
        if slots is not None:
            await slots.acquire()
        call = None
        try:
            call = pool.stub(to).DeliverStream(timeout=session.remaining(), wait_for_ready=True)
            md = await call.initial_metadata()
            if STREAM_READY not in tuple(md or ()):  # refused or unknown: the call ends with its status
                code = await call.code()
                if code == grpc.StatusCode.UNIMPLEMENTED:
                    pool.per_message.add(to)
                    call = None
                    return None
                await call  # raises the refusal
                raise PeerFailedError(f"peer {to!r} did not accept the session's message stream")
            st = cls(ch, to, call, slots)
            call = slots = None  # the stream owns them now
            return st
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                pool.per_message.add(to)
                return None
            session.check()
            raise map_rpc_error(e, to, "the session's message stream") from None
        finally:
            if call is not None:
                call.cancel()
            if slots is not None:
                slots.release()

    async def write(self, session: str, tag: str, payload: bytes) -> None:
        n = len(payload)
        try:
            async with self._lock:
                for chunk in _chunks(session, tag, payload):
                    await self._call.write(chunk)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            raise await self._error(f"message {tag!r} ({n} bytes)") from None

    async def _error(self, what: str) -> ProtocolError:
        """The error that ended the call (the session's own error first)."""
        self._ch._session.check()
        try:
            await self._call
        except grpc.aio.AioRpcError as e:
            self._ch._session.check()
            return map_rpc_error(e, self._to, what)
        return PeerFailedError(f"{what} to {self._to!r}: the message stream ended early")

    async def _watcher(self) -> None:
        """Fail the session when the stream ends in an error while the session still runs."""
        try:
            await self._call
        except asyncio.CancelledError:
            pass
        except grpc.aio.AioRpcError as e:
            if not self._closing and e.code() != grpc.StatusCode.CANCELLED:
                self._ch._session.fail(map_rpc_error(e, self._to, "the session's message stream"))
        finally:
            if self._slots is not None:
                self._slots.release()
                self._slots = None

    async def close(self) -> None:
        async with self._lock:
            self._closing = True  # an error now is close()'s to raise
            try:
                await self._call.done_writing()
                await self._call
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                raise await self._error("the session's last messages") from None

    def cancel(self) -> None:
        self._closing = True
        self._call.cancel()
