"""``ppdm party init | analyst | serve | status``: set up and run a party daemon.

    ppdm party init --name alice --ca-dir ca --out alice --listen 0.0.0.0:50051 \\
                    --peer bob=bob.example.org:50051 --data transactions=alice.dat
    ppdm party analyst --ca-dir ca --out analyst          # the analyst's client certificate
    ppdm party serve --config alice/party.toml
    ppdm party status --config alice/party.toml           # Health of every configured peer
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .common import CLIError

__all__ = ["register"]


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

    i = psub.add_parser("init", help="create keys, certificate (and CA if missing) and party.toml")
    i.add_argument("--name", required=True, help="party name (= certificate common name)")
    i.add_argument("--ca-dir", default="ca", help="CA directory (ca.pem, ca.key); created if missing (default ./ca)")
    i.add_argument("--ca-cert", help="use this CA certificate instead of --ca-dir (with --ca-key)")
    i.add_argument("--ca-key", help="the CA's private key (with --ca-cert)")
    i.add_argument("--cert", help="use this existing party certificate (with --key and --ca-cert)")
    i.add_argument("--key", help="the existing party key (with --cert)")
    i.add_argument("--out", help="directory for the party's files (default ./NAME)")
    i.add_argument("--listen", default="127.0.0.1:50051", help="HOST:PORT to listen on (default 127.0.0.1:50051)")
    i.add_argument("--peer", action="append", default=[], metavar="NAME=HOST:PORT", help="a peer (repeatable)")
    i.add_argument("--analyst", action="append", metavar="NAME", help="analyst allowed to start jobs (default analyst)")
    i.add_argument("--data", action="append", default=[], metavar="KEY=PATH", help="a local data path (repeatable)")
    i.add_argument("--host", action="append", default=[], metavar="HOST", help="extra DNS name/IP in the certificate")
    i.add_argument("--force", action="store_true", help="overwrite an existing party.toml and key")
    i.set_defaults(func=cmd_init)

    a = psub.add_parser("analyst", help="issue the analyst's client certificate")
    a.add_argument("--name", default="analyst")
    a.add_argument("--ca-dir", default="ca")
    a.add_argument("--out", help="directory (default ./NAME)")
    a.add_argument(
        "--party",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="a party to run jobs on, in protocol order (repeatable); writes analyst.toml for 'ppdm mine --parties'",
    )
    a.set_defaults(func=cmd_analyst)

    s = psub.add_parser("serve", help="run the daemon until SIGTERM/SIGINT")
    s.add_argument("--config", required=True, help="path of party.toml")
    s.add_argument("--log-level", default="INFO")
    s.set_defaults(func=cmd_serve)

    st = psub.add_parser("status", help="ask every configured peer for Health, as this party")
    st.add_argument("--config", required=True)
    st.add_argument("--timeout", type=float, default=3.0)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_status)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def cmd_init(args) -> int:
    from ..config import ConfigError, parse_address, write_config
    from ..tls import TLSError, ensure_ca, issue_cert, load_ca, load_credentials, validate_name

    try:
        validate_name(args.name)
        try:
            parse_address(args.listen, "--listen")
        except ConfigError as e:
            raise CLIError(str(e)) from None
        out = Path(args.out or args.name)
        cfg = out / "party.toml"
        if cfg.exists() and not args.force:
            raise CLIError(f"{cfg} exists (use --force to overwrite)")
        peers = dict(_kv(x, "--peer") for x in args.peer)
        data = dict(_kv(x, "--data") for x in args.data)
        made = []
        if bool(args.ca_cert) != bool(args.ca_key) and not (args.cert and args.ca_cert):
            raise CLIError("--ca-cert and --ca-key go together")
        if args.cert or args.key:
            if not (args.cert and args.key and args.ca_cert):
                raise CLIError("--cert needs --key and --ca-cert")
            creds = load_credentials(args.cert, args.key, args.ca_cert)
            if creds.name != args.name:
                raise CLIError(f"certificate {args.cert} is for {creds.name!r}, not {args.name!r}")
            ca_cert, cert, key = Path(args.ca_cert), Path(args.cert).resolve(), Path(args.key).resolve()
        else:
            if args.ca_cert:
                ca_cert, ca_key = Path(args.ca_cert), Path(args.ca_key)
                load_ca(ca_cert, ca_key)
            else:
                ca_cert, ca_key, created = ensure_ca(args.ca_dir)
                if created:
                    made += [ca_cert, ca_key]
            if (out / f"{args.name}.key").exists() and not args.force:
                raise CLIError(f"{out / (args.name + '.key')} exists (use --force to overwrite)")
            cert, key = issue_cert(ca_cert, ca_key, args.name, out, hosts=args.host)
            made += [cert, key]
        out.mkdir(parents=True, exist_ok=True)
        local_ca = out / "ca.pem"
        if ca_cert.resolve() != local_ca.resolve():
            shutil.copyfile(ca_cert, local_ca)
            made.append(local_ca)
        write_config(
            cfg,
            name=args.name,
            listen=args.listen,
            cert=cert.name if cert.parent.resolve() == out.resolve() else cert,
            key=key.name if key.parent.resolve() == out.resolve() else key,
            ca="ca.pem",
            peers=peers,
            analysts=args.analyst or ["analyst"],
            data=data,
        )
        made.append(cfg)
    except (TLSError, ConfigError) as e:
        raise CLIError(str(e)) from None
    for f in made:
        print(f"wrote {f}")
    print(f"next: ppdm party serve --config {cfg}")
    return 0


def cmd_analyst(args) -> int:
    from ..tls import TLSError, ensure_ca, issue_cert

    try:
        ca_cert, ca_key, _ = ensure_ca(args.ca_dir)
        out = Path(args.out or args.name)
        cert, key = issue_cert(ca_cert, ca_key, args.name, out, server=False)
        shutil.copyfile(ca_cert, out / "ca.pem")
    except TLSError as e:
        raise CLIError(str(e)) from None
    print(f"wrote {cert}\nwrote {key}\nwrote {out / 'ca.pem'}")
    if args.party:
        parties = {}
        for spec in args.party:
            name, sep, addr = spec.partition("=")
            if not sep or not name or not addr:
                raise CLIError(f"--party expects NAME=HOST:PORT, got {spec!r}")
            parties[name] = {"address": addr}
        from ..config import dump_toml

        doc = {"analyst": {"cert": Path(cert).name, "key": Path(key).name, "ca": "ca.pem"}, "parties": parties}
        (out / "analyst.toml").write_text(dump_toml(doc))
        print(f"wrote {out / 'analyst.toml'}\nnext: ppdm mine --parties {out / 'analyst.toml'} --split ...")
    return 0


def cmd_serve(args) -> int:
    from ..daemon import main as daemon_main

    rc = daemon_main(["--config", args.config, "--log-level", args.log_level])
    if rc == 2:
        return 2
    return rc


def cmd_status(args) -> int:
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from ..config import ConfigError, load_config
    from ..grpc_channel import channel_options
    from ..proto.ppdm.v1 import party_pb2 as pb
    from ..proto.ppdm.v1 import party_pb2_grpc as pb_grpc

    try:
        cfg = load_config(args.config)
        creds = cfg.credentials()
    except ConfigError as e:
        raise CLIError(str(e)) from None
    chan_creds = creds.channel_credentials()

    def one(info):  # the synchronous gRPC API: no event loop needed
        row = {"peer": info.name, "address": info.address}
        with grpc.secure_channel(info.address, chan_creds, options=channel_options(info.name)) as ch:
            try:
                r = pb_grpc.PartyStub(ch).Health(pb.HealthRequest(), timeout=args.timeout)
            except grpc.RpcError as e:
                return {**row, "ok": False, "error": f"{e.code().name}: {(e.details() or '')[:200]}"}
        return {**row, "ok": True, "version": r.version, "active_sessions": r.active_sessions}

    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(one, cfg.peers.values()))
    if args.json:
        print(json.dumps({"party": cfg.name, "peers": rows}, indent=2))
    else:
        print(f"party {cfg.name}: {len(rows)} peer(s)")
        for r in rows:
            state = f"ok (version {r['version']}, {r['active_sessions']} active sessions)" if r["ok"] else r["error"]
            print(f"  {r['peer']:<16} {r['address']:<24} {state}")
    return 0 if all(r["ok"] for r in rows) else 1
