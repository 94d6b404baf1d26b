"""The party daemons' audit (issue 9, item 3) without daemons: the guard, its state file, the pooled round.

Oracle: an exact rank test written here (fractions, independent of anonymize.audit.rowspace): a
party's input is determined by sums over party sets iff adding its unit vector does not raise the
rank of the sets' incidence matrix. The guard must refuse exactly the sessions the plain
SumAuditor refuses, and exactly those that bring some unit vector into the span.
"""

from __future__ import annotations

import asyncio
import json
import re
import stat
import tempfile
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anonymize.audit import SumAuditor
from mpc.channel import MemoryNetwork
from mpc.errors import ProtocolError
from parties.config import ConfigError, parse_config
from parties.guards.audit import AuditGuard, combination, make_audit_guard
from parties.guards.audit_blindspot import blind_spot_disclosures
from parties.guards.audit_pool import audit_round, decode_view, encode_view
from parties.guards.audit_state import AuditSettings, AuditStateError, parse_audit
from parties.guards.policy import Guard, Policy, PolicyGuard, Refusal, SessionRequest, run_guards
from parties.jobs import PolicyRefusal


# --------------------------------------------------------------------------- the oracle
def rank(rows: list[list[int]]) -> int:
    """Rank over Q by fraction elimination (no shared code with the auditor)."""
    m = [[Fraction(x) for x in r] for r in rows]
    rk, cols = 0, len(m[0]) if m else 0
    for c in range(cols):
        p = next((i for i in range(rk, len(m)) if m[i][c] != 0), None)
        if p is None:
            continue
        m[rk], m[p] = m[p], m[rk]
        for i in range(len(m)):
            if i != rk and m[i][c] != 0:
                f = m[i][c] / m[rk][c]
                m[i] = [a - f * b for a, b in zip(m[i], m[rk])]
        rk += 1
    return rk


def determined(sets: list[frozenset], names: list[str]) -> set[str]:
    """The parties whose input the sums over ``sets`` determine."""
    rows = [[int(n in s) for n in names] for s in sets]
    if not rows:
        return set()
    r = rank(rows)
    return {n for i, n in enumerate(names) if rank(rows + [[int(j == i) for j in range(len(names))]]) == r}


# --------------------------------------------------------------------------- helpers
def req(parties, session, *, party=None, job="secure_sum", analyst="analyst", params=None, **kw):
    parties = tuple(parties)
    return SessionRequest(party or parties[0], analyst, session, job, parties, params or {}, **kw)


def guard(tmp: Path, name="alice", peers=("bob", "carol", "dave"), **settings) -> AuditGuard:
    s = AuditSettings(**settings)
    return AuditGuard(name, s, tmp / f"audit-{name}.json", parties=peers, data={"vector": str(tmp / "v.npy")})


def admit(g: AuditGuard, r: SessionRequest) -> Refusal | None:
    """Admission, then the job starts (as a daemon does when nothing else refuses)."""
    out = g.check(r)
    if out is None:
        g.started(r)
    return out


ABC, AB = ("alice", "bob", "carol"), ("alice", "bob")


# --------------------------------------------------------------------------- the textbook cases
def test_difference_of_two_sessions_is_refused_with_one_clear_line(tmp_path):
    g = guard(tmp_path)
    assert admit(g, req(ABC, "s1")) is None
    r = admit(g, req(AB, "s2"))
    assert r is not None and r.rule == "audit.secure_sum"
    assert r.reason == (
        "auditing: the result of this secure_sum on 'vector' over {alice, bob}, with the results of "
        "session s1 over {alice, bob, carol}, would determine carol's input"
    )
    assert admit(g, req(ABC, "s3")) is None  # the same set again reveals nothing new
    assert admit(g, req(("alice", "carol", "dave"), "s4")) is None
    r = admit(g, req(("alice", "carol"), "s5", analyst="eve"))  # another analyst's sessions: counted, not named
    assert (
        r is not None and ", with the results of 1 session of another analyst, would determine bob's input" in r.reason
    )
    assert "s1" not in r.reason and "(and dave's)" in r.reason  # abc - ac = b and acd - ac = d


