"""Denial of service by a peer (issue 8, item 6): pending sessions and buffered bytes are capped per peer.

On main a peer could fill ``max_sessions`` at another party by sending
``Deliver`` for session ids no analyst started, and every analyst job there
was refused until they expired. Now pending sessions are charged to the peer
that opened them (``max_peer_pending_sessions``) and never take the slots of
the sessions analysts start; every byte a peer makes a daemon hold counts
against ``max_peer_buffer_bytes``; and ``Abort`` for sessions a daemon does not
run keeps no state.
"""

from __future__ import annotations

import grpc
import pytest

from parties.analyst.client import health, run_sync
from parties.proto.ppdm.v1 import party_pb2 as pb
from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc

pytestmark = pytest.mark.daemons

NAMES = ["alice", "bob", "carol"]
MiB = 1 << 20


async def _deliver(cluster, as_party: str, to: str, key: str, payload: bytes) -> grpc.StatusCode:
    creds = cluster.credentials(as_party)
    async with grpc.aio.secure_channel(
        cluster.party(to).address, creds.channel_credentials(), options=[("grpc.ssl_target_name_override", to)]
    ) as ch:
        stub = pb_grpc.PartyStub(ch)
        step = 1 << 20  # gRPC frames are at most one chunk
        chunks = [
            pb.Chunk(header=pb.MessageHeader(session=key, tag="t", total_length=len(payload)), data=payload[:step])
        ]
        chunks += [pb.Chunk(data=payload[i : i + step]) for i in range(step, len(payload), step)]
        try:
            await stub.Deliver(iter(chunks), timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code()
        return grpc.StatusCode.OK


async def _abort(cluster, as_party: str, to: str, key: str) -> grpc.StatusCode:
    creds = cluster.credentials(as_party)
    async with grpc.aio.secure_channel(
        cluster.party(to).address, creds.channel_credentials(), options=[("grpc.ssl_target_name_override", to)]
    ) as ch:
        try:
            await pb_grpc.PartyStub(ch).Abort(pb.AbortRequest(session=key, reason="x"), timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code()
        return grpc.StatusCode.OK


@pytest.fixture(scope="module")
def cluster():
    from parties.analyst.local_cluster import LocalCluster

    limits = {
        "max_sessions": 4,
        "max_peer_pending_sessions": 3,
        "max_peer_buffer_bytes": 3 * MiB,
        "pending_ttl": 30.0,
    }
    with LocalCluster(NAMES, limits=limits) as c:
        yield c


def test_a_pending_session_flood_from_one_peer_leaves_analyst_jobs_running(cluster):
    """Fails on main: bob's Deliver for ids nobody started filled alice's max_sessions."""
    codes = [run_sync(_deliver(cluster, "bob", "alice", f"analyst/flood-{i}", b"x" * 100)) for i in range(12)]
    assert codes[:3] == [grpc.StatusCode.OK] * 3
    assert set(codes[3:]) == {grpc.StatusCode.RESOURCE_EXHAUSTED}  # bob's cap: 3 pending sessions
    assert "too many pending sessions from 'bob' at alice (3)" in cluster.log("alice")
    # another peer is not affected by bob's flood ...
    assert run_sync(_deliver(cluster, "carol", "alice", "analyst/carol-early", b"y")) == grpc.StatusCode.OK
    # ... and analyst jobs at alice run (the flood took none of her max_sessions = 4 slots)
    for _ in range(5):
        out = cluster.run_job("exchange", {"size": 1000, "tags": 2}, timeout=30, parties=["alice", "carol"])
        assert out["alice"]["sent"]["carol"] == out["carol"]["received"]["alice"]
    assert run_sync(health(cluster.party("alice"), cluster.creds)).active_sessions == 4  # the 4 pending ones
    # bob only hurt himself: his own early messages for new sessions at alice wait for his junk to expire


def test_buffered_bytes_are_capped_per_peer_across_sessions(cluster):
    # 3 MiB per peer: a 2 MiB and then a 1.5 MiB message from bob do not both fit
    key = "analyst/bytes-"
    assert run_sync(_deliver(cluster, "bob", "carol", key + "1", b"z" * (2 * MiB))) == grpc.StatusCode.OK
    assert (
        run_sync(_deliver(cluster, "bob", "carol", key + "2", b"z" * (3 * MiB // 2)))
        == grpc.StatusCode.RESOURCE_EXHAUSTED
    )
    assert "max_peer_buffer_bytes" in cluster.log("carol")
    # alice's bytes at carol are her own budget
    assert run_sync(_deliver(cluster, "alice", "carol", key + "3", b"z" * (2 * MiB))) == grpc.StatusCode.OK


def test_aborts_for_sessions_nobody_runs_keep_no_state(cluster):
    """Fails on main: every such Abort was remembered (state a peer could make a daemon hold)."""
    before = run_sync(health(cluster.party("carol"), cluster.creds)).active_sessions
    codes = {run_sync(_abort(cluster, "bob", "carol", f"analyst/ghost-{i}")) for i in range(20)}
    assert codes == {grpc.StatusCode.OK}
    assert run_sync(health(cluster.party("carol"), cluster.creds)).active_sessions == before
    # and a session whose job has not started here is failed by an Abort only from one of its parties
    assert run_sync(_deliver(cluster, "alice", "carol", "analyst/late", b"early")) == grpc.StatusCode.OK
    assert run_sync(_abort(cluster, "bob", "carol", "analyst/late")) == grpc.StatusCode.OK  # bob is no party
    from parties.analyst.client import start_job

    async def start_late():
        from asyncio import gather

        return await gather(
            *(
                start_job(cluster.party(n), "late", "ping", {}, ["alice", "carol"], creds=cluster.creds, timeout=20)
                for n in ("alice", "carol")
            )
        )

    # alice already sent her early message for this id; the job itself is a fresh ping
    outs = run_sync(start_late())
    assert all(o.error is None for o in outs), [o.error for o in outs]


def test_peers_cannot_name_sessions_of_strangers(cluster):
    assert run_sync(_deliver(cluster, "bob", "alice", "mallory/s1", b"x")) == grpc.StatusCode.PERMISSION_DENIED
    assert run_sync(_deliver(cluster, "bob", "alice", "no-analyst-part", b"x")) == grpc.StatusCode.INVALID_ARGUMENT
