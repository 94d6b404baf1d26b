"""A party daemon's configuration: ``party.toml``.

Example::

    [party]
    name = "alice"                 # must equal the certificate's common name
    listen = "127.0.0.1:50051"
    cert = "alice.pem"             # paths are relative to this file
    key = "alice.key"
    ca = "ca.pem"
    analysts = ["analyst"]         # certificate names allowed to start jobs
    crl = "crl.pem"                # optional: the CA's revocation list, read at start

    [peers.bob]
    address = "127.0.0.1:50052"
    fingerprint = "sha256:9f86…"   # optional: pin bob's certificate (SHA-256 of its DER)

    [data]                         # free-form: each string is a path (made absolute)
    transactions = "alice.dat"
    [data.sales]                   # a table where it lives: see parties.sources.spec
    path = "sales/*.parquet"
    transaction = "basket_id"
    item = "sku"

    [limits]                       # all optional
    max_message_bytes = 268435456
    session_timeout = 600
    max_job_memory_bytes = 2147483648   # joint jobs estimate their peak up front and refuse above this

    [policy]                       # what an analyst may ask: see parties.guards.policy
    min_parties = 3

    [audit]                        # the audit of sums over party sets: see parties.guards.audit
    state = "audit-alice.json"     # default: audit-<name>.json next to this file
    [publish]                      # joint publishing: see parties.guards.releases
    hierarchies = "hierarchies"    # only these hierarchies (<column>.csv); default: any
    max_releases = 1               # distinct releases per data key (default 1)
    [dp]                           # per-analyst differential-privacy budgets: see parties.guards.dp_budget
    total_epsilon = 2

Every error is one line naming the file and the key (:class:`ConfigError`).
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from parties.guards.audit_state import AuditSettings, AuditStateError, parse_audit
from parties.guards.dp_budget import DPConfig, parse_dp
from parties.guards.policy import Policy, PolicyError, parse_policy
from parties.guards.releases import PublishSettings, PublishStateError, parse_publish
from parties.identity.tls import (
    Credentials,
    TLSError,
    load_credentials,
    normalize_fingerprint,
    validate_name,
    write_public,
)
from parties.sources.spec import SourceError, parse_source

__all__ = [
    "ConfigError",
    "PeerInfo",
    "Limits",
    "MetricsSettings",
    "PartyConfig",
    "load_config",
    "parse_config",
    "parse_address",
    "dump_toml",
    "write_config",
    "DEFAULT_ANALYSTS",
]

DEFAULT_ANALYSTS = ("analyst",)
MiB = 1 << 20


class ConfigError(ValueError):
    """An invalid ``party.toml``: one line naming the file and the key."""


@dataclass(frozen=True)
class PeerInfo:
    """Where to reach a party: its name (= certificate CN), ``host:port`` and optional certificate pin."""

    name: str
    address: str
    fingerprint: str | None = None  # SHA-256 of the peer's certificate (DER), lowercase hex


@dataclass(frozen=True)
class Limits:
    """Resource bounds of a daemon (``[limits]``)."""

    max_message_bytes: int = 256 * MiB  # one protocol message (sum of its chunks)
    max_session_buffer_bytes: int = 1024 * MiB  # received but not yet consumed, per session
    session_timeout: float = 600.0  # upper bound on any job's run time (s)
    max_sessions: int = 32  # sessions started by analysts and running at once
    max_sessions_per_analyst: int = 16  # of those, one analyst's (the others always find a slot)
    max_peer_pending_sessions: int = 16  # sessions one peer may open here before their job starts here
    max_peer_buffer_bytes: int = 2048 * MiB  # bytes one peer may have buffered here, all sessions together
    pending_ttl: float = 60.0  # early messages for a session not started here expire after this (s)
    peer_check_interval: float = 0.5  # watchdog: Health ping period per session peer (s)
    peer_dead_after: float = 30.0  # a peer answering nothing (not even refusing) for this long is dead (s)
    max_job_memory_bytes: int = 2048 * MiB  # a job whose estimated peak exceeds this is refused before it starts
    max_peer_streams: int = 128  # message streams (Deliver* calls) one peer may have open here at once
    stream_idle_timeout: float = 60.0  # a message stream that sends no chunk for this long is cut (s)
    tls_handshake_timeout: float = 10.0  # a connection that has not completed TLS by then is closed (s)
    max_queued_sessions: int = 64  # StartJob calls beyond max_sessions wait here, in order, up to their deadline
    drain_timeout: float = 30.0  # SIGTERM: running sessions may finish for this long, then they are aborted (s)
    cert_check_interval: float = 300.0  # re-read the certificate and revocation list when their files change (s)

    _positive_ints = (
        "max_message_bytes",
        "max_session_buffer_bytes",
        "max_sessions",
        "max_sessions_per_analyst",
        "max_peer_pending_sessions",
        "max_peer_buffer_bytes",
        "max_job_memory_bytes",
        "max_peer_streams",
        "max_queued_sessions",
    )


@dataclass(frozen=True)
class MetricsSettings:
    """``[metrics]``: where the Prometheus endpoint listens (None: off) and whether it requires mTLS."""

    address: str | None = None
    tls: bool = False


@dataclass(frozen=True)
class PartyConfig:
    """A validated ``party.toml``; paths are absolute."""

    name: str
    listen: str
    cert: Path
    key: Path
    ca: Path
    peers: dict[str, PeerInfo] = field(default_factory=dict)
    analysts: tuple[str, ...] = DEFAULT_ANALYSTS
    data: dict[str, Any] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    #: ``[spark]``: ``master`` (local[N] or spark://host:port) and ``conf`` (Spark settings) for data keys
    #: with ``engine = "spark"``
    spark: dict[str, Any] = field(default_factory=dict)
    job_modules: tuple[str, ...] = ()
    path: Path | None = None
    crl: Path | None = None
    policy: Policy = field(default_factory=Policy)
    audit: AuditSettings = field(default_factory=AuditSettings)  # [audit] (parties.guards.audit)
    publish: PublishSettings = field(default_factory=PublishSettings)  # [publish] (parties.guards.releases)
    dp: DPConfig | None = None  # [dp]: privacy budgets (None: sessions with epsilon are refused)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)  # [metrics] (parties.runtime.metrics)
    reflection: bool = False  # [server] reflection: gRPC server reflection (service discovery for grpcurl & co.)

    def credentials(self) -> Credentials:
        """Load this party's key, certificate and CA; the certificate's CN must be ``name``."""
        where = self.path or "party config"
        try:
            creds = load_credentials(self.cert, self.key, self.ca, crl=self.crl)
        except TLSError as e:
            raise ConfigError(f"{where}: {e}") from None
        if creds.name != self.name:
            raise ConfigError(
                f"{where}: [party] name is {self.name!r} but certificate {self.cert} is for {creds.name!r}"
            )
        return creds

    def peer(self, name: str) -> PeerInfo:
        return self.peers[name]


def parse_address(addr: Any, where: str) -> str:
    """Check ``host:port`` (``[v6]:port`` allowed); return it unchanged."""
    if not isinstance(addr, str) or ":" not in addr:
        raise ConfigError(f'{where}: expected "host:port", got {addr!r}')
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f'{where}: expected "host:port" with a port 0-65535, got {addr!r}')
    return addr


def _check_keys(table: Mapping, allowed: set[str], where: str, file: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise ConfigError(f"{file}: unknown key {where}{extra[0]} (allowed: {', '.join(sorted(allowed))})")


def _str(table: Mapping, key: str, where: str, file: str, default: Any = ...) -> str:
    if key not in table:
        if default is ...:
            raise ConfigError(f"{file}: missing key {where}{key}")
        return default
    v = table[key]
    if not isinstance(v, str) or not v:
        raise ConfigError(f"{file}: {where}{key} must be a non-empty string, got {v!r}")
    return v


def _path(base: Path, v: str) -> Path:
    p = Path(os.path.expanduser(v))
    return p if p.is_absolute() else (base / p)


def parse_config(doc: Mapping[str, Any], base_dir: Path | str = ".", file: str = "party.toml") -> PartyConfig:
    """Validate a parsed TOML document; relative paths are resolved against ``base_dir``."""
    base = Path(base_dir).resolve()
    _check_keys(
        doc,
        {
            "party",
            "peers",
            "data",
            "limits",
            "analysts",
            "jobs",
            "policy",
            "audit",
            "publish",
            "dp",
            "spark",
            "metrics",
            "server",
        },
        "",
        file,
    )
    party = doc.get("party")
    if not isinstance(party, Mapping):
        raise ConfigError(f"{file}: missing table [party]")
    _check_keys(party, {"name", "listen", "cert", "key", "ca", "analysts", "crl"}, "party.", file)
    name = _str(party, "name", "party.", file)
    try:
        validate_name(name)
    except TLSError as e:
        raise ConfigError(f"{file}: party.name: {e}") from None
    listen = parse_address(_str(party, "listen", "party.", file), f"{file}: party.listen")
    cert = _path(base, _str(party, "cert", "party.", file))
    key = _path(base, _str(party, "key", "party.", file))
    ca = _path(base, _str(party, "ca", "party.", file))
    crl = _path(base, _str(party, "crl", "party.", file)) if "crl" in party else None

    if "analysts" in party and "analysts" in doc:
        raise ConfigError(f"{file}: analysts given both at top level and in [party]; keep one")
    analysts_v = party.get("analysts", doc.get("analysts", list(DEFAULT_ANALYSTS)))
    if not isinstance(analysts_v, list) or not all(isinstance(a, str) for a in analysts_v):
        raise ConfigError(f"{file}: party.analysts must be a list of names, got {analysts_v!r}")
    for a in analysts_v:
        try:
            validate_name(a, "analyst name")
        except TLSError as e:
            raise ConfigError(f"{file}: party.analysts: {e}") from None

    peers_t = doc.get("peers", {})
    if not isinstance(peers_t, Mapping):
        raise ConfigError(f"{file}: peers must be tables [peers.NAME]")
    peers: dict[str, PeerInfo] = {}
    for pname, pt in peers_t.items():
        w = f"peers.{pname}."
        if not isinstance(pt, Mapping):
            raise ConfigError(f"{file}: peers.{pname} must be a table with an address")
        try:
            validate_name(pname, "peer name")
        except TLSError as e:
            raise ConfigError(f"{file}: peers.{pname}: {e}") from None
        if pname == name:
            raise ConfigError(f"{file}: peers.{pname}: a party cannot be its own peer")
        if pname in analysts_v:
            raise ConfigError(f"{file}: peers.{pname}: name is also listed as an analyst")
        _check_keys(pt, {"address", "fingerprint"}, w, file)
        fp = None
        if "fingerprint" in pt:
            try:
                fp = normalize_fingerprint(_str(pt, "fingerprint", w, file))
            except TLSError as e:
                raise ConfigError(f"{file}: {w}fingerprint: {e}") from None
        peers[pname] = PeerInfo(
            pname, parse_address(_str(pt, "address", w, file), f"{file}: {w}address"), fingerprint=fp
        )

    data_t = doc.get("data", {})
    if not isinstance(data_t, Mapping):
        raise ConfigError(f"{file}: data must be a table [data]")
    data: dict[str, Any] = {}
    for k, v in data_t.items():
        if isinstance(v, Mapping):  # [data.KEY]: a table where it lives (parties.sources.spec)
            try:
                data[k] = parse_source(k, v, base, file)
            except SourceError as e:
                raise ConfigError(str(e)) from None
        else:
            data[k] = str(_path(base, v)) if isinstance(v, str) else v

    limits_t = doc.get("limits", {})
    if not isinstance(limits_t, Mapping):
        raise ConfigError(f"{file}: limits must be a table [limits]")
    names = {f.name for f in fields(Limits)}
    _check_keys(limits_t, names, "limits.", file)
    lim: dict[str, Any] = {}
    for k, v in limits_t.items():
        if k in Limits._positive_ints:
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ConfigError(f"{file}: limits.{k} must be a positive integer, got {v!r}")
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ConfigError(f"{file}: limits.{k} must be a positive number of seconds, got {v!r}")
            v = float(v)
        lim[k] = v
    limits = replace(Limits(), **lim)

    jobs_t = doc.get("jobs", {})
    if not isinstance(jobs_t, Mapping):
        raise ConfigError(f"{file}: jobs must be a table [jobs]")
    _check_keys(jobs_t, {"modules"}, "jobs.", file)
    mods = jobs_t.get("modules", [])
    if not isinstance(mods, list) or not all(isinstance(m, str) and m for m in mods):
        raise ConfigError(f"{file}: jobs.modules must be a list of module names, got {mods!r}")

    try:
        policy = parse_policy(doc.get("policy"), analysts=analysts_v, peers=peers)
    except PolicyError as e:
        raise ConfigError(f"{file}: {e}") from None
    try:
        audit = parse_audit(doc.get("audit"), base=base, name=name)
    except AuditStateError as e:
        raise ConfigError(f"{file}: {e}") from None
    try:
        publish = parse_publish(doc.get("publish"), base=base, name=name)
    except PublishStateError as e:
        raise ConfigError(f"{file}: {e}") from None
    try:
        dp = parse_dp(doc.get("dp"), base, analysts_v)
    except ValueError as e:
        raise ConfigError(f"{file}: {e}") from None

    spark_t = doc.get("spark", {})
    if not isinstance(spark_t, Mapping):
        raise ConfigError(f"{file}: spark must be a table [spark]")
    _check_keys(spark_t, {"master", "conf"}, "spark.", file)
    if "master" in spark_t and (not isinstance(spark_t["master"], str) or not spark_t["master"].strip()):
        raise ConfigError(f'{file}: spark.master must be a string such as "local[2]" or "spark://host:7077"')
    conf_t = spark_t.get("conf", {})
    if not isinstance(conf_t, Mapping) or not all(isinstance(v, (str, int, float, bool)) for v in conf_t.values()):
        raise ConfigError(f"{file}: spark.conf must be a table of settings (strings or numbers)")
    spark = {"master": spark_t.get("master", "local[2]"), "conf": {str(k): str(v) for k, v in conf_t.items()}}
    if any(getattr(v, "engine", "memory") == "spark" for v in data.values()) and "master" not in spark_t:
        raise ConfigError(f'{file}: a data key has engine = "spark": name the cluster in [spark] master')

    metrics = _parse_metrics(doc.get("metrics", {}), file)
    server_t = doc.get("server", {})
    if not isinstance(server_t, Mapping):
        raise ConfigError(f"{file}: server must be a table [server]")
    _check_keys(server_t, {"reflection"}, "server.", file)
    reflection = server_t.get("reflection", False)
    if not isinstance(reflection, bool):
        raise ConfigError(f"{file}: server.reflection must be true or false, got {reflection!r}")

    return PartyConfig(
        name=name,
        listen=listen,
        cert=cert,
        key=key,
        ca=ca,
        peers=peers,
        analysts=tuple(analysts_v),
        data=data,
        limits=limits,
        job_modules=tuple(mods),
        crl=crl,
        policy=policy,
        audit=audit,
        publish=publish,
        dp=dp,
        spark=spark,
        metrics=metrics,
        reflection=reflection,
    )


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _parse_metrics(t: Any, file: str) -> MetricsSettings:
    """``[metrics] address = "127.0.0.1:9464"``, ``tls = false``: off unless an address is given; an
    address other than loopback must be served behind the daemon's own mTLS (``tls = true``)."""
    if not isinstance(t, Mapping):
        raise ConfigError(f"{file}: metrics must be a table [metrics]")
    _check_keys(t, {"address", "tls"}, "metrics.", file)
    tls = t.get("tls", False)
    if not isinstance(tls, bool):
        raise ConfigError(f"{file}: metrics.tls must be true or false, got {tls!r}")
    if "address" not in t:
        if tls:
            raise ConfigError(f'{file}: metrics.tls is set but metrics.address is not (e.g. "127.0.0.1:9464")')
        return MetricsSettings()
    address = parse_address(_str(t, "address", "metrics.", file), f"{file}: metrics.address")
    host = address.rpartition(":")[0]
    if not tls and not _is_loopback(host):
        raise ConfigError(
            f"{file}: metrics.address {address} is not a loopback address: serve it with tls = true "
            "(scrapers then present a certificate of the party's CA) or listen on 127.0.0.1"
        )
    return MetricsSettings(address=address, tls=tls)


