"""Statistical disclosure control for microdata: the classic methods of the R package sdcMicro.

(M. Templ, A. Kowarik, B. Meindl, "Statistical Disclosure Control for Micro-Data Using the R
Package sdcMicro", *Journal of Statistical Software* 67(4), 2015; PRAM after J. M. Gouweleeuw,
P. Kooiman, L. C. R. J. Willenborg, P.-P. de Wolf, *Journal of Official Statistics* 14(4), 1998.)

* :mod:`.local_suppression` — :func:`local_suppression` (``localSuppression``/``kAnon``): suppress
  QI cells until every record's key matches at least k records, a missing value matching any
  value (:func:`wildcard_frequencies`, ``freqCalc``);
* :mod:`.coding` — :func:`top_bottom_coding` (``topBotCoding``) and :func:`column_quantile`;
* :mod:`.pram` — invariant PRAM (:func:`pram`, :func:`invariant_transition_matrix`) and the unbiased
  estimate of the original frequencies (:func:`estimate_original_counts`).

``ppdm sdc`` (``parties/cli/sdc.py``) chains them; docs/sdc.md describes semantics and differences
from sdcMicro.
"""

from .coding import CodingResult, column_quantile, top_bottom_coding
from .local_suppression import (
    SuppressionResult,
    local_suppression,
    missing_as_value_class_sizes,
    wildcard_frequencies,
)
from .pram import PramColumn, PramResult, estimate_original_counts, invariant_transition_matrix, pram

__all__ = [
    "CodingResult",
    "column_quantile",
    "top_bottom_coding",
    "SuppressionResult",
    "local_suppression",
    "wildcard_frequencies",
    "missing_as_value_class_sizes",
    "PramColumn",
    "PramResult",
    "pram",
    "invariant_transition_matrix",
    "estimate_original_counts",
]
