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
``IP:127.0.0.1`` (plus any extra hosts given), and private keys are written with
mode 0600. Names are lowercase DNS labels (``[a-z0-9-]``, ≤ 63 characters) so
they can be both common name and DNS name.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

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
    "write_private",
    "read_file",
]

_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
CA_CERT_FILE = "ca.pem"
CA_KEY_FILE = "ca.key"


class TLSError(Exception):
    """A key or certificate is missing, unreadable or does not fit; the message says which file."""


def validate_name(name: str, what: str = "party name") -> str:
    """Return ``name`` if it is a valid party/analyst name, else raise :class:`TLSError`."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise TLSError(f"invalid {what} {name!r}: use 1-63 lowercase letters, digits and '-' (not at either end)")
    return name


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


def write_private(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` readable by the owner only (mode 0600)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
    finally:
        os.close(fd)
    return p


def _write_public(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


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


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def create_ca(ca_dir: str | os.PathLike, name: str = "ppdm local CA", days: int = 3650) -> tuple[Path, Path]:
    """Create a self-signed CA in ``ca_dir`` (``ca.pem``, ``ca.key``); return their paths."""
    d = Path(ca_dir)
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
    key_path = write_private(d / CA_KEY_FILE, _key_pem(key))
    cert_path = _write_public(d / CA_CERT_FILE, cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


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
) -> tuple[Path, Path]:
    """Issue ``out_dir/<name>.pem`` and ``out_dir/<name>.key`` (0600) for ``name``.

    ``server=True`` makes a party certificate (server and client auth);
    ``server=False`` an analyst certificate (client auth only). ``hosts`` adds
    extra DNS names or IP addresses to the subject alternative names.
    """
    validate_name(name)
    ca_cert, ca_key = load_ca(ca_cert_path, ca_key_path)
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    seen: set[str] = set()
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
        .public_key(key.public_key())
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
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    out = Path(out_dir)
    key_path = write_private(out / f"{name}.key", _key_pem(key))
    cert_path = _write_public(out / f"{name}.pem", cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def cert_common_name(pem: bytes) -> str:
    """The subject common name of a PEM certificate."""
    cert = _load_cert(pem, "certificate")
    cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if not cns:
        raise TLSError("certificate has no common name")
    return str(cns[0].value)


@dataclass(frozen=True)
class Credentials:
    """One identity: its name (the certificate's CN), certificate, key and the trusted CA (PEM bytes)."""

    name: str
    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes

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


def load_credentials(cert: str | os.PathLike, key: str | os.PathLike, ca: str | os.PathLike) -> Credentials:
    """Load and check an identity: files readable, PEM, key matches certificate, certificate signed by the CA."""
    cert_pem = read_file(cert, "certificate")
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
    return Credentials(cert_common_name(cert_pem), cert_pem, key_pem, ca_pem)
