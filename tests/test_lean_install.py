"""A lean install (``pip install ppdm``, no extras) runs the daemons and the toolkit; ``--plot`` says what to add.

A ``sitecustomize.py`` on ``PYTHONPATH`` puts an import hook first on ``sys.meta_path`` that refuses
the packages of the optional extras (matplotlib: ``plots``), in the ``ppdm`` process and in every daemon
it starts. scipy is not an extra: the daemons' vertical counting (``mpc/lwe_product.py``) and PSI's
cuckoo fallback (``mpc/psi.py``) need it, so a party host installs it.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from parties.cli.common import EXTRAS, missing_extra

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "anonymize" / "data"
ADULT = DATA / "adult_subset.csv"
QI = "age,sex,race,marital-status,education,native-country,workclass,occupation"

HOOK = '''"""Test hook (tests/test_lean_install.py): the optional extras' packages are not installed."""
import sys

BLOCKED = {BLOCKED!r}


class _LeanInstall:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _LeanInstall())
'''


@pytest.fixture
def lean(tmp_path: Path):
    """Run ``ppdm ARGS`` (or ``python -c CODE``) in ``tmp_path`` without the extras' packages."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK.format(BLOCKED=set(EXTRAS)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))}
    env.pop("PPDM_DEBUG", None)

    def run(*args: str, code: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "parties.cli", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=tmp_path, env=env)

    return run


def test_the_core_install_pulls_in_no_package_of_an_extra() -> None:
    """``pip install ppdm``: pyproject's dependencies, closed over the installed packages' metadata."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    deps = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    todo, seen = [Requirement(r) for r in deps], set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(r) for r in importlib.metadata.requires(req.name) or []]
    assert "scipy" in seen and not seen & {canonicalize_name(m) for m in EXTRAS}


def test_the_hook_refuses_the_extras_and_keeps_the_core(lean) -> None:
    r = lean(code="import scipy.sparse, numpy, pandas, grpc\nimport matplotlib")
    assert r.returncode == 1 and "ModuleNotFoundError: No module named 'matplotlib'" in r.stderr


@pytest.mark.daemons
def test_joint_mining_between_real_daemons_runs_without_the_extras(lean) -> None:
    r = lean("mine", "--local", "2", "--split", "horizontal", str(DATA / "mushroom.dat"), "--min-support", "0.3")
    assert r.returncode == 0, r.stderr
    assert "transactions: 8,124" in r.stdout and "frequent itemsets: 2,735" in r.stdout


def test_the_local_toolkit_runs_without_the_extras(lean, tmp_path: Path) -> None:
    r = lean(
        "anonymize", str(ADULT), "-o", "out.csv", "--qi", QI, "--sensitive", "salary-class",
        "--hierarchies", str(DATA), "--algorithm", "mondrian", "--k", "5",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.csv").is_file()
    r = lean("check", "out.csv", "--qi", QI, "--sensitive", "salary-class", "--json")
    assert r.returncode == 0, r.stderr
    (tmp_path / "baskets.dat").write_text("1 2 3\n1 2\n1 2 4\n2 3 4\n1 3\n1 2 3 4\n")
    r = lean("hide-rules", "baskets.dat", "--sensitive", "1 2", "--min-support", "0.3", "--algorithm", "exact",
             "-o", "sanitized.dat")  # fmt: skip
    assert r.returncode == 0, r.stderr  # scipy (HiGHS) is part of the core install
    assert "optimal" in r.stdout


def _one_line(r: subprocess.CompletedProcess, what: str) -> None:
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"ppdm: error: {what} needs the plots extra: pip install 'ppdm[plots]'\n"


def test_every_plot_names_the_plots_extra_before_any_work(lean, tmp_path: Path) -> None:
    r = lean("perturb", str(ADULT), "--column", "age", "--noise", "uniform", "--scale", "40", "-o", "noisy.csv")
    assert r.returncode == 0, r.stderr
    r = lean("reconstruct", "noisy.csv", "--column", "age", "--noise", "uniform", "--scale", "40", "--plot", "r.png")
    _one_line(r, "ppdm reconstruct --plot")
    r = lean(
        "anonymize", str(ADULT), "-o", "release.csv", "--qi", QI, "--sensitive", "salary-class",
        "--hierarchies", str(DATA), "--algorithm", "mondrian", "--k", "5", "--plot", "a.png",
    )  # fmt: skip
    _one_line(r, "ppdm anonymize --plot")
    assert not (tmp_path / "release.csv").exists()  # refused before the release was written
    r = lean("tune", str(ADULT), "--qi", "age,sex", "--sensitive", "occupation", "--pmax", "0.5", "--plot", "t.png")
    _one_line(r, "ppdm tune --plot")
    assert not list(tmp_path.glob("*.png"))


def test_the_library_says_which_extra_draws(lean) -> None:
    r = lean(code="from anonymize.publish.plots import new_figure\nnew_figure(1)")
    assert r.returncode == 1
    assert "ModuleNotFoundError: plots need matplotlib: pip install 'ppdm[plots]'" in r.stderr


def test_a_late_import_of_an_extra_becomes_the_same_line(monkeypatch, capsys) -> None:
    import argparse

    import parties.cli

    def draws(args):
        raise ModuleNotFoundError("No module named 'matplotlib.pyplot'", name="matplotlib.pyplot")

    parser = argparse.ArgumentParser()
    parser.set_defaults(verb="draw", func=draws)
    monkeypatch.setattr(parties.cli, "build_parser", lambda verb=None: parser)
    monkeypatch.delenv("PPDM_DEBUG", raising=False)
    assert parties.cli.main([]) == 2
    assert capsys.readouterr().err == "ppdm: error: ppdm draw needs the plots extra: pip install 'ppdm[plots]'\n"
    e = ModuleNotFoundError("No module named 'matplotlib.pyplot'", name="matplotlib.pyplot")
    assert missing_extra(e, "ppdm x") == "ppdm x needs the plots extra: pip install 'ppdm[plots]'"
    assert missing_extra(ModuleNotFoundError("no", name="numpy"), "ppdm x") is None
    assert missing_extra(ValueError("matplotlib"), "ppdm x") is None
