"""Errors raised by ppdm's protocols.

Every protocol raises one of these (never a bare ``Exception``) so the party
runtime can turn a failure into one clear line for the analyst and abort the
session on every party.
"""

__all__ = ["ProtocolError", "InputMismatchError", "InputRangeError", "PeerFailedError", "ProtocolTimeoutError"]


class ProtocolError(Exception):
    """A protocol could not complete; the message says why, without private data."""


class InputMismatchError(ProtocolError):
    """Parties' public input parameters (lengths, widths, modes) disagree.

    Raised on *every* party by :func:`mpc.channel.agree`, so no party runs on
    while another has given up.
    """


class InputRangeError(ProtocolError, ValueError):
    """A public parameter would push a value past the range a protocol computes in (int64, Z_2^k).

    Raised before any message, from public values only, so every party raises
    the same error instead of computing a wrapped (wrong) result.
    """


class PeerFailedError(ProtocolError):
    """A peer aborted the session, died, or stopped answering."""


class ProtocolTimeoutError(PeerFailedError):
    """A message from a peer did not arrive before the deadline."""
