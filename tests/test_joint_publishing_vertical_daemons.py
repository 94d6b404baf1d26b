"""Vertical joint publishing between real daemons (mTLS on loopback): two data parties holding different
columns of the same customers (keyed, partly overlapping, aligned by Private-ID or PSI) and a
compute-only helper. The release equals the pooled search's on the inner join and pycanon agrees; a
party's policy floor refuses; a killed party aborts everywhere with one line and no release."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from joint_helpers import kill_mid_job

from anonymize.publish import DistinctLDiversity, KAnonymity, Schema
from anonymize.publish.anonymizer import anonymize_table
from anonymize.publish.io import read_hierarchies, read_table
from parties.analyst.client import PartyError
from parties.analyst.publishing import JointPublishing, assemble

pytestmark = pytest.mark.daemons

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"
QIS = ["age", "sex", "race", "marital-status", "education"]
SENS = "salary-class"
NAMES = ["bank", "insurer", "helper"]
COLUMNS = {"bank": ["age", "race", "education"], "insurer": ["sex", "marital-status", SENS]}


def _params(**kw) -> JointPublishing:
    hs = read_hierarchies(DATA, columns=set(QIS) | {SENS})
    base = dict(
        qi=tuple(QIS), hierarchies={c: hs[c] for c in QIS}, sensitive=SENS, k=5, l=2, max_suppression=0.05,
        split="vertical", compute_only=("helper",), key="customer", metric="ncp",
    )  # fmt: skip
    base.update(kw)
    return JointPublishing(**base)


def _keyed(tmp_path: Path, seed: int = 1):
    """Each data party's table: its columns of the customers it has (about 90 % each, shuffled)."""
    df = read_table(DATA / "adult_subset.csv")[QIS + [SENS]]
    df.insert(0, "customer", [f"c{i:05d}" for i in range(len(df))])
    rng = np.random.default_rng(seed)
    data, held = {}, {}
    for p, cols in COLUMNS.items():
        mask = rng.random(len(df)) < 0.9
        part = df.loc[mask, ["customer", *cols]].sample(frac=1.0, random_state=int(rng.integers(1 << 30)))
        f = tmp_path / f"{p}.csv"
        part.to_csv(f, index=False, sep=";")
        data[p] = {"table": str(f)}
        held[p] = set(part["customer"])
    inner = df[df["customer"].isin(held["bank"] & held["insurer"])].reset_index(drop=True)
    return data, inner


def _pooled(inner, **kw):
    hs = read_hierarchies(DATA, columns=set(QIS) | {SENS})
    return anonymize_table(
        inner[QIS + [SENS]], Schema(QIS, [SENS]), hs, algorithm="flash",
        models=[KAnonymity(kw.get("k", 5)), DistinctLDiversity(2)], max_suppression=0.05, metric="ncp", n_queries=0,
    )  # fmt: skip


def _multiset(df, cols):
    return sorted(map(tuple, df[cols].astype(str).itertuples(index=False, name=None)))


def test_keyed_vertical_release_equals_the_pooled_inner_join_and_pycanon_agrees(make_cluster, tmp_path):
    from pycanon import anonymity

    data, inner = _keyed(tmp_path)
    # two releases of the same records (two alignments): allowed by [publish] max_releases here
    c = make_cluster(NAMES, data=data, policy={"min_parties": 3}, publish={"max_releases": 2})
    pooled = _pooled(inner)
    for align in ("private-id", "psi"):
        params = _params(align=align)
        out = c.run_job("publish.vertical", params.to_params(), timeout=300)
        res = assemble(params, out, 0.0)
        assert res.report["metrics"]["rows"] == len(inner)
        assert res.levels == pooled.levels
        assert _multiset(res.release, QIS + [SENS]) == _multiset(pooled.df, QIS + [SENS])
        assert res.report["metrics"]["ncp"] == pytest.approx(pooled.metrics["ncp"]["ncp"], abs=1e-9)
        rel = res.release.astype(str)
        assert anonymity.k_anonymity(rel, QIS) >= 5 and anonymity.l_diversity(rel, QIS, [SENS]) >= 2
        assert res.report["achieved"] == {
            "k": anonymity.k_anonymity(rel, QIS),
            "l": anonymity.l_diversity(rel, QIS, [SENS]),
        }
        proto = res.report["protocol"]
        assert proto["mode"] == "vertical" and proto["helper"] == "helper"
        assert proto["columns"] == {"age": "bank", "race": "bank", "education": "bank", "sex": "insurer",
                                    "marital-status": "insurer", SENS: "insurer"}  # fmt: skip
        revealed = " ".join(proto["revealed"])
        assert ("Private-ID" in revealed) == (align == "private-id") and "helper: for every node" in revealed
        # the helper's reply carries ciphertexts only: no label or value of the release in the clear
        helper_reply = json.dumps(out["helper"])
        for value in ("Married-civ-spouse", "Bachelors", "White", "Female", "<=50K"):
            assert value not in helper_reply


