"""Sessions of a party daemon: ownership, early buffering, abort, expiry — and every session ends.

Model
-----
A *session* is one run of one job by an ordered set of parties, started by one
analyst under an id the analyst chose. On the wire between daemons a session
is named ``ANALYST/ID`` (:func:`session_key`): the analyst's certificate name
is part of the key, so sessions are **bound to the analyst who started them**
— another analyst using the same id names a different session and can neither
claim, join nor abort it (:meth:`SessionManager.owner_conflict` refuses it
outright). The daemon keeps, per session, a :class:`~parties.runtime.mailbox.Mailbox`
of received messages keyed ``(sender, tag)``.

* A peer may start sending before the analyst's ``StartJob`` reaches this
  party: its messages are buffered in a *pending* session, which expires after
  ``pending_ttl`` seconds. Pending sessions are charged to the peer that
  created them: at most ``max_peer_pending_sessions`` per peer, and every
  buffered byte counts against ``max_peer_buffer_bytes`` of its sender. They do
  not count against ``max_sessions``, which bounds the sessions analysts run,
  so no peer can fill the daemon with sessions nobody started.
* An ``Abort`` for a session not started here is remembered only as a
  *conditional* abort: it fails the session when the job arrives only if the
  aborting peer is one of its parties (else it is dropped, like early messages
  from non-members).
* Every session has a deadline; a ``recv`` waits at most until then.
* A session *fails* once (:meth:`Session.fail`): every pending and future
  ``recv`` raises the same :class:`~mpc.errors.PeerFailedError`, buffered
  messages are dropped, and the running job is cancelled. The daemon then
  tells the other parties (``Abort``), who fail the session the same way.
* **Every session ends** — finished, failed, cancelled or expired — and frees
  its slot: the daemon finishes a session from its job task's completion
  callback, whoever awaits it, and :meth:`SessionManager.expire` (run every
  second) removes pending sessions past ``pending_ttl`` and, as a safety net,
  any running session still held after its deadline.
* A dead peer fails the session through :class:`parties.runtime.watchdog.Watchdog`.

Nothing here imports gRPC, so the logic is unit-tested without sockets.
Clocks are ``time.monotonic``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mpc.errors import PeerFailedError, ProtocolError, ProtocolTimeoutError
from parties.config import Limits
from parties.runtime.mailbox import (
    MAX_MESSAGES,
    BufferFull,
    Busy,
    InvalidRequest,
    Mailbox,
    PeerLedger,
    Refused,
    SessionGone,
)

__all__ = [
    "SessionState",
    "Mailbox",
    "PeerLedger",
    "Session",
    "SessionManager",
    "Refused",
    "BufferFull",
    "Busy",
    "InvalidRequest",
    "SessionGone",
    "check_session_id",
    "check_session_key",
    "session_key",
    "split_session_key",
    "check_tag",
    "timeout_error",
    "MAX_MESSAGES",
]

log = logging.getLogger("ppdm.sessions")

_SESSION_RE = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_KEY_RE = re.compile(r"^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)/([A-Za-z0-9._-]{1,64})$")
MAX_TAG_LEN = 1024
FINISHED_KEPT = 4096  # finished session ids remembered (to answer Health and refuse reuse)
OVERDUE_GRACE = 5.0  # a running session still held this long after its deadline is failed, twice this: dropped


class SessionState(enum.IntEnum):
    """Values match ``HealthReply.SessionState`` in the wire contract."""

    UNKNOWN = 0
    PENDING = 1
    RUNNING = 2
    DONE = 3
    FAILED = 4


def check_session_id(sid: str) -> str:
    """An analyst's session id: 1-64 characters of ``A-Z a-z 0-9 . _ -``."""
    if not isinstance(sid, str) or not _SESSION_RE.match(sid):
        raise InvalidRequest(f"invalid session id {str(sid)[:80]!r} (1-64 characters of A-Z a-z 0-9 . _ -)")
    return sid


def session_key(analyst: str, sid: str) -> str:
    """The daemons' name of session ``sid`` started by ``analyst``: ``analyst/sid``."""
    return f"{analyst}/{check_session_id(sid)}"


def split_session_key(key: str) -> tuple[str, str]:
    """``(analyst, sid)`` of a key from :func:`session_key`; :class:`InvalidRequest` if malformed."""
    m = _KEY_RE.match(key) if isinstance(key, str) else None
    if m is None:
        raise InvalidRequest(f"invalid session key {str(key)[:140]!r} (expected ANALYST/SESSION-ID)")
    return m.group(1), m.group(2)