def test_other_data_keys_and_jobs_have_their_own_state(tmp_path):
    g = AuditGuard(
        "alice",
        AuditSettings(),
        tmp_path / "a.json",
        parties=["bob", "carol"],
        data={"vector": str(tmp_path / "v.npy"), "other": str(tmp_path / "w.npy"), "transactions": "t.dat"},
    )
    assert admit(g, req(ABC, "s1")) is None
    assert admit(g, req(AB, "s2", params={"key": "other"})) is None
    assert admit(g, req(AB, "s3", job="mine.horizontal")) is None
    assert admit(g, req(AB, "s4")) is not None
    # one file under two keys is one state
    g2 = AuditGuard(
        "alice",
        AuditSettings(),
        tmp_path / "b.json",
        parties=["bob", "carol"],
        data={"vector": str(tmp_path / "v.npy"), "alias": str(tmp_path / "v.npy")},
    )
    assert admit(g2, req(ABC, "s1")) is None
    assert admit(g2, req(AB, "s2", params={"key": "alias"})) is not None
    # a key this party does not have: the job fails before reading data, nothing to audit
    assert admit(g2, req(AB, "s3", params={"key": "nope"})) is None


def test_which_jobs_are_audited(tmp_path):
    g = AuditGuard("alice", AuditSettings(), tmp_path / "a.json", parties=["bob", "carol"], data={"transactions": "t"})
    vertical = {"job": "mine.vertical", "sum_style": False}
    assert admit(g, req(ABC, "v1", **vertical)) is None
    assert admit(g, req(AB, "v2", **vertical)) is None  # not a sum over parties: not audited by default
    assert admit(g, req(AB, "p1", job="ping", private_data=False, sum_style=False)) is None
    assert admit(g, req(ABC, "m1", job="mine.horizontal", params={"reveal_counts": False})) is None
    r = admit(g, req(AB, "m2", job="mine.horizontal"))  # private counts and counts: one kind
    assert r is not None and "would determine carol's input" in r.reason
    g.close()
    on = AuditGuard(
        "alice",
        AuditSettings(jobs={"mine.vertical": True, "mine.horizontal": False}),
        tmp_path / "b.json",
        parties=["bob", "carol"],
        data={"transactions": "t"},
    )
    assert admit(on, req(ABC, "v1", **vertical)) is None
    assert admit(on, req(AB, "v2", **vertical)) is not None
    assert admit(on, req(ABC, "m1", job="mine.horizontal")) is None
    assert admit(on, req(AB, "m2", job="mine.horizontal")) is None
    # a job that does not say which data it reads: one state for all its sessions
    assert admit(on, req(ABC, "x1", job="custom.sum")) is None
    r = admit(on, req(AB, "x2", job="custom.sum", params={"key": "anything"}))
    assert r is not None and " on '" not in r.reason
    off = AuditGuard("alice", AuditSettings(enabled=False), tmp_path / "c.json", parties=["bob", "carol"])
    assert admit(off, req(ABC, "s1")) is None and admit(off, req(AB, "s2")) is None


# --------------------------------------------------------------------------- admission is atomic
def test_two_sessions_safe_alone_are_not_both_admitted(tmp_path):
    """{a,b,c} and {a,b} admitted concurrently (neither has run yet): the second is refused."""
    g = guard(tmp_path)
    first, second = req(ABC, "s1"), req(AB, "s2")
    assert g.check(first) is None  # committed at admission, before its job runs
    r = g.check(second)
    assert r is not None and "session s1 over {alice, bob, carol}" in r.reason


