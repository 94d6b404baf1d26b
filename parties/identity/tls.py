"""Identity for party daemons: a local CA, party and analyst certificates (pyca/cryptography).

Model
-----
A deployment trusts one certificate authority. Every daemon and every analyst
holds a key and a certificate signed by it, whose X.509 *common name* is its
identity ("alice", "analyst"). Daemons require client certificates (mTLS) and
take the caller's name from the verified certificate, never from a message.
A daemon connecting to peer ``bob`` verifies that the server certificate is
valid *for the name* ``bob`` (``grpc.ssl_target_name_override``), so a party
cannot answer in another party's place.

Keys are ECDSA P-256 (supported by every gRPC TLS stack), certificates carry
the subject alternative names ``DNS:<name>``, ``DNS:localhost`` and
``IP:127.0.0.1`` (plus any extra hosts given). Names are lowercase DNS labels
(``[a-z0-9-]``, ≤ 63 characters) so they can be both common name and DNS name.

Key files are created, never overwritten in place: a fresh file opened with
``O_CREAT|O_EXCL|O_NOFOLLOW`` and mode 0600 in the target directory, then
linked (or, with ``overwrite``, renamed) to its name, so no symlink planted at
the path is followed and no other user can open the key while it is written.
Directories created for keys get mode 0700, and a key is never written into a
directory other users may write to (:mod:`parties.identity.keyfiles`, re-exported here).

Issuing certificates without sharing the CA key (CSRs), revocation lists and
certificate pinning are in :mod:`parties.identity.pki`; :func:`load_credentials` reads a
revocation list and :meth:`Credentials.peer_refusal` applies it, and a pin, to
the certificate a caller presents.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from parties.identity.keyfiles import TLSError, private_dir, read_file, write_private, write_public

__all__ = [
    "TLSError",
    "Credentials",
    "validate_name",
    "create_ca",
    "ensure_ca",
    "load_ca",
    "issue_cert",
    "load_credentials",
    "cert_common_name",
    "check_host",
    "build_cert",
    "issuer_key",
    "cert_fingerprint",
    "format_fingerprint",
    "normalize_fingerprint",
    "Revocations",
    "load_crl",
    "private_dir",
    "write_private",
    "write_public",
    "read_file",
    "private_key_pem",
]

_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
CA_CERT_FILE = "ca.pem"
CA_KEY_FILE = "ca.key"


def validate_name(name: str, what: str = "party name") -> str:
    """Return ``name`` if it is a valid party/analyst name, else raise :class:`TLSError`."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise TLSError(f"invalid {what} {name!r}: use 1-63 lowercase letters, digits and '-' (not at either end)")
    return name


def _load_cert(pem: bytes, where: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem)
    except ValueError:
        raise TLSError(f"{where} is not a PEM certificate") from None


