"""What keeps a daemon usable over months: its certificate, CA and revocation list, and its data.

* :func:`tls_dates` reads the expiry of the party's certificate, the CA and the revocation list (CRL)
  from the loaded :class:`~parties.identity.tls.Credentials`.
* :func:`tls_problems` / :func:`tls_warnings`: what makes the daemon unusable now (an expired
  certificate or CRL: it then answers ``NOT_SERVING`` and refuses new sessions), and what will within
  :data:`EXPIRY_WARNING` (7 days: logged once a day, exported as ``ppdm_tls_expiring``, shown by
  ``ppdm party status``).
* :func:`data_problems`: a ``[data]`` file or glob that no longer names a readable file.
* :class:`FileStamp` tells when the certificate, key, CA or CRL files changed on disk, so the periodic
  check reloads them without waiting for SIGHUP.

Reloading itself (SIGHUP, or a changed file) is :meth:`parties.runtime.daemon.Daemon.reload_tls`: the
new credentials are checked whole (key matches certificate, CA signature, CRL signed and current, own
certificate not revoked) before anything is swapped; a bad set is refused with one log line and the
daemon keeps the credentials it has. Running sessions are not touched: new TLS handshakes present the
new certificate, new peer calls use new channels, and the revocation list applies to every call from
then on.
"""

from __future__ import annotations

import datetime as _dt
import glob
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509

from parties.identity.tls import Credentials

__all__ = ["EXPIRY_WARNING", "TLSDates", "tls_dates", "tls_problems", "tls_warnings", "data_problems", "FileStamp"]

EXPIRY_WARNING = _dt.timedelta(days=7)


@dataclass(frozen=True)
class TLSDates:
    """Until when the party's certificate, its CA and its revocation list (if any) are valid (UTC)."""

    certificate: _dt.datetime
    ca: _dt.datetime
    crl: _dt.datetime | None

    def items(self) -> list[tuple[str, _dt.datetime]]:
        out = [("certificate", self.certificate), ("ca", self.ca)]
        if self.crl is not None:
            out.append(("crl", self.crl))
        return out

    def as_json(self) -> dict[str, str | None]:
        return {k: (None if v is None else v.isoformat()) for k, v in vars(self).items()}


def tls_dates(creds: Credentials) -> TLSDates:
    cert = x509.load_pem_x509_certificate(creds.cert_pem)
    ca = x509.load_pem_x509_certificate(creds.ca_pem)
    return TLSDates(cert.not_valid_after_utc, ca.not_valid_after_utc, creds.revocations.next_update)


_WHAT = {"certificate": "certificate", "ca": "CA certificate", "crl": "revocation list"}
_FIX = {
    "certificate": "have the CA issue a new one (ppdm ca sign) and send the daemon SIGHUP",
    "ca": "the CA must be renewed and every party re-issued",
    "crl": "fetch a fresh one from the CA (ppdm ca crl) and send the daemon SIGHUP",
}


def tls_problems(dates: TLSDates, now: _dt.datetime | None = None) -> list[str]:
    """What has expired: the daemon cannot serve sessions until it is replaced (one line each)."""
    now = now or _dt.datetime.now(_dt.UTC)
    return [
        f"the party's {_WHAT[k]} expired on {v:%Y-%m-%d %H:%M} UTC: {_FIX[k]}" for k, v in dates.items() if v <= now
    ]


def tls_warnings(dates: TLSDates, now: _dt.datetime | None = None) -> list[str]:
    """What expires within :data:`EXPIRY_WARNING` (one line each)."""
    now = now or _dt.datetime.now(_dt.UTC)
    out = []
    for k, v in dates.items():
        if now < v <= now + EXPIRY_WARNING:
            left = v - now
            days = left.days + left.seconds / 86400
            out.append(f"the party's {_WHAT[k]} expires on {v:%Y-%m-%d %H:%M} UTC (in {days:.1f} days): {_FIX[k]}")
    return out


def data_problems(data: Mapping[str, Any]) -> list[str]:
    """``[data]`` entries whose files are gone or unreadable (file paths and globs only; databases are
    checked when a job opens them)."""
    out = []
    for key, v in data.items():
        kind = getattr(v, "kind", None)
        if isinstance(v, str):
            paths: Iterable[str] = [v]
        elif kind in ("legacy", "file"):
            loc = str(v.location)
            paths = glob.glob(loc) if glob.has_magic(loc) else [loc]
        elif kind == "duckdb":
            paths = [str(v.location)]
        else:
            continue
        paths = list(paths)
        if not paths:
            out.append(f"data {key!r}: no file matches {getattr(v, 'location', v)}")
        elif not all(os.path.exists(p) and os.access(p, os.R_OK) for p in paths):
            out.append(f"data {key!r}: {next(p for p in paths if not os.access(p, os.R_OK))} is missing or unreadable")
    return out


class FileStamp:
    """The (mtime, size, inode) of a set of files, to tell when one changed."""

    def __init__(self, paths: Iterable[Path | None]):
        self.paths = [Path(p) for p in paths if p is not None]
        self.stamp = self._read()

    def _read(self) -> tuple:
        out: list[tuple[int, int, int] | None] = []
        for p in self.paths:
            try:
                st = os.stat(p)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    def changed(self) -> bool:
        """Whether any file changed since the last call (or construction)."""
        now = self._read()
        if now != self.stamp:
            self.stamp = now
            return True
        return False