def test_withdrawn_and_failed_sessions(tmp_path):
    g = guard(tmp_path)
    path = tmp_path / "audit-alice.json"

    class Later(Guard):
        name = "later"

        def check(self, request):
            return Refusal("later.no", "no") if request.session == "w1" else None

    chain = [PolicyGuard(Policy(min_parties=2)), g, Later()]
    assert run_guards(chain, req(ABC, "w1")).rule == "later.no"  # refused after the audit admitted it
    assert not path.exists() or "w1" not in path.read_text()
    assert admit(g, req(AB, "s1")) is None  # w1 was never counted ({a,b,c} - {a,b} would give c)
    # admitted, then ended before its job started here (e.g. the pooled round refused): not counted
    w2 = req(("alice", "carol", "dave"), "w2")
    assert g.check(w2) is None and "w2" in path.read_text()
    g.finished(w2, None, "refused by 'bob': ...")
    assert "w2" not in path.read_text()
    assert admit(g, req(("alice", "carol"), "s2")) is None  # with w2 counted: {a,c,d} - {a,c} = d
    # admitted, started, then failed: stays counted (the analyst may have the result from another party)
    f = req(("alice", "bob", "carol", "dave"), "f1")
    assert g.check(f) is None
    g.started(f)
    g.finished(f, None, "peer 'carol' unreachable")
    assert "f1" in path.read_text()
    r = admit(g, req(("alice", "dave"), "s3"))  # ab + ac + ad - abcd = 2a
    assert r is not None and "f1 over {alice, bob, carol, dave}" in r.reason and "alice's input" in r.reason


def test_same_set_sessions_withdrawn_in_any_order(tmp_path):
    g = guard(tmp_path)
    path = tmp_path / "audit-alice.json"
    a, b = req(ABC, "a1"), req(ABC, "b1")
    assert g.check(a) is None and g.check(b) is None  # b shares a's entry
    g.started(b)  # b's job runs; a never does
    g.withdrawn(a, "could not start")
    assert "b1" in path.read_text() and "a1" not in path.read_text()
    assert admit(g, req(AB, "x")) is not None  # b's result counts
    (tmp_path / "two").mkdir()
    g2 = guard(tmp_path / "two")
    c, d = req(ABC, "c1"), req(ABC, "d1")
    assert g2.check(c) is None and g2.check(d) is None
    g2.withdrawn(c, "no")
    g2.withdrawn(d, "no")
    assert admit(g2, req(AB, "y")) is None  # neither ran


# --------------------------------------------------------------------------- the property
NAMES = ["p0", "p1", "p2", "p3", "p4", "p5"]
session = st.tuples(
    st.sets(st.sampled_from(NAMES[1:]), max_size=5),  # others besides p0
    st.sampled_from(["run", "run", "run", "fail", "withdraw", "restart"]),
)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 6), seq=st.lists(session, min_size=1, max_size=12))
def test_guard_refuses_exactly_what_the_sum_auditor_and_the_rank_oracle_refuse(n, seq):
    names = NAMES[:n]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)

        def fresh():
            return AuditGuard("p0", AuditSettings(), tmp / "s.json", parties=names[1:], data={"vector": "v"})

        g = fresh()
        counted: list[frozenset] = []
        for i, (others, action) in enumerate(seq):
            if action == "restart":
                g.close()
                g = fresh()
                continue
            q = frozenset({"p0"} | {p for p in others if p in names})
            r = req(sorted(q), f"s{i}", party="p0")
            plain = SumAuditor(names)
            for s in counted:
                plain.commit(sorted(s))
            decision = plain.check(sorted(q))
            oracle = determined([*counted, q], names)
            got = g.check(r)
            assert (got is None) == decision.allowed == (not oracle)
            if got is not None:
                who = re.search(r"would determine (p\d)'s input", got.reason)
                assert who is not None and who.group(1) in oracle
                continue
            if action == "withdraw":
                g.withdrawn(r, "a later guard refused it")
                continue
            g.started(r)
            if action == "fail":
                g.finished(r, None, "failed after it started")
            counted.append(q)
        assert not determined(counted, names)  # nothing the guard admitted ever disclosed an input
        g.close()


