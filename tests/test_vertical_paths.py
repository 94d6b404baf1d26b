"""Vertical counting paths (issue 12): encrypted (LWE) and OT-batched products equal brute force;
what the encrypted path's messages reveal; the memory limit; the WAN shaping layer.

Oracles: brute-force enumeration of itemsets over the pooled data (independent
of ppdm's miners) and the plain inner products the protocols compute.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_joint_mining import as_dict, brute_force

from anonymize.itemsets import TransactionDB, fingerprint, read_fimi
from mpc.batched_product import batched_count_shares, ring_bits_for
from mpc.channel import MemoryNetwork, run_parties, unpack_arrays
from mpc.lwe_product import LWE_N, delta_bits_for, encrypted_count_shares, round_shares
from parties.joint import mine_vertical
from parties.joint.partition import split_vertical
from parties.joint.vertical import assign_encryptors
from parties.runtime.shaping import LinkShaper, ShapedChannel, parse_shape


def packed(M: np.ndarray) -> np.ndarray:
    W = -(-M.shape[1] // 64)
    out = np.zeros((M.shape[0], W * 64), np.uint8)
    out[:, : M.shape[1]] = M
    return np.packbits(out, axis=1, bitorder="little").view(np.uint64)


def vertical_parts(txs, owner, n_parties):
    return [
        TransactionDB.from_transactions(
            [[i for i in t if owner[i] == p] for t in txs], items=[i for i in range(8) if owner[i] == p]
        )
        for p in range(n_parties)
    ]


transactions_st = st.lists(
    st.lists(st.integers(0, 7), min_size=0, max_size=6).map(lambda t: sorted(set(t))), min_size=1, max_size=40
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transactions_st, st.integers(2, 3), st.sampled_from(["0.1", "0.3", "0.6"]), st.data())
def test_encrypted_and_product_paths_equal_brute_force(txs, n_parties, minsup, data):
    owner = data.draw(st.lists(st.integers(0, n_parties - 1), min_size=8, max_size=8))
    parts = vertical_parts(txs, owner, n_parties)
    want = brute_force(txs, minsup, 8)
    for counting in ("encrypted", "product"):

        async def f(ch, db, counting=counting):
            return await mine_vertical(ch, db, min_support=minsup, counting=counting)

        res = run_parties(n_parties, f, parts, timeout=300)
        for r in res.values():
            assert as_dict(r.frequent) == want


def test_encrypted_shares_are_exact_and_round():
    rng = np.random.default_rng(5)
    N, mS, mE = 3000, 4, 3
    X = (rng.random((mS, N)) < 0.2).astype(np.uint8)
    Y = (rng.random((mE, N)) < 0.4).astype(np.uint8)
    pairs = np.array([(a, b) for a in range(mS) for b in range(mE)])
    d = delta_bits_for(N)

    async def f(ch, _):
        role = "select" if ch.me == "p0" else "encrypt"
        peer = "p1" if ch.me == "p0" else "p0"
        cols = packed(X if role == "select" else Y)
        x = await encrypted_count_shares(
            ch,
            peer,
            role=role,
            columns=cols,
            n_columns_peer=mE if role == "select" else mS,
            pairs=pairs,
            n_transactions=N,
            delta_bits=d,
            tag="e",
        )
        r = await round_shares(ch, peer, x, role=0 if ch.me == "p0" else 1, delta_bits=d, tag="r")
        return x, r

    res = run_parties(2, f)
    want = np.array([int(X[a].astype(int) @ Y[b]) for a, b in pairs])
    total = res["p0"][0] + res["p1"][0]
    noise = total.view(np.int64) - want.astype(np.int64) * (1 << d)
    assert np.abs(noise).max() < 1 << (d - 2)
    assert np.any(noise != 0)  # the LWE noise is really there (and stays inside the shares)
    rounded = (res["p0"][1] + res["p1"][1]) & np.uint64((1 << (64 - d)) - 1)
    assert np.array_equal(rounded, want)


def _received_sizes(X, Y, N, pairs):
    """Every (sender, tag → size) message of one encrypted run, on a recording network."""
    sizes = {}

    async def main():
        net = MemoryNetwork(["p0", "p1"])
        for ch in (net.channel("p0"), net.channel("p1")):
            orig = ch.send

            async def send(to, tag, payload, orig=orig, me=ch.me):
                sizes[(me, tag)] = len(payload)
                await orig(to, tag, payload)

            ch.send = send  # type: ignore[method-assign]

        async def run(name):
            ch = net.channel(name)
            role = "select" if name == "p0" else "encrypt"
            cols = packed(X if role == "select" else Y)
            return await encrypted_count_shares(
                ch,
                "p1" if name == "p0" else "p0",
                role=role,
                columns=cols,
                n_columns_peer=Y.shape[0] if role == "select" else X.shape[0],
                pairs=pairs,
                n_transactions=N,
                delta_bits=delta_bits_for(N),
                tag="e",
            )

        await asyncio.gather(run("p0"), run("p1"))

    asyncio.run(main())
    return sizes


def test_encrypted_path_messages_do_not_depend_on_set_sizes():
    """What a party receives has sizes fixed by public values only — not |T_α|, |T_β| (docstring claim)."""
    N = 2500
    rng = np.random.default_rng(9)
    pairs = np.array([(0, 0), (1, 0), (1, 1)])
    sparse = _received_sizes(
        (rng.random((2, N)) < 0.01).astype(np.uint8), (rng.random((2, N)) < 0.02).astype(np.uint8), N, pairs
    )
    dense = _received_sizes(
        (rng.random((2, N)) < 0.9).astype(np.uint8), (rng.random((2, N)) < 0.7).astype(np.uint8), N, pairs
    )
    assert sparse == dense
    # the selector's reply: one n-vector per selector column and one word per pair, whatever its sets are
    reply = next(v for (who, tag), v in sparse.items() if who == "p0" and tag.endswith("/reply"))
    assert reply >= 8 * (2 * LWE_N + pairs.shape[0]) and reply < 8 * (2 * LWE_N + pairs.shape[0]) + 256


def test_batched_products_match_plain_products():
    rng = np.random.default_rng(3)
    N, P, K = 700, 3, 25
    parts = [(rng.random((4, N)) < 0.5).astype(np.uint8) for _ in range(P)]
    part_of = np.full((K, P), -1)
    for k in range(K):
        for p in rng.choice(P, size=rng.integers(1, P + 1), replace=False):
            part_of[k, p] = rng.integers(0, 4)
    kr = ring_bits_for(N)

    async def f(ch, _):
        me = ch.parties.index(ch.me)
        return await batched_count_shares(
            ch, packed(parts[me]), part_of, n_transactions=N, ring_bits=kr, tag="b", budget_bytes=1 << 16
        )

    res = run_parties(P, f)
    got = sum(res.values()) & np.uint64((1 << kr) - 1)
    want = [np.prod([parts[p][part_of[k, p]] for p in range(P) if part_of[k, p] >= 0], axis=0).sum() for k in range(K)]
    assert np.array_equal(got, np.array(want))


@settings(max_examples=40, deadline=None)
@given(
    c=st.integers(0, 1 << 17),
    frac=st.floats(-0.999, 0.999),
    share=st.integers(0, (1 << 64) - 1),
    d=st.integers(24, 45),
)
def test_round_shares_at_the_noise_bound(c, frac, share, d):
    """round(X/Δ) exactly, for noise anywhere in (−Δ/4, Δ/4) — the gap the 2-bit carry relies on."""
    delta = 1 << d
    e = int(frac * (delta // 4 - 1))
    X = (c * delta + e) % (1 << 64)
    x0 = np.array([share], np.uint64)
    x1 = np.array([(X - share) % (1 << 64)], np.uint64)

    async def f(ch, _):
        peer = "p1" if ch.me == "p0" else "p0"
        role = 0 if ch.me == "p0" else 1
        return await round_shares(ch, peer, x0 if role == 0 else x1, role=role, delta_bits=d, tag="r")

    res = run_parties(2, f)
    got = int((res["p0"] + res["p1"])[0]) % (1 << (64 - d))
    assert got == c % (1 << (64 - d))


def _recording_run(parts, minsup, counting="auto"):
    """Mine on a network that records every message a party receives (tag → payload)."""
    received: dict[str, list[tuple[str, bytes]]] = {f"p{i}": [] for i in range(len(parts))}

    async def main():
        net = MemoryNetwork(list(received))
        chans = []
        for name in received:
            ch = net.channel(name)
            orig = ch.send

            async def send(to, tag, payload, orig=orig):
                received[to].append((tag, payload))
                await orig(to, tag, payload)

            ch.send = send  # type: ignore[method-assign]
            chans.append(ch)
        return await asyncio.gather(
            *(mine_vertical(ch, db, min_support=minsup, counting=counting) for ch, db in zip(chans, parts))
        )

    return asyncio.run(main()), received


def test_single_owner_announcements_reveal_only_the_output():
    """What a party hears about its peers' single-owner candidates is exactly part of the output."""
    rng = np.random.default_rng(4)
    txs = [sorted(set(rng.choice(12, size=rng.integers(1, 6), replace=False).tolist())) for _ in range(300)]
    db = TransactionDB.from_transactions(txs)
    parts = split_vertical(db, 3)
    res, received = _recording_run(parts, "0.2")
    out = as_dict(res[0].frequent)
    assert out == brute_force(txs, "0.2", 12)
    announced = 0
    for msgs in received.values():
        for tag, payload in msgs:
            if not tag.endswith("/local"):
                continue
            level = int(tag.split("/")[-2][1:])
            rows, counts = unpack_arrays(payload)
            # the announced counts are counts of frequent single-owner itemsets of that level, nothing else
            mine = Counter(v for c, v in out.items() if len(c) == level and len({i // 4 for i in c}) == 1)
            assert not Counter(counts.tolist()) - mine and (counts >= 60).all()
            announced += rows.size
    assert announced == 2 * sum(1 for c in out if len({i // 4 for i in c}) == 1)  # each to both peers


FIMI = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fimi"


def _reference(dataset: str, minsup: float) -> dict:
    return next(
        lv
        for lv in json.loads((FIMI / "reference_counts.json").read_text())["levels"]
        if lv["dataset"] == dataset and lv["minsup"] == minsup
    )


@pytest.mark.parametrize("counting", ["product", "encrypted"])
@pytest.mark.skipif(not (FIMI / "reference_counts.json").exists(), reason="needs ../shared/data/fimi (present in CI)")
def test_vertical_mushroom_reference_on_each_path(counting):
    db = read_fimi(Path(__file__).resolve().parents[1] / "anonymize" / "data" / "mushroom.dat")
    ref = _reference("mushroom", 0.4)

    async def f(ch, part):
        return await mine_vertical(ch, part, min_support="0.4", counting=counting)

    res = run_parties(2, f, split_vertical(db, 2), timeout=600)
    assert fingerprint(res["p0"].frequent) == ref["fingerprint_md5"]
    assert {lv["encrypted" if counting == "encrypted" else "product"] > 0 for lv in res["p0"].levels[1:]} == {True}


@pytest.mark.skipif(not (FIMI / "retail.dat").exists(), reason="needs ../shared/data/fimi (present in CI)")
def test_vertical_retail_reference_encrypted():
    db = read_fimi(FIMI / "retail.dat")
    ref = _reference("retail", 0.01)

    async def f(ch, part):
        return await mine_vertical(ch, part, min_support="0.01")

    res = run_parties(2, f, split_vertical(db, 2), timeout=600)
    assert fingerprint(res["p0"].frequent) == ref["fingerprint_md5"]
    assert res["p0"].levels[1]["encrypted"] > 0  # auto chose the sparse path for level 2


def test_encryptor_assignment_follows_public_sizes_and_balances():
    assert assign_encryptors([(0, 1)], [(205, 16)], 2) == [True]  # the side with fewer parts encrypts
    assert assign_encryptors([(0, 1)], [(16, 205)], 2) == [False]
    pairs = [(0, 1), (0, 2), (1, 2)]
    for sizes in ([(24, 24)] * 3, [(24, 25), (24, 23), (25, 23)]):
        got = assign_encryptors(pairs, sizes, 3)
        enc = [q if by_q else p for (p, q), by_q in zip(pairs, got)]
        assert sorted(enc) == [0, 1, 2]  # three parties, three pairs: each encrypts once


# --------------------------------------------------------------------------- shaping
def test_shaping_adds_rtt_per_round_and_serializes_bandwidth():
    rtt, mbit = 0.05, 100.0
    rounds, big = 6, 1_250_000  # 1.25 MB at 100 Mbit/s = 0.1 s

    async def party(ch, _):
        peer = "p1" if ch.me == "p0" else "p0"
        t0 = time.perf_counter()
        for i in range(rounds):  # ping-pong: one RTT per round
            if ch.me == "p0":
                await ch.send(peer, f"ping{i}", b"x")
                await ch.recv(peer, f"pong{i}")
            else:
                await ch.recv(peer, f"ping{i}")
                await ch.send(peer, f"pong{i}", b"y")
        t1 = time.perf_counter()
        if ch.me == "p0":  # two big messages queue on one link: 2 × 0.1 s + RTT/2
            await asyncio.gather(ch.send(peer, "a", bytes(big)), ch.send(peer, "b", bytes(big)))
        else:
            await ch.recv(peer, "a")
            await ch.recv(peer, "b")
        return t1 - t0, time.perf_counter() - t1, ch.state.get("ppdm.network", {}).get("waits", 0)

    async def main():
        net = MemoryNetwork(["p0", "p1"])
        chans = [ShapedChannel(net.channel(n), LinkShaper(rtt, mbit * 1e6)) for n in ("p0", "p1")]
        return await asyncio.gather(*(party(c, None) for c in chans))

    (ping0, bulk0, waits0), (_, bulk1, _) = asyncio.run(main())
    assert rounds * rtt <= ping0 < rounds * rtt + 0.5
    expected_bulk = 2 * 8 * big / (mbit * 1e6) + rtt / 2
    assert expected_bulk <= bulk1 + 0.01 and bulk1 < expected_bulk + 0.5
    assert waits0 >= rounds  # every pong had to wait for the network


def test_shape_parsing():
    assert parse_shape("rtt_ms=50,mbit=100") == (0.05, 100e6)
    assert parse_shape("rtt_ms=10") == (0.01, None)
    assert parse_shape("") is None
    with pytest.raises(ValueError, match="PPDM_LINK_SHAPE"):
        parse_shape("rtt=5")


def test_job_over_memory_limit_is_refused_with_one_line(tmp_path):
    """A daemon whose estimate exceeds [limits] max_job_memory_bytes refuses before any protocol work."""
    from parties.analyst.local_cluster import LocalCluster
    from parties.joint.partition import save_npz, split_vertical

    txs = [[0, 1, 2], [1, 2, 3], [0, 3]] * 50
    data = {}
    for i, share in enumerate(split_vertical(TransactionDB.from_transactions(txs), 2)):
        save_npz(share, tmp_path / f"p{i}.npz")
        data[f"p{i}"] = {"transactions": str(tmp_path / f"p{i}.npz")}
    with LocalCluster(2, data=data, limits={"max_job_memory_bytes": 200 << 20}, log_level="WARNING") as c:
        with pytest.raises(Exception) as ei:
            c.run_job("mine.vertical", {"min_support": "0.3"}, timeout=60)
    msg = str(ei.value)
    assert "max_job_memory_bytes" in msg and "MiB" in msg
    assert "\n" not in msg.strip() and "Traceback" not in msg
