"""Information-loss metrics of a release (utility).

* :func:`ncp` — normalized information loss in [0, 1], the mean of :func:`.cells.cell_loss`
  over all QI cells (suppressed cells cost 1);
* :func:`gaacp_iloss` — the total information loss iloss(T, A^q) = Σ_r Σ_i iloss(C_r, A_i) of
  Jiang, Zeng, Ma, "Greedy clustering-anonymity method for privacy preservation of table
  data-publishing", Journal of Software 28(2), 2017, §2.2 (unnormalized NCP);
* :func:`loss_geometric` — ARX's "Loss" metric (``MetricMDNMLoss`` with its default
  ``AggregateFunction.GEOMETRIC_MEAN``): Iyengar's loss per attribute (Iyengar, "Transforming data
  to satisfy privacy constraints", KDD 2002), aggregated by ARX's shifted geometric mean;
* :func:`il_total` — IL(e) = |e|·(Σ (max−min)/|N_i| + Σ distinct_j/|C_j|), total_IL = Σ_e IL(e):
  the cluster loss of Byun, Kamra, Bertino, Li, "Efficient k-anonymization using clustering
  techniques", DASFAA 2007, with a distinct-value ratio for categorical QIs (see :func:`il_total`).

Full entries: docs/references.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ...errors import AnonymizeError
from ..table import EncodedTable
from .cells import cell_loss, cell_losses, share_losses, suppressed_mask, table_domain
from .grouping import distinct_per_class

__all__ = [
    "ncp",
    "loss_geometric",
    "gaacp_iloss",
    "il_total",
    "attribute_weights",
    "weighted_mean",
    "arx_weights",
    "arx_round",
    "geometric_loss",
    "DEFAULT_GS_FACTOR",
    "gs_factors",
    "loss_attribute",
]

DEFAULT_GS_FACTOR = 0.5
"""ARX's default generalization/suppression factor (``MetricConfiguration``): both weigh the same."""


def attribute_weights(qis: Sequence[str], weights: Mapping[str, float] | None) -> np.ndarray | None:
    """The weight of every QI (in ``qis`` order) from ``{column: weight}``, unnamed QIs weighing 1;
    None when ``weights`` is None. A weight must be a finite number ≥ 0 and name a QI (one-line
    :class:`AnonymizeError` otherwise). ARX's ``ARXConfiguration.setAttributeWeight``, whose unset
    attributes weigh 0.5 instead: ppdm's default is 1, so ``age=2`` here is ARX's ``age=1``."""
    if weights is None:
        return None
    qis = list(qis)
    w = np.ones(len(qis))
    for name, value in weights.items():
        if name not in qis:
            raise AnonymizeError(
                f"weight for '{name}', which is no quasi-identifier (quasi-identifiers: {', '.join(qis)})"
            )
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise AnonymizeError(f"weight of '{name}' must be a number, got {value!r}") from None
        if not math.isfinite(x) or x < 0:
            raise AnonymizeError(f"weight of '{name}' must be a finite number >= 0, got {value!r}")
        w[qis.index(name)] = x
    return w


def weighted_mean(per: Sequence[float] | np.ndarray, weights: np.ndarray | None) -> float:
    """Σ w_j·per_j / Σ w_j — the weights normalized to sum 1 over the QIs (plain mean for None, or
    when every weight is 0, as ARX treats all-zero weights as equal ones). ARX reports its
    arithmetic-mean aggregate as Σ (w_j / max w)·per_j / q instead: the same order of nodes, and
    the same value for equal weights."""
    per = np.asarray(per, dtype=np.float64)
    if len(per) == 0:
        return 0.0
    if weights is None or float(np.sum(weights)) <= 0.0:
        return float(per.mean())
    w = np.asarray(weights, dtype=np.float64)
    return float(np.dot(w, per) / w.sum())


def arx_weights(weights: np.ndarray | None, q: int) -> np.ndarray:
    """ARX's normalized attribute weights (``AbstractMetricMultiDimensional``): each weight divided
    by the largest; all ones for None or when every weight is 0."""
    if weights is None:
        return np.ones(q)
    w = np.asarray(weights, dtype=np.float64)
    top = float(w.max()) if len(w) else 0.0
    return np.ones(q) if top <= 0.0 else w / top


def arx_round(x: float) -> float:
    """ARX's ``Metric.round``: floor to 10 decimal digits."""
    return math.floor(x * 1e10) / 1e10


