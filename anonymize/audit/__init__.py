"""Query auditing: answer aggregate queries on private values only while no value is disclosed.

An *online* auditor sits in front of a table (or of any set of records, e.g. the parties of a
secure sum) and answers or denies each aggregate query so that no single record's value is
ever determined by the answers given (full disclosure); an *offline* audit replays a log of
answers and reports which records they disclosed. References: Aggarwal, *Data Mining: The
Textbook*, Springer 2015, §20.4; Nabar, Kenthapadi, Mishra, Motwani, "A survey of query
auditing techniques for data privacy", in Aggarwal and Yu (eds.), *Privacy-Preserving Data
Mining: Models and Algorithms*, Springer 2008, ch. 17.

* :class:`SumAuditor` / :class:`SimulatableSumAuditor` — sums (and means, counts): deny when a
  unit vector would enter the row space of the answered queries (Chin and Özsoyoğlu, IEEE TSE
  1982), with exact arithmetic (:mod:`.rowspace`);
* :class:`MaxAuditor`, :class:`MinAuditor` — single extremes (Chin, JACM 1986); they read the
  true answer, so their denials leak;
* :class:`SimulatableMaxAuditor`, :class:`SimulatableMinAuditor` — deny iff some answer
  consistent with the past would disclose (Kenthapadi, Mishra, Nissim, PODS 2005);
* :class:`MaxMinAuditor` — max and min together (exact, via a small SAT search);
* :class:`TableAuditor`, :func:`replay_log` — JSON queries (:mod:`anonymize.query`) on a
  DataFrame, one auditor per column; online and offline replays of a query log.

Every auditor: ``check(query, answer=None)`` decides without changing state, ``commit`` records
an answered query, ``submit`` does both; ``to_json()`` / ``Auditor.from_json()`` save and reload
the state. Records are arbitrary hashable keys (or ``0..n-1``); a query is a set of records.
What each auditor prevents and what it cannot is in its module docstring and docs/auditing.md.
"""

from typing import TYPE_CHECKING

from .base import STATE_FORMAT, AuditError, Auditor, Decision, RecordIndex
from .extremes import MaxAuditor, MinAuditor, SimulatableMaxAuditor, SimulatableMinAuditor
from .maxmin import MaxMinAuditor, minmax_disclosed
from .registry import AUDITORS, make_auditor
from .rowspace import ModularRowSpace, RationalRowSpace, modular_error_bound
from .sums import SimulatableSumAuditor, SumAuditor

if TYPE_CHECKING:
    from .table import Outcome, TableAuditor, parse_log_lines, replay_log

_TABLE = ("Outcome", "TableAuditor", "parse_log_lines", "replay_log")


def __getattr__(name: str):
    """The query-log replay (:mod:`.table`, pandas) loads on first use: the party daemons' auditor
    needs only :class:`SumAuditor` (PEP 562)."""
    if name in _TABLE:
        from . import table

        return getattr(table, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AUDITORS",
    "STATE_FORMAT",
    "AuditError",
    "Auditor",
    "Decision",
    "MaxAuditor",
    "MaxMinAuditor",
    "MinAuditor",
    "ModularRowSpace",
    "Outcome",
    "RationalRowSpace",
    "RecordIndex",
    "SimulatableMaxAuditor",
    "SimulatableMinAuditor",
    "SimulatableSumAuditor",
    "SumAuditor",
    "TableAuditor",
    "make_auditor",
    "minmax_disclosed",
    "modular_error_bound",
    "parse_log_lines",
    "replay_log",
]
