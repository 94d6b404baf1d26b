"""Received protocol messages of one session, bounded per session and per sending peer.

A :class:`Mailbox` holds the messages of one session keyed ``(sender, tag)``,
delivered FIFO per key. Two bounds apply to every byte a peer makes this daemon
hold — reserved for a message still streaming in, or buffered and not yet read:

* per session: ``max_bytes`` and ``max_messages`` (``[limits]
  max_session_buffer_bytes``, :data:`MAX_MESSAGES`);
* per peer, across every session of the daemon: a shared :class:`PeerLedger`
  (``[limits] max_peer_buffer_bytes``), so one peer cannot hold the daemon's
  memory by spreading messages over many sessions.

Nothing here imports gRPC; the session logic (:mod:`parties.runtime.sessions`) and the
``Deliver`` handler (:mod:`parties.runtime.service`) use it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from mpc.errors import ProtocolError

__all__ = ["MAX_MESSAGES", "Busy", "BufferFull", "SessionGone", "Refused", "InvalidRequest", "PeerLedger", "Mailbox"]

MAX_MESSAGES = 65536  # buffered (unconsumed) messages per session


class Refused(ProtocolError):
    """A request this daemon will not serve (bad id, not a member, too many sessions...)."""


class InvalidRequest(Refused):
    """A malformed session id, tag or request."""


class Busy(Refused):
    """A resource bound is reached (sessions, buffered bytes or messages)."""


class BufferFull(Busy):
    """Accepting the message would exceed a buffer bound (per session or per peer)."""


class SessionGone(ProtocolError):
    """The session failed (or expired) here; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class PeerLedger:
    """Bytes each peer makes this daemon hold, across all sessions; at most ``max_bytes`` per peer."""

    def __init__(self, max_bytes: int | None = None):
        self.max_bytes = max_bytes
        self.held: dict[str, int] = {}

    def charge(self, sender: str, n: int, *, check: bool = True) -> None:
        h = self.held.get(sender, 0)
        if check and self.max_bytes is not None and h + n > self.max_bytes:
            raise BufferFull(
                f"{sender!r} already has {h} bytes buffered here; {n} more would exceed "
                f"max_peer_buffer_bytes ({self.max_bytes})"
            )
        if n:
            self.held[sender] = h + n

    def refund(self, sender: str, n: int) -> None:
        h = self.held.get(sender, 0) - n
        if h > 0:
            self.held[sender] = h
        else:
            self.held.pop(sender, None)


