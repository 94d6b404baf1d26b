"""``ppdm audit check | serve | query``: query auditing from the command line.

* ``ppdm audit check LOG.jsonl --table IN.csv --auditor A [--offline] [--json]`` — replay a log
  of JSON queries (one per line) through a fresh auditor, in order. Online (default): each
  query is decided as auditor ``A`` would have, and denied queries change nothing. ``--offline``:
  every query was answered; report what each answer, with the earlier ones, disclosed.
  ``--json`` prints ``{"queries": [{"index", "decision", "discloses", ...}], ...}``; row numbers
  are 0-based in the table's order. ``discloses`` of a query: the rows whose values its answer
  determines together with the answers before it — for a denied query the rows it *would* have
  disclosed (for the simulatable auditors, the rows *some* answer consistent with the past
  would disclose), empty for an answered one online; offline, the rows that answer disclosed
  (and its decision is "deny": an online auditor should have refused it).
* ``ppdm audit serve --table IN.csv --auditor A --config party.toml`` — the mTLS gRPC service
  (:mod:`parties.services.query_audit`).
* ``ppdm audit query --config analyst.toml --query '{...}'`` — ask it one query. Prints the
  answer (a JSON value). Exit status: 0 answered, 3 denied (the denial's reason on stdout),
  2 bad input, 1 service unreachable or other failure.

Auditors: ``sum``, ``max``, ``minmax``, ``simulatable-sum``, ``simulatable-max`` (and ``min``,
``simulatable-min``). Bad input is one line ``ppdm: error: ...`` with exit status 2.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

from parties.cli.common import CLIError, comma_list

__all__ = ["register", "run_check", "load_audit_client_config"]

EXIT_DENIED = 3


def _auditor_name(name: str) -> str:
    from anonymize.audit import AUDITORS

    if name not in AUDITORS:
        raise CLIError(f"unknown auditor {name!r} (use {', '.join(AUDITORS)})")
    return name


def _read_table(path: str, sep: str | None):
    from anonymize.errors import AnonymizeError
    from anonymize.publish.io import read_table

    try:
        return read_table(path, sep=sep)
    except AnonymizeError as e:
        raise CLIError(str(e)) from None


def run_check(
    log: str,
    table: str,
    auditor: str,
    *,
    offline: bool = False,
    sep: str | None = None,
    public: list[str] | None = None,
    filterable: list[str] | None = None,
) -> dict:
    """Replay ``log`` over ``table``; the ``--json`` document of ``ppdm audit check``."""
    from anonymize.audit import AuditError, parse_log_lines, replay_log

    auditor = _auditor_name(auditor)
    p = Path(log)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CLIError(f"query log not found: {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"cannot read query log {p}: {getattr(e, 'strerror', None) or e}") from None
    df = _read_table(table, sep)
    try:
        parsed = parse_log_lines(text.splitlines(), where=str(p))
        outs, ta = replay_log(
            df,
            [q for _, q in parsed],
            auditor,
            offline=offline,
            labels=[f"{p} line {no}" for no, _ in parsed],
            public=public or (),
            filterable=filterable or (),
        )
    except AuditError as e:
        raise CLIError(str(e)) from None
    queries = []
    for i, ((no, q), out) in enumerate(zip(parsed, outs)):
        queries.append(
            {
                "index": i,
                "line": no,
                "agg": q.agg,
                "column": q.column,
                "decision": "answer" if out.allowed else "deny",
                "discloses": sorted(int(r) for r in out.decision.discloses),
            }
        )
    disclosed = sorted({int(r) for rows in ta.disclosed().values() for r in rows})
    doc = {
        "queries": queries,
        "auditor": auditor,
        "mode": "offline" if offline else "online",
        "rows": ta.n,
        "answered": sum(q["decision"] == "answer" for q in queries),
        "denied": sum(q["decision"] == "deny" for q in queries),
        "disclosed": disclosed,
    }
    bounds = [a.error_bound() for a in ta.auditors.values() if hasattr(a, "error_bound")]
    if bounds:
        doc["error_bound"] = min(1.0, sum(bounds))
    return doc


def format_check(doc: dict) -> str:
    lines = [f"{'#':>5} {'line':>6}  {'query':<16} {'decision':<8}  discloses"]
    for q in doc["queries"]:
        rows = q["discloses"]
        shown = "-" if not rows else "rows " + ", ".join(map(str, rows[:12])) + (" ..." if len(rows) > 12 else "")
        what = f"{q['agg']}({q['column']})" if q["column"] else q["agg"]
        lines.append(f"{q['index']:>5} {q['line']:>6}  {what:<16} {q['decision']:<8}  {shown}")
    verb = "disclosing" if doc["mode"] == "offline" else "denied"
    lines.append(
        f"{len(doc['queries'])} queries on {doc['rows']:,} rows, {doc['auditor']} auditor ({doc['mode']}): "
        f"{doc['answered']} answered, {doc['denied']} {verb}"
    )
    if doc["disclosed"]:
        lines.append(f"values determined by the answers: rows {', '.join(map(str, doc['disclosed']))}")
    if doc.get("error_bound"):
        lines.append(f"modular arithmetic: chance of any decision differing from exact ≤ {doc['error_bound']:.2g}")
    return "\n".join(lines)


def _cmd_check(args) -> int:
    doc = run_check(
        args.log,
        args.table,
        args.auditor,
        offline=args.offline,
        sep=args.sep,
        public=comma_list(args.public),
        filterable=comma_list(args.filterable),
    )
    print(json.dumps(doc) if args.json else format_check(doc))
    return 0


# --------------------------------------------------------------------------- serve
def _cmd_serve(args) -> int:
    import asyncio
    import logging

    from anonymize.audit import AuditError, TableAuditor
    from parties.config import ConfigError, load_config, parse_address
    from parties.services.query_audit import AuditLog, AuditLogError, file_sha256, log_path_for, serve_audit

    auditor = _auditor_name(args.auditor)
    try:
        cfg = load_config(args.config)
        creds = cfg.credentials()
        listen = parse_address(args.listen, "--listen") if args.listen else cfg.listen
    except ConfigError as e:
        raise CLIError(str(e)) from None
    table = Path(args.table)
    df = _read_table(args.table, args.sep)
    try:
        ta = TableAuditor(df, auditor, public=comma_list(args.public), filterable=comma_list(args.filterable))
    except AuditError as e:
        raise CLIError(str(e)) from None
    log_path = Path(args.log) if args.log else log_path_for(cfg.path or Path(args.config), table)
    if not log_path.resolve().parent.is_dir():
        raise CLIError(f"cannot write the audit log {log_path}: its directory does not exist")
    header = {
        "format": "ppdm.audit-log/1",
        "auditor": auditor,
        "options": {k: sorted(v) for k, v in (("public", ta.public), ("filterable", ta.filterable)) if v},
        "table": str(table.resolve()),
        "table_sha256": file_sha256(table),
        "rows": ta.n,
    }
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    alog = AuditLog(log_path, header)
    try:
        asyncio.run(serve_audit(name=cfg.name, creds=creds, listen=listen, analysts=cfg.analysts, ta=ta, alog=alog))
    except AuditLogError as e:
        raise CLIError(str(e)) from None
    except OSError as e:
        print(f"ppdm: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


# --------------------------------------------------------------------------- query
def load_audit_client_config(path: str | Path, server: str | None = None):
    """``[analyst] cert, key, ca`` and ``[audit] server, address`` (or ``server`` = NAME=HOST:PORT)."""
    from parties.config import ConfigError, parse_address
    from parties.identity.tls import TLSError, load_credentials

    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CLIError(f"config file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise CLIError(f"cannot read {p}: {getattr(e, 'strerror', None) or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise CLIError(f"{p} is not valid TOML: {e}") from None
    a = doc.get("analyst")
    if not isinstance(a, dict) or not all(isinstance(a.get(k), str) for k in ("cert", "key", "ca")):
        raise CLIError(f"{p}: [analyst] needs cert, key and ca paths")
    if server:
        name, sep, addr = server.partition("=")
        if not sep or not name or not addr:
            raise CLIError(f"--server expects NAME=HOST:PORT, got {server!r}")
    else:
        t = doc.get("audit")
        if not isinstance(t, dict) or not isinstance(t.get("server"), str) or not isinstance(t.get("address"), str):
            raise CLIError(f'{p}: add [audit] server = "NAME" and address = "HOST:PORT" (or give --server)')
        name, addr = t["server"], t["address"]
    try:
        parse_address(addr, "the audit service address")
    except ConfigError as e:
        raise CLIError(str(e)) from None
    try:
        creds = load_credentials(p.parent / a["cert"], p.parent / a["key"], p.parent / a["ca"])
    except TLSError as e:
        raise CLIError(str(e)) from None
    return name, addr, creds


def ask(name: str, address: str, creds, query_json: str, timeout: float = 30.0) -> tuple[str, object]:
    """One ``Ask`` call: ``("answer", value)`` or ``("deny", reason)``; gRPC errors propagate."""
    import grpc

    from parties.proto.ppdm.v1 import audit_pb2 as pb
    from parties.proto.ppdm.v1 import audit_pb2_grpc as pb_grpc

    opts = [("grpc.ssl_target_name_override", name), ("grpc.max_receive_message_length", 1 << 16)]
    with grpc.secure_channel(address, creds.channel_credentials(), options=opts) as ch:
        reply = pb_grpc.AuditorStub(ch).Ask(pb.AskRequest(query_json=query_json), timeout=timeout)
    if reply.WhichOneof("outcome") == "answer_json":
        return "answer", json.loads(reply.answer_json)
    return "deny", reply.denial.reason


def _cmd_query(args) -> int:
    import grpc

    from anonymize.errors import AnonymizeError
    from anonymize.query import parse_query

    try:
        parse_query(args.query)  # a malformed query is bad input here, before any connection
    except AnonymizeError as e:
        raise CLIError(str(e)) from None
    name, addr, creds = load_audit_client_config(args.config, args.server)
    try:
        kind, value = ask(name, addr, creds, args.query, timeout=args.timeout)
    except grpc.RpcError as e:
        code, details = e.code(), (e.details() or "").strip().splitlines()
        msg = details[0][:300] if details else code.name
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            raise CLIError(msg) from None
        if code == grpc.StatusCode.UNAVAILABLE:
            msg = f"audit service {name!r} at {addr} unreachable"
        print(f"ppdm: error: {msg}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"decision": kind, ("value" if kind == "answer" else "reason"): value}))
    else:
        print(json.dumps(value) if kind == "answer" else value)
    return 0 if kind == "answer" else EXIT_DENIED


def _column_flags(p) -> None:
    """``--public`` and ``--filterable``: which columns queries may filter on (anonymize.audit.table)."""
    p.add_argument(
        "--public",
        metavar="COL[,COL]",
        help="numeric columns whose values are public (identifiers, ages): queries may filter on them; every "
        "other numeric column is audited, and predicates on it are denied unless --filterable lists it",
    )
    p.add_argument(
        "--filterable",
        metavar="COL[,COL]",
        help="audited columns queries may still filter on; a count filtered on one is audited as a sum of "
        "its predicate's indicators over the rows the public predicates select",
    )


def register(sub) -> None:
    p = sub.add_parser(
        "audit",
        help="query auditing: replay a query log, serve audited queries over mTLS, ask one",
        description="Answer aggregate queries on a private table only while no individual value is "
        "disclosed (online sum, max/min, max-and-min and simulatable auditors).",
    )
    asub = p.add_subparsers(dest="audit_cmd", metavar="ACTION")
    names = "sum|max|minmax|simulatable-sum|simulatable-max (also min, simulatable-min)"

    c = asub.add_parser("check", help="replay a JSONL query log through an auditor")
    c.add_argument("log", metavar="LOG.jsonl", help="one JSON query per line, replayed in order")
    c.add_argument("--table", required=True, metavar="IN.csv", help="the private table (CSV or Parquet)")
    c.add_argument("--auditor", required=True, metavar="NAME", help=names)
    c.add_argument("--offline", action="store_true", help="every query was answered: report what each disclosed")
    _column_flags(c)
    c.add_argument("--sep", help="CSV delimiter (default: sniffed)")
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.set_defaults(func=_cmd_check)

    s = asub.add_parser("serve", help="serve audited queries on a table over mutual TLS (gRPC)")
    s.add_argument("--table", required=True, metavar="IN.csv")
    s.add_argument("--auditor", required=True, metavar="NAME", help=names)
    s.add_argument("--config", required=True, metavar="party.toml", help="identity, CA, listen address, analysts")
    s.add_argument("--listen", metavar="HOST:PORT", help="listen here instead of the config's [party] listen")
    s.add_argument("--log", metavar="PATH", help="audit log (default: audit-<table>.jsonl next to the config)")
    _column_flags(s)
    s.add_argument("--sep", help="CSV delimiter (default: sniffed)")
    s.add_argument("--log-level", default="INFO")
    s.set_defaults(func=_cmd_serve)

    q = asub.add_parser("query", help="ask the audit service one query (exit 3 when denied)")
    q.add_argument(
        "--config", required=True, metavar="analyst.toml", help="[analyst] cert/key/ca, [audit] server/address"
    )
    q.add_argument(
        "--query", required=True, metavar="JSON", help='e.g. {"agg": "sum", "column": "salary", "where": []}'
    )
    q.add_argument("--server", metavar="NAME=HOST:PORT", help="the service (default: [audit] in the config)")
    q.add_argument("--timeout", type=float, default=30.0)
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_cmd_query)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
