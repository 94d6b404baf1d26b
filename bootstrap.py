#!/usr/bin/env python3
"""Set-up and entry point for a fresh clone: needs nothing but python3 (3.11+).

    python3 bootstrap.py demo      # real local party daemons, joint mining, anonymization
    python3 bootstrap.py test      # the whole test suite, then the checks below (what CI runs)
    python3 bootstrap.py lint      # the checks only: ruff check, ruff format --check, lint-imports, mypy
    python3 bootstrap.py ppdm ARGS # any ppdm command inside the project's environment

``test ARGS`` passes ARGS to pytest (e.g. a test file) and still runs the checks.
The checks' configuration is in pyproject.toml: ruff (lint and format),
import-linter (the layering of mpc, anonymize and parties), mypy.

On first use it creates ``.venv`` next to this file and installs ppdm into it
with everything the demo and the tests use: the extras ``test`` (pytest, the
oracles, the checks) and ``plots`` (matplotlib, for ``--plot``); it reinstalls
when ``pyproject.toml`` changes. ``PPDM_WITH_SPARK=1`` adds the ``spark`` extra
(PySpark; its tests also need a JDK 17), and switching it reinstalls too. A
party host needs none of the extras: ``pip install ppdm`` runs a daemon.
"""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = Path(os.environ.get("PPDM_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")


def ensure_env() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - bootstrap runs under any python3 and says why it stops
        sys.exit(f"bootstrap: ppdm needs Python 3.11 or newer (this is {sys.version.split()[0]})")
    stamp = VENV / ".ppdm-installed"
    with_spark = os.environ.get("PPDM_WITH_SPARK") == "1"
    extras = "test,plots,spark" if with_spark else "test,plots"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest() + f" PPDM_WITH_SPARK={int(with_spark)}"
    if stamp.exists() and stamp.read_text() == want and PY.exists():
        return
    if not PY.exists():
        print(f"bootstrap: creating virtual environment {VENV}", flush=True)
        r = subprocess.run([sys.executable, "-m", "venv", str(VENV)])
        if r.returncode != 0:
            sys.exit("bootstrap: 'python3 -m venv' failed (on Debian/Ubuntu: apt install python3-venv)")
    print(f"bootstrap: installing ppdm and its dependencies [{extras}] (first run only)", flush=True)
    pip = [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    for cmd in (pip + ["--upgrade", "pip"], pip + ["-e", f"{ROOT}[{extras}]"]):
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            sys.exit("bootstrap: installing dependencies failed (see pip's message above)")
    stamp.write_text(want)


def _tool(name: str) -> str:
    return str(BIN / (f"{name}.exe" if os.name == "nt" else name))


# (name printed on failure, command); each runs from the repository root
CHECKS = [
    ("ruff check", [_tool("ruff"), "check", "."]),
    ("ruff format --check", [_tool("ruff"), "format", "--check", "."]),
    ("lint-imports", [_tool("lint-imports")]),
    ("mypy", [str(PY), "-m", "mypy"]),
]


def run_steps(steps: list[tuple[str, list[str]]]) -> int:
    """Run every step (even after a failure, so one run reports everything); 1 if any failed, naming them."""
    failed = []
    for name, cmd in steps:
        print(f"bootstrap: running {name}", flush=True)
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            failed.append(name)
    if failed:
        print(f"bootstrap: FAILED: {', '.join(failed)}", file=sys.stderr, flush=True)
        return 1
    print(f"bootstrap: passed: {', '.join(name for name, _ in steps)}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    what, rest = argv[0], argv[1:]
    ensure_env()
    if what == "demo":
        cmd = [str(BIN / "ppdm"), "demo", *rest]
    elif what == "test":
        return run_steps([("pytest", [str(PY), "-m", "pytest", *rest]), *CHECKS])
    elif what == "lint":
        if rest:
            print("bootstrap: lint takes no arguments", file=sys.stderr)
            return 2
        return run_steps(CHECKS)
    elif what == "ppdm":
        cmd = [str(BIN / "ppdm"), *rest]
    elif what == "setup":
        return 0
    else:
        print(f"bootstrap: unknown command {what!r} (use demo, test, lint, ppdm or setup)", file=sys.stderr)
        return 2
    return subprocess.run(cmd, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
