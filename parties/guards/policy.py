"""What an analyst may ask of this party: the ``[policy]`` of ``party.toml`` and the session guards.

Why
---
The analyst chooses the job, its parameters and the party list of every
session. Without a policy, ``StartJob(job="secure_sum", parties=["alice"])``
returns alice's vector in the clear, and sums over {a,b}, {a,c}, {b,c} solve
for every input — the *differencing* (tracker) attack on aggregate queries of
D. E. Denning, P. J. Denning, M. D. Schwartz, "The Tracker: A Threat to
Statistical Database Security", ACM TODS 4(1), 1979. Each party therefore
decides for itself which sessions it joins; a session that breaks one party's
policy is refused **by that party**, before it sends any protocol message,
with job error kind ``refused`` and one line naming the rule.

Policy (``[policy]``, all keys optional)::

    [policy]
    jobs = ["mine.horizontal", "ping"]   # jobs this party runs (default: every registered job
                                         # but the diagnostic ones)
    diagnostics = false                  # also run the diagnostic jobs (exchange, sleep, fail, ...)
    min_parties = 3                      # sum-style jobs need this many parties (default 3, never below 2)
    co_parties = ["bob", "carol"]        # parties it runs sessions with (default: every configured peer)

    [policy.job."mine.horizontal"]       # per-job rules
    min_parties = 4                      # overrides the minimum for this job (>= 2)
    floor = { min_support = "1/20" }     # parameters that must be at least this (exact rationals)
    cap = { n_items = 5000, max_len = 4 }  # parameters that may be at most this
    max_length = 100000                  # cap on this party's own input vector (jobs that read one)

    [policy.analyst.analyst]             # per-analyst rights (default: every allowed job)
    jobs = ["mine.horizontal"]

The minimum number of parties of a job (:func:`min_parties_for`): the job's
``min_parties`` if set; else ``policy.min_parties`` for *sum-style* jobs (whose
result is a sum over the parties' inputs: ``secure_sum``, ``mine.horizontal``);
else 2 for jobs on private data; else 1 (diagnostics on synthetic data). A
parameter named in ``floor`` or ``cap`` must be given (a missing ``max_len``
means "unbounded", which a cap refuses).

Session guards
--------------
The daemon runs a list of *session guards* (:class:`SessionGuard`) on every
``StartJob`` after identifying the analyst and before starting the session;
the first :class:`Refusal` refuses it. The policy is the first guard
(:class:`PolicyGuard`); other guards plug in at the same point
(:attr:`parties.runtime.daemon.Daemon.guards`) — e.g. an auditor that refuses sessions
whose revealed sums would disclose one party's input. Each guard also hears,
through :meth:`SessionGuard.finished`, how every session it admitted ended
(this party's result or the error), to keep its state. A guard that keeps
state at ``check`` (an auditor, a budget) may also define
``withdrawn(request, reason)``: called (:func:`withdraw_guards`) when a
session it admitted never starts here after all — a later guard refused it,
or the daemon could not start it — so its job never ran at this party.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from parties.ratio import exact_ratio

__all__ = [
    "DEFAULT_MIN_PARTIES",
    "JobRule",
    "Policy",
    "PolicyError",
    "Refusal",
    "SessionRequest",
    "SessionGuard",
    "Guard",
    "PolicyGuard",
    "check_session",
    "min_parties_for",
    "parse_policy",
    "run_guards",
    "withdraw_guards",
]

log = logging.getLogger("ppdm.policy")

DEFAULT_MIN_PARTIES = 3  # sum-style jobs
ABSOLUTE_MIN_PARTIES = 2  # no configured minimum may go below this


class PolicyError(ValueError):
    """An invalid ``[policy]`` table (one line naming the key)."""


@dataclass(frozen=True)
class JobRule:
    """``[policy.job.NAME]``: rules for one job."""

    min_parties: int | None = None
    floor: Mapping[str, Fraction] = field(default_factory=dict)  # param >= value
    cap: Mapping[str, Fraction] = field(default_factory=dict)  # param <= value
    max_length: int | None = None  # this party's input vector (checked by the job, see JobContext)


@dataclass(frozen=True)
class Policy:
    """A party's policy (``[policy]``); the default allows every job with the default minimums."""

    jobs: frozenset[str] | None = None  # None: every registered job (diagnostic ones with diagnostics)
    min_parties: int = DEFAULT_MIN_PARTIES
    co_parties: frozenset[str] | None = None  # None: every configured peer
    job: Mapping[str, JobRule] = field(default_factory=dict)
    analyst_jobs: Mapping[str, frozenset[str]] = field(default_factory=dict)
    diagnostics: bool = False  # run the diagnostic jobs (loads and failures on purpose) without listing them

    def rule(self, job: str) -> JobRule:
        return self.job.get(job) or JobRule()

    def named_jobs(self) -> set[str]:
        """Every job name the policy mentions (the daemon checks they exist once jobs are loaded)."""
        names = set(self.jobs or ()) | set(self.job)
        for js in self.analyst_jobs.values():
            names |= js
        return names


