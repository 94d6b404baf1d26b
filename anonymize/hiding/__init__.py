"""Association-rule hiding: sanitize a transaction database so that sensitive itemsets and
rules are no longer mined at the given thresholds, while the other patterns survive.

Algorithms (one module each; the entry point is :func:`hide`):

* :mod:`.heuristic` — support and confidence reduction, Verykios, Elmagarmid,
  Bertino, Saygin, Dasseni, "Association rule hiding", IEEE TKDE 16(4), 2004
  (strategies 1.a, 1.b, 2.a, 2.b, 2.c, with a side-effect-minimizing victim choice);
* :mod:`.swa` — the Sliding Window Algorithm with disclosure threshold ψ, Oliveira &
  Zaïane, "Protecting sensitive knowledge by data sanitization", IEEE ICDM 2003;
* :mod:`.border` — border-based hiding, Sun & Yu, "A border-based approach for hiding
  sensitive frequent itemsets", ICDM 2005;
* :mod:`.exact` — exact hiding as an integer program over the affected transactions,
  Gkoulalas-Divanis & Verykios, "An integer programming approach for frequent itemset
  hiding", CIKM 2006, solved by HiGHS through ``scipy.optimize.milp``, with a size guard;
  a rule with a minimum confidence is hidden by support or by confidence, whichever the
  program finds cheaper.

Every algorithm mines the frequent itemsets of D first; mining stops with
:class:`HidingError` past ``max_itemsets`` (default :data:`MAX_ITEMSETS`, one million).

Every run is measured (:mod:`.metrics`): hiding failure, misses cost, artifactual
(ghost) patterns, dissimilarity (Oliveira & Zaïane 2002/2003), items removed, seconds.

Example::

    from anonymize.hiding import hide
    sanitized, report = hide("mushroom.dat", "34 86; 39 => 85", 0.3, algorithm="border")
    report.hiding_failure, report.misses_cost, report.dissimilarity

What it does not protect: hiding is relative to the thresholds given — a sanitized
itemset's support ends just below ``minc``, so mining at a lower threshold finds it
again; the edited transactions are the ones that held the pattern, so whoever knows
the algorithm and sees D' knows those transactions lack some item of it. See
``docs/hiding.md``.
"""

from .api import ALGORITHMS, MAX_ITEMSETS, HidingReport, hide, hide_db
from .border import run_border
from .errors import HidingError, InstanceTooLarge
from .exact import run_exact
from .fimi import fimi_text, read_fimi, write_fimi
from .heuristic import STRATEGIES, VICTIMS, run_heuristic
from .ip_model import MAX_CONSTRAINTS, MAX_VARIABLES
from .metrics import (
    HidingMetrics,
    PatternStatus,
    artifactual_patterns,
    dissimilarity,
    hiding_failure,
    measure_hiding,
    misses_cost,
)
from .patterns import SensitivePattern, as_patterns, is_mined, parse_sensitive
from .state import HidingState
from .swa import DEFAULT_WINDOW, run_swa

__all__ = [
    "hide",
    "hide_db",
    "HidingReport",
    "ALGORITHMS",
    "STRATEGIES",
    "VICTIMS",
    "HidingError",
    "InstanceTooLarge",
    "SensitivePattern",
    "parse_sensitive",
    "as_patterns",
    "is_mined",
    "HidingState",
    "run_heuristic",
    "run_swa",
    "run_border",
    "run_exact",
    "DEFAULT_WINDOW",
    "MAX_ITEMSETS",
    "MAX_VARIABLES",
    "MAX_CONSTRAINTS",
    "HidingMetrics",
    "PatternStatus",
    "measure_hiding",
    "hiding_failure",
    "misses_cost",
    "artifactual_patterns",
    "dissimilarity",
    "fimi_text",
    "read_fimi",
    "write_fimi",
]
