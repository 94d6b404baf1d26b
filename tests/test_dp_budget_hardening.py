"""Privacy budgets against a determined analyst (issue 16, low): bad epsilons, symlinked ledgers and locks,
two [data] keys naming one file, and one budget shared by all analysts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import parties.jobs.mining
import parties.jobs.mpc_bench  # noqa: F401
from anonymize.dp import BudgetAccountant
from anonymize.errors import AnonymizeError
from parties.guards import dp_budget
from parties.guards.dp_budget import BudgetGuard, parse_dp
from parties.guards.policy import SessionRequest

ROOT = Path(__file__).resolve().parents[1]
PARTIES = ("alice", "bob", "carol")


def request(analyst="analyst", session="s1", key="vector", eps="0.4"):
    params = {"epsilon": eps, "key": key}
    return SessionRequest("alice", analyst, session, "secure_sum", PARTIES, params)


def admit_and_spend(g: BudgetGuard, r: SessionRequest):
    refusal = g.check(r)
    if refusal is None:
        c = dp_budget.begin("alice", f"{r.analyst}/{r.session}", r.params["epsilon"])
        c.release(r.params["epsilon"])
        g.finished(r, {}, None)
    return refusal


@pytest.mark.parametrize(("flag", "value"), [("--epsilon", "1e-400"), ("--total-epsilon", "1e999")])
def test_extreme_epsilons_are_one_line_and_create_no_budget(tmp_path, flag, value):
    table = tmp_path / "t.csv"
    table.write_text("x\n1\n2\n3\n")
    budget = tmp_path / "b.json"
    args = {"--epsilon": "0.5", "--total-epsilon": "1", flag: value}
    cmd = [
        sys.executable,
        "-m",
        "parties.cli",
        "dp",
        str(table),
        "--query",
        '{"agg": "count"}',
        "--budget",
        str(budget),
    ]
    cmd += [x for kv in args.items() for x in kv]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "must be between" in r.stderr, r.stderr
    assert not budget.exists()


def test_a_ledger_reached_through_a_symlink_is_the_same_ledger(tmp_path):
    real = tmp_path / "real.json"
    BudgetAccountant.create(real, 1)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    BudgetAccountant(real).spend("0.6", lambda: None)
    with pytest.raises(AnonymizeError):  # 0.6 + 0.6 > 1 whichever name is used
        BudgetAccountant(link).spend("0.6", lambda: None)
    assert not link.with_name("link.json.lock").exists()
    assert [q["epsilon"] for q in json.loads(real.read_text())["queries"]] == ["0.6"]


def test_a_symlinked_lock_is_refused(tmp_path):
    acc = BudgetAccountant.create(tmp_path / "b.json", 1)
    target = tmp_path / "elsewhere"
    target.write_text("")
    os.unlink(acc.lock_path)
    acc.lock_path.symlink_to(target)
    with pytest.raises(AnonymizeError, match="budget lock"):
        acc.spend("0.1", lambda: None)


def test_two_data_keys_naming_one_file_share_one_ledger(tmp_path):
    f = tmp_path / "v.npy"
    f.write_bytes(b"")
    cfg = parse_dp({"total_epsilon": 1, "budget_dir": str(tmp_path / "b")}, tmp_path, ["analyst"])
    g = BudgetGuard(cfg, "alice", {"vector": str(f), "copy": str(f)})
    assert admit_and_spend(g, request(session="s1", key="vector", eps="0.6")) is None
    refusal = admit_and_spend(g, request(session="s2", key="copy", eps="0.6"))
    assert refusal is not None and "is spent" in refusal.reason
    assert len(list((tmp_path / "b").glob("*.json"))) == 1


def test_a_shared_budget_is_spent_by_all_analysts_together(tmp_path):
    cfg = parse_dp({"total_epsilon": 1, "budget_dir": str(tmp_path / "b"), "shared": True}, tmp_path, ["a1", "a2"])
    g = BudgetGuard(cfg, "alice")
    assert admit_and_spend(g, request(analyst="a1", session="s1", eps="0.6")) is None
    refusal = admit_and_spend(g, request(analyst="a2", session="s2", eps="0.6"))
    assert refusal is not None and "is spent" in refusal.reason
    with pytest.raises(ValueError, match="drop the"):
        parse_dp({"total_epsilon": 1, "shared": True, "analyst": {"a1": {"total_epsilon": 1}}}, tmp_path, ["a1"])
