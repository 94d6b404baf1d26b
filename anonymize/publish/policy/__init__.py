"""Security levels and parameter selection for publishing (Xu & Guo, "Privacy protection model and
parameter optimization method for data dissemination", Computer Engineering 47(5):124–130, 2021).

* :mod:`.measure` — the disclosure probability P (the owner's requirement P ≤ P_max), the quality
  requirement (CDM — this project's reconstruction — or NCP ≤ Q), :class:`Candidate` (one measured
  release);
* :mod:`.evaluate` — :class:`ReleaseEvaluator`: one registered algorithm for many parameter values,
  reusing lattices between them; :mod:`.ksweep` — every k's optimal full-domain release in one pass;
* :mod:`.selection` — the k range [K_min, K_max], Algorithm 1 (l), Algorithm 2 (t);
* :mod:`.tune` — :func:`tune` (what ``ppdm tune`` prints) and :func:`parameter_curve`;
* :mod:`.policyfile` — the TOML policy: users, purposes, levels, requirements, validation;
* :mod:`.engine` — :func:`decide` and :func:`publish_with_policy` (what ``ppdm publish`` does).

``docs/policy.md`` describes the model, every gap in the paper's text and how it was filled.
"""

from .engine import PolicyConflict, PolicyRelease, candidate_methods, check_possible, decide, publish_with_policy
from .evaluate import PUBLISHABLE_KINDS, ReleaseEvaluator, family_models, methods_in_registry
from .ksweep import k_sweep
from .measure import (
    FAMILIES,
    QUALITY_METRICS,
    Candidate,
    PrivacyRequirement,
    QualityRequirement,
    class_disclosure,
    disclosure_floor,
    frame_disclosure,
    k_min_for,
)
from .policyfile import Level, Policy, User, load_policy, parse_policy
from .selection import select_k, select_l, select_t
from .tune import TuneResult, parameter_curve, tune

__all__ = [
    "FAMILIES",
    "QUALITY_METRICS",
    "PUBLISHABLE_KINDS",
    "Candidate",
    "PrivacyRequirement",
    "QualityRequirement",
    "class_disclosure",
    "disclosure_floor",
    "frame_disclosure",
    "k_min_for",
    "ReleaseEvaluator",
    "family_models",
    "methods_in_registry",
    "k_sweep",
    "select_k",
    "select_l",
    "select_t",
    "tune",
    "TuneResult",
    "parameter_curve",
    "Level",
    "Policy",
    "User",
    "load_policy",
    "parse_policy",
    "PolicyConflict",
    "PolicyRelease",
    "candidate_methods",
    "check_possible",
    "decide",
    "publish_with_policy",
]
