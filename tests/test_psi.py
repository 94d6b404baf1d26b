"""KKRT16 private set intersection (mpc/psi.py): results, message sizes, malformed messages, bad inputs.

Every run is checked against the plain intersection of the parties' digests on the
in-memory network; a channel wrapper records (and, for the malformed-message tests,
rewrites) what each party sends.
"""

import asyncio
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mpc.psi as psi
from mpc.channel import MemoryNetwork, pack_arrays, run_parties, unpack_arrays
from mpc.errors import InputMismatchError, ProtocolError
from mpc.psi import PSI_LEAKAGE, private_set_intersection, table_size, value_bytes

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def rows_of(ints) -> np.ndarray:
    """Distinct ints → 16-byte rows whose first 8 bytes are all equal (exercises the tie paths of the sorts)."""
    out = np.zeros((len(ints), 16), np.uint8)
    out[:, 8:] = np.asarray(list(ints), ">u8").reshape(-1, 1).view(np.uint8)
    return out


def random_rows(rng, n) -> np.ndarray:
    return rng.integers(0, 256, (n, 16), dtype=np.uint8)


def plain(sets) -> list[np.ndarray]:
    """Per party: which of its rows are in every set."""
    common = set(map(bytes, sets[0]))
    for s in sets[1:]:
        common &= set(map(bytes, s))
    return [np.array([bytes(r) in common for r in s], bool) for s in sets]


class Wire:
    """A party's channel that logs (sender, receiver, tag, bytes) of every message it sends and may rewrite some."""

    def __init__(self, inner, log, tamper=None):
        self._inner, self.log, self.tamper = inner, log, tamper

    @property
    def me(self):
        return self._inner.me

    @property
    def parties(self):
        return self._inner.parties

    @property
    def state(self):
        return self._inner.state

    @property
    def bytes_sent(self):
        return self._inner.bytes_sent

    async def send(self, to, tag, payload):
        if self.tamper is not None:
            payload = self.tamper(self.me, tag, payload)
        self.log.append((self.me, to, tag, len(payload)))
        await self._inner.send(to, tag, payload)

    async def recv(self, frm, tag):
        return await self._inner.recv(frm, tag)


def run(sets, *, tamper=None, log=None, timeout=20.0, tag="psi"):
    log = [] if log is None else log

    async def fn(ch, s):
        return await private_set_intersection(Wire(ch, log, tamper), s, tag=tag)

    return list(run_parties(len(sets), fn, sets, timeout=timeout).values())


def check(sets):
    got = run(sets)
    for g, want, s in zip(got, plain(sets), sets):
        assert g.dtype == np.bool_ and g.shape == (len(s),)
        np.testing.assert_array_equal(g, want)


# --------------------------------------------------------------------------- parameters
def test_public_parameters():
    assert table_size(0) == 0 and table_size(1) == 2
    assert table_size(1 << 20) == math.ceil(1.27 * (1 << 20))
    assert table_size(1 << 12) == math.ceil(1.27 * (1 << 12))
    small = [table_size(n) for n in (2, 3, 16, 1024, 4095)]
    assert small == sorted(small) and all(m > 1.27 * n for m, n in zip(small, (2, 3, 16, 1024, 4095)))
    assert value_bytes(1 << 20, 1 << 20) == 10  # σ + log2(n_R·n_S) = 80 bits
    assert value_bytes(1, 1) == 5 and value_bytes(1 << 60, 1 << 60) == 16
    assert "set size" in PSI_LEAKAGE and "leader" in PSI_LEAKAGE


def test_cuckoo_places_every_item_once():
    rng = np.random.default_rng(3)
    for n, rounds in ((5000, psi._ROUNDS), (3000, 0)):  # rounds=0: the exact matching alone
        m = table_size(n)
        bins = rng.integers(0, m, (n, psi.HASHES))
        placed = psi._cuckoo(bins, m, rounds=rounds)
        assert placed is not None
        table, choice = placed
        assert (table >= 0).sum() == n
        np.testing.assert_array_equal(table[bins[np.arange(n), choice]], np.arange(n))


def test_cuckoo_reports_impossible_placements():
    bins = np.array([[0, 1, 2]] * 4)  # four items, three bins between them (Hall's condition fails)
    assert psi._cuckoo(bins, 10) is None
    assert psi._cuckoo(bins, 10, rounds=0) is None


