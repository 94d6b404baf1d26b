"""``ppdm ca init | sign | revoke | crl | fingerprint``: run the certificate authority apart from the parties.

    ppdm ca init --out ca                                   # ca/ca.key (0600), ca/ca.pem, ca/crl.pem
    ppdm ca sign bob.csr --ca-dir ca -o bob.pem [--days N]  # issue bob's certificate from his request
    ppdm ca sign analyst.csr --ca-dir ca -o analyst.pem --client-only
    ppdm ca revoke bob.pem --ca-dir ca [--reason keyCompromise]   # or --serial HEX; updates ca/crl.pem
    ppdm ca crl --ca-dir ca -o crl.pem [--days 30]          # re-issue the CRL with fresh dates
    ppdm ca fingerprint bob.pem                             # SHA-256 to pin in a peer's party.toml

The CA key never leaves ``--ca-dir``; parties send certificate signing
requests (``ppdm party init --csr``) and receive certificates. See
:mod:`parties.identity.pki`.
"""

from __future__ import annotations

from parties.cli.common import CLIError

__all__ = ["register"]


def register(sub) -> None:
    p = sub.add_parser(
        "ca",
        help="run the certificate authority: init, sign requests, revoke, revocation list",
        description="The certificate authority of a deployment, kept apart from the parties: "
        "parties send certificate signing requests (ppdm party init --csr), never see the CA key.",
    )
    csub = p.add_subparsers(dest="ca_cmd", metavar="ACTION")

    i = csub.add_parser("init", help="create a CA: ca.key (0600), ca.pem and an empty crl.pem")
    i.add_argument("--out", default="ca", help="directory of the CA (created with mode 0700; default ./ca)")
    i.add_argument("--name", default="ppdm CA", help="the CA certificate's common name")
    i.add_argument("--crl-days", type=int, default=30, help="validity of the revocation list (default 30 days)")
    i.set_defaults(func=cmd_init)

    s = csub.add_parser("sign", help="issue a certificate from a party's (or analyst's) signing request")
    s.add_argument("csr", help="the certificate signing request (NAME.csr)")
    s.add_argument("--ca-dir", default="ca", help="directory of the CA (default ./ca)")
    s.add_argument("-o", "--out", required=True, help="where to write the certificate (NAME.pem)")
    s.add_argument("--days", type=int, default=825, help="validity in days (default 825)")
    s.add_argument("--client-only", action="store_true", help="an analyst's certificate (client authentication only)")
    s.add_argument("--force", action="store_true", help="overwrite an existing output file")
    s.set_defaults(func=cmd_sign)

    r = csub.add_parser("revoke", help="revoke a certificate: add it to the CA's revocation list")
    r.add_argument("cert", nargs="?", help="the certificate to revoke (or give --serial)")
    r.add_argument("--serial", help="serial number of the certificate to revoke (hex)")
    r.add_argument("--ca-dir", default="ca", help="directory of the CA (default ./ca)")
    r.add_argument("--reason", default="unspecified", help="e.g. key_compromise, superseded (default unspecified)")
    r.add_argument("--days", type=int, default=30, help="validity of the re-issued revocation list (default 30)")
    r.set_defaults(func=cmd_revoke)

    c = csub.add_parser("crl", help="re-issue the revocation list (fresh dates), e.g. before it expires")
    c.add_argument("--ca-dir", default="ca", help="directory of the CA (default ./ca)")
    c.add_argument("-o", "--out", help="also write it here (the list of record is CA_DIR/crl.pem)")
    c.add_argument("--days", type=int, default=30, help="validity in days (default 30)")
    c.set_defaults(func=cmd_crl)

    f = csub.add_parser("fingerprint", help="print a certificate's SHA-256 fingerprint (for [peers.NAME] fingerprint)")
    f.add_argument("cert")
    f.set_defaults(func=cmd_fingerprint)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _tls(fn, *a, **kw):
    from parties.identity.tls import TLSError

    try:
        return fn(*a, **kw)
    except TLSError as e:
        raise CLIError(str(e)) from None


def cmd_init(args) -> int:
    from parties.identity.pki import init_ca

    made = _tls(init_ca, args.out, name=args.name, crl_days=args.crl_days)
    for f in made.values():
        print(f"wrote {f}")
    print(f"keep {made['key']} here; give every party {made['cert']} (and {made['crl']})")
    print("next: each party runs 'ppdm party init --name NAME --csr' and sends you NAME.csr")
    return 0


def cmd_sign(args) -> int:
    from parties.identity.pki import sign_csr
    from parties.identity.tls import cert_fingerprint, format_fingerprint

    path, name, hosts = _tls(
        sign_csr, args.csr, args.ca_dir, args.out, days=args.days, client_only=args.client_only, overwrite=args.force
    )
    role = "analyst (client only)" if args.client_only else "party (server and client)"
    extra = f", extra hosts {', '.join(hosts)}" if hosts else ""
    print(f"wrote {path}: {role} certificate for {name!r}, {args.days} days{extra}")
    print(f"fingerprint: {format_fingerprint(cert_fingerprint(path.read_bytes()))}")
    return 0


def cmd_revoke(args) -> int:
    from parties.identity.pki import revoke

    serial = None
    if args.serial is not None:
        try:
            serial = int(args.serial.replace(":", ""), 16)
        except ValueError:
            raise CLIError(f"--serial must be hexadecimal, got {args.serial!r}") from None
    if (args.cert is None) == (serial is None):
        raise CLIError("give the certificate to revoke or --serial HEX (one of them)")
    got, crl = _tls(revoke, args.ca_dir, cert=args.cert, serial=serial, reason=args.reason, days=args.days)
    print(f"revoked serial {got:x}; wrote {crl}")
    print("next: copy it to every party ([party] crl in party.toml) and restart their daemons")
    return 0


def cmd_crl(args) -> int:
    from parties.identity.pki import issue_crl

    path = _tls(issue_crl, args.ca_dir, days=args.days, out=args.out)
    print(f"wrote {path} (valid {args.days} days)")
    return 0


def cmd_fingerprint(args) -> int:
    from parties.identity.pki import fingerprint_of
    from parties.identity.tls import format_fingerprint

    print(format_fingerprint(_tls(fingerprint_of, args.cert)))
    return 0
