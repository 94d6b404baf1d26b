"""The ``ppdm`` command line: a thin layer over the library.

Each verb lives in its own module exposing ``register(subparsers)``; the module
adds its parser and sets ``func`` (a callable taking the parsed ``args`` and
returning an exit code). Errors become one line on stderr and a non-zero exit:

* :class:`CLIError` (bad input) — exit 2,
* any other exception — exit 1, one line; set ``PPDM_DEBUG=1`` for the traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

__all__ = ["CLIError", "main"]

# modules that register verbs, in help order
VERB_MODULES = [
    "parties.cli_demo",
    "parties.cli_party",
    "parties.cli_mine",
    "parties.cli_hide_rules",
    "parties.cli_bench",
    "anonymize.cli_anonymize",
    "anonymize.cli",
]


class CLIError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ppdm",
        description="Privacy-preserving data mining: joint mining between party daemons, and local anonymization.",
    )
    try:
        from importlib.metadata import version

        v = version("ppdm")
    except Exception:  # running from a source tree without installing
        v = "unknown"
    p.add_argument("--version", action="version", version=f"ppdm {v}")
    sub = p.add_subparsers(dest="verb", metavar="COMMAND")
    for name in VERB_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:  # verb not built yet
                continue
            raise
        mod.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CLIError as e:
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
        msg = str(e) or e.__class__.__name__
        print(f"ppdm: error: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