def load_config(path: str | os.PathLike) -> PartyConfig:
    """Read and validate ``party.toml``."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {p}: {e.strerror or e}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    cfg = parse_config(doc, p.resolve().parent, str(p))
    return replace(cfg, path=p.resolve())


# --------------------------------------------------------------------------- writing
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else _toml_value(k)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (str, Path)):
        return json.dumps(str(v), ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dump_toml(doc: Mapping[str, Any]) -> str:
    """Write a TOML document of nested tables (mappings), scalars and lists of scalars."""
    lines: list[str] = []

    def table(path: list[str], t: Mapping[str, Any]) -> None:
        scalars = {a: b for a, b in t.items() if not isinstance(b, Mapping)}
        subs = {a: b for a, b in t.items() if isinstance(b, Mapping)}
        if path and (scalars or not subs):
            lines.extend(["", "[" + ".".join(_toml_key(k) for k in path) + "]"])
        lines.extend(f"{_toml_key(a)} = {_toml_value(b)}" for a, b in scalars.items())
        for a, b in subs.items():
            table([*path, a], b)

    table([], doc)
    return "\n".join(lines).lstrip("\n") + "\n"


def write_config(
    path: str | os.PathLike,
    *,
    name: str,
    listen: str,
    cert: str | os.PathLike,
    key: str | os.PathLike,
    ca: str | os.PathLike,
    peers: Mapping[str, str] | None = None,
    analysts: tuple[str, ...] | list[str] = DEFAULT_ANALYSTS,
    data: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    job_modules: list[str] | tuple[str, ...] = (),
    crl: str | os.PathLike | None = None,
    pins: Mapping[str, str] | None = None,
    policy: Mapping[str, Any] | None = None,
    overwrite: bool = True,
    audit: Mapping[str, Any] | None = None,
    dp: Mapping[str, Any] | None = None,
    spark: Mapping[str, Any] | None = None,
    metrics: Mapping[str, Any] | None = None,
    server: Mapping[str, Any] | None = None,
    publish: Mapping[str, Any] | None = None,
) -> Path:
    """Write a ``party.toml`` atomically and check it loads.

    ``peers`` maps name → ``host:port``, ``pins`` name → certificate
    fingerprint, ``policy`` is a ``[policy]`` table (see :mod:`parties.guards.policy`),
    ``audit`` an ``[audit]`` table (see :mod:`parties.guards.audit_state`).
    ``dp`` a ``[dp]`` table (see :mod:`parties.guards.dp_budget`).
    ``spark`` a ``[spark]`` table (``master``, ``conf``) for data keys with ``engine = "spark"``.
    ``metrics`` a ``[metrics]`` table (``address``, ``tls``), ``server`` a ``[server]`` table (``reflection``).
    ``publish`` a ``[publish]`` table (``hierarchies``, ``max_releases``, ``state``; :mod:`parties.guards.releases`).
    With ``overwrite=False`` an existing file is an error (:class:`ConfigError`).
    """
    party: dict[str, Any] = {
        "name": name,
        "listen": listen,
        "cert": str(cert),
        "key": str(key),
        "ca": str(ca),
        "analysts": list(analysts),
    }
    if crl is not None:
        party["crl"] = str(crl)
    doc: dict[str, Any] = {"party": party}
    peer_t: dict[str, dict[str, str]] = {p: {"address": a} for p, a in (peers or {}).items()}
    for p, fp in (pins or {}).items():
        if p not in peer_t:
            raise ConfigError(f"a certificate pin is given for {p!r}, which is not a peer")
        peer_t[p]["fingerprint"] = fp
    if peer_t:
        doc["peers"] = peer_t
    if data:
        doc["data"] = dict(data)
    if limits:
        doc["limits"] = dict(limits)
    if job_modules:
        doc["jobs"] = {"modules": list(job_modules)}
    if policy:
        doc["policy"] = dict(policy)
    if audit:
        doc["audit"] = dict(audit)
    if publish:
        doc["publish"] = dict(publish)
    if dp:
        doc["dp"] = dict(dp)
    if spark:
        doc["spark"] = dict(spark)
    if metrics:
        doc["metrics"] = dict(metrics)
    if server:
        doc["server"] = dict(server)
    out = Path(path)
    text = dump_toml(doc)
    parse_config(tomllib.loads(text), out.parent.resolve() if out.parent.exists() else out.parent, str(out))
    try:
        write_public(out, text.encode(), overwrite=overwrite)
    except TLSError as e:
        raise ConfigError(str(e)) from None
    return out
