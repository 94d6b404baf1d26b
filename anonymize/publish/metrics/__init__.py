"""Utility and risk metrics of a release, and the measurement of a table as released.

* :mod:`.cells` — release cells ``[lo, hi]`` (:func:`boxes_from_levels`, :func:`class_boxes`)
  and the one per-cell NCP loss (:func:`cell_loss`) every loss metric uses;
* :mod:`.loss` — :func:`ncp`, :func:`gaacp_iloss`, :func:`il_total`;
* :mod:`.class_size` — :func:`discernibility` (DM), :func:`cdm`, :func:`average_class_size`,
  :func:`summarize_classes`;
* :mod:`.query_accuracy` — :func:`query_error` (average relative error of COUNT queries);
* :mod:`.risk` — :func:`reidentification_risk` (prosecutor / journalist / marketer);
* :mod:`.release` — :func:`measure_release` (what ``ppdm check`` prints),
  :func:`achieved_privacy` (what a report's "achieved" says), :func:`sensitive_privacy`.
"""

from .cells import (
    CATEGORICAL_LOSSES,
    boxes_from_levels,
    cell_loss,
    cell_losses,
    class_boxes,
    data_domain,
    hierarchy_domain,
    node_loss_tables,
    suppressed_mask,
    table_domain,
)
from .class_size import CDM_DEFINITION, average_class_size, cdm, discernibility, summarize_classes
from .loss import gaacp_iloss, il_total, ncp
from .query_accuracy import bucket_query_error, query_error
from .release import achieved_privacy, measure_release, sensitive_privacy
from .risk import reidentification_risk

__all__ = [
    "CATEGORICAL_LOSSES",
    "boxes_from_levels",
    "class_boxes",
    "cell_loss",
    "cell_losses",
    "data_domain",
    "table_domain",
    "hierarchy_domain",
    "node_loss_tables",
    "suppressed_mask",
    "ncp",
    "gaacp_iloss",
    "il_total",
    "discernibility",
    "cdm",
    "CDM_DEFINITION",
    "average_class_size",
    "summarize_classes",
    "query_error",
    "bucket_query_error",
    "reidentification_risk",
    "measure_release",
    "achieved_privacy",
    "sensitive_privacy",
]
