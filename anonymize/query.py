"""Aggregate queries over a table, given as data — never as code.

One format serves the query auditors (:mod:`anonymize.audit`), the differential-privacy
mechanisms (:mod:`anonymize.dp`) and the attack simulations: a JSON object such as ::

    {"agg": "sum", "column": "salary", "where": [["age", ">=", 30], ["sex", "==", "F"]]}

* ``agg`` — one of :data:`AGGREGATES` (``count`` takes no ``column``; the others need one);
* ``where`` — a conjunction of ``[column, op, value]`` triples, ``op`` one of :data:`OPERATORS`
  (``in`` / ``not in`` take a JSON list); an empty or missing ``where`` selects every row;
* any other key (e.g. ``"lower"``, ``"upper"``, ``"bins"`` for clamped DP queries) is kept in
  :attr:`Query.options` for the consumer to validate.

Predicates are evaluated with vectorized pandas comparisons on the named columns only: no
``eval``, no ``DataFrame.query``, no attribute access chosen by the user. A comparison of a
numeric column with a non-number (or the reverse) is an error, not a silent "no row".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .errors import AnonymizeError

__all__ = ["AGGREGATES", "OPERATORS", "Predicate", "Query", "parse_query"]

AGGREGATES = ("count", "sum", "mean", "max", "min", "histogram")
OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in")


@dataclass(frozen=True)
class Predicate:
    """``column op value``; ``value`` is a scalar, or a tuple for ``in`` / ``not in``."""

    column: str
    op: str
    value: Any

    def to_json(self) -> list:
        """The ``[column, op, value]`` triple this predicate was parsed from."""
        v = list(self.value) if isinstance(self.value, tuple) else self.value
        return [self.column, self.op, v]


@dataclass(frozen=True)
class Query:
    """A parsed aggregate query: ``agg`` over ``column`` on the rows where every predicate holds."""

    agg: str
    column: str | None = None
    where: tuple[Predicate, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    def columns(self) -> list[str]:
        """Every column the query reads (the aggregated one first)."""
        cols = [self.column] if self.column else []
        cols += [p.column for p in self.where if p.column not in cols]
        return cols

    def check_columns(self, df: pd.DataFrame) -> None:
        """One-line error naming the first column the table lacks."""
        for c in self.columns():
            if c not in df.columns:
                raise AnonymizeError(f"query: unknown column '{c}' (the table has: {', '.join(map(str, df.columns))})")

    def rows(self, df: pd.DataFrame, cache: dict | None = None) -> np.ndarray:
        """Bool mask ``(len(df),)`` of the rows every predicate selects (vectorized).

        ``cache``: a dict the caller keeps for one unchanging ``df`` (e.g. a server answering
        many queries); text columns converted for comparison are kept there by name.
        """
        self.check_columns(df)
        mask = np.ones(len(df), dtype=bool)
        for p in self.where:
            mask &= _evaluate(df[p.column], p, cache)
        return mask

    def values(self, df: pd.DataFrame) -> np.ndarray:
        """The aggregated column's values on the selected rows (float64 for numeric aggregates)."""
        if self.column is None:
            raise AnonymizeError(f"query: '{self.agg}' needs a column")
        sel = df.loc[self.rows(df), self.column]
        if self.agg == "histogram":
            return sel.to_numpy()
        if not _is_numeric(df[self.column]):
            raise AnonymizeError(f"query: '{self.agg}' needs a numeric column, '{self.column}' is not")
        return sel.to_numpy(dtype=np.float64)

    def to_json(self) -> dict:
        """The JSON object this query was parsed from (canonical key order)."""
        out: dict[str, Any] = {"agg": self.agg}
        if self.column is not None:
            out["column"] = self.column
        out["where"] = [p.to_json() for p in self.where]
        out.update(self.options)
        return out


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _evaluate(col: pd.Series, p: Predicate, cache: dict | None = None) -> np.ndarray:
    numeric = _is_numeric(col)
    values = p.value if isinstance(p.value, tuple) else (p.value,)
    for v in values:
        if numeric != _is_number(v):
            kind = "numeric" if numeric else "text"
            raise AnonymizeError(f"query: column '{p.column}' is {kind}, cannot compare it with {v!r}")
    arr = col.to_numpy()
    if not numeric:
        if cache is not None and p.column in cache:
            arr = cache[p.column]
        else:
            arr = col.astype(str).to_numpy()
            if cache is not None:
                cache[p.column] = arr
    if p.op == "in":
        return np.isin(arr, np.asarray(values, dtype=arr.dtype if numeric else object))
    if p.op == "not in":
        return ~np.isin(arr, np.asarray(values, dtype=arr.dtype if numeric else object))
    v = p.value
    if p.op == "==":
        return np.asarray(arr == v)
    if p.op == "!=":
        return np.asarray(arr != v)
    if not numeric:
        raise AnonymizeError(f"query: '{p.op}' needs a numeric column, '{p.column}' is text")
    if p.op == "<":
        return np.asarray(arr < v)
    if p.op == "<=":
        return np.asarray(arr <= v)
    if p.op == ">":
        return np.asarray(arr > v)
    return np.asarray(arr >= v)


