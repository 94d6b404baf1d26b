"""Sessions of a party daemon: mailboxes, early buffering, abort, expiry.

Model
-----
A *session* is one run of one job by an ordered set of parties, named by an id
the analyst chose. The daemon keeps, per session, a :class:`Mailbox` of
received messages keyed ``(sender, tag)`` and delivered FIFO per key.

* A peer may start sending before the analyst's ``StartJob`` reaches this party:
  its messages are buffered in a *pending* session, bounded in bytes and count,
  which expires after ``pending_ttl`` seconds.
* Every session has a deadline; a ``recv`` waits at most until then.
* A session *fails* once (:meth:`Session.fail`): every pending and future
  ``recv`` raises the same :class:`~mpc.errors.PeerFailedError`, buffered
  messages are dropped, and the running job is cancelled. The daemon then
  tells the other parties (``Abort``), who fail the session the same way.
* A dead peer fails the session through :class:`parties.watchdog.Watchdog`.

Nothing here imports gRPC, so the logic is unit-tested without sockets.
Clocks are ``time.monotonic``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import re
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mpc.errors import PeerFailedError, ProtocolError, ProtocolTimeoutError

from .config import Limits

__all__ = [
    "SessionState",
    "Mailbox",
    "Session",
    "SessionManager",
    "Refused",
    "BufferFull",
    "Busy",
    "InvalidRequest",
    "SessionGone",
    "check_session_id",
    "check_tag",
]

log = logging.getLogger("ppdm.sessions")

_SESSION_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_TAG_LEN = 1024
MAX_MESSAGES = 65536  # buffered (unconsumed) messages per session
FINISHED_KEPT = 4096  # finished session ids remembered (to answer Health and refuse reuse)


class SessionState(enum.IntEnum):
    """Values match ``HealthReply.SessionState`` in the wire contract."""

    UNKNOWN = 0
    PENDING = 1
    RUNNING = 2
    DONE = 3
    FAILED = 4


class Refused(ProtocolError):
    """A request this daemon will not serve (bad id, not a member, too many sessions...)."""


class InvalidRequest(Refused):
    """A malformed session id, tag or request."""


class Busy(Refused):
    """A resource bound is reached (sessions, buffered bytes or messages)."""


class BufferFull(Busy):
    """Accepting the message would exceed the session's buffer bounds."""


class SessionGone(ProtocolError):
    """The session failed (or expired) here; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def check_session_id(sid: str) -> str:
    if not isinstance(sid, str) or not _SESSION_RE.match(sid):
        raise InvalidRequest(f"invalid session id {sid[:80]!r} (1-64 characters of A-Z a-z 0-9 . _ -)")
    return sid


def check_tag(tag: str) -> str:
    if not tag or len(tag) > MAX_TAG_LEN or not tag.isprintable():
        raise InvalidRequest(f"invalid tag (empty, longer than {MAX_TAG_LEN} or not printable)")
    return tag


# --------------------------------------------------------------------------- mailbox
class Mailbox:
    """Messages of one session keyed ``(sender, tag)``, FIFO per key, bounded in bytes and count.

    A sender *reserves* the bytes of a message before streaming it
    (:meth:`reserve`), so the bound holds for messages still arriving too; a
    reservation becomes a buffered message on :meth:`put` or is returned by
    :meth:`release`.
    """

    def __init__(self, max_bytes: int, max_messages: int = MAX_MESSAGES):
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._msgs: dict[tuple[str, str], deque[bytes]] = {}
        self._waiters: dict[tuple[str, str], deque[asyncio.Future]] = {}
        self.buffered_bytes = 0
        self.reserved_bytes = 0
        self.count = 0
        self.error: BaseException | None = None

    def senders(self) -> set[str]:
        return {s for (s, _t) in self._msgs}

    def reserve(self, n: int) -> None:
        if self.error is not None:
            raise SessionGone(str(self.error))
        if self.buffered_bytes + self.reserved_bytes + n > self.max_bytes:
            raise BufferFull(
                f"session buffer full: {self.buffered_bytes + self.reserved_bytes} bytes held, "
                f"{n} more would exceed {self.max_bytes}"
            )
        if self.count >= self.max_messages:
            raise BufferFull(f"session buffer full: {self.count} unread messages")
        self.reserved_bytes += n

    def release(self, n: int) -> None:
        self.reserved_bytes = max(0, self.reserved_bytes - n)

    def put(self, sender: str, tag: str, payload: bytes, reserved: int | None = None) -> None:
        """Deliver a message (whose bytes were reserved, ``reserved`` = the reservation)."""
        self.release(len(payload) if reserved is None else reserved)
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
        self.buffered_bytes += len(payload)
        self.count += 1

    async def get(self, sender: str, tag: str, timeout: float | None) -> bytes:
        """The next message from ``sender`` with ``tag``; raises the session's error once it failed."""
        if self.error is not None:
            raise self.error
        key = (sender, tag)
        q = self._msgs.get(key)
        if q:
            payload = q.popleft()
            if not q:
                del self._msgs[key]
            self.buffered_bytes -= len(payload)
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
                self.buffered_bytes -= len(m)
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
        self.buffered_bytes = 0
        self.count = 0


