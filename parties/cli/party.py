"""``ppdm party init | analyst | serve | status``: set up and run a party daemon.

Certificates without sharing the CA key (see :mod:`parties.identity.pki` and ``ppdm ca``)::

    ppdm ca init --out ca                                  # the CA operator, once
    ppdm party init --name bob --csr                       # bob: bob/bob.key + bob/bob.csr, no CA key
    ppdm ca sign bob/bob.csr --ca-dir ca -o bob.pem        # the CA operator signs bob's request
    ppdm party init --cert bob.pem --key bob/bob.key --ca-cert ca/ca.pem \\
                    --listen 0.0.0.0:50051 --peer alice=alice.example.org:50051 --data transactions=bob.dat

One operator for everything (a local trial): ``ppdm party init --name alice ...``
creates the CA in ``--ca-dir`` if missing and issues alice's certificate.

    ppdm party analyst --party alice=HOST:PORT --party bob=HOST:PORT   # the analyst's certificate + analyst.toml
    ppdm party serve --config alice/party.toml
    ppdm party status --config alice/party.toml           # Health of every configured peer
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from parties.cli.common import CLIError

__all__ = ["register"]


DEFAULT_MIN_SUPPORT_FLOOR = "1/100"


def _init_publish(hierarchies: str | None, max_releases: int | None) -> dict | None:
    """The ``[publish]`` a fresh party.toml gets (:mod:`parties.guards.releases`), or None for the defaults."""
    out: dict = {}
    if hierarchies is not None:
        d = Path(hierarchies).resolve()
        if not d.is_dir():
            raise CLIError(f"--publish-hierarchies {hierarchies}: not a directory")
        out["hierarchies"] = str(d)
    if max_releases is not None:
        if max_releases < 1:
            raise CLIError(f"--max-releases must be at least 1, got {max_releases}")
        out["max_releases"] = max_releases
    return out or None


def _init_policy(min_parties: int | None, floor: str) -> dict | None:
    """The ``[policy]`` a fresh party.toml gets: ``min_parties`` if given, a ``min_support`` floor on mining."""
    from parties.ratio import exact_ratio

    policy: dict = {} if min_parties is None else {"min_parties": min_parties}
    if floor.strip().lower() != "none":
        try:
            f = exact_ratio(floor, "--min-support-floor")
        except ValueError:
            raise CLIError(
                f"--min-support-floor must be a number in (0, 1] (0.01 or 1/100) or none, got {floor!r}"
            ) from None
        if not 0 < f <= 1:
            raise CLIError(f"--min-support-floor must be in (0, 1], got {floor}")
        rule = {"floor": {"min_support": floor.strip()}}
        policy["job"] = {"mine.horizontal": rule, "mine.vertical": rule}
    return policy or None


def _kv(s: str, what: str) -> tuple[str, str]:
    k, sep, v = s.partition("=")
    if not sep or not k or not v:
        raise CLIError(f"{what} must look like NAME=VALUE, got {s!r}")
    return k, v


def register(sub) -> None:
    p = sub.add_parser(
        "party",
        help="set up, run and check a party daemon",
        description="Set up, run and check a ppdm party daemon (mTLS gRPC).",
    )
    psub = p.add_subparsers(dest="party_cmd", metavar="ACTION")

    i = psub.add_parser(
        "init",
        help="create a party's key and certificate request, or its party.toml",
        description="Three ways: --csr (key + certificate signing request, no CA key involved); "
        "--cert/--key/--ca-cert (party.toml around a certificate the CA issued); or, for a local trial, "
        "neither (a CA in --ca-dir, created if missing, issues the certificate here).",
    )
    i.add_argument("--name", help="party name (= certificate common name); with --cert taken from the certificate")
    i.add_argument("--csr", action="store_true", help="write NAME.key and NAME.csr only (send the .csr to the CA)")
    i.add_argument("--ca-dir", default="ca", help="CA directory (ca.pem, ca.key); created if missing (default ./ca)")
    i.add_argument("--ca-cert", help="the CA certificate (with --cert, or with --ca-key to issue here)")
    i.add_argument("--ca-key", help="the CA's private key (with --ca-cert)")
    i.add_argument("--cert", help="this party's certificate, issued by the CA (with --key and --ca-cert)")
    i.add_argument("--key", help="this party's private key (with --cert)")
    i.add_argument("--crl", help="the CA's revocation list (copied next to party.toml; read by the daemon at start)")
    i.add_argument("--out", help="directory for the party's files (default ./NAME)")
    i.add_argument("--listen", help="HOST:PORT to listen on (default 127.0.0.1:50051)")
    i.add_argument("--peer", action="append", default=[], metavar="NAME=HOST:PORT", help="a peer (repeatable)")
    i.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="NAME=SHA256|CERT",
        help="pin a peer's certificate: its SHA-256 fingerprint, or its certificate file (repeatable)",
    )
    i.add_argument("--analyst", action="append", metavar="NAME", help="analyst allowed to start jobs (default analyst)")
    i.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="KEY=PATH",
        help="a local data path, relative to where this command runs (repeatable)",
    )
    i.add_argument(
        "--data-columns",
        action="append",
        default=[],
        metavar="KEY=TRANSACTION,ITEM",
        help="the key and item columns of --data KEY (a CSV/Parquet table, one row per key and item): "
        "written as [data.KEY] (docs/data-sources.md)",
    )
    i.add_argument("--min-parties", type=int, metavar="N", help="policy: parties a sum-style session needs (default 3)")
    i.add_argument(
        "--min-support-floor",
        default=DEFAULT_MIN_SUPPORT_FLOOR,
        metavar="RATIO",
        help=f"policy: the smallest min_support a joint mining job may ask (default {DEFAULT_MIN_SUPPORT_FLOOR}; "
        "'none' for no floor). At tiny supports nearly every itemset is frequent, so the output is close to the "
        "parties' exact counts (a vertical job returns each party's own 1- and 2-itemset counts)",
    )
    i.add_argument(
        "--publish-hierarchies",
        metavar="DIR",
        help="joint publishing: accept only the hierarchies in DIR (ARX files *_hierarchy_<column>.csv or "
        "<column>.csv), written as [publish] hierarchies (docs/joint-publishing.md)",
    )
    i.add_argument(
        "--max-releases",
        type=int,
        metavar="N",
        help="joint publishing: distinct releases of one data key this party joins (default 1)",
    )
    i.add_argument("--host", action="append", default=[], metavar="HOST", help="extra DNS name/IP in the certificate")
    i.add_argument("--force", action="store_true", help="overwrite an existing party.toml and key")
    i.set_defaults(func=cmd_init)

    a = psub.add_parser("analyst", help="the analyst's client certificate (or its request) and analyst.toml")
    a.add_argument("--name", help="analyst name (default analyst; with --cert taken from the certificate)")
    a.add_argument("--csr", action="store_true", help="write NAME.key and NAME.csr only (ppdm ca sign --client-only)")
    a.add_argument("--cert", help="the analyst's certificate issued by the CA (with --key and --ca-cert)")
    a.add_argument("--key", help="the analyst's private key (with --cert)")
    a.add_argument("--ca-cert", help="the CA certificate (with --cert)")
    a.add_argument("--ca-dir", default="ca", help="CA directory for a local trial (default ./ca)")
    a.add_argument("--out", help="directory (default ./NAME)")
    a.add_argument(
        "--party",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="a party to run jobs on, in protocol order (repeatable); writes analyst.toml for 'ppdm mine --parties'",
    )
    a.add_argument("--force", action="store_true", help="overwrite an existing key and analyst.toml")
    a.set_defaults(func=cmd_analyst)

    s = psub.add_parser("serve", help="run the daemon until SIGTERM/SIGINT")
    s.add_argument("--config", required=True, help="path of party.toml")
    s.add_argument(
        "--log-level", default=None, help="DEBUG, INFO, WARNING or ERROR (default: $PPDM_LOG_LEVEL, else INFO)"
    )
    s.add_argument(
        "--log-format",
        default="text",
        help="text (default) or json: one object a line with time, level, session, job, peer, event",
    )
    s.set_defaults(func=cmd_serve)

    st = psub.add_parser("status", help="ask every configured peer for Health, as this party")
    st.add_argument("--config", required=True)
    st.add_argument("--timeout", type=float, default=3.0)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _data_paths(specs: list[str]) -> dict[str, Any]:
    """``--data KEY=PATH``: each PATH resolved against the directory the command runs in."""
    data = {}
    for spec in specs:
        k, v = _kv(spec, "--data")
        path = Path(v).expanduser().resolve()
        if not path.exists():
            print(f"note: --data {k}: {path} does not exist yet", file=sys.stderr)
        data[k] = str(path)
    return data


def _data_tables(data: dict[str, Any], specs: list[str]) -> dict[str, Any]:
    """``--data-columns KEY=TRANSACTION,ITEM``: the keyed table ``[data.KEY]`` (docs/data-sources.md)."""
    for spec in specs:
        k, v = _kv(spec, "--data-columns")
        cols = [c.strip() for c in v.split(",")]
        if len(cols) != 2 or not all(cols):
            raise CLIError(f"--data-columns {spec}: expected KEY=TRANSACTION_COLUMN,ITEM_COLUMN")
        if k not in data:
            raise CLIError(f"--data-columns {k}: give its file with --data {k}=PATH")
        data[k] = {"path": data[k], "transaction": cols[0], "item": cols[1]}
    return data


def _pins(specs: list[str]) -> dict[str, str]:
    from parties.identity.tls import TLSError, format_fingerprint, normalize_fingerprint

    pins = {}
    for spec in specs:
        name, value = _kv(spec, "--pin")
        if Path(value).is_file():
            from parties.identity.pki import fingerprint_of

            fp = fingerprint_of(value)
        else:
            try:
                fp = normalize_fingerprint(value)
            except TLSError as e:
                raise CLIError(f"--pin {name}: {e}") from None
        pins[name] = format_fingerprint(fp)
    return pins


def _issued_cert(cert: str, key: str, ca_cert: str, *, server: bool):
    """Load an issued certificate + key + CA, check it fits; return the credentials."""
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from parties.identity.tls import load_credentials

    creds = load_credentials(cert, key, ca_cert)
    c = x509.load_pem_x509_certificate(creds.cert_pem)
    try:
        eku = c.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        serves = ExtendedKeyUsageOID.SERVER_AUTH in eku
    except x509.ExtensionNotFound:
        serves = True
    if server and not serves:
        raise CLIError(f"{cert} is a client-only (analyst) certificate; a party needs one from 'ppdm ca sign'")
    return creds


def _relative(f: Path, out: Path) -> str:
    """``f`` as written in a config file in ``out``: its bare name when it sits there, else its full path."""
    return f.name if f.resolve().parent == out.resolve() else str(f.resolve())


def _check_name(given: str | None, actual: str, cert: str) -> None:
    if given is not None and given != actual:
        raise CLIError(f"certificate {cert} is for {actual!r}, not {given!r}")


def cmd_init(args) -> int:
    from parties.config import ConfigError, parse_address, write_config
    from parties.identity.pki import make_csr
    from parties.identity.tls import TLSError, ensure_ca, issue_cert, load_ca, validate_name, write_public

    made: list[Path] = []
    try:
        if args.csr:
            if args.cert or args.key or args.ca_cert or args.ca_key:
                raise CLIError("--csr makes a new key and request; it takes no --cert/--key/--ca-cert/--ca-key")
            given = [f for f in ("peer", "data", "pin", "analyst") if getattr(args, f)]
            publish_given = args.publish_hierarchies is not None or args.max_releases is not None
            if given or args.listen or args.min_parties is not None or args.crl or publish_given:
                raise CLIError(
                    "with --csr give only --name, --out and --host; the rest goes to the second step "
                    "(ppdm party init --cert NAME.pem --key NAME.key --ca-cert ca.pem ...)"
                )
            if not args.name:
                raise CLIError("--csr needs --name")
            validate_name(args.name)
            out = Path(args.out or args.name)
            key, csr = make_csr(args.name, out, hosts=args.host, overwrite=args.force)
            print(f"wrote {key} (private: keep it here)\nwrote {csr}")
            print(f"next: send {csr} to the CA operator: ppdm ca sign {csr.name} --ca-dir CA_DIR -o {args.name}.pem")
            print(
                f"then: ppdm party init --cert {args.name}.pem --key {key} --ca-cert ca.pem --listen HOST:PORT --peer ..."
            )
            return 0
        listen = args.listen or "127.0.0.1:50051"
        try:
            parse_address(listen, "--listen")
        except ConfigError as e:
            raise CLIError(str(e)) from None
        if args.min_parties is not None and args.min_parties < 2:
            raise CLIError(f"--min-parties must be at least 2, got {args.min_parties}")
        policy = _init_policy(args.min_parties, args.min_support_floor)
        publish = _init_publish(args.publish_hierarchies, args.max_releases)
        peers = dict(_kv(x, "--peer") for x in args.peer)
        data = _data_tables(_data_paths(args.data), args.data_columns)
        pins = _pins(args.pin)
        unknown = sorted(set(pins) - set(peers))
        if unknown:
            raise CLIError(f"--pin {unknown[0]}: not given as a --peer")
        if args.cert or args.key:
            if not (args.cert and args.key and args.ca_cert):
                raise CLIError("--cert needs --key and --ca-cert")
            if args.ca_key:
                raise CLIError("--ca-key is not needed with --cert (the certificate is already issued)")
            creds = _issued_cert(args.cert, args.key, args.ca_cert, server=True)
            _check_name(args.name, creds.name, args.cert)
            name = creds.name
            out = Path(args.out or name)
            out.mkdir(parents=True, exist_ok=True)
            cert = Path(args.cert).resolve()
            if cert.parent != out.resolve():
                cert = write_public(out / f"{name}.pem", creds.cert_pem, overwrite=True)
                made.append(cert)
            key = Path(args.key).resolve()
            ca_cert = Path(args.ca_cert)
        else:
            if not args.name:
                raise CLIError("--name is required (or --cert with an issued certificate)")
            name = validate_name(args.name)
            out = Path(args.out or name)
            if bool(args.ca_cert) != bool(args.ca_key):
                raise CLIError("--ca-cert and --ca-key go together")
            if args.ca_cert:
                ca_cert, ca_key = Path(args.ca_cert), Path(args.ca_key)
                load_ca(ca_cert, ca_key)
            else:
                ca_cert, ca_key, created = ensure_ca(args.ca_dir)
                if created:
                    made += [ca_cert, ca_key]
            cfg = out / "party.toml"
            if cfg.exists() and not args.force:
                raise CLIError(f"{cfg} exists (use --force to overwrite)")
            cert, key = issue_cert(ca_cert, ca_key, name, out, hosts=args.host, overwrite=args.force)
            made += [cert, key]
        cfg = out / "party.toml"
        if cfg.exists() and not args.force:
            raise CLIError(f"{cfg} exists (use --force to overwrite)")
        local_ca = out / "ca.pem"
        if ca_cert.resolve() != local_ca.resolve():
            write_public(local_ca, ca_cert.read_bytes(), overwrite=True)
            made.append(local_ca)
        crl = None
        if args.crl:
            from parties.identity.pki import read_cert
            from parties.identity.tls import load_crl, read_file

            load_crl(args.crl, read_cert(local_ca))  # signed by this CA and current
            crl = write_public(out / "crl.pem", read_file(args.crl, "revocation list"), overwrite=True)
            made.append(crl)
        write_config(
            cfg,
            name=name,
            listen=listen,
            cert=cert.name if cert.parent.resolve() == out.resolve() else cert,
            key=key.name if key.parent.resolve() == out.resolve() else key,
            ca="ca.pem",
            peers=peers,
            analysts=args.analyst or ["analyst"],
            data=data,
            crl=None if crl is None else crl.name,
            pins=pins,
            policy=policy,
            overwrite=args.force,
            publish=publish,
        )
        made.append(cfg)
    except (TLSError, ConfigError) as e:
        raise CLIError(str(e)) from None
    from parties.identity.tls import cert_fingerprint, format_fingerprint

    for f in made:
        print(f"wrote {f}")
    print(f"certificate fingerprint (peers may pin it): {format_fingerprint(cert_fingerprint(cert.read_bytes()))}")
    print(f"next: ppdm party serve --config {cfg}")
    return 0


def cmd_analyst(args) -> int:
    from parties.config import dump_toml
    from parties.identity.pki import make_csr
    from parties.identity.tls import TLSError, ensure_ca, issue_cert, validate_name, write_public

    try:
        if args.csr:
            if args.cert or args.key or args.ca_cert or args.party:
                raise CLIError("--csr makes a new key and request; give --cert/--key/--ca-cert/--party afterwards")
            name = validate_name(args.name or "analyst", "analyst name")
            key, csr = make_csr(name, Path(args.out or name), overwrite=args.force)
            print(f"wrote {key} (private: keep it here)\nwrote {csr}")
            print(f"next: ppdm ca sign {csr.name} --ca-dir CA_DIR --client-only -o {name}.pem")
            return 0
        if args.cert or args.key or args.ca_cert:
            if not (args.cert and args.key and args.ca_cert):
                raise CLIError("--cert needs --key and --ca-cert")
            creds = _issued_cert(args.cert, args.key, args.ca_cert, server=False)
            _check_name(args.name, creds.name, args.cert)
            name = creds.name
            out = Path(args.out or name)
            cert, key = Path(args.cert).resolve(), Path(args.key).resolve()
            if cert.parent != out.resolve():
                cert = write_public(out / f"{name}.pem", creds.cert_pem, overwrite=True)
            write_public(out / "ca.pem", creds.ca_pem, overwrite=True)
        else:
            name = validate_name(args.name or "analyst", "analyst name")
            ca_cert, ca_key, _ = ensure_ca(args.ca_dir)
            out = Path(args.out or name)
            cert, key = issue_cert(ca_cert, ca_key, name, out, server=False, overwrite=args.force)
            write_public(out / "ca.pem", ca_cert.read_bytes(), overwrite=True)
    except TLSError as e:
        raise CLIError(str(e)) from None
    print(f"wrote {cert}\nwrote {key}\nwrote {out / 'ca.pem'}")
    if args.party:
        parties = {}
        for spec in args.party:
            pname, addr = _kv(spec, "--party")
            parties[pname] = {"address": addr}
        doc = {
            "analyst": {"cert": _relative(Path(cert), out), "key": _relative(Path(key), out), "ca": "ca.pem"},
            "parties": parties,
        }
        target = out / "analyst.toml"
        try:
            write_public(target, dump_toml(doc).encode(), overwrite=args.force)
        except TLSError as e:
            raise CLIError(str(e)) from None
        print(f"wrote {target}\nnext: ppdm mine --parties {target} --split ...")
    return 0


def cmd_serve(args) -> int:
    from parties.runtime.daemon import main as daemon_main

    argv = ["--config", args.config, "--log-format", args.log_format]
    if args.log_level is not None:
        argv += ["--log-level", args.log_level]
    return daemon_main(argv, prog="ppdm")


def cmd_status(args) -> int:
    """The daemon itself (serving, sessions, certificate and CRL dates, warnings) and each peer, as this party.

    Exit 0 when the daemon admits sessions and every peer answers; 1 otherwise (each problem on its line;
    a missing data file is shown as a problem but does not fail the status: the other jobs run).
    """
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from parties.config import ConfigError, PeerInfo, load_config
    from parties.proto.ppdm.v1 import party_pb2 as pb
    from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
    from parties.runtime.grpc_channel import channel_options
    from parties.runtime.lifecycle import tls_dates, tls_problems, tls_warnings

    try:
        cfg = load_config(args.config)
        creds = cfg.credentials()
    except ConfigError as e:
        raise CLIError(str(e)) from None
    chan_creds = creds.channel_credentials()

    def ask(info):  # the synchronous gRPC API: no event loop needed
        with grpc.secure_channel(info.address, chan_creds, options=channel_options(info.name)) as ch:
            return pb_grpc.PartyStub(ch).Health(pb.HealthRequest(), timeout=args.timeout)

    def one(info):
        row = {"peer": info.name, "address": info.address}
        try:
            r = ask(info)
        except grpc.RpcError as e:
            return {**row, "ok": False, "error": f"{e.code().name}: {(e.details() or '')[:200]}"}
        return {**row, "ok": True, "version": r.version, "active_sessions": r.active_sessions, "serving": r.serving}

    host, _, port = cfg.listen.rpartition(":")
    own = PeerInfo(cfg.name, f"{'127.0.0.1' if host in ('0.0.0.0', '', '*') else host}:{port}")
    files = tls_dates(creds)  # what the files on disk say (the daemon may still run older ones: SIGHUP)
    me: dict = {"address": own.address, "files": {**files.as_json(), "warnings": tls_warnings(files)}}
    me["files"]["problems"] = tls_problems(files)
    try:
        r = ask(own)
    except grpc.RpcError as e:
        me.update(ok=False, serving=False, error=f"{e.code().name}: {(e.details() or '')[:200]}")
    else:
        me.update(
            ok=r.admitting,
            serving=r.serving,
            admitting=r.admitting,
            draining=r.draining,
            version=r.version,
            running_sessions=r.running_sessions,
            queued_sessions=r.queued_sessions,
            certificate_not_after=r.certificate_not_after,
            ca_not_after=r.ca_not_after,
            crl_next_update=r.crl_next_update or None,
            warnings=list(r.warnings),
            problems=list(r.problems),
        )
    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(one, cfg.peers.values()))
    if args.json:
        print(json.dumps({"party": cfg.name, "self": me, "peers": rows}, indent=2))
    else:
        if "error" in me:
            print(f"party {cfg.name} at {own.address}: not answering ({me['error']})")
        else:
            state = (
                "serving"
                if me["serving"]
                else "draining"
                if me["draining"]
                else "serving, with problems"
                if me["admitting"]
                else "NOT serving"
            )
            print(
                f"party {cfg.name} at {own.address}: {state} (version {me['version']}, "
                f"{me['running_sessions']} running, {me['queued_sessions']} queued sessions)"
            )
            crl = f", revocation list until {me['crl_next_update'][:16]}" if me["crl_next_update"] else ""
            print(f"  certificate until {me['certificate_not_after'][:16]}, CA until {me['ca_not_after'][:16]}{crl}")
            for line in me["problems"]:
                print(f"  problem: {line}")
        for line in me["files"]["warnings"] if "error" in me else me["warnings"]:
            print(f"  warning: {line}")
        print(f"{len(rows)} peer(s):")
        for r in rows:
            state = f"ok (version {r['version']}, {r['active_sessions']} active sessions)" if r["ok"] else r["error"]
            print(f"  {r['peer']:<16} {r['address']:<24} {state}")
    return 0 if me["ok"] and all(r["ok"] for r in rows) else 1
