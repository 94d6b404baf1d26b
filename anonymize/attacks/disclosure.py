"""Identity and attribute disclosure from a linkage: re-identification, homogeneity, background knowledge.

Each attack reads a :class:`.linkage.Linkage` (the release records matching each external
person) and reports an :class:`AttackResult`: how many of the external people (``targets``) it
harms (``victims``), and — when the external table also holds the true sensitive value, as in a
test — how many of its conclusions are right (``correct``).

* **Linkage / re-identification** (L. Sweeney, IJUFKS 2002; C. C. Aggarwal, *Data Mining: The
  Textbook*, Springer 2015, §20.3): a person matched to exactly one released record is
  re-identified. ``expected_rate`` is the mean of 1/n_records — the chance of picking the
  person's record at random among the matches (the prosecutor risk of a person).
* **Homogeneity** (A. Machanavajjhala, J. Gehrke, D. Kifer, M. Venkitasubramaniam, "ℓ-Diversity:
  Privacy Beyond k-Anonymity", ICDE 2006, §3): every matching record has the same sensitive
  value, so the person's value is disclosed without knowing which record is theirs. Defeats
  k-anonymity; a distinct ℓ-diverse release (ℓ ≥ 2) has no such person.
* **Background knowledge** (same paper, §3): the adversary can rule out ``rule_out`` wrong
  sensitive values for the person (e.g. "Japanese rarely have heart disease"); success when at
  most ``rule_out + 1`` values remain among the matches, so one is left. A distinct ℓ-diverse
  release resists ``rule_out ≤ ℓ − 2``. Without the true values the adversary is assumed to rule
  out wrong values only (the worst case); with them, ``correct`` checks that the true value is
  among the matches.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .linkage import Linkage

__all__ = ["AttackResult", "linkage_attack", "homogeneity_attack", "background_knowledge_attack"]


@dataclass
class AttackResult:
    """One attack's outcome over ``targets`` external people; ``victims`` were harmed."""

    name: str
    targets: int
    victims: int
    description: str
    correct: int | None = None
    extra: dict = field(default_factory=dict)
    victim_mask: np.ndarray | None = field(default=None, repr=False)

    @property
    def success_rate(self) -> float:
        return self.victims / self.targets if self.targets else 0.0

    def to_json(self) -> dict:
        out = {
            "name": self.name,
            "success_rate": self.success_rate,
            "victims": self.victims,
            "targets": self.targets,
            "description": self.description,
        }
        if self.correct is not None:
            out["correct"] = self.correct
        out.update(self.extra)
        return out


def _truth_codes(link: Linkage, sensitive: str, truth) -> np.ndarray:
    """Index of each person's true value among the release's sensitive values (−1 if absent)."""
    from .cells import value_text

    vals = {v: i for i, v in enumerate(link.sensitive_values[sensitive])}
    return np.array([vals.get(value_text(t), -1) for t in truth], dtype=np.int64)


def linkage_attack(link: Linkage, sensitive: str | None = None, truth=None) -> AttackResult:
    """Re-identification: people matched to exactly one released record (module docstring).
    With ``truth`` (true values of ``sensitive``), ``correct`` counts re-identified people whose
    matched record carries their true value."""
    n = link.n_people
    hit = link.n_records == 1
    matched = link.n_records >= 1
    expected = np.where(matched, 1.0 / np.maximum(link.n_records, 1), 0.0)
    correct = None
    if sensitive is not None and truth is not None:
        t = _truth_codes(link, sensitive, truth)
        got = np.argmax(link.sensitive_counts[sensitive], axis=1)
        correct = int(np.sum(hit & (got == t)))
    return AttackResult(
        "linkage",
        n,
        int(hit.sum()),
        "external people matched to exactly one released record (re-identified)",
        correct,
        {"matched": int(matched.sum()), "expected_rate": float(expected.mean()) if n else 0.0},
        hit,
    )


def homogeneity_attack(link: Linkage, sensitive: str, truth=None) -> AttackResult:
    """People whose matching records all share one value of ``sensitive`` (module docstring)."""
    c = link.sensitive_counts[sensitive]
    distinct = (c > 0).sum(axis=1)
    hit = (link.n_records >= 1) & (distinct == 1)
    correct = None
    if truth is not None:
        t = _truth_codes(link, sensitive, truth)
        correct = int(np.sum(hit & (np.argmax(c, axis=1) == t)))
    return AttackResult(
        "homogeneity",
        link.n_people,
        int(hit.sum()),
        f"all records matching the person share one '{sensitive}' value",
        correct,
        {"sensitive": sensitive},
        hit,
    )


def background_knowledge_attack(link: Linkage, sensitive: str, rule_out: int = 1, truth=None) -> AttackResult:
    """People for whom at most ``rule_out + 1`` values of ``sensitive`` remain among the matches
    (the adversary rules out ``rule_out`` wrong ones; module docstring)."""
    if rule_out < 0:
        raise ValueError("rule_out must be non-negative")
    c = link.sensitive_counts[sensitive]
    distinct = (c > 0).sum(axis=1)
    hit = (link.n_records >= 1) & (distinct <= rule_out + 1)
    correct = None
    if truth is not None:
        t = _truth_codes(link, sensitive, truth)
        present = (t >= 0) & (c[np.arange(len(t)), np.maximum(t, 0)] > 0)
        correct = int(np.sum(hit & present))
    return AttackResult(
        "background_knowledge",
        link.n_people,
        int(hit.sum()),
        f"at most {rule_out + 1} '{sensitive}' values match; the adversary rules out {rule_out}",
        correct,
        {"sensitive": sensitive, "rule_out": rule_out},
        hit,
    )
