"""Channel interface, array serialization and the in-memory network."""

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mpc.channel import (
    MemoryNetwork,
    agree,
    broadcast,
    gather_from,
    pack_arrays,
    recv_array,
    run_parties,
    scoped,
    send_array,
    unpack_arrays,
)
from mpc.errors import InputMismatchError, ProtocolError, ProtocolTimeoutError

dtypes = st.sampled_from([np.uint8, np.int32, np.int64, np.uint64, np.float64, np.bool_])


@settings(max_examples=60, deadline=None)
@given(st.lists(hnp.arrays(dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)), max_size=4))
def test_pack_roundtrip(arrays):
    out = unpack_arrays(pack_arrays(*arrays))
    assert len(out) == len(arrays)
    for a, b in zip(arrays, out):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)


def test_big_endian_input_is_normalized():
    a = np.arange(5, dtype=">i8")
    (b,) = unpack_arrays(pack_arrays(a))
    assert b.dtype == np.dtype("<i8")
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "bad", [b"", b"\x01\x00\x00\x00", pack_arrays(np.arange(4))[:-3], pack_arrays(np.arange(4)) + b"x"]
)
def test_malformed_payload_is_a_protocol_error(bad):
    with pytest.raises(ProtocolError):
        unpack_arrays(bad)


def test_object_arrays_refused():
    payload = bytearray(pack_arrays(np.zeros(1, np.int8)))
    # patch the dtype string "|i1" into "|O1"? object dtype strings are "|O": build one by hand
    bad = b"\x01\x00\x00\x00" + b"\x02|O" + b"\x01" + (1).to_bytes(8, "little") + b"\x00" * 8
    with pytest.raises(ProtocolError):
        unpack_arrays(bad)
    assert payload  # the well-formed one still unpacks
    unpack_arrays(bytes(payload))


@pytest.mark.parametrize("n", [2, 3, 5])
def test_broadcast_gather_and_order(n):
    async def f(ch, _):
        for i in range(3):  # FIFO per (sender, tag)
            await broadcast(ch, "t", f"{ch.me}:{i}".encode())
        got = [await gather_from(ch, "t") for _ in range(3)]
        return got

    res = run_parties(n, f)
    for me, got in res.items():
        for i, msgs in enumerate(got):
            assert set(msgs) == {p for p in res if p != me}
            assert all(v == f"{p}:{i}".encode() for p, v in msgs.items())


def test_scoped_tags_do_not_mix():
    async def f(ch, _):
        other = [p for p in ch.parties if p != ch.me][0]
        await send_array(ch, other, "x", np.array([1]))
        await send_array(scoped(ch, "inner"), other, "x", np.array([2]))
        inner = await recv_array(scoped(ch, "inner"), other, "x")
        outer = await recv_array(ch, other, "x")
        return int(outer[0]), int(inner[0])

    assert set(run_parties(2, f).values()) == {(1, 2)}


def test_agree_raises_on_every_party():
    async def f(ch, n):
        try:
            await agree(ch, "lengths", m=n)
        except InputMismatchError as e:
            return str(e)
        return "ok"

    res = run_parties(3, f, [4, 4, 5])
    assert all("p2=5" in v and "p0=4" in v for v in res.values())
    assert set(run_parties(3, f, [4, 4, 4]).values()) == {"ok"}


def test_recv_times_out_cleanly():
    async def main():
        net = MemoryNetwork(["a", "b"], timeout=0.05)
        with pytest.raises(ProtocolTimeoutError, match="from b"):
            await net.channel("a").recv("b", "never")

    asyncio.run(main())


def test_unknown_peer_is_an_error():
    async def main():
        net = MemoryNetwork(["a", "b"])
        with pytest.raises(ProtocolError):
            await net.channel("a").send("c", "t", b"")
        with pytest.raises(ProtocolError):
            await net.channel("a").send("a", "t", b"")

    asyncio.run(main())


def test_first_failure_cancels_the_others():
    async def f(ch, _):
        if ch.me == "p1":
            raise ProtocolError("boom")
        await ch.recv("p1", "never")  # would wait for the timeout otherwise

    with pytest.raises(ProtocolError, match="boom"):
        run_parties(2, f, timeout=30)


def test_bytes_sent_counts_payloads():
    async def f(ch, _):
        if ch.me == "p0":
            await ch.send("p1", "t", b"x" * 100)
        else:
            await ch.recv("p0", "t")
        return ch.bytes_sent

    assert run_parties(2, f) == {"p0": 100, "p1": 0}
