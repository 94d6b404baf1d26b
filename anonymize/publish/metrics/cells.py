"""Release cells and their information loss — the one NCP cell-loss definition.

A release is described in code space, whatever algorithm produced it: for every row and QI a
**cell** ``[lo, hi]`` of leaf codes (the hierarchy node or range the value was generalized to —
hierarchies keep every node a contiguous leaf-code run, see :mod:`..hierarchy`), plus a
``suppressed`` row mask. Full-domain results get cells from :func:`boxes_from_levels`;
partition and clustering results from :func:`class_boxes`. Suppressed rows count as fully
generalized (``*`` in every QI), as ARX publishes them.

:func:`cell_loss` is the per-cell normalized certainty penalty every NCP in this package uses —
per cell (:func:`.loss.ncp`), per hierarchy node (:func:`node_loss_tables`, the lattice search's
lookup tables) and on a table as released (:func:`.release.measure_release`):

* numeric QI — ``(min(v_hi, D_hi) − max(v_lo, D_lo)) / (D_hi − D_lo)`` clipped to [0, 1], the
  cell's width clipped to the attribute's domain ``[D_lo, D_hi]`` over that domain's width — the
  domain being the one the attribute's hierarchy declares (:func:`data_domain`)
  (Jiang, Zeng, Ma 2017, §2.2.1; Xu, Wang, Pei, Wang, Shi, Fu, "Utility-based anonymization using
  local recoding", KDD 2006);
* categorical QI — ``'height'``: level of the cell's lowest common ancestor over the hierarchy
  height (Jiang, Zeng, Ma 2017, §2.2.2); ``'leaves'``: card/|A| and 0 for a single value (Xu et
  al. 2006); ``'span'``: (card − 1)/(|A| − 1) (Iyengar, "Transforming data to satisfy privacy
  constraints", KDD 2002).

:func:`share_loss` is the per-cell loss of ARX's "Loss" metric (``MetricMDNMLoss``, after Iyengar
2002): every QI, numeric ones included, costs ``(card − 1)/(|A| − 1)`` with ``card`` the leaves
under the cell and ``|A|`` the hierarchy's leaves — what ARX's domain share of a hierarchy given as
a table (``DomainShareMaterialized``: leaves under the generalized value / leaves of the hierarchy)
becomes after ARX's per-attribute normalization ``(Σ share − n/|A|)/(n − n/|A|)``; see
:func:`.loss.loss_geometric`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import AnonymizeError
from ..hierarchy import Hierarchy
from ..table import EncodedTable

__all__ = [
    "CATEGORICAL_LOSSES",
    "boxes_from_levels",
    "class_boxes",
    "suppressed_mask",
    "cell_loss",
    "data_domain",
    "hierarchy_domain",
    "table_domain",
    "cell_losses",
    "node_loss_tables",
    "hierarchy_loss_tables",
    "cell_losses_of_node",
    "share_loss",
    "share_losses",
    "node_share_tables",
]

CATEGORICAL_LOSSES = ("height", "leaves", "span")


def boxes_from_levels(table: EncodedTable, levels) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``(lo, hi)`` (each ``(n, q)`` int64 leaf codes) of full-domain generalization ``levels``."""
    lo = np.empty(table.qi_codes.shape, dtype=np.int64)
    hi = np.empty_like(lo)
    for j, (h, lv) in enumerate(zip(table.hierarchies, levels)):
        first, last = h.node_span(int(lv))
        node = h.maps[int(lv)][table.qi_codes[:, j]]
        lo[:, j] = first[node]
        hi[:, j] = last[node]
    return lo, hi


