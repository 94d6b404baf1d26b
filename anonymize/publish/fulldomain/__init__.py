"""Full-domain generalization: the lattice of level vectors, its frequency-set engine, and the
searches over it.

* :mod:`.grid` — the lattice as index arithmetic and predictive tagging;
* :mod:`.engine` — :class:`~.engine.Lattice`, which composes
  :mod:`.frequency` (:class:`~.frequency.FrequencySets`: frequency sets rolled up node to node,
  Incognito, and their cache), :mod:`.privacy` (:class:`~.privacy.PrivacyCheck`: the models and
  the suppression budget checked on a frequency set) and :mod:`.node_metrics`
  (:class:`~.node_metrics.NodeMetrics`: DM and NCP of the nodes a search returns); the privacy
  check counts a population table's rows per class with :mod:`.population` for δ-presence and k-map;
* :mod:`.result` — :class:`~.result.NodeInfo`, :class:`~.result.SearchResult`, choosing a node;
* the searches, each registered in :mod:`..registry` as a ``full-domain`` algorithm:
  :mod:`.flash`, :mod:`.incognito`, :mod:`.samarati`, :mod:`.datafly`; and :mod:`.exhaustive`,
  the every-node reference they are tested against.
"""

from . import datafly, flash, incognito, samarati  # noqa: F401  (register the searches)
from .engine import Lattice
from .exhaustive import exhaustive
from .frequency import DROPPED, FrequencySet, FrequencySets
from .grid import FAIL, MAX_NODES, PASS, LatticeGrid, lattice_nodes, minimal_of, tag_closure
from .node_metrics import NodeMetrics
from .privacy import PrivacyCheck
from .result import METRICS, NodeInfo, SearchResult, choose, metric_key

__all__ = [
    "DROPPED",
    "FrequencySet",
    "FrequencySets",
    "Lattice",
    "NodeMetrics",
    "PrivacyCheck",
    "exhaustive",
    "FAIL",
    "PASS",
    "MAX_NODES",
    "LatticeGrid",
    "lattice_nodes",
    "minimal_of",
    "tag_closure",
    "METRICS",
    "NodeInfo",
    "SearchResult",
    "choose",
    "metric_key",
]
