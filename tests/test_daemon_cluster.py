"""Real daemon processes on loopback: chunked exchange, ordering, concurrent sessions, job errors."""

import asyncio
import time

import pytest

from parties.analyst.client import PartyError, run_sync
from parties.analyst.local_cluster import LocalCluster
from parties.runtime.grpc_channel import CHUNK_BYTES

pytestmark = pytest.mark.daemons

NAMES = ["alice", "bob", "carol", "dave"]


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(NAMES, limits={"max_message_bytes": 32 << 20}) as c:
        yield c


def check_digests(res, rounds_times_tags):
    for a in res:
        for b in res:
            if a != b:
                assert len(res[a]["sent"][b]) == rounds_times_tags
                assert res[a]["sent"][b] == res[b]["received"][a], f"{a}->{b} corrupted"


def test_startup_is_quick(cluster):
    assert cluster.startup_seconds < 5  # ~0.5 s here; generous for a loaded CI machine


def test_ping_all_four(cluster):
    res = cluster.run_job("ping", {"echo": [1, "two"]}, timeout=20)
    assert list(res) == NAMES
    assert all(r["parties"] == NAMES and r["echo"] == [1, "two"] for r in res.values())


def test_exchange_large_messages_are_chunked(cluster):
    size = 5 * CHUNK_BYTES + 12345  # > the 4 MiB default gRPC limit, not a multiple of the chunk
    res = cluster.run_job(
        "exchange", {"size": size, "rounds": 1, "tags": 2}, timeout=60, parties=["alice", "bob", "carol"]
    )
    check_digests(res, 2)
    assert res["alice"]["bytes_sent"] == 2 * 2 * size


def test_exchange_many_tags_four_parties(cluster):
    res = cluster.run_job("exchange", {"size": 300, "rounds": 3, "tags": 40}, timeout=60)
    check_digests(res, 120)


def test_fifo_per_sender_and_tag(cluster):
    res = cluster.run_job(
        "exchange", {"size": 64, "rounds": 2, "tags": 25, "fifo": True}, timeout=60, parties=["bob", "dave"]
    )
    check_digests(res, 50)  # digests compared in order: any reordering fails


def test_empty_messages(cluster):
    res = cluster.run_job("exchange", {"size": 0, "tags": 3}, timeout=20, parties=["alice", "dave"])
    check_digests(res, 3)


def test_two_concurrent_sessions_do_not_mix(cluster):
    async def both():
        # the same tags in both sessions, overlapping parties, different random bytes
        a = cluster.arun_job(
            "exchange",
            {"size": 2000, "rounds": 4, "tags": 8, "fifo": True, "seed": 1},
            timeout=60,
            parties=["alice", "bob", "carol"],
        )
        b = cluster.arun_job(
            "exchange",
            {"size": 2000, "rounds": 4, "tags": 8, "fifo": True, "seed": 2},
            timeout=60,
            parties=["carol", "bob", "alice", "dave"],
        )
        return await asyncio.gather(a, b)

    ra, rb = run_sync(both())
    check_digests(ra, 32)
    check_digests(rb, 32)
    assert ra["alice"]["sent"]["bob"] != rb["alice"]["sent"]["bob"]


def test_unknown_job_is_a_clear_error(cluster):
    with pytest.raises(PartyError) as ei:
        cluster.run_job("no_such_job", timeout=10)
    e = ei.value
    assert e.kind == "refused" and "unknown job 'no_such_job'" in str(e) and "known:" in str(e)


def test_bad_params_are_refused(cluster):
    with pytest.raises(PartyError, match="parameter 'size' must be int"):
        cluster.run_job("exchange", {"size": "huge"}, timeout=10)


def test_party_not_in_session_config(cluster):
    from parties.analyst.client import run_job
    from parties.config import PeerInfo

    ghost = PeerInfo("zoe", cluster.party("alice").address)  # not a peer of anyone; TLS name fails too
    with pytest.raises(PartyError, match="'zoe'"):
        run_sync(run_job([cluster.party("alice"), ghost], "ping", creds=cluster.creds, timeout=5))


def test_job_failure_aborts_the_session_everywhere(cluster):
    from parties.analyst.client import JobOutcome

    outcomes: dict[str, JobOutcome] = {}
    t0 = time.monotonic()
    with pytest.raises(PartyError) as ei:
        cluster.run_job("fail", {"at": "carol", "after": 0.2}, timeout=30, outcomes=outcomes, grace=2.0)
    assert time.monotonic() - t0 < 10
    e = ei.value
    assert e.party == "carol" and e.kind == "job"
    assert str(e).endswith("failed: party 'carol' failed on purpose")  # the party named once, not twice
    # the waiting parties were told by carol's Abort (not by the deadline)
    for p in ("alice", "bob", "dave"):
        if p in outcomes:
            kind, msg = outcomes[p].error
            assert kind == "peer" and "carol" in msg


def test_unexpected_exception_is_reported_by_type_only(cluster):
    with pytest.raises(PartyError) as ei:
        cluster.run_job("fail", {"at": "bob", "kind": "bug"}, timeout=30)
    msg = str(ei.value)
    assert "raised RuntimeError" in msg and "secret value" not in msg
    assert ei.value.party == "bob" and ei.value.kind == "internal"


def test_session_deadline(cluster):
    t0 = time.monotonic()
    with pytest.raises(PartyError) as ei:
        cluster.run_job("fail", {"at": "dave", "after": 30}, timeout=1.5)
    dt = time.monotonic() - t0
    assert 1.4 < dt < 6
    assert ei.value.kind == "timeout"
    assert "before the session deadline" in str(ei.value) or "session timeout" in str(ei.value)


def test_busy_event_loop_is_not_a_dead_peer(cluster):
    # bob holds its event loop for 2.5 s (longer than a Health ping's deadline): slow is not dead
    res = cluster.run_job(
        "exchange", {"size": 1000, "rounds": 1, "stall_at": "bob", "stall": 2.5}, timeout=30, parties=["alice", "bob"]
    )
    check_digests(res, 1)


def test_daemons_still_healthy_after_failures(cluster):
    assert all(cluster.alive(n) for n in NAMES)
    assert "Traceback" not in "".join(cluster.log(n) for n in NAMES)
    cluster.run_job("ping", timeout=10)


def test_cli_party_status(cluster, capsys):
    import json

    from parties.cli import main

    assert main(["party", "status", "--config", str(cluster.configs["alice"]), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["party"] == "alice" and {r["peer"] for r in out["peers"] if r["ok"]} == {"bob", "carol", "dave"}
