"""Admission of sessions beyond ``max_sessions``: a bounded queue, in arrival order, up to each deadline.

A ``StartJob`` that finds no slot (``max_sessions``, or its analyst's ``max_sessions_per_analyst``)
waits here instead of being refused, while fewer than ``max_queued_sessions`` wait; past that it is
refused at once ("queue full"). A waiting call is admitted when a slot frees — the earliest waiting
call that fits first — or gives up at its deadline (the analyst's call deadline and the session
timeout), with one line naming the wait; its other parties are then told, as for any refusal. The time
spent waiting counts against the session's timeout.

Sessions are joint: the analyst starts one on every party at once, and each daemon admits in its own
arrival order. A session may thus run at one party while it waits at another; if every slot at each of
two daemons were held by sessions waiting for the other, nothing would move (a distributed deadlock).
So a session a peer already runs does not wait long for a slot here: the running party's watchdog asks
this daemon for the session's state every ``peer_check_interval`` (:class:`parties.runtime.watchdog.Watchdog`),
and a ``Health`` call from one of the session's parties about a session that has waited here for
:data:`JOIN_AFTER` seconds admits it at once (:meth:`AdmissionQueue.join`). A waiting session therefore
waits for a slot only while no party runs it, or for a second; once one does, it runs everywhere
shortly after. The cost is a bounded overshoot: sessions joined this way run beside ``max_sessions``
others, at most ``max_queued_sessions`` of them (they come from the queue), so at most
``max_sessions + max_queued_sessions`` sessions ever run here. The second of grace lets the ordinary
order admit a session whose slot frees soon, so joins are rare when sessions are short.

While the daemon drains (SIGTERM) every waiting call is refused (:meth:`AdmissionQueue.close`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from parties.runtime.mailbox import Busy, Refused
from parties.runtime.sessions import Session, SessionManager

__all__ = ["AdmissionQueue", "QueueTimeout", "Waiter", "JOIN_AFTER"]

JOIN_AFTER = 1.0  # seconds a session a peer runs waits here for a slot before it joins without one

log = logging.getLogger("ppdm.sessions")


class QueueTimeout(Busy):
    """A waiting ``StartJob`` reached its deadline without a slot."""


@dataclass(eq=False)
class Waiter:
    """One ``StartJob`` waiting for a slot."""

    key: str
    parties: tuple[str, ...]
    job: str
    deadline: float  # monotonic
    analyst: str
    since: float = field(default_factory=time.monotonic)
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class AdmissionQueue:
    """The waiting ``StartJob`` calls of one daemon (see the module docstring)."""

    def __init__(self, sessions: SessionManager):
        self.sessions = sessions
        self.limits = sessions.limits
        self._waiting: OrderedDict[str, Waiter] = OrderedDict()
        self._closed: str | None = None
        self.joined = 0  # sessions admitted because a peer already ran them (beyond max_sessions)

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, key: str) -> bool:
        return key in self._waiting

    async def admit(self, key: str, parties: tuple[str, ...], job: str, timeout: float, analyst: str) -> Session:
        """Start session ``key`` now, or once a slot frees before ``timeout`` seconds pass.

        Raises :class:`Busy` (queue full, or :class:`QueueTimeout`), :class:`Refused` (draining, or
        what :meth:`SessionManager.start` refuses) or ``SessionGone``.
        """
        if self._closed is not None:
            raise Refused(self._closed)
        if self.sessions.slot_refusal(key) is None and not self._waiting_ahead(key):
            return self.sessions.start(key, parties, job, timeout, analyst=analyst)
        if key in self._waiting:
            raise Refused(f"session {key} is already waiting here")
        cap = self.limits.max_queued_sessions
        if len(self._waiting) >= cap:
            why = self.sessions.slot_refusal(key) or "no slot"
            raise Busy(f"{why.removesuffix('; try again later')}, and {cap} more wait (max_queued_sessions)")
        w = Waiter(key, parties, job, time.monotonic() + timeout, analyst)
        self._waiting[key] = w
        log.info("session %s: job %s waits for a slot (%d waiting)", key, job, len(self._waiting))
        try:
            return await asyncio.wait_for(asyncio.shield(w.future), timeout)
        except TimeoutError:
            if w.future.done() and not w.future.cancelled() and w.future.exception() is None:
                return w.future.result()  # admitted just as the deadline passed
            raise QueueTimeout(
                f"no session slot at {self.sessions.me} within {timeout:.0f} s "
                f"(max_sessions {self.limits.max_sessions} busy, {len(self._waiting)} waiting)"
            ) from None
        finally:
            if self._waiting.get(key) is w:
                del self._waiting[key]
            if not w.future.done():
                w.future.cancel()

    def _waiting_ahead(self, key: str) -> bool:
        """Whether a call that fits would overtake one waiting before it (arrival order is kept)."""
        return any(self.sessions.slot_refusal(w.key) is None for w in self._waiting.values() if w.key != key)

    def _start(self, w: Waiter, *, joining: bool) -> None:
        left = w.deadline - time.monotonic()
        try:
            s = self.sessions.start(w.key, w.parties, w.job, max(0.1, left), analyst=w.analyst, joining=joining)
        except Exception as e:  # refused or gone meanwhile: the caller reports it
            w.future.set_exception(e)
        else:
            w.future.set_result(s)
        del self._waiting[w.key]

    def wake(self) -> int:
        """Admit waiting calls, earliest first, while they find a slot; how many were admitted."""
        n = 0
        for w in list(self._waiting.values()):
            if w.future.done():
                continue
            if self.sessions.slot_refusal(w.key) is None:
                self._start(w, joining=False)
                n += 1
        return n

    def join(self, key: str, peer: str) -> bool:
        """``peer``, a party of waiting session ``key``, runs it already: admit it now (no slot needed)."""
        w = self._waiting.get(key)
        if w is None or w.future.done() or peer not in w.parties or time.monotonic() - w.since < JOIN_AFTER:
            return False
        log.info("session %s: %s already runs it; admitted beside the %d running", key, peer, self.sessions.running)
        self.joined += 1
        self._start(w, joining=True)
        return True

    def close(self, reason: str) -> None:
        """Refuse every waiting call and every later one (the daemon is draining)."""
        self._closed = reason
        for w in list(self._waiting.values()):
            if not w.future.done():
                w.future.set_exception(Refused(reason))
        self._waiting.clear()
