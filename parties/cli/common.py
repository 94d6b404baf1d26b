"""What the ``ppdm`` verb modules share: the bad-input error and argument parsing helpers.

Writing files atomically is :func:`anonymize.publish.io.atomic_write_text` (one
implementation for the whole CLI).
"""

from __future__ import annotations

__all__ = ["CLIError", "comma_list"]


class CLIError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def comma_list(s: str | None) -> list[str]:
    """``"a, b,,c"`` → ``["a", "b", "c"]``: a comma-separated option (columns, operations), blanks dropped."""
    if not s:
        return []
    return [c.strip() for c in s.split(",") if c.strip()]