@settings(max_examples=80, deadline=None)
@given(
    sets=st.lists(st.sets(st.sampled_from(NAMES), min_size=1), min_size=1, max_size=7),
    target=st.sampled_from(NAMES),
)
def test_the_named_sessions_really_determine_the_input(sets, target):
    support = combination(sets, target)
    every = determined([frozenset(s) for s in sets], NAMES)
    if support is None:
        assert target not in every
        return
    named = [frozenset(sets[j]) for j in support]
    assert target in determined(named, NAMES)
    assert rank([[int(n in s) for n in NAMES] for s in named]) == len(named)  # no set named in vain


# --------------------------------------------------------------------------- pooled views
def simulate(tmp: Path, names: list[str], sessions: list[tuple[str, ...]]) -> dict[str, list]:
    """Every party's guard; each session checked by its parties, pooled, started or withdrawn everywhere."""
    guards = {n: AuditGuard(n, AuditSettings(), tmp / f"{n}.json", parties=names, data={"vector": "v"}) for n in names}
    outcomes: dict[str, list] = {"run": [], "refused": []}
    for i, ps in enumerate(sessions):
        reqs = {p: req(ps, f"s{i}", party=p) for p in ps}
        admitted = []
        refusal = None
        for p in ps:
            refusal = guards[p].check(reqs[p])
            if refusal is not None:
                break
            admitted.append(p)
        if refusal is None:
            views = {p: guards[p].view(reqs[p]) for p in ps}
            whys = {p: guards[p].pooled_refusal(reqs[p], {o: v for o, v in views.items() if o != p}) for p in ps}
            assert len({w is None for w in whys.values()}) == 1  # every party decides the same
            refusal = next(iter(whys.values()))
        if refusal is None:
            for p in ps:
                guards[p].started(reqs[p])
            outcomes["run"].append(frozenset(ps))
        else:
            for p in admitted:
                guards[p].finished(reqs[p], None, "refused")
            outcomes["refused"].append((frozenset(ps), str(refusal)))
    for gd in guards.values():
        gd.close()
    return outcomes


def test_pairwise_sums_are_stopped_by_the_pooled_views(tmp_path):
    """After {a,b} and {a,c}, {b,c} looks harmless to b and to c alone; pooled, it gives every input."""
    names = ["a", "b", "c"]
    out = simulate(tmp_path, names, [("a", "b"), ("a", "c"), ("b", "c")])
    assert out["run"] == [frozenset("ab"), frozenset("ac")]
    ((refused, why),) = out["refused"]
    assert refused == frozenset("bc") and "sessions s0 over {a, b} and s1 over {a, c}" in why


def test_the_four_party_tracker_is_stopped_at_three_parties(tmp_path):
    names = ["a", "b", "c", "d"]
    out = simulate(tmp_path, names, [("a", "b", "c"), ("a", "b", "d"), ("a", "c", "d"), ("b", "c", "d")])
    assert len(out["run"]) == 3 and out["refused"][0][0] == frozenset("bcd")
    assert not determined(out["run"], names)


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(3, 5),
    picks=st.lists(st.sets(st.integers(0, 4), min_size=2), min_size=1, max_size=9),
)
def test_pooled_decision_is_the_rank_test_plus_the_blind_spot_rule(n, picks):
    """Refused iff the sessions its parties saw, with it, determine an input (rank test), or sessions they
    cannot see could complete a disclosure (parties.guards.audit_blindspot; no policy here: min_parties 2);
    the invariant itself (nothing admitted determines an input) is tests/test_audit_blindspot.py's."""
    names = [f"q{i}" for i in range(n)]
    sessions = [tuple(names[i] for i in sorted(p) if i < n) for p in picks]
    sessions = [s for s in sessions if len(s) >= 2]
    if not sessions:
        return
    with tempfile.TemporaryDirectory() as d:
        out = simulate(Path(d), names, sessions)
    run: list[frozenset] = []
    refused = iter(out["refused"])
    runs = iter(out["run"])
    for s in map(frozenset, sessions):
        seen = [r for r in run if r & s]  # the sessions some party of s took part in
        if determined([*seen, s], names) or blind_spot_disclosures(seen, s, names, 2):
            assert next(refused)[0] == s
        else:
            assert next(runs) == s
            run.append(s)


