"""The table to publish: a DataFrame plus a schema, encoded once as integer codes.

Attribute roles follow Aggarwal, *Data Mining: The Textbook*, Springer 2015,
§20.3: explicit identifiers are removed before anything else; quasi-identifiers
(QIs) are generalized through their hierarchies; sensitive attributes are
released as they are and are what l-diversity / t-closeness protect;
insensitive attributes pass through.

Every algorithm works on :class:`EncodedTable`: ``qi_codes`` (leaf codes, one
column per QI) and ``sens_codes`` (value codes, one column per sensitive
attribute), so generalization is ``maps[h][codes]`` and equivalence classes are
identical code rows.
"""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from .hierarchy import Hierarchy, has_missing, has_plain_index, value_str

__all__ = ["check_not_mostly_numeric", "Schema", "EncodedTable", "auto_hierarchy"]

_CODE_NAME = re.compile(r"(zip|postcode|postal|plz)", re.I)


@dataclass
class Schema:
    """Role of every column: identifiers are dropped, QIs generalized, sensitive protected."""

    qis: list[str]
    sensitive: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    insensitive: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.qis = list(self.qis)
        self.sensitive = list(self.sensitive)
        self.identifiers = list(self.identifiers)
        self.insensitive = list(self.insensitive)

    def validate(self, columns) -> None:
        """Unknown column, duplicate role or no QI → :class:`AnonymizeError`."""
        cols = list(columns)
        if not self.qis:
            raise AnonymizeError("no quasi-identifiers given (--qi)")
        seen: dict[str, str] = {}
        for role, names in (
            ("quasi-identifier", self.qis),
            ("sensitive", self.sensitive),
            ("identifier", self.identifiers),
            ("insensitive", self.insensitive),
        ):
            for c in names:
                if c not in cols:
                    raise AnonymizeError(
                        f"unknown column '{c}' (given as {role}); the table has: {', '.join(map(str, cols))}"
                    )
                if c in seen:
                    raise AnonymizeError(f"column '{c}' is given both as {seen[c]} and as {role}")
                seen[c] = role


#: pandas copies on write (always from 3.0): a shallow copy of the input is then as safe as a copy
_COPY_ON_WRITE = int(pd.__version__.split(".")[0]) >= 3 or pd.options.mode.copy_on_write is True


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def check_not_mostly_numeric(name: str, s: pd.Series, factorized: tuple | None = None) -> None:
    """One-line error for a text column whose values are mostly numbers but not all — a numeric
    column with a stray text value (``'n/a'``, ``'?'``, a typo) that would otherwise silently be
    treated as categorical. Names the column, how many values do not parse and the first one.
    ``factorized`` — ``pd.factorize(s)`` if the caller has it (a column without missing values)."""
    if _is_numeric(s) or pd.api.types.is_bool_dtype(s):
        return
    # parse each distinct value once (a column has few distinct values, a table many rows)
    codes, uniq = factorized if factorized is not None else pd.factorize(s, use_na_sentinel=False)
    text = pd.Series(uniq, dtype=object).astype(str).str.strip()
    bad_value = pd.to_numeric(text, errors="coerce").isna().to_numpy()
    n_bad = int(np.bincount(codes, minlength=len(uniq))[bad_value].sum())
    if 0 < n_bad and n_bad * 2 < len(s):
        first = int(np.argmax(bad_value[codes]))
        raise AnonymizeError(
            f"column '{name}' looks numeric but {n_bad} of {len(s)} value(s) are not numbers (first: "
            f"{text.iloc[codes[first]]!r} at data row {first + 1}); fix or drop them, or give the column a "
            "hierarchy to treat it as categorical"
        )


