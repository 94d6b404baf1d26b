"""Clustering k-anonymity and l-diversity: each algorithm groups the rows into classes and the
shared partition code releases every class as its minimal generalization
(:func:`..recode.release_partition`).

* :mod:`.gaacp` — GAA-CP, greedy clustering (Jiang, Zeng, Ma, Journal of Software 2017);
* :mod:`.kaca` — KACA, merging small equivalence classes in attribute hierarchies (Li, Wong, Fu,
  Pei, DaWaK 2006) — baseline;
* :mod:`.mdav` — MDAV microaggregation as in sdcMicro (Domingo-Ferrer & Mateo-Sanz, IEEE TKDE
  2002; Domingo-Ferrer & Torra, DMKD 2005) — baseline;
* :mod:`.lca` — LCA-FC / LCA-RC, l-diverse clustering with furthest-first or random seeds;
* :mod:`.common` — distinct rows, the compact set of rows left, lookup tables.

Every algorithm registers itself (:mod:`..registry`, kind ``clustering``).
"""

from . import gaacp, kaca, lca, mdav
from .gaacp import gaa_cp
from .kaca import kaca as kaca_clustering
from .lca import lca_fc, lca_rc
from .mdav import mdav as mdav_clustering

__all__ = ["gaacp", "kaca", "lca", "mdav", "gaa_cp", "kaca_clustering", "mdav_clustering", "lca_fc", "lca_rc"]
