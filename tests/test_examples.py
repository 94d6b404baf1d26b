"""The scripts in examples/ run as a newcomer would run them (each checks its own result)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("script", sorted(p.name for p in (REPO / "examples").glob("*.py")))
def test_example_runs(script):
    r = subprocess.run(
        [sys.executable, str(REPO / "examples" / script)], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert r.stdout.strip()
