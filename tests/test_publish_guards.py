"""Joint publishing's guards (``[publish]``, parties.guards.releases): pinned hierarchies and the limit
on distinct releases of one data key — the attacks they stop, as the guard sees the sessions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from anonymize.publish.hierarchy import Hierarchy
from parties.config import ConfigError, parse_config
from parties.guards.policy import Refusal, SessionRequest
from parties.guards.releases import PublishStateError, ReleaseGuard, parse_publish, release_digest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
PARTIES = ("alice", "bob", "carol")


def _rows(col: str) -> list[list[str]]:
    return Hierarchy.read_arx(DATA / f"adult_hierarchy_{col}.csv", name=col).to_rows()


def _params(**kw) -> dict:
    p = {
        "qi": ["age", "sex"],
        "hierarchies": {"age": _rows("age"), "sex": _rows("sex")},
        "sensitive": None,
        "k": 5,
        "max_suppression": 0.05,
        "data": "table",
    }
    p.update(kw)
    return p


def _req(session: str, parties=PARTIES, **kw) -> SessionRequest:
    return SessionRequest(
        party="alice",
        analyst="analyst",
        session=session,
        job="publish.horizontal",
        parties=parties,
        params=_params(**kw),
    )


@pytest.fixture
def table(tmp_path) -> Path:
    f = tmp_path / "alice.csv"
    f.write_text("age;sex\n39;Male\n")
    return f


def _guard(tmp_path, table, **settings) -> ReleaseGuard:
    s = parse_publish(settings or None, base=tmp_path, name="alice")
    return ReleaseGuard("alice", s, s.state or tmp_path / "releases-alice.json", {"table": str(table)})


def _run(g: ReleaseGuard, req: SessionRequest, ok: bool = True):
    """Admit; if the job then has its result here (``ok``), commit it: the refusal (either step) or None."""
    r = g.check(req)
    if r is None and ok:
        why = g.commit(req)
        return None if why is None else Refusal("commit", why)
    return r


def test_a_second_distinct_release_of_one_data_key_is_refused_and_the_same_one_is_answered(tmp_path, table):
    g = _guard(tmp_path, table)
    assert _run(g, _req("s1")) is None
    r = _run(g, _req("s2", k=10))  # another node of the same rows: the releases could be combined
    assert r is not None and r.rule == "publish.max_releases"
    assert "already joined 1 release of data 'table'" in r.reason and "max_releases" in r.reason
    assert _run(g, _req("s3")) is None  # the same parameters and parties, the data unchanged: nothing new
    assert g.counted("table") == 1


def test_a_release_over_fewer_parties_is_a_new_release(tmp_path, table):
    """{a,b,c} and then {a,b} (carol as a compute-only party or not at all): their difference is carol's rows."""
    g = _guard(tmp_path, table)
    assert _run(g, _req("s1")) is None
    assert _run(g, _req("s2", parties=("alice", "bob", "carol"), compute_only=["carol"])).rule == "publish.max_releases"
    assert _run(g, _req("s3", parties=("alice", "bob", "dave"))).rule == "publish.max_releases"


def test_max_releases_two_allows_exactly_two(tmp_path, table):
    g = _guard(tmp_path, table, max_releases=2)
    assert _run(g, _req("s1")) is None
    assert _run(g, _req("s2", k=10)) is None
    assert _run(g, _req("s3", k=20)).rule == "publish.max_releases"
    assert _run(g, _req("s4", k=10)) is None  # one of the two again


def test_concurrent_sessions_with_different_parameters_cannot_both_be_released(tmp_path, table):
    g = _guard(tmp_path, table)
    a, b = _req("s1"), _req("s2", k=10)
    assert g.check(a) is None and g.check(b) is None  # both admitted: neither is counted yet
    assert g.commit(b) is None  # b finished here first: its share leaves
    why = g.commit(a)  # a must not leave too: refused here, so the analyst cannot reconstruct it
    assert why is not None and "meanwhile joined 1 release" in why
    assert g.commit(_req("s3", k=10)) is None  # b again
    assert g.counted("table") == 1


def test_a_failed_session_is_not_counted_and_a_retry_is_answered(tmp_path, table):
    g = _guard(tmp_path, table)
    assert _run(g, _req("s1"), ok=False) is None  # refused elsewhere or failed: this party's share never left
    assert g.counted("table") == 0
    assert _run(g, _req("s2", k=10)) is None  # the analyst's corrected retry
    assert g.counted("table") == 1


def test_an_unwritable_state_releases_nothing(tmp_path, table):
    g = _guard(tmp_path, table)
    state = tmp_path / "releases-alice.json"
    state.mkdir()  # the atomic rename onto it fails
    why = g.commit(_req("s1"))
    assert why == "this party cannot record the release (see its log), so it does not release it"
    assert g.counted("table") == 0
    g.close()


