"""NCP (any categorical flavour, attribute weights) and ARX's Loss of a table *as released* — what
``ppdm check --ncp-categorical F --weights W`` prints beside :func:`.release.measure_release`.

Released values are mapped back to hierarchy cells exactly as :func:`.release.measure_release` does
(the lowest level whose label matches; numeric leaves and ranges such as ``20-29`` parsed), so for
the default flavour and no weights the NCP is the same figure; ``*`` is the root of every
hierarchy, so a suppressed row costs 1 per cell in both metrics, as in the anonymization report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..hierarchy import Hierarchy
from .cells import cell_loss, hierarchy_domain, share_loss
from .loss import arx_round, attribute_weights, geometric_loss, weighted_mean
from .release import _label_cells

__all__ = ["release_utility"]


def release_utility(
    df: pd.DataFrame,
    qis: Sequence[str],
    hierarchies: Mapping[str, Hierarchy] | None,
    categorical: str = "height",
    weights: Mapping[str, float] | None = None,
    row_weights: np.ndarray | None = None,
) -> dict:
    """``{"ncp": {...}, "loss_geometric": {...}}`` of the released ``df`` for the QIs that have a
    hierarchy: per attribute the mean cell loss (:func:`.cells.cell_loss` in flavour ``categorical``;
    ARX's normalized domain share :func:`.cells.share_loss`, floored as ARX does); the aggregates —
    NCP as the (``weights``-weighted) mean, Loss as ARX's geometric mean (:func:`.loss.geometric_loss`)
    — only when every QI is measurable (else ``None``). A numeric value that is no label nor range
    (a class mean) makes its attribute unmeasurable (``None``). Empty dict when no QI has a hierarchy.
    ``row_weights`` — each row's multiplicity (a grouped release)."""
    qis = list(qis)
    qi_w = attribute_weights(qis, weights)  # one-line errors for a weight on no QI, before measuring
    hierarchies = dict(hierarchies or {})
    w_rows = None if row_weights is None else np.asarray(row_weights, dtype=np.float64)
    n = float(len(df)) if w_rows is None else float(w_rows.sum())
    ncp_per: dict[str, float | None] = {}
    loss_per: dict[str, float | None] = {}
    for qname in qis:
        h = hierarchies.get(qname)
        if h is None:
            continue
        inv, uniq = pd.factorize(df[qname], use_na_sentinel=False)
        cells = _label_cells(h, inv, uniq, qname)
        if cells is None:
            ncp_per[qname] = loss_per[qname] = None
            continue
        lo, hi = cells
        nc = cell_loss(h, lo, hi, hierarchy_domain(h) if h.numeric else None, categorical)
        sh = share_loss(h, lo, hi)
        if w_rows is None:
            ncp_per[qname] = float(np.mean(nc))
            loss_per[qname] = arx_round(max(float(np.mean(sh)), 0.0))
        else:
            ncp_per[qname] = float(nc @ w_rows) / n
            loss_per[qname] = arx_round(max(float(sh @ w_rows) / n, 0.0))
    if not ncp_per:
        return {}
    complete = len(ncp_per) == len(qis) and all(v is not None for v in ncp_per.values())
    if complete:
        per_ncp = [float(ncp_per[q]) for q in qis]  # type: ignore[arg-type]
        per_loss = [float(loss_per[q]) for q in qis]  # type: ignore[arg-type]
        ncp_total: float | None = weighted_mean(per_ncp, qi_w)
        loss_total: float | None = geometric_loss(per_loss, qi_w)
    else:
        ncp_total = loss_total = None
    return {
        "ncp": {
            "per_attribute": ncp_per,
            "ncp": ncp_total,
            "categorical": categorical,
            "weighted": qi_w is not None,
        },
        "loss_geometric": {"per_attribute": loss_per, "loss": loss_total, "aggregate": "geometric-mean"},
    }
