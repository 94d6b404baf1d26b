"""The job registry: what a daemon can run when the analyst calls ``StartJob``.

A job is an async function of a :class:`JobContext` returning a JSON-able dict::

    from parties.jobs import job, JobContext

    @job("secure_sum")
    async def secure_sum_job(ctx: JobContext) -> dict:
        x = load_vector(ctx.data_path("values"))
        total = await secure_sum(ctx.ch, x)        # ctx.ch is an mpc Channel
        return {"sum": total.tolist()}

Every party of a session runs the same job with the same ``params`` on its own
data; ``ctx.ch`` connects it to the others. A job raises
:class:`mpc.errors.ProtocolError` (or :class:`JobError`) with a message that is
safe to show to the other parties and the analyst; any other exception is
reported only by its type (its message might carry private data) and logged
locally.

Importing this module has no side effects beyond registering the built-in test
jobs: no gRPC import. The daemon imports :data:`JOB_MODULES` (those that exist)
plus the ``[jobs] modules`` of its config and ``$PPDM_JOB_MODULES``.

Built-in jobs (for tests, benchmarks and operators checking a deployment):
``ping``, ``exchange``, ``fail``, ``sleep``, ``bench_send``, ``pingpong``.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mpc.channel import Channel
from mpc.errors import ProtocolError

__all__ = [
    "JOB_MODULES",
    "JobContext",
    "JobError",
    "UnknownJobError",
    "job",
    "get_job",
    "registered_jobs",
    "load_job_modules",
]

# Modules that register jobs with @job; imported by the daemon when they exist
# (a missing module is skipped, an error inside an existing one is not).
JOB_MODULES: list[str] = [
    "parties.jobs.mining",
    "parties.jobs.mpc_bench",
]

log = logging.getLogger("ppdm.jobs")


class JobError(ProtocolError):
    """A job cannot run as asked (bad params, missing data...): a message safe to share."""


class UnknownJobError(JobError):
    """No job is registered under the requested name."""


@dataclass
class JobContext:
    """What a job gets: its party name, the session channel, the analyst's params, the party config."""

    name: str
    ch: Channel
    params: dict[str, Any]
    config: Any = None  # parties.config.PartyConfig (or None in unit tests)
    session: str = ""
    job: str = ""
    deadline: float | None = None  # time.monotonic() deadline of the session
    log: logging.Logger = field(default_factory=lambda: log)

    @property
    def parties(self) -> tuple[str, ...]:
        return self.ch.parties

    @property
    def peers(self) -> list[str]:
        return [p for p in self.ch.parties if p != self.name]

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def data_path(self, key: str) -> Path:
        """The path configured as ``[data] <key>``; a clear :class:`JobError` if missing."""
        data = getattr(self.config, "data", None) or {}
        v = data.get(key)
        if v is None:
            raise JobError(f"party {self.name!r} has no [data] {key} in its config")
        p = Path(v)
        if not p.exists():
            raise JobError(f"party {self.name!r}: data file for {key!r} does not exist")
        return p

    def param(self, key: str, kind: type | tuple[type, ...], default: Any = ..., *, min: float | None = None) -> Any:
        """A checked parameter: ``kind`` (e.g. ``int``), optional default and lower bound."""
        if key not in self.params:
            if default is ...:
                raise JobError(f"missing parameter {key!r}")
            return default
        v = self.params[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
            raise JobError(f"parameter {key!r} must be {'/'.join(k.__name__ for k in kinds)}, got {v!r}")
        if min is not None and v < min:
            raise JobError(f"parameter {key!r} must be >= {min}, got {v!r}")
        return v


JobFn = Callable[[JobContext], Awaitable[dict]]
_JOBS: dict[str, JobFn] = {}


def job(name: str) -> Callable[[JobFn], JobFn]:
    """Register an async job function under ``name``."""
    if not name or not name.replace("_", "").replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"invalid job name {name!r}")

    def deco(fn: JobFn) -> JobFn:
        if not asyncio.iscoroutinefunction(fn):
            raise TypeError(f"job {name!r} must be an async function")
        old = _JOBS.get(name)
        if old is not None and (old.__module__, old.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"job {name!r} is already registered by {old.__module__}.{old.__qualname__}")
        _JOBS[name] = fn
        return fn

    return deco


def get_job(name: str) -> JobFn:
    """The job registered as ``name``, or :class:`UnknownJobError` listing the known ones."""
    fn = _JOBS.get(name)
    if fn is None:
        raise UnknownJobError(f"unknown job {name!r} (known: {', '.join(registered_jobs())})")
    return fn


def registered_jobs() -> list[str]:
    return sorted(_JOBS)


def load_job_modules(extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Import :data:`JOB_MODULES` (skipping missing ones) and ``extra`` plus ``$PPDM_JOB_MODULES`` (required).

    Returns the modules imported.
    """
    env = [m.strip() for m in os.environ.get("PPDM_JOB_MODULES", "").split(",") if m.strip()]
    loaded = []
    for name in JOB_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        loaded.append(name)
    for name in [*extra, *env]:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                raise JobError(f"job module {name!r} not found") from None
            raise
        loaded.append(name)
    return loaded


# --------------------------------------------------------------------------- built-in jobs
def _digest(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()[:32]


@job("ping")
async def ping_job(ctx: JobContext) -> dict:
    """Every party sends a tiny message to every other and waits for theirs."""
    await asyncio.gather(*(ctx.ch.send(p, "ping", ctx.name.encode()) for p in ctx.peers))
    got = await asyncio.gather(*(ctx.ch.recv(p, "ping") for p in ctx.peers))
    for p, g in zip(ctx.peers, got):
        if g != p.encode():
            raise ProtocolError(f"ping from {p!r} carried the wrong name")
    return {"party": ctx.name, "parties": list(ctx.parties), "echo": ctx.params.get("echo")}


@job("exchange")
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
        for p, got in zip(ctx.peers, res[len(ctx.peers) :]):
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


@job("fail")
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


@job("sleep")
async def sleep_job(ctx: JobContext) -> dict:
    """Sleep ``seconds`` (default 1) on every party, optionally blocking the event loop (``block``)."""
    s = ctx.param("seconds", float, 1.0, min=0)
    if ctx.param("block", bool, False):
        time.sleep(s)  # stands in for a long numpy/crypto step that holds the loop
    else:
        await asyncio.sleep(s)
    return {"party": ctx.name, "slept": s}


@job("bench_send")
async def bench_send_job(ctx: JobContext) -> dict:
    """Throughput: ``parties[0]`` sends ``count`` messages of ``size`` bytes to ``parties[1]``, one after another."""
    size = ctx.param("size", int, 1 << 20, min=0)
    count = ctx.param("count", int, 10, min=1)
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


@job("pingpong")
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