def test_changed_data_is_a_new_release(tmp_path, table):
    g = _guard(tmp_path, table)
    assert _run(g, _req("s1")) is None
    table.write_text("age;sex\n39;Male\n40;Female\n")
    st = table.stat()
    os.utime(table, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    r = _run(g, _req("s2"))  # the same parameters over other rows: differencing over time
    assert r is not None and r.rule == "publish.max_releases"


def test_the_count_survives_a_restart_and_a_foreign_state_is_refused(tmp_path, table):
    g = _guard(tmp_path, table)
    assert _run(g, _req("s1")) is None
    g.close()
    state = json.loads((tmp_path / "releases-alice.json").read_text())
    assert state["format"] == "ppdm-party-releases/1" and len(state["releases"]) == 1
    assert "hierarchies" not in json.dumps(state)  # digests, not parameters or data
    g2 = _guard(tmp_path, table)
    assert _run(g2, _req("s2", k=10)).rule == "publish.max_releases"
    with pytest.raises(PublishStateError, match="in use by another running daemon"):
        _guard(tmp_path, table)
    g2.close()
    (tmp_path / "releases-alice.json").write_text(json.dumps({**state, "party": "bob"}))
    with pytest.raises(PublishStateError, match="belongs to party 'bob'"):
        _guard(tmp_path, table)


def test_a_compute_only_party_and_other_jobs_are_not_limited(tmp_path, table):
    g = _guard(tmp_path, table)
    assert _run(g, _req("s1", compute_only=["alice"])) is None
    assert _run(g, _req("s2", compute_only=["alice"], k=10)) is None
    other = SessionRequest(party="alice", analyst="analyst", session="s3", job="secure_sum", parties=PARTIES, params={})
    assert g.check(other) is None


def _crafted_age(target: str) -> list[list[str]]:
    """The attack: level 1 keeps one age and maps every other to '*' — a node's bit then says whether
    fewer than k people have that age, and a release at that node shows their rows nearly ungeneralized."""
    return [[a, a if a == target else "*", "*"] for a, *_ in _rows("age")]


def test_pinned_hierarchies_refuse_a_crafted_one_and_accept_the_same_rows_in_any_order(tmp_path, table):
    g = _guard(tmp_path, table, hierarchies=str(DATA))  # ARX's adult_hierarchy_<column>.csv files
    crafted = _params()["hierarchies"] | {"age": _crafted_age("39")}
    r = g.check(_req("s1", hierarchies=crafted))
    assert r is not None and r.rule == "publish.hierarchies"
    assert r.reason == "the hierarchy of 'age' differs from the one this party pinned in [publish] hierarchies"
    assert "39" not in r.reason
    reordered = _params()["hierarchies"] | {"age": list(reversed(_rows("age")))}
    assert _run(g, _req("s2", hierarchies=reordered)) is None


def test_pinned_hierarchies_refuse_an_unpinned_quasi_identifier(tmp_path, table):
    d = tmp_path / "pins"
    d.mkdir()
    (d / "age.csv").write_bytes((DATA / "adult_hierarchy_age.csv").read_bytes())
    g = _guard(tmp_path, table, hierarchies=str(d))
    r = g.check(_req("s1"))
    assert r.rule == "publish.hierarchies" and "none for 'sex'" in r.reason
    assert _run(g, _req("s2", qi=["age"], hierarchies={"age": _rows("age")})) is None


def test_a_refused_session_leaves_no_count(tmp_path, table):
    g = _guard(tmp_path, table, hierarchies=str(DATA))
    assert g.check(_req("s1", hierarchies={"age": _crafted_age("39"), "sex": _rows("sex")})) is not None
    assert _run(g, _req("s2")) is None and g.counted("table") == 1


def test_the_digest_covers_parameters_and_parties_in_any_order():
    a = _req("s1")
    assert release_digest(a) == release_digest(_req("s2", parties=tuple(reversed(PARTIES))))
    assert release_digest(a) != release_digest(_req("s1", max_suppression=0.02))


@pytest.mark.parametrize(
    "table, message",
    [
        ({"max_releases": 0}, "publish.max_releases must be a positive integer"),
        ({"max_releases": True}, "publish.max_releases must be a positive integer"),
        ({"hierarchies": 3}, "publish.hierarchies must be a directory or a table"),
        ({"hierarchies": "nowhere"}, "is not a directory"),
        ({"limit": 1}, "unknown key publish.limit"),
    ],
)
def test_bad_publish_tables_are_one_line(tmp_path, table, message):
    doc = {"party": {"name": "alice", "listen": "127.0.0.1:1", "cert": "a.pem", "key": "a.key", "ca": "ca.pem"}}
    with pytest.raises(ConfigError, match=message) as ei:
        parse_config({**doc, "publish": table}, tmp_path)
    assert "\n" not in str(ei.value)
