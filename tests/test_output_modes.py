"""Files the product writes for people honour the umask (issue 16, item 11); keys, budgets, audit state
and a party's data shares stay private. Every release was 0600 whatever the umask, and overwriting a
0644 file silently made it 0600."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from anonymize.dp import BudgetAccountant
from anonymize.publish.io import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "anonymize" / "data"


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_release_written_by_the_cli_follows_the_umask(tmp_path):
    out, rep = tmp_path / "out.csv", tmp_path / "rep.json"
    cmd = [sys.executable, "-m", "parties.cli", "anonymize", str(DATA / "adult_subset.csv"), "-o", str(out)]
    cmd += [
        "--qi",
        "age,sex,race",
        "--hierarchies",
        str(DATA),
        "--k",
        "5",
        "--algorithm",
        "flash",
        "--report",
        str(rep),
    ]
    for umask, want in ((0o022, 0o644), (0o027, 0o640), (0o077, 0o600)):
        for f in (out, rep):
            f.unlink(missing_ok=True)
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, preexec_fn=lambda m=umask: os.umask(m))
        assert r.returncode == 0, r.stderr
        assert (mode(out), mode(rep)) == (want, want), (oct(umask), oct(mode(out)))


def test_overwriting_keeps_the_existing_mode(tmp_path, umask_022):
    p = tmp_path / "shared.csv"
    p.write_text("old\n")
    p.chmod(0o664)
    atomic_write_text(p, "new\n")
    assert p.read_text() == "new\n" and mode(p) == 0o664


def test_private_outputs_stay_private(tmp_path, umask_022):
    atomic_write_text(tmp_path / "share.dat", "1 2\n", private=True)
    assert mode(tmp_path / "share.dat") == 0o600
    acc = BudgetAccountant.create(tmp_path / "ledger.json", 1)
    acc.spend(0.5, lambda: None)
    assert mode(tmp_path / "ledger.json") == 0o600
