"""Privacy-preserving data publishing (seed 000 §20.3; seeds 001–004): the core.

* :mod:`.table` — :class:`Schema` and :class:`EncodedTable` (values encoded once as integer codes),
* :mod:`.hierarchy` — :class:`Hierarchy` (ARX CSV format, automatic interval / masking / flat),
* :mod:`.models` — privacy models as predicates over equivalence classes
  (k-anonymity, distinct / entropy / recursive (c,l)-diversity, t-closeness),
* :mod:`.metrics` — information loss, DM, CDM, class size, query error, re-identification risk,
  and :func:`measure_release` (what ``ppdm check`` prints),
* :mod:`.io` — reading and atomically writing tables.
"""

from ..errors import AnonymizeError
from .hierarchy import Hierarchy
from .table import EncodedTable, Schema, auto_hierarchy
from .models import (
    ClassStats, DistinctLDiversity, EntropyLDiversity, KAnonymity, PrivacyModel, RecursiveCLDiversity,
    TCloseness, all_ok, class_stats, equivalence_classes, t_distances,
)
from .io import read_hierarchies, read_table, write_table
from .metrics import measure_release

__all__ = [
    "AnonymizeError", "read_table", "write_table", "read_hierarchies", "measure_release",
    "Hierarchy", "EncodedTable", "Schema", "auto_hierarchy",
    "ClassStats", "class_stats", "equivalence_classes", "PrivacyModel", "KAnonymity",
    "DistinctLDiversity", "EntropyLDiversity", "RecursiveCLDiversity", "TCloseness", "all_ok", "t_distances",
]
