"""Side-effect metrics of a sanitization: every definition in one place, with its source.

Notation: D the original database, D' the sanitized one, both mined at the same
minimum support count ``minc`` (and confidence C for rules). P(D) is the set of
patterns mined from D — frequent itemsets, or rules when C is given. The
*sensitive* (restrictive) patterns R_P are the given sensitive itemsets and rules.

Which itemsets *must* vanish (the set H, for "hidden by necessity"): every frequent
itemset of D that contains

* a sensitive itemset S (its support is at most count(S), so hiding S hides it), or
* the generating itemset X ∪ Y of a sensitive rule that was mined from D and whose
  X ∪ Y is infrequent in D' — the rule was hidden by lowering support, which takes
  X ∪ Y and its supersets with it. A rule hidden by confidence (X ∪ Y still frequent
  in D'), a rule still mined (hiding failure) and a rule not mined from D at all
  (already hidden: nothing had to be done) put nothing in H.

The *non-sensitive* itemsets are ~R_P(D) = F(D) ∖ H; **lost** itemsets are the plain set
difference (F(D) ∖ F(D')) ∖ H, and **ghost** itemsets F(D') ∖ F(D). Non-sensitive
*rules* are the rules of D that are not sensitive rules and whose generating itemset
is not in H — the same H, so an itemset and the rules it generates are counted alike.

* **Hiding failure** HF = |R_P(D')| / |R_P(D)| — the fraction of sensitive patterns
  of D still mined from D' (Oliveira & Zaïane, "Privacy preserving frequent itemset
  mining", IEEE ICDM Workshop on Privacy, Security and Data Mining, 2002, §5;
  0 when no sensitive pattern was mined from D).
* **Misses cost** MC = |~R_P(D) ∖ P(D')| / |~R_P(D)| — the fraction of non-sensitive
  patterns lost (ibid.; their formula subtracts counts, which equals this when no
  pattern is artifactual). Reported for itemsets and, with C, for rules ("lost
  rules" of Verykios et al., "Association rule hiding", IEEE TKDE 16(4), 2004, §5).
* **Artifactual (ghost) patterns** AP = |P(D') ∖ P(D)| / |P(D')| — patterns mined
  from D' that D does not have (Oliveira & Zaïane 2002, §5; "ghost rules" in
  Verykios et al. 2004). Deletion-only sanitization creates none for itemsets (supports
  only drop) but can for rules (a lower count(X) raises confidence).
* **Dissimilarity** dif(D, D') = Σ_i |f_D(i) − f_D'(i)| / Σ_i f_D(i), with f_X(i) the
  number of transactions of X holding item i, over all items (Oliveira & Zaïane,
  "Algorithms for balancing privacy and knowledge discovery in association rule
  mining", IDEAS 2003, §6). For deletion-only sanitization it is the fraction of item
  occurrences removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction

import numpy as np

from ..itemsets import (
    FrequentItemsets,
    RowIndex,
    TransactionDB,
    association_rules,
    count_support,
    frequent_itemsets,
)
from .patterns import SensitivePattern, is_mined

__all__ = [
    "PatternStatus",
    "HidingMetrics",
    "hiding_failure",
    "misses_cost",
    "artifactual_patterns",
    "dissimilarity",
    "measure_hiding",
    "must_hide_itemsets",
]


def hiding_failure(mined_before: int, mined_after: int) -> float:
    """HF = |R_P(D')| / |R_P(D)| (Oliveira & Zaïane, ICDM PSDM workshop 2002); 0 if nothing to hide."""
    return mined_after / mined_before if mined_before else 0.0


def misses_cost(nonsensitive_before: set, mined_after: set) -> tuple[int, float]:
    """(lost, MC): non-sensitive patterns of D not mined from D', and their fraction
    |~R_P(D) ∖ P(D')| / |~R_P(D)| (Oliveira & Zaïane 2002)."""
    lost = len(nonsensitive_before - mined_after)
    return lost, (lost / len(nonsensitive_before) if nonsensitive_before else 0.0)


def artifactual_patterns(mined_before: set, mined_after: set) -> tuple[int, float]:
    """(ghosts, AP): patterns of D' absent from D, and AP = |P(D') ∖ P(D)| / |P(D')|
    (Oliveira & Zaïane 2002)."""
    ghosts = len(mined_after - mined_before)
    return ghosts, (ghosts / len(mined_after) if mined_after else 0.0)


def dissimilarity(original: TransactionDB, sanitized: TransactionDB) -> float:
    """dif(D, D') = Σ_i |f_D(i) − f_D'(i)| / Σ_i f_D(i) over item frequencies
    (Oliveira & Zaïane, IDEAS 2003, §6); 0 for an empty D."""
    ids = np.union1d(original.items, sanitized.items)
    f0 = np.zeros(ids.size, dtype=np.int64)
    f1 = np.zeros(ids.size, dtype=np.int64)
    f0[np.searchsorted(ids, original.items)] = original.item_support()
    f1[np.searchsorted(ids, sanitized.items)] = sanitized.item_support()
    total = int(f0.sum())
    return float(np.abs(f0 - f1).sum() / total) if total else 0.0


@dataclass
class PatternStatus:
    """One sensitive pattern before and after: support counts, confidences (rules), mined or not."""

    pattern: str
    kind: str  # "itemset" or "rule"
    support_before: int
    support_after: int
    confidence_before: float | None
    confidence_after: float | None
    mined_before: bool
    mined_after: bool


@dataclass
class HidingMetrics:
    """The measured side effects of one sanitization (definitions in the module docstring)."""

    sensitive: list[PatternStatus] = field(default_factory=list)
    sensitive_mined_before: int = 0
    sensitive_mined_after: int = 0
    hiding_failure: float = 0.0
    itemsets_before: int = 0
    itemsets_after: int = 0
    nonsensitive_itemsets: int = 0
    lost_itemsets: int = 0
    misses_cost: float = 0.0
    ghost_itemsets: int = 0
    artifactual_patterns: float = 0.0
    rules_before: int | None = None
    rules_after: int | None = None
    nonsensitive_rules: int | None = None
    lost_rules: int | None = None
    misses_cost_rules: float | None = None
    ghost_rules: int | None = None
    artifactual_rules: float | None = None
    dissimilarity: float = 0.0

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


def must_hide_itemsets(
    patterns: Sequence[SensitivePattern], status: Sequence[PatternStatus], min_count: int
) -> list[frozenset]:
    """The generators of H (module docstring): every sensitive itemset, and the X ∪ Y of each
    sensitive rule mined from D whose X ∪ Y is infrequent in D' (hidden by support)."""
    out = []
    for p, st in zip(patterns, status):
        if not p.is_rule or (st.mined_before and st.support_after < min_count):
            out.append(frozenset(p.items))
    return out


def _rule_keys(fi: FrequentItemsets, conf: Fraction) -> dict[int, np.ndarray]:
    """Rules at ``conf`` as integer rows per size k of X ∪ Y: ``[z_1 .. z_k, mask of Y's positions]``."""
    rules = association_rules(fi, conf)  # a Fraction is compared exactly
    out = {}
    for k in np.unique(rules.size).tolist():
        sel = rules.size == k
        z = fi.itemsets(k)[rules.row[sel]]
        out[k] = np.concatenate([z, rules.mask[sel][:, None]], axis=1)
    return out


def _rule_key(p: SensitivePattern) -> tuple[int, np.ndarray]:
    z = p.items
    mask = sum(1 << z.index(i) for i in p.consequent)
    return len(z), np.array([*z, mask], dtype=np.int64)


def _missing(rows: np.ndarray, table: np.ndarray | None) -> np.ndarray:
    if table is None or table.shape[0] == 0:
        return np.ones(rows.shape[0], dtype=bool)
    return RowIndex(table).find(rows) < 0


def _rule_metrics(m: HidingMetrics, fb, fa, patterns, conf, must_hide: Sequence[frozenset]) -> None:
    """Rule counts, misses cost and ghosts, vectorized over rules encoded as integer rows; rules
    generated by a superset of a ``must_hide`` itemset are not non-sensitive (module docstring)."""
    rb, ra = _rule_keys(fb, conf), _rule_keys(fa, conf)
    sens_keys: dict[int, list[np.ndarray]] = {}
    for p in patterns:
        if p.is_rule:
            k, key = _rule_key(p)
            sens_keys.setdefault(k, []).append(key)
    sens_itemsets = [np.array(sorted(s)) for s in must_hide]
    n_b = n_a = n_ns = lost = ghosts = 0
    for k in set(rb) | set(ra):
        b, a = rb.get(k), ra.get(k)
        if b is not None:
            n_b += b.shape[0]
            ns = np.ones(b.shape[0], dtype=bool)
            if k in sens_keys:
                ns &= _missing(b, np.stack(sens_keys[k]))
            for s in sens_itemsets:
                if s.size <= k:
                    ns &= np.isin(b[:, :k], s).sum(axis=1) != s.size
            n_ns += int(ns.sum())
            lost += int(_missing(b[ns], a).sum())
        if a is not None:
            n_a += a.shape[0]
            ghosts += int(_missing(a, b).sum())
    m.rules_before, m.rules_after, m.nonsensitive_rules = n_b, n_a, n_ns
    m.lost_rules, m.misses_cost_rules = lost, (lost / n_ns if n_ns else 0.0)
    m.ghost_rules, m.artifactual_rules = ghosts, (ghosts / n_a if n_a else 0.0)


def measure_hiding(
    original: TransactionDB,
    sanitized: TransactionDB,
    patterns: Sequence[SensitivePattern],
    min_count: int,
    conf: Fraction | None = None,
    *,
    frequent_before: FrequentItemsets | None = None,
) -> HidingMetrics:
    """Mine D and D' at ``min_count`` (and rules at ``conf``) and measure every metric.

    Both databases must have the same number of transactions. ``frequent_before`` may
    pass the mining result of D already computed.
    """
    if original.n_transactions != sanitized.n_transactions:
        raise ValueError("the sanitized database must keep every transaction")
    fb = frequent_before if frequent_before is not None else frequent_itemsets(original, min_count=min_count)
    fa = frequent_itemsets(sanitized, min_count=min_count)
    m = HidingMetrics()
    # sensitive patterns
    sets = [list(p.items) for p in patterns] + [list(p.antecedent) for p in patterns if p.is_rule]
    cb = count_support(original, sets)
    ca = count_support(sanitized, sets)
    n_p = len(patterns)
    ante = {}
    j = n_p
    for i, p in enumerate(patterns):
        if p.is_rule:
            ante[i] = j
            j += 1
    for i, p in enumerate(patterns):
        xb = int(cb[ante[i]]) if i in ante else None
        xa = int(ca[ante[i]]) if i in ante else None
        use = conf if p.is_rule else None
        mb = is_mined(int(cb[i]), xb, min_count, use)
        ma = is_mined(int(ca[i]), xa, min_count, use)
        m.sensitive.append(
            PatternStatus(
                pattern=str(p),
                kind="rule" if p.is_rule else "itemset",
                support_before=int(cb[i]),
                support_after=int(ca[i]),
                confidence_before=(int(cb[i]) / xb if xb else None) if p.is_rule else None,
                confidence_after=(int(ca[i]) / xa if xa else None) if p.is_rule else None,
                mined_before=mb,
                mined_after=ma,
            )
        )
    m.sensitive_mined_before = sum(s.mined_before for s in m.sensitive)
    m.sensitive_mined_after = sum(s.mined_before and s.mined_after for s in m.sensitive)
    m.hiding_failure = hiding_failure(m.sensitive_mined_before, m.sensitive_mined_after)
    # itemsets: H = supersets of what had to be hidden (module docstring)
    must_hide = must_hide_itemsets(patterns, m.sensitive, min_count)
    before = {frozenset(s) for s, _ in fb}
    after = {frozenset(s) for s, _ in fa}
    nonsens = {s for s in before if not any(h <= s for h in must_hide)}
    m.itemsets_before, m.itemsets_after, m.nonsensitive_itemsets = len(before), len(after), len(nonsens)
    m.lost_itemsets, m.misses_cost = misses_cost(nonsens, after)
    m.ghost_itemsets, m.artifactual_patterns = artifactual_patterns(before, after)
    # rules
    if conf is not None:
        _rule_metrics(m, fb, fa, patterns, conf, must_hide)
    m.dissimilarity = dissimilarity(original, sanitized)
    return m
