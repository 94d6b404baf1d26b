"""What every auditor shares: record keys, query sets, decisions, and the JSON state format.

Records are identified by arbitrary hashable, JSON-representable keys (row numbers of a table,
party names, ...) given once, in order, when the auditor is made; more can be added later
(:meth:`Auditor.add_records`). A query is the *set* of records it aggregates over, given as
keys, or as a boolean mask / integer index array in record order.

An auditor keeps the queries it has answered. ``check`` decides one query without changing
anything; ``commit`` records a query as answered (its answer is now public); ``submit`` does
both atomically when the decision is to answer. Its whole state is the list of committed
queries (with their answers where the auditor needs them), so :meth:`Auditor.to_json`
writes that list and :meth:`Auditor.from_json` replays it: a reloaded auditor makes the same
decisions as the one that was saved (up to the fresh random primes of a modular sum auditor,
see :mod:`anonymize.audit.rowspace`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import AnonymizeError

__all__ = ["AuditError", "Decision", "Auditor", "RecordIndex", "STATE_FORMAT", "set_auditor_factory"]

STATE_FORMAT = "ppdm.audit/1"


class AuditError(AnonymizeError):
    """Bad input to an auditor (unknown record, wrong aggregate, malformed state): one line."""


@dataclass(frozen=True)
class Decision:
    """An auditor's decision on one query.

    ``allowed`` — answer it (True) or deny it. ``discloses`` — the records whose values the
    answer would determine, together with the answers already given (for a denial: the records
    it would have disclosed; empty for a simulatable denial caused by some *other* possible
    answer). ``reason`` — one line for a person.
    """

    allowed: bool
    discloses: tuple = ()
    reason: str = ""

    def to_json(self) -> dict:
        return {
            "decision": "answer" if self.allowed else "deny",
            "discloses": list(self.discloses),
            "reason": self.reason,
        }


class RecordIndex:
    """Keys ↔ positions ``0..n-1``; turns any query-set form into a boolean mask."""

    def __init__(self, records: int | Iterable[Hashable] = 0):
        if isinstance(records, (int, np.integer)) and not isinstance(records, bool):
            if records < 0:
                raise AuditError(f"the number of records must be >= 0, got {records}")
            self.keys: list = list(range(int(records)))
            self.identity = True
        else:
            self.keys = []
            self.identity = False
        self.pos: dict = {}
        if not self.identity:
            self.add(records)  # type: ignore[arg-type]  # not an int here

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, keys: Iterable[Hashable]) -> int:
        """Append new keys (each must be new and hashable); return how many were added."""
        added = 0
        if self.identity:
            for k in keys:
                if k != len(self.keys):
                    raise AuditError(f"records numbered 0..n-1 can only grow by n, n+1, ...; got {k!r}")
                self.keys.append(k)
                added += 1
            return added
        for k in keys:
            try:
                if k in self.pos:
                    raise AuditError(f"record {k!r} is listed twice")
            except TypeError:
                raise AuditError(f"record keys must be hashable, got {type(k).__name__}") from None
            self.pos[k] = len(self.keys)
            self.keys.append(k)
            added += 1
        return added

    def mask(self, query: Any) -> np.ndarray:
        """A boolean mask over the records from keys, a boolean mask, or integer positions."""
        n = len(self.keys)
        if isinstance(query, np.ndarray) and query.dtype == bool:
            if query.shape != (n,):
                raise AuditError(f"a boolean query mask must have shape ({n},), got {query.shape}")
            return query
        m = np.zeros(n, dtype=bool)
        if self.identity:
            arr = query if isinstance(query, np.ndarray) else np.asarray(list(query))
            if arr.size == 0:
                return m
            if arr.ndim != 1 or arr.dtype.kind not in "iu":
                bad = next((k for k in arr.ravel().tolist() if not isinstance(k, int) or isinstance(k, bool)), arr)
                raise AuditError(f"records are numbered 0..n-1; got {bad!r}")
            if arr.min() < 0 or arr.max() >= n:
                bad = arr[(arr < 0) | (arr >= n)][0]
                raise AuditError(f"unknown record {int(bad)} (records are 0..{n - 1})")
            m[arr] = True
            return m
        for k in query:
            try:
                m[self.pos[k]] = True
            except (KeyError, TypeError):
                raise AuditError(f"unknown record {k!r}") from None
        return m

    def keys_of(self, positions: Iterable[int]) -> tuple:
        return tuple(self.keys[int(i)] for i in positions)


def _check_answer(answer: Any) -> float:
    if isinstance(answer, bool) or not isinstance(answer, (int, float, np.integer, np.floating)):
        raise AuditError(f"an answer must be a number, got {answer!r}")
    a = float(answer)
    if not math.isfinite(a):
        raise AuditError(f"an answer must be finite, got {answer!r}")
    return a


class Auditor:
    """Common interface; concrete auditors implement ``_check`` / ``_commit`` on masks.

    Class attributes: ``name`` (registry name), ``aggregates`` (query aggregates it audits),
    ``needs_answer`` (``check`` reads the true answer — such an auditor is *not* simulatable:
    its denials depend on the data and leak it), ``simulatable``.
    """

    name: ClassVar[str] = ""
    aggregates: ClassVar[tuple[str, ...]] = ()
    needs_answer: ClassVar[bool] = False
    simulatable: ClassVar[bool] = True

    def __init__(self, records: int | Iterable[Hashable] = 0):
        self.index = RecordIndex(records)
        self.log: list[tuple[np.ndarray, float | None, str]] = []  # committed (positions, answer, agg)

    # ------------------------------------------------------------------ records
    @property
    def records(self) -> tuple:
        return tuple(self.index.keys)

    @property
    def n(self) -> int:
        return len(self.index)

    def add_records(self, keys: Iterable[Hashable] | int) -> None:
        """Add records no query has touched yet (keys, or a count for 0..n-1 numbering)."""
        if isinstance(keys, (int, np.integer)) and not isinstance(keys, bool):
            keys = range(self.n, self.n + int(keys))
        k = self.index.add(keys)  # type: ignore[arg-type]
        if k:
            self._grow(k)

    # ------------------------------------------------------------------ decisions
    def check(self, query: Any, answer: float | None = None, *, agg: str | None = None) -> Decision:
        """Decide ``query`` (a record set) without changing the state.

        ``answer`` is its true answer; only auditors with ``needs_answer`` read it (others ignore
        it, so their decision cannot depend on the data).
        """
        agg = self._agg(agg)
        mask = self.index.mask(query)
        a = None
        if self.needs_answer:
            if answer is None:
                raise AuditError(f"the {self.name} auditor needs the query's true answer to decide")
            a = _check_answer(answer)
        d = self._check(mask, a, agg)
        return Decision(d[0], self.index.keys_of(d[1]), d[2])

    def commit(self, query: Any, answer: float | None = None, *, agg: str | None = None) -> tuple:
        """Record ``query`` as answered (offline audits and replays); return the records it newly disclosed."""
        agg = self._agg(agg)
        mask = self.index.mask(query)
        a = None if answer is None else _check_answer(answer)
        if a is None and self.needs_answers_to_commit():
            raise AuditError(f"the {self.name} auditor needs the answer of every answered query")
        newly = self._commit(mask, a, agg)
        self.log.append((np.flatnonzero(mask), a, agg))
        return self.index.keys_of(newly)

    def submit(self, query: Any, answer: float | None = None, *, agg: str | None = None) -> Decision:
        """``check`` and, when the decision is to answer, ``commit`` — one step."""
        d = self.check(query, answer, agg=agg)
        if d.allowed:
            self.commit(query, answer, agg=agg)
        return d

    def disclosed(self) -> tuple:
        """Records whose values the committed answers determine (empty if every commit was allowed)."""
        return self.index.keys_of(np.flatnonzero(self._disclosed_mask()))

    # ------------------------------------------------------------------ state
    def to_json(self) -> dict:
        """The whole state as JSON data: the records and every committed query (with its answer)."""
        return {
            "format": STATE_FORMAT,
            "auditor": self.name,
            "options": self._options(),
            "records": list(self.index.keys) if not self.index.identity else len(self.index),
            "answered": [
                {"records": pos.tolist(), **({"answer": a} if a is not None else {}), **({"agg": g} if g else {})}
                for pos, a, g in self.log
            ],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))

    @classmethod
    def from_json(cls, state: dict | str) -> Auditor:
        """Rebuild an auditor from :meth:`to_json` output by replaying its committed queries."""
        if isinstance(state, str):
            try:
                state = json.loads(state)
            except json.JSONDecodeError as e:
                raise AuditError(f"audit state is not valid JSON ({e.msg})") from None
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise AuditError(f"not an audit state (expected format {STATE_FORMAT!r})")
        make_auditor = _make_auditor
        if make_auditor is None:  # only when base is imported without its package
            raise AuditError("no auditor registry loaded: import anonymize.audit")
        name = state.get("auditor")
        if not isinstance(name, str):
            raise AuditError("audit state: 'auditor' must be a name")
        if cls is not Auditor and name != cls.name:
            raise AuditError(f"the state is for the {name!r} auditor, not {cls.name!r}")
        recs = state.get("records")
        if not isinstance(recs, (int, list)):
            raise AuditError("audit state: 'records' must be a count or a list of keys")
        keys = recs if isinstance(recs, int) else [tuple(k) if isinstance(k, list) else k for k in recs]
        aud = make_auditor(name, keys, **(state.get("options") or {}))
        answered = state.get("answered")
        if not isinstance(answered, list):
            raise AuditError("audit state: 'answered' must be a list")
        for i, item in enumerate(answered):
            if not isinstance(item, dict) or not isinstance(item.get("records"), list):
                raise AuditError(f"audit state: answered[{i}] must be an object with a 'records' list")
            pos = item["records"]
            if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < aud.n for x in pos):
                raise AuditError(f"audit state: answered[{i}] names a record outside 0..{aud.n - 1}")
            m = np.zeros(aud.n, dtype=bool)
            m[pos] = True
            aud.commit(m, item.get("answer"), agg=item.get("agg"))
        return aud

    # ------------------------------------------------------------------ for subclasses
    def _agg(self, agg: str | None) -> str:
        if agg is None:
            return self.aggregates[0]
        if agg not in self.aggregates:
            raise AuditError(f"the {self.name} auditor audits {'/'.join(self.aggregates)} queries, not {agg!r}")
        return agg

    def needs_answers_to_commit(self) -> bool:
        return False

    def _options(self) -> dict:
        return {}

    def _grow(self, k: int) -> None:
        raise NotImplementedError

    def _check(self, mask: np.ndarray, answer: float | None, agg: str) -> tuple[bool, Sequence[int], str]:
        raise NotImplementedError

    def _commit(self, mask: np.ndarray, answer: float | None, agg: str) -> Sequence[int]:
        raise NotImplementedError

    def _disclosed_mask(self) -> np.ndarray:
        raise NotImplementedError


# ------------------------------------------------------------------ making auditors by name
_make_auditor: Callable[..., Auditor] | None = None


def set_auditor_factory(make: Callable[..., Auditor]) -> None:
    """Install ``make(name, records, **options)``, the by-name factory :meth:`Auditor.from_json`
    rebuilds an auditor with: :func:`.registry.make_auditor`, installed when :mod:`.registry` is
    imported (the package :mod:`anonymize.audit` imports it). It is handed over rather than
    imported here because the registry imports every auditor, and every auditor imports this module."""
    global _make_auditor
    _make_auditor = make