# --------------------------------------------------------------------------- session
@dataclass(eq=False)
class Session:
    """One session at this party."""

    id: str
    me: str
    limits: Limits
    state: SessionState = SessionState.PENDING
    parties: tuple[str, ...] = ()
    job: str = ""
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    deadline: float | None = None  # monotonic
    timeout: float | None = None
    error: PeerFailedError | ProtocolError | None = None
    mailbox: Mailbox = field(init=False)
    task: asyncio.Task | None = None  # the running job
    # called once when the session fails (the daemon sends Abort to the peers)
    on_fail: list[Callable[[Session, BaseException, str | None], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mailbox = Mailbox(self.limits.max_session_buffer_bytes)

    @property
    def peers(self) -> tuple[str, ...]:
        return tuple(p for p in self.parties if p != self.me)

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self) -> None:
        """Raise the session's error if it failed."""
        if self.error is not None:
            raise self.error

    def fail(self, error: ProtocolError, source: str | None = None) -> bool:
        """Fail the session once: wake every ``recv``, cancel the job. ``source`` = peer that told us.

        Returns False if it had already failed (or finished).
        """
        if self.error is not None or self.state in (SessionState.DONE, SessionState.FAILED):
            return False
        self.error = error
        self.state = SessionState.FAILED
        self.mailbox.fail(error)
        if self.task is not None and not self.task.done():
            self.task.cancel()
        for cb in self.on_fail:
            try:
                cb(self, error, source)
            except Exception:  # pragma: no cover - a callback must not break failing
                log.exception("session %s: on_fail callback failed", self.id)
        return True


class SessionManager:
    """All sessions of one daemon, keyed by id; enforces the limits in :class:`Limits`."""

    def __init__(self, me: str, limits: Limits, clock: Callable[[], float] = time.monotonic):
        self.me = me
        self.limits = limits
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        # id -> (state, reason, ran here); "not ran" = failed before its job reached us
        self.finished: OrderedDict[str, tuple[SessionState, str, bool]] = OrderedDict()

    # ---- queries
    def state_of(self, sid: str) -> SessionState:
        s = self.sessions.get(sid)
        if s is not None:
            return s.state
        f = self.finished.get(sid)
        return f[0] if f else SessionState.UNKNOWN

    @property
    def active(self) -> int:
        return len(self.sessions)

    def _remember(self, sid: str, state: SessionState, reason: str, ran: bool = False) -> None:
        self.finished[sid] = (state, reason, ran)
        self.finished.move_to_end(sid)
        while len(self.finished) > FINISHED_KEPT:
            self.finished.popitem(last=False)

    # ---- delivery
    def for_delivery(self, sender: str, sid: str) -> Session | None:
        """The session a message from ``sender`` goes to, creating a pending one if needed.

        Returns None when the session already finished successfully here (the
        message is then dropped). Raises :class:`SessionGone` if it failed here,
        :class:`Refused` if the sender is not a member or too many sessions exist.
        """
        check_session_id(sid)
        s = self.sessions.get(sid)
        if s is not None:
            if s.error is not None:
                raise SessionGone(str(s.error))
            if s.state is SessionState.RUNNING and sender not in s.parties:
                raise Refused(f"{sender!r} is not a party of session {sid}")
            return s
        f = self.finished.get(sid)
        if f is not None:
            if f[0] is SessionState.FAILED:
                raise SessionGone(f[1])
            return None
        if len(self.sessions) >= self.limits.max_sessions:
            raise Busy(f"too many sessions at {self.me} ({self.limits.max_sessions}); try again later")
        s = Session(sid, self.me, self.limits, created=self.clock())
        self.sessions[sid] = s
        log.info("session %s: pending (message from %s before the job started here)", sid, sender)
        return s

    # ---- life cycle
    def start(self, sid: str, parties: Iterable[str], job: str, timeout: float) -> Session:
        """Start (or adopt the pending) session ``sid``; raise :class:`Refused` or :class:`SessionGone`."""
        check_session_id(sid)
        parties = tuple(parties)
        if self.me not in parties:
            raise Refused(f"{self.me} is not one of the session's parties {list(parties)}")
        if len(set(parties)) != len(parties):
            raise Refused(f"duplicate party names in {list(parties)}")
        f = self.finished.get(sid)
        if f is not None:
            if not f[2]:
                raise SessionGone(f[1])  # aborted by a peer, or expired, before the job reached us
            raise Refused(f"session id {sid} was already used here")
        s = self.sessions.get(sid)
        if s is None:
            if len(self.sessions) >= self.limits.max_sessions:
                raise Busy(f"too many sessions at {self.me} ({self.limits.max_sessions}); try again later")
            s = Session(sid, self.me, self.limits, created=self.clock())
            self.sessions[sid] = s
        elif s.state is not SessionState.PENDING:
            raise Refused(f"session {sid} is already running here")
        elif s.error is not None:
            raise SessionGone(str(s.error))
        strangers = s.mailbox.senders() - set(parties)
        if strangers:
            log.warning("session %s: dropping early messages from non-members %s", sid, sorted(strangers))
            s.mailbox.drop_from(strangers)
        timeout = min(float(timeout), self.limits.session_timeout)
        now = self.clock()
        s.parties, s.job, s.state = parties, job, SessionState.RUNNING
        s.started, s.timeout, s.deadline = now, timeout, now + timeout
        return s

    def discard_if_empty(self, s: Session) -> None:
        """Forget a pending session that holds nothing (its only delivery failed)."""
        m = s.mailbox
        if s.state is SessionState.PENDING and m.count == 0 and m.reserved_bytes == 0 and self.sessions.get(s.id) is s:
            del self.sessions[s.id]

    def finish(self, s: Session, error: BaseException | None = None) -> None:
        """Forget a session that ended (successfully when ``error`` is None and it did not fail)."""
        if self.sessions.get(s.id) is s:
            del self.sessions[s.id]
        if error is not None and s.error is None:
            s.error = error if isinstance(error, ProtocolError) else ProtocolError(str(error))
        if s.error is not None:
            s.state = SessionState.FAILED
            s.mailbox.fail(s.error)
            self._remember(s.id, SessionState.FAILED, str(s.error), ran=True)
        else:
            s.state = SessionState.DONE
            self._remember(s.id, SessionState.DONE, "", ran=True)

    def abort(self, sid: str, sender: str, reason: str) -> bool:
        """Handle ``Abort`` from ``sender``; returns True if a session changed state."""
        check_session_id(sid)
        msg = f"peer {sender!r} aborted the session: {reason}"
        s = self.sessions.get(sid)
        if s is not None:
            if s.state is SessionState.RUNNING and sender not in s.parties:
                raise Refused(f"{sender!r} is not a party of session {sid}")
            if s.state is SessionState.PENDING:
                # not started here: remember the abort so a late StartJob fails at once
                del self.sessions[sid]
                s.mailbox.fail(PeerFailedError(msg))
                self._remember(sid, SessionState.FAILED, msg)
                return True
            return s.fail(PeerFailedError(msg), source=sender)
        if sid not in self.finished:
            self._remember(sid, SessionState.FAILED, msg)
            return True
        return False

    def expire(self) -> list[str]:
        """Drop pending sessions older than ``pending_ttl``; return their ids."""
        now = self.clock()
        gone = []
        for sid, s in list(self.sessions.items()):
            if s.state is SessionState.PENDING and now - s.created > self.limits.pending_ttl:
                del self.sessions[sid]
                n, b = s.mailbox.count, s.mailbox.buffered_bytes
                s.mailbox.fail(SessionGone("expired"))
                reason = (
                    f"early messages for session {sid} expired after {self.limits.pending_ttl:g} s "
                    "without the job starting here"
                )
                self._remember(sid, SessionState.FAILED, reason)
                log.warning("session %s: expired pending session (%d messages, %d bytes dropped)", sid, n, b)
                gone.append(sid)
        return gone


def timeout_error(frm: str, tag: str, timeout: float | None) -> ProtocolTimeoutError:
    t = f" ({timeout:g} s)" if timeout else ""
    return ProtocolTimeoutError(f"no message {tag!r} from {frm!r} before the session deadline{t}")
