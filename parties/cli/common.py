"""What the ``ppdm`` verb modules share: the bad-input error and argument parsing helpers.

Writing files atomically is :func:`anonymize.publish.io.atomic_write_text` (one
implementation for the whole CLI).

Optional dependencies come as extras of the ``ppdm`` distribution (``pyproject.toml``):
:data:`EXTRAS` names the extra of each optional import package, :func:`require_extra` refuses
a command before any work when it is missing, and :func:`missing_extra` turns the
``ModuleNotFoundError`` of a late import into the same one line.
"""

from __future__ import annotations

import importlib.util

__all__ = ["CLIError", "EXTRAS", "comma_list", "missing_extra", "require_extra"]

#: optional import packages -> the extra that installs them (a party host needs none of them)
EXTRAS = {"matplotlib": "plots"}


class CLIError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def comma_list(s: str | None) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``: a comma-separated option (columns, operations), blanks dropped."""
    if not s:
        return []
    return [c.strip() for c in s.split(",") if c.strip()]


def _extra_line(module: str, what: str) -> str:
    extra = EXTRAS[module]
    return f"{what} needs the {extra} extra: pip install 'ppdm[{extra}]'"


def require_extra(module: str, what: str) -> None:
    """Raise :class:`CLIError` (``WHAT needs the plots extra: pip install 'ppdm[plots]'``) unless
    ``module``, one of :data:`EXTRAS`, can be found."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ImportError:  # an import hook refusing it
        found = False
    if not found:
        raise CLIError(_extra_line(module, what))


def missing_extra(exc: BaseException, what: str) -> str | None:
    """The one line for ``exc`` when it is a missing optional package of :data:`EXTRAS`, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    root = exc.name.partition(".")[0]
    return _extra_line(root, what) if root in EXTRAS else None
