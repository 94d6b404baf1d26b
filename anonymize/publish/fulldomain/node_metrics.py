"""The metrics of full-domain lattice nodes: what a satisfying node keeps of its frequency set when
it is evaluated (:meth:`NodeMetrics.prepare`), and its DM and NCP filled in later, only for the
nodes a search returns (:meth:`NodeMetrics.complete`).

DM is discernibility Σ|E|² + suppressed·n (Bayardo & Agrawal, ICDE 2005); NCP is the information
loss of :func:`..metrics.ncp` averaged over all QI cells, suppressed cells counting 1. Without
suppression NCP is separable per attribute: a column total per QI and level, precomputed once
(:meth:`NodeMetrics.loss_tables`); only the failing (suppressed) tuples are decoded. With attribute
weights NCP is the weighted mean of the per-attribute NCPs (:func:`..metrics.loss.weighted_mean`).
The "Loss" of ARX (:func:`..metrics.loss.loss_geometric`) is filled the same way from the
per-attribute domain-share tables (:meth:`NodeMetrics.share_tables`), under ARX's gs-factor
(:func:`..metrics.loss.loss_attribute`).
"""

from __future__ import annotations

import numpy as np

from ..metrics.cells import node_loss_tables, node_share_tables
from ..metrics.loss import (
    DEFAULT_GS_FACTOR,
    arx_round,
    arx_weights,
    geometric_loss,
    gs_factors,
    loss_attribute,
    weighted_mean,
)
from .frequency import FrequencySet, FrequencySets
from .result import NodeInfo

__all__ = ["NodeMetrics"]


