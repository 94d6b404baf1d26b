"""Auditors by name: the names the CLI and the audit service accept."""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from .base import AuditError, Auditor, set_auditor_factory
from .extremes import MaxAuditor, MinAuditor, SimulatableMaxAuditor, SimulatableMinAuditor
from .maxmin import MaxMinAuditor
from .sums import SimulatableSumAuditor, SumAuditor

__all__ = ["AUDITORS", "make_auditor"]

AUDITORS: dict[str, type[Auditor]] = {
    c.name: c
    for c in (
        SumAuditor,
        MaxAuditor,
        MinAuditor,
        MaxMinAuditor,
        SimulatableSumAuditor,
        SimulatableMaxAuditor,
        SimulatableMinAuditor,
    )
}


def make_auditor(name: str, records: int | Iterable[Hashable] = 0, **options) -> Auditor:
    """A fresh auditor of the named kind (``sum``, ``max``, ``min``, ``minmax``, ``simulatable-*``)."""
    cls = AUDITORS.get(name)
    if cls is None:
        raise AuditError(f"unknown auditor {name!r} (use {', '.join(AUDITORS)})")
    try:
        return cls(records, **options)
    except TypeError as e:
        raise AuditError(f"bad options for the {name} auditor: {e}") from None


set_auditor_factory(make_auditor)  # Auditor.from_json makes the auditor a saved state names with it
