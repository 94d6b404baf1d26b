"""What a user gets from the package: the sdist carries what the README links to and what the tests need,
each import package is marked typed, and ``ppdm --version`` answers without loading the data stack."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("mpc", "parties", "anonymize")
# what the sdist must carry whole (the tests run from the extracted sdist)
CARRIED = ("protos", "docs", "examples", "tests", "benchmarks")


def _tracked_files(folder: str) -> list[str]:
    """Files under ``folder`` as the source tree has them: git's list in a clone, the disk in an sdist."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(
            ["git", "ls-files", "--", folder], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        return [line for line in out.splitlines() if (ROOT / line).is_file()]
    return [
        str(p.relative_to(ROOT))
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


@pytest.fixture(scope="module")
def sdist_members(tmp_path_factory) -> set[str]:
    out = tmp_path_factory.mktemp("sdist")
    code = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    r = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    name = r.stdout.strip().splitlines()[-1]
    with tarfile.open(out / name) as tf:
        names = tf.getnames()
    prefix = names[0].split("/", 1)[0] + "/"
    return {n[len(prefix) :] for n in names if n.startswith(prefix)}


def test_sdist_carries_the_tree_the_tests_and_the_readme_need(sdist_members: set[str]) -> None:
    missing = [f for folder in CARRIED for f in _tracked_files(folder) if f not in sdist_members]
    assert not missing, f"not in the sdist: {missing[:10]}"
    for f in ("bootstrap.py", "README.md", "LICENSE", "pyproject.toml", ".ci/run"):
        assert f in sdist_members
    for pkg in PACKAGES:
        assert f"{pkg}/py.typed" in sdist_members


def test_every_relative_link_of_the_readme_is_in_the_sdist(sdist_members: set[str]) -> None:
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    local = [link.rstrip("/") for link in links if "://" not in link and not link.startswith("mailto:")]
    assert local, "the README links to files of the repository"
    absent = [
        link for link in local if link not in sdist_members and not any(m.startswith(link + "/") for m in sdist_members)
    ]
    assert not absent, f"README links to files the sdist lacks: {absent}"


def test_import_packages_are_marked_typed() -> None:
    for pkg in PACKAGES:
        assert (ROOT / pkg / "py.typed").is_file()


def test_version_does_not_import_the_data_stack() -> None:
    code = "import sys; from parties.cli import main; main(['--version']); print(sorted(m for m in ('pandas', 'numpy', 'grpc') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, modules = r.stdout.strip().splitlines()
    assert first.startswith("ppdm ")
    assert modules == "[]"


def test_bootstrap_help_answers() -> None:
    for flag in ("--help", "-h", "help"):
        r = subprocess.run([sys.executable, str(ROOT / "bootstrap.py"), flag], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "python3 bootstrap.py test" in r.stdout
