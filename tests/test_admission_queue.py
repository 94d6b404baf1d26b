"""The session queue (parties.runtime.admission) without sockets: order, deadlines, joins, draining, bounds."""

from __future__ import annotations

import asyncio

import pytest

from parties.config import Limits
from parties.runtime import admission
from parties.runtime.admission import AdmissionQueue, QueueTimeout
from parties.runtime.mailbox import Busy, Refused
from parties.runtime.sessions import SessionManager, SessionState

PARTIES = ("me", "peer")


def queue(max_sessions: int = 1, max_queued: int = 8) -> AdmissionQueue:
    limits = Limits(max_sessions=max_sessions, max_sessions_per_analyst=max_sessions, max_queued_sessions=max_queued)
    return AdmissionQueue(SessionManager("me", limits))


def test_waiting_calls_are_admitted_in_arrival_order_as_slots_free():
    async def scenario():
        q = queue()
        first = await q.admit("a/s0", PARTIES, "job", 30, "a")
        waiting = [asyncio.create_task(q.admit(f"a/s{i}", PARTIES, "job", 30, "a")) for i in range(1, 5)]
        await asyncio.sleep(0)
        assert len(q) == 4
        order, running = [], first
        for _ in range(4):
            q.sessions.finish(running)
            assert q.wake() == 1
            await asyncio.sleep(0.01)  # the admitted call's task resumes
            done = next(t for t in waiting if t.done() and t not in order)
            order.append(done)
            running = done.result()
            assert q.sessions.running == 1  # never more than max_sessions without joins
        return [t.result().id for t in order]

    assert asyncio.run(scenario()) == ["a/s1", "a/s2", "a/s3", "a/s4"]


def test_a_newcomer_does_not_overtake_a_waiting_call():
    async def scenario():
        q = queue(max_sessions=2)
        s0 = await q.admit("a/s0", PARTIES, "job", 30, "a")
        await q.admit("a/s1", PARTIES, "job", 30, "a")
        w = asyncio.create_task(q.admit("a/s2", PARTIES, "job", 30, "a"))
        await asyncio.sleep(0)
        q.sessions.finish(s0)  # a slot frees; before wake() runs, a newcomer arrives
        late = asyncio.create_task(q.admit("a/s3", PARTIES, "job", 30, "a"))
        await asyncio.sleep(0)
        assert not late.done() and len(q) == 2
        q.wake()
        await asyncio.sleep(0.01)
        assert w.done() and not late.done()
        late.cancel()

    asyncio.run(scenario())


def test_the_deadline_ends_a_wait_and_a_full_queue_refuses():
    async def scenario():
        q = queue(max_queued=1)
        await q.admit("a/s0", PARTIES, "job", 30, "a")
        w = asyncio.create_task(q.admit("a/s1", PARTIES, "job", 0.2, "a"))
        await asyncio.sleep(0.01)
        with pytest.raises(Busy, match="max_queued_sessions"):
            await q.admit("a/s2", PARTIES, "job", 30, "a")
        with pytest.raises(QueueTimeout, match="no session slot at me within 0 s"):
            await w
        assert len(q) == 0 and q.sessions.state_of("a/s1") is SessionState.UNKNOWN

    asyncio.run(scenario())


def test_a_session_a_peer_runs_joins_after_the_grace_and_only_for_its_parties(monkeypatch):
    monkeypatch.setattr(admission, "JOIN_AFTER", 0.05)

    async def scenario():
        q = queue()
        await q.admit("a/s0", PARTIES, "job", 30, "a")
        w = asyncio.create_task(q.admit("a/s1", PARTIES, "job", 30, "a"))
        await asyncio.sleep(0)
        assert not q.join("a/s1", "peer")  # too early: the ordinary order may still admit it
        await asyncio.sleep(0.06)
        assert not q.join("a/s1", "stranger")  # not one of its parties
        assert q.join("a/s1", "peer")
        s = await w
        assert s.state is SessionState.RUNNING and q.sessions.running == 2 and q.joined == 1

    asyncio.run(scenario())


def test_draining_refuses_every_waiting_and_later_call():
    async def scenario():
        q = queue()
        await q.admit("a/s0", PARTIES, "job", 30, "a")
        w = asyncio.create_task(q.admit("a/s1", PARTIES, "job", 30, "a"))
        await asyncio.sleep(0)
        q.close("shutting down")
        with pytest.raises(Refused, match="shutting down"):
            await w
        with pytest.raises(Refused, match="shutting down"):
            await q.admit("a/s2", PARTIES, "job", 30, "a")

    asyncio.run(scenario())
