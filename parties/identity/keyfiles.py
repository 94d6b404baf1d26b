"""Key and certificate files: written so that no other user can read, replace or redirect them.

* :func:`write_private` (keys): a fresh file opened with
  ``O_CREAT|O_EXCL|O_NOFOLLOW`` and mode 0600 in the target directory, fsynced,
  then linked (or, with ``overwrite``, renamed) to its name — so a symlink
  planted at the path is never followed, an existing key is never overwritten
  by accident, and no one can open the key while it is written. The directory
  is made with mode 0700 when missing and refused when other users may write
  to it (:func:`private_dir`).
* :func:`write_public` (certificates, requests, revocation lists, configs):
  the same atomic create-and-rename, mode 0644 less the umask.
* :func:`read_file`: one clear :class:`TLSError` line per OS error.

Used by :mod:`parties.identity.tls`, :mod:`parties.identity.pki` and the configuration writer.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

__all__ = ["TLSError", "read_file", "private_dir", "write_private", "write_public"]


class TLSError(Exception):
    """A key or certificate is missing, unreadable or does not fit; the message says which file."""


def read_file(path: str | os.PathLike, what: str) -> bytes:
    """Read a file, turning OS errors into one clear :class:`TLSError` line."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise TLSError(f"{what} file not found: {p}") from None
    except IsADirectoryError:
        raise TLSError(f"{what} path is a directory, not a file: {p}") from None
    except PermissionError:
        raise TLSError(f"{what} file is not readable (permission denied): {p}") from None
    except OSError as e:
        raise TLSError(f"cannot read {what} file {p}: {e.strerror or e}") from None


def private_dir(path: str | os.PathLike) -> Path:
    """Make sure directory ``path`` exists and may hold a private key.

    Missing directories are created with mode 0700. An existing directory
    that other users may write to (group/other write bit without the sticky
    bit) is refused: they could replace a key or certificate there.
    """
    d = Path(path)
    missing = []
    p = d
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for m in reversed(missing):
        try:
            m.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise TLSError(f"cannot create directory {m}: {e.strerror or e}") from None
        os.chmod(m, 0o700)  # mkdir's mode is filtered by the umask
    st = d.stat()
    if not stat.S_ISDIR(st.st_mode):
        raise TLSError(f"{d} is not a directory")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise TLSError(f"directory {d} is writable by other users; keep keys in a directory only you can write")
    return d


def _write_new(path: Path, data: bytes, mode: int, overwrite: bool) -> Path:
    """Write ``data`` to a fresh file (``O_EXCL|O_NOFOLLOW``, ``mode``) and move it to ``path`` atomically."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, mode)
    except OSError as e:
        raise TLSError(f"cannot create {path}: {e.strerror or e}") from None
    try:
        try:
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(tmp, path)  # replaces a symlink at path, never follows it
        else:
            try:
                os.link(tmp, path, follow_symlinks=False)  # fails if anything exists at path
            except FileExistsError:
                raise TLSError(f"{path} exists (use --force to overwrite)") from None
    except OSError as e:
        raise TLSError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return path


def write_private(path: str | os.PathLike, data: bytes, *, overwrite: bool = False) -> Path:
    """Write a private key: mode 0600, created with ``O_EXCL|O_NOFOLLOW``, directory per :func:`private_dir`.

    An existing file at ``path`` is an error unless ``overwrite`` (then it is
    replaced atomically, a symlink there included, never followed).
    """
    p = Path(path)
    private_dir(p.parent)
    return _write_new(p, data, 0o600, overwrite)


def write_public(path: str | os.PathLike, data: bytes, *, overwrite: bool = True) -> Path:
    """Write a public file (certificate, CSR, CRL, config) atomically, mode 0644 (before the umask)."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TLSError(f"cannot create directory {p.parent}: {e.strerror or e}") from None
    mode = 0o644 & ~_umask()
    return _write_new(p, data, mode, overwrite)


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m