def _load_key(pem: bytes, where: str):
    try:
        return serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as e:
        raise TLSError(f"{where} is not an unencrypted PEM private key ({e})") from None


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def private_key_pem(key) -> bytes:
    """PKCS#8 PEM of a private key, unencrypted (the file's mode protects it)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def create_ca(ca_dir: str | os.PathLike, name: str = "ppdm local CA", days: int = 3650) -> tuple[Path, Path]:
    """Create a self-signed CA in ``ca_dir`` (``ca.pem``, ``ca.key``); return their paths.

    ``ca_dir`` is created with mode 0700; an existing ``ca.key`` is never overwritten.
    """
    d = private_dir(ca_dir)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - _dt.timedelta(minutes=5))
        .not_valid_after(_now() + _dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    key_path = write_private(d / CA_KEY_FILE, private_key_pem(key))
    cert_path = write_public(d / CA_CERT_FILE, cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def issuer_key(ca_cert: x509.Certificate) -> ec.EllipticCurvePublicKey | rsa.RSAPublicKey:
    """The public key of a CA certificate, which must be ECDSA or RSA (what TLS stacks and ppdm sign with)."""
    k = ca_cert.public_key()
    if not isinstance(k, (ec.EllipticCurvePublicKey, rsa.RSAPublicKey)):
        raise TLSError(f"CA key type {type(k).__name__} is not supported (use ECDSA or RSA)")
    return k


def load_ca(cert_path: str | os.PathLike, key_path: str | os.PathLike):
    """Load a CA certificate and its private key; check that they belong together."""
    cert = _load_cert(read_file(cert_path, "CA certificate"), f"CA certificate {cert_path}")
    key = _load_key(read_file(key_path, "CA key"), f"CA key {key_path}")
    if cert.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    ) != key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo):
        raise TLSError(f"CA key {key_path} does not match CA certificate {cert_path}")
    return cert, key


def ensure_ca(ca_dir: str | os.PathLike) -> tuple[Path, Path, bool]:
    """Use the CA in ``ca_dir`` or create it there; return ``(cert, key, created)``."""
    d = Path(ca_dir)
    cert, key = d / CA_CERT_FILE, d / CA_KEY_FILE
    if cert.exists() or key.exists():
        load_ca(cert, key)  # both must be present and match
        return cert, key, False
    c, k = create_ca(d)
    return c, k, True


def issue_cert(
    ca_cert_path: str | os.PathLike,
    ca_key_path: str | os.PathLike,
    name: str,
    out_dir: str | os.PathLike,
    *,
    hosts: Iterable[str] = (),
    server: bool = True,
    days: int = 825,
    overwrite: bool = False,
) -> tuple[Path, Path]:
    """Issue ``out_dir/<name>.pem`` and ``out_dir/<name>.key`` (0600) for ``name``.

    ``server=True`` makes a party certificate (server and client auth);
    ``server=False`` an analyst certificate (client auth only). ``hosts`` adds
    extra DNS names or IP addresses to the subject alternative names. An
    existing key file is an error unless ``overwrite``.
    """
    validate_name(name)
    ca_cert, ca_key = load_ca(ca_cert_path, ca_key_path)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = build_cert(ca_cert, ca_key, name, key.public_key(), hosts=hosts, server=server, days=days)
    out = Path(out_dir)
    key_path = write_private(out / f"{name}.key", private_key_pem(key), overwrite=overwrite)
    cert_path = write_public(out / f"{name}.pem", cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def check_host(h: str, name: str) -> None:
    """A host name a certificate for ``name`` may carry: an IP, ``localhost``, ``name``, or a dotted DNS name.

    A bare label (``alice``) is refused: daemons check a peer's certificate
    against the peer's *name*, so a certificate for bob carrying ``DNS:alice``
    could answer in alice's place.
    """
    try:
        ipaddress.ip_address(h)
        return
    except ValueError:
        pass
    if h in (name, "localhost"):
        return
    labels = h.rstrip(".").split(".")
    if len(labels) < 2 or not all(labels) or len(h) > 253:
        raise TLSError(
            f"host name {h!r} is not allowed in the certificate of {name!r}: use a fully qualified "
            "name (host.example.org) or an IP address; bare names are party names"
        )
    for lab in labels:
        if not (lab.replace("-", "").isalnum() and lab.isascii()) or lab.startswith("-") or lab.endswith("-"):
            raise TLSError(f"host name {h!r} is not a valid DNS name")


def build_cert(
    ca_cert: x509.Certificate,
    ca_key,
    name: str,
    public_key,
    *,
    hosts: Iterable[str] = (),
    server: bool = True,
    days: int = 825,
) -> x509.Certificate:
    """A certificate for ``name`` and ``public_key`` signed by the CA (see :func:`issue_cert`)."""
    validate_name(name)
    sans: list[x509.GeneralName] = []
    seen: set[str] = set()
    hosts = list(hosts)
    for h in hosts:
        check_host(h, name)
    for h in [name, "localhost", "127.0.0.1", *hosts]:
        if h in seen:
            continue
        seen.add(h)
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    eku = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] if server else [])
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - _dt.timedelta(minutes=5))
        .not_valid_after(_now() + _dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(eku), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key(ca_cert)), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return cert


def cert_common_name(pem: bytes) -> str:
    """The subject common name of a PEM certificate."""
    cert = _load_cert(pem, "certificate")
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cns:
        raise TLSError("certificate has no common name")
    return str(cns[0].value)


def cert_fingerprint(cert: bytes | x509.Certificate) -> str:
    """SHA-256 of a certificate's DER encoding, lowercase hex (what ``[peers.NAME] fingerprint`` pins)."""
    c = cert if isinstance(cert, x509.Certificate) else _load_cert(cert, "certificate")
    return hashlib.sha256(c.public_bytes(serialization.Encoding.DER)).hexdigest()


