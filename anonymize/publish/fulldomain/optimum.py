"""The best satisfying node under a metric — over *all* satisfying nodes, not only the minimal ones.

Why. Without suppression the metrics here only grow with generalization, so the best node is a
minimal one and choosing among the minimal nodes is optimal. With a suppression budget they do
not: generalizing merges classes, fewer rows are suppressed, and DM or NCP can *fall* (on Adult,
k = 5 with 5% suppression, the best minimal node has DM 25.6 M while a non-minimal one has 7.2 M).
ARX therefore searches for the global optimum among all satisfying transformations (Kohlmayer et
al., "Flash", PASSAT 2012, and ARX's use of metric lower bounds; Prasser, Kohlmayer et al.,
"Putting statistical disclosure control into practice: the ARX data anonymization tool", 2015).

How. Every satisfying node lies above some minimal satisfying node (take a minimal element of
the satisfying nodes below it), so the search space is the set of generalizations of the minimal
nodes the search found. It is explored best-first by a **lower bound of the sort key** that can
only grow along generalization (so one popped bound above the best key ends the search):

* NCP ≥ the NCP of the node's levels without suppression (a suppressed cell costs 1, more than any
  generalized cell; the loss of a cell only grows with its level) — separable per attribute, known
  before the node is evaluated; the same holds for a weighted NCP and for ARX's Loss, whose
  aggregates grow with every per-attribute loss (:meth:`.node_metrics.NodeMetrics.bounds`);
* DM ≥ Σ_E |E|·max(|E|, m) over the node's classes E, m the smallest class size the models allow:
  in any generalization a row costs the size of its released class — a superset of its class
  here, and at least m — or n if suppressed (n ≥ both) — known once the node or one of its
  specializations has been evaluated, and inherited by its generalizations;
* height and the level vector are exact (they grow componentwise); the suppressed count and the
  average class size have no useful bound (0), so for those metrics the bound on their NCP / DM
  tie-breakers prunes.

The bound of a tuple key compares lexicographically: if each component bounds the node's
component from below, a bound tuple greater than the best key means the node and all its
generalizations are worse. The result equals the exhaustive scan's best node (tested).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from .engine import Lattice
from .grid import LatticeGrid
from .result import NodeInfo, choose, metric_key

__all__ = ["best_node", "dm_lower_bound"]


def dm_lower_bound(counts: np.ndarray, least_class: int, exact: bool) -> float:
    """Σ_E |E|·max(|E|, m) over a node's classes (``counts``), ``m`` = ``least_class`` the smallest class
    the models allow: a lower bound of the DM of the node and of every generalization of it (see the
    module docstring). ``exact``: the sum fits int64 (:attr:`.node_metrics.NodeMetrics.int_sums`),
    else it is taken in float64."""
    c = counts if exact else counts.astype(np.float64)
    return float(np.dot(c, np.maximum(c, least_class)))


def best_node(
    lat: Lattice,
    grid: LatticeGrid,
    minimal: Sequence[NodeInfo],
    metric: str,
    incumbent: NodeInfo | None = None,
    cut: bytearray | None = None,
) -> tuple[NodeInfo, dict]:
    """The node minimizing :func:`.result.metric_key` among all satisfying nodes at or above
    ``minimal`` (the minimal satisfying nodes), and counters ``{"evaluated", "improved"}``.
    ``incumbent`` — a satisfying node found earlier (any node; the search starts from the better);
    ``cut`` — nodes known to be worse than it (non-zero; closed under generalization), not explored.

    When no metric can fall under generalization (no suppression budget, or the metric is the
    height) the best minimal node is the answer and nothing more is evaluated."""
    metrics = lat.node_metrics
    pool = list(minimal) + ([incumbent] if incumbent is not None and all(incumbent is not x for x in minimal) else [])
    if metric == "dm":  # DM first: only the nodes of least DM need their NCP (the key's next part)
        least = min(metrics.dm(i) for i in pool)
        best = choose(lat, [i for i in pool if i.dm == least], metric)
    else:
        best = choose(lat, pool, metric)
    stats = {"evaluated": 0, "improved": 0}
    if lat.max_sup == 0 or metric == "height":
        return best, stats
    best_key = metric_key(best, metric, lat.n)
    dm_bound = [0.0] * grid.N
    m = max((mod.minimal_class_size for mod in lat.models), default=1)
    # NCP and Loss without suppression: every node's at once, unless weighted (node by node, for the
    # nodes the search reaches: bounds_all could only loop over all of them)
    if metrics.weights is None:
        ncp_all, loss_all = metrics.bounds_all(grid.lv)
        ncp_lbs, loss_lbs = ncp_all.tolist(), loss_all.tolist()  # Python floats: read once per node

        def lower(i: int) -> tuple[float, float]:
            return ncp_lbs[i], loss_lbs[i]

    else:

        def lower(i: int) -> tuple[float, float]:
            return metrics.bounds(grid.levels[i])

    exact = metrics.int_sums  # Σ c·max(c, m) ≤ n² fits int64: exact without a float copy

    def dm_lower(counts: np.ndarray) -> float:
        return dm_lower_bound(counts, m, exact)

    def bound(i: int) -> tuple:
        ncp_lb, loss_lb = lower(i)
        if metric == "dm":
            first = dm_bound[i]
        elif metric == "ncp":
            first = ncp_lb
        elif metric == "loss":
            first = loss_lb - 1e-12
        else:
            first = 0.0
        return (first, round(ncp_lb, 12), dm_bound[i], grid.height[i], grid.levels[i])

    seen = bytearray(grid.N)
    heap: list = []

    def push_successors(i: int, dm_lb: float) -> None:
        for s in grid.succ[i]:
            dm_bound[s] = max(dm_bound[s], dm_lb)
            if not seen[s] and not (cut and cut[s]):
                seen[s] = 1
                heapq.heappush(heap, (bound(s), s))

    start = grid.indices_of([info.levels for info in minimal])
    for i in start:
        seen[i] = 1
    for i, info in zip(start, minimal):
        fs = lat.frequency_set(info.levels)
        push_successors(i, dm_lower(fs.counts))
    while heap:
        lb, i = heapq.heappop(heap)
        if lb > best_key:
            break
        info, fs = lat.evaluate(grid.levels[i], source=lat.source_for(grid.levels[i]))
        stats["evaluated"] += 1
        if info.ok and (metric != "dm" or metrics.dm(info) <= best_key[0]):  # a larger DM cannot win
            lat.complete(info)
            key = metric_key(info, metric, lat.n)
            if key < best_key:
                best, best_key = info, key
                stats["improved"] += 1
        push_successors(i, max(dm_bound[i], dm_lower(fs.counts)))
    return best, stats
