"""The privacy-budget accountant: exact refusal, persistence across processes, no overspending
under concurrency, advanced composition, and ``ppdm dp`` end to end."""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from anonymize.dp import BudgetAccountant, BudgetExceeded, compose
from anonymize.errors import AnonymizeError
from parties.cli import main

ROOT = Path(__file__).resolve().parents[1]
SUBSET = ROOT / "anonymize" / "data" / "adult_subset.csv"


def test_refuses_exactly_when_epsilon_is_spent_and_spends_nothing(tmp_path):
    acc = BudgetAccountant.create(tmp_path / "b.json", "1")
    for i in range(10):  # 10 × 0.1 = 1 exactly (rational arithmetic)
        out, st = acc.spend("0.1", lambda i=i: i)
        assert out == i
    assert st["epsilon_left"] == 0 and st["queries"] == 10
    before = (tmp_path / "b.json").read_bytes()
    ran = []
    with pytest.raises(BudgetExceeded, match="nothing was spent"):
        acc.spend("0.0001", lambda: ran.append(1))
    assert ran == []  # the mechanism never ran
    assert (tmp_path / "b.json").read_bytes() == before


def test_a_failing_mechanism_spends_nothing(tmp_path):
    acc = BudgetAccountant.create(tmp_path / "b.json", "1")

    def fail():
        raise RuntimeError("mechanism crashed")

    with pytest.raises(RuntimeError):
        acc.spend("0.5", fail)
    assert acc.status()["epsilon_spent"] == 0