class NodeMetrics:
    """DM and NCP of the nodes of one lattice, from its frequency sets ``freq`` (their compact
    encoding) and the categorical NCP flavour ``ncp_categorical`` (:func:`..metrics.cells.node_loss_tables`);
    ``gs_factor`` — ARX's generalization/suppression factor of the Loss (:func:`..metrics.loss.gs_factors`)."""

    def __init__(
        self,
        freq: FrequencySets,
        ncp_categorical: str = "height",
        weights: np.ndarray | None = None,
        gs_factor: float = DEFAULT_GS_FACTOR,
    ):
        self.freq = freq
        self.table = freq.table
        self.n = freq.n
        self.q = freq.q
        self.heights = freq.heights
        self.ncp_categorical = ncp_categorical
        #: a weight per QI (None: equal), :func:`..metrics.loss.attribute_weights`
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self._loss = None
        self._share = None
        self._leaf_counts = _LeafCounts(freq)
        gs_factors(gs_factor)  # a one-line error for a bad factor
        self.gs_factor = float(gs_factor)
        #: sums of products of counts (Σ c², DM bounds) are exact in int64: n² fits (n < 2^31)
        self.int_sums = self.n < 1 << 31
        #: per QI, the hierarchy's leaves (:func:`..metrics.loss.loss_attribute`)
        self._leaves = [h.n_leaves for h in freq.table.hierarchies]

    def _compact_tables(self, raw):
        """``raw`` (per QI and level, a value per hierarchy node) per compact node, and the column
        total over all rows: two ``[j][level]`` tables whose entries are computed when first read (a
        search without suppression reads one node's levels; the bounds read them all)."""
        qis = [_QITables(self.freq, self._leaf_counts, raw, j, self.heights[j] + 1) for j in range(self.q)]
        per_node = [_LevelTable(t, 0) for t in qis]
        totals = [_LevelTable(t, 1) for t in qis]
        return per_node, totals

    def loss_tables(self):
        """Per QI and level: NCP of every compact node, and the column total over all rows."""
        if self._loss is None:
            self._loss = self._compact_tables(node_loss_tables(self.table, self.ncp_categorical))
        return self._loss

    def share_tables(self):
        """Per QI and level: ARX's normalized domain share (:func:`..metrics.cells.share_loss`) of
        every compact node, and the column total over all rows."""
        if self._share is None:
            self._share = self._compact_tables(node_share_tables(self.table))
        return self._share

    def _aggregate(self, ncp_totals, share_totals, suppressed: float, share_sup=None) -> tuple[float, float]:
        """(NCP, Loss) from per-attribute column totals of the released cells (suppressed rows then
        add 1 per cell). Unweighted NCP is summed as (Σ totals + suppressed·q) / (n·q). ``share_sup``
        — per attribute, the suppressed rows' share losses (what a gs-factor other than 0.5 weighs)."""
        if not self.q:
            return 0.0, 0.0
        n = float(self.n)
        if self.weights is None:
            ncp = (sum(ncp_totals) + suppressed * self.q) / (n * self.q)
        else:
            ncp = weighted_mean([(t + suppressed) / n for t in ncp_totals], self.weights)
        sup = share_sup if share_sup is not None else [0.0] * self.q
        per = [
            arx_round(max(loss_attribute(t, u, suppressed, n, a, self.gs_factor), 0.0))
            for t, u, a in zip(share_totals, sup, self._leaves)
        ]
        return ncp, geometric_loss(per, self.weights)

    def bounds(self, levels) -> tuple[float, float]:
        """Lower bounds of (NCP, Loss) at ``levels`` and at every generalization of it: the values
        without suppression (a suppressed cell costs 1, at least any generalized cell, and a cell's
        loss only grows with its level; both aggregates grow with every per-attribute loss). Under a
        gs-factor every row is counted as kept, at g·share: a suppressed row costs
        share + s·(1 − share) ≥ share ≥ g·share (:func:`..metrics.loss.loss_attribute`)."""
        _, totals = self.loss_tables()
        _, shares = self.share_tables()
        return self._aggregate(
            [totals[j][levels[j]] for j in range(self.q)], [shares[j][levels[j]] for j in range(self.q)], 0.0
        )

    def bounds_all(self, lv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`bounds` of every row of the level matrix ``lv`` (``(N, q)``) at once, each value
        equal to what :meth:`bounds` gives for that node (the same operations in the same order)."""
        lv = np.asarray(lv)
        N = len(lv)
        if not self.q:
            return np.zeros(N), np.zeros(N)
        if self.weights is not None:  # the weighted aggregates' sums are np.dot's: node by node
            pairs = [self.bounds(tuple(int(x) for x in row)) for row in lv]
            return np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        _, totals = self.loss_tables()
        _, shares = self.share_tables()
        n = float(self.n)
        ncp = np.zeros(N)
        for j in range(self.q):  # left to right, as sum() adds the totals
            ncp = ncp + np.asarray(totals[j], dtype=np.float64)[lv[:, j]]
        ncp = (ncp + 0.0 * self.q) / (n * self.q)
        w = arx_weights(None, self.q)
        loss = np.ones(N)
        for j in range(self.q):  # left to right, as np.prod multiplies
            kept = np.asarray(shares[j], dtype=np.float64)[lv[:, j]]
            per = loss_attribute(kept, 0.0, 0.0, n, self._leaves[j], self.gs_factor)  # nothing suppressed
            per = np.floor(np.maximum(per, 0.0) * 1e10) / 1e10  # arx_round
            loss = loss * np.power(w[j] * per + 1.0, 1.0 / self.q)
        return ncp, loss - 1.0

    def _squares(self, counts: np.ndarray) -> float:
        """Σ c²: exactly, in int64, while n² fits (n < 2^31), else in float64."""
        if self.int_sums:
            return float(np.dot(counts, counts))
        c = counts.astype(np.float64)
        return float(np.dot(c, c))

    def dm(self, info: NodeInfo) -> float:
        """DM of a node evaluated earlier (its other metrics stay pending for :meth:`complete`)."""
        pending = info._pending
        if pending is None:
            return info.dm
        assert isinstance(pending, tuple)
        sq_all, sub = pending
        fc = sub.counts
        info.dm = sq_all - self._squares(fc) + info.suppressed * float(self.n)
        return info.dm

    def prepare(self, info: NodeInfo, fs: FrequencySet, fail: np.ndarray) -> None:
        """Keep what DM / NCP need (class-size sums and the failing tuples, usually few) so that
        :meth:`complete` can fill them later for the nodes that matter."""
        fc = fs.counts[fail]
        info.n_classes = int(len(fs.counts) - len(fc))
        sq_all = self._squares(fs.counts)
        sub = FrequencySet(
            fs.levels,
            None if fs.keys is None else fs.keys[fail],
            fc,
            codes=None if fs.codes is None else fs.codes[fail],
        )
        info._pending = (sq_all, sub)

    def complete(self, info: NodeInfo) -> NodeInfo:
        """Fill DM, NCP and ARX's Loss of a satisfying node evaluated earlier. NCP without suppression is
        separable per attribute (a column total per level, precomputed); only the failing tuples
        are decoded to swap their loss for 1."""
        pending = info._pending
        if pending is None:
            return info
        assert isinstance(pending, tuple)
        sq_all, sub = pending
        per_node, totals = self.loss_tables()
        share_node, shares = self.share_tables()
        fc = sub.counts
        info.dm = sq_all - self._squares(fc) + info.suppressed * float(self.n)
        ncp_t = [totals[j][info.levels[j]] for j in range(self.q)]
        share_t = [shares[j][info.levels[j]] for j in range(self.q)]
        share_sup = [0.0] * self.q
        total = sum(ncp_t)
        if len(fc):
            codes = self.freq.tuple_codes(sub)
            fcf = fc.astype(np.float64)
            lost = np.zeros(len(fc))
            for j in range(self.q):
                lv = info.levels[j]
                cell = per_node[j][lv][codes[:, j]]
                lost += cell
                ncp_t[j] -= float(np.dot(cell, fcf))
                share_sup[j] = float(np.dot(share_node[j][lv][codes[:, j]], fcf))
                share_t[j] -= share_sup[j]
            total -= float(np.dot(lost, fc))
        info.ncp, info.loss = self._aggregate(ncp_t, share_t, float(info.suppressed), share_sup)
        if self.weights is None:  # the unweighted NCP summed exactly as before (other sweeps compare with it)
            info.ncp = (total + info.suppressed * self.q) / (self.n * self.q) if self.q else 0.0
        info._pending = None
        return info


class _LevelTable:
    """One QI's per-level entries of :meth:`NodeMetrics._compact_tables`: an array per level
    (``part`` 0) or a column total per level (``part`` 1), from a :class:`_QITables`."""

    __slots__ = ("src", "part")

    def __init__(self, src: _QITables, part: int):
        self.src, self.part = src, part

    def __len__(self) -> int:
        return self.src.size

    def __getitem__(self, lv: int):
        return self.src.entry(int(lv))[self.part]

    def __iter__(self):
        return (self[lv] for lv in range(len(self)))

    def __array__(self, dtype=None, copy=None):
        return np.asarray([self[lv] for lv in range(len(self))], dtype=dtype)


class _LeafCounts:
    """Rows per compact leaf of each QI (float64; a weighted table's tuples count their weight, as
    the engines' GROUP BY does), computed once per QI when first asked for."""

    __slots__ = ("freq", "_memo")

    def __init__(self, freq: FrequencySets):
        self.freq = freq
        self._memo: dict[int, np.ndarray] = {}

    def __call__(self, j: int) -> np.ndarray:
        got = self._memo.get(j)
        if got is None:
            freq = self.freq
            if freq.table.weights is None:
                got = freq.leaf_rows[j].astype(np.float64)  # counted when the codes were compacted
            else:
                got = np.bincount(freq.leaf_compact[:, j], weights=freq.table.row_weights(), minlength=freq.R[j])
            self._memo[j] = got
        return got


class _QITables:
    """QI ``j``'s entries of both tables at each level, computed when first read: the raw value of
    every compact node at that level, and its total over all rows (the rows' leaf counts weighted by
    their node's value). It refers to nothing that refers back to it (no reference cycle: a lattice
    is freed as soon as its search is done, not at the next garbage collection)."""

    __slots__ = ("freq", "leaf_counts", "raw", "j", "size", "_memo")

    def __init__(self, freq: FrequencySets, leaf_counts: _LeafCounts, raw, j: int, size: int):
        self.freq, self.leaf_counts, self.raw, self.j, self.size = freq, leaf_counts, raw, j, size
        self._memo: dict[int, tuple[np.ndarray, float]] = {}

    def entry(self, lv: int) -> tuple[np.ndarray, float]:
        if lv < 0:
            lv += self.size
        if not 0 <= lv < self.size:
            raise IndexError(lv)
        got = self._memo.get(lv)
        if got is None:
            freq, j = self.freq, self.j
            loss = self.raw[j][lv][freq.node_of[j][lv]]
            got = (loss, float((loss[freq.lvmap[j][lv]] * self.leaf_counts(j)).sum()))
            self._memo[lv] = got
        return got
