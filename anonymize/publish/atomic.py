"""Writing files atomically: a temporary file in the target directory, synced and moved into
place with ``os.replace`` — readers never see a partial file, and on any error the target path is
left untouched. Re-exported by :mod:`.io` (:func:`anonymize.publish.io.atomic_write` is the public
name); kept apart so that modules :mod:`.io` imports (:mod:`.hierarchy`) can write files too.

Modes: files meant for people (releases, sanitized data, plots, reports, noisy tables) get the
mode a plain ``open(path, "w")`` would give — an existing file's mode when it is overwritten, else
``0666`` less the process's umask — so a release meant to be shared can be read by the group the
umask allows. ``private=True`` (privacy-budget ledgers, a party's data shares) keeps ``0600``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import AnonymizeError

__all__ = ["atomic_write", "atomic_write_text", "current_umask", "public_mode"]


def atomic_write_text(path, text: str, encoding: str = "utf-8", *, private: bool = False) -> None:
    """Write ``text`` to ``path`` via a temp file in the same directory + ``os.replace``."""
    p = Path(path)
    atomic_write(p, lambda fh: fh.write(text.encode(encoding)), private=private)


def current_umask() -> int:
    """This process's umask (``/proc/self/status`` where it is, else set-and-restore)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def public_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: the existing file's, else ``0666 & ~umask``."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o666 & ~current_umask()


def atomic_write(path, writer, *, private: bool = False) -> None:
    """Write ``path`` atomically: ``writer(fh)`` fills a binary temporary file in the same directory,
    which is synced and moved into place with ``os.replace``; on any error the temporary file is
    removed and ``path`` is untouched. A missing directory is an :class:`AnonymizeError`. The file's
    mode: ``0600`` with ``private``, else :func:`public_mode` (module docstring)."""
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    if not d.is_dir():
        raise AnonymizeError(f"output directory does not exist: {d}")
    mode = 0o600 if private else public_mode(p)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=d)
    try:
        if mode != 0o600:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
