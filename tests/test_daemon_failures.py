"""A party dies mid-session: one clear error, fast, and the survivors serve the next session."""

import asyncio
import signal
import time

import pytest

from parties.analyst.client import PartyError, new_session_id, run_sync, start_job

pytestmark = pytest.mark.daemons

NAMES = ["alice", "bob", "carol"]
# ~5 s of work if nobody dies: 50 rounds, 0.1 s apart
LONG = {"size": 20_000, "rounds": 50, "delay": 0.1, "tags": 2}
TIMEOUT = 60.0  # the session deadline: failures must be reported long before it


async def kill_later(cluster, name, after, sig=signal.SIGKILL):
    await asyncio.sleep(after)
    await asyncio.to_thread(cluster.kill, name, sig)
    return time.monotonic()


def test_killed_party_gives_one_clear_error_and_survivors_go_on(make_cluster):
    c = make_cluster(NAMES)

    async def scenario():
        killer = asyncio.create_task(kill_later(c, "bob", 1.0))
        t0 = time.monotonic()
        with pytest.raises(PartyError) as ei:
            await c.arun_job("exchange", LONG, timeout=TIMEOUT)
        return ei.value, time.monotonic() - t0, time.monotonic() - await killer

    err, total, after_kill = run_sync(scenario())
    assert err.party == "bob" and err.kind == "unreachable"
    assert "party 'bob' unreachable" in str(err) and str(err).startswith(f"session {err.session} (exchange) failed")
    assert after_kill < 5.0 and total < 8.0, (after_kill, total)
    # the survivors serve the next session (with and without the dead party's replacement)
    res = c.run_job("exchange", {"size": 5000, "tags": 2}, timeout=20, parties=["alice", "carol"])
    assert res["alice"]["sent"]["carol"] == res["carol"]["received"]["alice"]
    c.restart("bob")
    assert set(c.run_job("ping", timeout=20)) == set(NAMES)


def test_survivors_detect_the_dead_peer_themselves(make_cluster):
    """Without the analyst's help: each survivor's own watchdog/sends notice that bob is gone."""
    c = make_cluster(NAMES)
    sid = new_session_id()

    async def scenario():
        tasks = {
            p.name: asyncio.create_task(start_job(p, sid, "exchange", LONG, NAMES, creds=c.creds, timeout=TIMEOUT))
            for p in c.peers
        }
        killed_at = await kill_later(c, "bob", 1.0)
        out = {}
        for n in ("alice", "carol"):
            out[n] = await tasks[n]
            out[n].extra["after_kill"] = time.monotonic() - killed_at
        await tasks["bob"]
        return out

    out = run_sync(scenario())
    for n, o in out.items():
        assert o.error is not None, f"{n} did not fail"
        kind, msg = o.error
        assert kind == "peer" and "'bob'" in msg, (n, o.error)
        assert o.extra["after_kill"] < 5.0, (n, o.extra)
    assert "unreachable" in out["alice"].error[1] + out["carol"].error[1]
    for n in ("alice", "carol"):
        assert f"session analyst/{sid}: job exchange failed" in c.log(n)
    assert set(c.run_job("ping", timeout=20, parties=["carol", "alice"])) == {"alice", "carol"}


def test_sigterm_stops_a_daemon_cleanly_and_aborts_its_sessions(make_cluster):
    # SIGTERM drains: running sessions may finish for drain_timeout, then they are aborted (peers told)
    c = make_cluster(NAMES, limits={"drain_timeout": 1})

    async def scenario():
        killer = asyncio.create_task(kill_later(c, "carol", 1.0, signal.SIGTERM))
        with pytest.raises(PartyError) as ei:
            await c.arun_job("exchange", LONG, timeout=TIMEOUT)
        await killer
        return ei.value

    t0 = time.monotonic()
    err = run_sync(scenario())
    assert time.monotonic() - t0 < 8
    assert "carol" in str(err)
    assert c.procs["carol"].returncode == 0
    assert "stopped" in c.log("carol") and "Traceback" not in c.log("carol")
    assert set(c.run_job("ping", timeout=20, parties=["alice", "bob"])) == {"alice", "bob"}


def test_a_daemon_that_cannot_start_is_one_clear_error():
    from parties.analyst.local_cluster import ClusterError, LocalCluster

    with pytest.raises(
        ClusterError, match="daemon alice exited with code 1: .*job module 'ppdm_no_such_jobs' not found"
    ):
        LocalCluster(["alice"], job_modules=["ppdm_no_such_jobs"]).start()


def test_a_failed_background_task_is_logged_when_it_fails_with_its_type_only(caplog):
    """A daemon's background task (an abort sent to peers, a reload, draining) that raises is logged
    at once — its coroutine and the exception's type, never the message (it may quote data) — and
    leaves the set of running background tasks."""
    import functools
    import logging

    from parties.runtime.daemon import Daemon

    class Host:
        pass

    host = Host()
    host._bg = set()
    host.log = logging.getLogger("ppdm.test.background")

    async def send_aborts():
        raise ValueError("secret value 42")

    async def go():
        t = asyncio.create_task(send_aborts())
        host._bg.add(t)
        t.add_done_callback(functools.partial(Daemon._background_done, host))
        await asyncio.sleep(0.05)

    with caplog.at_level(logging.ERROR, logger="ppdm.test.background"):
        asyncio.run(go())
    assert "background task" in caplog.text and "send_aborts failed: ValueError" in caplog.text
    assert "secret" not in caplog.text and not host._bg
