"""The channel every ppdm protocol is written against, and an in-memory network.

Model
-----
A *channel* connects one party (``me``) to the other parties of one session.
Messages are opaque ``bytes`` addressed by ``(peer, tag)``; a tag names one step
of one protocol (e.g. ``"sum/shares"``) and is unique within a session, so
concurrent protocol steps never mix. Messages with the same ``(sender, tag)``
are delivered in the order the sender sent them.

The same protocol code runs over

* :class:`MemoryNetwork` — all parties in one event loop (unit tests), and
* ``parties.runtime.grpc_channel.GrpcChannel`` — separate daemons over mTLS gRPC.

``mpc`` never imports gRPC.

Arrays travel as raw little-endian bytes with their dtype and shape in a small
header (:func:`pack_arrays`), never as lists.
"""

from __future__ import annotations

import asyncio
import struct
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import InputMismatchError, ProtocolError, ProtocolTimeoutError

__all__ = [
    "Channel",
    "ScopedChannel",
    "MemoryNetwork",
    "MemoryChannel",
    "pack_arrays",
    "unpack_arrays",
    "send_array",
    "recv_array",
    "send_arrays",
    "recv_arrays",
    "broadcast",
    "gather_from",
    "agree",
    "run_parties",
    "scoped",
    "peers_of",
    "root_channel",
]


@runtime_checkable
class Channel(Protocol):
    """What a protocol needs from the network.

    Attributes
    ----------
    me:
        This party's name (bound to its certificate by the gRPC transport).
    parties:
        All parties of the session in the agreed protocol order, ``me`` included.
    state:
        Session-scoped cache shared by the protocols of one session (e.g. the
        base OTs of an OT extension), so set-up work is done once per pair.
    bytes_sent:
        Payload bytes this party has sent in the session (for reports).
    """

    @property
    def me(self) -> str: ...

    @property
    def parties(self) -> tuple[str, ...]: ...

    @property
    def state(self) -> dict: ...

    @property
    def bytes_sent(self) -> int: ...

    async def send(self, to: str, tag: str, payload: bytes) -> None: ...

    async def recv(self, frm: str, tag: str) -> bytes: ...


class ScopedChannel:
    """A view of a channel whose tags are prefixed with ``prefix/``.

    Used to give each sub-protocol its own tag namespace:
    ``secure_sum(ch.scoped("level3"), ...)``.
    """

    def __init__(self, inner: Channel, prefix: str):
        self._inner = inner
        self._prefix = prefix

    @property
    def root(self) -> Channel:
        """The unscoped channel of the session (for session-wide set-up such as base OTs)."""
        return getattr(self._inner, "root", self._inner)

    @property
    def inner(self) -> Channel:
        """The channel this view prefixes."""
        return self._inner

    @property
    def prefix(self) -> str:
        """This view's own tag prefix (without the inner channel's)."""
        return self._prefix

    @property
    def me(self) -> str:
        return self._inner.me

    @property
    def parties(self) -> tuple[str, ...]:
        return self._inner.parties

    @property
    def state(self) -> dict:
        return self._inner.state

    @property
    def bytes_sent(self) -> int:
        return self._inner.bytes_sent

    async def send(self, to: str, tag: str, payload: bytes) -> None:
        await self._inner.send(to, f"{self._prefix}/{tag}", payload)

    async def recv(self, frm: str, tag: str) -> bytes:
        return await self._inner.recv(frm, f"{self._prefix}/{tag}")

    def scoped(self, prefix: str) -> ScopedChannel:
        return ScopedChannel(self._inner, f"{self._prefix}/{prefix}")


def scoped(ch: Channel, prefix: str) -> Channel:
    """Return ``ch`` with every tag prefixed by ``prefix`` (see :class:`ScopedChannel`)."""
    return ScopedChannel(ch, prefix)


def peers_of(ch: Channel) -> list[str]:
    """The other parties of the session, in protocol order."""
    return [p for p in ch.parties if p != ch.me]


# --------------------------------------------------------------------------- arrays
_HDR = struct.Struct("<I")


