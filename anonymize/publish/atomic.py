"""Writing files atomically: a temporary file in the target directory, synced and moved into
place with ``os.replace`` — readers never see a partial file, and on any error the target path is
left untouched. Re-exported by :mod:`.io` (:func:`anonymize.publish.io.atomic_write` is the public
name); kept apart so that modules :mod:`.io` imports (:mod:`.hierarchy`) can write files too.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import AnonymizeError

__all__ = ["atomic_write", "atomic_write_text"]


def atomic_write_text(path, text: str, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` via a temp file in the same directory + ``os.replace``."""
    p = Path(path)
    atomic_write(p, lambda fh: fh.write(text.encode(encoding)))


def atomic_write(path, writer) -> None:
    """Write ``path`` atomically: ``writer(fh)`` fills a binary temporary file in the same directory,
    which is synced and moved into place with ``os.replace``; on any error the temporary file is
    removed and ``path`` is untouched. A missing directory is an :class:`AnonymizeError`."""
    p = Path(path)
    d = p.parent if str(p.parent) else Path(".")
    if not d.is_dir():
        raise AnonymizeError(f"output directory does not exist: {d}")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=d)
    try:
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
