"""Per-analyst differential-privacy budgets of a party daemon, and the session guard that spends them.

Configuration (``[dp]`` of ``party.toml``; without it, sessions asking for ``epsilon`` are refused)::

    [dp]
    total_epsilon = 2            # each analyst's budget, per data key (exact: 2, 0.5, 1/3)
    budget_dir = "dp-budgets"    # ledgers, relative to party.toml (default: dp-budgets next to it)
    require = true               # sessions on private data must ask for epsilon (default true)
    scope = "key"                # "key": one budget per analyst and data key (default);
                                 # "party": one per analyst over all data keys
    shared = false               # true: one budget for all analysts together (they may pool answers)
    [dp.analyst.auditor]         # per-analyst totals (override total_epsilon)
    total_epsilon = 0.5
    [dp.sensitivity]             # smallest sensitivity an analyst may claim for a secure_sum over
    vector = 10                  # an aggregated (1-D) vector [data] key; default 1

Ledgers: one :class:`anonymize.dp.BudgetAccountant` file per analyst and data key
(``<budget_dir>/<analyst>.<key>.json``; ``<analyst>.json`` with ``scope = "party"``; with
``shared = true`` the analyst part is ``all-analysts``; ``[data]`` keys naming the same file share
one ledger, as they share one audit state), basic
composition, written atomically under an exclusive ``flock``, so the budget survives restarts and
two daemons (or two sessions) cannot spend the same ε. Changing ``total_epsilon`` for a ledger that
exists is refused with one line (a budget is never silently reset or enlarged: the operator moves
the file away on purpose).

:class:`BudgetGuard` (installed by every :class:`parties.runtime.daemon.Daemon`) admits a ``StartJob``
with an ``epsilon`` parameter only if the job can honour it (:func:`parties.jobs.register_dp_job`), its DP
parameters are valid, and every data key it reads has ε left; it then **charges** ε to each ledger
(at admission, before any noise exists) — otherwise it refuses with error kind ``refused`` and one
line. A session without ``epsilon`` on private data is refused when ``require`` is set.

What is charged is settled when the session ends (:meth:`BudgetGuard.finished`): the job reports
each noisy release before making it (:func:`begin` → :meth:`Charge.release`), and the ledgers keep
exactly the ε released — a session refused by another party, or one that stops early (joint mining
finding no longer itemsets), gives back the rest. This is sound for pure ε-DP steps under basic
composition, even adaptive (R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy odometers and
filters: pay-as-you-go composition", NeurIPS 2016), which is why the daemon ledgers use basic
composition only. A job cannot release more than was charged (:meth:`Charge.release` refuses), and a
crash keeps the full charge (fail closed). A charge whose job never started — a later guard refused
the session — is returned after :data:`ADMIT_GRACE` seconds.

Limits of the guarantee: budgets are per analyst, so analysts who pool their answers add up their
ε; data keys with the same individuals should share one budget (``scope = "party"``); and exact
(non-DP) sessions on the same data, allowed with ``require = false``, void it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from anonymize.dp import BudgetAccountant, BudgetExceeded, as_epsilon
from anonymize.errors import AnonymizeError
from mpc.errors import ProtocolError
from parties.guards.data_keys import canonical_data_keys
from parties.guards.policy import Guard, Refusal, SessionRequest
from parties.jobs.registry import dp_job, dp_refusal_reason

__all__ = [
    "ADMIT_GRACE",
    "BudgetGuard",
    "Charge",
    "DPBudgetError",
    "DPConfig",
    "begin",
    "parse_dp",
]

log = logging.getLogger("ppdm.dp")

ADMIT_GRACE = 30.0  # seconds after admission by which a charged session's job must have started
SCOPES = ("key", "party")


class DPBudgetError(ProtocolError):
    """A job's noisy release is not covered by a charge of this session (the job refuses)."""


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class DPConfig:
    """A validated ``[dp]`` table."""

    budget_dir: Path
    total_epsilon: Fraction | None = None
    analysts: Mapping[str, Fraction] = field(default_factory=dict)
    require: bool = True
    scope: str = "key"
    sensitivity: Mapping[str, int] = field(default_factory=dict)
    shared: bool = False  # one budget for all analysts together

    def total_for(self, analyst: str) -> Fraction | None:
        return self.total_epsilon if self.shared else self.analysts.get(analyst, self.total_epsilon)


def _eps(v: Any, key: str) -> Fraction:
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f'{key} must be a positive number (2, 0.5 or "1/3"), got {v!r}')
    try:
        return as_epsilon(v, key)
    except AnonymizeError as e:
        raise ValueError(str(e)) from None


