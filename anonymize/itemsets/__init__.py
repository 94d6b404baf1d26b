"""Local frequent-itemset mining and association rules on packed bitsets.

Everything a party needs on its own data, fast and exact:

* :class:`TransactionDB` — FIMI files (:func:`read_fimi`), lists of transactions
  and one-hot DataFrames in one form: CSR rows plus per-item packed bit columns;
* miners — :func:`frequent_itemsets` (default), :func:`apriori` (Agrawal &
  Srikant 1994), :func:`eclat` (Zaki 2000); all exact, counts included;
* building blocks for joint mining — :func:`count_support` (local counts of
  agreed candidates, horizontal partitions), :func:`apriori_gen` (deterministic
  join + prune), :func:`item_columns` / :func:`itemset_columns` (bit vectors for
  the scalar products of vertical partitions), :func:`min_count_for` (exact
  ``ceil(minsup·N)``), :func:`fingerprint` (the FIMI reference md5);
* :func:`association_rules` — all rules above a confidence (ap-genrules).

Example::

    from anonymize.itemsets import read_fimi, frequent_itemsets, association_rules
    db = read_fimi("mushroom.dat")
    fi = frequent_itemsets(db, 0.3)          # 2,735 itemsets
    rules = association_rules(fi, 0.9)
"""

from .bitset import CHUNK_WORDS, n_words, pack_columns, pack_rows, popcount, unpack_columns
from .candidates import RowIndex, apriori_gen, as_itemset_matrix, class_pairs
from .db import TransactionDB, as_transaction_db, fimi_text, parse_fimi, read_fimi
from .miners import apriori, eclat, frequent_itemsets
from .result import FrequentItemsets, fingerprint
from .rules import AssociationRules, Rule, association_rules
from .support import (
    Threshold,
    count_support,
    exact_fraction,
    item_columns,
    itemset_columns,
    min_count_for,
    pair_counts,
    resolve_min_count,
)

__all__ = [
    "TransactionDB",
    "read_fimi",
    "fimi_text",
    "parse_fimi",
    "as_transaction_db",
    "frequent_itemsets",
    "apriori",
    "eclat",
    "FrequentItemsets",
    "fingerprint",
    "count_support",
    "apriori_gen",
    "item_columns",
    "itemset_columns",
    "min_count_for",
    "exact_fraction",
    "Threshold",
    "pair_counts",
    "resolve_min_count",
    "association_rules",
    "AssociationRules",
    "Rule",
    "class_pairs",
    "RowIndex",
    "as_itemset_matrix",
    "CHUNK_WORDS",
    "n_words",
    "pack_columns",
    "pack_rows",
    "popcount",
    "unpack_columns",
]
