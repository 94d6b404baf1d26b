"""GAA-CP: greedy clustering k-anonymity (Jiang, Zeng, Ma, "Greedy clustering-anonymity method for
privacy preservation of table data-publishing", Journal of Software 28(2):341–351, 2017).

Algorithm 1 of the paper, step by step:

1. ``T* = ∅``; 2. take a tuple of ``T`` (the paper: any, at random — here drawn with ``seed``) as
   the seed of cluster ``C``;
3. while ``|T| ≥ k``: 3.1 while ``|C| < k`` add to ``C`` the tuple(s) of ``T`` at the smallest
   distance to ``C``; 3.2 ``T* = T* ∪ {C}``; 3.3–3.4 the tuple of ``T`` farthest from ``C`` seeds
   the next cluster;
4. every tuple left in ``T`` joins, one by one, the cluster nearest to it;
5. each cluster is generalized minimally (numeric QIs to ``[min, max]`` of the cluster,
   categorical QIs to the lowest common ancestor in their hierarchy) — the shared partition
   release (:func:`..recode.release_partition`), measured by :func:`..metrics.gaacp_iloss`.

Distances (§3.1). For tuples ``t_p, t_q`` and ``d`` QIs,
``dist(t_p, t_q) = (1/d)(Σ_numeric |t_p − t_q|/(max T − min T) + Σ_categorical ½(h(t_p, lub)/h(t_p, root)
+ h(t_q, lub)/h(t_q, root)))`` with ``lub`` the lowest common ancestor and ``h`` path lengths in the
hierarchy (Proposition 1: ``2·d·dist`` is the information loss of generalizing the two together).
A tuple's distance to a cluster is its distance to the cluster's *equivalence tuple* ``t_c``
(Definition 6), the cluster's minimal generalization: numeric ``[lo, hi]``, categorical a node
``N``. Reading the definitions on such a tuple (Proposition 2: proportional to the loss of the
minimal merge): numeric ``(max(hi, x) − min(lo, x))/(max T − min T)`` — the merged range, which
is ``|t_p − t_q|`` when ``lo = hi``; categorical ``½(lev/H + (lev − l_N)/(H − l_N))`` with ``lev`` the
level of the lowest common ancestor of ``N`` and the value, ``H`` the hierarchy height (every leaf
is ``H`` edges below the root in these hierarchies) and the second term 0 when ``N`` is the root.

Reading of the loop (documented choices):

* step 3.1 adds *every* tuple at the minimal distance ("the tuple (set)" of the paper, §3.3.1).
  A tie at distance 0 — tuples identical to the cluster, which the paper's tables never hold (it
  assumes no duplicate QI rows) — joins whole, however large: a seed's copies are never split over
  clusters, and a row occurring at least ``k`` times is a class of its own. Any other tie is capped at ``k − |C|`` tuples (taken in code order), so on a table
  without duplicates clusters are exactly ``k`` before step 4, as §3.3.2 states. (Capping the
  zero-distance tie too, as an earlier version did, split identical rows across clusters: on Adult
  with two QIs, where most rows repeat, the loss was 12× KACA's, against the paper's conclusion.
  Taking every tie whole instead helps there but costs 30% at 5 QIs, where ties at a positive
  distance are common: they would all join.)
* the test ``|T| ≥ k`` is made before the next seed leaves ``T``: no seed is stranded, fewer than
  ``k`` tuples are left for step 4 and every cluster ends in ``[k, 2k)`` (§3.3.2) — on a table without
  duplicates; step 4 moves a leftover tuple with all its copies;
* the numeric range ``max T − min T`` is the table's (§2.2.1), in the distances and in the loss
  :func:`..metrics.gaacp_iloss` that measures the release (the same for every algorithm compared).

Vectorization. A step scores all remaining *distinct* QI rows at once as ``Σ_j tab_j[codes_j]``
(:class:`.common.Remaining`), where ``tab_j`` — the distance of every value of QI ``j`` to the
current cluster — has one entry per hierarchy leaf and is rebuilt per step (a categorical table is
``max(l_N, lca[first leaf of N, :])`` from a precomputed leaf-pair matrix). Cost: O(n/k · k · m · q)
with ``m`` distinct rows left, i.e. O(n·m·q) in the worst case and far less when ties are added
together; Adult (30,162 rows, 8 QIs) at k = 10 takes seconds (``benchmarks/bench_clustering.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..models import PrivacyModel, check_fits
from ..registry import CLUSTERING, PartitionResult, register
from ..table import EncodedTable
from .common import (
    CodePacker,
    Remaining,
    Rng,
    TakeLog,
    distinct_rows,
    encoded,
    lca_levels,
    model_k,
    numeric_values,
    table_range,
)

__all__ = ["gaa_cp", "GaaCpDistance"]


class GaaCpDistance:
    """The §3.1 distances of GAA-CP as per-attribute lookup tables over leaf codes."""

    def __init__(self, table: EncodedTable):
        self.q = table.q
        self.numeric = [bool(h.numeric) for h in table.hierarchies]
        self.vals: list[np.ndarray] = [numeric_values(h) if h.numeric else np.zeros(0) for h in table.hierarchies]
        self.rng = [table_range(h, table.qi_codes[:, j]) if h.numeric else 1.0 for j, h in enumerate(table.hierarchies)]
        self.H = [h.height for h in table.hierarchies]
        self.lca: list[np.ndarray] = [
            np.zeros((0, 0), dtype=np.int64) if h.numeric else lca_levels(h) for h in table.hierarchies
        ]
        # categorical terms for every node (first leaf a, level l) and value v: cat[j][a, l, v]
        self.cat: list[np.ndarray] = [
            np.zeros((0, 0, 0))
            if h.numeric
            else self._cat_term(self.lca[j][:, None, :], np.arange(h.height + 1)[None, :, None], h.height)
            for j, h in enumerate(table.hierarchies)
        ]
        self.packer = CodePacker([h.n_leaves for h in table.hierarchies])

    def box_of(self, codes: np.ndarray) -> list:
        """Equivalence tuple of a set of code rows ``(r, q)``: per QI ``(lo, hi)`` values (numeric)
        or ``(first leaf, level)`` of the lowest common ancestor (categorical)."""
        box: list = []
        for j in range(self.q):
            c = codes[:, j]
            if self.numeric[j]:
                v = self.vals[j][c]
                box.append([float(v.min()), float(v.max())])
            else:
                a = int(c.min())
                lev = int(self.lca[j][a, c].max())
                box.append([a, lev])
        return box

    def extend(self, box: list, codes: np.ndarray) -> None:
        """Widen ``box`` to cover code rows ``(r, q)`` too."""
        for j in range(self.q):
            c = codes[:, j]
            if self.numeric[j]:
                v = self.vals[j][c]
                box[j][0] = min(box[j][0], float(v.min()))
                box[j][1] = max(box[j][1], float(v.max()))
            else:
                a, lev = box[j]
                box[j][1] = max(lev, int(self.lca[j][a, c].max()))
                box[j][0] = min(a, int(c.min()))

    def tables(self, box: list) -> list[np.ndarray]:
        """Per QI, the distance term of every leaf value to the equivalence tuple ``box`` (not yet
        divided by ``d``)."""
        out = []
        for j in range(self.q):
            if self.numeric[j]:
                lo, hi = box[j]
                v = self.vals[j]
                out.append((np.maximum(hi, v) - np.minimum(lo, v)) / self.rng[j])
            else:
                a, ln = box[j]
                out.append(self.cat[j][a, ln])
        return out

    @staticmethod
    def _cat_term(lca_row: np.ndarray, ln, H: int) -> np.ndarray:
        """½(lev/H + (lev − l_N)/(H − l_N)) with lev = max(l_N, lca(first leaf of N, v))."""
        if H == 0:
            return np.zeros(np.broadcast(lca_row, ln).shape)
        lev = np.maximum(ln, lca_row)
        up = H - np.asarray(ln, dtype=np.float64)
        second = np.divide(lev - ln, up, out=np.zeros(np.broadcast(lev, up).shape), where=up > 0)
        return 0.5 * (lev / H + second)

    def to_boxes(self, t: np.ndarray, boxes: list[np.ndarray]) -> np.ndarray:
        """Distance (times ``d``) of one code row ``t`` to many equivalence tuples: ``boxes[j]`` is
        ``(C, 2)`` — ``(lo, hi)`` or ``(first leaf, level)`` per cluster."""
        d = np.zeros(len(boxes[0]))
        for j in range(self.q):
            b = boxes[j]
            if self.numeric[j]:
                x = self.vals[j][t[j]]
                d += (np.maximum(b[:, 1], x) - np.minimum(b[:, 0], x)) / self.rng[j]
            else:
                d += self.cat[j][b[:, 0].astype(np.int64), b[:, 1].astype(np.int64), t[j]]
        return d


@register(
    "gaa-cp",
    kind=CLUSTERING,
    summary="GAA-CP greedy clustering k-anonymity (Jiang, Zeng, Ma, J. Software 2017)",
    accepts=["k-anonymity"],
    requires=["k-anonymity"],
    options=("seed",),
)
def gaa_cp(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> PartitionResult:
    """Cluster ``table`` with GAA-CP (module docstring) into classes of at least ``k`` rows (``[k, 2k)`` on a
    table without duplicate QI rows; a tie at distance 0 joins whole), ``k`` from the k-anonymity model. ``seed`` draws the first seed tuple (the paper: any tuple). Returns a
    :class:`..registry.PartitionResult` (class id per row) with ``stats`` (steps, seconds)."""
    t0 = time.perf_counter()
    table = encoded(table)
    k = model_k(models, "gaa-cp")
    check_fits(models, table.n)
    dist = GaaCpDistance(table)
    U, inv, cnt = distinct_rows(table.qi_codes)
    rem = Remaining(U, cnt, dist.packer)
    log = TakeLog()
    rng = Rng(seed)
    first = rng.choice(np.arange(table.n))
    pos = np.array([inv[first]])
    boxes: list[list] = []
    steps = 0
    n_clusters = 0
    while True:
        # seed the cluster with one tuple of distinct row `pos`
        c = n_clusters
        log.add(rem.ids[pos], c, np.ones(1, dtype=np.int64))
        box = dist.box_of(U[rem.ids[pos]])
        rem.take(pos, np.ones(1, dtype=np.int64))
        size = 1
        while size < k:  # step 3.1
            steps += 1
            d = rem.score(dist.tables(box))
            dmin = d.min()
            cand = np.flatnonzero(d <= dmin + 1e-12)
            if dmin <= 1e-12:  # tuples identical to the cluster: all of them, never split
                take = rem.cnt[cand].copy()
            else:
                take = np.minimum(rem.cnt[cand], np.maximum(0, (k - size) - (np.cumsum(rem.cnt[cand]) - rem.cnt[cand])))
                sel = take > 0
                cand, take = cand[sel], take[sel]
            log.add(rem.ids[cand], c, take)
            dist.extend(box, U[rem.ids[cand]])
            rem.take(cand, take)
            size += int(take.sum())
        boxes.append(box)
        n_clusters += 1
        if progress and n_clusters % 200 == 0:
            progress(f"gaa-cp: {n_clusters} clusters, {rem.tuples} tuples left")
        if rem.tuples < k:  # the loop test |T| ≥ k, before the next seed leaves T
            break
        d = rem.score(dist.tables(box))  # step 3.3: the farthest remaining tuple
        d[np.isinf(d)] = -np.inf
        pos = np.array([int(np.argmax(d))])
    # step 4: the tuples left join their nearest cluster one by one
    left = rem.live()
    if len(left):
        arr = [np.array([b[j] for b in boxes], dtype=np.float64) for j in range(table.q)]
        for p in left.tolist():  # a leftover tuple with all its copies (identical rows are never split)
            t = U[rem.ids[p]]
            best = int(np.argmin(dist.to_boxes(t, arr)))
            log.add(rem.ids[[p]], best, rem.cnt[[p]].copy())
            b = [list(map(float, arr[j][best])) for j in range(table.q)]
            for j in range(table.q):
                if not dist.numeric[j]:
                    b[j] = [int(b[j][0]), int(b[j][1])]
            dist.extend(b, t[None, :])
            for j in range(table.q):
                arr[j][best] = b[j]
    class_id = log.labels(inv)
    stats = {
        "k": k,
        "clusters": n_clusters,
        "greedy_steps": steps,
        "leftover_tuples": int(rem.cnt[left].sum()) if len(left) else 0,
        "distinct_qi_rows": int(len(U)),
        "seed": seed,
        "seconds": time.perf_counter() - t0,
    }
    return PartitionResult(class_id, n_clusters, stats=stats)
