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
from parties.jobs.bench_inputs import MSG_LEN, N_OF_N, digest, inputs_for
from parties.jobs.registry import DPJobSpec, job, register_dp_job

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
    from parties.jobs.registry import JobError

    op = ctx.param("operation", str)
    size = ctx.param("size", int, min=1)
    seed = ctx.param("seed", int, 0)
    if op not in RUNNERS:
        raise JobError(f"unknown operation {op!r} (known: {', '.join(sorted(RUNNERS))})")
    if len(ctx.parties) < 2:
        raise JobError("bench.mpc needs at least 2 parties: every primitive runs between parties")
    ch = ctx.ch
    me = ch.parties.index(ch.me)
    inp = inputs_for(op, seed, me, len(ch.parties), size)
    await agree(ch, "bench-start", operation=op, size=size, seed=seed)  # barrier: start together
    b0 = ch.bytes_sent
    t0 = time.perf_counter()
    out = await RUNNERS[op](ch, me, inp, size)
    seconds = time.perf_counter() - t0
    from parties.runtime.shaping import WaitCounter

    return {"seconds": seconds, "bytes": ch.bytes_sent - b0, "output": out, "waits": WaitCounter.of(ch.state)["waits"]}


@job("secure_sum")
async def secure_sum_job(ctx) -> dict:
    """Secure sum of every party's integer vector ``[data] <key>`` (a ``.npy`` file; params ``key``).

    Every party learns the elementwise sum (mod 2^64, as int64) and nothing
    else (:func:`mpc.secure_sum.secure_sum`); with two parties that is the
    other party's vector, which is why a party's policy requires three
    parties for this job by default (:mod:`parties.guards.policy`). Vectors of
    different lengths are one clear error on every party.

    The file may also hold one row per record (2-D): the job sums the rows,
    after clamping every value to ``clamp = [lo, hi]`` when given. With
    ``epsilon`` the sum is differentially private (:func:`_dp_sum`).
    """
    from parties.jobs.registry import JobError

    key = ctx.param("key", str, "vector")
    path = ctx.data_path(key)
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise JobError(f"party {ctx.name!r} cannot read its {key!r} vector (.npy)") from e
    if x.ndim not in (1, 2) or x.dtype.kind not in "iu":
        raise JobError(f"party {ctx.name!r}: its {key!r} data must be a 1-D integer vector or a 2-D array of records")
    clamp = ctx.params.get("clamp")
    if clamp is not None:
        try:
            lo, hi = _clamp_bounds(clamp)
        except ValueError as e:
            raise JobError(str(e)) from None
        if x.ndim != 2:
            raise JobError(
                f"party {ctx.name!r}: clamp applies to per-record (2-D) data, and its {key!r} vector is aggregated"
            )
        x = np.clip(x.astype(np.int64), lo, hi)
    elif x.ndim == 2 and "epsilon" in ctx.params:
        raise JobError(
            f"party {ctx.name!r}: its {key!r} data has one row per record: epsilon needs clamp [lo, hi] to bound "
            "what one record adds"
        )
    v = x.astype(np.int64).sum(axis=0) if x.ndim == 2 else x.astype(np.int64)
    ctx.check_input_length(int(v.size), "vector")  # [policy.job.secure_sum] max_length, before sending
    if "epsilon" in ctx.params:
        return await _dp_sum(ctx, v, clamp)
    total = await secure_sum.secure_sum(ctx.ch, v, tag="job")
    return {"sum": total.tolist(), "length": int(v.size)}


def _clamp_bounds(clamp) -> tuple[int, int]:
    """``clamp`` as ``(lo, hi)`` integers with lo ≤ hi; ``ValueError`` (one line) otherwise."""
    ok = (
        isinstance(clamp, (list, tuple))
        and len(clamp) == 2
        and all(isinstance(b, int) and not isinstance(b, bool) and abs(b) < 2**40 for b in clamp)
        and clamp[0] <= clamp[1]
    )
    if not ok:
        raise ValueError(f"clamp must be [lo, hi], two integers with lo <= hi and |bounds| < 2^40, got {clamp!r}")
    return int(clamp[0]), int(clamp[1])


def _check_dp_sum(params, n_parties: int, cfg) -> None:
    """Admission check of ``secure_sum`` with ``epsilon`` (run by the budget guard, before any charge)."""
    from parties.joint.dp_sum import check_colluders

    sens = params.get("sensitivity", 1)
    if isinstance(sens, bool) or not isinstance(sens, int) or sens < 1:
        raise ValueError(f"sensitivity must be a positive integer (the noise is integer-valued), got {sens!r}")
    key = params.get("key", "vector")
    floor = cfg.sensitivity.get(key, 1) if cfg is not None and isinstance(key, str) else 1
    if sens < floor:
        raise ValueError(f"sensitivity must be at least {floor} for data {key!r} (this party's [dp.sensitivity])")
    if params.get("clamp") is not None:
        _clamp_bounds(params["clamp"])
    check_colluders(n_parties, params.get("colluders", 0))


async def _dp_sum(ctx, v: np.ndarray, clamp) -> dict:
    """Noisy secure sum: each party adds a noise share, the total carries DLap(Δ/ε) noise, no party knows it.

    Δ = ``sensitivity`` (a bound on what one record changes in the summed vector, in L1; for
    per-record data with ``clamp``, at least length·max(|lo|, |hi|)). Charged to this party's
    budget for the analyst at admission (:mod:`parties.guards.dp_budget`).
    """
    from anonymize.dp import RandomSource, as_epsilon
    from parties.joint.dp_sum import coalition_epsilon, noise_stats, noisy_secure_sum

    eps = as_epsilon(ctx.params["epsilon"])
    sens = int(ctx.params.get("sensitivity", 1))
    if clamp is not None:
        lo, hi = _clamp_bounds(clamp)
        sens = max(sens, int(v.size) * max(abs(lo), abs(hi), 1))
    colluders = int(ctx.params.get("colluders", 0))
    charge = ctx.privacy_charge(eps)
    total = await noisy_secure_sum(
        ctx.ch,
        v,
        epsilon=eps,
        sensitivity=sens,
        rng=RandomSource(),
        colluders=colluders,
        tag="job",
        on_release=charge.release,
    )
    n = len(ctx.parties)
    return {
        "sum": total.tolist(),
        "length": int(v.size),
        "dp": {
            "epsilon": float(eps),
            "epsilon_exact": str(ctx.params["epsilon"]),
            "sensitivity": sens,
            "clamp": None if clamp is None else list(clamp),
            "colluders": colluders,
            "mechanism": "discrete Laplace noise from one noise share per party inside the secure sum (Goryczka-Xiong)",
            "epsilon_dp_against_coalitions_up_to": colluders,
            "one_more_party_epsilon_at_most": None
            if colluders + 1 >= n
            else coalition_epsilon(eps, sens, n, colluders, colluders + 1),
            **noise_stats(eps, sens, n, colluders),
        },
    }


register_dp_job(DPJobSpec("secure_sum", keys=lambda p: [str(p.get("key", "vector"))], check=_check_dp_sum))
