"""The party daemons audit the sums they reveal (issue 9, item 3), on real daemons.

Three parties whose policy lets two-party sessions through (``min_parties = 2``), so that it is the
audit that refuses: on main, a secure sum (or joint mining) over {a,b,c} and then over {a,b} gave the
analyst carol's input as the difference; pairwise sums over {a,b}, {a,c}, {b,c} gave every input.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from parties.analyst.client import PartyError, health, new_session_id, run_job, run_sync, start_job
from parties.config import write_config
from parties.identity.tls import create_ca, issue_cert

NAMES = ["alice", "bob", "carol"]
VECTORS = {"alice": [5, 100, -3], "bob": [7, 1, 40], "carol": [11, 2, 9]}
MINE = {"min_support": "1/2", "n_items": 4}

pytestmark = pytest.mark.daemons


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from parties.analyst.local_cluster import LocalCluster

    d = tmp_path_factory.mktemp("audit")
    data = {}
    for i, (n, v) in enumerate(VECTORS.items()):
        for key, scale in (("vector", 1), ("other", 2), ("pairs", 3), ("race", 4)):
            np.save(d / f"{n}-{key}.npy", np.array(v, dtype=np.int64) * scale)
        (d / f"{n}.dat").write_text("0 1\n1 2\n" * (i + 2) + "3\n")
        data[n] = {k: str(d / f"{n}-{k}.npy") for k in ("vector", "other", "pairs", "race")}
        data[n]["transactions"] = str(d / f"{n}.dat")
    with LocalCluster(NAMES, data=data, policy={"min_parties": 2}) as c:
        yield c


def outcomes(cluster, job, params, parties, sid=None):
    """StartJob on every party of the session, none cancelled: each party's own answer."""
    sid = sid or new_session_id()

    async def go():
        return await asyncio.gather(
            *(start_job(cluster.party(p), sid, job, params, parties, creds=cluster.creds, timeout=30) for p in parties)
        )

    return sid, {o.party: o for o in run_sync(go())}


def settle(cluster, names) -> None:
    """Wait until no session is live at ``names`` (a refused session ends there after the analyst has the error).

    Bounded by the sessions' own 30 s timeout plus a margin: a party whose peer refused a session
    learns it from its watchdog, which on a loaded machine took more than 10 s once (CI); a session
    still live after its deadline is the bug this guards against."""
    deadline = time.monotonic() + 35
    while any(run_sync(health(cluster.party(p), cluster.creds)).active_sessions for p in names):
        assert time.monotonic() < deadline, "sessions still live"
        time.sleep(0.05)


def state(cluster, name) -> dict:
    p = cluster.workdir / name / f"audit-{name}.json"
    return json.loads(p.read_text()) if p.exists() else {"audits": []}


def recorded(cluster, name, data, job) -> list[tuple[str, ...]]:
    for a in state(cluster, name)["audits"]:
        if (a["data"], a["job"]) == (data, job):
            return [tuple(s["parties"]) for s in a["sessions"]]
    return []


def test_a_sum_that_differences_an_earlier_one_is_refused_by_the_parties_of_both(cluster):
    first = cluster.run_job("secure_sum", {}, parties=NAMES, timeout=30)
    total = first["alice"]["sum"]
    assert total == np.sum([VECTORS[n] for n in NAMES], axis=0).tolist()
    sid1 = next(iter(s["session"] for a in state(cluster, "alice")["audits"] for s in a["sessions"]))
    _, out = outcomes(cluster, "secure_sum", {}, ["alice", "bob"])
    for p in ("alice", "bob"):  # each refuses on its own, before any protocol message
        assert out[p].error == (
            "refused",
            f"refused by {p!r}: auditing: the result of this secure_sum on 'vector' over {{alice, bob}}, "
            f"with the results of session {sid1} over {{alice, bob, carol}}, would determine carol's input",
        )
        assert out[p].bytes_sent == 0
    # the same set again reveals nothing new: answered
    assert cluster.run_job("secure_sum", {}, parties=NAMES, timeout=30)["bob"]["sum"] == total
    # another data key has its own audit
    assert cluster.run_job("secure_sum", {"key": "other"}, parties=["alice", "bob"], timeout=30)["alice"]["sum"] == [
        24,
        202,
        74,
    ]
    assert recorded(cluster, "carol", "vector", "secure_sum") == [tuple(NAMES)]
    assert recorded(cluster, "alice", "vector", "secure_sum") == [tuple(NAMES)]  # the refused one left no trace


def test_joint_mining_counts_are_audited_as_sums(cluster):
    first = cluster.run_job("mine.horizontal", MINE, parties=NAMES, timeout=60)
    assert first["alice"]["itemsets"]
    for params in (MINE, {**MINE, "reveal_counts": False}):  # private counts: threshold bits of the same sums
        _, out = outcomes(cluster, "mine.horizontal", params, ["alice", "bob"])
        for p in ("alice", "bob"):
            kind, msg = out[p].error
            assert kind == "refused" and msg.startswith(
                f"refused by {p!r}: auditing: the result of this mine.horizontal"
            )
            assert msg.endswith("would determine carol's input") and "on 'transactions'" in msg
    again = cluster.run_job("mine.horizontal", MINE, parties=NAMES, timeout=60)
    assert again["alice"]["itemsets"] == first["alice"]["itemsets"]