def format_fingerprint(fp: str) -> str:
    """``sha256:AB:CD:…`` — how a fingerprint is shown and may be written."""
    return "sha256:" + ":".join(fp[i : i + 2] for i in range(0, len(fp), 2)).upper()


def normalize_fingerprint(v: str) -> str:
    """A SHA-256 fingerprint as 64 lowercase hex digits; accepts ``sha256:`` prefix, colons, any case."""
    t = v.strip()
    if t.lower().startswith("sha256:"):
        t = t[7:]
    t = t.replace(":", "").lower()
    if len(t) != 64 or any(c not in "0123456789abcdef" for c in t):
        raise TLSError(f"expected a SHA-256 fingerprint (64 hex digits, e.g. from 'ppdm ca sign'), got {v[:80]!r}")
    return t


@dataclass(frozen=True)
class Revocations:
    """A verified X.509 CRL: the revoked serial numbers, where it came from, until when it is current."""

    serials: frozenset[int] = frozenset()
    path: str = ""
    next_update: _dt.datetime | None = None


def load_crl(path: str | os.PathLike, ca_cert: x509.Certificate, *, where: str = "") -> Revocations:
    """Read a PEM (or DER) CRL; it must be signed by ``ca_cert`` and current (``nextUpdate`` not past).

    RFC 5280 §6.3 (CRL validation), reduced to one CA and full CRLs.
    """
    raw = read_file(path, "revocation list")
    try:
        crl = x509.load_pem_x509_crl(raw) if raw.lstrip().startswith(b"-----") else x509.load_der_x509_crl(raw)
    except ValueError:
        raise TLSError(f"revocation list {path} is not an X.509 CRL (PEM or DER)") from None
    if crl.issuer != ca_cert.subject or not crl.is_signature_valid(issuer_key(ca_cert)):
        raise TLSError(f"revocation list {path} is not signed by the CA {where}".rstrip())
    nxt = crl.next_update_utc
    if nxt is not None and nxt < _now():
        raise TLSError(f"revocation list {path} expired on {nxt:%Y-%m-%d %H:%M} UTC; get a fresh one (ppdm ca crl)")
    return Revocations(frozenset(r.serial_number for r in crl), str(path), nxt)


