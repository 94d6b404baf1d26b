"""The daemons' per-analyst privacy budgets: the guard refuses exactly when ε is spent, survives a restart,
gives back what a session did not release, and refuses ε where a job cannot honour it — one line each.

No daemons here (the guard is driven as the service drives it); the end-to-end runs are in
tests/test_dp_daemons.py.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import parties.jobs.mining  # registers the DP specs of the jobs
import parties.jobs.mpc_bench  # noqa: F401
from parties.config import ConfigError, parse_config
from parties.guards import dp_budget
from parties.guards.dp_budget import BudgetGuard, DPBudgetError, parse_dp
from parties.guards.policy import SessionRequest

PARTIES = ("alice", "bob", "carol")
_n = iter(range(10**6))


def req(eps=None, job="secure_sum", analyst="analyst", params=None, private_data=True, session=None):
    p = dict(params or {})
    if eps is not None:
        p["epsilon"] = eps
    return SessionRequest(
        party="alice",
        analyst=analyst,
        session=session or f"s{next(_n)}",
        job=job,
        parties=PARTIES,
        params=p,
        private_data=private_data,
    )


def guard(tmp_path, **dp):
    cfg = parse_dp({"total_epsilon": 1, "budget_dir": str(tmp_path / "b"), **dp}, tmp_path, ["analyst", "other"])
    return BudgetGuard(cfg, "alice")


def admit(g, r, release=None):
    """Admit ``r`` through the guard, run a job that releases ``release`` (default: all), end it."""
    refusal = g.check(r)
    if refusal is None:
        c = dp_budget.begin("alice", f"{r.analyst}/{r.session}", r.params["epsilon"])
        c.release(Fraction(str(r.params["epsilon"])) if release is None else release)
        g.finished(r, {}, None)
    return refusal


def test_refuses_exactly_when_spent_and_survives_restart(tmp_path):
    g = guard(tmp_path)
    for _ in range(3):
        assert admit(g, req("0.3")) is None  # 0.9 spent, exactly (rationals, not floats)
    r = admit(g, req("0.2"))
    assert r is not None and r.rule == "dp.budget"
    assert r.reason == (
        "privacy budget of analyst 'analyst' for data 'vector' is spent: this session needs epsilon 0.2, 0.1 of 1 is left"
    )
    assert admit(g, req("0.1")) is None  # the last 0.1 exactly reaches the total
    g2 = guard(tmp_path)  # a restarted daemon reads the same ledger
    r = g2.check(req("1/1000000"))
    assert r is not None and "is spent" in r.reason
    ledger = json.loads((tmp_path / "b" / "analyst.vector.json").read_text())
    assert [q["epsilon"] for q in ledger["queries"]] == ["0.3", "0.3", "0.3", "0.1"]


def test_budgets_are_per_analyst_and_per_data_key(tmp_path):
    g = guard(tmp_path, analyst={"other": {"total_epsilon": "0.5"}})
    assert admit(g, req("1")) is None
    assert g.check(req("0.5")) is not None  # analyst's 'vector' budget is spent
    assert admit(g, req("1", params={"key": "ages"})) is None  # another data key has its own
    assert admit(g, req("0.5", analyst="other")) is None  # another analyst has its own (0.5 here)
    assert g.check(req("0.1", analyst="other")).rule == "dp.budget"
    gp = guard(tmp_path, scope="party", budget_dir=str(tmp_path / "p"))
    assert admit(gp, req("0.6")) is None
    r = gp.check(req("0.6", params={"key": "ages"}))  # one budget over all keys
    assert r is not None and "for data" not in r.reason and "0.4 of 1 is left" in r.reason


def test_unreleased_epsilon_is_given_back(tmp_path):
    g = guard(tmp_path)
    r = req("0.8")
    assert g.check(r) is None  # charged at admission: nothing else fits meanwhile
    assert g.check(req("0.3")).rule == "dp.budget"
    c = dp_budget.begin("alice", f"analyst/{r.session}", "0.8")
    c.release(Fraction(1, 4))
    with pytest.raises(DPBudgetError):
        c.release(Fraction(3, 5))  # beyond the charge: the job must refuse
    g.finished(r, None, "peer 'bob' aborted")
    assert admit(g, req("0.75")) is None  # 0.25 was kept, 0.55 returned
    assert g.check(req("1/100")).rule == "dp.budget"
    # a session refused elsewhere (its job never started) returns everything when it ends
    g2 = guard(tmp_path, budget_dir=str(tmp_path / "c"))
    r = req("1")
    assert g2.check(r) is None
    g2.finished(r, None, "refused by 'bob': policy requires at least 3 parties")
    assert admit(g2, req("1")) is None


def test_a_charge_whose_job_never_starts_is_returned(tmp_path, monkeypatch):
    g = guard(tmp_path)
    assert g.check(req("1")) is None  # admitted here, then refused by a later guard: no finished()
    assert g.check(req("0.5")).rule == "dp.budget"
    monkeypatch.setattr(dp_budget, "ADMIT_GRACE", 0.0)
    assert g.check(req("0.5")) is None  # the stale charge was swept first


def test_a_job_cannot_release_without_a_charge():
    with pytest.raises(DPBudgetError, match="no privacy budget was charged"):
        dp_budget.begin("alice", "analyst/never-admitted", "0.1")


@pytest.mark.parametrize(
    "eps, job, params, rule, text",
    [
        ("-1", "secure_sum", {}, "dp.epsilon", "epsilon must be positive, got -1"),
        ("abc", "secure_sum", {}, "dp.epsilon", "epsilon must be a positive number, got 'abc'"),
        (True, "secure_sum", {}, "dp.epsilon", "epsilon must be a positive number"),
        ("1", "ping", {}, "dp.job", "ping cannot run with epsilon: it adds no differentially private noise"),
        (
            "1",
            "mine.vertical",
            {},
            "dp.job",
            "mine.vertical cannot run with epsilon: no party sees a whole transaction",
        ),
        ("1", "mine.horizontal", {"max_len": 3, "candidates": "union"}, "dp.params", "not differentially private"),
        ("1", "mine.horizontal", {"max_len": 3, "candidates": "auto"}, "dp.params", "not differentially private"),
        ("1", "mine.horizontal", {}, "dp.params", "epsilon needs max_len"),
        ("1", "mine.horizontal", {"max_len": 2, "max_contributions": 0}, "dp.params", "max_contributions must be"),
        (
            "1",
            "mine.horizontal",
            {"max_len": 2, "colluders": 3},
            "dp.params",
            "colluders must be an integer from 0 to 2",
        ),
        (
            "1",
            "mine.horizontal",
            {"max_len": 2, "min_confidence": "0.5", "reveal_counts": False},
            "dp.params",
            "rules need the noisy counts",
        ),
        ("1", "secure_sum", {"sensitivity": 0}, "dp.params", "sensitivity must be a positive integer"),
        ("1", "secure_sum", {"clamp": [5, 1]}, "dp.params", "clamp must be [lo, hi]"),
    ],
)
def test_bad_dp_requests_are_one_line_refusals_that_spend_nothing(tmp_path, eps, job, params, rule, text):
    g = guard(tmp_path)
    r = g.check(req(eps, job=job, params=params))
    assert r is not None and r.rule == rule and text in r.reason and "\n" not in r.reason
    assert not (tmp_path / "b").exists() or all(
        not json.loads(f.read_text())["queries"] for f in (tmp_path / "b").glob("*.json")
    )


def test_sensitivity_floor_of_the_party(tmp_path):
    g = guard(tmp_path, sensitivity={"vector": 10})
    r = g.check(req("0.1"))
    assert r.rule == "dp.params" and "sensitivity must be at least 10 for data 'vector'" in r.reason
    assert admit(g, req("0.1", params={"sensitivity": 10})) is None


def test_require_and_no_budget(tmp_path):
    g = guard(tmp_path)
    r = g.check(req(None, job="mine.vertical"))
    assert (
        r.rule == "dp.require"
        and "requires epsilon" in r.reason
        and "mine.vertical cannot run with epsilon" in r.reason
    )
    assert g.check(req(None, job="ping", private_data=False)) is None  # diagnostics on no data
    assert guard(tmp_path, require=False).check(req(None)) is None
    none = BudgetGuard(None, "alice")  # no [dp]: exact sessions as before, epsilon refused
    assert none.check(req(None)) is None
    r = none.check(req("0.1"))
    assert (
        r.rule == "dp.budget" and r.reason == "alice has no privacy budget for analyst 'analyst' ([dp] total_epsilon)"
    )


def test_a_changed_total_is_refused_not_reset(tmp_path):
    assert admit(guard(tmp_path), req("0.5")) is None
    r = guard(tmp_path, total_epsilon=5).check(req("0.5"))
    assert r.rule == "dp.ledger" and "\n" not in r.reason


@pytest.mark.parametrize(
    "table, text",
    [
        ({"total_epsilon": -1}, "dp.total_epsilon must be positive"),
        ({"total_epsilon": "x"}, "dp.total_epsilon must be a positive number"),
        ({"scope": "world"}, "dp.scope must be 'key' or 'party'"),
        ({"require": "yes"}, "dp.require must be true or false"),
        ({"bogus": 1}, "unknown key dp.bogus"),
        ({"analyst": {"eve": {"total_epsilon": 1}}}, "dp.analyst.eve: 'eve' is not one of party.analysts"),
        ({"sensitivity": {"vector": 0}}, "dp.sensitivity.vector must be a positive integer"),
    ],
)
def test_bad_dp_config_is_one_line(tmp_path, table, text):
    doc = {
        "party": {"name": "alice", "listen": "127.0.0.1:1", "cert": "a.pem", "key": "a.key", "ca": "ca.pem"},
        "dp": table,
    }
    with pytest.raises(ConfigError) as e:
        parse_config(doc, tmp_path, "party.toml")
    assert text in str(e.value) and str(e.value).startswith("party.toml: ")
