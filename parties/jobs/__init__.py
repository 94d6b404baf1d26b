"""Jobs: what a daemon runs when an analyst calls ``StartJob``.

* :mod:`parties.jobs.registry` — :func:`job`, :class:`JobContext`, the job errors, the
  DP declarations (re-exported here);
* :mod:`parties.jobs.diagnostic` — ``ping``, ``exchange``, ``fail``, ``sleep``, ``bench_send``,
  ``pingpong`` (registered on import of this package);
* :mod:`parties.jobs.mining` — joint mining; :mod:`parties.jobs.mpc_bench` — every ``mpc``
  primitive on seeded inputs (with :mod:`parties.jobs.bench_inputs`).
"""

from __future__ import annotations

import importlib
import os

from parties.jobs import diagnostic  # noqa: F401 - registers the built-in diagnostic jobs
from parties.jobs.registry import (
    DPJobSpec,
    JobContext,
    JobError,
    JobFn,
    JobInfo,
    PolicyRefusal,
    PrivacyCharge,
    UnknownJobError,
    dp_job,
    dp_refusal_reason,
    get_job,
    job,
    job_info,
    refuse_dp_job,
    register_dp_job,
    registered_jobs,
)

__all__ = [
    "DPJobSpec",
    "JOB_MODULES",
    "JobContext",
    "JobError",
    "JobFn",
    "JobInfo",
    "PolicyRefusal",
    "PrivacyCharge",
    "UnknownJobError",
    "dp_job",
    "dp_refusal_reason",
    "get_job",
    "job",
    "job_info",
    "load_job_modules",
    "refuse_dp_job",
    "register_dp_job",
    "registered_jobs",
]

# Modules that register jobs with @job; imported by the daemon when they exist
# (a missing module is skipped, an error inside an existing one is not).
JOB_MODULES: list[str] = [
    "parties.jobs.mining",
    "parties.jobs.mpc_bench",
    "parties.jobs.publishing",
]


def load_job_modules(extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    """Import :data:`JOB_MODULES` (skipping missing ones) and ``extra`` plus ``$PPDM_JOB_MODULES`` (required).

    Returns the modules imported.
    """
    env = [m.strip() for m in os.environ.get("PPDM_JOB_MODULES", "").split(",") if m.strip()]
    loaded = []
    for name in JOB_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                continue
            raise
        loaded.append(name)
    for name in [*extra, *env]:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name == name:
                raise JobError(f"job module {name!r} not found") from None
            raise
        loaded.append(name)
    return loaded
