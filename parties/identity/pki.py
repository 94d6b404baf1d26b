"""Certificates without sharing the CA key: CSRs, signing, revocation lists.

The CA operator and every party keep their own private keys:

1. ``ppdm ca init --out DIR`` — the CA (``ca.key`` 0600 in a 0700 directory,
   ``ca.pem``, an empty ``crl.pem``): :func:`init_ca`.
2. ``ppdm party init --name bob --csr`` — bob makes his key and a PKCS#10
   certificate signing request (RFC 2986) where he is, without any CA key:
   :func:`make_csr`.
3. ``ppdm ca sign bob.csr --ca-dir DIR -o bob.pem`` — the CA checks the request
   (signature, name, key type, requested host names) and issues the
   certificate: :func:`sign_csr`.
4. ``ppdm party init --cert bob.pem --key bob.key --ca-cert ca.pem`` — bob
   assembles his ``party.toml``.

Revocation: ``ppdm ca revoke`` adds a certificate's serial number to the CA's
X.509 CRL (RFC 5280 §5) and ``ppdm ca crl`` re-issues it with fresh dates
(:func:`revoke`, :func:`issue_crl`); each daemon reads its copy at start
(``[party] crl``, :func:`parties.identity.tls.load_crl`) and refuses callers whose
certificates are on it. The CRL in the CA directory is the list of record.

Keys are ECDSA P-256 like the rest of :mod:`parties.identity.tls`; requests with P-384
or RSA ≥ 2048-bit keys are signed too.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
from collections.abc import Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from parties.identity.tls import (
    CA_CERT_FILE,
    CA_KEY_FILE,
    TLSError,
    build_cert,
    cert_fingerprint,
    check_host,
    create_ca,
    issuer_key,
    load_ca,
    private_dir,
    private_key_pem,
    read_file,
    validate_name,
    write_private,
    write_public,
)

__all__ = [
    "CRL_FILE",
    "DEFAULT_CRL_DAYS",
    "init_ca",
    "make_csr",
    "read_csr",
    "sign_csr",
    "revoke",
    "issue_crl",
    "read_cert",
]

CRL_FILE = "crl.pem"
DEFAULT_CRL_DAYS = 30
MAX_CERT_DAYS = 3650
_REASONS = {r.name: r for r in x509.ReasonFlags if r not in (x509.ReasonFlags.remove_from_crl,)}


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


def init_ca(out: str | os.PathLike, *, name: str = "ppdm CA", crl_days: int = DEFAULT_CRL_DAYS) -> dict[str, Path]:
    """Create a CA in ``out`` (0700): ``ca.key`` (0600), ``ca.pem`` and an empty ``crl.pem``.

    Refuses a directory that already holds a CA key.
    """
    d = Path(out)
    if (d / CA_KEY_FILE).exists() or (d / CA_CERT_FILE).exists():
        raise TLSError(f"{d} already holds a CA ({CA_CERT_FILE}/{CA_KEY_FILE}); choose another directory")
    cert, key = create_ca(d, name=name)
    crl = issue_crl(d, days=crl_days)
    return {"cert": cert, "key": key, "crl": crl}


def make_csr(
    name: str, out_dir: str | os.PathLike, *, hosts: Iterable[str] = (), overwrite: bool = False
) -> tuple[Path, Path]:
    """Make ``out_dir/NAME.key`` (0600, fresh) and ``out_dir/NAME.csr`` for ``name``; no CA key involved.

    ``hosts`` are extra DNS names / IP addresses asked for in the certificate
    (the CA decides; see :func:`sign_csr`).
    """
    validate_name(name)
    hosts = list(hosts)
    for h in hosts:
        check_host(h, name)
    out = private_dir(out_dir)
    key = ec.generate_private_key(ec.SECP256R1())
    b = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
    if hosts:
        b = b.add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
    csr = b.sign(key, hashes.SHA256())
    key_path = write_private(out / f"{name}.key", private_key_pem(key), overwrite=overwrite)
    csr_path = write_public(out / f"{name}.csr", csr.public_bytes(serialization.Encoding.PEM), overwrite=True)
    return key_path, csr_path


def _general_name(h: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(h))
    except ValueError:
        return x509.DNSName(h)


def read_csr(path: str | os.PathLike) -> x509.CertificateSigningRequest:
    """Read a PEM/DER CSR and check its self-signature."""
    raw = read_file(path, "certificate signing request")
    try:
        csr = x509.load_pem_x509_csr(raw) if raw.lstrip().startswith(b"-----") else x509.load_der_x509_csr(raw)
    except ValueError:
        raise TLSError(f"{path} is not a certificate signing request (PEM or DER)") from None
    if not csr.is_signature_valid:
        raise TLSError(f"certificate signing request {path} has an invalid signature")
    return csr


def _csr_name(csr: x509.CertificateSigningRequest, path: str | os.PathLike) -> str:
    cns = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if len(cns) != 1:
        raise TLSError(f"certificate signing request {path} must have exactly one common name (the party name)")
    name = str(cns[0].value)
    validate_name(name, "name in the certificate signing request")
    return name


def _check_key(pub, path: str | os.PathLike) -> None:
    if isinstance(pub, ec.EllipticCurvePublicKey) and isinstance(pub.curve, (ec.SECP256R1, ec.SECP384R1)):
        return
    if isinstance(pub, rsa.RSAPublicKey) and pub.key_size >= 2048:
        return
    raise TLSError(f"certificate signing request {path}: key must be ECDSA P-256/P-384 or RSA >= 2048 bits")


def _requested_hosts(csr: x509.CertificateSigningRequest) -> list[str]:
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    hosts: list[str] = [str(v) for v in san.get_values_for_type(x509.DNSName)]
    hosts += [str(v) for v in san.get_values_for_type(x509.IPAddress)]
    if len(hosts) != len(list(san)):
        raise TLSError("certificate signing request asks for names other than DNS names and IP addresses")
    return hosts


def sign_csr(
    csr_path: str | os.PathLike,
    ca_dir: str | os.PathLike,
    out: str | os.PathLike,
    *,
    days: int = 825,
    client_only: bool = False,
    overwrite: bool = False,
) -> tuple[Path, str, list[str]]:
    """Issue the certificate a CSR asks for; return ``(path, name, hosts)``.

    Checks: the CSR's signature; exactly one common name, a valid party name;
    an accepted key type; requested host names per :func:`parties.identity.tls.check_host`. The
    certificate is for server and client authentication (a party) unless
    ``client_only`` (an analyst).
    """
    if not 1 <= days <= MAX_CERT_DAYS:
        raise TLSError(f"--days must be between 1 and {MAX_CERT_DAYS}, got {days}")
    csr = read_csr(csr_path)
    name = _csr_name(csr, csr_path)
    pub = csr.public_key()
    _check_key(pub, csr_path)
    hosts = _requested_hosts(csr)
    for h in hosts:
        check_host(h, name)
    d = Path(ca_dir)
    ca_cert, ca_key = load_ca(d / CA_CERT_FILE, d / CA_KEY_FILE)
    cert = build_cert(ca_cert, ca_key, name, pub, hosts=hosts, server=not client_only, days=days)
    path = write_public(out, cert.public_bytes(serialization.Encoding.PEM), overwrite=overwrite)
    return path, name, hosts


def read_cert(path: str | os.PathLike) -> x509.Certificate:
    raw = read_file(path, "certificate")
    try:
        return x509.load_pem_x509_certificate(raw)
    except ValueError:
        raise TLSError(f"{path} is not a PEM certificate") from None


def _current_entries(d: Path, ca_cert: x509.Certificate) -> tuple[list[x509.RevokedCertificate], int]:
    """The CA's current CRL entries and CRL number (none if it has no CRL yet)."""
    p = d / CRL_FILE
    if not p.exists():
        return [], 0
    raw = read_file(p, "revocation list")
    try:
        crl = x509.load_pem_x509_crl(raw)
    except ValueError:
        raise TLSError(f"{p} is not a PEM CRL") from None
    if not crl.is_signature_valid(issuer_key(ca_cert)):
        raise TLSError(f"{p} is not signed by this CA")
    try:
        number = crl.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number
    except x509.ExtensionNotFound:
        number = 0
    return list(crl), number


