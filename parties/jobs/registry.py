"""The job registry: what a daemon can run when the analyst calls ``StartJob`` (re-exported by :mod:`parties.jobs`).

A job is an async function of a :class:`JobContext` returning a JSON-able dict::

    from parties.jobs import job, JobContext

    @job("secure_sum")
    async def secure_sum_job(ctx: JobContext) -> dict:
        x = load_vector(ctx.data_path("values"))
        total = await secure_sum(ctx.ch, x)        # ctx.ch is an mpc Channel
        return {"sum": total.tolist()}

Every party of a session runs the same job with the same ``params`` on its own
data; ``ctx.ch`` connects it to the others. A job raises
:class:`mpc.errors.ProtocolError` (or :class:`JobError`) with a message that is
safe to show to the other parties and the analyst; any other exception is
reported only by its type (its message might carry private data) and logged
locally.

Importing :mod:`parties.jobs` has no side effects beyond registering the built-in
diagnostic jobs of :mod:`parties.jobs.diagnostic` (``ping``, ``exchange``,
``fail``, ``sleep``, ``bench_send``, ``pingpong``): no gRPC import. The daemon
imports :data:`JOB_MODULES` (those that exist) plus the ``[jobs] modules`` of
its config and ``$PPDM_JOB_MODULES``.

Jobs that add differentially private noise declare it here (:func:`register_dp_job`,
:func:`refuse_dp_job`); the daemon's budget guard (:mod:`parties.guards.dp_budget`)
reads those declarations and hands an admitted session's charge to its job through
:meth:`JobContext.privacy_charge`. Guards wrap jobs; jobs never import a guard.

Modules: :mod:`parties.jobs.mining` (joint mining), :mod:`parties.jobs.mpc_bench`
(every ``mpc`` primitive on seeded inputs, for ``ppdm bench mpc``, with
:mod:`parties.jobs.bench_inputs`), :mod:`parties.jobs.diagnostic`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from mpc.channel import Channel
from mpc.errors import ProtocolError

__all__ = [
    "DPJobSpec",
    "JobContext",
    "JobError",
    "JobInfo",
    "PolicyRefusal",
    "PrivacyCharge",
    "UnknownJobError",
    "dp_job",
    "dp_refusal_reason",
    "job",
    "get_job",
    "job_info",
    "registered_jobs",
    "register_dp_job",
    "refuse_dp_job",
]

log = logging.getLogger("ppdm.jobs")


class JobError(ProtocolError):
    """A job cannot run as asked (bad params, missing data...): a message safe to share."""


class UnknownJobError(JobError):
    """No job is registered under the requested name."""


class PolicyRefusal(JobError):
    """This party's policy refuses the session (reported to the analyst with error kind ``refused``).

    Raised by a job that can check a rule only once it has read its own data
    (e.g. ``[policy.job.secure_sum] max_length``), before it sends anything.
    """


class PrivacyCharge(Protocol):
    """The privacy budget charged to a session at admission, as its job sees it."""

    def release(self, epsilon: Any) -> None:
        """Record a noisy release of ``epsilon`` *before* making it; raises past the charge."""


@dataclass
class JobContext:
    """What a job gets: its party name, the session channel, the analyst's params, the party config."""

    name: str
    ch: Channel
    params: dict[str, Any]
    config: Any = None  # parties.config.PartyConfig (or None in unit tests)
    session: str = ""
    job: str = ""
    deadline: float | None = None  # time.monotonic() deadline of the session
    log: logging.Logger = field(default_factory=lambda: log)
    max_length: int | None = None  # this party's policy cap on its input vector ([policy.job.NAME] max_length)
    # set by the daemon: the charge its budget guard made for this session (raises ProtocolError if none)
    privacy: Callable[[Any], PrivacyCharge] | None = None
    # called (in reverse order, off the event loop) when the session ends on any path: engines, spill files
    cleanup: list[Callable[[], Any]] = field(default_factory=list)

    @property
    def parties(self) -> tuple[str, ...]:
        return self.ch.parties

    @property
    def peers(self) -> list[str]:
        return [p for p in self.ch.parties if p != self.name]

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def data_path(self, key: str) -> Path:
        """The path configured as ``[data] <key>``; a clear :class:`JobError` if missing."""
        data = getattr(self.config, "data", None) or {}
        v = data.get(key)
        if v is None:
            raise JobError(f"party {self.name!r} has no [data] {key} in its config")
        p = Path(v)
        if not p.exists():
            raise JobError(f"party {self.name!r}: data file for {key!r} does not exist")
        return p

    def data_source(self, key: str) -> Any:
        """The ``[data] <key>`` of this party as a :class:`parties.sources.TableSource` (clear JobError if missing)."""
        from parties.sources import SourceError, parse_source

        data = getattr(self.config, "data", None) or {}
        v = data.get(key)
        if v is None:
            raise JobError(f"party {self.name!r} has no [data] {key} in its config")
        if isinstance(v, str):
            try:
                return parse_source(key, v, Path(v).parent)
            except SourceError as e:
                raise JobError(f"party {self.name!r}: {e}") from None
        return v

    def param(self, key: str, kind: type | tuple[type, ...], default: Any = ..., *, min: float | None = None) -> Any:
        """A checked parameter: ``kind`` (e.g. ``int``), optional default and lower bound."""
        if key not in self.params:
            if default is ...:
                raise JobError(f"missing parameter {key!r}")
            return default
        v = self.params[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if isinstance(v, bool) and bool not in kinds or not isinstance(v, kinds):
            raise JobError(f"parameter {key!r} must be {'/'.join(k.__name__ for k in kinds)}, got {v!r}")
        if min is not None and cast(float, v) < min:  # kinds with a bound are numeric
            raise JobError(f"parameter {key!r} must be >= {min}, got {v!r}")
        return v

    def privacy_charge(self, epsilon: Any) -> PrivacyCharge:
        """The privacy charge of this session, for a job about to release up to ``epsilon``.

        A :class:`PolicyRefusal` when no budget guard charged the session, or charged less.
        """
        if self.privacy is None:
            raise PolicyRefusal(
                "no privacy budget was charged for this session (it was not admitted by a budget guard)"
            )
        try:
            return self.privacy(epsilon)
        except ProtocolError as e:
            raise PolicyRefusal(str(e)) from None

    def check_input_length(self, n: int, what: str = "input vector") -> None:
        """Refuse (:class:`PolicyRefusal`) an input longer than this party's policy allows.

        Call it after reading the party's data and before sending anything.
        """
        if self.max_length is not None and n > self.max_length:
            # the length itself is this party's business: say only that it is over the cap
            raise PolicyRefusal(f"policy caps the {what} of {self.job or 'this job'} at {self.max_length} elements")


JobFn = Callable[[JobContext], Awaitable[dict]]


@dataclass(frozen=True)
class JobInfo:
    """A registered job and what its result reveals, for the party policy (:mod:`parties.guards.policy`).

    ``private_data``: the job computes on the parties' own data, so a session
    of one party would hand that party's result to the analyst — it needs at
    least 2 parties. ``sum_style``: its result is a sum over the parties'
    inputs (a secure sum, joint horizontal mining's counts), which with two
    parties gives each its peer's input, and which sessions over different
    party sets difference into single inputs — the policy's ``min_parties``
    (default 3) applies. Both default to True: a job that declares nothing is
    treated as the most revealing kind. ``diagnostic``: a job for testing the
    daemons themselves (loads, failures, stalls); a party runs it only when its
    policy enables diagnostics or lists the job (:mod:`parties.guards.policy`).
    """

    name: str
    fn: JobFn
    private_data: bool = True
    sum_style: bool = True
    diagnostic: bool = False


_JOBS: dict[str, JobInfo] = {}


def job(
    name: str, *, private_data: bool = True, sum_style: bool | None = None, diagnostic: bool = False
) -> Callable[[JobFn], JobFn]:
    """Register an async job function under ``name`` (see :class:`JobInfo` for the flags).

    ``sum_style`` defaults to ``private_data``.
    """
    if not name or not name.replace("_", "").replace("-", "").replace(".", "").isalnum():
        raise ValueError(f"invalid job name {name!r}")
    sums = private_data if sum_style is None else sum_style

    def deco(fn: JobFn) -> JobFn:
        if not asyncio.iscoroutinefunction(fn):
            raise TypeError(f"job {name!r} must be an async function")
        old = _JOBS.get(name)
        if old is not None and (old.fn.__module__, old.fn.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"job {name!r} is already registered by {old.fn.__module__}.{old.fn.__qualname__}")
        _JOBS[name] = JobInfo(name, fn, private_data=private_data, sum_style=sums, diagnostic=diagnostic)
        return fn

    return deco


def job_info(name: str) -> JobInfo:
    """The registration of job ``name``, or :class:`UnknownJobError` listing the known ones."""
    info = _JOBS.get(name)
    if info is None:
        raise UnknownJobError(f"unknown job {name!r} (known: {', '.join(registered_jobs())})")
    return info


def get_job(name: str) -> JobFn:
    """The job registered as ``name``, or :class:`UnknownJobError` listing the known ones."""
    return job_info(name).fn


def registered_jobs() -> list[str]:
    return sorted(_JOBS)


# --------------------------------------------------------------------------- which jobs honour epsilon
@dataclass(frozen=True)
class DPJobSpec:
    """How a job honours ``epsilon``: the data keys it reads, and a check of its DP parameters.

    ``check(params, n_parties, dp_config)`` raises ``ValueError`` with one line for parameters it
    cannot honour; the budget guard runs it at admission, before anything is charged
    (``dp_config``: the party's ``[dp]`` table, :class:`parties.guards.dp_budget.DPConfig`, or None).
    """

    name: str
    keys: Callable[[Mapping[str, Any]], list[str]]
    check: Callable[[Mapping[str, Any], int, Any], None]


_DP_JOBS: dict[str, DPJobSpec] = {}
_NO_DP: dict[str, str] = {}


def register_dp_job(spec: DPJobSpec) -> None:
    """Declare that job ``spec.name`` adds differentially private noise when given ``epsilon``."""
    _DP_JOBS[spec.name] = spec


def refuse_dp_job(name: str, reason: str) -> None:
    """Declare why job ``name`` cannot run with ``epsilon`` (the refusal line says it)."""
    _NO_DP[name] = reason


def dp_job(name: str) -> DPJobSpec | None:
    """The DP declaration of job ``name`` (None: it adds no noise)."""
    return _DP_JOBS.get(name)


def dp_refusal_reason(name: str) -> str | None:
    """Why job ``name`` cannot run with ``epsilon``, when its module said so."""
    return _NO_DP.get(name)