def test_pairwise_sums_are_refused_though_no_party_saw_both_others(cluster):
    """{a,b} and {a,c} are answered; {b,c} looks harmless to b and to c alone — their pooled views refuse it."""
    key = {"key": "pairs"}
    ab = cluster.run_job("secure_sum", key, parties=["alice", "bob"], timeout=30)
    ac = cluster.run_job("secure_sum", key, parties=["alice", "carol"], timeout=30)
    assert ab["bob"]["sum"] and ac["carol"]["sum"]
    with pytest.raises(PartyError) as ei:
        cluster.run_job("secure_sum", key, parties=["bob", "carol"], timeout=30)
    e = ei.value
    assert e.kind == "refused" and e.party in ("bob", "carol")
    assert "auditing: the result of this secure_sum on 'pairs' over {bob, carol}, with the results of sessions" in str(
        e
    )
    # refused before the job ran: neither counts it, so the earlier sessions can still be repeated
    settle(cluster, NAMES)
    for p in ("bob", "carol"):
        assert ("bob", "carol") not in recorded(cluster, p, "pairs", "secure_sum")
    assert cluster.run_job("secure_sum", key, parties=["alice", "bob"], timeout=30)["alice"] == ab["alice"]


def test_two_concurrent_sessions_never_both_answer(cluster):
    """{a,b,c} and {a,b} on a fresh key, started together: each is safe alone; together they give carol's input."""
    key = {"key": "race"}

    async def both():
        return await asyncio.gather(
            run_job([cluster.party(p) for p in NAMES], "secure_sum", key, creds=cluster.creds, timeout=30),
            run_job([cluster.party(p) for p in ("alice", "bob")], "secure_sum", key, creds=cluster.creds, timeout=30),
            return_exceptions=True,
        )

    res = run_sync(both())
    settle(cluster, NAMES)
    answered = [r for r in res if not isinstance(r, BaseException)]
    assert len(answered) <= 1, res
    for r in res:
        if isinstance(r, PartyError):
            assert r.kind in ("refused", "peer"), r
    # whatever interleaving happened, what the parties recorded for this key never determines an input
    # (a session that started at a party and then failed stays counted there: the conservative rule)
    sets = set()
    for name in NAMES:
        for a in state(cluster, name)["audits"]:
            if a["job"] == "secure_sum" and "race" in a["data"]:
                sets.update(tuple(sorted(s["parties"])) for s in a["sessions"])
    assert not _determined(sets), sets


def _determined(sets) -> list[str]:
    """Parties whose input the sums over ``sets`` determine: e_i in the rows' span (exact, Fractions)."""
    from fractions import Fraction

    rows = [[Fraction(int(n in s)) for n in NAMES] for s in sets]
    basis: list[list[Fraction]] = []
    for r in rows:  # Gaussian elimination to a reduced echelon basis
        r = r[:]
        for b in basis:
            piv = next(i for i, x in enumerate(b) if x)
            if r[piv]:
                f = r[piv] / b[piv]
                r = [x - f * y for x, y in zip(r, b)]
        if any(r):
            basis.append(r)
    out = []
    for i, n in enumerate(NAMES):
        e = [Fraction(int(j == i)) for j in range(len(NAMES))]
        for b in basis:
            piv = next(k for k, x in enumerate(b) if x)
            if e[piv]:
                f = e[piv] / b[piv]
                e = [x - f * y for x, y in zip(e, b)]
        if not any(e):
            out.append(n)
    return out


def test_the_policy_refuses_first_and_the_audit_does_not_count_it(cluster):
    before = state(cluster, "alice")
    with pytest.raises(PartyError) as ei:
        cluster.run_job("secure_sum", {"key": "other"}, parties=["alice"], timeout=30)
    assert ei.value.reason == "refused by 'alice': policy requires at least 2 parties for secure_sum (got 1)"
    assert state(cluster, "alice") == before


def test_a_restart_keeps_the_audit(cluster):
    cluster.kill("alice")  # SIGKILL: no clean shutdown
    cluster.restart("alice")
    sid, out = outcomes(cluster, "secure_sum", {}, ["alice", "bob"])
    kind, msg = out["alice"].error
    assert kind == "refused" and msg.startswith("refused by 'alice': auditing:") and "carol's input" in msg
    assert cluster.run_job("secure_sum", {}, parties=NAMES, timeout=30)["alice"]["sum"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{ not json", "not valid JSON"),
        (json.dumps({"format": "ppdm-party-audit/1", "party": "bob", "audits": []}), "party 'bob', not of 'alice'"),
    ],
)
def test_a_corrupt_or_foreign_state_stops_the_daemon_with_one_line(tmp_path, content, needle):
    ca, ca_key = create_ca(tmp_path / "ca")
    issue_cert(ca, ca_key, "alice", tmp_path / "alice")
    cfg = write_config(
        tmp_path / "alice" / "party.toml",
        name="alice",
        listen="127.0.0.1:0",
        cert="alice.pem",
        key="alice.key",
        ca=ca,
        audit={"state": "state.json"},
    )
    (tmp_path / "alice" / "state.json").write_text(content)
    repo = Path(__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-m", "parties.runtime.daemon", "--config", str(cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    assert r.returncode == 2
    assert r.stderr.startswith("ppdm party: error: ") and r.stderr.count("\n") == 1
    assert needle in r.stderr and "never resets an audit state" in r.stderr
    assert (tmp_path / "alice" / "state.json").read_text() == content  # left as it was
