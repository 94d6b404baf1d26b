"""Helpers shared by the joint publishing tests: the bytes a party receives (in memory), and a
party killed while a job runs between daemons."""

from __future__ import annotations

import asyncio
import time

import pytest

from parties.analyst.client import PartyError, run_sync


def record_received(ch, into: dict[str, list[bytes]]) -> None:
    """Keep every message ``ch``'s party receives in ``into[party]`` (an in-memory channel)."""
    orig = ch.recv

    async def recv(frm, tag):
        b = await orig(frm, tag)
        into[ch.me].append(b)
        return b

    ch.recv = recv


def kill_mid_job(cluster, job: str, params: dict, *, watch: str, marker: str, victim: str) -> tuple[PartyError, float]:
    """Start ``job``; once ``marker`` shows in ``watch``'s log, kill ``victim``. Returns the job's
    error (it must fail) and how long the job took."""

    async def scenario():
        async def kill_when_running():
            deadline = time.monotonic() + 60
            while marker not in cluster.log(watch) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            await asyncio.to_thread(cluster.kill, victim)

        killer = asyncio.create_task(kill_when_running())
        t0 = time.monotonic()
        with pytest.raises(PartyError) as ei:
            await cluster.arun_job(job, params, timeout=120)
        await killer
        return ei.value, time.monotonic() - t0

    return run_sync(scenario())
