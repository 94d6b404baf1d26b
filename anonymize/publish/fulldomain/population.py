"""Population rows per generalized class of a lattice node — what δ-presence and k-map read
(``ClassStats.population_sizes``, :mod:`..models_population`).

The population table (the research subset is part of it; Nergiz, Atzori, Clifton, "Hiding the presence
of individuals from shared databases", SIGMOD 2007) is encoded once with the table's hierarchies and
compressed to its distinct leaf tuples with their counts. At a node, every QI value of those tuples is
mapped to its ancestor at the node's level and to the lattice's compact code of that ancestor
(:class:`.frequency.FrequencySets`; ``-1`` when no row of the table has that ancestor: a population-only
class, released by no node and judged by no model); the counts of the tuples that land on a class are
added up by a sorted search of the packed keys (the frequency set's own keys) — ``O(m log m)`` per node,
``m`` the distinct population tuples, with no pass over the population's rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import AnonymizeError
from ..classes import equivalence_classes
from .frequency import FrequencySet, FrequencySets

__all__ = ["PopulationCounts"]


class PopulationCounts:
    """Population rows per class of any node of ``freq``'s lattice (module docstring).

    ``population`` — a DataFrame with the table's QI columns. One-line errors: a missing QI column, a
    missing value or a value outside the hierarchy, a population smaller than the table, or a population
    that does not contain the table (some class of the table has more rows than the population).
    """

    def __init__(self, freq: FrequencySets, population: pd.DataFrame):
        table = freq.table
        qis = list(table.schema.qis)
        if not isinstance(population, pd.DataFrame):
            raise AnonymizeError(
                "the population must be a table (a pandas DataFrame) with the quasi-identifier columns"
            )
        missing = [c for c in qis if c not in population.columns]
        if missing:
            raise AnonymizeError(f"the population table lacks quasi-identifier column(s): {', '.join(missing)}")
        if len(population) < table.n:
            raise AnonymizeError(
                f"the population table has fewer rows ({len(population):,}) than the table ({table.n:,}): "
                "the table anonymized must be a subset of its population"
            )
        self.source = population
        self.freq = freq
        self.total = int(len(population))
        leaf = np.empty((self.total, len(qis)), dtype=np.int64)
        for j, (c, h) in enumerate(zip(qis, table.hierarchies)):
            try:
                leaf[:, j] = h.encode(population[c].reset_index(drop=True), column=c)
            except AnonymizeError as e:
                raise AnonymizeError(f"population table: {e}") from None
        cid, m = equivalence_classes(leaf)
        self.weights = np.bincount(cid, minlength=m).astype(np.int64)
        first = np.full(m, len(cid), dtype=np.int64)
        np.minimum.at(first, cid, np.arange(len(cid), dtype=np.int64))
        self.leaf = leaf[first]
        self._codes: dict[tuple[int, int], np.ndarray] = {}
        self._last: tuple[FrequencySet, np.ndarray] | None = None
        self._check_contains()

    def _code(self, j: int, lv: int) -> np.ndarray:
        """Compact code at level ``lv`` of QI ``j`` of every distinct population tuple, ``-1`` when the
        table has no value under that node (cached per ``(j, lv)``)."""
        key = (j, lv)
        c = self._codes.get(key)
        if c is None:
            freq = self.freq
            if lv > freq.heights[j]:  # Incognito's virtual 'dropped' level: one code
                c = np.zeros(len(self.leaf), dtype=np.int64)
            else:
                h = freq.table.hierarchies[j]
                hn = np.asarray(h.maps[lv], dtype=np.int64)[self.leaf[:, j]]
                nodes = np.asarray(freq.node_of[j][lv], dtype=np.int64)
                pos = np.minimum(np.searchsorted(nodes, hn), len(nodes) - 1)
                c = np.where(nodes[pos] == hn, pos, -1).astype(np.int64)
            self._codes[key] = c
        return c

    def _population_codes(self, levels) -> tuple[np.ndarray, np.ndarray]:
        """``(codes (m', q), weights (m',))`` of the population tuples that fall into a class of the table."""
        q = self.freq.q
        codes = np.empty((len(self.leaf), q), dtype=np.int64)
        valid = np.ones(len(self.leaf), dtype=bool)
        for j in range(q):
            c = self._code(j, int(levels[j]))
            codes[:, j] = c
            valid &= c >= 0
        return codes[valid], self.weights[valid]

    def _pack(self, codes: np.ndarray) -> np.ndarray:
        key = np.zeros(len(codes), dtype=np.int64)
        for j in range(self.freq.q):
            key |= codes[:, j] << self.freq.shift[j]
        return key

    def counts(self, levels, codes: np.ndarray) -> np.ndarray:
        """Population rows of each class given by its compact ``codes`` (``(C, q)``, distinct rows) at the
        node ``levels`` (internal levels)."""
        codes = np.asarray(codes, dtype=np.int64)
        C = len(codes)
        pc, w = self._population_codes(levels)
        if C == 0:
            return np.zeros(0, dtype=np.int64)
        if self.freq.wide:
            cid, _ = equivalence_classes(np.vstack([codes, pc]))
            tot = np.bincount(cid[C:], weights=w, minlength=int(cid.max()) + 1)
            return tot[cid[:C]].astype(np.int64)
        return self._match(self._pack(codes), self._pack(pc), w)

    @staticmethod
    def _match(keys: np.ndarray, pkeys: np.ndarray, w: np.ndarray, presorted: bool = False) -> np.ndarray:
        order = None if presorted else np.argsort(keys, kind="stable")
        sk = keys if order is None else keys[order]
        pos = np.minimum(np.searchsorted(sk, pkeys), len(sk) - 1)
        hit = sk[pos] == pkeys
        out = np.bincount(pos[hit], weights=w[hit], minlength=len(sk)).astype(np.int64)
        if order is None:
            return out
        res = np.empty_like(out)
        res[order] = out
        return res

    def absent(self, fs: FrequencySet) -> int:
        """Population rows at ``fs``'s node whose generalized tuple is no class of the table (the
        table's suppressed classes count as classes): rows whose presence the release rules out."""
        return self.total - int(self.for_set(fs).sum())

    def for_set(self, fs: FrequencySet) -> np.ndarray:
        """Population rows of every tuple (class) of a frequency set; the last answer is kept (a node's
        check asks more than once)."""
        if self._last is not None and self._last[0] is fs:
            return self._last[1]
        if fs.keys is not None:
            pc, w = self._population_codes(fs.levels)
            out = self._match(fs.keys, self._pack(pc), w, presorted=True) if fs.size else np.zeros(0, np.int64)
        else:
            out = self.counts(fs.levels, self.freq.tuple_codes(fs))
        self._last = (fs, out)
        return out

    def _check_contains(self) -> None:
        """The table must be a subset of the population: no class of the bottom node has more rows."""
        base = self.freq.base
        pop = self.for_set(base)
        over = base.counts > pop
        if over.any():
            i = int(np.argmax(over))
            codes = self.freq.tuple_codes(base)[i]
            table = self.freq.table
            shown = ", ".join(
                f"{name}={h.labels[0][int(self.freq.node_of[j][0][codes[j]])]}"
                for j, (name, h) in enumerate(zip(table.schema.qis, table.hierarchies))
            )
            raise AnonymizeError(
                f"the population table does not contain the table: {int(over.sum()):,} combination(s) of "
                f"quasi-identifier values have more rows in the table than in the population (e.g. {shown})"
            )