@dataclass(frozen=True)
class SessionRequest:
    """A ``StartJob`` as the guards see it (the analyst is its TLS identity)."""

    party: str  # this party
    analyst: str
    session: str  # the analyst's session id
    job: str
    parties: tuple[str, ...]
    params: Mapping[str, Any]
    private_data: bool = True  # parties.jobs.JobInfo flags of the job
    sum_style: bool = True
    diagnostic: bool = False


@dataclass(frozen=True)
class Refusal:
    """Why a guard refuses a session: ``rule`` names the setting, ``reason`` is the one line shown."""

    rule: str
    reason: str

    def __str__(self) -> str:
        return self.reason


@runtime_checkable
class SessionGuard(Protocol):
    """One check every ``StartJob`` passes before its session starts (see the module docstring)."""

    def check(self, request: SessionRequest) -> Refusal | None:
        """None to admit the session, a :class:`Refusal` to refuse it. Must not block."""
        ...

    def finished(self, request: SessionRequest, result: Mapping[str, Any] | None, error: str | None) -> None:
        """An admitted session ended here: ``result`` is this party's job result, or ``error`` why it failed."""
        ...


class Guard:
    """Base class of guards that need no end-of-session hook."""

    name = "guard"

    def check(self, request: SessionRequest) -> Refusal | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def finished(self, request: SessionRequest, result: Mapping[str, Any] | None, error: str | None) -> None:
        return None


class PolicyGuard(Guard):
    """The party's ``[policy]`` as a session guard."""

    name = "policy"

    def __init__(self, policy: Policy):
        self.policy = policy

    def check(self, request: SessionRequest) -> Refusal | None:
        return check_session(self.policy, request)


def run_guards(guards: Sequence[SessionGuard], request: SessionRequest) -> Refusal | None:
    """The first refusal of ``guards`` (in order), or None. A guard that raises refuses (fails closed).

    The guards that admitted the session before the refusing one are told it was
    withdrawn (:func:`withdraw_guards`).
    """
    for i, g in enumerate(guards):
        try:
            r = g.check(request)
        except Exception as e:
            name = getattr(g, "name", type(g).__name__)
            log.error("session guard %s raised %s: %s", name, type(e).__name__, e)
            r = Refusal(f"guard.{name}", f"session guard {name!r} failed ({type(e).__name__}); see that party's log")
        if r is not None:
            withdraw_guards(guards[:i], request, r.reason)
            return r
    return None


def withdraw_guards(guards: Sequence[SessionGuard], request: SessionRequest, reason: str) -> None:
    """Tell ``guards`` that a session they admitted will not start here (its job never runs at this party).

    Only guards with a ``withdrawn(request, reason)`` method are told; one that raises is logged.
    """
    for g in guards:
        hook = getattr(g, "withdrawn", None)
        if hook is None:
            continue
        try:
            hook(request, reason)
        except Exception as e:
            log.error(
                "session guard %s raised %s in withdrawn(): %s",
                getattr(g, "name", type(g).__name__),
                type(e).__name__,
                e,
            )