def geometric_loss(per: Sequence[float] | np.ndarray, weights: np.ndarray | None = None) -> float:
    """ARX's geometric-mean aggregate (``ILMultiDimensionalGeometricMean``) of per-attribute losses
    ``per`` (each in [0, 1]): ``Π_j (w_j·L_j + 1)^(1/q) − 1`` with ``w`` = :func:`arx_weights`. The
    shift by 1 keeps a zero loss from zeroing the product (an ungeneralized attribute contributes
    the factor 1); the result is in [0, 1], 0 only when every weighted loss is 0."""
    per = np.asarray(per, dtype=np.float64)
    q = len(per)
    if q == 0:
        return 0.0
    w = arx_weights(weights, q)
    return float(np.prod(np.power(w * per + 1.0, 1.0 / q)) - 1.0)


def gs_factors(gs_factor: float) -> tuple[float, float]:
    """ARX's generalization and suppression factors ``(g, s)`` of a gs-factor in [0, 1]
    (``MetricMDNMLoss``): ``s = 2·gs`` below 0.5, else 1; ``g = 1`` up to 0.5, else ``1 − 2·(gs − 0.5)``.
    0 favours suppression (a suppressed value costs only its generalization), 1 generalization (a
    kept value costs nothing), 0.5 (the default) weighs both the same. One-line
    :class:`AnonymizeError` outside [0, 1]."""
    try:
        gs = float(gs_factor)
    except (TypeError, ValueError):
        raise AnonymizeError(f"the gs-factor must be a number in [0, 1], got {gs_factor!r}") from None
    if not 0.0 <= gs <= 1.0:
        raise AnonymizeError(f"the gs-factor must be in [0, 1], got {gs_factor!r}")
    return (1.0 if gs <= 0.5 else 1.0 - 2.0 * (gs - 0.5)), (2.0 * gs if gs < 0.5 else 1.0)


def loss_attribute(kept, sup, n_sup: float, n: float, n_leaves: int, gs_factor: float):
    """One attribute's Loss (ARX's ``MetricMDNMLoss``, before its rounding) under a gs-factor
    (``kept`` and ``sup`` may also be arrays, one value per node: the result is then one).

    ``kept`` / ``sup`` — the sums of :func:`.cells.share_loss` ℓ over the kept and the suppressed rows
    (a suppressed row's ℓ is that of the cell it had at the node: ARX keeps an outlier's generalized
    values), ``n_sup`` the suppressed rows, ``n`` all rows, ``n_leaves`` the hierarchy's leaves |A|.
    ARX sums, with share ``s = card/|A| = a + (1 − a)·ℓ`` (``a = 1/|A|``) and ``(g, s_f)`` =
    :func:`gs_factors`, ``g·s`` over kept rows and ``s + s_f·(1 − s)`` over suppressed ones, and
    normalizes by ``(raw − g·n·a) / (n − g·n·a)``, clipped at 0 — which is
    ``[g(1−a)·kept + (1−s_f)(1−a)·sup + n_sup·(s_f + (1−s_f)·a − g·a)] / [n·(1 − g·a)]``. At the
    default gs-factor this is ``(kept + n_sup)/n``, the mean of ℓ with suppressed cells costing 1,
    and it is computed as exactly that. A one-leaf hierarchy (ℓ ≡ 0, ARX's 0/0) takes ``a = 0``:
    ``s_f·n_sup/n``."""
    if n <= 0:
        return 0.0
    g, s_f = gs_factors(gs_factor)
    if g == 1.0 and s_f == 1.0:
        return (kept + n_sup) / n
    a = 0.0 if n_leaves <= 1 else 1.0 / n_leaves
    num = g * (1.0 - a) * kept + (1.0 - s_f) * (1.0 - a) * sup + n_sup * (s_f + (1.0 - s_f) * a - g * a)
    return num / (n * (1.0 - g * a))


