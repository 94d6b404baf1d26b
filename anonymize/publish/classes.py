"""Equivalence classes and the statistics privacy models look at; the public class checker.

An equivalence class is a set of rows with identical (generalized) quasi-identifier values
(Aggarwal, *Data Mining: The Textbook*, 2015, §20.3.1, def. of k-anonymity). Every privacy model
(:mod:`.models`) is a predicate over :class:`ClassStats` — class sizes and per-class histograms of
the sensitive attributes — evaluated for all classes at once. :class:`ClassChecker` is what
partition, clustering and bucketization algorithms call to decide whether candidate groups of
rows satisfy the models, so that every algorithm checks classes the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import AnonymizeError
from .table import EncodedTable

__all__ = ["equivalence_classes", "ClassStats", "class_stats", "ClassChecker"]


def equivalence_classes(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Equivalence classes of identical code rows (Aggarwal 2015, §20.3.1).

    Vectorized: the columns are combined into one mixed-radix integer key
    (``key = key * radix_j + code_j``), re-compressed with ``np.unique`` whenever
    the next radix would overflow int64; then ``np.bincount`` (small key space) or
    ``np.unique`` gives dense class ids. Returns ``(class_id (n,) int64, n_classes)``;
    class ids follow the lexicographic order of the code rows.
    """
    codes = np.asarray(codes)
    if codes.ndim == 1:
        codes = codes[:, None]
    n, q = codes.shape
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    if q == 0:
        return np.zeros(n, dtype=np.int64), 1
    key = codes[:, 0].astype(np.int64)
    space = int(key.max()) + 1
    for j in range(1, q):
        col = codes[:, j].astype(np.int64)
        r = int(col.max()) + 1
        if space * r >= 2**62:
            uniq, key = np.unique(key, return_inverse=True)
            key = key.astype(np.int64)
            space = len(uniq)
        key = key * r + col
        space *= r
    if space <= max(4 * n, 1 << 16):
        counts = np.bincount(key, minlength=space)
        present = counts > 0
        remap = np.cumsum(present) - 1
        return remap[key].astype(np.int64), int(present.sum())
    uniq, inv = np.unique(key, return_inverse=True)
    return inv.astype(np.int64).ravel(), len(uniq)