def min_parties_for(policy: Policy, job: str, *, private_data: bool, sum_style: bool) -> int:
    """The fewest parties a session of ``job`` may have under ``policy`` (see the module docstring)."""
    rule = policy.rule(job)
    if rule.min_parties is not None:
        return rule.min_parties
    if sum_style:
        return policy.min_parties
    return ABSOLUTE_MIN_PARTIES if private_data else 1


def _fmt(x: Fraction) -> str:
    """An exact rational as a person writes it: ``3``, ``0.05`` (terminating decimals, exactly), else ``1/3``."""
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return str(x)
    k = max(twos, fives)
    digits = abs(x.numerator) * 10**k // x.denominator  # exact: the denominator divides 10^k
    sign = "-" if x < 0 else ""
    if k == 0:
        return f"{sign}{digits}"
    whole, frac = divmod(digits, 10**k)
    return f"{sign}{whole}.{frac:0{k}d}"


def check_session(policy: Policy, request: SessionRequest) -> Refusal | None:
    """Check one session against the policy; None if allowed, else the first rule it breaks.

    Rules in order: the job is allowed; the analyst may run it; every other
    party is an accepted co-party; enough parties; parameter floors and caps.
    """
    job, analyst = request.job, request.analyst
    if policy.jobs is not None and job not in policy.jobs:
        return Refusal("policy.jobs", f"policy does not allow job {job}")
    if request.diagnostic and not policy.diagnostics and policy.jobs is None:
        return Refusal(
            "policy.diagnostics",
            f"{job} is a diagnostic job: this party runs it only with [policy] diagnostics = true or jobs listing it",
        )
    rights = policy.analyst_jobs.get(analyst)
    if rights is not None and job not in rights:
        return Refusal(f"policy.analyst.{analyst}.jobs", f"policy does not allow analyst {analyst!r} to run {job}")
    if policy.co_parties is not None:
        strangers = [p for p in request.parties if p != request.party and p not in policy.co_parties]
        if strangers:
            return Refusal("policy.co_parties", f"policy does not accept {strangers[0]!r} as a co-party")
    need = min_parties_for(policy, job, private_data=request.private_data, sum_style=request.sum_style)
    got = len(request.parties)
    if got < need:
        where = f"policy.job.{job}.min_parties" if policy.rule(job).min_parties is not None else "policy.min_parties"
        return Refusal(where, f"policy requires at least {need} parties for {job} (got {got})")
    rule = policy.rule(job)
    for bounds, is_floor in ((rule.floor, True), (rule.cap, False)):
        for param, bound in bounds.items():
            key = f"policy.job.{job}.{'floor' if is_floor else 'cap'}.{param}"
            v = request.params.get(param)
            if v is None:
                return Refusal(
                    key, f"policy requires {param} {'>=' if is_floor else '<='} {_fmt(bound)} for {job} (not given)"
                )
            try:
                x = exact_ratio(v, param)
            except ValueError:
                return Refusal(key, f"policy bounds {param} for {job}: it must be a number")
            if (x < bound) if is_floor else (x > bound):
                return Refusal(
                    key, f"policy requires {param} {'>=' if is_floor else '<='} {_fmt(bound)} for {job} (got {_fmt(x)})"
                )
    return None


# --------------------------------------------------------------------------- parsing
def _names(v: Any, key: str, what: str) -> frozenset[str]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise PolicyError(f"{key} must be a list of {what}, got {v!r}")
    return frozenset(v)