def _spend_in_new_process(path: str, eps: str) -> str:
    code = (
        "import sys; from anonymize.dp import BudgetAccountant, BudgetExceeded\n"
        f"acc = BudgetAccountant({path!r})\n"
        f"try:\n    acc.spend({eps!r}, lambda: None); print('ok')\n"
        "except BudgetExceeded: print('refused')\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.strip()


def test_budget_survives_a_restart(tmp_path):
    path = tmp_path / "b.json"
    BudgetAccountant.create(path, "1").spend("0.7", lambda: None)
    assert _spend_in_new_process(str(path), "0.3") == "ok"  # a new process reads 0.7 spent
    assert _spend_in_new_process(str(path), "0.01") == "refused"
    doc = json.loads(path.read_text())
    assert [q["epsilon"] for q in doc["queries"]] == ["0.7", "0.3"]


def _race(path, eps, barrier, results):
    acc = BudgetAccountant(path)
    barrier.wait()
    try:
        acc.spend(eps, lambda: None)
        results.put("ok")
    except BudgetExceeded:
        results.put("refused")


def test_two_processes_cannot_overspend(tmp_path):
    """Four processes released at once, twice, each asking 0.3 of a budget of 1: exactly three
    answers may be released in total, and each must be on record (no lost update)."""
    path = str(tmp_path / "b.json")
    BudgetAccountant.create(path, "1")
    ctx = mp.get_context("fork")
    released = 0
    for _ in range(2):
        barrier, results = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(path, "0.3", barrier, results)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        released += [results.get(timeout=5) for _ in procs].count("ok")
    st = BudgetAccountant(path).status()
    assert released == 3 and st["queries"] == 3 and math.isclose(st["epsilon_spent"], 0.9)


def test_advanced_composition_matches_the_formula(tmp_path):
    eps0, total, delta = Fraction(1, 20), Fraction(3), Fraction(1, 10**6)
    acc = BudgetAccountant.create(tmp_path / "b.json", total, "advanced", delta)
    answered = 0
    while True:
        try:
            acc.spend(eps0, lambda: None)
            answered += 1
        except BudgetExceeded:
            break

    def adv(k):  # Dwork-Rothblum-Vadhan 2010, equal epsilons
        e = float(eps0)
        return math.sqrt(2 * k * math.log(1 / float(delta))) * e + k * e * math.expm1(e)

    want = max(k for k in range(1, 1000) if min(k * float(eps0), adv(k)) <= float(total))
    assert answered == want
    assert answered > total / eps0  # more than basic composition allows
    assert compose([eps0] * 10, "basic") == Fraction(1, 2)
    with pytest.raises(AnonymizeError):
        compose([eps0], "advanced", None)


def test_budget_file_errors(tmp_path):
    with pytest.raises(AnonymizeError, match="does not exist"):
        BudgetAccountant(tmp_path / "none.json").status()
    (tmp_path / "bad.json").write_text("{ not json")
    with pytest.raises(AnonymizeError, match="cannot read"):
        BudgetAccountant(tmp_path / "bad.json").spend("0.1", lambda: None)
    BudgetAccountant.create(tmp_path / "b.json", "1")
    with pytest.raises(AnonymizeError, match="cannot be changed"):
        BudgetAccountant.create(tmp_path / "b.json", "2", exist_ok=True)
    with pytest.raises(AnonymizeError, match="needs a delta"):
        BudgetAccountant.create(tmp_path / "c.json", "1", "advanced")


# ---------------------------------------------------------------- ppdm dp
def run(capsys, *argv):
    code = main(["dp", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_answers_until_the_budget_is_spent(capsys, tmp_path):
    b = tmp_path / "budget.json"
    q = '{"agg": "count", "where": [["age", ">=", 40]]}'
    code, out, err = run(
        capsys, SUBSET, "--query", q, "--epsilon", "0.6", "--budget", b, "--total-epsilon", "1", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) >= {"answer", "epsilon_spent", "epsilon_left"}
    assert isinstance(doc["answer"], int) and doc["epsilon_spent"] == 0.6 and math.isclose(doc["epsilon_left"], 0.4)
    before = b.read_bytes()
    code, out, err = run(capsys, SUBSET, "--query", q, "--epsilon", "0.5", "--budget", b, "--json")
    assert code == 3 and out == "" and err.count("\n") == 1 and "budget exhausted" in err
    assert b.read_bytes() == before
    code, out, err = run(capsys, SUBSET, "--query", q, "--epsilon", "0.4", "--budget", b)
    assert code == 0 and "0 left" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--query", '{"agg": "count"}', "--epsilon", "-1", "--total-epsilon", "1"], "--epsilon must be positive"),
        (["--query", '{"agg": "count"}', "--epsilon", "0", "--total-epsilon", "1"], "--epsilon must be positive"),
        (["--query", '{"agg": "count"}', "--epsilon", "0.1"], "give --total-epsilon"),
        (["--query", '{"agg": "sum", "column": "age"}', "--epsilon", "0.1", "--total-epsilon", "1"], "clamping"),
        (
            ["--query", '{"agg": "count", "where": [["zip", "==", 1]]}', "--epsilon", "0.1", "--total-epsilon", "1"],
            "unknown column",
        ),
        (["--query", "{oops", "--epsilon", "0.1", "--total-epsilon", "1"], "not valid JSON"),
        (
            ["--query", '{"agg": "count"}', "--epsilon", "0.1", "--total-epsilon", "-2"],
            "--total-epsilon must be positive",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_creates_no_budget(capsys, tmp_path, argv, fragment):
    b = tmp_path / "budget.json"
    code, out, err = run(capsys, SUBSET, "--budget", b, *argv)
    assert code == 2 and out == ""
    assert err.startswith("ppdm: error: ") and err.count("\n") == 1 and fragment in err
    assert not b.exists()


def test_cli_missing_input_file(capsys, tmp_path):
    code, out, err = run(
        capsys,
        tmp_path / "nope.csv",
        "--query",
        '{"agg": "count"}',
        "--epsilon",
        "1",
        "--budget",
        tmp_path / "b.json",
        "--total-epsilon",
        "1",
    )
    assert code == 2 and "not found" in err and not (tmp_path / "b.json").exists()
