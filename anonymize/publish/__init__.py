"""Privacy-preserving data publishing (seed 000 §20.3; seeds 001–004).

* :mod:`.table` — :class:`Schema` and :class:`EncodedTable` (values encoded once as integer codes),
* :mod:`.hierarchy` — :class:`Hierarchy` (ARX CSV format, automatic interval / masking / flat),
* :mod:`.models` — privacy models as predicates over equivalence classes
  (k-anonymity, distinct / entropy / recursive (c,l)-diversity, t-closeness),
* :mod:`.metrics` — information loss, DM, CDM, class size, query error, re-identification risk,
  and :func:`measure_release` (what ``ppdm check`` prints),
* :mod:`.io` — reading and atomically writing tables,
* :mod:`.lattice` — the full-domain generalization lattice searched by
  :func:`.flash.flash`, :func:`.incognito.incognito`, :func:`.samarati.samarati` and
  :func:`.datafly.datafly` (each takes a :class:`Lattice`; import them from their
  modules — the package does not re-export them, so ``anonymize.publish.mondrian``
  stays the module),
* :mod:`.mondrian` — :func:`.mondrian.mondrian`, multidimensional partitioning,
* :mod:`.anonymizer` — :func:`anonymize_table`, one call from a table to a measured release.

Submodules import each other directly (never this package), so importing everything here
creates no cycle.
"""

from ..errors import AnonymizeError
from .anonymizer import ALGORITHMS, AnonymizationResult, anonymize_table, build_models
from .hierarchy import Hierarchy
from .io import read_hierarchies, read_table, write_table
from .lattice import Lattice, SearchResult
from .metrics import measure_release
from .models import (
    ClassStats,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    all_ok,
    class_stats,
    equivalence_classes,
    t_distances,
)
from .mondrian import MondrianResult
from .table import EncodedTable, Schema, auto_hierarchy

__all__ = [
    # one call: table -> measured release
    "anonymize_table",
    "build_models",
    "AnonymizationResult",
    "ALGORITHMS",
    # data model and I/O
    "AnonymizeError",
    "read_table",
    "write_table",
    "read_hierarchies",
    "measure_release",
    "Hierarchy",
    "EncodedTable",
    "Schema",
    "auto_hierarchy",
    # privacy models
    "ClassStats",
    "class_stats",
    "equivalence_classes",
    "PrivacyModel",
    "KAnonymity",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "RecursiveCLDiversity",
    "TCloseness",
    "all_ok",
    "t_distances",
    # search algorithms
    "Lattice",
    "SearchResult",
    "MondrianResult",
]