def test_cli_local_vertical_split_equals_the_pooled_release(tmp_path):
    from pycanon import anonymity

    out, rep = tmp_path / "joint.csv", tmp_path / "joint.json"
    src = tmp_path / "in.csv"
    df = read_table(DATA / "adult_subset.csv")[QIS + [SENS]]
    df.to_csv(src, index=False, sep=";")
    r = subprocess.run(
        [sys.executable, "-m", "parties.cli", "anonymize", str(src), "-o", str(out), "--report", str(rep),
         "--local", "2", "--split", "vertical", "--qi", ",".join(QIS), "--sensitive", SENS,
         "--hierarchies", str(DATA), "--k", "5", "--l", "2", "--max-suppression", "0.05", "--algorithm", "flash",
         "--quiet"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads(rep.read_text())
    pooled = _pooled(df)
    assert report["levels"] == pooled.levels
    joint = read_table(out).astype(str)
    assert _multiset(joint, QIS + [SENS]) == _multiset(pooled.df.astype(str), QIS + [SENS])
    assert anonymity.k_anonymity(joint, QIS) >= 5
    # QIs in turn over 2 parties, the sensitive column with the last, and the helper --local adds
    assert report["protocol"]["columns"] == {"age": "p0", "sex": "p1", "race": "p0", "marital-status": "p1",
                                             "education": "p0", SENS: "p1"}  # fmt: skip
    assert report["protocol"]["parties"] == ["p0", "p1", "helper"]


def test_cli_refuses_vertical_flags_in_one_line(tmp_path, capsys):
    from parties.cli import main

    src = tmp_path / "in.csv"
    read_table(DATA / "adult_subset.csv")[QIS + [SENS]].head(50).to_csv(src, index=False)
    base = ["anonymize", "-o", str(tmp_path / "o.csv"), "--qi", ",".join(QIS), "--hierarchies", str(DATA),
            "--k", "5", "--algorithm", "flash"]  # fmt: skip
    cases = [
        ([str(src), "--local", "2", "--split", "horizontal", "--key", "age"], "--key belongs to --split vertical"),
        ([str(src), "--local", "2", "--split", "vertical", "--align", "psi"], "--align needs --key"),
        (["--parties", "a.toml", "--split", "vertical"], "exactly one --compute-only"),
        ([str(src), "--local", "2", "--split", "vertical", "--owner", "age"], "--owner names daemons of --parties"),
    ]
    for extra, msg in cases:
        try:
            code = main([*base, *extra])
        except SystemExit as e:
            code = e.code
        err = capsys.readouterr()[1]
        assert code == 2 and msg in err, (code, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "o.csv").exists()


def test_a_party_whose_floor_is_k10_refuses_a_k5_vertical_job(make_cluster, tmp_path):
    data, inner = _keyed(tmp_path, seed=2)
    policy = {"insurer": {"job": {"publish.vertical": {"floor": {"k": 10}}}}}
    c = make_cluster(NAMES, data=data, policy=policy)
    with pytest.raises(PartyError) as ei:
        c.run_job("publish.vertical", _params(k=5).to_params(), timeout=60)
    assert ei.value.party == "insurer" and ei.value.kind == "refused"
    assert "k >= 10" in str(ei.value)
    # sessions a party cannot serve end on every party with one line (before any release is counted)
    hs = read_hierarchies(DATA, columns={"workclass"})
    nobody = _params(k=10, qi=(*QIS, "workclass"), hierarchies={**_params().hierarchies, **hs})
    for params, msg in (
        (nobody, "no data party holds column 'workclass'"),
        (_params(k=10, key="account"), "has no column 'account'"),
    ):
        with pytest.raises(PartyError) as ei:
            c.run_job("publish.vertical", params.to_params(), timeout=60)
        assert msg in str(ei.value) and "\n" not in str(ei.value), str(ei.value)
    out = c.run_job("publish.vertical", _params(k=10).to_params(), timeout=300)
    res = assemble(_params(k=10), out, 0.0)
    assert res.report["metrics"]["min_class_size"] >= 10


def test_a_party_killed_mid_search_aborts_the_vertical_job_everywhere(make_cluster, tmp_path):
    data, _ = _keyed(tmp_path, seed=3)
    c = make_cluster(NAMES, data=data, policy={"min_parties": 3}, link_shape=(60.0, None))

    err, took = kill_mid_job(
        c, "publish.vertical", _params(metric="dm").to_params(), watch="helper", marker="publish: level", victim="bank"
    )
    assert err.party == "bank" and "unreachable" in str(err), str(err)
    assert "\n" not in str(err)
    assert took < 60
    c.restart("bank")
    assert set(c.run_job("ping", timeout=20)) == set(NAMES)


def test_vertical_releases_are_guarded_like_horizontal_ones(make_cluster, tmp_path):
    """[publish] holds for publish.vertical: a crafted hierarchy of the other party's column is refused
    by the party that pinned the hierarchies, and a second, different release of its columns is
    refused after the first (two releases at two nodes of the same records could be differenced)."""
    data, _ = _keyed(tmp_path, seed=4)
    c = make_cluster(NAMES, data=data, policy={"min_parties": 3}, publish={"bank": {"hierarchies": str(DATA)}})
    rows = read_hierarchies(DATA, columns={"sex"})["sex"].to_rows()
    crafted = _params().to_params()
    crafted["hierarchies"] = dict(crafted["hierarchies"], sex=[[r[0], r[0] if r[0] == "Female" else "*"] for r in rows])
    with pytest.raises(PartyError) as ei:
        c.run_job("publish.vertical", crafted, timeout=60)
    assert ei.value.party == "bank" and ei.value.kind == "refused"
    assert "the hierarchy of 'sex' differs from the one this party pinned" in str(ei.value)
    first = assemble(_params(), c.run_job("publish.vertical", _params().to_params(), timeout=120), 0.0)
    assert first.report["metrics"]["min_class_size"] >= 5
    with pytest.raises(PartyError) as ei:
        c.run_job("publish.vertical", _params(k=10).to_params(), timeout=60)
    assert ei.value.kind == "refused" and "[publish] max_releases" in str(ei.value)
    assert ei.value.party in ("bank", "insurer")


def test_vertical_release_from_a_postgresql_table_and_a_duckdb_query(make_cluster, tmp_path, pg_server):
    """The parties' data where it lives: the bank's columns in PostgreSQL ([data.table] postgresql +
    query), the insurer's in a DuckDB database; the release equals the pooled search's on the inner
    join."""
    import duckdb

    files, inner = _keyed(tmp_path, seed=5)
    bank = read_table(files["bank"]["table"])
    insurer = read_table(files["insurer"]["table"])
    pg_server.execute(
        "DROP TABLE IF EXISTS bank_people",
        "CREATE TABLE bank_people (customer text, age text, race text, education text)",
    )
    rows = ", ".join(
        "(" + ", ".join("'" + str(v).replace("'", "''") + "'" for v in r) + ")"
        for r in bank[["customer", "age", "race", "education"]].itertuples(index=False, name=None)
    )
    pg_server.execute(f"INSERT INTO bank_people VALUES {rows}")
    db = tmp_path / "insurer.duckdb"
    con = duckdb.connect(str(db))
    con.register("ins", insurer)
    con.execute("CREATE TABLE people AS SELECT * FROM ins")
    con.close()
    pw = pg_server.password_file(tmp_path / "pg.pass")
    data = {
        "bank": {
            "table": {"postgresql": pg_server.url, "password_file": str(pw), "query": "SELECT * FROM bank_people"}
        },
        "insurer": {"table": {"duckdb": str(db), "query": "SELECT * FROM people"}},
    }
    c = make_cluster(NAMES, data=data, policy={"min_parties": 3})
    params = _params(align="psi")
    res = assemble(params, c.run_job("publish.vertical", params.to_params(), timeout=300), 0.0)
    pooled = _pooled(inner)
    assert res.levels == pooled.levels
    assert _multiset(res.release, QIS + [SENS]) == _multiset(pooled.df, QIS + [SENS])