def parse_dp(t: Any, base_dir: Path, analysts: Sequence[str]) -> DPConfig | None:
    """Validate a ``[dp]`` table (``ValueError`` naming the key); None when absent."""
    if t is None:
        return None
    if not isinstance(t, Mapping):
        raise ValueError("dp must be a table [dp]")
    extra = sorted(set(t) - {"total_epsilon", "budget_dir", "require", "scope", "analyst", "sensitivity", "shared"})
    if extra:
        raise ValueError(
            f"unknown key dp.{extra[0]} "
            "(allowed: analyst, budget_dir, require, scope, sensitivity, shared, total_epsilon)"
        )
    shared = t.get("shared", False)
    if not isinstance(shared, bool):
        raise ValueError(f"dp.shared must be true or false, got {shared!r}")
    if shared and "analyst" in t:
        raise ValueError("dp.shared = true is one budget for all analysts: drop the [dp.analyst.NAME] tables")
    total = _eps(t["total_epsilon"], "dp.total_epsilon") if "total_epsilon" in t else None
    bd = t.get("budget_dir", "dp-budgets")
    if not isinstance(bd, str) or not bd:
        raise ValueError(f"dp.budget_dir must be a path, got {bd!r}")
    budget_dir = Path(bd).expanduser()
    budget_dir = budget_dir if budget_dir.is_absolute() else Path(base_dir) / budget_dir
    require = t.get("require", True)
    if not isinstance(require, bool):
        raise ValueError(f"dp.require must be true or false, got {require!r}")
    scope = t.get("scope", "key")
    if scope not in SCOPES:
        raise ValueError(f"dp.scope must be 'key' or 'party', got {scope!r}")
    at = t.get("analyst", {})
    if not isinstance(at, Mapping):
        raise ValueError("dp.analyst must be tables [dp.analyst.NAME]")
    per: dict[str, Fraction] = {}
    for a, r in at.items():
        if a not in analysts:
            raise ValueError(f"dp.analyst.{a}: {a!r} is not one of party.analysts")
        if not isinstance(r, Mapping) or set(r) != {"total_epsilon"}:
            raise ValueError(f"dp.analyst.{a} must be a table with total_epsilon = ... only")
        per[a] = _eps(r["total_epsilon"], f"dp.analyst.{a}.total_epsilon")
    st = t.get("sensitivity", {})
    if not isinstance(st, Mapping):
        raise ValueError("dp.sensitivity must be a table of data key = positive integer")
    sens: dict[str, int] = {}
    for k, v in st.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"dp.sensitivity.{k} must be a positive integer, got {v!r}")
        sens[k] = v
    return DPConfig(budget_dir, total, per, require, scope, sens, shared)