@dataclass(frozen=True)
class Credentials:
    """One identity: its name (the certificate's CN), certificate, key and the trusted CA (PEM bytes)."""

    name: str
    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes
    revocations: Revocations = field(default_factory=Revocations)
    _verdicts: dict = field(default_factory=dict, compare=False, repr=False)

    def peer_refusal(self, cert_pem: bytes | None, name: str, pin: str | None = None) -> str | None:
        """Why the certificate a caller presented must be refused, or None.

        Checks the revocation list this identity was loaded with and, if
        ``pin`` is given, that the certificate's SHA-256 fingerprint is ``pin``.
        A caller whose certificate cannot be read is refused when either check
        applies. Verdicts are cached per certificate.
        """
        if not self.revocations.serials and pin is None:
            return None
        if not cert_pem:
            return f"the certificate of {name!r} is not available to check against the revocation list or pin"
        key = (cert_pem, pin)
        v = self._verdicts.get(key, ...)
        if v is not ...:
            return v
        try:
            c = x509.load_pem_x509_certificate(cert_pem)
        except ValueError:
            v = f"the certificate of {name!r} cannot be parsed"
        else:
            fp = cert_fingerprint(c)
            if c.serial_number in self.revocations.serials:
                v = (
                    f"the certificate of {name!r} (serial {c.serial_number:x}) is revoked "
                    f"({Path(self.revocations.path).name})"
                )
            elif pin is not None and fp != pin:
                v = (
                    f"the certificate of {name!r} does not match its pinned fingerprint "
                    f"(presented {format_fingerprint(fp)[:30]}…, pinned {format_fingerprint(pin)[:30]}…)"
                )
            else:
                v = None
        if len(self._verdicts) > 1024:
            self._verdicts.clear()
        self._verdicts[key] = v
        return v

    def server_credentials(self):
        """gRPC server credentials that require and verify a client certificate (mTLS)."""
        import grpc

        return grpc.ssl_server_credentials(
            [(self.key_pem, self.cert_pem)], root_certificates=self.ca_pem, require_client_auth=True
        )

    def channel_credentials(self):
        """gRPC channel credentials presenting this identity and trusting only the CA."""
        import grpc

        return grpc.ssl_channel_credentials(
            root_certificates=self.ca_pem, private_key=self.key_pem, certificate_chain=self.cert_pem
        )


def check_key_mode(key: str | os.PathLike) -> None:
    """Refuse a private key file that the group or other users may read or write (as ssh does):
    whoever can read it can be this party, and a key accepted "without a word" stays exposed."""
    try:
        mode = os.stat(key).st_mode & 0o777
    except OSError:
        return  # read_file reports a missing or unreadable file in one line
    if mode & 0o077:
        raise TLSError(f"private key {key} is accessible by other users (mode {mode:04o}); run: chmod 600 {key}")


def load_credentials(
    cert: str | os.PathLike,
    key: str | os.PathLike,
    ca: str | os.PathLike,
    *,
    crl: str | os.PathLike | None = None,
) -> Credentials:
    """Load and check an identity: files readable, PEM, key matches certificate, certificate signed by the CA.

    With ``crl``, the revocation list is read and verified (:func:`load_crl`),
    the identity's own certificate must not be on it, and the returned
    credentials refuse peers whose certificates are (:meth:`Credentials.peer_refusal`).
    """
    cert_pem = read_file(cert, "certificate")
    check_key_mode(key)
    key_pem = read_file(key, "private key")
    ca_pem = read_file(ca, "CA certificate")
    c = _load_cert(cert_pem, f"certificate {cert}")
    k = _load_key(key_pem, f"private key {key}")
    ca_cert = _load_cert(ca_pem, f"CA certificate {ca}")
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if c.public_key().public_bytes(serialization.Encoding.DER, spki) != k.public_key().public_bytes(
        serialization.Encoding.DER, spki
    ):
        raise TLSError(f"private key {key} does not match certificate {cert}")
    try:
        c.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, Exception) as e:  # InvalidSignature is not a ValueError
        raise TLSError(f"certificate {cert} is not signed by CA {ca} ({e.__class__.__name__})") from None
    now = _now()
    if c.not_valid_after_utc < now:
        raise TLSError(f"certificate {cert} expired on {c.not_valid_after_utc:%Y-%m-%d}")
    if c.not_valid_before_utc > now:
        raise TLSError(f"certificate {cert} is not valid before {c.not_valid_before_utc:%Y-%m-%d %H:%M} UTC")
    revocations = Revocations()
    if crl is not None:
        revocations = load_crl(crl, ca_cert, where=str(ca))
        if c.serial_number in revocations.serials:
            raise TLSError(f"certificate {cert} is revoked by {crl}")
    return Credentials(cert_common_name(cert_pem), cert_pem, key_pem, ca_pem, revocations)
