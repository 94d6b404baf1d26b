"""The security-level policy file (TOML): who may have the data for what, at which level, how.

The model is that of Y. Xu, H. Guo, "Privacy protection model and parameter optimization method
for data dissemination" (Computer Engineering 47(5), 2021, §2, Fig. 1 and Table 1): a data user's
identity and the purpose of use determine a security level; the level determines the
anonymization method (k-anonymity, l-diversity or t-closeness, each with an algorithm) and its
initial parameters; the data owner states a privacy requirement and the user a quality
requirement, and parameters, then the method, are adjusted until both hold
(:mod:`.engine`). A file (example: ``examples/policy.toml``, reference: ``docs/policy.md``)::

    version = 1
    [owner]                    # privacy requirement, measured on every release
    pmax = 0.25                # disclosure probability bound; optional k, l, t
    [release]                  # optional: how releases are made
    max_suppression = 0.02
    [quality]                  # default quality requirement of a user
    metric = "ncp"             # "ncp" or "cdm"
    bound = 0.6
    [purposes]
    research = "studies approved by the ethics board"
    [users.alice]
    levels = { research = "medium" }      # purpose -> level
    quality = { metric = "ncp", bound = 0.5 }
    [levels.medium]
    model = "l-diversity"      # k-anonymity | l-diversity | t-closeness
    algorithm = "flash"        # any registered algorithm that honours the model
    k = 5
    l = 3

:func:`load_policy` validates everything it can without the data — unknown keys, wrong types,
impossible parameters, levels or purposes that do not exist, algorithms that are not registered
or cannot honour the level's model — and reports the first problem as one line naming the key.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import AnonymizeError
from .. import registry
from ..distances import DISTANCES, GROUNDS
from ..recode import NUMERIC_OUTPUTS
from .evaluate import PUBLISHABLE_KINDS, honours
from .measure import FAMILIES, QUALITY_METRICS, SUPPRESSED_ROWS_MODES, PrivacyRequirement, QualityRequirement

__all__ = ["Level", "User", "ReleaseSettings", "Policy", "load_policy", "parse_policy"]


@dataclass(frozen=True)
class Level:
    """A security level: the model family, the preferred algorithm, the initial parameters, which
    kinds of registered algorithms the engine may switch to (``kinds``) and whether it may move to a
    stronger model family (``escalate``)."""

    name: str
    model: str
    algorithm: str
    params: dict
    kinds: tuple = PUBLISHABLE_KINDS
    escalate: bool = True
    description: str = ""


@dataclass(frozen=True)
class User:
    """A data user: the level for each purpose they may ask for, and their quality requirement."""

    name: str
    levels: dict
    quality: QualityRequirement | None = None
    description: str = ""


@dataclass(frozen=True)
class ReleaseSettings:
    """How releases are made: suppression budget and its rendering, numeric output, the t distance,
    and how many algorithm runs one decision may take."""

    max_suppression: float = 0.0
    suppressed_rows: str = "star"
    numeric_output: str = "range"
    t_distance: str = "emd"
    t_ground: str | None = None
    max_evaluations: int = 100


@dataclass
class Policy:
    """A validated policy file (module docstring)."""

    source: str
    owner: PrivacyRequirement
    release: ReleaseSettings
    quality: QualityRequirement | None
    purposes: dict
    users: dict
    levels: dict = field(default_factory=dict)

    def user(self, name: str) -> User:
        """The user called ``name``; one-line error naming the known users otherwise."""
        u = self.users.get(name)
        if u is None:
            raise AnonymizeError(
                f"{self.source}: unknown user '{name}' (the policy defines: {', '.join(sorted(self.users))})"
            )
        return u

    def level_for(self, user: str, purpose: str) -> Level:
        """The security level of ``user`` asking for ``purpose`` (Xu & Guo 2021, Table 1)."""
        u = self.user(user)
        if purpose not in self.purposes:
            raise AnonymizeError(
                f"{self.source}: unknown purpose '{purpose}' (the policy defines: {', '.join(sorted(self.purposes))})"
            )
        name = u.levels.get(purpose)
        if name is None:
            allowed = ", ".join(sorted(u.levels)) or "none"
            raise AnonymizeError(
                f"{self.source}: user '{user}' may not receive data for purpose '{purpose}' (allowed: {allowed})"
            )
        return self.levels[name]

    def quality_for(self, user: str) -> QualityRequirement | None:
        """The user's quality requirement, else the policy's default (None: no requirement)."""
        u = self.user(user)
        return u.quality if u.quality is not None else self.quality


def load_policy(path) -> Policy:
    """Read and validate a policy file (module docstring); errors are one line naming the key."""
    p = Path(path)
    if not p.is_file():
        raise AnonymizeError(f"policy file not found: {p}")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AnonymizeError(f"{p}: not a text file") from None
    except tomllib.TOMLDecodeError as e:
        raise AnonymizeError(f"{p}: not valid TOML: {e}") from None
    return parse_policy(data, source=str(p))


# ---------------------------------------------------------------------------------------------- helpers


class _Reader:
    """Typed access to one TOML table with unknown-key detection and key paths in messages."""

    def __init__(self, source: str, path: str, data):
        self.source, self.path = source, path
        if not isinstance(data, dict):
            self.fail(f"'{path}' must be a table")
        self.data = data

    def fail(self, msg: str):
        raise AnonymizeError(f"{self.source}: {msg}")

    def key(self, k: str) -> str:
        return f"{self.path}.{k}" if self.path else k

    def only(self, known) -> None:
        for k in self.data:
            if k not in known:
                where = f" in [{self.path}]" if self.path else ""
                self.fail(f"unknown key '{self.key(k)}'{where} (known: {', '.join(sorted(known))})")

    def get(self, k: str, kind, default=None, required: bool = False):
        if k not in self.data:
            if required:
                self.fail(f"missing key '{self.key(k)}'")
            return default
        v = self.data[k]
        if kind is float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                self.fail(f"'{self.key(k)}' must be a number, got {v!r}")
            v = float(v)
            if not math.isfinite(v):
                self.fail(f"'{self.key(k)}' must be finite, got {v!r}")
            return v
        if kind is int:
            if isinstance(v, bool) or not isinstance(v, int):
                self.fail(f"'{self.key(k)}' must be an integer, got {v!r}")
            return v
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            name = {str: "a string", bool: "true or false", dict: "a table", list: "a list"}.get(kind, str(kind))
            self.fail(f"'{self.key(k)}' must be {name}, got {v!r}")
        return v

    def sub(self, k: str, required: bool = False) -> _Reader:
        return _Reader(self.source, self.key(k), self.get(k, dict, {}, required))


def _quality(r: _Reader) -> QualityRequirement:
    r.only({"metric", "bound"})
    metric = r.get("metric", str, required=True)
    if metric not in QUALITY_METRICS:
        r.fail(f"'{r.key('metric')}' must be one of {', '.join(QUALITY_METRICS)}, got {metric!r}")
    bound = r.get("bound", float, required=True)
    try:
        return QualityRequirement(metric, bound)
    except AnonymizeError as e:
        r.fail(f"'{r.key('bound')}': {e}")
        raise


def _owner(r: _Reader) -> PrivacyRequirement:
    r.only({"pmax", "k", "l", "t"})
    pmax = r.get("pmax", float, required=True)
    if not 0.0 < pmax <= 1.0:
        r.fail(f"'{r.key('pmax')}' must be in (0, 1] (a probability bound), got {pmax:g}")
    k = r.get("k", int)
    if k is not None and k < 1:
        r.fail(f"'{r.key('k')}' must be at least 1, got {k}")
    l = r.get("l", int)
    if l is not None and l < 1:
        r.fail(f"'{r.key('l')}' must be at least 1, got {l}")
    t = r.get("t", float)
    if t is not None and not 0.0 <= t <= 1.0:
        r.fail(f"'{r.key('t')}' must be in [0, 1], got {t:g}")
    return PrivacyRequirement(pmax, k, l, t)


def _release(r: _Reader) -> ReleaseSettings:
    r.only({"max_suppression", "suppressed_rows", "numeric_output", "t_distance", "t_ground", "max_evaluations"})
    sup = r.get("max_suppression", float, 0.0)
    if not 0.0 <= sup <= 1.0:
        r.fail(f"'{r.key('max_suppression')}' must be a fraction in [0, 1], got {sup:g}")
    choices = {
        "suppressed_rows": SUPPRESSED_ROWS_MODES,
        "numeric_output": NUMERIC_OUTPUTS,
        "t_distance": DISTANCES,
        "t_ground": GROUNDS,
    }
    vals = {}
    for k, allowed in choices.items():
        v = r.get(k, str)
        if v is not None and v not in allowed:
            r.fail(f"'{r.key(k)}' must be one of {', '.join(allowed)}, got {v!r}")
        vals[k] = v
    if vals["t_ground"] is not None and (vals["t_distance"] or "emd") != "emd":
        r.fail(f"'{r.key('t_ground')}' applies to t_distance = \"emd\" only")
    n_eval = r.get("max_evaluations", int, 100)
    if n_eval < 1:
        r.fail(f"'{r.key('max_evaluations')}' must be at least 1, got {n_eval}")
    return ReleaseSettings(
        sup,
        vals["suppressed_rows"] or "star",
        vals["numeric_output"] or "range",
        vals["t_distance"] or "emd",
        vals["t_ground"],
        n_eval,
    )


_LEVEL_KEYS = {"description", "model", "algorithm", "k", "l", "t", "kinds", "escalate"}


def _level(name: str, r: _Reader) -> Level:
    r.only(_LEVEL_KEYS)
    model = r.get("model", str, required=True)
    if model not in FAMILIES:
        r.fail(f"'{r.key('model')}' must be one of {', '.join(FAMILIES)}, got {model!r}")
    alg_name = r.get("algorithm", str, "flash")
    if alg_name not in registry.names():
        r.fail(f"'{r.key('algorithm')}': unknown algorithm {alg_name!r} (registered: {', '.join(registry.names())})")
    alg = registry.get(alg_name)
    if alg.kind not in PUBLISHABLE_KINDS:
        r.fail(
            f"'{r.key('algorithm')}': {alg_name} is a {alg.kind} algorithm; a level needs one that releases a "
            f"generalized table ({', '.join(PUBLISHABLE_KINDS)})"
        )
    if not honours(alg, model):
        r.fail(f"'{r.key('algorithm')}': {alg_name} cannot honour {model} (it accepts {alg.accepted_text()})")
    k = r.get("k", int, required=True)
    if k < 1:
        r.fail(f"'{r.key('k')}' must be at least 1, got {k}")
    params: dict = {"k": k}
    l = r.get("l", int, required=model == "l-diversity")
    t = r.get("t", float, required=model == "t-closeness")
    if model == "l-diversity":
        if l < 1:
            r.fail(f"'{r.key('l')}' must be at least 1, got {l}")
        params["l"] = l
    elif l is not None:
        r.fail(f"'{r.key('l')}' is a parameter of l-diversity, not of {model}")
    if model == "t-closeness":
        if not 0.0 <= t <= 1.0:
            r.fail(f"'{r.key('t')}' must be in [0, 1], got {t:g}")
        params["t"] = t
    elif t is not None:
        r.fail(f"'{r.key('t')}' is a parameter of t-closeness, not of {model}")
    kinds = r.get("kinds", list, list(PUBLISHABLE_KINDS))
    for kd in kinds:
        if kd not in PUBLISHABLE_KINDS:
            r.fail(
                f"'{r.key('kinds')}': {kd!r} is not a kind of algorithm the engine can use ({', '.join(PUBLISHABLE_KINDS)})"
            )
    return Level(
        name,
        model,
        alg_name,
        params,
        tuple(kinds),
        r.get("escalate", bool, True),
        r.get("description", str, ""),
    )


def _user(name: str, r: _Reader, purposes: dict, levels: dict) -> User:
    r.only({"description", "levels", "quality"})
    lv = r.sub("levels", required=True)
    mapping = {}
    for purpose, level in lv.data.items():
        if purpose not in purposes:
            lv.fail(
                f"'{lv.key(purpose)}': unknown purpose '{purpose}' (the policy defines: {', '.join(sorted(purposes))})"
            )
        if not isinstance(level, str):
            lv.fail(f"'{lv.key(purpose)}' must name a level, got {level!r}")
        if level not in levels:
            lv.fail(f"'{lv.key(purpose)}': unknown level '{level}' (the policy defines: {', '.join(sorted(levels))})")
        mapping[purpose] = level
    quality = _quality(r.sub("quality")) if "quality" in r.data else None
    return User(name, mapping, quality, r.get("description", str, ""))


def parse_policy(data: dict, source: str = "policy") -> Policy:
    """Validate a parsed policy (module docstring) and build a :class:`Policy`."""
    top = _Reader(source, "", data)
    top.only({"version", "owner", "release", "quality", "purposes", "users", "levels"})
    version = top.get("version", int, 1)
    if version != 1:
        top.fail(f"'version' {version} is not supported (this ppdm reads version 1)")
    owner = _owner(top.sub("owner", required=True))
    release = _release(top.sub("release"))
    quality = _quality(top.sub("quality")) if "quality" in data else None
    pr = top.sub("purposes", required=True)
    purposes = {}
    for k, v in pr.data.items():
        if not isinstance(v, str):
            pr.fail(f"'{pr.key(k)}' must be a description (a string), got {v!r}")
        purposes[k] = v
    if not purposes:
        top.fail("[purposes] defines no purpose")
    lr = top.sub("levels", required=True)
    levels = {name: _level(name, lr.sub(name)) for name in lr.data}
    if not levels:
        top.fail("[levels] defines no level")
    ur = top.sub("users", required=True)
    users = {name: _user(name, ur.sub(name), purposes, levels) for name in ur.data}
    if not users:
        top.fail("[users] defines no user")
    return Policy(source, owner, release, quality, purposes, users, levels)
