"""Differencing attack on unaudited aggregate answers (a tracker).

An interface that answers exact count / sum / histogram queries (the JSON of
:mod:`anonymize.query`) and only refuses query sets smaller than ``min_size`` — the classic
query-set-size restriction — does not protect individuals: two answerable queries whose row sets
differ by exactly the victim give the victim's value by subtraction (D. E. Denning, P. J.
Denning, M. D. Schwartz, "The Tracker: A Threat to Statistical Database Security", ACM TODS
4(1), 1979; C. C. Aggarwal, *Data Mining: The Textbook*, Springer 2015, §20.4 on query
auditing). The attack here, for a victim whose quasi-identifier values the adversary knows:

    for T ⊆ QIs (largest first) and j ∈ T:
        broad  = ⋀_{c ∈ T∖{j}} c == victim[c]          (≥ min_size rows: answered)
        narrow = broad ⋀ j != victim[j]                (≥ min_size rows: answered)
        if count(broad) − count(narrow) = 1:           (exactly one row has all of T)
            value = sum(S | broad) − sum(S | narrow)   (numeric S), or the histogram bin of S
                                                        that differs by one (categorical S)

(when the row set of T itself is answerable and has one row, one direct query suffices). It
assumes the victim is in the table — the adversary's membership knowledge; differential privacy
(:mod:`anonymize.dp`) is what defeats it, since every answer carries independent noise.

:class:`AggregateServer` is the interface; :func:`differencing_attack` runs the attack against
any answer function; :func:`differencing_exposed` computes, for every row of a table at once,
whether the attack (with |T| ≥ |QIs| − 2) isolates it — the same decision from group counts
instead of queries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from ..query import parse_query
from .linkage import factorize_text, unique_rows

__all__ = ["AggregateServer", "differencing_attack", "differencing_exposed", "subsets_tried"]


class AggregateServer:
    """Exact, unaudited answers over ``df``; refuses (returns None) query sets below ``min_size`` rows."""

    def __init__(self, df: pd.DataFrame, min_size: int = 1):
        if min_size < 0:
            raise AnonymizeError("min_size must be non-negative")
        self.df, self.min_size = df, int(min_size)
        self.asked = 0
        self.refused = 0

    def answer(self, query) -> Any:
        """count → int, sum → float, histogram → {value text: count}; None when refused."""
        q = parse_query(query)
        self.asked += 1
        mask = q.rows(self.df)
        if int(mask.sum()) < self.min_size:
            self.refused += 1
            return None
        if q.agg == "count":
            return int(mask.sum())
        if q.agg == "sum":
            return float(np.nansum(q.values(self.df)))
        if q.agg == "histogram":
            codes, uniq = factorize_text(self.df.loc[mask, q.column])
            counts = np.bincount(codes, minlength=len(uniq))
            return {str(u): int(c) for u, c in zip(uniq, counts)}
        raise AnonymizeError(f"this interface answers count, sum and histogram, not '{q.agg}'")


def subsets_tried(qis: Sequence[str], depth: int = 2) -> list[tuple[str, ...]]:
    """The QI subsets T the attack tries, largest first: sizes |QIs| down to |QIs| − depth (≥ 1)."""
    q = len(qis)
    out = []
    for size in range(q, max(q - depth, 1) - 1, -1):
        out += list(combinations(qis, size))
    return out


def _where(victim: Mapping[str, Any], cols, extra=None) -> list:
    w = [[c, "==", _json_value(victim[c])] for c in cols]
    if extra is not None:
        w.append([extra, "!=", _json_value(victim[extra])])
    return w


def _json_value(v):
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    return v


def differencing_attack(
    answer: Callable[[dict], Any],
    victim: Mapping[str, Any],
    qis: Sequence[str],
    sensitive: str,
    numeric: bool = False,
    depth: int = 2,
) -> dict | None:
    """Run the attack (module docstring) for one victim through ``answer`` (e.g.
    :meth:`AggregateServer.answer`). ``victim`` maps each QI to the victim's value *as stored in
    the table*. Returns ``{"value", "queries"}`` (the victim's sensitive value and the queries
    that gave it away) or None when no pair of answered queries isolates the victim."""
    agg = {"agg": "sum", "column": sensitive} if numeric else {"agg": "histogram", "column": sensitive}
    for T in subsets_tried(qis, depth):
        direct = {"agg": "count", "where": _where(victim, T)}
        c = answer(direct)
        if c == 1:
            a = answer({**agg, "where": direct["where"]})
            if a is not None:
                val = a if numeric else next(k for k, v in a.items() if v == 1)
                return {"value": val, "queries": [direct, {**agg, "where": direct["where"]}]}
        for j in T:
            rest = [c_ for c_ in T if c_ != j]
            broad = {"agg": "count", "where": _where(victim, rest)}
            narrow = {"agg": "count", "where": _where(victim, rest, j)}
            c1, c2 = answer(broad), answer(narrow)
            if c1 is None or c2 is None or c1 - c2 != 1:
                continue
            a1 = answer({**agg, "where": broad["where"]})
            a2 = answer({**agg, "where": narrow["where"]})
            if a1 is None or a2 is None:
                continue
            if numeric:
                val = a1 - a2
            else:
                diff = [k for k in a1 if a1[k] - a2.get(k, 0) == 1]
                if len(diff) != 1:
                    continue
                val = diff[0]
            qs = [broad, narrow, {**agg, "where": broad["where"]}, {**agg, "where": narrow["where"]}]
            return {"value": val, "queries": qs}
    return None


def differencing_exposed(df: pd.DataFrame, qis: Sequence[str], min_size: int, depth: int = 2) -> np.ndarray:
    """Bool per row of ``df``: the attack of :func:`differencing_attack` (same subsets, same
    refusal rule) isolates that row, decided from group sizes instead of queries:
    ∃ T, j ∈ T: |T-group of the row| = 1 and (min_size ≤ 1 or |(T∖j)-group| − 1 ≥ min_size)."""
    qis = list(qis)
    if not qis:
        raise AnonymizeError("at least one quasi-identifier is needed")
    codes = np.column_stack([factorize_text(df[c])[0] for c in qis]) if len(df) else np.zeros((0, len(qis)))
    index = {c: i for i, c in enumerate(qis)}
    cache: dict[tuple[str, ...], np.ndarray] = {}

    def group_size(cols: tuple[str, ...]) -> np.ndarray:
        if cols not in cache:
            if not cols:
                cache[cols] = np.full(len(df), len(df), dtype=np.int64)
            else:
                _, inv, cnt = unique_rows(codes[:, [index[c] for c in cols]])
                cache[cols] = cnt[inv]
        return cache[cols]

    exposed = np.zeros(len(df), dtype=bool)
    for T in subsets_tried(qis, depth):
        unique = group_size(T) == 1
        if not unique.any():
            continue
        if min_size <= 1:
            exposed |= unique
            continue
        for j in T:
            rest = tuple(c for c in T if c != j)
            exposed |= unique & (group_size(rest) - 1 >= min_size)
    return exposed
