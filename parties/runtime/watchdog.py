"""The peer watchdog: fail a running session when one of its peers is dead.

A peer is declared dead when connecting to it is *refused* (``refusals`` times
in a row), when it says it failed the session (after ``failed_grace`` seconds,
so that the Abort it sends, which says why, fails the session first), when it has not known the
session for a grace period, or when it has answered nothing at all for
``dead_after`` seconds. Slowness alone (an event loop busy with numpy for a
second) is not death: a protocol step that holds a peer's loop must not abort
the session, while a killed peer must abort it on every party within seconds.

Nothing here imports gRPC: the watchdog gets a ``ping`` coroutine (the daemon's
Health probe, :meth:`parties.runtime.daemon.Daemon.ping`), so the logic is unit-tested
without sockets. Clocks are ``time.monotonic``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from mpc.errors import PeerFailedError
from parties.runtime.sessions import Session, SessionState

__all__ = ["Watchdog", "PeerUnreachable", "PingFn"]

log = logging.getLogger("ppdm.sessions")


class PeerUnreachable(Exception):
    """Connecting to the peer was refused / the connection failed (not merely slow)."""


PingFn = Callable[[str, str], Awaitable[SessionState]]


class Watchdog:
    """Detect a dead peer of a running session and fail the session.

    ``ping(peer, session_id)`` returns the peer's :class:`SessionState` for the
    session, raises :class:`PeerUnreachable` when the connection is refused, or
    raises ``TimeoutError`` (or anything else) when the peer is merely slow.
    """

    def __init__(
        self,
        session: Session,
        ping: PingFn,
        *,
        interval: float = 0.5,
        dead_after: float = 30.0,
        unknown_grace: float = 10.0,
        refusals: int = 2,
        failed_grace: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.session = session
        self.ping = ping
        self.interval = interval
        self.dead_after = dead_after
        self.unknown_grace = unknown_grace
        self.refusals = refusals
        self.failed_grace = failed_grace
        self.clock = clock
        self.verdict: str | None = None

    async def _watch(self, peer: str) -> str | None:
        refused = 0
        t0 = self.clock()
        last_ok = t0
        while True:
            try:
                state = await self.ping(peer, self.session.id)
            except PeerUnreachable as e:
                refused += 1
                if refused >= self.refusals:
                    detail = f" ({e})" if str(e) else ""
                    return f"peer {peer!r} unreachable{detail}"
            except asyncio.CancelledError:
                raise
            except Exception:  # slow or odd answer: not a verdict by itself
                refused = 0
                if self.clock() - last_ok > self.dead_after:
                    return f"peer {peer!r} not responding for {self.dead_after:g} s"
            else:
                refused = 0
                last_ok = self.clock()
                if state is SessionState.DONE:
                    return None  # its part is over; it can no longer fail us
                if state is SessionState.FAILED:
                    # the peer's Abort carries why it failed and is on its way: let it fail the session
                    # first (it cancels this watch); the bare verdict is for an Abort that never comes
                    await asyncio.sleep(self.failed_grace)
                    return f"peer {peer!r} failed the session"
                if state is SessionState.UNKNOWN and last_ok - t0 > self.unknown_grace:
                    return f"peer {peer!r} does not know the session (restarted, or the job never reached it)"
            await asyncio.sleep(self.interval)

    async def run(self) -> str | None:
        """Watch every peer until one is found dead (fail the session, return why) or cancelled."""
        peers = self.session.peers
        if not peers:
            return None
        tasks = [asyncio.create_task(self._watch(p)) for p in peers]
        verdict = None
        try:
            pending = set(tasks)
            while pending and verdict is None:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                verdict = next((t.result() for t in done if t.result() is not None), None)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.verdict = verdict
        if verdict is not None and self.session.fail(PeerFailedError(verdict)):
            log.warning("session %s: %s", self.session.id, verdict)
        return verdict