def class_boxes(
    table: EncodedTable, class_id: np.ndarray, n_classes: int, categorical: str = "node"
) -> tuple[np.ndarray, np.ndarray]:
    """Cells of a partition (Mondrian, clustering): per class and QI the min..max leaf code of its
    rows; for categorical QIs with ``categorical='node'`` widened to the lowest hierarchy node that
    covers them (their lowest common ancestor), as hierarchy-aware recoding publishes.
    Returns per-row ``(lo, hi)`` ``(n, q)``."""
    cid = np.asarray(class_id, dtype=np.int64)
    n, q = table.qi_codes.shape
    order = np.argsort(cid, kind="stable")
    sc = cid[order]
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    present = sc[starts]
    clo = np.zeros((n_classes, q), dtype=np.int64)
    chi = np.zeros((n_classes, q), dtype=np.int64)
    for j, h in enumerate(table.hierarchies):
        col = table.qi_codes[order, j].astype(np.int64)
        mn = np.minimum.reduceat(col, starts)
        mx = np.maximum.reduceat(col, starts)
        if categorical == "node" and not h.numeric:
            lev = h.level_of_span(mn, mx)
            first_l = np.empty_like(mn)
            last_l = np.empty_like(mx)
            for lv in np.unique(lev):
                sel = lev == lv
                f, l_ = h.node_span(int(lv))
                node = h.maps[int(lv)][mn[sel]]
                first_l[sel], last_l[sel] = f[node], l_[node]
            mn, mx = first_l, last_l
        clo[present, j] = mn
        chi[present, j] = mx
    return clo[cid], chi[cid]


def suppressed_mask(n, suppressed) -> np.ndarray:
    """``suppressed`` (None, a bool mask or row indices) as an ``(n,)`` bool mask."""
    if suppressed is None:
        return np.zeros(n, dtype=bool)
    s = np.asarray(suppressed)
    if s.dtype == bool:
        return s
    m = np.zeros(n, dtype=bool)
    m[s] = True
    return m


def data_domain(table: EncodedTable, j: int) -> tuple[float, float]:
    """``(D_lo, D_hi)`` of numeric QI ``j``: the domain its hierarchy declares (smallest and largest
    leaf). The anonymizer measuring its release and ``ppdm check`` measuring a written file with
    the same hierarchy use this same domain, so both report the same NCP; for an automatic
    hierarchy the leaves are exactly the values in the table."""
    return hierarchy_domain(table.hierarchies[j])


def table_domain(table: EncodedTable, j: int) -> tuple[float, float]:
    """``(min T, max T)`` of numeric QI ``j``: the smallest and largest value present in the table —
    the range the clustering losses divide by (Jiang, Zeng, Ma 2017, §2.2.1: ``max T − min T``; Byun
    et al. 2007: ``|N_i|``), whatever domain the hierarchy declares (Adult's age: 17–90 in a 1–100
    hierarchy)."""
    codes = table.qi_codes[:, j]
    if table.weights is not None:
        codes = codes[np.asarray(table.weights) > 0]
    vals = np.asarray(table.hierarchies[j].leaves, dtype=np.float64)
    if len(codes) == 0:
        return hierarchy_domain(table.hierarchies[j])
    return float(vals[codes.min()]), float(vals[codes.max()])


def hierarchy_domain(h: Hierarchy) -> tuple[float, float]:
    """``(smallest leaf, largest leaf)`` of a numeric hierarchy."""
    vals = np.asarray(h.leaves, dtype=np.float64)
    return float(vals.min()), float(vals.max())


