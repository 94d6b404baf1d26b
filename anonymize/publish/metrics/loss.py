"""Information-loss metrics of a release (utility).

* :func:`ncp` — normalized information loss in [0, 1], the mean of :func:`.cells.cell_loss`
  over all QI cells (suppressed cells cost 1);
* :func:`gaacp_iloss` — the total information loss iloss(T, A^q) = Σ_r Σ_i iloss(C_r, A_i) of
  Jiang, Zeng, Ma, "Greedy clustering-anonymity method for privacy preservation of table
  data-publishing", Journal of Software 28(2), 2017, §2.2 (unnormalized NCP);
* :func:`il_total` — IL(e) = |e|·(Σ (max−min)/|N_i| + Σ distinct_j/|C_j|), total_IL = Σ_e IL(e):
  the cluster loss of Byun, Kamra, Bertino, Li, "Efficient k-anonymization using clustering
  techniques", DASFAA 2007, with a distinct-value ratio for categorical QIs (see :func:`il_total`).

Full entries: docs/references.md.
"""

from __future__ import annotations

import numpy as np

from ..table import EncodedTable
from .cells import cell_loss, cell_losses, suppressed_mask, table_domain
from .grouping import distinct_per_class

__all__ = ["ncp", "gaacp_iloss", "il_total"]


def ncp(table: EncodedTable, lo, hi, suppressed=None, categorical: str = "height") -> dict:
    """Normalized information loss of a release, in [0, 1] (0 = original data, 1 = all ``*``).

    Per cell: numeric QI (max − min of the cell, clipped to the column's range) / (max T − min T),
    the range of the attribute in the table (Jiang, Zeng, Ma 2017, §2.2.1; the numeric term of
    Byun et al.'s IL(e), DASFAA 2007); categorical QI h(v, v*)/h(v, root) — the height of the
    lowest hierarchy node covering the cell (the least upper bound of Jiang, Zeng, Ma 2017, §2.2.2)
    over the hierarchy height (ibid., §2.2.2; h(v, root) is the leaf's depth, which equals the
    height in the balanced hierarchies ARX uses); or with ``categorical='leaves'`` card(v*)/|A| and
    0 for an ungeneralized value (Xu, Wang, Pei, Wang, Shi, Fu, "Utility-based anonymization using
    local recoding", KDD 2006, "NCP"); or ``categorical='span'`` (card(v*) − 1)/(|A| − 1)
    (Iyengar, "Transforming data to satisfy privacy constraints", KDD 2002 — what the lattice
    search's ``cell_loss_tables`` uses). Suppressed rows cost 1 per cell. This is the
    iloss(T, A^q) of Jiang, Zeng, Ma 2017 (§2.2) divided by n·d.
    Returns ``{"ncp": mean over all cells, "per_attribute": {qi: mean}}``.
    """
    lo, hi = np.asarray(lo), np.asarray(hi)
    cells = cell_losses(table, lo, hi, categorical)
    cells[suppressed_mask(table.n_tuples, suppressed)] = 1.0
    w = table.weights
    per = cells.mean(axis=0) if w is None else (w @ cells) / table.n
    return {
        "ncp": float(per.mean()) if len(per) else 0.0,
        "per_attribute": {name: float(v) for name, v in zip(table.schema.qis, per)},
    }


def gaacp_iloss(table: EncodedTable, lo, hi, suppressed=None) -> float:
    """Total information loss iloss(T, A^q) = iloss(T, A^nq) + iloss(T, A^cq) (Jiang, Zeng, Ma 2017,
    §2.2): Σ over classes/rows of (max C_r − min C_r)/(max T − min T) for numeric QIs and
    h(t_j, t_j*)/h(t_j, root) for categorical QIs (unnormalized). ``max T − min T`` is the range of the
    values present in the table (:func:`.cells.table_domain`), as the paper defines it — not the domain
    a hierarchy declares, which :func:`ncp` uses."""
    cells = cell_losses(table, np.asarray(lo), np.asarray(hi), "height", domain="table")
    cells[suppressed_mask(table.n_tuples, suppressed)] = 1.0
    return float(cells.sum()) if table.weights is None else float((table.weights @ cells).sum())


def il_total(table: EncodedTable, class_id, n_classes: int, lo, hi, suppressed=None) -> dict:
    """Cluster information loss IL(e) = |e|·(Σ_i (max_{N_i} − min_{N_i})/|N_i| + Σ_j distinct_{C_j}(e)/|C_j|),
    total_IL = Σ_e IL(e).

    After Byun, Kamra, Bertino, Li, "Efficient k-anonymization using clustering techniques",
    DASFAA 2007 (whose categorical term is a hierarchy-height ratio), in the distinct-value form
    of the LCA-FC thesis ([LeakageThesis] §1.2.3, docs/references.md).

    |N_i| is the numeric attribute's range in the table; distinct_{C_j}(e) the number of distinct
    original values of categorical C_j in class e; |C_j| its number of distinct values in the table.
    Suppressed rows count as one class with every attribute fully generalized (loss 1 per QI).

    The categorical term has a floor: a class of identical rows still scores 1/|C_j| per row, so the
    table published unchanged scores far from 0 (on the Adult subset, 85% of Mondrian's IL at k = 10).
    The *normalized* form beside it, ``(distinct_{C_j}(e) − 1)/(|C_j| − 1)``, is 0 for the unchanged
    table and 1 for a fully generalized cell, as the numeric term is.
    Returns ``{"total_il", "average_il", "total_il_normalized", "average_il_normalized"}`` (averages =
    totals / (n·d)).
    """
    cid = np.asarray(class_id, dtype=np.int64)
    sup = suppressed_mask(table.n_tuples, suppressed)
    any_sup = bool(sup.any())
    keep = ~sup
    lo, hi = np.asarray(lo), np.asarray(hi)
    q = table.q
    total = 0.0
    normalized = 0.0
    ck = cid[keep] if any_sup else cid
    rw = table.row_weights()
    sizes = np.bincount(ck, weights=rw[keep], minlength=n_classes)
    for j, h in enumerate(table.hierarchies):
        codes = table.qi_codes[:, j]
        if h.numeric:
            width = cell_loss(h, lo[keep, j], hi[keep, j], table_domain(table, j))
            # Σ_e |e|·(max−min)/|N| = Σ_rows cell width
            w = float(width.sum()) if table.weights is None else float(width @ rw[keep])
            total += w
            normalized += w
        else:
            L = h.n_leaves
            n_dom = int(np.count_nonzero(np.bincount(codes, minlength=L)))
            distinct = distinct_per_class(ck, n_classes, codes[keep] if any_sup else codes, L)
            total += float((sizes * distinct).sum()) / n_dom
            if n_dom > 1:
                normalized += float((sizes * (distinct - 1)).sum()) / (n_dom - 1)
    total += float(rw[sup].sum()) * q
    normalized += float(rw[sup].sum()) * q
    cells = table.n * q
    return {
        "total_il": total,
        "average_il": total / cells if cells else 0.0,
        "total_il_normalized": normalized,
        "average_il_normalized": normalized / cells if cells else 0.0,
    }
