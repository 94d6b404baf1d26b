"""What the greedy clustering algorithms share: distinct QI rows with multiplicities, a compact set
of the rows still to cluster, per-attribute lookup tables, and labelling rows from what was taken.

Every greedy step of GAA-CP, KACA, MDAV and LCA scores *all* remaining tuples against one cluster
at once. Identical QI rows score the same, so the algorithms work on the distinct code rows
(:func:`distinct_rows`: on Adult's 8 QIs 18,109 of 30,162 rows) with a count each, and a score is a
sum of per-attribute lookup tables indexed by code columns (``Σ_j tab_j[codes_j]``), never a
per-tuple Python loop. :class:`Remaining` keeps the codes of the rows still to cluster in compact
``(q, m)`` arrays; finished rows cost one ``+inf`` in a penalty vector until the arrays are
compacted (whenever a third of them is dead).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import AnonymizeError
from ..classes import equivalence_classes
from ..hierarchy import Hierarchy
from ..table import EncodedTable

__all__ = [
    "distinct_rows",
    "Remaining",
    "TakeLog",
    "lca_levels",
    "numeric_values",
    "table_range",
    "model_k",
    "Rng",
    "CodePacker",
    "encoded",
]


def distinct_rows(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct rows of ``codes`` ``(n, c)``: ``(unique (m, c), inverse (n,), counts (m,))``, unique
    rows in lexicographic order (:func:`..classes.equivalence_classes`)."""
    inv, m = equivalence_classes(codes)
    first = np.full(m, len(inv), dtype=np.int64)
    np.minimum.at(first, inv, np.arange(len(inv), dtype=np.int64))
    return np.asarray(codes)[first], inv, np.bincount(inv, minlength=m).astype(np.int64)


def lca_levels(h: Hierarchy) -> np.ndarray:
    """``(L, L)`` level of the lowest common ancestor of every pair of leaves of ``h`` (0 = same leaf).

    The lowest common ancestor of a hierarchy node ``N`` (level ``l_N``, first leaf ``a``) and a
    leaf ``v`` is at level ``max(l_N, lca[a, v])``, since every node covers a contiguous run of
    leaves (:mod:`..hierarchy`)."""
    L = h.n_leaves
    out = np.full((L, L), h.height, dtype=np.int64)
    for lv in range(h.height - 1, -1, -1):
        m = h.maps[lv]
        out[m[:, None] == m[None, :]] = lv
    return out


def numeric_values(h: Hierarchy) -> np.ndarray:
    """Leaf values of a numeric hierarchy as float64 (indexed by leaf code)."""
    return np.asarray(h.leaves, dtype=np.float64)


def table_range(h: Hierarchy, codes: np.ndarray) -> float:
    """``max T(A) − min T(A)`` over the values present in the table (Jiang, Zeng, Ma 2017, §2.2.1);
    1.0 when the column is constant (every numeric distance is then 0 anyway)."""
    vals = numeric_values(h)
    r = float(vals[codes.max()] - vals[codes.min()])
    return r if r > 0 else 1.0


def model_k(models: Sequence, algorithm: str) -> int:
    """The k of the k-anonymity model among ``models`` (one-line error when there is none)."""
    ks = [m.minimal_class_size for m in models if m.name == "k-anonymity"]
    if not ks:
        raise AnonymizeError(f"algorithm '{algorithm}' needs k-anonymity (give k)")
    return max(ks)


class Rng:
    """A seeded generator (``numpy.random.default_rng(seed)``) for the algorithms' random choices."""

    def __init__(self, seed: int | None):
        try:
            self.gen = np.random.default_rng(None if seed is None else int(seed))
        except (TypeError, ValueError):
            raise AnonymizeError(f"seed must be an integer, got {seed!r}") from None

    def choice(self, candidates: np.ndarray) -> int:
        """One element of a non-empty index array, uniformly."""
        return int(candidates[int(self.gen.integers(len(candidates)))])


