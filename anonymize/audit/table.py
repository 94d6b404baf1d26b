"""Aggregate queries on a table, answered behind an auditor; replays of query logs.

Records are the table's rows, numbered ``0..n-1`` in the table's order; queries are JSON data
(:func:`anonymize.query.parse_query`), never code. Each audited column has its own auditor:
answers about ``salary`` constrain only salaries. The auditors treat query sets as known to the
analyst, which holds only while the rows a query selects do not depend on audited values: a
predicate on an audited column — ``count where salary >= X and id == 3``, binary-searched over
``X`` — would pin row 3's salary through answers no auditor sees. Every numeric column is audited
unless the operator declares it *public* (its values are known: identifiers, ages); text columns
are public. A predicate on an audited column is refused (a denial) unless the operator lists the
column as *filterable*; a ``count`` with a predicate on a filterable column is then audited as a
sum of that predicate's indicators over the rows its public predicates select (one sum auditor
per distinct predicate set), so a count over one row, or differencing counts, is denied as a sum
would be. Other ``count`` queries read no audited value and are always answered. Which aggregates an
auditor accepts: ``sum``/``mean``/``count`` for the sum auditors (a mean over a known set is its
sum), ``max``, ``min`` or both for the others; any other aggregate is a one-line error, never an
unaudited answer.

:func:`replay_log` runs a whole log through a fresh auditor, online (each query decided as the
auditor would have, denied queries change nothing) or offline (every query was answered: what
did each answer, with the earlier ones, disclose?).
"""

from __future__ import annotations

import json
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

    def __init__(
        self,
        df: pd.DataFrame,
        auditor: str,
        *,
        public: Iterable[str] = (),
        filterable: Iterable[str] = (),
        **options,
    ):
        if auditor not in AUDITORS:
            raise AuditError(f"unknown auditor {auditor!r} (use {', '.join(AUDITORS)})")
        self.df = df.reset_index(drop=True)
        self.kind = auditor
        self.cls = AUDITORS[auditor]
        self.options = options
        self.public = tuple(dict.fromkeys(public))
        self.filterable = tuple(dict.fromkeys(filterable))
        for what, cols in (("public", self.public), ("filterable", self.filterable)):
            unknown = [c for c in cols if c not in self.df.columns]
            if unknown:
                raise AuditError(f"{what} column '{unknown[0]}' is not in the table")
        both = [c for c in self.public if c in self.filterable]
        if both:
            raise AuditError(f"column '{both[0]}' is listed as public and as filterable: it is one or the other")
        self.auditors: dict[str, Auditor] = {}
        self.indicator_auditors: dict[str, Auditor] = {}  # counts filtered on filterable numeric columns
        self._text: dict = {}  # text columns converted once for predicate evaluation

    def audited_column(self, column: str) -> bool:
        """Whether ``column``'s values are audited (numeric and not declared public)."""
        if column in self.public:
            return False
        col = self.df[column]
        return bool(pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col))

    def _filter_refusal(self, q: Query) -> Decision | None:
        """A denial for predicates on audited columns the operator did not list as filterable."""
        for p in q.where:
            if p.column not in self.filterable and self.audited_column(p.column):
                return Decision(
                    False,
                    (),
                    f"the query filters on audited column '{p.column}': the rows it selects would depend on "
                    "audited values (the operator may declare it public, or filterable)",
                )
        return None

    def _indicator_query(self, q: Query) -> tuple[str, np.ndarray, np.ndarray] | None:
        """For a count filtered on filterable numeric columns: (key, public rows, indicator) — the count is
        the sum of the indicator over the rows the other predicates select."""
        on_values = tuple(p for p in q.where if self.audited_column(p.column))
        if q.agg != "count" or not on_values:
            return None
        rest = Query("count", None, tuple(p for p in q.where if p not in on_values))
        public_rows = rest.rows(self.df, self._text)
        indicator = Query("count", None, on_values).rows(self.df, self._text)
        key = json.dumps([p.to_json() for p in on_values], sort_keys=True, default=str)
        return key, public_rows, indicator.astype(np.int64)

    def _indicator_auditor(self, key: str) -> Auditor:
        aud = self.indicator_auditors.get(key)
        if aud is None:
            # the indicators are summed: a sum auditor of the same exactness whatever the table's kind
            kind = self.kind if self.kind in ("sum", "simulatable-sum") else "simulatable-sum"
            sum_options = {k: v for k, v in self.options.items() if k in ("exact", "primes")}
            aud = self.indicator_auditors[key] = make_auditor(kind, self.n, **sum_options)
        return aud

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
        refusal = self._filter_refusal(q)
        if refusal is not None:
            return Outcome(q, refusal, None, q.column)
        mask, value = self.evaluate(q)
        ind = self._indicator_query(q)
        if ind is not None:
            key, rows, indicator = ind
            d = self._indicator_auditor(key).submit(rows, float(indicator[rows].sum()), agg="sum")
            return Outcome(q, d, value if d.allowed else None, q.column)
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
        refusal = self._filter_refusal(q)
        mask, value = self.evaluate(q)
        if refusal is not None:  # answered, but its rows depended on audited values: no auditor can say what
            return Outcome(q, refusal, value, q.column)
        ind = self._indicator_query(q)
        if ind is not None:
            key, rows, indicator = ind
            newly = self._indicator_auditor(key).commit(rows, float(indicator[rows].sum()), agg="sum")
            d = Decision(not newly, newly, "it disclosed values" if newly else "it disclosed no value")
            return Outcome(q, d, value, q.column, newly)
        if q.agg == "count" or q.column is None or value is None:
            return Outcome(q, Decision(True, (), "reveals no value"), value, q.column)
        aud = self.auditor_for(q.column)
        agg = "sum" if q.agg == "mean" else q.agg
        newly = aud.commit(mask, self._audited_value(q, mask, value), agg=agg)
        d = Decision(not newly, newly, "it disclosed values" if newly else "it disclosed no value")
        return Outcome(q, d, value, q.column, newly)

    def disclosed(self) -> dict[str, tuple]:
        """Rows whose values the committed answers determine, per column (``count[PREDICATES]`` for the
        indicators of counts filtered on filterable columns)."""
        out = {c: a.disclosed() for c, a in self.auditors.items() if a.disclosed()}
        out.update({f"count{k}": a.disclosed() for k, a in self.indicator_auditors.items() if a.disclosed()})
        return out

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