def issue_crl(
    ca_dir: str | os.PathLike,
    *,
    days: int = DEFAULT_CRL_DAYS,
    out: str | os.PathLike | None = None,
    add: x509.RevokedCertificate | None = None,
) -> Path:
    """(Re-)issue the CA's CRL: its current entries (plus ``add``), valid ``days`` days.

    Written to ``ca_dir/crl.pem`` (the list of record) and, if given, ``out``.
    """
    if not 1 <= days <= 3650:
        raise TLSError(f"--days must be between 1 and 3650, got {days}")
    d = Path(ca_dir)
    ca_cert, ca_key = load_ca(d / CA_CERT_FILE, d / CA_KEY_FILE)
    entries, number = _current_entries(d, ca_cert)
    if add is not None:
        entries.append(add)
    now = _now()
    b = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now - _dt.timedelta(minutes=5))
        .next_update(now + _dt.timedelta(days=days))
        .add_extension(x509.CRLNumber(number + 1), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key(ca_cert)), critical=False)
    )
    for e in entries:
        b = b.add_revoked_certificate(e)
    pem = b.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
    record = write_public(d / CRL_FILE, pem)
    if out is not None and Path(out).resolve() != record.resolve():
        return write_public(out, pem)
    return record


def revoke(
    ca_dir: str | os.PathLike,
    *,
    cert: str | os.PathLike | None = None,
    serial: int | None = None,
    reason: str = "unspecified",
    days: int = DEFAULT_CRL_DAYS,
) -> tuple[int, Path]:
    """Revoke a certificate (a file issued by this CA, or its ``serial``); return ``(serial, crl path)``."""
    d = Path(ca_dir)
    ca_cert, _ = load_ca(d / CA_CERT_FILE, d / CA_KEY_FILE)
    if (cert is None) == (serial is None):
        raise TLSError("give the certificate to revoke or its --serial (one of them)")
    if cert is not None:
        c = read_cert(cert)
        if c.issuer != ca_cert.subject:
            raise TLSError(f"{cert} was not issued by this CA")
        try:
            c.verify_directly_issued_by(ca_cert)
        except Exception:
            raise TLSError(f"{cert} was not issued by this CA") from None
        serial = c.serial_number
    assert serial is not None
    if reason not in _REASONS:
        raise TLSError(f"unknown revocation reason {reason!r} (one of: {', '.join(sorted(_REASONS))})")
    entries, _ = _current_entries(d, ca_cert)
    if any(e.serial_number == serial for e in entries):
        raise TLSError(f"serial {serial:x} is already revoked")
    rb = x509.RevokedCertificateBuilder().serial_number(serial).revocation_date(_now())
    if reason != "unspecified":
        rb = rb.add_extension(x509.CRLReason(_REASONS[reason]), critical=False)
    path = issue_crl(d, days=days, add=rb.build())
    return serial, path


def fingerprint_of(path: str | os.PathLike) -> str:
    """The SHA-256 fingerprint of a certificate file (lowercase hex)."""
    return cert_fingerprint(read_cert(path))