def _min_parties(v: Any, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < ABSOLUTE_MIN_PARTIES:
        raise PolicyError(f"{key} must be an integer >= {ABSOLUTE_MIN_PARTIES}, got {v!r}")
    return v


def _bounds(v: Any, key: str) -> dict[str, Fraction]:
    if not isinstance(v, Mapping):
        raise PolicyError(f'{key} must be a table of parameter = number, e.g. {{ min_support = "1/20" }}')
    out = {}
    for p, b in v.items():
        if isinstance(b, Mapping):
            raise PolicyError(f"{key}.{p} must be a number, got a table")
        try:
            out[p] = exact_ratio(b, f"{key}.{p}")
        except ValueError as e:
            raise PolicyError(str(e)) from None
    return out


def _job_rule(t: Any, key: str) -> JobRule:
    if not isinstance(t, Mapping):
        raise PolicyError(f"{key} must be a table")
    extra = sorted(set(t) - {"min_parties", "floor", "cap", "max_length"})
    if extra:
        raise PolicyError(f"unknown key {key}.{extra[0]} (allowed: cap, floor, max_length, min_parties)")
    ml = t.get("max_length")
    if ml is not None and (isinstance(ml, bool) or not isinstance(ml, int) or ml < 1):
        raise PolicyError(f"{key}.max_length must be a positive integer, got {ml!r}")
    return JobRule(
        min_parties=None if "min_parties" not in t else _min_parties(t["min_parties"], f"{key}.min_parties"),
        floor=_bounds(t.get("floor", {}), f"{key}.floor"),
        cap=_bounds(t.get("cap", {}), f"{key}.cap"),
        max_length=ml,
    )


def parse_policy(t: Any, *, analysts: Iterable[str], peers: Iterable[str]) -> Policy:
    """Validate a ``[policy]`` table (raises :class:`PolicyError` naming the key)."""
    if t is None:
        return Policy()
    if not isinstance(t, Mapping):
        raise PolicyError("policy must be a table [policy]")
    extra = sorted(set(t) - {"jobs", "min_parties", "co_parties", "job", "analyst", "diagnostics"})
    if extra:
        raise PolicyError(
            f"unknown key policy.{extra[0]} (allowed: analyst, co_parties, diagnostics, job, jobs, min_parties)"
        )
    diagnostics = t.get("diagnostics", False)
    if not isinstance(diagnostics, bool):
        raise PolicyError(f"policy.diagnostics must be true or false, got {diagnostics!r}")
    jobs = _names(t["jobs"], "policy.jobs", "job names") if "jobs" in t else None
    min_parties = _min_parties(t.get("min_parties", DEFAULT_MIN_PARTIES), "policy.min_parties")
    co = None
    if "co_parties" in t:
        co = _names(t["co_parties"], "policy.co_parties", "peer names")
        unknown = sorted(co - set(peers))
        if unknown:
            raise PolicyError(f"policy.co_parties: {unknown[0]!r} is not a configured peer")
    jt = t.get("job", {})
    if not isinstance(jt, Mapping):
        raise PolicyError('policy.job must be tables [policy.job."NAME"]')
    rules = {name: _job_rule(r, f"policy.job.{name}") for name, r in jt.items()}
    at = t.get("analyst", {})
    if not isinstance(at, Mapping):
        raise PolicyError("policy.analyst must be tables [policy.analyst.NAME]")
    known = set(analysts)
    rights: dict[str, frozenset[str]] = {}
    for a, r in at.items():
        key = f"policy.analyst.{a}"
        if a not in known:
            raise PolicyError(f"{key}: {a!r} is not one of party.analysts")
        if not isinstance(r, Mapping):
            raise PolicyError(f"{key} must be a table with jobs = [...]")
        extra = sorted(set(r) - {"jobs"})
        if extra:
            raise PolicyError(f"unknown key {key}.{extra[0]} (allowed: jobs)")
        if "jobs" not in r:
            raise PolicyError(f"{key} needs jobs = [...]")
        rights[a] = _names(r["jobs"], f"{key}.jobs", "job names")
    return Policy(
        jobs=jobs, min_parties=min_parties, co_parties=co, job=rules, analyst_jobs=rights, diagnostics=diagnostics
    )