def pack_arrays(*arrays: np.ndarray) -> bytes:
    """Serialize arrays as ``count, then per array (dtype, ndim, shape), then raw bytes``.

    The dtype is stored in its little-endian form; big-endian inputs are converted.
    """
    head: list[bytes | memoryview] = [_HDR.pack(len(arrays))]
    bodies: list[bytes | memoryview] = []
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        dt = a.dtype.str.encode()
        head.append(struct.pack("<B", len(dt)) + dt + struct.pack("<B", a.ndim) + struct.pack(f"<{a.ndim}Q", *a.shape))
        bodies.append(np.ascontiguousarray(a).reshape(-1).view(np.uint8).data)  # joined without a copy of its own
    return b"".join(head + bodies)


def unpack_arrays(payload: bytes) -> list[np.ndarray]:
    """Inverse of :func:`pack_arrays`; raises :class:`ProtocolError` on malformed input."""
    try:
        mv = memoryview(payload)
        (count,) = _HDR.unpack_from(mv, 0)
        off = _HDR.size
        specs = []
        for _ in range(count):
            (ldt,) = struct.unpack_from("<B", mv, off)
            off += 1
            dt = np.dtype(bytes(mv[off : off + ldt]).decode())
            off += ldt
            (ndim,) = struct.unpack_from("<B", mv, off)
            off += 1
            shape = struct.unpack_from(f"<{ndim}Q", mv, off)
            off += 8 * ndim
            if dt.hasobject:
                raise ValueError("object arrays are not allowed")
            specs.append((dt, shape))
        out = []
        for dt, shape in specs:
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            if off + nbytes > len(mv):
                raise ValueError("truncated array payload")
            out.append(np.frombuffer(mv[off : off + nbytes], dtype=dt).reshape(shape))
            off += nbytes
        if off != len(mv):
            raise ValueError("trailing bytes after arrays")
        return out
    except (struct.error, ValueError, TypeError) as e:
        raise ProtocolError(f"malformed array message: {e}") from None


async def send_array(ch: Channel, to: str, tag: str, a: np.ndarray) -> None:
    """Send one numpy array."""
    await ch.send(to, tag, pack_arrays(a))


async def recv_array(ch: Channel, frm: str, tag: str) -> np.ndarray:
    """Receive one numpy array (read-only view on the received bytes)."""
    (a,) = unpack_arrays(await ch.recv(frm, tag))
    return a


async def send_arrays(ch: Channel, to: str, tag: str, *arrays: np.ndarray) -> None:
    """Send several numpy arrays in one message."""
    await ch.send(to, tag, pack_arrays(*arrays))


async def recv_arrays(ch: Channel, frm: str, tag: str) -> list[np.ndarray]:
    """Receive several numpy arrays sent by :func:`send_arrays`."""
    return unpack_arrays(await ch.recv(frm, tag))


async def broadcast(ch: Channel, tag: str, payload: bytes, to: Iterable[str] | None = None) -> None:
    """Send the same payload to every peer (or to ``to``) concurrently."""
    targets = peers_of(ch) if to is None else list(to)
    await asyncio.gather(*(ch.send(p, tag, payload) for p in targets))


async def gather_from(ch: Channel, tag: str, frm: Iterable[str] | None = None) -> dict[str, bytes]:
    """Receive one message with ``tag`` from every peer (or from ``frm``)."""
    sources = peers_of(ch) if frm is None else list(frm)
    got = await asyncio.gather(*(ch.recv(p, tag) for p in sources))
    return dict(zip(sources, got))