def test_cuckoo_failure_retries_with_a_fresh_salt(monkeypatch):
    real, calls = psi._cuckoo, []

    def flaky(bins, m, rounds=psi._ROUNDS):
        calls.append(1)
        return None if len(calls) == 1 else real(bins, m, rounds)

    monkeypatch.setattr(psi, "_cuckoo", flaky)
    check([rows_of(range(40)), rows_of(range(20, 90))])
    assert len(calls) == 2


# --------------------------------------------------------------------------- results
@st.composite
def party_sets(draw, parties):
    pool = draw(st.lists(st.integers(0, 2**64 - 1), max_size=40, unique=True))
    return [rows_of(draw(st.lists(st.sampled_from(pool), unique=True)) if pool else []) for _ in range(parties)]


@FAST
@given(sets=party_sets(2))
def test_two_parties_equal_plain_intersection(sets):
    check(sets)


@FEW
@given(sets=st.integers(3, 4).flatmap(party_sets))
def test_n_parties_equal_plain_intersection(sets):
    check(sets)


@pytest.mark.parametrize("parties", [2, 3])
def test_edge_cases(parties):
    rng = np.random.default_rng(parties)
    a = random_rows(rng, 50)
    for sets in (
        [a[:0]] * parties,  # all empty
        [a] + [a[:0]] * (parties - 1),  # one side empty
        [a[:0]] + [a] * (parties - 1),
        [a] * parties,  # identical
        [random_rows(rng, 30 + 7 * i) for i in range(parties)],  # disjoint, different sizes
        [a[:1]] * parties,  # one item each
        [a[5 * i :] for i in range(parties)],  # nested, different sizes
    ):
        check(sets)


def test_the_leader_running_out_of_candidates_ends_everyone_empty():
    rng = np.random.default_rng(7)
    a, b = random_rows(rng, 40), random_rows(rng, 40)
    check([a, b, a, a])  # p1 is disjoint from p0: p2 and p3 get an empty pairwise set


def test_hundred_thousand_items():
    rng = np.random.default_rng(11)
    common = random_rows(rng, 50_000)
    a = np.concatenate([common, random_rows(rng, 50_000)])
    b = np.concatenate([random_rows(rng, 60_000), common])
    sets = [a[rng.permutation(len(a))], b[rng.permutation(len(b))]]
    got = run(sets, timeout=120)
    for g, want in zip(got, plain(sets)):
        np.testing.assert_array_equal(g, want)
    assert got[0].sum() == 50_000


def test_repeated_and_concurrent_calls_in_one_session():
    rng = np.random.default_rng(5)
    x, y = random_rows(rng, 300), random_rows(rng, 300)
    sets = [np.concatenate([x, y[:100]]), np.concatenate([y, x[:50]])]

    async def main():
        net = MemoryNetwork(["p0", "p1"], timeout=20)

        async def party(i):
            ch = net.channel(f"p{i}")
            one = await private_set_intersection(ch, sets[i], tag="first")
            two, three = await asyncio.gather(
                private_set_intersection(ch, sets[i], tag="second"),
                private_set_intersection(ch, sets[i][::-1], tag="third"),
            )
            return one, two, three[::-1]

        return await asyncio.gather(party(0), party(1))

    for i, outs in enumerate(asyncio.run(main())):
        for out in outs:
            np.testing.assert_array_equal(out, plain(sets)[i])


# --------------------------------------------------------------------------- what goes over the wire
def message_sizes(sets):
    log = []
    run(sets, log=log)
    return sorted(log)


def test_message_sizes_depend_only_on_set_sizes():
    """Disjoint, half-shared and fully shared inputs of the same sizes give the same messages, in both directions."""
    rng = np.random.default_rng(9)
    a, other = random_rows(rng, 700), random_rows(rng, 500)
    runs = [
        message_sizes([a, other]),
        message_sizes([a, np.concatenate([a[:250], other[:250]])]),
        message_sizes([a, a[200:]]),
    ]
    assert runs[0] == runs[1] == runs[2]
    assert {(frm, to) for frm, to, _, _ in runs[0]} == {("p0", "p1"), ("p1", "p0")}