def _predicate(item: Any, i: int) -> Predicate:
    if not isinstance(item, Sequence) or isinstance(item, (str, bytes)) or len(item) != 3:
        raise AnonymizeError(f"query: where[{i}] must be a [column, op, value] triple, got {item!r}")
    column, op, value = item
    if not isinstance(column, str) or not column:
        raise AnonymizeError(f"query: where[{i}]: the column must be a non-empty string, got {column!r}")
    if op not in OPERATORS:
        raise AnonymizeError(f"query: where[{i}]: unknown operator {op!r} (use {', '.join(OPERATORS)})")
    if op in ("in", "not in"):
        if not isinstance(value, list) or not value:
            raise AnonymizeError(f"query: where[{i}]: '{op}' needs a non-empty list of values")
        for v in value:
            if not (isinstance(v, str) or _is_number(v)):
                raise AnonymizeError(f"query: where[{i}]: values must be numbers or strings, got {v!r}")
        return Predicate(column, op, tuple(value))
    if not (isinstance(value, str) or _is_number(value)):
        raise AnonymizeError(f"query: where[{i}]: the value must be a number or a string, got {value!r}")
    if isinstance(value, float) and not np.isfinite(value):
        raise AnonymizeError(f"query: where[{i}]: the value must be finite")
    return Predicate(column, op, value)


def parse_query(obj: str | Mapping[str, Any]) -> Query:
    """Parse and validate one query (a JSON string or an already-decoded mapping).

    Raises :class:`AnonymizeError` with one line for malformed JSON, an unknown aggregate or
    operator, a missing column, or a malformed predicate. Column existence and types are checked
    against a table later (:meth:`Query.rows`).
    """
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as e:
            raise AnonymizeError(f"query: not valid JSON ({e.msg} at character {e.pos})") from None
    if not isinstance(obj, Mapping):
        raise AnonymizeError('query: expected a JSON object such as {"agg": "count", "where": [...]}')
    agg = obj.get("agg")
    if agg not in AGGREGATES:
        raise AnonymizeError(f"query: unknown or missing 'agg' {agg!r} (use {', '.join(AGGREGATES)})")
    column = obj.get("column")
    if agg == "count":
        if column is not None:
            raise AnonymizeError("query: 'count' takes no column (it counts the selected rows)")
    elif not isinstance(column, str) or not column:
        raise AnonymizeError(f"query: '{agg}' needs a 'column'")
    where = obj.get("where") or []
    if not isinstance(where, list):
        raise AnonymizeError("query: 'where' must be a list of [column, op, value] triples")
    preds = tuple(_predicate(item, i) for i, item in enumerate(where))
    options = {k: v for k, v in obj.items() if k not in ("agg", "column", "where")}
    return Query(agg, column, preds, options)
