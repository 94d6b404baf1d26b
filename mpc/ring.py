"""Ring passes shared by the commutative-encryption set protocols (union, intersection cardinality).

``ch.parties`` is the ring, in that order; party ``i`` sends to ``i+1`` and
receives from ``i−1`` (indices mod N). Every batch is a ``(k, 32) uint8``
array of ciphertext rows (:mod:`mpc.commutative`), and every party permutes
each batch it passes on, so the next party cannot tell which row came from
which position before — the "permute before passing on" step of
M. Kantarcioglu, C. Clifton, "Privacy-preserving distributed mining of
association rules on horizontally partitioned data", IEEE TKDE 16(9), 2004,
Protocol 1, and of J. Vaidya, C. Clifton, "Secure set intersection
cardinality with application to association rule mining", Journal of
Computer Security 13(4), 2005.

Two shapes of pass:

* :func:`ring_pass` — N batches at once, one per starting party, each going
  once around the ring (the encryption rounds: every party busy in every
  round).
* :func:`stream_batch` / :func:`recv_batch_stream` — one batch sent as a
  stream of chunks. The sender first permutes the *whole* batch and then
  transforms and sends it chunk by chunk; since the chunks are consecutive
  pieces of a uniformly permuted batch, the receiver learns exactly what the
  whole permuted batch would tell it, while it can already work on the first
  chunk (the single-batch decryption of the set union).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .channel import Channel, broadcast, gather_from, recv_array, send_array
from .commutative import ROW_BYTES, check_rows, run_rows, shuffle_rows
from .errors import ProtocolError

__all__ = [
    "STATUS_OK",
    "STATUS_TOO_LONG",
    "STATUS_OVER_PAD",
    "STATUS_NOT_BYTES",
    "RowFn",
    "ring_pass",
    "exchange_status",
    "local_set",
    "stream_bounds",
    "stream_batch",
    "recv_batch_stream",
]

STATUS_OK, STATUS_TOO_LONG, STATUS_OVER_PAD, STATUS_NOT_BYTES = 0, 1, 2, 3
"""Status codes of the input check every set protocol runs before its first ring pass."""

RowFn = Callable[[np.ndarray], np.ndarray]
"""A batch transform on ``(k, 32)`` rows (encrypt, decrypt, keyed hash), run in the worker pool."""

_STREAM_CHUNKS = 8  # a streamed batch travels in about this many messages
_MIN_STREAM_CHUNK = 512  # rows: below this a message costs more than the overlap it buys


async def ring_pass(ch: Channel, rows: np.ndarray, transform: RowFn, step: str) -> tuple[int, np.ndarray]:
    """Pipelined pass of N batches once around the ring ``ch.parties``.

    Party ``i`` starts with batch ``i`` (``rows``, already transformed by itself),
    sends it on, and in each of the N−1 rounds receives batch ``i−r`` from its
    predecessor, applies ``transform`` (in the worker pool), permutes it and
    passes it on. Returns ``(j, rows)``: batch ``j = i+1`` after all N parties
    have transformed it. Messages are tagged ``step/j``.
    """
    parties, n = ch.parties, len(ch.parties)
    i = parties.index(ch.me)
    nxt, prv = parties[(i + 1) % n], parties[(i - 1) % n]
    cur, j = rows, i
    for r in range(1, n):
        await send_array(ch, nxt, f"{step}/{j}", cur)
        j = (i - r) % n
        got = check_rows(await recv_array(ch, prv, f"{step}/{j}"), f"{step} batch")
        cur = shuffle_rows(await run_rows(transform, got))
    return j, cur


async def exchange_status(ch: Channel, code: int, extra: int, problems: dict[int, str], what: str) -> list[int]:
    """Broadcast ``(code, extra)`` bytes; if any party reports a problem, raise it on *every* party.

    Returns every party's ``extra`` in ring order.
    """
    await broadcast(ch, "status", bytes([code, extra]))
    got = await gather_from(ch, "status")
    got[ch.me] = bytes([code, extra])
    if any(len(v) != 2 for v in got.values()):
        raise ProtocolError(f"{what}: malformed status message")
    bad = [f"party {p} {problems.get(got[p][0], f'reported error {got[p][0]}')}" for p in ch.parties if got[p][0]]
    if bad:
        raise ProtocolError(f"{what} aborted: " + "; ".join(bad))
    return [got[p][1] for p in ch.parties]


def local_set(items: Iterable, max_len: int | None = None) -> tuple[list[bytes], int]:
    """Distinct items as bytes (sorted), and a status code (non-bytes / too long)."""
    out = set()
    for it in items:
        if not isinstance(it, (bytes, bytearray, memoryview)):
            return [], STATUS_NOT_BYTES
        it = bytes(it)
        if max_len is not None and len(it) > max_len:
            return [], STATUS_TOO_LONG
        out.add(it)
    return sorted(out), STATUS_OK


def stream_bounds(total: int) -> list[int]:
    """Chunk boundaries of a streamed batch of ``total`` rows (both ends compute the same)."""
    size = max(_MIN_STREAM_CHUNK, -(-total // _STREAM_CHUNKS))
    return [*range(0, total, size), total] if total else [0]


async def stream_batch(ch: Channel, to: str, step: str, rows: np.ndarray, transform: RowFn | None = None) -> None:
    """Permute the whole batch ``rows``, then send it to ``to`` in chunks, each transformed first.

    The row count goes first (``step/n``), then chunk ``c`` as ``step/c``
    (boundaries :func:`stream_bounds`). Transforming chunk ``c + 1`` overlaps
    with the receiver's work on chunk ``c``.
    """
    rows = shuffle_rows(rows)
    bounds = stream_bounds(len(rows))
    await ch.send(to, f"{step}/n", len(rows).to_bytes(8, "little"))
    for c, (a, b) in enumerate(zip(bounds, bounds[1:])):
        part = rows[a:b] if transform is None else await run_rows(transform, rows[a:b])
        await send_array(ch, to, f"{step}/{c}", part)


async def recv_batch_stream(
    ch: Channel, frm: str, step: str, max_rows: int, transform: RowFn | None = None
) -> np.ndarray:
    """Receive a batch sent by :func:`stream_batch`, applying ``transform`` to each chunk as it arrives.

    ``max_rows`` is the public bound on the batch size (a longer announced
    batch is a :class:`ProtocolError`). Returns the rows in the order received
    (the caller permutes them before passing them on).
    """
    raw = await ch.recv(frm, f"{step}/n")
    if len(raw) != 8:
        raise ProtocolError(f"malformed {step} stream header from {frm}")
    total = int.from_bytes(raw, "little")
    if total > max_rows:
        raise ProtocolError(f"{frm} announced a {step} batch of {total} rows, more than the {max_rows} possible")
    bounds = stream_bounds(total)
    out = np.empty((total, ROW_BYTES), np.uint8)
    for c, (a, b) in enumerate(zip(bounds, bounds[1:])):
        part = check_rows(await recv_array(ch, frm, f"{step}/{c}"), f"{step} chunk")
        if len(part) != b - a:
            raise ProtocolError(f"{step} chunk {c} from {frm} has {len(part)} rows, expected {b - a}")
        out[a:b] = part if transform is None else await run_rows(transform, part)
    return out