def check_session_key(key: str) -> str:
    """A session key as the manager stores it: ``ANALYST/ID`` or (unit tests, bare managers) ``ID``."""
    if isinstance(key, str) and "/" in key:
        split_session_key(key)
        return key
    return check_session_id(key)


def check_tag(tag: str) -> str:
    if not tag or len(tag) > MAX_TAG_LEN or not tag.isprintable():
        raise InvalidRequest(f"invalid tag (empty, longer than {MAX_TAG_LEN} or not printable)")
    return tag


# --------------------------------------------------------------------------- session
@dataclass(eq=False)
class Session:
    """One session at this party."""

    id: str  # the session key (ANALYST/ID)
    me: str
    limits: Limits
    state: SessionState = SessionState.PENDING
    parties: tuple[str, ...] = ()
    job: str = ""
    analyst: str = ""  # who started it here (empty while pending)
    owner: str | None = None  # the peer whose message or abort created it while pending
    created: float = field(default_factory=time.monotonic)
    started: float | None = None
    deadline: float | None = None  # monotonic
    timeout: float | None = None
    error: PeerFailedError | ProtocolError | None = None
    ledger: PeerLedger | None = None
    mailbox: Mailbox = field(init=False)
    task: asyncio.Task | None = None  # the running job
    extra_tasks: list[asyncio.Task] = field(default_factory=list)  # e.g. its watchdog: cancelled when it ends
    aborts: dict[str, str] = field(default_factory=dict)  # peer -> reason, received while pending
    outcome: Any = None  # set by whoever finishes it (the daemon: the job's result or error)
    # called once when the session fails (the daemon sends Abort to the peers)
    on_fail: list[Callable[[Session, BaseException, str | None], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mailbox = Mailbox(self.limits.max_session_buffer_bytes, ledger=self.ledger)

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
    """All sessions of one daemon, keyed by session key; enforces the limits in :class:`Limits`."""

    def __init__(self, me: str, limits: Limits, clock: Callable[[], float] = time.monotonic):
        self.me = me
        self.limits = limits
        self.clock = clock
        self.sessions: dict[str, Session] = {}
        self.ledger = PeerLedger(limits.max_peer_buffer_bytes)
        # key -> (state, reason, ran here); "not ran" = failed before its job reached us
        self.finished: OrderedDict[str, tuple[SessionState, str, bool]] = OrderedDict()

    # ---- queries
    def state_of(self, key: str) -> SessionState:
        s = self.sessions.get(key)
        if s is not None:
            return s.state
        f = self.finished.get(key)
        return f[0] if f else SessionState.UNKNOWN

    @property
    def active(self) -> int:
        """Sessions held: running or pending (what ``Health`` reports)."""
        return len(self.sessions)

    @property
    def running(self) -> int:
        """Sessions an analyst started here and that have not ended (bounded by ``max_sessions``)."""
        return sum(1 for s in self.sessions.values() if s.state is not SessionState.PENDING)

    def pending_of(self, peer: str) -> int:
        """Pending sessions created by ``peer``."""
        return sum(1 for s in self.sessions.values() if s.state is SessionState.PENDING and s.owner == peer)

    def owner_conflict(self, analyst: str, sid: str) -> bool:
        """Whether session id ``sid`` is live here under another analyst than ``analyst``."""
        suffix = "/" + sid
        return any(k.endswith(suffix) and k != f"{analyst}{suffix}" for k in self.sessions)

    def _remember(self, key: str, state: SessionState, reason: str, ran: bool = False) -> None:
        self.finished[key] = (state, reason, ran)
        self.finished.move_to_end(key)
        while len(self.finished) > FINISHED_KEPT:
            self.finished.popitem(last=False)

    def _new(self, key: str, owner: str | None) -> Session:
        s = Session(key, self.me, self.limits, created=self.clock(), owner=owner, ledger=self.ledger)
        self.sessions[key] = s
        return s

    def _new_pending(self, key: str, peer: str) -> Session:
        cap = self.limits.max_peer_pending_sessions
        if self.pending_of(peer) >= cap:
            raise Busy(f"too many pending sessions from {peer!r} at {self.me} ({cap}); try again later")
        return self._new(key, owner=peer)

    # ---- delivery
    def for_delivery(self, sender: str, key: str) -> Session | None:
        """The session a message from ``sender`` goes to, creating a pending one if needed.

        Returns None when the session already finished successfully here (the
        message is then dropped). Raises :class:`SessionGone` if it failed here,
        :class:`Refused` if the sender is not a member, :class:`Busy` if the
        sender already holds ``max_peer_pending_sessions`` pending sessions.
        """
        check_session_key(key)
        s = self.sessions.get(key)
        if s is not None:
            if s.error is not None:
                raise SessionGone(str(s.error))
            if s.state is not SessionState.PENDING and sender not in s.parties:
                raise Refused(f"{sender!r} is not a party of session {key}")
            return s
        f = self.finished.get(key)
        if f is not None:
            if f[0] is SessionState.FAILED:
                raise SessionGone(f[1])
            return None
        s = self._new_pending(key, sender)
        log.info("session %s: pending (message from %s before the job started here)", key, sender)
        return s

    # ---- life cycle
    def slot_refusal(self, key: str) -> str | None:
        """Why session ``key`` finds no slot now (``max_sessions``, or its analyst's share), or None."""
        if self.running >= self.limits.max_sessions:
            return f"too many sessions at {self.me} ({self.limits.max_sessions}); try again later"
        analyst = key.split("/", 1)[0]
        theirs = sum(
            1 for k, x in self.sessions.items() if x.state is not SessionState.PENDING and k.split("/", 1)[0] == analyst
        )
        if theirs >= min(self.limits.max_sessions_per_analyst, self.limits.max_sessions):
            return (
                f"analyst {analyst!r} already runs {theirs} sessions at {self.me} (max_sessions_per_analyst); "
                "try again later"
            )
        return None

    def start(
        self, key: str, parties: Iterable[str], job: str, timeout: float, analyst: str = "", *, joining: bool = False
    ) -> Session:
        """Start (or adopt the pending) session ``key``; raise :class:`Refused`, :class:`SessionGone` or
        :class:`Busy` (no slot). ``joining``: a peer already runs it — it takes no slot of its own
        (:mod:`parties.runtime.admission`)."""
        check_session_key(key)
        parties = tuple(parties)
        if self.me not in parties:
            raise Refused(f"{self.me} is not one of the session's parties {list(parties)}")
        if len(set(parties)) != len(parties):
            raise Refused(f"duplicate party names in {list(parties)}")
        f = self.finished.get(key)
        if f is not None:
            if not f[2]:
                raise SessionGone(f[1])  # aborted by a peer, refused or expired before the job reached us
            raise Refused(f"session id {key} was already used here")
        s = self.sessions.get(key)
        if s is not None and s.state is not SessionState.PENDING:
            raise Refused(f"session {key} is already running here")
        if s is not None and s.error is not None:
            raise SessionGone(str(s.error))
        why = None if joining else self.slot_refusal(key)
        if why is not None:
            raise Busy(why)
        analyst = key.split("/", 1)[0]
        if s is None:
            s = self._new(key, owner=None)
        else:
            aborted = [(p, r) for p, r in s.aborts.items() if p in parties]
            strangers = set(s.aborts) - set(parties)
            if strangers:
                log.warning("session %s: ignoring aborts from non-members %s", key, sorted(strangers))
            if aborted:
                p, reason = aborted[0]
                msg = f"peer {p!r} aborted the session: {reason}"
                del self.sessions[key]
                s.mailbox.fail(PeerFailedError(msg))
                self._remember(key, SessionState.FAILED, msg)
                raise SessionGone(msg)
            s.aborts.clear()
            strangers = s.mailbox.senders() - set(parties)
            if strangers:
                log.warning("session %s: dropping early messages from non-members %s", key, sorted(strangers))
                s.mailbox.drop_from(strangers)
        timeout = min(float(timeout), self.limits.session_timeout)
        now = self.clock()
        s.parties, s.job, s.state, s.analyst = parties, job, SessionState.RUNNING, analyst
        s.started, s.timeout, s.deadline = now, timeout, now + timeout
        return s

    def refuse(self, key: str, reason: str) -> bool:
        """A ``StartJob`` for ``key`` was refused here: fail it unless it is running.

        Returns True if the session is now failed here (the caller then tells
        its other parties, whose sessions would otherwise wait for this one).
        A running session (a duplicate ``StartJob``) is left alone.
        """
        s = self.sessions.get(key)
        if s is not None:
            if s.state is not SessionState.PENDING:
                return False
            del self.sessions[key]
            s.mailbox.fail(Refused(reason))
        elif key in self.finished:
            return False
        self._remember(key, SessionState.FAILED, reason)
        return True

    def discard_if_empty(self, s: Session) -> None:
        """Forget a pending session that holds nothing (its only delivery failed)."""
        m = s.mailbox
        if (
            s.state is SessionState.PENDING
            and m.count == 0
            and m.reserved_bytes == 0
            and not s.aborts
            and self.sessions.get(s.id) is s
        ):
            del self.sessions[s.id]

    def finish(self, s: Session, error: BaseException | None = None) -> None:
        """Forget a session that ended (successfully when ``error`` is None and it did not fail).

        Idempotent; also cancels the session's extra tasks (its watchdog).
        """
        if self.sessions.get(s.id) is s:
            del self.sessions[s.id]
        for t in s.extra_tasks:
            if not t.done():
                t.cancel()
        if s.state in (SessionState.DONE, SessionState.FAILED) and s.id in self.finished:
            return  # already finished
        if error is not None and s.error is None:
            s.error = error if isinstance(error, ProtocolError) else ProtocolError(str(error))
        if s.error is not None:
            s.state = SessionState.FAILED
            s.mailbox.fail(s.error)
            self._remember(s.id, SessionState.FAILED, str(s.error), ran=True)
        else:
            s.state = SessionState.DONE
            self._remember(s.id, SessionState.DONE, "", ran=True)

    def abort(self, key: str, sender: str, reason: str) -> bool:
        """Handle ``Abort`` from peer ``sender``; returns True if a session changed state.

        * A running session is failed if ``sender`` is one of its parties
          (:class:`Refused` otherwise).
        * A pending session (early messages, job not started here) only
          remembers the abort: it fails the session when the job arrives only
          if ``sender`` is one of its parties. Once every peer that sent it
          messages has aborted, the pending session is dropped — nothing in it
          can serve a job any more.
        * An unknown (or finished) session: nothing is kept. Should its job
          still arrive, the watchdog finds the session failed at ``sender``
          within one ping; no peer can make this daemon hold state by aborting
          sessions that do not exist here.
        """
        check_session_key(key)
        msg = f"peer {sender!r} aborted the session: {reason}"
        s = self.sessions.get(key)
        if s is None:
            return False
        if s.state is SessionState.PENDING:
            s.aborts.setdefault(sender, reason)
            contributors = s.mailbox.holders() | {s.owner or sender}
            if contributors <= set(s.aborts):
                del self.sessions[key]
                s.mailbox.fail(SessionGone(msg))
                log.info("session %s: pending session dropped: every peer that sent to it aborted", key)
            return True
        if sender not in s.parties:
            raise Refused(f"{sender!r} is not a party of session {key}")
        return s.fail(PeerFailedError(msg), source=sender)

    def expire(self) -> list[str]:
        """End what must end: pending sessions older than ``pending_ttl``, and overdue running ones.

        A running session whose job ended but which is still held (it must not
        happen; the daemon finishes sessions from the job's completion) is
        finished; one still held ``OVERDUE_GRACE`` seconds after its deadline is
        failed (its job cancelled), and dropped after twice that. Returns the
        keys of the sessions ended.
        """
        now = self.clock()
        gone = []
        for key, s in list(self.sessions.items()):
            if s.state is SessionState.PENDING:
                if now - s.created > self.limits.pending_ttl:
                    del self.sessions[key]
                    n, b = s.mailbox.count, s.mailbox.buffered_bytes
                    s.mailbox.fail(SessionGone("expired"))
                    reason = (
                        f"early messages for session {key} expired after {self.limits.pending_ttl:g} s "
                        "without the job starting here"
                    )
                    self._remember(key, SessionState.FAILED, reason)
                    log.warning("session %s: expired pending session (%d messages, %d bytes dropped)", key, n, b)
                    gone.append(key)
                continue
            overdue = 0.0 if s.deadline is None else now - s.deadline
            if s.task is not None and s.task.done():
                log.error("session %s: its job ended but the session was still held; ending it now", key)
                self.finish(s, s.error)
                gone.append(key)
            elif overdue > 2 * OVERDUE_GRACE or (s.task is None and overdue > 0):
                log.error("session %s: still held %.0f s after its deadline; dropping it", key, overdue)
                s.fail(ProtocolTimeoutError(f"session {key} did not end by its deadline"))
                self.finish(s)
                gone.append(key)
            elif overdue > OVERDUE_GRACE and s.error is None:
                log.warning("session %s: still running %.0f s after its deadline; failing it", key, overdue)
                s.fail(ProtocolTimeoutError(f"session {key} did not end by its deadline"))
        return gone


def timeout_error(frm: str, tag: str, timeout: float | None) -> ProtocolTimeoutError:
    t = f" ({timeout:g} s)" if timeout else ""
    return ProtocolTimeoutError(f"no message {tag!r} from {frm!r} before the session deadline{t}")
