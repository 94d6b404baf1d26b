"""Errors raised by :mod:`anonymize.hiding` for bad input or instances it will not attempt.

Both subclass :class:`anonymize.errors.AnonymizeError` (itself a ``ValueError``): one
line saying what is wrong and, where possible, what to do instead.
"""

from __future__ import annotations

from ..errors import AnonymizeError

__all__ = ["HidingError", "InstanceTooLarge"]


class HidingError(AnonymizeError):
    """Bad input to a hiding function: unknown item, empty sensitive list, threshold out of range…"""


class InstanceTooLarge(HidingError):
    """The exact integer program would exceed its size guard; the message names the algorithm to use."""

    def __init__(self, message: str, *, variables: int, constraints: int, suggestion: str) -> None:
        super().__init__(message)
        self.variables = variables
        self.constraints = constraints
        self.suggestion = suggestion