def _key_file(key: str) -> str:
    """A data key as a file-name part: itself when plain, else a hash (keys are free-form TOML keys)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", key):
        return key
    return "k-" + hashlib.sha256(key.encode()).hexdigest()[:24]


# --------------------------------------------------------------------------- charges of running sessions
class Charge:
    """The ε charged for one admitted session, and the ε its job has released so far."""

    def __init__(self, request: SessionRequest, epsilon: Fraction, ledgers: list[BudgetAccountant], label: dict):
        self.request = request
        self.epsilon = epsilon
        self.ledgers = ledgers
        self.label = label
        self.admitted = time.monotonic()
        self.started = False
        self.released = Fraction(0)
        self._lock = threading.Lock()

    def release(self, epsilon) -> None:
        """Record a noisy release of ``epsilon`` *before* making it; refuses past the charge."""
        e = Fraction(epsilon)
        with self._lock:
            if self.released + e > self.epsilon:
                raise DPBudgetError(
                    f"this release needs epsilon {float(e):.6g} beyond the {float(self.epsilon):.6g} charged for the session"
                )
            self.released += e


_CHARGES: dict[tuple[str, str], Charge] = {}
_CHARGES_LOCK = threading.Lock()


def _session_key(request: SessionRequest) -> str:
    return f"{request.analyst}/{request.session}"


def begin(party: str, session_key: str, epsilon) -> Charge:
    """The charge of session ``session_key`` at ``party``, for a job about to release up to ``epsilon``.

    Raises :class:`DPBudgetError` when the session was not charged (no budget guard admitted it)
    or was charged less than ``epsilon``.
    """
    with _CHARGES_LOCK:
        c = _CHARGES.get((party, session_key))
        if c is None:
            raise DPBudgetError(
                "no privacy budget was charged for this session (it was not admitted by a budget guard)"
            )
        if c.epsilon < Fraction(epsilon):
            raise DPBudgetError(f"the session was charged epsilon {float(c.epsilon):.6g}, less than it asks")
        c.started = True
        return c


# --------------------------------------------------------------------------- the guard
class BudgetGuard(Guard):
    """Admits sessions with ``epsilon`` while budget is left, and charges them (module docstring)."""

    name = "dp"

    def __init__(self, config: DPConfig | None, party: str, data: Mapping[str, Any] | None = None):
        self.config = config
        self.party = party
        self.data_keys = canonical_data_keys(data or {})  # [data] keys naming one file share a ledger

    def _ledger(self, analyst: str, key: str, total: Fraction) -> BudgetAccountant:
        assert self.config is not None
        who = "all-analysts" if self.config.shared else analyst
        name = f"{who}.json" if self.config.scope == "party" else f"{who}.{_key_file(key)}.json"
        path = self.config.budget_dir / name
        self.config.budget_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return BudgetAccountant.create(path, total, exist_ok=True)

    def budget_left(self) -> list[tuple[str, str, float]]:
        """``(analyst, data key, epsilon left)`` of every ledger on disk (data key ``*``: party scope;
        analyst ``all-analysts``: a shared budget; a hashed key file name stands for a long key) — for metrics."""
        cfg = self.config
        if cfg is None or not cfg.budget_dir.is_dir():
            return []
        out = []
        for f in sorted(cfg.budget_dir.glob("*.json")):
            who, _, key = f.name[: -len(".json")].partition(".")
            try:
                left = BudgetAccountant(f).status()["epsilon_left"]
            except (AnonymizeError, OSError, ValueError, KeyError):
                continue  # being created or unreadable: the next scrape reads it
            out.append((who, key or "*", float(left)))
        return out

    def check(self, request: SessionRequest) -> Refusal | None:
        self._sweep()
        raw = request.params.get("epsilon")
        job = request.job
        if raw is None:
            if self.config is not None and self.config.require and request.private_data:
                why = dp_refusal_reason(job)
                return Refusal(
                    "dp.require",
                    f"{self.party} requires epsilon (differential privacy) for sessions on its data"
                    + (f"; {job} cannot run with epsilon: {why}" if why else ""),
                )
            return None
        try:
            eps = _eps(raw, "epsilon")
        except ValueError as e:
            return Refusal("dp.epsilon", str(e))
        spec = dp_job(job)
        if spec is None:
            why = dp_refusal_reason(job) or "it adds no differentially private noise"
            return Refusal("dp.job", f"{job} cannot run with epsilon: {why}")
        try:
            spec.check(request.params, len(request.parties), self.config)
        except ValueError as e:
            return Refusal("dp.params", str(e))
        cfg = self.config
        total = None if cfg is None else cfg.total_for(request.analyst)
        if cfg is None or total is None:
            return Refusal(
                "dp.budget", f"{self.party} has no privacy budget for analyst {request.analyst!r} ([dp] total_epsilon)"
            )
        key = _session_key(request)
        with _CHARGES_LOCK:
            if (self.party, key) in _CHARGES:
                return Refusal("dp.session", f"session {request.session} already holds a privacy charge here")
        keys = (self.data_keys.get(k, k) for k in spec.keys(request.params))
        scopes = ["*"] if cfg.scope == "party" else list(dict.fromkeys(keys))
        label = {"session": request.session, "job": job, "parties": list(request.parties), "admitted": time.time()}
        charged: list[BudgetAccountant] = []
        try:
            for data_key in scopes:
                acc = self._ledger(request.analyst, data_key, total)
                try:
                    acc.spend(eps, lambda: None, label=label)
                except BudgetExceeded:
                    left = acc.status()["epsilon_left"]
                    what = "" if data_key == "*" else f" for data {data_key!r}"
                    return Refusal(
                        "dp.budget",
                        f"privacy budget of analyst {request.analyst!r}{what} is spent: this session needs epsilon "
                        f"{float(eps):.6g}, {left:.6g} of {float(total):.6g} is left",
                    )
                charged.append(acc)
        except (AnonymizeError, OSError) as e:
            log.error("privacy budget of %s: %s", request.analyst, e)
            return Refusal(
                "dp.ledger", f"{self.party} cannot use its privacy budget ledger ({type(e).__name__}); see its log"
            )
        finally:
            if len(charged) < len(scopes):  # refused part-way: give back what was charged
                for acc in charged:
                    _settle(acc, label, Fraction(0))
        with _CHARGES_LOCK:
            _CHARGES[(self.party, key)] = Charge(request, eps, charged, label)
        log.info("session %s: charged epsilon %s to %s (%s)", key, eps, request.analyst, ", ".join(scopes))
        return None

    def finished(self, request: SessionRequest, result: Mapping[str, Any] | None, error: str | None) -> None:
        key = _session_key(request)
        with _CHARGES_LOCK:
            c = _CHARGES.get((self.party, key))
            if c is None or c.request is not request:
                return
            del _CHARGES[(self.party, key)]
        if c.released < c.epsilon:
            for acc in c.ledgers:
                _settle(acc, c.label, c.released)
            log.info("session %s: epsilon %s of %s released, the rest returned", key, c.released, c.epsilon)

    def _sweep(self) -> None:
        """Return the charges of sessions admitted here whose job never started (a later guard refused)."""
        now = time.monotonic()
        with _CHARGES_LOCK:
            stale = [
                k
                for k, c in _CHARGES.items()
                if k[0] == self.party and not c.started and now - c.admitted > ADMIT_GRACE
            ]
            gone = [_CHARGES.pop(k) for k in stale]
        for c in gone:
            for acc in c.ledgers:
                _settle(acc, c.label, Fraction(0))


def _settle(acc: BudgetAccountant, label: dict, epsilon: Fraction) -> None:
    try:
        acc.settle(label, epsilon)
    except (AnonymizeError, OSError) as e:  # the charge stays: fail closed
        log.error("could not return unreleased epsilon to %s: %s", acc.path, e)
