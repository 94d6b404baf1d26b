"""Full-domain generalization: the lattice of level vectors, its frequency-set engine, and the
searches over it.

* :mod:`.grid` — the lattice as index arithmetic and predictive tagging;
* :mod:`.engine` — :class:`~.engine.Lattice`, frequency sets rolled up node to node (Incognito);
* :mod:`.result` — :class:`~.result.NodeInfo`, :class:`~.result.SearchResult`, choosing a node;
* the searches, each registered in :mod:`..registry` as a ``full-domain`` algorithm:
  :mod:`.flash`, :mod:`.incognito`, :mod:`.samarati`, :mod:`.datafly`; and :mod:`.exhaustive`,
  the every-node reference they are tested against.
"""

from . import datafly, flash, incognito, samarati  # noqa: F401  (register the searches)
from .engine import DROPPED, FrequencySet, Lattice
from .exhaustive import exhaustive
from .grid import FAIL, MAX_NODES, PASS, LatticeGrid, lattice_nodes, minimal_of, tag_closure
from .result import METRICS, NodeInfo, SearchResult, choose, metric_key

__all__ = [
    "DROPPED",
    "FrequencySet",
    "Lattice",
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
