"""The ``ppdm`` command line: a thin layer over the library.

One module per verb group: :mod:`.demo`, :mod:`.party`, :mod:`.ca`, :mod:`.mine`,
:mod:`.bench`, :mod:`.anonymize`, :mod:`.check`, :mod:`.tune`, :mod:`.publish`; shared
helpers in :mod:`.common` and, for the verbs that read a table with a schema,
:mod:`.schema_args`. Each verb module exposes ``register(subparsers)``, which adds its
parser and sets ``func`` (a callable taking the parsed ``args`` and returning an
exit code).

Adding a verb: write ``parties/cli/<verb>.py`` with ``register(subparsers)`` and
append ``"parties.cli.<verb>"`` to :data:`VERB_MODULES` (its position is the
order in ``ppdm --help``). A listed module that does not exist is skipped, so
the list may name a verb before it is built.

Errors become one line on stderr and a non-zero exit:

* a command line argparse rejects (unknown option, bad value) — exit 2,
  ``ppdm: error: ... (see ppdm VERB --help)`` (:class:`OneLineParser`);
* :class:`CLIError` or :class:`anonymize.errors.AnonymizeError` (bad input) — exit 2,
* an optional package that is not installed — exit 2, ``ppdm: error: ppdm tune --plot needs the plots
  extra: pip install 'ppdm[plots]'`` (:data:`.common.EXTRAS`; every ``--plot`` is checked before any
  work, any other late import of such a package becomes the same line),
* any other exception — exit 1, one line; set ``PPDM_DEBUG=1`` for the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from anonymize.errors import AnonymizeError
from parties.cli.common import CLIError, missing_extra, require_extra

__all__ = ["CLIError", "OneLineParser", "VERB_MODULES", "build_parser", "main"]

# modules that register verbs (each has register(subparsers)), in help order
VERB_MODULES: list[str] = [
    "parties.cli.demo",
    "parties.cli.party",
    "parties.cli.ca",
    "parties.cli.mine",
    "parties.cli.bench",
    "parties.cli.anonymize",
    "parties.cli.check",
    "parties.cli.perturb",
    "parties.cli.sdc",
    "parties.cli.dp",
    "parties.cli.attack",
    "parties.cli.audit",
    "parties.cli.hide_rules",
    "parties.cli.tune",
    "parties.cli.publish",
]


# the verb each module registers (a command line that names one loads only its module: ``ppdm party
# serve`` then starts without the toolkit's pandas, ``ppdm ca sign`` without numpy)
VERB_OF_MODULE: dict[str, tuple[str, ...]] = {
    "parties.cli.demo": ("demo",),
    "parties.cli.party": ("party",),
    "parties.cli.ca": ("ca",),
    "parties.cli.mine": ("mine",),
    "parties.cli.bench": ("bench",),
    "parties.cli.anonymize": ("anonymize",),
    "parties.cli.check": ("check",),
    "parties.cli.perturb": ("perturb", "reconstruct"),
    "parties.cli.sdc": ("sdc",),
    "parties.cli.dp": ("dp",),
    "parties.cli.attack": ("attack",),
    "parties.cli.audit": ("audit",),
    "parties.cli.hide_rules": ("hide-rules",),
    "parties.cli.tune": ("tune",),
    "parties.cli.publish": ("publish",),
}


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``ppdm: error: MESSAGE (see PROG --help)``, exit 2.

    Sub-parsers (every verb, and their actions) are made of the same class, so
    this holds for every verb; ``--help`` still prints the full usage.
    """

    def error(self, message: str) -> NoReturn:
        msg = " ".join(message.split())
        sys.stderr.write(f"ppdm: error: {msg} (see {self.prog} --help)\n")
        sys.exit(2)


def package_version() -> str:
    """The installed distribution's version ("unknown" in a source tree that was never installed)."""
    try:
        from importlib.metadata import version

        return version("ppdm")
    except Exception:  # running from a source tree without installing
        return "unknown"


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The ``ppdm`` parser: every verb, or only ``verb``'s module when it names a known verb."""
    p = OneLineParser(
        prog="ppdm",
        description="Privacy-preserving data mining: joint mining between party daemons, and local anonymization.",
    )
    p.add_argument("--version", action="version", version=f"ppdm {package_version()}")
    sub = p.add_subparsers(dest="verb", metavar="COMMAND")
    only = [m for m, verbs in VERB_OF_MODULE.items() if verb in verbs]
    for name in only or VERB_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # verb not built yet
                continue
            raise
        mod.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        # answered before the verb modules load (they import numpy and pandas): well under 0.3 s
        print(f"ppdm {package_version()}")
        return 0
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)
    args.command_line = ["ppdm", *(sys.argv[1:] if argv is None else argv)]  # as typed, for --report pages
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        if getattr(args, "plot", None):  # every --plot draws with matplotlib (the plots extra)
            require_extra("matplotlib", f"ppdm {args.verb} --plot")
        return int(args.func(args) or 0)
    except (CLIError, AnonymizeError) as e:
        print(f"ppdm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ppdm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. head: stop quietly, like other Unix tools
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 141
    except Exception as e:  # one clear line, never a traceback
        if os.environ.get("PPDM_DEBUG"):
            raise
        extra = missing_extra(e, f"ppdm {args.verb}")
        if extra is not None:  # an optional package the command needs is not installed
            print(f"ppdm: error: {extra}", file=sys.stderr)
            return 2
        msg = str(e) or e.__class__.__name__
        print(f"ppdm: error: {msg}", file=sys.stderr)
        return 1
