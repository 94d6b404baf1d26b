"""Errors raised by ppdm's protocols.

Every protocol raises one of these (never a bare ``Exception``) so the party
runtime can turn a failure into one clear line for the analyst and abort the
session on every party.
"""

__all__ = ["ProtocolError", "InputMismatchError", "PeerFailedError", "ProtocolTimeoutError"]


class ProtocolError(Exception):
    """A protocol could not complete; the message says why, without private data."""


class InputMismatchError(ProtocolError):
    """Parties' public input parameters (lengths, widths, modes) disagree.

    Raised on *every* party by :func:`mpc.channel.agree`, so no party runs on
    while another has given up.
    """


class PeerFailedError(ProtocolError):
    """A peer aborted the session, died, or stopped answering."""


class ProtocolTimeoutError(PeerFailedError):
    """A message from a peer did not arrive before the deadline."""