class Mailbox:
    """Messages of one session keyed ``(sender, tag)``, FIFO per key, bounded in bytes and count.

    A sender *reserves* the bytes of a message before streaming it
    (:meth:`reserve`), so the bounds hold for messages still arriving too; a
    reservation becomes a buffered message on :meth:`put` or is returned by
    :meth:`release`. Every byte is accounted to its sender in the shared
    :class:`PeerLedger` (if any) until it is read, dropped or the session fails.
    """

    def __init__(self, max_bytes: int, max_messages: int = MAX_MESSAGES, ledger: PeerLedger | None = None):
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self.ledger = ledger if ledger is not None else PeerLedger()
        self._msgs: dict[tuple[str, str], deque[bytes | bytearray]] = {}
        self._waiters: dict[tuple[str, str], deque[asyncio.Future]] = {}
        self._reserved_by: dict[str, int] = {}
        self._buffered_by: dict[str, int] = {}
        self.buffered_bytes = 0
        self.reserved_bytes = 0
        self.count = 0
        self.error: BaseException | None = None

    def senders(self) -> set[str]:
        return {s for (s, _t) in self._msgs}

    def holders(self) -> set[str]:
        """Senders with messages buffered or bytes reserved here."""
        return self.senders() | set(self._reserved_by)

    def held_by(self, sender: str) -> int:
        """Bytes ``sender`` holds in this mailbox (reserved or buffered)."""
        return self._reserved_by.get(sender, 0) + self._buffered_by.get(sender, 0)

    # ---- accounting helpers
    @staticmethod
    def _add(d: dict[str, int], k: str, n: int) -> None:
        v = d.get(k, 0) + n
        if v > 0:
            d[k] = v
        else:
            d.pop(k, None)

    def _unbuffer(self, sender: str, n: int) -> None:
        self.buffered_bytes -= n
        self._add(self._buffered_by, sender, -n)
        self.ledger.refund(sender, n)

    # ---- reservations
    def reserve(self, n: int, sender: str = "") -> None:
        """Reserve ``n`` bytes for a message from ``sender``; :class:`BufferFull` beyond a bound."""
        if self.error is not None:
            raise SessionGone(str(self.error))
        if self.buffered_bytes + self.reserved_bytes + n > self.max_bytes:
            raise BufferFull(
                f"session buffer full: {self.buffered_bytes + self.reserved_bytes} bytes held, "
                f"{n} more would exceed {self.max_bytes}"
            )
        if self.count >= self.max_messages:
            raise BufferFull(f"session buffer full: {self.count} unread messages")
        self.ledger.charge(sender, n)
        self.reserved_bytes += n
        self._add(self._reserved_by, sender, n)

    def release(self, n: int, sender: str = "") -> None:
        """Return a reservation of ``n`` bytes (the message did not arrive whole)."""
        n = min(n, self._reserved_by.get(sender, 0))
        self.reserved_bytes -= n
        self._add(self._reserved_by, sender, -n)
        self.ledger.refund(sender, n)

    # ---- delivery
    def put(self, sender: str, tag: str, payload: bytes | bytearray, reserved: int = 0) -> None:
        """Deliver a message whose bytes were reserved (``reserved`` = the reservation, 0 if none).

        ``payload``: bytes, or for a message of several chunks the bytearray it was assembled in."""
        if reserved:
            self.release(reserved, sender)
        if self.error is not None:
            return
        key = (sender, tag)
        waiters = self._waiters.get(key)
        while waiters:
            fut = waiters.popleft()
            if not fut.done():
                fut.set_result(payload)
                return
        self._msgs.setdefault(key, deque()).append(payload)
        n = len(payload)
        self.ledger.charge(sender, n, check=False)  # already counted by the reservation just released
        self._add(self._buffered_by, sender, n)
        self.buffered_bytes += n
        self.count += 1

    async def get(self, sender: str, tag: str, timeout: float | None) -> bytes | bytearray:
        """The next message from ``sender`` with ``tag``; raises the session's error once it failed."""
        if self.error is not None:
            raise self.error
        key = (sender, tag)
        q = self._msgs.get(key)
        if q:
            payload = q.popleft()
            if not q:
                del self._msgs[key]
            self._unbuffer(sender, len(payload))
            self.count -= 1
            return payload
        fut = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, deque()).append(fut)
        try:
            if timeout is None:
                return await fut
            return await asyncio.wait_for(fut, max(0.0, timeout))
        finally:
            w = self._waiters.get(key)
            if w is not None:
                # never deque.remove() a missing future: its ValueError would repr() the
                # future, i.e. the whole payload (slow, and payloads are not for messages)
                if any(f is fut for f in w):
                    w.remove(fut)
                if not w:
                    del self._waiters[key]

    def drop_from(self, senders: Iterable[str]) -> None:
        """Drop the buffered messages of ``senders`` (early messages from parties not in the session)."""
        senders = set(senders)
        for key in [k for k in self._msgs if k[0] in senders]:
            for m in self._msgs.pop(key):
                self._unbuffer(key[0], len(m))
                self.count -= 1

    def fail(self, error: BaseException) -> None:
        """Fail every pending and future :meth:`get` with ``error``; drop buffered messages."""
        if self.error is not None:
            return
        self.error = error
        for waiters in self._waiters.values():
            for fut in waiters:
                if not fut.done():
                    fut.set_exception(error)
                    fut.exception()  # mark retrieved: a cancelled getter must not log "never retrieved"
        self._waiters.clear()
        self._msgs.clear()
        for sender, n in list(self._buffered_by.items()):
            self.ledger.refund(sender, n)
        self._buffered_by.clear()
        self.buffered_bytes = 0
        self.count = 0
        # reservations stay until their Deliver call releases them (it sees the error and stops)
