"""``ppdm audit check`` end to end (JSON shape, online/offline, the adult data), and bad input.

Oracles: a brute-force rational rank test (in tests/test_audit_sum.py) on the selected row
sets, and a subprocess run as a user types it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonymize.audit import TableAuditor
from parties.cli import main
from tests.test_audit_sum import pinned_by_rank

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "anonymize" / "data" / "adult_subset.csv"

# ages are public here (--public age): predicates on a numeric column are otherwise denied
TABLE = "name,dept,age,salary\nann,a,30,100\nbob,a,40,200\ncid,b,50,300\ndan,b,35,150\neve,b,41,120\n"
QUERIES = [
    {"agg": "sum", "column": "salary", "where": [["age", ">=", 30]]},  # everyone
    {"agg": "sum", "column": "salary", "where": [["dept", "==", "b"]]},  # cid, dan, eve
    {"agg": "mean", "column": "salary", "where": [["dept", "==", "a"]]},  # ann, bob: implied by the two above
    {"agg": "count", "where": [["age", ">", 30]]},
    {"agg": "sum", "column": "salary", "where": [["age", ">", 36]]},  # bob, cid, eve
    {"agg": "sum", "column": "salary", "where": [["dept", "==", "b"], ["age", "<", 45]]},  # dan, eve: cid = b - this
    {"agg": "sum", "column": "age", "where": [["dept", "==", "a"]]},  # another column, another auditor
]


def run(capsys, *argv):
    code = main(["audit", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path):
    t = tmp_path / "t.csv"
    t.write_text(TABLE)
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n")
    return t, log


def test_check_json_shape_and_decisions(capsys, files):
    t, log = files
    code, out, err = run(capsys, "check", log, "--table", t, "--auditor", "sum", "--json", "--public", "age")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert [set(q) >= {"index", "decision", "discloses"} for q in doc["queries"]] == [True] * 7
    assert [q["index"] for q in doc["queries"]] == list(range(7))
    assert [q["decision"] for q in doc["queries"]] == ["answer"] * 5 + ["deny", "answer"]
    assert doc["queries"][5]["discloses"] == [2]  # cid's row, 0-based in table order
    assert all(q["discloses"] == [] for q in doc["queries"] if q["decision"] == "answer")
    assert doc["disclosed"] == [] and doc["rows"] == 5 and doc["auditor"] == "sum"


def test_check_offline_reports_what_was_disclosed(capsys, files):
    t, log = files
    code, out, _ = run(
        capsys, "check", log, "--table", t, "--auditor", "simulatable-sum", "--json", "--offline", "--public", "age"
    )
    doc = json.loads(out)
    assert code == 0 and doc["mode"] == "offline"
    assert [q["discloses"] for q in doc["queries"]] == [[], [], [], [], [], [2], []]
    assert doc["disclosed"] == [2]
    # the same answer by an oracle we did not write, on the row sets the queries select
    df = pd.read_csv(t)
    ta = TableAuditor(df, "sum", public=["age"])
    rows = [ta.parse(q).rows(df).astype(int).tolist() for q in QUERIES if q.get("column") == "salary"]
    assert pinned_by_rank(len(df), rows) == {2}


def test_check_human_table(capsys, files):
    t, log = files
    code, out, _ = run(capsys, "check", log, "--table", t, "--auditor", "sum", "--public", "age")
    assert code == 0
    assert "deny" in out and "rows 2" in out and "6 answered, 1 denied" in out


def test_check_max_auditors_on_adult_agree_with_a_recount(capsys, tmp_path):
    rng = np.random.default_rng(4)
    df = pd.read_csv(ADULT, sep=";")
    cats = ["sex", "race", "education", "workclass", "salary-class"]
    qs = []
    for _ in range(150):
        where = [[c, "==", str(rng.choice(df[c].unique()))] for c in rng.choice(cats, size=2, replace=False)]
        qs.append({"agg": "max", "column": "age", "where": where})
    log = tmp_path / "q.jsonl"
    log.write_text("\n".join(json.dumps(q) for q in qs))
    docs = {}
    for aud in ("max", "simulatable-max"):
        code, out, _ = run(capsys, "check", log, "--table", ADULT, "--auditor", aud, "--json")
        assert code == 0
        docs[aud] = json.loads(out)
    plain = [q["decision"] == "deny" for q in docs["max"]["queries"]]
    assert sum(plain) >= 1 and sum(q["decision"] == "deny" for q in docs["simulatable-max"]["queries"]) >= 1
    # recount: no query answered by the plain auditor leaves an answered query with one extreme record
    answered = [q for q, d in zip(qs, plain) if not d]
    mu = np.full(len(df), np.inf)
    sets = []
    for q in answered:
        m = TableAuditor(df, "max").parse(q).rows(df)
        if not m.any():
            continue  # max over no row: answered with null, tells nothing
        v = df.loc[m, "age"].max()
        mu[m] = np.minimum(mu[m], v)
        sets.append((m, v))
    assert min(int(((mu == v) & m).sum()) for m, v in sets) >= 2


def test_check_as_a_subprocess(files):
    t, log = files
    r = subprocess.run(
        [sys.executable, "-m", "parties.cli", "audit", "check", str(log), "--table", str(t), "--auditor", "minmax"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "the minmax auditor audits max/min queries; 'sum' queries are not answered here" in r.stderr


@pytest.mark.parametrize(
    "lines, args, fragment",
    [
        (['{"agg": "sum", "column": "salary"}', '{"agg": sum}'], [], "log.jsonl line 2: not valid JSON"),
        (['{"agg": "sum", "column": "wage"}'], [], "log.jsonl line 1: unknown column 'wage'"),
        (["", '{"agg": "sum", "column": "salary", "where": [["dept", ">", 1]]}'], [], "line 2: column 'dept' is text"),
        (['{"agg": "median", "column": "salary"}'], [], "line 1: unknown or missing 'agg'"),
        (['{"agg": "sum", "column": "name"}'], [], "line 1: column 'name' is not numeric"),
        (['{"agg": "sum", "column": "salary"}'], ["--auditor", "median"], "unknown auditor 'median'"),
        (['{"agg": "sum", "column": "salary"}'], ["--table", "missing.csv"], "input file not found"),
    ],
)
def test_bad_input_is_one_clear_line(capsys, tmp_path, files, lines, args, fragment):
    t, _ = files
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n")
    argv = ["check", log, "--table", t, "--auditor", "sum"]
    for k in range(0, len(args), 2):  # override
        i = argv.index(args[k])
        argv[i + 1] = tmp_path / args[k + 1] if args[k] == "--table" else args[k + 1]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("ppdm: error: ") and err.count("\n") == 1, err
    assert fragment in err


def test_missing_log_is_one_line(capsys, files, tmp_path):
    t, _ = files
    code, _, err = run(capsys, "check", tmp_path / "none.jsonl", "--table", t, "--auditor", "sum")
    assert code == 2 and err == f"ppdm: error: query log not found: {tmp_path / 'none.jsonl'}\n"
