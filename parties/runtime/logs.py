"""A daemon's log: text for people, JSON lines for machines; the level from the flag or ``PPDM_LOG_LEVEL``.

    ppdm party serve --config party.toml --log-format json --log-level DEBUG

JSON format: one object a line with ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``,
``event`` (the message), and ``session``, ``job``, ``peer`` when the line is about one (given by the
code as ``extra={"session": ..., ...}``, or read from a message that starts ``session KEY:``), plus
``error`` for a logged exception's type. Nothing else is added: what a line says is what the code
chose to log, and the daemon logs names, sizes, timings and errors — never payloads, parameter values
or data (a test scans the logs of whole jobs for the parties' input values).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import re
import sys
from typing import Any

__all__ = ["LEVELS", "FORMATS", "LogSettingError", "check_level", "configure_logging", "JsonFormatter", "TextFormatter"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_FIELDS = ("session", "job", "peer")
_SESSION_PREFIX = re.compile(r"^session (\S+?):")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*):")


class LogSettingError(ValueError):
    """An unknown log level or format: one line naming the choices."""


def check_level(level: str, source: str = "--log-level") -> str:
    """``level`` upper-cased if it is one of :data:`LEVELS`; else :class:`LogSettingError` naming ``source``."""
    v = (level or "").strip().upper()
    if v == "WARN":
        v = "WARNING"
    if v not in LEVELS:
        raise LogSettingError(f"{source}: unknown log level {level!r} (choose from {', '.join(LEVELS)})")
    return v


def _traceback_without_messages(exc_info) -> str:
    """A logged exception's frames and type — never its message, which may quote data (a value in a
    ``ValueError``); chained exceptions the same way."""
    import traceback

    te = traceback.TracebackException(*exc_info, capture_locals=False)
    lines = []
    for part in te.format(chain=True):
        for ln in part.rstrip("\n").split("\n"):
            m = _EXCEPTION_LINE.match(ln)
            if m:  # "module.Type: message" -> the type alone
                ln = m.group(1) + ": (message not logged)"
            lines.append(ln)
    return "\n".join(lines)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: message``; a logged exception shows its frames and type, not its message."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatException(self, ei) -> str:
        return _traceback_without_messages(ei)


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, event, and session/job/peer when known."""

    def formatException(self, ei) -> str:
        return _traceback_without_messages(ei)

    def format(self, record: logging.LogRecord) -> str:
        event = record.getMessage()
        out: dict[str, Any] = {
            "time": _dt.datetime.fromtimestamp(record.created, _dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
        }
        for f in CONTEXT_FIELDS:
            v = getattr(record, f, None)
            if v is not None:
                out[f] = str(v)
        if "session" not in out:
            m = _SESSION_PREFIX.match(event)
            if m:
                out["session"] = m.group(1)
        out["event"] = event
        if record.exc_info and record.exc_info[0] is not None:
            out["error"] = record.exc_info[0].__name__
            out["traceback"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: str = "text", stream: Any = None) -> None:
    """Route every ``ppdm`` logger (and the root) to ``stream`` (stderr) at ``level`` in ``fmt``."""
    level = check_level(level)
    if fmt not in FORMATS:
        raise LogSettingError(f"--log-format: unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level))
