"""Flash: optimal full-domain search by binary search on paths with predictive tagging
(Kohlmayer, Prasser, Eckert, Kemper, Kuhn, "Flash: efficient, stable and optimal k-anonymity",
IEEE PASSAT 2012 — the search ARX uses).

Not in Aggarwal's survey of full-domain algorithms (*Data Mining: The Textbook*, Springer 2015,
§20.3.1); added because Incognito (:mod:`.incognito`) checks every minimal node of every
attribute subset — on Adult with 8 QIs about 6,500 checks, most of them lattice roots whose
frequency sets must come from the bottom — while the full lattice has only ~1,100 border nodes.

Algorithm (Kohlmayer et al. 2012, Alg. 1–3):

* visit the levels bottom-up, the nodes of a level in a fixed order; from every untagged node
  build a *path* upward greedily through untagged successors (FINDPATH);
* binary-search the path (CHECKPATH): a checked node that satisfies is tagged together with all
  its generalizations, one that fails together with all its specializations (monotonicity);
  failing nodes go on a min-heap whose successors are explored next, so the search follows the
  border between the two regions;
* when every node is tagged the satisfying region is known: its minimal elements (nodes without
  a satisfying direct specialization) are exactly the checked nodes that passed and have no
  passing child — all of them are returned, and one is chosen by a stated metric.

Every check rolls the node's frequency set up from the smallest cached specialization
(:meth:`.engine.Lattice.best_cached`).

Under DM with a suppression budget Flash prunes by a lower bound of the metric, as ARX does
(``prune``; :func:`.optimum.dm_lower_bound`): a checked node whose bound exceeds the least DM of a
satisfying node checked so far cannot be optimal, nor can any generalization of it, so they are
skipped by the search and by the optimum search after it (:func:`.optimum.best_node` ``cut``).
Under NCP or ARX's Loss the bound of every node is known before it is checked (the metric without
suppression, :class:`MetricBound`), so a better satisfying node skips every node above its value at
once.

Non-monotone predicates (entropy / recursive (c,l)-diversity or t-closeness *with* suppression,
see :mod:`..models`): Flash tags with the monotone part, then a bottom-up pass over the nodes that
satisfy it checks the full predicate on every node without a satisfying specialization
(:func:`minimal_scan`), which returns exactly the minimal nodes of the full predicate.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable

import numpy as np

from ...errors import AnonymizeError
from ..registry import FULL_DOMAIN, register
from .engine import Lattice
from .grid import FAIL as _FAIL
from .grid import PASS as _PASS
from .grid import PRUNED as _PRUNED
from .grid import LatticeGrid
from .optimum import best_node, dm_lower_bound
from .result import NodeInfo, SearchResult, metric_key

__all__ = ["DmBound", "MetricBound", "flash", "minimal_scan"]


class DmBound:
    """ARX's pruning of transformations with insufficient utility, under DM (Prasser, Kohlmayer et al.,
    "Putting statistical disclosure control into practice: the ARX data anonymization tool", 2015):
    the least DM of a satisfying node evaluated so far (:attr:`best`) and the nodes :attr:`cut` because
    an evaluated specialization's DM lower bound (:func:`.optimum.dm_lower_bound`, which holds for
    every generalization) exceeds it — a set closed under generalization whose nodes are all worse
    than the best (strictly: a tie on DM is kept for the NCP tie-break)."""

    def __init__(self, lat: Lattice, grid: LatticeGrid, tags: bytearray):
        self.grid, self.tags = grid, tags
        self.dm_of, self.exact = lat.node_metrics.dm, lat.node_metrics.int_sums
        self.least_class = max((mod.minimal_class_size for mod in lat.models), default=1)
        self.best: float = math.inf
        self.best_info: NodeInfo | None = None
        self.cut = bytearray(grid.N)
        self.n_pruned = 0
        self._open: list[tuple[float, int]] = []  # (bound, node) of evaluated nodes not cut yet

    def prune(self, i: int) -> None:
        """Cut node ``i`` and every generalization of it (and tag them :data:`.grid.PRUNED`)."""
        self.grid.tag(self.tags, i, _PRUNED, up=True)
        self.grid.tag(self.cut, i, 1, up=True)
        self.n_pruned += 1

    def observe(self, i: int, info: NodeInfo, counts: np.ndarray) -> None:
        """Take an evaluated node (its classes' ``counts``) into account: a better best cuts the
        nodes evaluated since the first satisfying one whose bound now exceeds it; the node is cut
        if its own bound does."""
        if self.best_info is None and not info.ok:
            return  # nothing to compare with yet (its bound is not kept: with t-closeness most are here)
        if info.ok and self.dm_of(info) < self.best:
            self.best, self.best_info = info.dm, info
            keep = []
            for lb, j in self._open:
                if lb > self.best:
                    self.prune(j)
                else:
                    keep.append((lb, j))
            self._open = keep
        lb = dm_lower_bound(counts, self.least_class, self.exact)
        if lb > self.best:
            self.prune(i)
        else:
            self._open.append((lb, i))


class MetricBound:
    """Pruning under NCP or ARX's Loss with a suppression budget: the same skip as :class:`DmBound`,
    with the bound :meth:`.node_metrics.NodeMetrics.bounds_all` gives every node before it is
    evaluated — the metric without suppression, a lower bound of the node's and of every
    generalization's (it only grows with generalization; the optimum search's bound,
    :mod:`.optimum`). Once a satisfying node of metric value v is checked, a node Flash reaches
    whose bound exceeds v is not checked: it and its generalizations are cut (:meth:`skips`), as
    ARX skips a transformation of insufficient utility when it visits it. (Cutting every node above
    v as soon as v is known, one comparison over the lattice, checked more nodes on Adult: 353 → 380
    at k = 5, 508 → 584 at k = 10.) Only for unweighted metrics (a weighted bound is node by node)."""

    #: a bound within this of the best value is kept (the bound and the value are summed in
    #: different orders; a tie is kept for the key's tie-breaks)
    tolerance = 1e-9

    def __init__(self, lat: Lattice, grid: LatticeGrid, tags: bytearray, metric: str):
        ncp, loss = lat.node_metrics.bounds_all(grid.lv)
        self.lat, self.grid, self.tags, self.metric, self.n = lat, grid, tags, metric, lat.n
        self.bound = ncp if metric == "ncp" else loss
        self._bound = self.bound.tolist()  # read one node at a time
        self.best_key: tuple | None = None
        self.best_info: NodeInfo | None = None
        self._limit = math.inf  # a node whose bound exceeds this is worse than the best
        self.cut = bytearray(grid.N)
        self.n_pruned = 0

    def observe(self, i: int, info: NodeInfo, counts: np.ndarray) -> None:
        """Take an evaluated node into account: a satisfying node better than the best so far lowers
        the limit above which nodes are cut."""
        if not info.ok:
            return
        key = metric_key(self.lat.complete(info), self.metric, self.n)
        if self.best_key is not None and key >= self.best_key:
            return
        self.best_key, self.best_info = key, info
        self._limit = key[0] + self.tolerance

    def skips(self, i: int) -> bool:
        """Whether node ``i`` need not be checked: its bound exceeds the best value (it and its
        generalizations are then cut and tagged :data:`.grid.PRUNED`)."""
        if self._bound[i] <= self._limit:
            return False
        self.grid.tag(self.tags, i, _PRUNED, up=True)
        self.grid.tag(self.cut, i, 1, up=True)
        self.n_pruned += 1
        return True

    def finish(self) -> None:
        """Cut every node whose bound exceeds the best value (the set is closed under generalization),
        tagging those not tagged yet: the candidates and the optimum search leave them out."""
        over = self.bound > self._limit
        cut = np.frombuffer(self.cut, dtype=np.uint8)
        tags = np.frombuffer(self.tags, dtype=np.uint8)
        newly = over & (cut == 0)
        cut[newly] = 1
        tags[newly & (tags == 0)] = _PRUNED
        self.n_pruned += int(np.count_nonzero(newly))


def minimal_scan(lat: Lattice, grid: LatticeGrid, candidate, known: dict | None = None) -> list[NodeInfo]:
    """Bottom-up over the nodes with ``candidate[idx]`` true: check the full predicate on every node
    without a satisfying (or dominated) direct specialization; return the satisfying ones — the
    minimal satisfying nodes among the candidates. ``known`` maps node index → :class:`NodeInfo`
    of nodes evaluated before (not evaluated again)."""
    known = known or {}
    dominated = bytearray(grid.N)
    found: list[NodeInfo] = []
    order = sorted((i for i in range(grid.N) if candidate[i]), key=lambda i: (grid.height[i], i))
    for i in order:
        if any(dominated[p] for p in grid.pred[i]):
            dominated[i] = 1
            continue
        info = known.get(i)
        if info is None:
            info, _ = lat.evaluate(grid.levels[i], source=lat.source_for(grid.levels[i]), exact_failing=False)
        if info.ok:
            dominated[i] = 1
            found.append(info)
    return found


@register(
    "flash",
    kind=FULL_DOMAIN,
    summary="Flash: every minimal satisfying node by binary search on paths (Kohlmayer et al. 2012; ARX)",
)
def flash(
    lat: Lattice, metric: str = "ncp", progress: Callable[[str], None] | None = None, *, prune: bool = True
) -> SearchResult:
    """Run Flash on ``lat``; return every minimal satisfying node and the one ``metric`` chooses.

    ``prune`` (under DM, NCP or Loss with a suppression budget): skip the
    generalizations of every checked node whose DM lower bound exceeds the least DM of a satisfying
    node checked so far (:class:`DmBound`, ARX's pruning of transformations with insufficient
    utility); under NCP or Loss every node whose bound exceeds the best value so far
    (:class:`MetricBound`; not for weighted metrics). The chosen node is the same; ``nodes`` are
    then only the minimal nodes the bound did not exclude (``nodes_kind`` says so).

    Raises :class:`AnonymizeError` when no node satisfies the models within the budget.
    """
    t0 = time.perf_counter()
    ev0, rows0 = lat.n_evaluated, lat.rows_scanned
    g = lat.grid()
    tags = bytearray(g.N)
    infos: dict[int, NodeInfo] = {}
    exact = lat.exact_monotone
    # Not without suppression (measured on Adult): DM then only grows with generalization, the
    # optimum is a minimal node, and the bound would skip the failing nodes whose checks tag most of
    # the failing region (k = 5: 197 checks instead of 140).
    prune = prune and lat.max_sup > 0
    bound: DmBound | MetricBound | None = None
    if prune and metric == "dm":
        bound = DmBound(lat, g, tags)
    elif prune and metric in ("ncp", "loss") and lat.size_only and lat.node_metrics.weights is None:
        # Only for models of class sizes (measured on Adult, k = 5 with 5 %: 1,601 → 353 checks, 3–4×
        # faster). With a sensitive attribute (distinct l = 2 with 5 %) its skips sent the search lower,
        # to larger frequency sets: 688 → 650 checks but 1.6 → 3.4 M tuples rolled up, 15–25 % slower.
        bound = MetricBound(lat, g, tags, metric)

    # Flash's order of nodes (height, then norm, then index) as one int per node: a C-level key
    order = g.by_height_norm
    key = g.rank.__getitem__

    skips = bound.skips if isinstance(bound, MetricBound) else None

    def check(i) -> bool:
        if skips is not None and skips(i):
            return True  # cut: treated as the node above a passing one (all above is cut too)
        lv = g.levels[i]
        # only the verdict matters for a node that fails (exact_failing=False); the returned nodes pass
        info, fs = lat.evaluate(lv, source=lat.source_for(lv), exact_failing=False)
        infos[i] = info
        if progress and len(infos) % 200 == 0:
            progress(f"flash: {len(infos)} nodes checked, {g.N - tags.count(0)} of {g.N} classified")
        ok = info.ok if exact else info.ok_monotone
        g.tag(tags, i, _PASS if ok else _FAIL, up=ok)
        if bound is not None:
            bound.observe(i, info, fs.counts)
        return ok

    succ = g.succ

    def find_path(i):
        path = [i]
        while True:
            nxt = [s for s in succ[i] if not tags[s]]
            if not nxt:
                return path
            i = min(nxt, key=key)
            path.append(i)

    heap: list = []

    def check_path(path):
        lo, hi = 0, len(path) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            node = path[mid]
            ok = check(node) if not tags[node] else tags[node] != _FAIL  # pruned: all above is too
            if ok:
                hi = mid - 1
            else:
                heapq.heappush(heap, key(node))
                lo = mid + 1

    # every node by key(): height, then norm, then index (one lexsort, not a Python key per node)
    for i in order:
        if tags[i]:
            continue
        check_path(find_path(i))
        while heap:
            n = order[heapq.heappop(heap)]
            for s in sorted(succ[n], key=key):
                if not tags[s]:
                    check_path(find_path(s))
    if progress:
        progress(f"flash: {lat.n_evaluated - ev0} of {g.N} nodes checked")
    if isinstance(bound, MetricBound):
        bound.finish()
    # a cut node may have been tagged PASS later (a box from a node below it): not a candidate
    cut = bytes(g.N) if bound is None else bound.cut
    if exact:
        # a minimal node was checked (its specializations fail): scan the checked nodes, not the lattice
        minimal = [
            info
            for i, info in infos.items()
            if tags[i] == _PASS and not cut[i] and not any(tags[p] == _PASS for p in g.pred[i])
        ]
    else:
        minimal = minimal_scan(lat, g, [t == _PASS and not c for t, c in zip(tags, cut)], infos)
    n_pruned = 0 if bound is None else bound.n_pruned
    if not minimal:
        raise AnonymizeError("no full-domain generalization satisfies the privacy models within the suppression budget")
    minimal.sort(key=lambda x: (x.height, x.levels))
    if bound is None:
        chosen, opt = best_node(lat, g, minimal, metric)
    else:
        chosen, opt = best_node(lat, g, minimal, metric, incumbent=bound.best_info, cut=bound.cut)
    stats = {
        "nodes_in_lattice": g.N,
        "checked": lat.n_evaluated - ev0,
        "frequency_set_rows_scanned": lat.rows_scanned - rows0,
        "satisfying_nodes": tags.count(_PASS) if exact and not n_pruned else None,
        "pruned_by_bound": n_pruned if bound is not None else None,
        "minimal_nodes": len(minimal),
        "exact_pruning": exact,
        "optimum_search": opt,
        "seconds": time.perf_counter() - t0,
    }
    kind = "every minimal satisfying node"
    if n_pruned:
        name = {"dm": "DM", "ncp": "NCP", "loss": "Loss"}[metric]
        kind = f"every minimal satisfying node not skipped by the {name} lower bound (the others are worse)"
    return SearchResult("flash", minimal, chosen, metric, stats, nodes_kind=kind)