# --------------------------------------------------------------------------- the round on a network
def test_audit_round_refuses_on_every_party(tmp_path):
    names = ["a", "b", "c"]
    guards = {
        n: AuditGuard(n, AuditSettings(), tmp_path / f"{n}.json", parties=names, data={"vector": "v"}) for n in names
    }
    for i, ps in enumerate([("a", "b"), ("a", "c")]):
        for p in ps:
            admit(guards[p], req(ps, f"s{i}", party=p))

    async def session(ps, sid):
        net = MemoryNetwork(ps, timeout=5)
        reqs = {p: req(ps, sid, party=p) for p in ps}
        for p in ps:
            assert guards[p] is None or guards[p].check(reqs[p]) is None
        return await asyncio.gather(
            *(audit_round(guards[p], reqs[p], net.channel(p)) for p in ps), return_exceptions=True
        )

    out = asyncio.run(session(("b", "c"), "s2"))
    assert all(isinstance(e, PolicyRefusal) and "would determine" in str(e) for e in out), out
    for p in ("b", "c"):  # refused before the job ran: not counted
        guards[p].finished(req(("b", "c"), "s2", party=p), None, "refused")
        assert "s2" not in (tmp_path / f"{p}.json").read_text()
    guards["b"].close()
    guards["b"] = None  # b does not audit: it still takes part in the round
    out = asyncio.run(session(("a", "b"), "s3"))  # {a,b} again: nothing new
    assert out == [None, None]


def test_a_party_without_audit_takes_part_in_the_round():
    async def run():
        net = MemoryNetwork(["a", "b"], timeout=5)
        r = req(("a", "b"), "s")
        return await asyncio.gather(audit_round(None, r, net.channel("a")), audit_round(None, r, net.channel("b")))

    assert asyncio.run(run()) == [None, None]


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b"[]",
        b'{"audit": true}',
        b'{"audit": false, "sessions": [["analyst", "s", ["b"]]]}',
        b'{"audit": true, "sessions": [["analyst", "s", ["x", "y"]]]}',  # the sender was not part of it
        b'{"audit": true, "sessions": [["analyst", "s s", ["b"]]]}',
        b'{"audit": true, "sessions": [["Bad Name", "s", ["b"]]]}',
        b'{"audit": true, "sessions": [["analyst", "s", ["b", "b"]]]}',
        b'{"audit": true, "sessions": [["analyst", "s", [1]]]}',
    ],
)
def test_malformed_views_are_protocol_errors(payload):
    with pytest.raises(ProtocolError, match="party 'b' sent a malformed audit view"):
        decode_view(payload, "b")


def test_views_round_trip():
    assert decode_view(encode_view(None), "b") is None
    assert decode_view(encode_view([]), "b") == []


# --------------------------------------------------------------------------- the state file
def test_state_survives_a_restart_and_is_private(tmp_path):
    g = guard(tmp_path)
    assert admit(g, req(ABC, "s1")) is None
    with pytest.raises(AuditStateError, match="in use by another running daemon"):
        guard(tmp_path)
    g.close()
    path = tmp_path / "audit-alice.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    g = guard(tmp_path)
    r = admit(g, req(AB, "s2"))
    assert r is not None and "session s1 over {alice, bob, carol}" in r.reason


def _state(tmp_path, doc) -> Path:
    p = tmp_path / "audit-alice.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def _doc(sessions, party="alice"):
    return {
        "format": "ppdm-party-audit/1",
        "party": party,
        "audits": [{"data": "vector", "job": "secure_sum", "sessions": sessions}],
    }


