"""Reading a ``Deliver`` stream: chunks with a deadline and an idle timeout, and draining a refused message."""

from __future__ import annotations

import asyncio
import time

from google.protobuf.message import DecodeError

__all__ = ["DRAIN_SECONDS", "IDLE", "TOO_SLOW", "chunks_of", "drain"]

TOO_SLOW = object()


IDLE = object()


async def chunks_of(it, deadline: float, idle: float | None = None):
    """The remaining chunks of a Deliver stream; then ``None`` for an undecodable chunk,
    ``TOO_SLOW`` when the stream is still going at ``deadline`` (monotonic), ``IDLE`` when
    no chunk came for ``idle`` seconds."""
    while True:
        left = max(0.0, deadline - time.monotonic())
        wait = left if idle is None else min(left, idle)
        try:
            async with asyncio.timeout(wait):
                c = await it.__anext__()
        except StopAsyncIteration:
            return
        except DecodeError:
            yield None
            return
        except TimeoutError:
            yield TOO_SLOW if wait >= left else IDLE
            return
        yield c


DRAIN_SECONDS = 2.0  # how long a refused message's remaining chunks are read and dropped at most


async def drain(it, limit: int, seconds: float = DRAIN_SECONDS) -> None:
    """Read and drop what the sender still streams of a message refused at its header.

    Aborting while the client is still writing races with its writes: the client may then see
    ``INTERNAL`` ("Internal error from Core") instead of the refusal's status. So the rest of the
    announced message is read first — at most ``limit`` bytes (the announced length, itself capped by
    ``max_message_bytes``) and ``seconds`` — and nothing of it is kept.
    """
    if limit <= 0:
        return
    async for c in chunks_of(it, time.monotonic() + seconds):
        if c is None or c is TOO_SLOW or c is IDLE:
            return
        limit -= len(c.data)
        if limit < 0:
            return