def _text_codes(name: str, col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A sensitive text column (no missing value) as codes into its sorted distinct canonical texts
    (:func:`value_str`) — ``pd.factorize(canonical_strings(col), sort=True)`` — with one factorize of
    the column and the texts made per distinct value; refuses a mostly numeric column
    (:func:`check_not_mostly_numeric`)."""
    codes, uniq = pd.factorize(col, use_na_sentinel=False)
    check_not_mostly_numeric(name, col, (codes, uniq))
    texts = [value_str(v) for v in uniq]
    values = sorted(set(texts))
    at = {v: i for i, v in enumerate(values)}
    remap = np.array([at[t] for t in texts], dtype=np.int64)
    return remap[codes], np.asarray(values, dtype=object)


#: rows from which the QI columns are encoded on several threads (:func:`_encode_qis`)
PARALLEL_ENCODE_ROWS = 20_000
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's threads: it makes a pool of its own when it needs one."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _encode_pool() -> ThreadPoolExecutor | None:
    """The threads the QI columns are encoded on (made on first use; None on one core)."""
    global _POOL
    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ppdm-encode")
        return _POOL


def _encode_qis(work: pd.DataFrame, qis: list[str], hs: list[Hierarchy]) -> np.ndarray:
    """``(n, q)`` int32 leaf codes of the QI columns (:meth:`.Hierarchy.encode`; ``work`` has a plain
    index and no missing QI value). From :data:`PARALLEL_ENCODE_ROWS` rows, the Arrow hash lookups of
    the text columns (:meth:`.Hierarchy.arrow_lookup`, which release the GIL) run on a few threads at
    once (Adult's 7 text QIs: 2.2 → 1.4 ms on two cores); every other column, and a column whose
    lookup misses a value, is encoded on this thread, in QI order, so an error names the same column
    as when encoding one after another."""
    n = len(work)
    out = np.empty((n, len(qis)), dtype=np.int32)
    pool = _encode_pool() if n >= PARALLEL_ENCODE_ROWS and len(qis) > 1 else None
    jobs: dict[int, Future] = {}
    if pool is not None:
        for j, (c, h) in enumerate(zip(qis, hs)):
            lookup = None if h.numeric else h.arrow_lookup(work[c])
            if lookup is not None:
                jobs[j] = pool.submit(lookup)
    try:
        for j, (c, h) in enumerate(zip(qis, hs)):
            codes = jobs[j].result() if j in jobs else None
            out[:, j] = h.encode(work[c], column=c) if codes is None else codes
    finally:
        for job in jobs.values():
            job.cancel()
    return out


def auto_hierarchy(name: str, values: pd.Series) -> Hierarchy:
    """Default hierarchy when none is given: numeric → intervals (``widths=None``, automatic
    nested bands), ZIP-like codes (name contains zip/postcode, or equal-length digit strings
    with > 10 distinct values) → masking, anything else → flat (value → ``*``)."""
    s = pd.Series(values)
    if _CODE_NAME.search(str(name)):
        return Hierarchy.masking(name, s)
    if _is_numeric(s):
        return Hierarchy.intervals(name, s, widths=None)
    strs = {value_str(v) for v in pd.unique(s)}
    if len(strs) > 10 and len({len(x) for x in strs}) == 1 and all(x.isdigit() for x in strs):
        return Hierarchy.masking(name, s)
    return Hierarchy.flat(name, s)


class EncodedTable:
    """A table encoded for publishing.

    Attributes
    ----------
    df : pd.DataFrame
        The input without identifier columns, index reset to ``0..n-1``.
    schema : Schema
    hierarchies : list[Hierarchy]
        One per QI, in ``schema.qis`` order.
    sens_hierarchies : dict[str, Hierarchy]
        Hierarchies given for sensitive attributes (hierarchical EMD ground distance).
    qi_codes : np.ndarray
        ``(n, q)`` int32 leaf codes.
    sens_codes : np.ndarray
        ``(n, s)`` int32 value codes.
    sens_values : list[np.ndarray]
        Value of each code per sensitive attribute; numeric attributes ascending,
        categorical in hierarchy leaf order if a hierarchy is given, else sorted text
        (this order is the one the *ordered* EMD ground distance uses).
    n : int
        Number of rows the table stands for: ``Σ weights`` for a weighted table.
    weights : np.ndarray | None
        ``(n_tuples,)`` int64 multiplicity of every code row, or None (each row once). A weighted
        table is the distinct (QI, sensitive) tuples of a larger table with their counts — what a
        data engine's ``GROUP BY`` returns (:mod:`anonymize.engines`); the frequency-set searches,
        strict Mondrian and the metrics read it as the rows it stands for.
    n_tuples : int
        Number of code rows (``n`` when unweighted).
    """

    def __init__(self, df, schema, hierarchies, qi_codes, sens_codes, sens_values, sens_hierarchies=None, weights=None):
        self.df = df
        self.schema = schema
        self.hierarchies = list(hierarchies)
        self.qi_codes = qi_codes
        self.sens_codes = sens_codes
        self.sens_values = list(sens_values)
        self.sens_hierarchies = dict(sens_hierarchies or {})
        self.n_tuples = int(qi_codes.shape[0])
        self.weights: np.ndarray | None = None
        if weights is not None:
            w = np.asarray(weights, dtype=np.int64)
            if w.shape != (self.n_tuples,) or (w < 1).any():
                raise AnonymizeError("weights must give a positive count for every row")
            self.weights = w
        self.n = int(self.weights.sum()) if self.weights is not None else self.n_tuples
        self._global: list[np.ndarray] | None = None

    @classmethod
    def encode(
        cls,
        df: pd.DataFrame,
        schema: Schema,
        hierarchies: dict[str, Hierarchy] | None = None,
        weights: np.ndarray | None = None,
    ) -> EncodedTable:
        """Validate and encode ``df`` (attribute roles of Aggarwal 2015, §20.3).

        ``weights`` — each row's multiplicity (a weighted table, see the class docstring).

        Missing QI hierarchies are built by :func:`auto_hierarchy`. Errors
        (:class:`AnonymizeError`, one line): unknown column, a column in two
        roles, an empty table, a NaN in a QI or sensitive column, a value
        missing from a hierarchy (names the column and the value).
        """
        if not isinstance(df, pd.DataFrame):
            raise AnonymizeError("expected a pandas DataFrame")
        schema.validate(df.columns)
        if len(df) == 0:
            raise AnonymizeError("the table has no rows")
        hierarchies = dict(hierarchies or {})
        if _COPY_ON_WRITE and has_plain_index(df) and not schema.identifiers:
            work = df.copy(deep=False)  # what drop() + reset_index() give here, without their overhead
        else:
            work = df.drop(columns=schema.identifiers).reset_index(drop=True)
        n = len(work)
        for c in schema.qis + schema.sensitive:
            if has_missing(work[c]):
                na = work[c].isna().to_numpy()
                raise AnonymizeError(
                    f"column '{c}' has {int(na.sum())} missing value(s) (first at data row "
                    f"{int(np.argmax(na)) + 1}); fill or drop them before anonymizing"
                )
        hs = []
        for c in schema.qis:
            h = hierarchies.get(c)
            if h is None:
                check_not_mostly_numeric(c, work[c])
                h = auto_hierarchy(c, work[c])
            hs.append(h)
        qi_codes = _encode_qis(work, schema.qis, hs)
        sens_codes = np.empty((n, len(schema.sensitive)), dtype=np.int32)
        sens_values = []
        sens_h = {}
        for j, c in enumerate(schema.sensitive):
            col = work[c]
            h = hierarchies.get(c)
            if h is not None:
                leaf = h.encode(col, column=c)
                present = np.unique(leaf)
                sens_codes[:, j] = np.searchsorted(present, leaf)
                sens_values.append(h.leaves[present])
                sens_h[c] = h
            elif _is_numeric(col):
                codes, uniq = pd.factorize(col, sort=True)
                sens_codes[:, j] = codes
                sens_values.append(np.asarray(uniq))
            else:
                codes, values = _text_codes(c, col)
                sens_codes[:, j] = codes
                sens_values.append(values)
        return cls(work, schema, hs, qi_codes, sens_codes, sens_values, sens_h, weights=weights)

    # ------------------------------------------------------------------
    @property
    def q(self) -> int:
        return self.qi_codes.shape[1]

    @property
    def heights(self) -> list[int]:
        """Top level of every QI hierarchy (the lattice's maximal node)."""
        return [h.height for h in self.hierarchies]

    def generalized_codes(self, levels) -> np.ndarray:
        """``(n, q)`` node codes of full-domain generalization ``levels``: ``maps[levels[j]][qi_codes[:, j]]``."""
        levels = list(levels)
        if len(levels) != self.q:
            raise AnonymizeError(f"expected {self.q} levels, got {len(levels)}")
        out = np.empty_like(self.qi_codes)
        for j, (h, lv) in enumerate(zip(self.hierarchies, levels)):
            if not 0 <= lv <= h.height:
                raise AnonymizeError(f"level {lv} out of range 0..{h.height} for '{h.name}'")
            out[:, j] = h.maps[lv][self.qi_codes[:, j]] if lv else self.qi_codes[:, j]
        return out

    def row_weights(self) -> np.ndarray:
        """``(n_tuples,)`` int64 multiplicities (ones for an unweighted table)."""
        return self.weights if self.weights is not None else np.ones(self.n_tuples, dtype=np.int64)

    def global_dist(self) -> list[np.ndarray]:
        """Distribution of each sensitive attribute over the whole table (the Q of t-closeness, eq. 20.12)."""
        if self._global is None:
            self._global = [
                np.bincount(self.sens_codes[:, j], weights=self.weights, minlength=len(v)) / self.n
                for j, v in enumerate(self.sens_values)
            ]
        return self._global

    def sens_index(self, attribute: str | None) -> list[int]:
        """Indices of the sensitive attribute(s) a model applies to (None → all)."""
        if attribute is None:
            return list(range(len(self.schema.sensitive)))
        if attribute not in self.schema.sensitive:
            raise AnonymizeError(
                f"'{attribute}' is not a sensitive attribute (sensitive: {', '.join(self.schema.sensitive) or 'none'})"
            )
        return [self.schema.sensitive.index(attribute)]

    def __repr__(self) -> str:
        w = f", tuples={self.n_tuples}" if self.weights is not None else ""
        return f"EncodedTable(n={self.n}{w}, qis={self.schema.qis}, sensitive={self.schema.sensitive})"
