"""The metrics of full-domain lattice nodes: what a satisfying node keeps of its frequency set when
it is evaluated (:meth:`NodeMetrics.prepare`), and its DM and NCP filled in later, only for the
nodes a search returns (:meth:`NodeMetrics.complete`).

DM is discernibility Σ|E|² + suppressed·n (Bayardo & Agrawal, ICDE 2005); NCP is the information
loss of :func:`..metrics.ncp` averaged over all QI cells, suppressed cells counting 1. Without
suppression NCP is separable per attribute: a column total per QI and level, precomputed once
(:meth:`NodeMetrics.loss_tables`); only the failing (suppressed) tuples are decoded.
"""

from __future__ import annotations

import numpy as np

from ..metrics.cells import node_loss_tables
from .frequency import FrequencySet, FrequencySets
from .result import NodeInfo

__all__ = ["NodeMetrics"]


class NodeMetrics:
    """DM and NCP of the nodes of one lattice, from its frequency sets ``freq`` (their compact
    encoding) and the categorical NCP flavour ``ncp_categorical`` (:func:`..metrics.cells.node_loss_tables`)."""

    def __init__(self, freq: FrequencySets, ncp_categorical: str = "height"):
        self.freq = freq
        self.table = freq.table
        self.n = freq.n
        self.q = freq.q
        self.heights = freq.heights
        self.ncp_categorical = ncp_categorical
        self._loss = None

    def loss_tables(self):
        """Per QI and level: NCP of every compact node, and the column total over all rows."""
        if self._loss is None:
            freq = self.freq
            raw = node_loss_tables(self.table, self.ncp_categorical)
            per_node = []
            totals = []
            for j in range(self.q):
                pn, tot = [], []
                counts0 = np.bincount(freq.leaf_compact[:, j], minlength=freq.R[j])
                for lv in range(self.heights[j] + 1):
                    loss = raw[j][lv][freq.node_of[j][lv]]
                    pn.append(loss)
                    tot.append(float((loss[freq.lvmap[j][lv]] * counts0).sum()))
                per_node.append(pn)
                totals.append(tot)
            self._loss = (per_node, totals)
        return self._loss

    def prepare(self, info: NodeInfo, fs: FrequencySet, fail: np.ndarray) -> None:
        """Keep what DM / NCP need (class-size sums and the failing tuples, usually few) so that
        :meth:`complete` can fill them later for the nodes that matter."""
        fc = fs.counts[fail]
        info.n_classes = int(len(fs.counts) - len(fc))
        sq_all = float(np.dot(fs.counts.astype(np.float64), fs.counts))
        sub = FrequencySet(
            fs.levels,
            None if fs.keys is None else fs.keys[fail],
            fc,
            codes=None if fs.codes is None else fs.codes[fail],
        )
        info._pending = (sq_all, sub)

    def complete(self, info: NodeInfo) -> NodeInfo:
        """Fill DM and NCP of a satisfying node evaluated earlier. NCP without suppression is
        separable per attribute (a column total per level, precomputed); only the failing tuples
        are decoded to swap their loss for 1."""
        pending = info._pending
        if pending is None:
            return info
        assert isinstance(pending, tuple)
        sq_all, sub = pending
        per_node, totals = self.loss_tables()
        fc = sub.counts
        info.dm = sq_all - float(np.dot(fc.astype(np.float64), fc)) + info.suppressed * float(self.n)
        total = sum(totals[j][info.levels[j]] for j in range(self.q))
        if len(fc):
            codes = self.freq.tuple_codes(sub)
            lost = np.zeros(len(fc))
            for j in range(self.q):
                lost += per_node[j][info.levels[j]][codes[:, j]]
            total -= float(np.dot(lost, fc))
        info.ncp = (total + info.suppressed * self.q) / (self.n * self.q) if self.q else 0.0
        info._pending = None
        return info