async def agree(ch: Channel, tag: str, **public: Any) -> None:
    """Check that every party holds the same public parameters (lengths, modes...).

    Each party sends its ``public`` values (JSON-able scalars) to every other;
    if any differ, *every* party raises :class:`InputMismatchError` naming the
    values each party gave — so a length mismatch is one clear error everywhere
    instead of a hang or a garbage result.
    """
    import json

    mine = json.dumps(public, sort_keys=True).encode()
    await broadcast(ch, f"agree/{tag}", mine)
    theirs = await gather_from(ch, f"agree/{tag}")
    theirs[ch.me] = mine
    if len(set(theirs.values())) > 1:
        by_party = {p: json.loads(theirs[p]) for p in ch.parties}
        keys = sorted({k for v in by_party.values() for k in v})
        diffs = []
        for k in keys:
            vals = {p: v.get(k) for p, v in by_party.items()}
            if len({json.dumps(x) for x in vals.values()}) > 1:
                diffs.append(f"{k}: " + ", ".join(f"{p}={vals[p]}" for p in ch.parties))
        raise InputMismatchError(f"parties disagree on {tag} inputs ({'; '.join(diffs)})")


# --------------------------------------------------------------------------- in memory
class MemoryNetwork:
    """All parties of a session in one event loop, for unit tests of protocol logic.

    ``net.channel("alice")`` gives alice's :class:`MemoryChannel`. Payloads are
    copied (``bytes(...)``) so no party can mutate another's data.
    """

    def __init__(self, parties: Sequence[str], timeout: float = 60.0):
        if len(set(parties)) != len(parties):
            raise ValueError("party names must be distinct")
        self.parties = tuple(parties)
        self.timeout = timeout
        self._queues: dict[tuple[str, str, str], asyncio.Queue] = defaultdict(asyncio.Queue)
        self._channels: dict[str, MemoryChannel] = {}

    def channel(self, name: str) -> MemoryChannel:
        if name not in self.parties:
            raise KeyError(name)
        if name not in self._channels:
            self._channels[name] = MemoryChannel(self, name)
        return self._channels[name]

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes_sent for c in self._channels.values())


class MemoryChannel:
    """One party's end of a :class:`MemoryNetwork`."""

    def __init__(self, net: MemoryNetwork, me: str):
        self._net = net
        self.me = me
        self.parties = net.parties
        self.state: dict = {}
        self.bytes_sent = 0

    async def send(self, to: str, tag: str, payload: bytes) -> None:
        if to not in self.parties or to == self.me:
            raise ProtocolError(f"unknown peer {to!r}")
        self.bytes_sent += len(payload)
        await self._net._queues[(to, self.me, tag)].put(bytes(payload))
        await asyncio.sleep(0)

    async def recv(self, frm: str, tag: str) -> bytes:
        if frm not in self.parties or frm == self.me:
            raise ProtocolError(f"unknown peer {frm!r}")
        q = self._net._queues[(self.me, frm, tag)]
        try:
            return await asyncio.wait_for(q.get(), self._net.timeout)
        except TimeoutError:
            raise ProtocolTimeoutError(f"no message {tag!r} from {frm} within {self._net.timeout:g} s") from None

    @property
    def root(self) -> MemoryChannel:
        return self

    def scoped(self, prefix: str) -> ScopedChannel:
        return ScopedChannel(self, prefix)


def root_channel(ch: Channel) -> Channel:
    """The unscoped channel under any number of :class:`ScopedChannel` views."""
    return getattr(ch, "root", ch)


async def _run_all(coros: list[Awaitable]) -> list:
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def run_parties(
    parties: Sequence[str] | int,
    fn: Callable[..., Awaitable],
    inputs: Mapping[str, Any] | Sequence[Any] | None = None,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Run ``fn(channel, input)`` for every party on a fresh :class:`MemoryNetwork`.

    ``parties`` is a list of names or a count (names ``p0, p1, ...``). Returns
    ``{party: result}``. The first exception of any party cancels the others and
    is re-raised.
    """
    names = [f"p{i}" for i in range(parties)] if isinstance(parties, int) else list(parties)
    if inputs is None:
        per = {n: None for n in names}
    elif isinstance(inputs, Mapping):
        per = dict(inputs)
    else:
        per = dict(zip(names, inputs))

    async def main():
        net = MemoryNetwork(names, timeout=timeout)
        res = await _run_all([fn(net.channel(n), per[n]) for n in names])
        return dict(zip(names, res))

    return asyncio.run(main())
