"""Privacy-preserving data publishing (Aggarwal, *Data Mining: The Textbook*, 2015, §20.3).

The core:

* :mod:`.table` — :class:`Schema` and :class:`EncodedTable` (values encoded once as integer codes);
* :mod:`.hierarchy` — :class:`Hierarchy` (ARX CSV format, automatic interval / masking / flat);
* :mod:`.io` — reading tables and hierarchies, writing atomically;
* :mod:`.classes` — equivalence classes, :class:`ClassStats`, and :class:`ClassChecker`, which
  every partition / clustering / bucketization algorithm uses to check its classes;
* :mod:`.models` — self-describing privacy models (k-anonymity, distinct / entropy / recursive
  (c,l)-diversity, t-closeness); :mod:`.models_sensitive` — β-likeness, δ-disclosure privacy and
  (α,k)-anonymity; :mod:`.models_population` — δ-presence, k-map and the risk-based models
  (average risk, sample and population uniqueness); :mod:`.distances` — the entropies and t-distances they share;
* :mod:`.recode` — writing a release (hierarchy labels, ranges, means, ``*``);
* :mod:`.registry` — every algorithm registers its name, kind and the models it honours;
* :mod:`.anonymizer` — :func:`anonymize_table`, one call from a table to a measured release.

The algorithms, by kind:

* :mod:`.fulldomain` — the generalization lattice, its frequency-set engine, and the searches
  Flash, Incognito, Samarati, Datafly (and the exhaustive reference);
* :mod:`.partition` — Mondrian;
* :mod:`.clustering` — GAA-CP, KACA, MDAV, LCA-FC / LCA-RC;
* :mod:`.bucketize` — Anatomy and MSAL (QI table + sensitive tables);
* :mod:`.condensation` — synthetic records by condensation (static and stream);
* :mod:`.api` — one function per algorithm (``gaa_cp(df, schema, models=...)`` …), each
  :func:`anonymize_table` with the algorithm fixed.

And :mod:`.metrics` — cell loss (NCP), class-size metrics, query error, risks, and the measurement
of a table as released (:func:`measure_release`, what ``ppdm check`` prints).

Algorithm modules are not re-exported (``anonymize.publish.fulldomain.flash`` stays the module);
run any of them by name through :func:`anonymize_table` or :func:`.registry.get`.
"""

from ..errors import AnonymizeError
from . import api, bucketize, clustering, condensation, fulldomain, metrics, partition, registry
from .anonymizer import ALGORITHMS, AnonymizationResult, anonymize_table, build_models
from .classes import ClassChecker, ClassStats, class_stats, equivalence_classes
from .distances import t_distances
from .fulldomain import Lattice, SearchResult
from .hierarchy import Hierarchy
from .io import read_hierarchies, read_table, write_table
from .metrics import measure_release
from .models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    all_ok,
)
from .models_population import AverageRisk, DeltaPresence, KMap, PopulationUniqueness, SampleUniqueness
from .models_sensitive import AlphaKAnonymity, BetaLikeness, DeltaDisclosure
from .partition import MondrianResult
from .registry import PartitionResult
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
    # classes and privacy models
    "ClassStats",
    "ClassChecker",
    "class_stats",
    "equivalence_classes",
    "PrivacyModel",
    "KAnonymity",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "RecursiveCLDiversity",
    "TCloseness",
    "BetaLikeness",
    "DeltaDisclosure",
    "AlphaKAnonymity",
    "AverageRisk",
    "SampleUniqueness",
    "PopulationUniqueness",
    "DeltaPresence",
    "KMap",
    "all_ok",
    "t_distances",
    # algorithms
    "registry",
    "fulldomain",
    "partition",
    "clustering",
    "bucketize",
    "condensation",
    "api",
    "metrics",
    "Lattice",
    "SearchResult",
    "MondrianResult",
    "PartitionResult",
]
