"""Operator papercuts (issue 8, items 8 and 11): what a new user hit trying the daemon walk-through.

Each test fails on main: a relative ``--data`` path was stored relative to the
party folder; a port in use exited 1 with two lines (one a gRPC log line);
``--min-support 1/3`` passed the CLI check and then failed centrally
(``decimal.ConversionSyntax``) and in the daemons (``InvalidOperation``); a
missing data file printed the party prefix twice; and argparse errors printed
a whole usage block.
"""

from __future__ import annotations

import io
import json
import math
import os
import random
import socket
import subprocess
import sys
from contextlib import redirect_stderr
from fractions import Fraction
from itertools import combinations
from pathlib import Path

import pytest

from parties.analyst.client import PartyError
from parties.cli import build_parser
from parties.cli import main as ppdm

REPO = Path(__file__).resolve().parents[1]
PPDM = [sys.executable, "-m", "parties.cli"]


def run(args, cwd, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        PPDM + [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


def cli(argv, cwd, capsys) -> tuple[int, str]:
    """``ppdm ARGV`` in-process from ``cwd``: (exit code, stderr)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        rc = ppdm([str(a) for a in argv])
    except SystemExit as e:
        rc = int(e.code or 0)
    finally:
        os.chdir(old)
    return rc, capsys.readouterr().err


def test_data_paths_are_resolved_where_the_command_runs(tmp_path, capsys):
    (tmp_path / "alice.dat").write_text("1 2\n")
    rc, err = cli(["party", "init", "--name", "alice", "--data", "transactions=alice.dat"], tmp_path, capsys)
    assert rc == 0, err
    from parties.config import load_config

    cfg = load_config(tmp_path / "alice" / "party.toml")
    assert cfg.data["transactions"] == str(tmp_path / "alice.dat")
    assert Path(cfg.data["transactions"]).is_file()


def test_a_port_in_use_is_one_line_naming_the_address(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert run(["party", "init", "--name", "alice", "--listen", f"127.0.0.1:{port}"], tmp_path).returncode == 0
        r = run(["party", "serve", "--config", "alice/party.toml"], tmp_path, timeout=60)
    assert r.returncode == 2
    assert r.stderr == f"ppdm: error: cannot listen on 127.0.0.1:{port}: address already in use\n"


# --------------------------------------------------------------------------- exact fractions everywhere
def brute_force(transactions, minsup: Fraction, n_items: int) -> dict[tuple[int, ...], int]:
    need = max(1, math.ceil(minsup * len(transactions)))
    sets = [frozenset(t) for t in transactions]
    out = {}
    for k in range(1, n_items + 1):
        for c in combinations(range(n_items), k):
            n = sum(1 for t in sets if t.issuperset(c))
            if n >= need:
                out[c] = n
    return out


@pytest.fixture(scope="module")
def small_dat(tmp_path_factory):
    rng = random.Random(8)
    # 61 transactions: frequent iff count >= ceil(61/3) = 21, decided in exact arithmetic
    ts = [sorted(rng.sample(range(7), rng.randint(1, 5))) for _ in range(61)]
    p = tmp_path_factory.mktemp("fractions") / "small.dat"
    p.write_text("".join(" ".join(map(str, t)) + "\n" for t in ts))
    return p, ts


def _as_dict(res):
    return {tuple(i["items"]): i["count"] for i in res["itemsets"]}


@pytest.mark.daemons
@pytest.mark.parametrize(
    "mode",
    [[], ["--local", "3", "--split", "horizontal"], ["--local", "2", "--split", "vertical"]],
    ids=["centralized", "horizontal", "vertical"],
)
def test_min_support_as_a_fraction_is_exact_in_every_mode(small_dat, mode, tmp_path):
    path, ts = small_dat
    r = run(["mine", path, "--min-support", "1/3", "--min-confidence", "2/3", "--json", *mode], tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert _as_dict(res) == brute_force(ts, Fraction(1, 3), 7)
    want_rules = {
        (x, tuple(i for i in z if i not in x))
        for z, cz in brute_force(ts, Fraction(1, 3), 7).items()
        for k in range(1, len(z))
        for x in combinations(z, k)
        if Fraction(cz, brute_force(ts, Fraction(1, 3), 7)[x]) >= Fraction(2, 3)
    }
    assert {(tuple(r["antecedent"]), tuple(r["consequent"])) for r in res["rules"]} == want_rules


@pytest.mark.parametrize("bad", ["1/0", "one third", "nan", "2/3/4"])
def test_bad_fractions_are_refused_up_front(bad, tmp_path, small_dat, capsys):
    rc, err = cli(["mine", small_dat[0], "--min-support", bad], tmp_path, capsys)
    assert rc == 2 and err.startswith("ppdm: error: --min-support must be a number") and err.count("\n") == 1


# --------------------------------------------------------------------------- one prefix, one line
@pytest.mark.daemons
def test_a_missing_data_file_names_the_party_once(make_cluster, tmp_path):
    (tmp_path / "a.dat").write_text("1 2\n")
    c = make_cluster(
        ["alice", "bob", "carol"],
        data={"alice": {"transactions": tmp_path / "a.dat"}, "bob": {"transactions": tmp_path / "a.dat"},
              "carol": {"transactions": tmp_path / "gone.dat"}},
    )  # fmt: skip
    with pytest.raises(PartyError) as ei:
        c.run_job("mine.horizontal", {"min_support": "0.5", "n_items": 4}, timeout=20)
    msg = str(ei.value)
    assert msg.endswith("failed: party 'carol': data 'transactions': no such file"), msg
    assert msg.count("'carol'") == 1


def _verbs_and_actions():
    """Every verb, and every action of verbs that have actions (``party init``, ``ca sign`` ...)."""
    import argparse

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for verb, p in sub.choices.items():
        acts = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        out.append([verb])
        for a in acts:
            out += [[verb, action] for action in a.choices]
    return out


@pytest.mark.parametrize("argv", _verbs_and_actions(), ids=lambda a: " ".join(a))
def test_every_argparse_error_is_one_line(argv):
    err = io.StringIO()
    with redirect_stderr(err), pytest.raises(SystemExit) as ei:
        ppdm([*argv, "--no-such-option"])
    assert ei.value.code == 2
    text = err.getvalue()
    assert text.startswith("ppdm: error: ") and text.count("\n") == 1, text


def test_anonymize_k_zero_is_one_line(tmp_path, capsys):
    """The review's example (item 11): a usage block on main."""
    rc, err = cli(
        ["anonymize", "in.csv", "-o", "out.csv", "--qi", "a", "--algorithm", "mondrian", "--k", "0"], tmp_path, capsys
    )
    assert rc == 2
    assert err == "ppdm: error: argument --k: must be at least 1, got '0' (see ppdm anonymize --help)\n"


def test_help_still_prints_the_usage(capsys):
    with pytest.raises(SystemExit) as ei:
        ppdm(["party", "init", "--help"])
    assert ei.value.code == 0 and "usage: ppdm party init" in capsys.readouterr().out
