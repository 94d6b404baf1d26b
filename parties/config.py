"""A party daemon's configuration: ``party.toml``.

Example::

    [party]
    name = "alice"                 # must equal the certificate's common name
    listen = "127.0.0.1:50051"
    cert = "alice.pem"             # paths are relative to this file
    key = "alice.key"
    ca = "ca.pem"
    analysts = ["analyst"]         # certificate names allowed to start jobs

    [peers.bob]
    address = "127.0.0.1:50052"

    [data]                         # free-form: each string is a path (made absolute)
    transactions = "alice.dat"

    [limits]                       # all optional
    max_message_bytes = 268435456
    session_timeout = 600
    max_job_memory_bytes = 2147483648   # joint jobs estimate their peak up front and refuse above this

Every error is one line naming the file and the key (:class:`ConfigError`).
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .tls import Credentials, TLSError, load_credentials, validate_name

__all__ = [
    "ConfigError",
    "PeerInfo",
    "Limits",
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
    """Where to reach a party: its name (= certificate CN) and ``host:port``."""

    name: str
    address: str


@dataclass(frozen=True)
class Limits:
    """Resource bounds of a daemon (``[limits]``)."""

    max_message_bytes: int = 256 * MiB  # one protocol message (sum of its chunks)
    max_session_buffer_bytes: int = 1024 * MiB  # received but not yet consumed, per session
    session_timeout: float = 600.0  # upper bound on any job's run time (s)
    max_sessions: int = 16  # sessions running or pending at once
    pending_ttl: float = 60.0  # early messages for a session not started here expire after this (s)
    peer_check_interval: float = 0.5  # watchdog: Health ping period per session peer (s)
    peer_dead_after: float = 30.0  # a peer answering nothing (not even refusing) for this long is dead (s)
    max_job_memory_bytes: int = 2048 * MiB  # a job whose estimated peak exceeds this is refused before it starts

    _positive_ints = ("max_message_bytes", "max_session_buffer_bytes", "max_sessions", "max_job_memory_bytes")


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
    job_modules: tuple[str, ...] = ()
    path: Path | None = None

    def credentials(self) -> Credentials:
        """Load this party's key, certificate and CA; the certificate's CN must be ``name``."""
        where = self.path or "party config"
        try:
            creds = load_credentials(self.cert, self.key, self.ca)
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
    _check_keys(doc, {"party", "peers", "data", "limits", "analysts", "jobs"}, "", file)
    party = doc.get("party")
    if not isinstance(party, Mapping):
        raise ConfigError(f"{file}: missing table [party]")
    _check_keys(party, {"name", "listen", "cert", "key", "ca", "analysts"}, "party.", file)
    name = _str(party, "name", "party.", file)
    try:
        validate_name(name)
    except TLSError as e:
        raise ConfigError(f"{file}: party.name: {e}") from None
    listen = parse_address(_str(party, "listen", "party.", file), f"{file}: party.listen")
    cert = _path(base, _str(party, "cert", "party.", file))
    key = _path(base, _str(party, "key", "party.", file))
    ca = _path(base, _str(party, "ca", "party.", file))

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
        _check_keys(pt, {"address"}, w, file)
        peers[pname] = PeerInfo(pname, parse_address(_str(pt, "address", w, file), f"{file}: {w}address"))

    data_t = doc.get("data", {})
    if not isinstance(data_t, Mapping):
        raise ConfigError(f"{file}: data must be a table [data]")
    data = {k: (str(_path(base, v)) if isinstance(v, str) else v) for k, v in data_t.items()}

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
    )


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
def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (str, Path)):
        s = str(v).replace("\\", "\\\\").replace('"', '\\"')
        return f'"{s}"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dump_toml(doc: Mapping[str, Any]) -> str:
    """Write a two-level TOML document (tables of scalars, and tables of tables)."""
    lines: list[str] = []
    top = {k: v for k, v in doc.items() if not isinstance(v, Mapping)}
    for k, v in top.items():
        lines.append(f"{k} = {_toml_value(v)}")
    for k, v in doc.items():
        if not isinstance(v, Mapping):
            continue
        scalars = {a: b for a, b in v.items() if not isinstance(b, Mapping)}
        subs = {a: b for a, b in v.items() if isinstance(b, Mapping)}
        if scalars or not subs:
            lines += ["", f"[{k}]"] + [f"{a} = {_toml_value(b)}" for a, b in scalars.items()]
        for a, b in subs.items():
            lines += ["", f"[{k}.{a}]"] + [f"{c} = {_toml_value(d)}" for c, d in b.items()]
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
) -> Path:
    """Write a ``party.toml`` and check it loads; ``peers`` maps name → ``host:port``."""
    doc: dict[str, Any] = {
        "party": {
            "name": name,
            "listen": listen,
            "cert": str(cert),
            "key": str(key),
            "ca": str(ca),
            "analysts": list(analysts),
        },
        "peers": {p: {"address": a} for p, a in (peers or {}).items()},
    }
    if data:
        doc["data"] = dict(data)
    if limits:
        doc["limits"] = dict(limits)
    if job_modules:
        doc["jobs"] = {"modules": list(job_modules)}
    if not doc["peers"]:
        del doc["peers"]
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = dump_toml(doc)
    parse_config(tomllib.loads(text), p.resolve().parent, str(p))
    p.write_text(text)
    return p
