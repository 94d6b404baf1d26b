"""Built-in diagnostic jobs: ``ping``, ``exchange``, ``fail``, ``sleep``, ``bench_send``, ``pingpong``.

For tests, benchmarks of the transport and operators checking a deployment
(``ppdm party status`` checks Health; ``ping`` checks that every pair of
parties can reach each other through the daemons). No real data is involved.
Registered whenever :mod:`parties.jobs` is imported.

Every job here but ``ping`` is *diagnostic* (:class:`parties.jobs.JobInfo`): a
daemon runs it only when its policy says ``diagnostics = true`` or lists it in
``jobs`` — they load a daemon on purpose. Even then they are bounded: a job
holds the event loop (``sleep`` with ``block``, ``exchange`` with ``stall``)
for at most :data:`MAX_BLOCK_SECONDS`, and ``exchange`` holds at most
:data:`MAX_EXCHANGE_BYTES` of messages per round.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from typing import cast

import numpy as np

from mpc.errors import ProtocolError
from parties.jobs.registry import JobContext, JobError, job

__all__ = ["MAX_BLOCK_SECONDS", "MAX_EXCHANGE_BYTES"]

MAX_BLOCK_SECONDS = 5.0  # longest a diagnostic job may hold the event loop (Health and signals wait)
MAX_EXCHANGE_BYTES = 256 << 20  # messages one party of an exchange holds per round (size x tags x peers)


def _digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:32]


@job("ping", private_data=False)
async def ping_job(ctx: JobContext) -> dict:
    """Every party sends a tiny message to every other and waits for theirs."""
    await asyncio.gather(*(ctx.ch.send(p, "ping", ctx.name.encode()) for p in ctx.peers))
    got = await asyncio.gather(*(ctx.ch.recv(p, "ping") for p in ctx.peers))
    for p, g in zip(ctx.peers, got):
        if g != p.encode():
            raise ProtocolError(f"ping from {p!r} carried the wrong name")
    return {"party": ctx.name, "parties": list(ctx.parties), "echo": ctx.params.get("echo")}


@job("exchange", private_data=False, diagnostic=True)
async def exchange_job(ctx: JobContext) -> dict:
    """All-to-all exchange of random messages; returns digests of what was sent and received.

    params: ``size`` bytes per message (default 1024), ``rounds`` (1), ``tags``
    messages per peer per round (1), ``delay`` seconds after each round (0),
    ``fifo`` (false: every message uses one tag, so order is checked),
    ``digest`` (true), ``seed`` (random); ``stall`` seconds for which party
    ``stall_at`` blocks its event loop before each round (a long numpy step).
    """
    size = ctx.param("size", int, 1024, min=0)
    rounds = ctx.param("rounds", int, 1, min=1)
    ntags = ctx.param("tags", int, 1, min=1)
    delay = ctx.param("delay", float, 0.0, min=0)
    fifo = ctx.param("fifo", bool, False)
    digest = ctx.param("digest", bool, True)
    seed = ctx.param("seed", int, int.from_bytes(os.urandom(4), "little"))
    stall = ctx.param("stall", float, 0.0, min=0) if ctx.params.get("stall_at") == ctx.name else 0.0
    if stall > MAX_BLOCK_SECONDS:
        raise JobError(f"parameter 'stall' must be at most {MAX_BLOCK_SECONDS:g} seconds (it holds the event loop)")
    if size * ntags * len(ctx.peers) > MAX_EXCHANGE_BYTES:
        raise JobError(f"size x tags x peers must be at most {MAX_EXCHANGE_BYTES} bytes per round")
    me = ctx.parties.index(ctx.name)
    sent: dict[str, list[str]] = {p: [] for p in ctx.peers}
    received: dict[str, list[str]] = {p: [] for p in ctx.peers}
    t0 = time.perf_counter()
    for r in range(rounds):
        if stall:
            time.sleep(stall)  # holds the event loop, as heavy compute would
        msgs = {}
        for p in ctx.peers:
            rng = np.random.default_rng([seed, me, ctx.parties.index(p), r])
            msgs[p] = [rng.bytes(size) for _ in range(ntags)]
        tags = ["x" if fifo else f"r{r}/t{t}" for t in range(ntags)]

        async def send_all(p: str) -> None:
            if fifo:  # sequential sends keep the order of one (sender, tag)
                for m in msgs[p]:  # noqa: B023
                    await ctx.ch.send(p, "x", m)
            else:
                await asyncio.gather(*(ctx.ch.send(p, t, m) for t, m in zip(tags, msgs[p])))  # noqa: B023

        async def recv_all(p: str) -> list[bytes]:
            if fifo:
                return [await ctx.ch.recv(p, "x") for _ in tags]  # noqa: B023
            return list(await asyncio.gather(*(ctx.ch.recv(p, t) for t in tags)))  # noqa: B023

        res = await asyncio.gather(*(send_all(p) for p in ctx.peers), *(recv_all(p) for p in ctx.peers))
        received_msgs = cast(list[list[bytes]], res[len(ctx.peers) :])  # the recv_all results
        for p, got in zip(ctx.peers, received_msgs):
            for m, g in zip(msgs[p], got):
                if len(g) != size:
                    raise ProtocolError(f"message from {p!r} has {len(g)} bytes, expected {size}")
                if digest:
                    sent[p].append(_digest(m))
                    received[p].append(_digest(g))
        if delay:
            await asyncio.sleep(delay)
    return {
        "party": ctx.name,
        "sent": sent,
        "received": received,
        "seconds": time.perf_counter() - t0,
        "bytes_sent": ctx.ch.bytes_sent,
    }


@job("fail", private_data=False, diagnostic=True)
async def fail_job(ctx: JobContext) -> dict:
    """Fail on purpose: party ``at`` (default the last) raises after ``after`` seconds; others wait.

    ``kind`` = ``"protocol"`` (default: a ProtocolError with a clear message) or
    ``"bug"`` (a RuntimeError, reported only by its type).
    """
    at = ctx.param("at", str, ctx.parties[-1])
    after = ctx.param("after", float, 0.0, min=0)
    kind = ctx.param("kind", str, "protocol")
    if ctx.name == at:
        await asyncio.sleep(after)
        if kind == "bug":
            raise RuntimeError("secret value 42 leaked into an exception message")
        raise ProtocolError(f"party {ctx.name!r} failed on purpose")
    # the others wait for a message that never comes
    await ctx.ch.recv(at, "never")
    return {}


@job("sleep", private_data=False, diagnostic=True)
async def sleep_job(ctx: JobContext) -> dict:
    """Sleep ``seconds`` (default 1) on every party, optionally blocking the event loop (``block``)."""
    s = ctx.param("seconds", float, 1.0, min=0)
    if ctx.param("block", bool, False):
        if s > MAX_BLOCK_SECONDS:
            raise JobError(
                f"parameter 'seconds' must be at most {MAX_BLOCK_SECONDS:g} with block (it holds the event loop)"
            )
        time.sleep(s)  # stands in for a long numpy/crypto step that holds the loop
    else:
        await asyncio.sleep(s)
    return {"party": ctx.name, "slept": s}


@job("bench_send", private_data=False, diagnostic=True)
async def bench_send_job(ctx: JobContext) -> dict:
    """Throughput: ``parties[0]`` sends ``count`` messages of ``size`` bytes to ``parties[1]``, one after another."""
    size = ctx.param("size", int, 1 << 20, min=0)
    count = ctx.param("count", int, 10, min=1)
    if size > MAX_EXCHANGE_BYTES:
        raise JobError(f"parameter 'size' must be at most {MAX_EXCHANGE_BYTES} bytes")
    src, dst = ctx.parties[0], ctx.parties[1]
    if ctx.name == src:
        payload = np.random.default_rng(0).bytes(size)
        await ctx.ch.send(dst, "warmup", b"")
        t0 = time.perf_counter()
        for _ in range(count):
            await ctx.ch.send(dst, "b", payload)
        dt = time.perf_counter() - t0
        await ctx.ch.recv(dst, "done")
        return {"party": ctx.name, "seconds": dt, "bytes": size * count, "bytes_per_second": size * count / dt}
    if ctx.name == dst:
        await ctx.ch.recv(src, "warmup")
        for _ in range(count):
            m = await ctx.ch.recv(src, "b")
            if len(m) != size:
                raise ProtocolError(f"got {len(m)} bytes, expected {size}")
        await ctx.ch.send(src, "done", b"")
    return {"party": ctx.name}


@job("pingpong", private_data=False, diagnostic=True)
async def pingpong_job(ctx: JobContext) -> dict:
    """Round trips: ``parties[0]`` sends ``count`` tiny messages to ``parties[1]``, which echoes each."""
    count = ctx.param("count", int, 200, min=1)
    size = ctx.param("size", int, 16, min=0)
    a, b = ctx.parties[0], ctx.parties[1]
    if ctx.name == a:
        msg = bytes(size)
        t0 = time.perf_counter()
        for _ in range(count):
            await ctx.ch.send(b, "ping", msg)
            await ctx.ch.recv(b, "pong")
        dt = time.perf_counter() - t0
        return {"party": a, "round_trips": count, "seconds": dt, "round_trips_per_second": count / dt}
    if ctx.name == b:
        for _ in range(count):
            await ctx.ch.send(a, "pong", await ctx.ch.recv(a, "ping"))
    return {"party": ctx.name}
