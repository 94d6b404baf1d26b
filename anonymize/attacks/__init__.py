"""Attacks on releases and aggregate answers: why the defenses matter.

* :mod:`.cells` — how an adversary reads generalized cells (``*``, ranges, masks, hierarchy labels);
* :mod:`.linkage` — :func:`link`: join a release to an external table on quasi-identifiers;
* :mod:`.disclosure` — re-identification, homogeneity and background-knowledge attacks;
* :mod:`.known_values` — re-identification from B known values (Aggarwal §20.8, ex. 14–16);
* :mod:`.differencing` — a tracker against an unaudited aggregate-query interface;
* :mod:`.report` — :func:`run_attacks`, all of them at once (``ppdm attack``).
"""

from .cells import cover_matrix, parse_range
from .differencing import AggregateServer, differencing_attack, differencing_exposed
from .disclosure import AttackResult, background_knowledge_attack, homogeneity_attack, linkage_attack
from .known_values import known_values_attack, match_probability, match_probability_bound, reidentify
from .linkage import Linkage, link
from .report import run_attacks

__all__ = [
    "cover_matrix",
    "parse_range",
    "Linkage",
    "link",
    "AttackResult",
    "linkage_attack",
    "homogeneity_attack",
    "background_knowledge_attack",
    "known_values_attack",
    "match_probability",
    "match_probability_bound",
    "reidentify",
    "AggregateServer",
    "differencing_attack",
    "differencing_exposed",
    "run_attacks",
]
