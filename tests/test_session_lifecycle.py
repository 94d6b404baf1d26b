"""Every session ends (issue 8, item 7): failed sessions must never pile up.

On main, jobs that failed on every party at once left sessions behind (the
analyst's cancel arrived while ``StartJob``'s cleanup awaited, so the session
was never finished, and expiry only cleared pending sessions): 20 such jobs
left 9/7/4 sessions at three daemons, ~50 filled ``max_sessions`` and the
daemon refused every job until restarted. Here three real daemons take a
flood of such jobs; then ``Health`` reports no session anywhere and a real
job runs and is checked against a brute-force count.
"""

from __future__ import annotations

import asyncio
import time
from itertools import combinations

import pytest

from mpc.errors import PeerFailedError
from parties.analyst.client import PartyError, health, run_sync
from parties.config import Limits
from parties.runtime.sessions import SessionManager, SessionState

NAMES = ["alice", "bob", "carol"]
TRANSACTIONS = {
    "alice": [[0, 1], [0, 1, 2], [1, 2], [0], [0, 1, 3]],
    "bob": [[0, 1], [2, 3], [0, 2], [0, 1, 2]],
    "carol": [[1], [0, 1], [0, 1, 2, 3], [3], [0, 3], [1, 2]],
}


def brute_force(min_count: int) -> dict[tuple[int, ...], int]:
    pooled = [frozenset(t) for ts in TRANSACTIONS.values() for t in ts]
    out = {}
    for k in range(1, 5):
        for c in combinations(range(4), k):
            n = sum(1 for t in pooled if t.issuperset(c))
            if n >= min_count:
                out[c] = n
    return out


@pytest.mark.daemons
def test_failed_session_flood_leaves_no_session_behind(make_cluster, tmp_path):
    data = {}
    for n, ts in TRANSACTIONS.items():
        (tmp_path / f"{n}.dat").write_text("".join(" ".join(map(str, t)) + "\n" for t in ts))
        data[n] = {"transactions": str(tmp_path / f"{n}.dat")}
    # a small max_sessions: on main, the leaked sessions filled it within this flood
    c = make_cluster(NAMES, data=data, limits={"max_sessions": 6})
    bad = [
        {"min_support": "0.5", "n_items": 0},  # n_items 0: every party rejects it at once
        {"min_support": "0", "n_items": 4},  # a min support every party rejects
        {"min_support": "1.5", "n_items": 4},
    ]
    kinds = {}
    for i in range(45):
        with pytest.raises(PartyError) as ei:
            c.run_job("mine.horizontal", bad[i % len(bad)], timeout=20)
        kinds[ei.value.kind] = kinds.get(ei.value.kind, 0) + 1
    assert set(kinds) == {"job"}, kinds  # the parties' own one-line errors, never "refused: too many sessions"

    deadline = time.monotonic() + 10
    while True:
        active = {p.name: run_sync(health(p, c.creds)).active_sessions for p in c.peers}
        if not any(active.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert active == {n: 0 for n in NAMES}
    out = c.run_job("mine.horizontal", {"min_support": "1/3", "n_items": 4}, timeout=60)
    got = {tuple(i["items"]): i["count"] for i in out["alice"]["itemsets"]}
    assert got == brute_force(min_count=5)  # ceil(15 / 3) = 5, exactly


# --------------------------------------------------------------------------- unit: the safety net
def test_sessions_end_even_if_their_owner_forgot_them():
    """SessionManager.expire ends running sessions whose job ended or that outlived their deadline."""

    class Clock:
        t = 100.0

        def __call__(self):
            return self.t

    async def main():
        clock = Clock()
        sm = SessionManager("alice", Limits(max_sessions=2), clock=clock)

        async def job():
            await asyncio.sleep(3600)

        done_task = asyncio.create_task(asyncio.sleep(0))
        a = sm.start("analyst/a", ["alice", "bob"], "j", 10, analyst="analyst")
        a.task = done_task
        await done_task  # the job ended but nobody finished the session
        b = sm.start("analyst/b", ["alice", "bob"], "j", 10, analyst="analyst")
        b.task = asyncio.create_task(job())
        assert sm.running == 2
        assert sm.expire() == ["analyst/a"]  # its job is done: finished now
        assert sm.state_of("analyst/a") is SessionState.DONE
        clock.t += 10 + 6  # b is past its deadline + the grace: failed, its job cancelled
        assert sm.expire() == [] and b.error is not None
        await asyncio.sleep(0)
        assert b.task.cancelled()
        b.task = asyncio.create_task(job())  # a job that ignores cancellation would hold it ...
        clock.t += 10
        assert sm.expire() == ["analyst/b"]  # ... until twice the grace: dropped
        assert sm.running == 0 and sm.state_of("analyst/b") is SessionState.FAILED
        b.task.cancel()

    asyncio.run(main())


def test_finish_is_idempotent_and_cancels_the_watchdog():
    async def main():
        sm = SessionManager("alice", Limits())
        s = sm.start("analyst/x", ["alice", "bob"], "j", 10, analyst="analyst")
        dog = asyncio.create_task(asyncio.sleep(3600))
        s.extra_tasks.append(dog)
        s.fail(PeerFailedError("gone"))
        sm.finish(s)
        sm.finish(s)
        await asyncio.sleep(0)
        assert dog.cancelled() and sm.active == 0 and sm.state_of("analyst/x") is SessionState.FAILED

    asyncio.run(main())


def test_one_analyst_cannot_take_every_session_slot():
    """Issue 16 (low): one analyst's sessions filled max_sessions and locked every other analyst out."""
    from parties.runtime.mailbox import Busy

    async def main():
        sm = SessionManager("alice", Limits(max_sessions=4, max_sessions_per_analyst=2))
        for i in range(2):
            sm.start(f"greedy/s{i}", ["alice", "bob"], "j", 10, analyst="greedy")
        with pytest.raises(Busy, match="max_sessions_per_analyst"):
            sm.start("greedy/s2", ["alice", "bob"], "j", 10, analyst="greedy")
        sm.start("other/s0", ["alice", "bob"], "j", 10, analyst="other")  # another analyst still gets a slot
        assert sm.running == 3

    asyncio.run(main())