def _s(sid, parties):
    return {"session": sid, "analyst": "analyst", "parties": parties, "admitted": "2026-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ("", "not valid JSON"),
        ("{not json", "not valid JSON"),
        ({"format": "other"}, "not a party audit state"),
        (_doc([], party="bob"), "it is the audit state of party 'bob', not of 'alice'"),
        (_doc([_s("s1", ["alice", "bob", "carol"]), _s("s2", ["alice", "bob"])]), "would have been refused"),
        (_doc([_s("s1", ["alice", "bob"]), _s("s2", ["bob", "alice"])]), "names the party set of an earlier entry"),
        (_doc([_s("s1", ["bob", "carol"])]), "'alice' is not one of its parties"),
        (_doc([_s("s 1", ["alice", "bob"])]), "is not a session id"),
        (_doc([{"session": "s1"}]), "must be an object with session, analyst, parties, admitted"),
    ],
)
def test_a_bad_state_file_stops_the_daemon_never_resets(tmp_path, doc, needle):
    _state(tmp_path, doc)
    with pytest.raises(AuditStateError) as ei:
        guard(tmp_path)
    msg = str(ei.value)
    assert needle in msg and "\n" not in msg and str(tmp_path / "audit-alice.json") in msg
    with pytest.raises(AuditStateError) as again:  # the same error again: the failed start released its lock
        guard(tmp_path)
    assert str(again.value) == msg


def test_a_state_it_cannot_write_refuses_the_session(tmp_path):
    g = guard(tmp_path)
    (tmp_path / "audit-alice.json").mkdir()  # the rename onto it fails
    r = g.check(req(ABC, "s1"))
    assert r is not None and r.rule == "audit.state" and r.reason.startswith("auditing: cannot record the session")
    (tmp_path / "audit-alice.json").rmdir()
    assert admit(g, req(AB, "s2")) is None  # s1 was not counted (it never ran)


# --------------------------------------------------------------------------- configuration
def test_audit_settings_in_party_toml(tmp_path):
    base = {"party": {"name": "alice", "listen": "127.0.0.1:1", "cert": "a.pem", "key": "a.key", "ca": "ca.pem"}}
    cfg = parse_config(base, tmp_path)
    assert cfg.audit.enabled and cfg.audit.state == tmp_path.resolve() / "audit-alice.json"
    cfg = parse_config({**base, "audit": {"state": "st/x.json", "jobs": {"mine.vertical": True}}}, tmp_path)
    assert cfg.audit.state == tmp_path.resolve() / "st" / "x.json"
    assert cfg.audit.audits("mine.vertical", private_data=True, sum_style=False)
    assert not cfg.audit.audits("ping", private_data=False, sum_style=False)
    for bad, needle in [
        ({"enabled": "yes"}, "audit.enabled must be true or false"),
        ({"state": ""}, "audit.state must be a non-empty path"),
        ({"jobs": {"secure_sum": 1}}, "audit.jobs.secure_sum must be true or false"),
        ({"jobs": ["secure_sum"]}, "audit.jobs must be a table"),
        ({"mode": "x"}, "unknown key audit.mode"),
        ("on", "audit must be a table"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(needle)):
            parse_config({**base, "audit": bad}, tmp_path, "party.toml")
    with pytest.raises(AuditStateError, match="names unknown job 'mine.horizonal'"):
        make_audit_guard(parse_config({**base, "audit": {"jobs": {"mine.horizonal": False}}}, tmp_path), ["ping"])
    assert make_audit_guard(parse_config({**base, "audit": {"enabled": False}}, tmp_path), []) is None
    assert parse_audit(None, base=tmp_path, name="bob").state == tmp_path / "audit-bob.json"


def test_a_job_without_the_round_counts_once_it_starts(tmp_path):
    """A job on no private data that [audit.jobs] audits anyway has no pooled round; its start counts it."""
    from parties.guards.audit_pool import with_audit_round

    g = AuditGuard("alice", AuditSettings(jobs={"ping": True}), tmp_path / "a.json", parties=["bob", "carol"])
    ping = {"job": "ping", "private_data": False, "sum_style": False}
    r = req(ABC, "p1", **ping)
    assert g.check(r) is None

    async def job(ctx):
        return {"ok": True}

    class Ctx:
        ch = None

    assert asyncio.run(with_audit_round(job, g, r, pooled=False)(Ctx())) == {"ok": True}
    g.finished(r, None, "failed later")
    refused = g.check(req(AB, "p2", **ping))
    assert refused is not None and "p1 over {alice, bob, carol}" in refused.reason
