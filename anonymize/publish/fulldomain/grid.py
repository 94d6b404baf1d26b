"""The full-domain generalization lattice as index arithmetic, and predictive tagging.

A node is a vector of levels ``(l_1, …, l_q)``, ``0 ≤ l_j ≤ h_j`` (Samarati, "Protecting
respondents' identities in microdata release", IEEE TKDE 13(6), 2001; Aggarwal, *Data
Mining: The Textbook*, Springer 2015, §20.3.1.1). :class:`LatticeGrid` numbers the nodes
row-major and lists each node's direct generalizations and specializations; :func:`tag_closure`
propagates a PASS / FAIL tag to every node above / below (Kohlmayer, Prasser, Eckert, Kemper,
Kuhn, "Flash: efficient, stable and optimal k-anonymity", IEEE SocialCom/PASSAT 2012 —
"predictive tagging").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from ...errors import AnonymizeError

__all__ = ["MAX_NODES", "PASS", "FAIL", "PRUNED", "LatticeGrid", "tag_closure", "lattice_nodes", "minimal_of"]

MAX_NODES = 5_000_000
"""Largest full lattice the searches enumerate (Python-level tags)."""

PASS, FAIL = 1, 2
"""Tag values in :func:`tag_closure` arrays."""
PRUNED = 3
"""Tag of a node that cannot be optimal (a bound search's skip; :func:`.flash.flash` ``prune``)."""


class LatticeGrid:
    """Index arithmetic over the lattice ``Π [0, h_j]`` (row-major, last attribute fastest):
    ``levels[i]`` (tuples), ``height[i]``, ``norm[i]`` (Σ l_j / h_j), ``succ[i]`` / ``pred[i]``
    (direct generalizations / specializations). Refuses more than :data:`MAX_NODES` nodes."""

    def __init__(self, heights):
        self.H = list(heights)
        self.q = len(self.H)
        dims = [h + 1 for h in self.H]
        self.N = int(np.prod(dims, dtype=np.float64))
        if self.N > MAX_NODES:
            raise AnonymizeError(
                f"lattice too large ({self.N:,} nodes); use fewer quasi-identifiers, "
                "shallower hierarchies, or --algorithm mondrian"
            )
        self.strides = [int(np.prod(dims[j + 1 :], dtype=np.int64)) for j in range(self.q)]
        lv = np.indices(dims).reshape(self.q, -1).T
        #: ``(N, q)`` level vectors as an array (row-major, the last attribute fastest)
        self.lv = lv
        #: ``levels[i]``: node ``i``'s level vector as a tuple of ints, made on first use (building all
        #: 6,480 of Adult's up front took a tenth of ARX's whole search without suppression)
        self.levels = _Levels(lv)
        heights = lv.sum(axis=1)
        self.height = heights.tolist()
        self._heights = heights
        self._norm: list[float] | None = None
        self._by_height_norm: list[int] | None = None
        self._order: np.ndarray | None = None
        self._rank: list[int] | None = None
        #: direct generalizations / specializations of every node, each list made on first use (a search
        #: visits a fraction of the nodes: building all of them took longer than ARX's whole search
        #: without suppression)
        self.succ = _Neighbours(self.levels, self.H, self.strides, up=True)
        self.pred = _Neighbours(self.levels, self.H, self.strides, up=False)
        self._dims = tuple(dims)
        top = max(self.H, default=0) + 1
        self._from = [slice(v, None) for v in range(top)]  # levels ≥ v
        self._upto = [slice(0, v + 1) for v in range(top)]  # levels ≤ v
        self._views: dict[int, tuple[bytearray, np.ndarray]] = {}

    @property
    def norm(self) -> list[float]:
        """``norm[i]``: node ``i``'s Σ l_j / h_j (h_j = 0 counts as 1), made on first use."""
        if self._norm is None:
            self._norm = self._norms().tolist()
        return self._norm

    @property
    def by_height_norm(self) -> list[int]:
        """Every node by (height, norm, index): Flash's order of visits, one lexsort of the arrays,
        made on first use (other searches never read it)."""
        if self._by_height_norm is None:
            self._order = np.lexsort((self._norms(), self._heights))
            self._by_height_norm = self._order.tolist()
        return self._by_height_norm

    @property
    def rank(self) -> list[int]:
        """Every node's position in :attr:`by_height_norm` (so ``rank[i] < rank[j]`` orders nodes by
        height, then norm, then index: Flash's key as one int), made on first use."""
        if self._rank is None:
            self.by_height_norm  # noqa: B018 — makes the order array
            assert self._order is not None
            r = np.empty(self.N, dtype=np.int64)
            r[self._order] = np.arange(self.N, dtype=np.int64)
            self._rank = r.tolist()
        return self._rank

    def _norms(self) -> np.ndarray:
        """Σ l_j / h_j of every node (h_j = 0 counts as 1)."""
        return (self.lv / np.maximum(np.array(self.H, dtype=np.float64), 1)).sum(axis=1)

    def index_of(self, levels: Sequence[int]) -> int:
        """Row-major index of the node with level vector ``levels`` (the inverse of :attr:`levels`)."""
        if len(levels) != self.q or any(not 0 <= int(v) <= h for v, h in zip(levels, self.H)):
            raise KeyError(tuple(levels))
        return sum(int(v) * s for v, s in zip(levels, self.strides))

    def indices_of(self, levels: Sequence[Sequence[int]]) -> list[int]:
        """:meth:`index_of` of many level vectors at once (one product with the strides)."""
        lv = np.asarray(levels, dtype=np.int64).reshape(len(levels), self.q)
        outside = ((lv < 0) | (lv > np.asarray(self.H, dtype=np.int64))).any(axis=1)
        if outside.any():
            raise KeyError(tuple(int(x) for x in lv[int(np.argmax(outside))]))
        return (lv @ np.asarray(self.strides, dtype=np.int64)).tolist()

    def box(self, i: int, up: bool) -> tuple[slice, ...]:
        """Node ``i`` and all its generalizations (``up``: every level ≥ node i's) or specializations
        (every level ≤ node i's) as a box of the ``(h_1 + 1, …, h_q + 1)`` node array: one slice per
        attribute (the row-major numbering makes the lattice that array)."""
        return tuple(map((self._from if up else self._upto).__getitem__, self.levels[i]))

    def tag(self, tags: bytearray, i: int, value: int, up: bool) -> None:
        """Predictive tagging, vectorized: ``value`` on node ``i`` and every node above it (``up``) or
        below it — what :func:`tag_closure` does through ``succ`` / ``pred``, for a monotone tagging
        (a node above a passing node passes, a node below a failing node fails). One assignment to a
        box of the tags viewed as the q-dimensional node array (:meth:`box`)."""
        got = self._views.get(id(tags))
        if got is None or got[0] is not tags:  # a view per array, kept (Flash tags its tags and its cut)
            if len(self._views) >= 4:
                self._views.clear()
            got = (tags, np.frombuffer(tags, dtype=np.uint8).reshape(self._dims))
            self._views[id(tags)] = got
        got[1][self.box(i, up)] = value


class _Levels(Sequence[tuple[int, ...]]):
    """``levels`` of a :class:`LatticeGrid`: ``self[i]`` is row ``i`` of the ``(N, q)`` level array as a
    tuple of Python ints, made on first use and kept."""

    __slots__ = ("_lv", "_memo")

    def __init__(self, lv: np.ndarray):
        self._lv = lv
        self._memo: list[tuple[int, ...] | None] = [None] * len(lv)

    def __len__(self) -> int:
        return len(self._memo)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        got = self._memo[i]
        if got is None:
            got = tuple(self._lv[i].tolist())
            self._memo[i] = got
        return got

    def __iter__(self):
        return iter(tuple(r) for r in self._lv.tolist())


class _Neighbours(Sequence[list[int]]):
    """``succ`` (``up``) or ``pred`` of a :class:`LatticeGrid`: ``self[i]`` lists the nodes one level
    above (below) node ``i`` in one attribute, in attribute order; computed once per node."""

    __slots__ = ("_levels", "_H", "_strides", "_up", "_memo")

    def __init__(self, levels: list[tuple[int, ...]], H: list[int], strides: list[int], up: bool):
        self._levels, self._H, self._strides, self._up = levels, H, strides, up
        self._memo: list[list[int] | None] = [None] * len(levels)

    def __len__(self) -> int:
        return len(self._levels)

    def __getitem__(self, i):
        got = self._memo[i]
        if got is None:
            lv = self._levels[i]
            if self._up:
                got = [i + s for s, v, h in zip(self._strides, lv, self._H) if v < h]
            else:
                got = [i - s for s, v in zip(self._strides, lv) if v > 0]
            self._memo[i] = got
        return got


def tag_closure(tags: bytearray, start: int, value: int, nbrs) -> None:
    """Predictive tagging: set ``tags`` to ``value`` on ``start`` and everything reachable through
    ``nbrs`` (``succ`` → all generalizations, ``pred`` → all specializations)."""
    stack = [start]
    while stack:
        x = stack.pop()
        if tags[x] == value:
            continue
        tags[x] = value
        stack.extend(y for y in nbrs[x] if tags[y] != value)


def lattice_nodes(heights: Sequence[int]) -> np.ndarray:
    """All level vectors of the lattice ``Π [0, h_j]`` as an ``(N, q)`` int64 array, row-major
    (the last attribute varies fastest)."""
    dims = [h + 1 for h in heights]
    if not dims:
        return np.zeros((1, 0), dtype=np.int64)
    grids = np.indices(dims).reshape(len(dims), -1).T
    return grids.astype(np.int64)


def minimal_of(levels: Iterable[Sequence[int]]) -> list[tuple]:
    """The minimal elements (no other element ≤ it componentwise) of a set of level vectors."""
    arr = np.array(sorted({tuple(map(int, x)) for x in levels}, key=lambda t: (sum(t), t)), dtype=np.int64)
    if arr.size == 0:
        return []
    keep = []
    for i, row in enumerate(arr):
        below = arr[:i][(arr[:i] <= row).all(axis=1)] if i else arr[:0]
        if len(below) == 0:
            keep.append(tuple(int(x) for x in row))
    return keep
