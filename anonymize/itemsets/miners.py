"""Mining all frequent itemsets: Apriori, Eclat, and the default hybrid.

All three return the exact set of itemsets with ``count ≥ min_count`` (an item
present in every transaction included) as a :class:`FrequentItemsets`, and
share one vectorized bitset engine (:mod:`.engine`); they differ in the
candidate discipline:

* :func:`apriori` — level-wise, every candidate passes Apriori's subset prune
  before it is counted (R. Agrawal, R. Srikant, "Fast algorithms for mining
  association rules", VLDB 1994);
* :func:`eclat` — prefix-class joins without subset pruning, depth-first over
  blocks of classes when memory is short (M. J. Zaki, "Scalable algorithms for
  association mining", IEEE TKDE 12(3), 2000);
* :func:`frequent_itemsets` — level-wise, pruning only while it pays, splitting
  depth-first only when memory is short; the fastest, and what the rest of ppdm
  calls.

The threshold is ``min_count = ceil(minsup · N)`` (exact decimal arithmetic,
:func:`~.support.min_count_for`) or an absolute ``min_count``.
"""

from __future__ import annotations

from typing import Any

from .db import as_transaction_db
from .engine import mine_bitsets
from .result import FrequentItemsets
from .support import Threshold, resolve_min_count

__all__ = ["frequent_itemsets", "apriori", "eclat"]


def _check_max_len(max_len: int | None) -> None:
    if max_len is not None and (not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 1):
        raise ValueError(f"max_len must be a positive integer or None (got {max_len!r})")


def frequent_itemsets(
    data: Any,
    minsup: Threshold | None = None,
    *,
    min_count: int | None = None,
    max_len: int | None = None,
    memory_budget: int = 256 << 20,
    max_itemsets: int | None = None,
) -> FrequentItemsets:
    """All frequent itemsets of ``data`` with their support counts.

    ``data`` is a :class:`TransactionDB`, a FIMI file path, a one-hot DataFrame or
    a list of transactions. Give ``minsup`` (fraction in (0, 1]; frequent iff
    ``count ≥ ceil(minsup·N)``) or ``min_count`` (integer ≥ 1); ``max_len`` caps
    the itemset size. Level-wise bitset mining: Apriori's level structure and C2
    pass (Agrawal & Srikant 1994) with Eclat's class joins and tidset (bitset)
    intersections (Zaki 2000) and FP-growth's collapsing of duplicate projected
    transactions (J. Han, J. Pei, Y. Yin, "Mining frequent patterns without candidate
    generation", SIGMOD 2000); ``memory_budget`` bounds the bytes of
    candidate bit columns held at once. ``max_itemsets`` stops mining with
    :class:`~.engine.ItemsetLimitExceeded` as soon as more itemsets than that are found.
    """
    db = as_transaction_db(data)
    minc = resolve_min_count(db.n_transactions, minsup, min_count)
    _check_max_len(max_len)
    return mine_bitsets(db, minc, max_len=max_len, prune="auto", memory_budget=memory_budget, max_itemsets=max_itemsets)


def apriori(
    data: Any, minsup: Threshold | None = None, *, min_count: int | None = None, max_len: int | None = None
) -> FrequentItemsets:
    """Apriori: level-wise mining with join + subset prune before counting.

    Agrawal & Srikant (1994), "Fast Algorithms for Mining Association Rules",
    VLDB. Level k+1 candidates are joins of frequent k-itemsets sharing k−1 items
    whose every k-subset is frequent; C2 is counted in one pass over the
    transactions (or by column ANDs when that is cheaper), later levels by AND +
    popcount of the two joined itemsets' bit columns in batches. Arguments as
    :func:`frequent_itemsets`.
    """
    db = as_transaction_db(data)
    minc = resolve_min_count(db.n_transactions, minsup, min_count)
    _check_max_len(max_len)
    return mine_bitsets(db, minc, max_len=max_len, prune=True, memory_budget=1 << 62)


def eclat(
    data: Any,
    minsup: Threshold | None = None,
    *,
    min_count: int | None = None,
    max_len: int | None = None,
    memory_budget: int = 256 << 20,
) -> FrequentItemsets:
    """Eclat: prefix-class joins with bitset (tidset) intersections, no subset pruning.

    Zaki (2000), "Scalable Algorithms for Association Mining", IEEE TKDE 12(3).
    Each prefix class is extended by intersecting its members' bit columns
    pairwise; all classes of a level are intersected in one batch, and when the
    batch would exceed ``memory_budget`` bytes the classes are mined depth-first
    in blocks. Arguments as :func:`frequent_itemsets`.
    """
    db = as_transaction_db(data)
    minc = resolve_min_count(db.n_transactions, minsup, min_count)
    _check_max_len(max_len)
    return mine_bitsets(db, minc, max_len=max_len, prune=False, memory_budget=memory_budget)