def cell_loss(
    h: Hierarchy,
    lo: np.ndarray,
    hi: np.ndarray,
    domain: tuple[float, float] | None = None,
    categorical: str = "height",
) -> np.ndarray:
    """Loss in [0, 1] of every cell ``[lo, hi]`` (leaf codes of ``h``), see the module docstring.

    ``domain`` — ``(D_lo, D_hi)`` of a numeric attribute (required for numeric hierarchies), the
    hierarchy's declared domain
    (:func:`data_domain`)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if h.numeric:
        if domain is None:
            raise ValueError("cell_loss: a numeric hierarchy needs the attribute's domain")
        d_lo, d_hi = domain
        rng = float(d_hi - d_lo)
        if rng <= 0:
            return np.zeros(len(lo))
        vals = np.asarray(h.leaves, dtype=np.float64)
        width = np.minimum(vals[hi], d_hi) - np.maximum(vals[lo], d_lo)
        return np.clip(width / rng, 0.0, 1.0)
    if categorical == "height":
        if not h.height:
            return np.zeros(len(lo))
        return h.level_of_span(lo, hi) / h.height
    card = (hi - lo + 1).astype(np.float64)
    if categorical == "leaves":
        return np.where(card > 1, card / h.n_leaves, 0.0)
    if categorical == "span":
        return (card - 1) / (h.n_leaves - 1) if h.n_leaves > 1 else np.zeros(len(lo))
    raise AnonymizeError(
        f"unknown categorical loss '{categorical}' (use {', '.join(repr(c) for c in CATEGORICAL_LOSSES)})"
    )


def cell_losses(table: EncodedTable, lo, hi, categorical: str = "height", domain: str = "hierarchy") -> np.ndarray:
    """``(n, q)`` per-cell loss of a release's cells (before suppression). A numeric QI's width is divided
    by its hierarchy's declared domain (``domain="hierarchy"``, :func:`data_domain`: NCP, as ARX) or by
    the table's own range (``"table"``, :func:`table_domain`: the clustering papers' losses)."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    out = np.empty(lo.shape)
    pick = table_domain if domain == "table" else data_domain
    for j, h in enumerate(table.hierarchies):
        dom = pick(table, j) if h.numeric else None
        out[:, j] = cell_loss(h, lo[:, j], hi[:, j], dom, categorical)
    return out


def node_loss_tables(table: EncodedTable, categorical: str = "height") -> list[list[np.ndarray]]:
    """Per QI and level, the :func:`cell_loss` of every hierarchy node (indexed by the hierarchy's
    node codes at that level) — the lookup tables the full-domain search sums NCP from."""
    return hierarchy_loss_tables(table.hierarchies, categorical)


def hierarchy_loss_tables(hierarchies: Sequence[Hierarchy], categorical: str = "height") -> list[list[np.ndarray]]:
    """:func:`node_loss_tables` from the hierarchies alone (the numeric domain is the hierarchy's,
    :func:`data_domain`): public, so parties that hold different rows compute the same tables."""
    out = []
    for h in hierarchies:
        dom = hierarchy_domain(h) if h.numeric else None
        spans = [h.node_span(lv) for lv in range(h.height + 1)]
        out.append([cell_loss(h, first, last, dom, categorical) for first, last in spans])
    return out


def cell_losses_of_node(tables: Sequence[Sequence[np.ndarray]], levels: Sequence[int], mult=None) -> np.ndarray:
    """Per cell of the node ``levels`` (every tuple of hierarchy nodes, last QI fastest, as
    :func:`anonymize.publish.fulldomain.cells.cell_index`), Σ_j m_j·loss_j of its values, from the
    :func:`hierarchy_loss_tables` ``tables``; ``mult`` per QI (default 1 each)."""
    w = np.zeros(1)
    for j, lv in enumerate(levels):
        t = tables[j][int(lv)]
        w = np.add.outer(w, t if mult is None else mult[j] * t).ravel()
    return w


def share_loss(h: Hierarchy, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """ARX's normalized domain share of every cell ``[lo, hi]`` (leaf codes of ``h``):
    ``(card − 1)/(|A| − 1)``, ``card`` the leaves in the cell, ``|A|`` the hierarchy's leaves, for
    numeric and categorical QIs alike (ARX ``DomainShareMaterialized`` for a hierarchy given as a
    table); 0 for a one-leaf hierarchy (ARX: the normalization is 0/0, clipped to 0)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if h.n_leaves <= 1:
        return np.zeros(len(lo))
    return (hi - lo).astype(np.float64) / (h.n_leaves - 1)


def share_losses(table: EncodedTable, lo, hi) -> np.ndarray:
    """``(n, q)`` :func:`share_loss` of a release's cells (before suppression)."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    out = np.empty(lo.shape)
    for j, h in enumerate(table.hierarchies):
        out[:, j] = share_loss(h, lo[:, j], hi[:, j])
    return out


def node_share_tables(table: EncodedTable) -> list[list[np.ndarray]]:
    """Per QI and level, the :func:`share_loss` of every hierarchy node (as :func:`node_loss_tables`)."""
    out = []
    for h in table.hierarchies:
        out.append([share_loss(h, *h.node_span(lv)) for lv in range(h.height + 1)])
    return out