@dataclass
class ClassStats:
    """What privacy models look at, for ``C`` classes.

    sizes : (C,) int64 class sizes (rows counted: the ``rows`` given to :func:`class_stats`).
    sens_hist : per sensitive attribute, (C, V_s) int64 value counts per class.
    global_dist : per sensitive attribute, (V_s,) float — the whole table's distribution
        (Q in eq. 20.12; taken over all rows, suppressed ones included, as in ARX and in N. Li, T. Li,
        S. Venkatasubramanian, "t-Closeness: privacy beyond k-anonymity and l-diversity", ICDE 2007).
    table : the EncodedTable (value order, hierarchies for ground distances).
    population_sizes : (C,) int64 rows of a population table in the same generalized class, or None —
        what population-based models read (δ-presence, k-map: :mod:`.models_population`); filled by
        the full-domain lattice when a model brings a population table.
    """

    sizes: np.ndarray
    sens_hist: list
    global_dist: list
    table: EncodedTable | None = None
    population_sizes: np.ndarray | None = None

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``."""
        return len(self.sizes)

    def select(self, idx) -> ClassStats:
        """Stats of a subset of classes (index or bool mask)."""
        pop = None if self.population_sizes is None else self.population_sizes[idx]
        return ClassStats(self.sizes[idx], [h[idx] for h in self.sens_hist], self.global_dist, self.table, pop)

    def sens_index(self, attribute: str | None) -> list[int]:
        """Indices of the sensitive attributes a model covers (all of them for ``None``)."""
        if self.table is None:
            if attribute is not None:
                raise AnonymizeError("ClassStats without a table: attribute names cannot be resolved")
            return list(range(len(self.sens_hist)))
        return self.table.sens_index(attribute)


def class_stats(table: EncodedTable, class_id: np.ndarray, n_classes: int, rows=None) -> ClassStats:
    """Class sizes and sensitive histograms by ``np.bincount`` over ``class_id * V + value``.

    ``rows``: optional bool mask or index array of the rows to count (e.g. the
    non-suppressed ones); classes left without rows get size 0 and pass every model. The rows of a
    weighted table count their weight.
    """
    cid = np.asarray(class_id, dtype=np.int64)
    sc = table.sens_codes
    w = table.weights
    if rows is not None:
        cid = cid[rows]
        sc = sc[rows]
        w = None if w is None else w[rows]
    sizes = np.bincount(cid, weights=w, minlength=n_classes).astype(np.int64)
    hists = []
    for j, vals in enumerate(table.sens_values):
        V = len(vals)
        h = np.bincount(cid * V + sc[:, j], weights=w, minlength=n_classes * V)
        hists.append(h.reshape(n_classes, V).astype(np.int64))
    return ClassStats(sizes, hists, table.global_dist(), table)


class ClassChecker:
    """Do candidate groups of rows satisfy every privacy model? — vectorized over the groups.

    Partition (Mondrian), clustering and bucketization algorithms call :meth:`ok` with a group
    number per row; the checker builds the class statistics with one ``np.bincount`` per
    sensitive attribute and applies every model (:func:`.models.all_ok`). When every model looks
    at class sizes only (:attr:`size_only`, e.g. k-anonymity), no histogram is built and a group
    passes iff it has at least :attr:`min_size` rows.

    ``models`` are :class:`.models.PrivacyModel` objects; a model that needs a sensitive
    attribute on a table without one is an error here, once, rather than in every call.
    """

    def __init__(self, table: EncodedTable, models: Sequence):
        self.table = table
        self.models = list(models)
        #: every model decides on class sizes alone (no sensitive histogram needed)
        self.size_only = all(m.size_only for m in self.models)
        #: the smallest class size every model allows (the largest minimal class size)
        self.min_size = max([m.minimal_class_size for m in self.models], default=1)
        if not self.size_only and table.sens_codes.shape[1] == 0:
            raise AnonymizeError("l-diversity / t-closeness need at least one sensitive attribute (--sensitive)")
        self.sens = [
            np.ascontiguousarray(table.sens_codes[:, s]).astype(np.int64) for s in range(table.sens_codes.shape[1])
        ]
        self.V = [len(v) for v in table.sens_values]
        self.global_dist = table.global_dist()
        #: multiplicity of every row of a weighted table (None: each row once)
        self.weights = table.weights

    def stats(self, part_of_row: np.ndarray, rows: np.ndarray, n_parts: int, sizes: np.ndarray) -> ClassStats:
        """:class:`ClassStats` of the groups (group ``p`` = rows ``rows[part_of_row == p]``; ``sizes``
        count the rows' weights in a weighted table)."""
        hists = []
        w = None if self.weights is None else self.weights[rows]
        for s, V in zip(self.sens, self.V):
            h = np.bincount(part_of_row * V + s[rows], weights=w, minlength=n_parts * V).reshape(n_parts, V)
            hists.append(h if w is None else h.astype(np.int64))
        return ClassStats(np.asarray(sizes, dtype=np.int64), hists, self.global_dist, self.table)

    def ok(self, part_of_row: np.ndarray, rows: np.ndarray, n_parts: int, sizes: np.ndarray) -> np.ndarray:
        """``(n_parts,)`` bool: group ``p`` (rows ``rows[part_of_row == p]``) satisfies every model.
        ``sizes`` are the group sizes. Empty groups count as failing."""
        sizes = np.asarray(sizes)
        if self.size_only:
            return sizes >= self.min_size
        stats = self.stats(part_of_row, rows, n_parts, sizes)
        ok = sizes > 0
        for m in self.models:
            ok &= m.class_ok(stats)
        return ok

    def ok_labels(self, class_id: np.ndarray, n_classes: int) -> np.ndarray:
        """``(n_classes,)`` bool for a labelling of every row of the table (``class_id[i]`` = class of row
        ``i``): the common case of a finished partition or clustering."""
        cid = np.asarray(class_id, dtype=np.int64)
        sizes = np.bincount(cid, weights=self.weights, minlength=n_classes).astype(np.int64)
        return self.ok(cid, np.arange(len(cid), dtype=np.int64), n_classes, sizes)
