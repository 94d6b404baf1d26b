"""Joint Mondrian between real daemons (mTLS on loopback): the CLI's release equals a local ``ppdm
anonymize --algorithm mondrian`` of the pooled table and pycanon agrees; a party's floor refuses; a
party killed mid-run aborts the job everywhere with one line; flags joint Mondrian does not take are
refused in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from joint_helpers import kill_mid_job

from anonymize.publish.io import read_hierarchies, read_table
from parties.analyst.client import PartyError
from parties.analyst.publishing import JointPublishing, assemble, split_rows

pytestmark = pytest.mark.daemons

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
QIS = ["age", "sex", "race", "marital-status", "education"]
SENS = "salary-class"


def _params(**kw) -> JointPublishing:
    hs = read_hierarchies(DATA, columns=set(QIS) | {SENS})
    base = dict(
        qi=tuple(QIS),
        hierarchies={c: hs[c] for c in QIS},
        sensitive=SENS,
        sensitive_values=tuple(str(v) for v in hs[SENS].leaves),
        k=5,
        l=2,
        algorithm="mondrian",
    )
    base.update(kw)
    return JointPublishing(**base)


def _cluster_data(tmp_path: Path, n: int) -> dict:
    df = read_table(DATA / "adult_subset.csv")
    data = {}
    for i, part in enumerate(split_rows(df[QIS + [SENS]], n)):
        f = tmp_path / f"part{i}.csv"
        part.to_csv(f, index=False, sep=";")
        data[f"p{i}"] = {"table": str(f)}
    return data


def _multiset(df, cols):
    return sorted(map(tuple, df[cols].astype(str).itertuples(index=False, name=None)))


def _ppdm(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "parties.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def test_cli_joint_mondrian_equals_the_local_mondrian_and_pycanon_agrees(tmp_path):
    from pycanon import anonymity

    src = tmp_path / "in.csv"
    read_table(DATA / "adult_subset.csv")[QIS + [SENS]].to_csv(src, index=False, sep=";")
    common = ["--qi", ",".join(QIS), "--sensitive", SENS, "--hierarchies", str(DATA), "--k", "4", "--l", "2",
              "--algorithm", "mondrian", "--quiet"]  # fmt: skip
    out, rep = tmp_path / "joint.csv", tmp_path / "joint.json"
    r = _ppdm(
        "anonymize", str(src), "-o", str(out), "--report", str(rep), "--local", "3", "--split", "horizontal", *common
    )
    assert r.returncode == 0, r.stderr[-2000:]
    loc, loc_rep = tmp_path / "local.csv", tmp_path / "local.json"
    r = _ppdm("anonymize", str(src), "-o", str(loc), "--report", str(loc_rep), *common)
    assert r.returncode == 0, r.stderr[-2000:]
    joint, local = read_table(out).astype(str), read_table(loc).astype(str)
    assert _multiset(joint, QIS + [SENS]) == _multiset(local, QIS + [SENS])
    report, local_report = json.loads(rep.read_text()), json.loads(loc_rep.read_text())
    assert report["metrics"]["classes"] == local_report["metrics"]["classes"]["classes"]
    assert report["metrics"]["dm"] == pytest.approx(local_report["metrics"]["dm"])
    assert report["metrics"]["ncp"] == pytest.approx(local_report["metrics"]["ncp"]["ncp"], abs=1e-12)
    assert report["achieved"] == {
        "k": anonymity.k_anonymity(joint, QIS),
        "l": anonymity.l_diversity(joint, QIS, [SENS]),
    }
    assert report["achieved"]["k"] >= 4 and report["achieved"]["l"] >= 2
    assert report["algorithm"].startswith("mondrian")
    revealed = " ".join(report["protocol"]["revealed"])
    assert "its box" in revealed and "no partition's size" in revealed


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--split", "vertical"], "joint Mondrian runs on --split horizontal"),
        (["--split", "horizontal", "--mondrian-mode", "relaxed"], "joint Mondrian cuts strictly"),
    ],
)
def test_flags_joint_mondrian_does_not_take_are_one_line(tmp_path, extra, message):
    out = tmp_path / "out.csv"
    r = _ppdm(
        "anonymize", str(DATA / "adult_subset.csv"), "-o", str(out), "--local", "2", *extra, "--algorithm", "mondrian",
        "--qi", "age,sex", "--sensitive", SENS, "--hierarchies", str(DATA), "--k", "5", timeout=60,
    )  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and message in r.stderr
    assert not out.exists()


def test_a_party_whose_floor_is_k10_refuses_a_k5_mondrian_job(make_cluster, tmp_path):
    policy = {"p1": {"job": {"publish.horizontal": {"floor": {"k": 10}}}}}
    c = make_cluster(3, data=_cluster_data(tmp_path, 3), policy=policy)
    with pytest.raises(PartyError) as ei:
        c.run_job("publish.horizontal", _params(k=5).to_params(), timeout=60)
    assert ei.value.party == "p1" and ei.value.kind == "refused"
    assert "k >= 10" in str(ei.value)
    out = c.run_job("publish.horizontal", _params(k=10).to_params(), timeout=300)
    res = assemble(_params(k=10), out, 0.0)
    assert res.report["metrics"]["min_class_size"] >= 10
    assert res.report["achieved"]["k"] >= 10


def test_a_party_killed_mid_mondrian_aborts_the_job_everywhere(make_cluster, tmp_path):
    c = make_cluster(3, data=_cluster_data(tmp_path, 3), link_shape=(60.0, None))

    err, took = kill_mid_job(
        c, "publish.horizontal", _params().to_params(), watch="p0", marker="mondrian: round", victim="p2"
    )
    assert err.party == "p2" and "unreachable" in str(err), str(err)
    assert "\n" not in str(err)
    assert took < 60
    c.restart("p2")
    assert set(c.run_job("ping", timeout=20)) == {"p0", "p1", "p2"}


def test_a_party_s_release_guard_counts_a_mondrian_release_like_any_other(make_cluster, tmp_path):
    """[publish] guards Mondrian too: a crafted hierarchy is refused; the same Mondrian release again
    is answered (the same rows); a full-domain release of the same rows after it is a second release
    of the data key and is refused — the differencing of two partitions of the same rows."""
    qis = ("age", "sex", "race")
    hs = read_hierarchies(DATA, columns=set(qis))

    def params(**kw) -> JointPublishing:
        base = dict(qi=qis, hierarchies={c: hs[c] for c in qis}, sensitive=None, k=5, algorithm="mondrian")
        return JointPublishing(**{**base, **kw})

    c = make_cluster(3, data=_cluster_data(tmp_path, 3), publish={"hierarchies": str(DATA)})
    rows = hs["race"].to_rows()
    crafted = params().to_params() | {
        "hierarchies": params().to_params()["hierarchies"] | {"race": [[r[0], r[0], "*"] for r in rows]}
    }
    with pytest.raises(PartyError) as ei:
        c.run_job("publish.horizontal", crafted, timeout=60)
    assert ei.value.kind == "refused" and "differs from the one this party pinned" in str(ei.value)
    first = assemble(params(), c.run_job("publish.horizontal", params().to_params(), timeout=120), 0.0)
    again = assemble(params(), c.run_job("publish.horizontal", params().to_params(), timeout=120), 0.0)
    assert _multiset(first.release, list(qis)) == _multiset(again.release, list(qis))
    with pytest.raises(PartyError) as ei:
        c.run_job("publish.horizontal", params(algorithm="flash", max_suppression=0.05).to_params(), timeout=60)
    assert ei.value.kind == "refused" and "[publish] max_releases" in str(ei.value)
