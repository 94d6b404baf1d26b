"""Benchmark jobs: every ``mpc`` primitive on seeded random inputs, run by the daemons.

``ppdm bench mpc`` starts one job per primitive; each party derives its input
from the public seed (:mod:`parties.jobs.bench_inputs`), waits at a barrier so all
parties start the clock together, runs the protocol, and returns its protocol
time, the bytes it sent and a digest of its output. The analyst checks the
digest against the plain function. No real data is involved.
"""

from __future__ import annotations

import time

import numpy as np

from mpc import dot_product as dp
from mpc import ot_1_of_n, ot_extension, secure_sum
from mpc.base_ot import base_ot_recv, base_ot_send
from mpc.channel import agree, recv_array, send_array
from mpc.intersection import intersection_cardinality
from mpc.set_union import secure_set_union

from . import job
from .bench_inputs import MSG_LEN, N_OF_N, digest, inputs_for

__all__: list[str] = []


async def _base_ot(ch, me, inp, size):
    peer = ch.parties[1 - me]
    if me == 0:
        k0, k1 = await base_ot_send(ch, peer, size, tag="b")
        # chosen messages on top of the random base OTs: y_b = m_b xor k_b (one message)
        y = np.concatenate([inp["m0"] ^ k0, inp["m1"] ^ k1], axis=1)
        await send_array(ch, peer, "y", y)
        return None
    c = inp["choices"]
    k = await base_ot_recv(ch, peer, c, tag="b")
    y = await recv_array(ch, peer, "y")
    got = np.where(c[:, None].astype(bool), y[:, MSG_LEN:], y[:, :MSG_LEN]) ^ k
    return digest(got)


async def _ot_extension(ch, me, inp, size):
    peer = ch.parties[1 - me]
    if me == 0:
        await ot_extension.ot_send(ch, peer, inp["m0"], inp["m1"], tag="x")
        return None
    return digest(await ot_extension.ot_recv(ch, peer, inp["choices"], MSG_LEN, tag="x"))


async def _ot_1_of_n(ch, me, inp, size):
    peer = ch.parties[1 - me]
    if me == 0:
        await ot_1_of_n.ot_1_of_n_send(ch, peer, inp["messages"], tag="n")
        return None
    return digest(await ot_1_of_n.ot_1_of_n_recv(ch, peer, inp["choices"], N_OF_N, MSG_LEN, tag="n"))


async def _secure_sum(ch, me, inp, size):
    return digest(await secure_sum.secure_sum(ch, inp["x"], tag="s"))


async def _secure_sum_threshold(ch, me, inp, size):
    res = await secure_sum.secure_sum_threshold(ch, inp["x"], inp["threshold"], tag="t")
    return digest(np.asarray(res).astype(np.uint8))


async def _dot_product(ch, me, inp, size):
    v = await dp.dot_product(ch, ch.parties[1 - me], inp["x"], tag="d", role=me, bits=1, reveal=True)
    return int(np.uint64(v))


async def _set_union(ch, me, inp, size):
    return digest(sorted(await secure_set_union(ch, inp["items"], tag="u", pad_to=size)))


async def _intersection(ch, me, inp, size):
    return int(await intersection_cardinality(ch, inp["items"], tag="i", pad_to=size))


RUNNERS = {
    "base_ot": _base_ot,
    "ot_extension": _ot_extension,
    "ot_1_of_n": _ot_1_of_n,
    "secure_sum": _secure_sum,
    "secure_sum_threshold": _secure_sum_threshold,
    "dot_product": _dot_product,
    "set_union": _set_union,
    "intersection_cardinality": _intersection,
}


@job("bench.mpc", private_data=False)
async def bench_mpc(ctx) -> dict:
    """Run one primitive on seeded inputs; params: operation, size, seed."""
    op = ctx.params["operation"]
    size = int(ctx.params["size"])
    seed = int(ctx.params["seed"])
    if op not in RUNNERS:
        raise ValueError(f"unknown operation {op!r}")
    ch = ctx.ch
    me = ch.parties.index(ch.me)
    inp = inputs_for(op, seed, me, len(ch.parties), size)
    await agree(ch, "bench-start", operation=op, size=size, seed=seed)  # barrier: start together
    b0 = ch.bytes_sent
    t0 = time.perf_counter()
    out = await RUNNERS[op](ch, me, inp, size)
    seconds = time.perf_counter() - t0
    from ..shaping import WaitCounter

    return {"seconds": seconds, "bytes": ch.bytes_sent - b0, "output": out, "waits": WaitCounter.of(ch.state)["waits"]}


@job("secure_sum")
async def secure_sum_job(ctx) -> dict:
    """Secure sum of every party's integer vector ``[data] <key>`` (a ``.npy`` file; params ``key``).

    Every party learns the elementwise sum (mod 2^64, as int64) and nothing
    else (:func:`mpc.secure_sum.secure_sum`); with two parties that is the
    other party's vector, which is why a party's policy requires three
    parties for this job by default (:mod:`parties.policy`). Vectors of
    different lengths are one clear error on every party.
    """
    from . import JobError

    key = ctx.param("key", str, "vector")
    path = ctx.data_path(key)
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise JobError(f"party {ctx.name!r} cannot read its {key!r} vector (.npy)") from e
    if x.ndim != 1 or x.dtype.kind not in "iu":
        raise JobError(f"party {ctx.name!r}: its {key!r} vector must be a 1-D integer array")
    ctx.check_input_length(int(x.size), "vector")  # [policy.job.secure_sum] max_length, before sending
    total = await secure_sum.secure_sum(ctx.ch, x.astype(np.int64), tag="job")
    return {"sum": total.tolist(), "length": int(x.size)}