def test_receiver_answers_one_bit_per_sender_row():
    """R's answer is n_S bits (one per position of S's row-aligned lists), |∩| of them set — not which list matched."""
    rng = np.random.default_rng(2)
    a, b = random_rows(rng, 200), random_rows(rng, 300)
    b[:77] = a[50:127]
    seen = {}

    def spy(me, tag, payload):
        if tag.endswith("/hits") or tag.endswith("/values"):
            seen.setdefault((me, tag.rsplit("/", 1)[1]), []).append(unpack_arrays(payload)[0].copy())
        return payload

    got = run([a, b], tamper=spy)
    assert got[0].sum() == got[1].sum() == 77
    (hits,) = seen[("p0", "hits")]
    assert hits.shape == (-(-300 // 8),) and np.unpackbits(hits).sum() == 77
    lists = seen[("p1", "values")]
    assert len(lists) == psi.HASHES and all(v.shape == (300, value_bytes(200, 300)) for v in lists)


# --------------------------------------------------------------------------- malformed messages and inputs
def rewrite(suffix, fn, who="any"):
    def tamper(me, tag, payload):
        return fn(payload) if tag.endswith(suffix) and who in ("any", me) else payload

    return tamper


def one_array(fn):
    return lambda payload: pack_arrays(fn(unpack_arrays(payload)[0]))


@pytest.mark.parametrize(
    "suffix, fn, match",
    [
        ("/ext", lambda p: p[:-1], "malformed OPRF extension"),
        ("/ext", one_array(lambda u: u[:, :32]), "malformed OPRF extension"),
        ("/values", one_array(lambda v: np.concatenate([v, v[:, :1]], axis=1)), "malformed OPRF values"),
        ("/hits", one_array(lambda h: h[:-1]), "malformed intersection bits"),
        ("/salt", one_array(lambda s: s.astype(np.uint16)), "malformed salt"),
        ("/size", lambda p: pack_arrays(np.array([-1], np.int64)), "malformed size"),
        ("/status", lambda p: b"{not json", "malformed status"),
        ("/status", lambda p: p.replace(b'"n": ', b'"n": -'), "malformed set size"),
    ],
)
def test_malformed_message_raises_protocol_error(suffix, fn, match):
    rng = np.random.default_rng(4)
    sets = [random_rows(rng, 300), random_rows(rng, 200)]
    with pytest.raises(ProtocolError, match=match):
        run(sets, tamper=rewrite(suffix, fn), timeout=10)


def test_malformed_final_flags_raise_protocol_error():
    rng = np.random.default_rng(6)
    a = random_rows(rng, 100)
    with pytest.raises(ProtocolError, match="malformed final flags"):
        run([a, a, a], tamper=rewrite("/final", one_array(lambda f: np.concatenate([f, f]))), timeout=10)


def test_parameter_mismatch_raises_input_mismatch():
    rng = np.random.default_rng(8)
    sets = [random_rows(rng, 10), random_rows(rng, 10)]
    with pytest.raises(InputMismatchError, match="width"):
        run(sets, tamper=rewrite("/status", lambda p: p.replace(b'"width": 512', b'"width": 256')), timeout=10)


def run_catching(sets):
    async def fn(ch, s):
        try:
            return await private_set_intersection(ch, s, tag="psi")
        except Exception as e:
            return e

    return list(run_parties(len(sets), fn, sets, timeout=10).values())


@pytest.mark.parametrize("parties", [2, 3])
@pytest.mark.parametrize("bad_party", [0, 1])
def test_duplicate_rows_raise_value_error_and_abort_the_others(parties, bad_party):
    rng = np.random.default_rng(10)
    sets = [random_rows(rng, 20) for _ in range(parties)]
    sets[bad_party] = np.concatenate([sets[bad_party], sets[bad_party][3:4]])
    got = run_catching(sets)
    for i, e in enumerate(got):
        if i == bad_party:
            assert isinstance(e, ValueError) and "duplicate" in str(e)
        else:
            assert isinstance(e, ProtocolError) and f"p{bad_party} rejected its input" in str(e)


@pytest.mark.parametrize(
    "bad", [np.zeros((3, 8), np.uint8), np.zeros((3, 16), np.int64), np.zeros(16, np.uint8)], ids=str
)
def test_wrong_shape_or_dtype_raises_value_error(bad):
    got = run_catching([bad, rows_of(range(3))])
    assert isinstance(got[0], ValueError) and "(n, 16) uint8" in str(got[0])
    assert isinstance(got[1], ProtocolError)


def test_one_party_is_refused():
    net = MemoryNetwork(["solo"])
    with pytest.raises(ProtocolError, match="at least 2"):
        asyncio.run(private_set_intersection(net.channel("solo"), rows_of([1]), tag="psi"))
