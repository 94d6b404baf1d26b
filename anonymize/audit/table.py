"""Aggregate queries on a table, answered behind an auditor; replays of query logs.

Records are the table's rows, numbered ``0..n-1`` in the table's order; queries are JSON data
(:func:`anonymize.query.parse_query`), never code. Each audited column has its own auditor:
answers about ``salary`` constrain only salaries. ``count`` queries read no column and are
always answered (the model treats query sets as known to the analyst). Which aggregates an
auditor accepts: ``sum``/``mean``/``count`` for the sum auditors (a mean over a known set is its
sum), ``max``, ``min`` or both for the others; any other aggregate is a one-line error, never an
unaudited answer.

:func:`replay_log` runs a whole log through a fresh auditor, online (each query decided as the
auditor would have, denied queries change nothing) or offline (every query was answered: what
did each answer, with the earlier ones, disclose?).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..query import Query, parse_query
from .base import AuditError, Auditor, Decision
from .registry import AUDITORS, make_auditor

__all__ = ["TableAuditor", "Outcome", "replay_log", "parse_log_lines"]


@dataclass(frozen=True)
class Outcome:
    """One query's fate: the decision, the released value (None when denied), the audited column."""

    query: Query
    decision: Decision
    value: Any = None
    column: str | None = None
    newly_disclosed: tuple = ()  # offline replays: rows this answer determined

    @property
    def allowed(self) -> bool:
        return self.decision.allowed


def _number(x: Any) -> Any:
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        f = float(x)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    return x


class TableAuditor:
    """A table whose aggregate queries go through one auditor per column.

    ``auditor`` is a registry name (``sum``, ``max``, ``min``, ``minmax``, ``simulatable-sum``,
    ``simulatable-max``, ``simulatable-min``); ``options`` go to each auditor.
    """

    def __init__(self, df: pd.DataFrame, auditor: str, **options):
        if auditor not in AUDITORS:
            raise AuditError(f"unknown auditor {auditor!r} (use {', '.join(AUDITORS)})")
        self.df = df.reset_index(drop=True)
        self.kind = auditor
        self.cls = AUDITORS[auditor]
        self.options = options
        self.auditors: dict[str, Auditor] = {}
        self._text: dict = {}  # text columns converted once for predicate evaluation

    @property
    def n(self) -> int:
        return len(self.df)

    def parse(self, query: Query | str | Mapping[str, Any]) -> Query:
        q = query if isinstance(query, Query) else parse_query(query)
        q.check_columns(self.df)
        if q.agg != "count" and q.agg not in self.cls.aggregates:
            raise AuditError(
                f"the {self.kind} auditor audits {'/'.join(self.cls.aggregates)} queries; "
                f"'{q.agg}' queries are not answered here"
            )
        return q

    def auditor_for(self, column: str) -> Auditor:
        aud = self.auditors.get(column)
        if aud is None:
            col = self.df[column]
            if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                raise AuditError(f"column '{column}' is not numeric: only numeric columns are audited")
            missing = int(col.isna().sum())
            if missing:
                raise AuditError(f"column '{column}' has {missing} missing value(s); auditing needs a complete column")
            aud = self.auditors[column] = make_auditor(self.kind, self.n, **self.options)
        return aud

    def evaluate(self, q: Query) -> tuple[np.ndarray, Any]:
        """The selected rows and the true answer (None for max/min/mean over no row)."""
        mask = q.rows(self.df, self._text)
        if q.agg == "count":
            return mask, int(mask.sum())
        vals = self.df.loc[mask, q.column].to_numpy()
        if q.agg == "sum":
            return mask, _number(vals.sum()) if vals.size else 0
        if not vals.size:
            return mask, None
        if q.agg == "mean":
            return mask, float(vals.mean())
        return mask, _number(vals.max() if q.agg == "max" else vals.min())

    def ask(self, query: Query | str | Mapping[str, Any]) -> Outcome:
        """Decide one query online; the answer is released only when the auditor allows it."""
        q = self.parse(query)
        mask, value = self.evaluate(q)
        if q.agg == "count" or q.column is None:
            return Outcome(q, Decision(True, (), "a count reveals no value of any column"), value)
        aud = self.auditor_for(q.column)
        if value is None:  # max/min/mean of no row: nothing about any value
            return Outcome(q, Decision(True, (), "the query selects no row"), None, q.column)
        agg = "sum" if q.agg == "mean" else q.agg
        audited = self._audited_value(q, mask, value)
        d = aud.submit(mask, audited, agg=agg)
        return Outcome(q, d, value if d.allowed else None, q.column)

    def record(self, query: Query | str | Mapping[str, Any]) -> Outcome:
        """Take ``query`` as already answered (offline audit): what did this answer newly disclose?"""
        q = self.parse(query)
        mask, value = self.evaluate(q)
        if q.agg == "count" or q.column is None or value is None:
            return Outcome(q, Decision(True, (), "reveals no value"), value, q.column)
        aud = self.auditor_for(q.column)
        agg = "sum" if q.agg == "mean" else q.agg
        newly = aud.commit(mask, self._audited_value(q, mask, value), agg=agg)
        d = Decision(not newly, newly, "it disclosed values" if newly else "it disclosed no value")
        return Outcome(q, d, value, q.column, newly)

    def disclosed(self) -> dict[str, tuple]:
        """Rows whose values the committed answers determine, per column."""
        return {c: a.disclosed() for c, a in self.auditors.items() if a.disclosed()}

    @staticmethod
    def _audited_value(q: Query, mask: np.ndarray, value: Any) -> float:
        if q.agg == "mean":
            return float(value) * int(mask.sum())
        return float(value)


def parse_log_lines(lines: Iterable[str], where: str = "log") -> list[tuple[int, Query]]:
    """Parse a JSONL query log into ``(line number, query)`` pairs; blank lines are skipped.

    A malformed line is a one-line :class:`AuditError` naming ``where`` and its line number.
    """
    out = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append((no, parse_query(line)))
        except ValueError as e:  # AnonymizeError from parse_query
            raise AuditError(f"{where} line {no}: {str(e).removeprefix('query: ')}") from None
    return out


def replay_log(
    df: pd.DataFrame,
    queries: Iterable[Query | str | Mapping],
    auditor: str,
    *,
    offline: bool = False,
    labels: list[str] | None = None,
    **options,
) -> tuple[list[Outcome], TableAuditor]:
    """Replay ``queries`` in order through a fresh :class:`TableAuditor`.

    Online (default): each query is decided as the auditor would have; denied ones change
    nothing. Offline: every query counts as answered, and each outcome's decision is "deny"
    exactly when that answer newly disclosed rows (``discloses``) — the queries an online
    auditor should have refused. ``labels`` name the queries in error messages (default
    ``query <index>``).
    """
    ta = TableAuditor(df, auditor, **options)
    outs = []
    for i, q in enumerate(queries):
        try:
            outs.append(ta.record(q) if offline else ta.ask(q))
        except ValueError as e:  # AuditError / AnonymizeError: one line, named
            label = labels[i] if labels else f"query {i}"
            raise AuditError(f"{label}: {str(e).removeprefix('query: ')}") from None
    return outs, ta