class CodePacker:
    """Packs QI code columns into few combined columns so that a score ``Σ_j tab_j[codes_j]`` is a
    handful of gathers: attributes are grouped (greedily, largest first) while the product of their
    leaf counts stays ≤ ``limit``; a group's table is the outer sum of its attributes' tables
    (built per step from tables of a few dozen entries) and its code the mixed-radix combination."""

    def __init__(self, sizes: Sequence[int], limit: int = 4096):
        self.sizes = [int(s) for s in sizes]
        order = sorted(range(len(self.sizes)), key=lambda j: -self.sizes[j])
        groups: list[list[int]] = []
        prods: list[int] = []
        for j in order:
            for g, p in enumerate(prods):
                if p * self.sizes[j] <= limit:
                    groups[g].append(j)
                    prods[g] *= self.sizes[j]
                    break
            else:
                groups.append([j])
                prods.append(self.sizes[j])
        self.groups = groups

    def pack(self, codes: np.ndarray) -> np.ndarray:
        """``(n, q)`` codes → ``(g, n)`` combined codes (int64)."""
        codes = np.asarray(codes, dtype=np.int64)
        out = np.empty((len(self.groups), len(codes)), dtype=np.int64)
        for g, js in enumerate(self.groups):
            c = codes[:, js[0]].copy()
            for j in js[1:]:
                c = c * self.sizes[j] + codes[:, j]
            out[g] = c
        return out

    def joint(self, tabs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Per group, the table of combined codes: the outer sum of its attributes' tables."""
        out = []
        for js in self.groups:
            t = np.asarray(tabs[js[0]], dtype=np.float64)
            for j in js[1:]:
                t = np.add.outer(t, tabs[j]).ravel()
            out.append(t)
        return out


class Remaining:
    """The distinct rows still to cluster, as compact arrays.

    ``U`` ``(g, m)`` packed codes (:class:`CodePacker`), ``ids`` their distinct-row ids, ``cnt``
    tuples left per distinct row; ``pen`` is 0 for live entries and +inf for exhausted ones (added
    to a score to skip them).
    """

    def __init__(
        self,
        ucodes: np.ndarray,
        counts: np.ndarray,
        packer: CodePacker | None = None,
        ids: np.ndarray | None = None,
    ):
        ucodes = np.asarray(ucodes, dtype=np.int64)
        self.packer = packer or CodePacker([int(ucodes[:, j].max()) + 1 for j in range(ucodes.shape[1])], limit=1)
        self.U = np.ascontiguousarray(self.packer.pack(ucodes))
        self.cnt = np.asarray(counts, dtype=np.int64).copy()
        self.ids = np.arange(len(self.cnt), dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
        self.pen = np.where(self.cnt > 0, 0.0, np.inf)
        self.dead = int((self.cnt == 0).sum())
        self.tuples = int(self.cnt.sum())

    def __len__(self) -> int:
        return len(self.cnt)

    def score(self, tabs: Sequence[np.ndarray]) -> np.ndarray:
        """``Σ_j tabs[j][codes_j]`` (``tabs`` per QI) for every entry, +inf for exhausted ones."""
        joint = self.packer.joint(tabs)
        d = np.take(joint[0], self.U[0])
        for g in range(1, len(joint)):
            d += np.take(joint[g], self.U[g])
        d += self.pen
        return d

    def take(self, pos: np.ndarray, counts: np.ndarray) -> None:
        """Remove ``counts`` tuples from entries ``pos``."""
        self.cnt[pos] -= counts
        self.tuples -= int(np.sum(counts))
        gone = pos[self.cnt[pos] == 0]
        if len(gone):
            self.pen[gone] = np.inf
            self.dead += len(gone)
            if self.dead * 3 > len(self.cnt):
                self.compact()

    def compact(self) -> None:
        """Drop exhausted entries."""
        keep = self.cnt > 0
        self.U = np.ascontiguousarray(self.U[:, keep])
        self.cnt = self.cnt[keep]
        self.ids = self.ids[keep]
        self.pen = np.zeros(len(self.cnt))
        self.dead = 0

    def live(self) -> np.ndarray:
        """Positions of the entries with tuples left."""
        return np.flatnonzero(self.cnt > 0)


class TakeLog:
    """Which cluster took how many tuples of which distinct row, in order; :meth:`labels` turns it
    into a class id per input row."""

    def __init__(self):
        self.rows: list[np.ndarray] = []
        self.cls: list[np.ndarray] = []
        self.cnt: list[np.ndarray] = []

    def add(self, row_ids: np.ndarray, cluster: int | np.ndarray, counts: np.ndarray) -> None:
        row_ids = np.atleast_1d(np.asarray(row_ids, dtype=np.int64))
        self.rows.append(row_ids)
        self.cls.append(np.broadcast_to(np.asarray(cluster, dtype=np.int64), row_ids.shape).copy())
        self.cnt.append(np.atleast_1d(np.asarray(counts, dtype=np.int64)))

    def labels(self, inverse: np.ndarray) -> np.ndarray:
        """Class id of every input row (``inverse`` = distinct-row id per input row). Rows of a
        distinct row go to its takes in order; rows not taken get -1."""
        n = len(inverse)
        out = np.full(n, -1, dtype=np.int64)
        if not self.rows:
            return out
        rows = np.concatenate(self.rows)
        cls = np.concatenate(self.cls)
        cnt = np.concatenate(self.cnt)
        o = np.argsort(rows, kind="stable")
        lab = np.repeat(cls[o], cnt[o])
        taken_per_row = np.bincount(rows, weights=cnt, minlength=int(inverse.max()) + 1).astype(np.int64)
        order = np.argsort(inverse, kind="stable")
        # rows of distinct row r occupy a run in `order`; the first taken_per_row[r] of them are labelled
        total = np.bincount(inverse, minlength=len(taken_per_row))
        start = np.zeros(len(total), dtype=np.int64)
        np.cumsum(total[:-1], out=start[1:])
        pos_in_run = np.arange(n, dtype=np.int64) - start[inverse[order]]
        labelled = pos_in_run < taken_per_row[inverse[order]]
        out[order[labelled]] = lab
        return out


def encoded(table) -> EncodedTable:
    """``table`` if it is an :class:`EncodedTable`, else a one-line error."""
    if not isinstance(table, EncodedTable):
        raise AnonymizeError("expected an EncodedTable (use anonymize_table for a DataFrame)")
    return table
