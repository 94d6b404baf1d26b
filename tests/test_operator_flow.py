"""The operator walk-through of docs/daemon.md: init, analyst, serve, status, mine --parties (real processes)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anonymize.itemsets import read_fimi
from parties.joint.partition import split_horizontal, write_fimi

REPO = Path(__file__).resolve().parents[1]
PPDM = [sys.executable, "-m", "parties.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, cwd, timeout=120):
    r = subprocess.run(PPDM + [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return r


def serve(cwd, *names) -> list[subprocess.Popen]:
    """``ppdm party serve`` for each party initialized under ``cwd``, in a process group of its own."""
    return [
        subprocess.Popen(
            PPDM + ["party", "serve", "--config", f"{n}/party.toml"],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for n in names
    ]


@pytest.mark.daemons
def test_init_analyst_serve_mine(tmp_path):
    db = read_fimi(REPO / "anonymize" / "data" / "mushroom.dat")
    for i, share in enumerate(split_horizontal(db, 2)):
        write_fimi(share, tmp_path / f"part{i}.dat")
    pa, pb = free_port(), free_port()
    run(
        [
            "party",
            "init",
            "--name",
            "alice",
            "--listen",
            f"127.0.0.1:{pa}",
            "--peer",
            f"bob=127.0.0.1:{pb}",
            "--data",
            "transactions=part0.dat",  # relative to where the command runs
            "--min-parties",  # two organizations: each opts in to 2-party sums (docs/daemon.md)
            "2",
        ],
        tmp_path,
    )
    run(
        [
            "party",
            "init",
            "--name",
            "bob",
            "--listen",
            f"127.0.0.1:{pb}",
            "--peer",
            f"alice=127.0.0.1:{pa}",
            "--data",
            "transactions=part1.dat",  # relative to where the command runs
            "--min-parties",  # two organizations: each opts in to 2-party sums (docs/daemon.md)
            "2",
        ],
        tmp_path,
    )
    run(["party", "analyst", "--party", f"alice=127.0.0.1:{pa}", "--party", f"bob=127.0.0.1:{pb}"], tmp_path)
    assert oct((tmp_path / "alice" / "alice.key").stat().st_mode & 0o777) == "0o600"
    procs = serve(tmp_path, "alice", "bob")
    try:
        deadline = time.monotonic() + 30
        while True:
            st = subprocess.run(
                PPDM + ["party", "status", "--config", "alice/party.toml", "--json"],
                cwd=tmp_path,
                capture_output=True,
                text=True,
            )
            if st.returncode == 0:
                break
            assert time.monotonic() < deadline, st.stdout + st.stderr
            time.sleep(0.3)
        r = run(
            [
                "mine",
                "--parties",
                "analyst/analyst.toml",
                "--split",
                "horizontal",
                "--n-items",
                "120",
                "--min-support",
                "0.5",
                "--json",
            ],
            tmp_path,
        )
        res = json.loads(r.stdout)
        central = json.loads(
            run(
                ["mine", REPO / "anonymize" / "data" / "mushroom.dat", "--min-support", "0.5", "--json"], tmp_path
            ).stdout
        )
        assert res["itemsets"] == central["itemsets"] and len(res["itemsets"]) == 153
        assert res["protocol"]["parties"] == ["alice", "bob"]
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)


@pytest.mark.daemons
def test_operator_flow_with_keyed_tables_both_splits(tmp_path):
    """Issue 17's operator: keyed CSV tables named once at init; the same daemons run a vertical job
    (customers aligned by Private-ID) and, on the retailers' tables, a horizontal one — no --n-items, no
    restart, no script; rules print with the items' names."""
    ex = REPO / "examples"
    pa, pb = free_port(), free_port()
    for name, port, other, oport, crm, shop in (
        ("bank", pa, "insurer", pb, ex / "bank-insurer" / "bank.csv", ex / "two-retailers" / "north.csv"),
        ("insurer", pb, "bank", pa, ex / "bank-insurer" / "insurer.csv", ex / "two-retailers" / "south.csv"),
    ):
        run(["party", "init", "--name", name, "--listen", f"127.0.0.1:{port}", "--peer", f"{other}=127.0.0.1:{oport}",
             "--data", f"crm={crm}", "--data-columns", "crm=customer_id,product",
             "--data", f"shop={shop}", "--data-columns", "shop=basket_id,sku", "--min-parties", "2"], tmp_path)  # fmt: skip
    run(["party", "analyst", "--party", f"bank=127.0.0.1:{pa}", "--party", f"insurer=127.0.0.1:{pb}"], tmp_path)
    procs = serve(tmp_path, "bank", "insurer")
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(PPDM + ["party", "status", "--config", "bank/party.toml", "--json"], cwd=tmp_path,
                             capture_output=True).returncode != 0:  # fmt: skip
            assert time.monotonic() < deadline
            time.sleep(0.3)
        v = run(["mine", "--parties", "analyst/analyst.toml", "--data", "crm", "--split", "vertical",
                 "--min-support", "0.05", "--min-confidence", "0.9"], tmp_path)  # fmt: skip
        assert "{car_loan, credit_card} -> {car}" in v.stdout and "Private-ID" in v.stdout
        local = run(["mine", "--local", "--split", "vertical", ex / "bank-insurer" / "bank.csv",
                     ex / "bank-insurer" / "insurer.csv", "--transaction", "customer_id", "--item", "product",
                     "--min-support", "0.05", "--json"], tmp_path)  # fmt: skip
        joint = run(["mine", "--parties", "analyst/analyst.toml", "--data", "crm", "--split", "vertical",
                     "--min-support", "0.05", "--json"], tmp_path)  # fmt: skip
        assert json.loads(joint.stdout)["itemsets"] == json.loads(local.stdout)["itemsets"]
        h = json.loads(run(["mine", "--parties", "analyst/analyst.toml", "--data", "shop", "--split", "horizontal",
                            "--min-support", "0.1", "--json"], tmp_path).stdout)  # fmt: skip
        assert h["transactions"] == 1600 and {"bread", "butter"} in [set(i["items"]) for i in h["itemsets"]]
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
