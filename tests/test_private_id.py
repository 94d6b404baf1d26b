"""Private-ID (mpc.private_id) against the plain function it computes, and the view of one party.

Plain function: consistent pseudonyms — one identifier per distinct key across all parties — whose
set is the union, plus the union and intersection sizes. The adversary: a party that looks at
everything it receives, trying to tell which of its records another party holds.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc.channel import MemoryNetwork, run_parties
from mpc.errors import ProtocolError
from mpc.private_id import private_id


def keys(xs) -> list[bytes]:
    return [int(x).to_bytes(8, "big") for x in xs]


def run(sets: list[list[bytes]]):
    return run_parties(len(sets), lambda ch, items: private_id(ch, items), sets, timeout=120)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sets(st.integers(0, 40), max_size=25), min_size=2, max_size=3))
def test_private_id_is_the_plain_union_with_consistent_pseudonyms(sets) -> None:
    inputs = [keys(sorted(s)) for s in sets]
    res = run(inputs)
    union = set().union(*sets)
    common = set.intersection(*map(set, sets))
    ids: dict[bytes, bytes] = {}
    for p, items in enumerate(inputs):
        r = res[f"p{p}"]
        assert np.array_equal(r.union, res["p0"].union)
        assert len(r.union) == len(union) and r.intersection == len(common)
        assert r.sizes == {f"p{i}": len(s) for i, s in enumerate(sets)}
        rows = r.rows()
        assert np.array_equal(r.union[rows], r.own)
        for k, v in zip(items, r.own):
            assert ids.setdefault(k, v.tobytes()) == v.tobytes()  # the same key gets the same id everywhere
    assert len(set(ids.values())) == len(union)  # different keys, different ids


def test_repeated_keys_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="distinct"):
        run([keys([1, 1]), keys([2])])


class Recording:
    """A channel that records (sender, tag, size) of every message its party receives."""

    def __init__(self, ch, log):
        self._ch, self.log = ch, log

    def __getattr__(self, name):
        return getattr(self._ch, name)

    async def recv(self, frm, tag):
        data = await self._ch.recv(frm, tag)
        self.log.append((frm, tag, len(data)))
        return data


def view_of_p0(a: list[bytes], b: list[bytes]):
    import asyncio

    async def main():
        net = MemoryNetwork(["p0", "p1"], timeout=60)
        log: list = []
        r0, _ = await asyncio.gather(private_id(Recording(net.channel("p0"), log), a), private_id(net.channel("p1"), b))
        return r0, log

    return asyncio.run(main())


def test_which_records_are_shared_changes_nothing_in_the_sizes_a_party_sees() -> None:
    """Two runs whose inputs differ only in *which* of p0's records p1 holds (same sizes, same overlap)."""
    mine = keys(range(0, 200))
    r1, log1 = view_of_p0(mine, keys(list(range(0, 80)) + list(range(1000, 1120))))  # shares p0's first 80
    r2, log2 = view_of_p0(mine, keys(list(range(120, 200)) + list(range(2000, 2120))))  # shares p0's last 80
    assert [(f, t, n) for f, t, n in log1] == [(f, t, n) for f, t, n in log2]
    assert r1.intersection == r2.intersection == 80 and len(r1.union) == len(r2.union) == 320
    # p0's output: its identifiers and the union; every own identifier is in the union, which is sorted by
    # the pseudonyms themselves, so the rows of its records carry no membership bit
    for r in (r1, r2):
        rows = r.rows()
        assert [bytes(x) for x in r.union] == sorted(bytes(x) for x in r.union)
        assert len(set(rows.tolist())) == 200
    shared = np.isin(np.arange(200), np.arange(80))
    # the ranks of shared and unshared records in the union interleave (no block, no order by membership)
    ranks = r1.rows()
    assert ranks[shared].min() < ranks[~shared].max() and ranks[~shared].min() < ranks[shared].max()


def test_a_non_canonical_point_ends_the_session() -> None:
    import asyncio

    async def main():
        net = MemoryNetwork(["p0", "p1"], timeout=4)  # the deviating party waits for its peer until then
        honest = net.channel("p0")
        evil = net.channel("p1")
        real_send = evil.send

        async def send(to, tag, data):
            if "/A/" in tag:  # the first point of its pass-A batch non-canonically encoded (bit 255 set)
                from mpc.channel import pack_arrays, unpack_arrays

                (arr,) = unpack_arrays(data)
                arr = arr.copy()
                arr[0, 31] |= 0x80
                data = pack_arrays(arr)
            await real_send(to, tag, data)

        evil.send = send  # type: ignore[method-assign]
        return await asyncio.gather(
            private_id(honest, keys(range(10))), private_id(evil, keys(range(5, 15))), return_exceptions=True
        )

    out = asyncio.run(main())
    assert isinstance(out[0], ProtocolError) and "non-canonical" in str(out[0])
