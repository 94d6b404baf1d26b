"""Errors raised by :mod:`anonymize` for bad input.

Every error a user can cause (unknown column, value missing from a hierarchy,
NaN in a quasi-identifier, empty or unreadable file, k larger than the table…)
is an :class:`AnonymizeError` whose message is one line saying what is wrong
and, where possible, what to do. The CLI prints it as ``ppdm: error: <msg>``
and exits non-zero. It subclasses :class:`ValueError` so library callers can
catch it the usual way.
"""

from __future__ import annotations

__all__ = ["AnonymizeError"]


class AnonymizeError(ValueError):
    """Bad input to an anonymization function (one-line, user-facing message)."""
