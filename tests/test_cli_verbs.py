"""The CLI loads only the module of the verb a command line names (``ppdm party serve`` starts without
the toolkit's pandas); every verb module registers exactly the verbs the table says."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

from parties.cli import VERB_MODULES, VERB_OF_MODULE, build_parser

ROOT = Path(__file__).resolve().parents[1]


def test_the_verb_table_matches_what_each_module_registers():
    assert list(VERB_OF_MODULE) == VERB_MODULES
    for name, verbs in VERB_OF_MODULE.items():
        sub = argparse.ArgumentParser().add_subparsers(dest="verb")
        importlib.import_module(name).register(sub)
        assert tuple(sub.choices) == verbs, name
    every = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert sorted(every) == sorted(v for vs in VERB_OF_MODULE.values() for v in vs)


def test_party_and_ca_commands_load_no_pandas():
    code = (
        "import sys\n"
        "from parties.cli import build_parser\n"
        "for verb in ('party', 'ca'):\n"
        "    build_parser(verb).parse_args([verb, '--help'] if False else [verb])\n"
        "print(sorted(m for m in ('pandas', 'scipy', 'anonymize.publish') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_an_unknown_verb_is_still_one_line():
    r = subprocess.run(
        [sys.executable, "-m", "parties.cli", "frobnicate"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "invalid choice: 'frobnicate'" in r.stderr
