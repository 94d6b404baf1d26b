"""Sensitive patterns (itemsets and rules ``X => Y``), their syntax, and when one is "mined".

Model
-----
A *sensitive itemset* S is hidden from a database D' at minimum support count
``minc`` when ``count_D'(S) < minc``. A *sensitive rule* X ⇒ Y (X, Y non-empty,
disjoint) is mined when ``count(X ∪ Y) ≥ minc`` and, if a minimum confidence C
is given, ``count(X ∪ Y) / count(X) ≥ C``; it is hidden when either fails
(Verykios, Elmagarmid, Bertino, Saygin, Dasseni, "Association rule hiding",
IEEE TKDE 16(4), 2004, §3). Without C a rule is mined exactly when its
generating itemset X ∪ Y is frequent, so it is hidden like that itemset.

Thresholds are exact: ``minc = ceil(minsup · N)`` (:func:`~anonymize.itemsets.min_count_for`)
and C is read as the decimal it prints as (``0.7`` is 7/10), compared in integers
(``count(X∪Y)·q ≥ p·count(X)`` for C = p/q), as the rule miner does.

Syntax (the CLI's ``--sensitive``): patterns separated by ``;``, items by blanks
(or commas), a rule written ``X => Y``: ``"1 2; 3 4 => 5"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import HidingError

__all__ = [
    "SensitivePattern",
    "parse_sensitive",
    "as_patterns",
    "exact_fraction",
    "is_mined",
    "deletions_to_hide",
]


@dataclass(frozen=True)
class SensitivePattern:
    """A sensitive itemset (``antecedent == ()``) or rule ``antecedent => consequent``.

    Item tuples are ascending and duplicate-free. :attr:`items` is the itemset
    (or the rule's generating itemset X ∪ Y).
    """

    antecedent: tuple[int, ...]
    consequent: tuple[int, ...]

    @property
    def is_rule(self) -> bool:
        """True for a rule X ⇒ Y, False for an itemset."""
        return bool(self.antecedent)

    @property
    def items(self) -> tuple[int, ...]:
        """The itemset, or the rule's generating itemset X ∪ Y (ascending)."""
        return tuple(sorted(self.antecedent + self.consequent))

    def __str__(self) -> str:
        c = " ".join(map(str, self.consequent))
        return f"{' '.join(map(str, self.antecedent))} => {c}" if self.antecedent else c

    @classmethod
    def itemset(cls, items: Iterable[int]) -> SensitivePattern:
        """A sensitive itemset from item ids."""
        return cls((), _items(items, "itemset"))

    @classmethod
    def rule(cls, antecedent: Iterable[int], consequent: Iterable[int]) -> SensitivePattern:
        """A sensitive rule X ⇒ Y (both sides non-empty and disjoint)."""
        x, y = _items(antecedent, "antecedent"), _items(consequent, "consequent")
        if set(x) & set(y):
            raise HidingError(f"rule {' '.join(map(str, x))} => {' '.join(map(str, y))}: X and Y share items")
        return cls(x, y)


def _items(items: Iterable[Any], what: str) -> tuple[int, ...]:
    out = []
    for i in items:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or i < 0:
            raise HidingError(f"{what} items must be non-negative integer ids (got {i!r})")
        out.append(int(i))
    if not out:
        raise HidingError(f"empty {what} in the sensitive list")
    return tuple(sorted(set(out)))


_TOKEN = re.compile(r"[\s,]+")


def _parse_side(text: str, where: str) -> tuple[int, ...]:
    toks = [t for t in _TOKEN.split(text.strip()) if t]
    if not toks:
        raise HidingError(f"empty side in sensitive pattern {where!r}")
    ids = []
    for t in toks:
        if not t.isdigit() or not t.isascii():
            raise HidingError(f"{t!r} in sensitive pattern {where!r} is not an item id (a non-negative integer)")
        ids.append(int(t))
    return tuple(sorted(set(ids)))


def parse_sensitive(text: str) -> list[SensitivePattern]:
    """Parse ``"1 2; 3 4 => 5"`` into patterns: ``;`` separates patterns, ``=>`` makes a rule.

    Empty entries between separators are ignored; an empty list, a non-integer
    token, an empty rule side, a second ``=>`` or a rule whose sides share an item
    raise :class:`HidingError`. The notation of sensitive rules follows Verykios
    et al., "Association rule hiding", IEEE TKDE 16(4), 2004.
    """
    if not isinstance(text, str):
        raise HidingError("the sensitive list must be a string such as '1 2; 3 4 => 5'")
    out = []
    for part in text.split(";"):
        if not part.strip():
            continue
        sides = part.split("=>")
        if len(sides) > 2:
            raise HidingError(f"sensitive pattern {part.strip()!r} has more than one '=>'")
        if len(sides) == 2:
            out.append(SensitivePattern.rule(_parse_side(sides[0], part.strip()), _parse_side(sides[1], part.strip())))
        else:
            out.append(SensitivePattern.itemset(_parse_side(part, part.strip())))
    if not out:
        raise HidingError("the sensitive list is empty: give itemsets such as '1 2; 3 4 => 5'")
    return list(dict.fromkeys(out))  # drop repeats, keep order


def as_patterns(sensitive: Any, labels: Sequence[Any] | None = None) -> list[SensitivePattern]:
    """Coerce a sensitive list: a string (see :func:`parse_sensitive`), or a sequence whose
    elements are strings, :class:`SensitivePattern` objects or itemsets (iterables of ids).

    With ``labels`` (a one-hot frame's column names), itemsets may name items by label.
    """
    if isinstance(sensitive, str):
        return parse_sensitive(sensitive)
    if isinstance(sensitive, SensitivePattern):
        return [sensitive]
    try:
        elems = list(sensitive)
    except TypeError:
        raise HidingError(f"sensitive patterns must be a string or a list, not {type(sensitive).__name__}") from None
    lab = {v: i for i, v in enumerate(labels)} if labels is not None else None
    out: list[SensitivePattern] = []
    for e in elems:
        if isinstance(e, SensitivePattern):
            out.append(e)
        elif isinstance(e, str):
            out.extend(parse_sensitive(e))
        else:
            try:
                its = list(e)
            except TypeError:
                raise HidingError(f"sensitive pattern {e!r} is not an itemset (an iterable of item ids)") from None
            if lab is not None:
                missing = [i for i in its if i not in lab]
                if missing:
                    raise HidingError(f"item {missing[0]!r} of sensitive itemset {its!r} is not a column of the frame")
                its = [lab[i] for i in its]
            out.append(SensitivePattern.itemset(its))
    if not out:
        raise HidingError("the sensitive list is empty")
    return list(dict.fromkeys(out))


def exact_fraction(x: Any, what: str) -> Fraction:
    """The rational a user meant, in (0, 1]: floats through their shortest repr (0.7 → 7/10).

    Exact thresholds as in Agrawal & Srikant, "Fast Algorithms for Mining
    Association Rules", VLDB 1994 (support/confidence), compared in integers.
    """
    if isinstance(x, Fraction):
        f = x
    elif isinstance(x, (bool, np.bool_)):
        raise HidingError(f"{what} must be a number in (0, 1], not a bool")
    elif isinstance(x, (float, np.floating)):
        if not math.isfinite(float(x)):
            raise HidingError(f"{what} must be a number in (0, 1] (got {x!r})")
        f = Fraction(repr(float(x)))
    elif isinstance(x, (int, np.integer)):
        f = Fraction(int(x))
    else:
        try:
            d = Decimal(str(x).strip())
        except (InvalidOperation, ValueError):
            raise HidingError(f"{what} must be a number in (0, 1] (got {x!r})") from None
        if not d.is_finite():
            raise HidingError(f"{what} must be a number in (0, 1] (got {x!r})")
        f = Fraction(d)
    if not (0 < f <= 1):
        raise HidingError(f"{what} must be in (0, 1] (got {x})")
    return f


def is_mined(count_xy: int, count_x: int | None, min_count: int, conf: Fraction | None) -> bool:
    """Whether a pattern with these counts is mined: ``count_xy ≥ minc`` and, for a rule
    with a confidence threshold C = p/q, ``count_xy·q ≥ p·count_x`` (Verykios et al. 2004, §3)."""
    if count_xy < min_count:
        return False
    if conf is None or count_x is None:
        return True
    return count_xy * conf.denominator >= conf.numerator * count_x


def deletions_to_hide(
    count_xy: int, count_x: int | None, min_count: int, conf: Fraction | None, *, victim_in_antecedent: bool
) -> int | None:
    """Fewest transactions of X ∪ Y that must lose an item of it to hide the pattern.

    Support route: ``count_xy − d < minc`` ⇔ ``d ≥ count_xy − minc + 1``. Confidence
    route for a rule (C = p/q), counts a = count(X∪Y), b = count(X):

    * victim in Y — b is unchanged: ``(a − d)·q < p·b`` ⇔ ``d = ⌊(aq − pb)/q⌋ + 1``;
    * victim in X — both drop: ``(a − d)·q < p·(b − d)`` ⇔ ``d(q − p) > aq − pb``,
      ``d = ⌊(aq − pb)/(q − p)⌋ + 1`` (impossible when C = 1: returns the support route).

    Returns the smaller route (0 if already hidden). These are the stopping rules of
    the support- and confidence-reduction algorithms of Verykios et al., IEEE TKDE
    16(4), 2004, §4.
    """
    if not is_mined(count_xy, count_x, min_count, conf):
        return 0
    best = count_xy - min_count + 1
    if conf is not None and count_x is not None:
        p, q = conf.numerator, conf.denominator
        slack = count_xy * q - p * count_x  # ≥ 0 since mined
        if not victim_in_antecedent:
            best = min(best, slack // q + 1)
        elif q > p:
            best = min(best, slack // (q - p) + 1)
    return best
