"""Emulated wide-area links: added round-trip time and a bandwidth cap per link, for benchmarks.

``PPDM_LINK_SHAPE="rtt_ms=50,mbit=100"`` in a daemon's environment (set by
``LocalCluster(link_shape=(50, 100))``, ``ppdm bench mpc --rtt-ms 50 --mbit 100``,
``ppdm mine --local N ... --rtt-ms 50 --mbit 100``) makes every message it
sends to a peer wait as on a link of that round-trip time and bandwidth:
each directed link (this party → peer) is a FIFO that serializes messages at
``mbit`` Mbit/s, and a message is handed over RTT/2 after its last bit left
(so a request and its answer cost one RTT). :class:`ShapedChannel` applies
the same to any :class:`mpc.channel.Channel` (e.g. the in-memory network)
and counts the receives that had to wait for the network.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from mpc.channel import Channel, ScopedChannel

__all__ = ["LinkShaper", "ShapedChannel", "ENV_VAR", "parse_shape", "WaitCounter"]

ENV_VAR = "PPDM_LINK_SHAPE"
WAIT_THRESHOLD = 0.001  #: a receive that blocks longer than this (s) waited on the network


def parse_shape(text: str | None) -> tuple[float, float | None] | None:
    """``"rtt_ms=50,mbit=100"`` → ``(0.05, 100e6)`` (seconds, bits/s); ``None`` for an empty value."""
    if not text:
        return None
    vals: dict[str, float] = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        try:
            vals[k.strip()] = float(v)
        except ValueError:
            raise ValueError(f"{ENV_VAR}: bad value in {part!r} (expected rtt_ms=..., mbit=...)") from None
    unknown = set(vals) - {"rtt_ms", "mbit"}
    if unknown or any(x < 0 for x in vals.values()) or vals.get("mbit", 1) == 0:
        raise ValueError(f"{ENV_VAR}: expected rtt_ms=NUMBER,mbit=NUMBER (non-negative, mbit > 0), got {text!r}")
    mbit = vals.get("mbit")
    return vals.get("rtt_ms", 0.0) / 1000.0, None if mbit is None else mbit * 1e6


class LinkShaper:
    """Per-peer FIFO links of ``rtt`` seconds round trip and ``bps`` bits/s (None: unlimited)."""

    def __init__(
        self,
        rtt: float,
        bps: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.rtt, self.bps = float(rtt), bps
        self._clock, self._sleep = clock, sleep
        self._free: dict[str, float] = {}

    @classmethod
    def from_env(cls) -> LinkShaper | None:
        shape = parse_shape(os.environ.get(ENV_VAR))
        return None if shape is None else cls(*shape)

    async def transmit(self, peer: str, nbytes: int) -> None:
        """Wait until a message of ``nbytes`` sent now to ``peer`` would arrive."""
        now = self._clock()
        start = max(now, self._free.get(peer, now))
        done = start + (8 * nbytes / self.bps if self.bps else 0.0)
        self._free[peer] = done
        wait = done + self.rtt / 2 - now
        if wait > 0:
            await self._sleep(wait)


T = TypeVar("T")


class WaitCounter:
    """Receives that blocked (``waits``) and the seconds spent blocked, kept in ``ch.state``."""

    KEY = "ppdm.network"

    @staticmethod
    def of(state: dict) -> dict:
        return state.setdefault(WaitCounter.KEY, {"waits": 0, "wait_seconds": 0.0})

    @staticmethod
    async def timed(state: dict, fut: Awaitable[T]) -> T:
        t0 = time.perf_counter()
        out = await fut
        dt = time.perf_counter() - t0
        if dt > WAIT_THRESHOLD:
            c = WaitCounter.of(state)
            c["waits"] += 1
            c["wait_seconds"] += dt
        return out


class ShapedChannel:
    """``inner`` with every send delayed by a :class:`LinkShaper` (and blocked receives counted)."""

    def __init__(self, inner: Channel, shaper: LinkShaper):
        self._inner, self._shaper = inner, shaper
        self.me, self.parties, self.state = inner.me, inner.parties, inner.state

    @property
    def bytes_sent(self) -> int:
        return self._inner.bytes_sent

    @property
    def root(self) -> ShapedChannel:
        return self

    async def send(self, to: str, tag: str, payload: bytes) -> None:
        await self._shaper.transmit(to, len(payload))
        await self._inner.send(to, tag, payload)

    async def recv(self, frm: str, tag: str) -> bytes:
        return await WaitCounter.timed(self.state, self._inner.recv(frm, tag))

    def scoped(self, prefix: str) -> ScopedChannel:
        return ScopedChannel(self, prefix)