def ncp(
    table: EncodedTable, lo, hi, suppressed=None, categorical: str = "height", weights: np.ndarray | None = None
) -> dict:
    """Normalized information loss of a release, in [0, 1] (0 = original data, 1 = all ``*``).

    Per cell (:func:`.cells.cell_loss`): numeric QI (max − min of the cell, clipped to the domain) /
    the width of the domain the attribute's hierarchy declares (:func:`.cells.data_domain`, as ARX;
    Jiang, Zeng, Ma 2017, §2.2.1 divide by the table's range max T − min T); categorical QI h(v, v*)/h(v, root) — the height of the
    lowest hierarchy node covering the cell (the least upper bound of Jiang, Zeng, Ma 2017, §2.2.2)
    over the hierarchy height (ibid., §2.2.2; h(v, root) is the leaf's depth, which equals the
    height in the balanced hierarchies ARX uses); or with ``categorical='leaves'`` card(v*)/|A| and
    0 for an ungeneralized value (Xu, Wang, Pei, Wang, Shi, Fu, "Utility-based anonymization using
    local recoding", KDD 2006, "NCP"); or ``categorical='span'`` (card(v*) − 1)/(|A| − 1)
    (Iyengar, "Transforming data to satisfy privacy constraints", KDD 2002); the lattice searches
    use the same flavours (``Lattice(ncp_categorical=...)``, ``ppdm anonymize --ncp-categorical``). Suppressed rows cost 1 per cell. This is the
    iloss(T, A^q) of Jiang, Zeng, Ma 2017 (§2.2) divided by n·d.

    ``weights`` — a weight per QI (:func:`attribute_weights`): NCP is then the weighted mean of the
    per-attribute NCPs (:func:`weighted_mean`, ARX's ``setAttributeWeight``).
    Returns ``{"ncp": (weighted) mean over the QIs' means, "per_attribute": {qi: mean}}``.
    """
    lo, hi = np.asarray(lo), np.asarray(hi)
    cells = cell_losses(table, lo, hi, categorical)
    cells[suppressed_mask(table.n_tuples, suppressed)] = 1.0
    w = table.weights
    per = cells.mean(axis=0) if w is None else (w @ cells) / table.n
    return {
        "ncp": weighted_mean(per, weights),
        "per_attribute": {name: float(v) for name, v in zip(table.schema.qis, per)},
    }


def loss_geometric(
    table: EncodedTable,
    lo,
    hi,
    suppressed=None,
    weights: np.ndarray | None = None,
    gs_factor: float = DEFAULT_GS_FACTOR,
) -> dict:
    """ARX's "Loss" metric (``MetricMDNMLoss``, ``Metric.createLossMetric(gsFactor)``, default
    ``AggregateFunction.GEOMETRIC_MEAN``), in [0, 1].

    Per QI ``j``, Iyengar's loss (KDD 2002) as ARX computes it for a hierarchy given as a table:
    ``L_j = (Σ_rows share − n/|A_j|) / (n − n/|A_j|)`` with ``share`` = leaves under the released
    value / ``|A_j|`` (a suppressed row's share is 1), i.e. the mean over the rows of
    ``(card − 1)/(|A_j| − 1)`` (:func:`.cells.share_loss`; numeric QIs count leaves too, as ARX
    does for a hierarchy file — only ARX's interval-based hierarchy builder would use widths), then
    floored to 10 decimals (ARX's ``round``). With a ``gs_factor`` other than 0.5, kept and
    suppressed rows are weighed as ARX does (:func:`loss_attribute`; a suppressed row's cell is the
    one it had before suppression). Aggregated by :func:`geometric_loss`:
    ``Π_j (w_j·L_j + 1)^(1/q) − 1``, ``w`` the weights divided by the largest (all 1 by default).

    Returns ``{"loss": aggregate, "per_attribute": {qi: L_j}, "aggregate": "geometric-mean",
    "gs_factor": gs_factor}``.
    """
    gs_factors(gs_factor)  # a one-line error for a bad factor
    cells = share_losses(table, np.asarray(lo), np.asarray(hi))
    sup_mask = suppressed_mask(table.n_tuples, suppressed)
    w = table.weights
    if float(gs_factor) == DEFAULT_GS_FACTOR:
        cells[sup_mask] = 1.0
        per = cells.mean(axis=0) if w is None else (w @ cells) / table.n
    else:
        rw = np.ones(table.n_tuples) if w is None else np.asarray(w, dtype=np.float64)
        kept = (rw * ~sup_mask) @ cells
        sup = (rw * sup_mask) @ cells
        n_sup = float(rw[sup_mask].sum())
        per = np.array(
            [
                loss_attribute(float(kept[j]), float(sup[j]), n_sup, float(table.n), h.n_leaves, gs_factor)
                for j, h in enumerate(table.hierarchies)
            ]
        )
    per = np.array([arx_round(max(float(x), 0.0)) for x in per])
    return {
        "loss": geometric_loss(per, weights),
        "per_attribute": {name: float(v) for name, v in zip(table.schema.qis, per)},
        "aggregate": "geometric-mean",
        "gs_factor": float(gs_factor),
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
