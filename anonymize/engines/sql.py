"""SQL text helpers shared by the engines and by :mod:`parties.sources`: quoting and one-line driver
messages (without quoted data rows or a password)."""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["ident", "lit", "one_line"]


def ident(name: str) -> str:
    """A SQL identifier, double-quoted (embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def lit(s: str) -> str:
    """A SQL string literal, single-quoted (embedded quotes doubled)."""
    return "'" + s.replace("'", "''") + "'"


def one_line(e: BaseException, secret: str | None = None) -> str:
    """A driver's message on one line, without the password and without quoted data rows."""
    msg = " ".join(str(e).split())
    for cut in ("Original Line", "Possible Solution", "LINE 1:"):  # DuckDB's CSV errors quote the row
        msg = msg.split(cut, 1)[0].rstrip(" :;")
    if secret:
        msg = msg.replace(secret, "***").replace(quote(secret, safe=""), "***")
    return msg[:400]
