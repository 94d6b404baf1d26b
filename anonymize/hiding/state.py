"""The sanitization state every hiding algorithm edits: bit columns, lengths, tracked supports.

Model
-----
Only *relevant* items can matter to hiding: the items of the frequent itemsets
of D and of the sensitive patterns. For those R items the state keeps one packed
bit column each (the vertical layout of :mod:`anonymize.itemsets.bitset`, Zaki,
"Scalable Algorithms for Association Mining", IEEE TKDE 12(3), 2000), mutable:
deleting item i from transaction t clears bit t of column i. Supports are
``popcount(AND of columns)``; the rows of a batch of transactions are gathered
from the columns (``(cols[:, t >> 6] >> (t & 63)) & 1``), never re-read from the file.

The state also tracks the current support of every *non-sensitive* frequent
itemset of D — F' = F minus every itemset that contains a sensitive pattern's
items (those must vanish with it) — **incrementally**: a batch of edits changes
the count of f by (#transactions of the batch containing f after) − (#before),
computed only for the f that hold an edited item. Nothing is re-mined while
sanitizing; the side-effect costs of the algorithms read these counts. The frequent
itemsets left out of F' are kept too (``fx``, counts in D, not tracked): when a rule is
hidden by confidence its X ∪ Y stays frequent and its falling supersets are losses, which
the exact algorithm counts (:meth:`HidingState.counts` gives their current supports).

A deletion never empties a transaction (emptying one would erase a customer's whole
basket rather than hide a pattern in it): transactions of length 1 are never edited.
Transactions that are empty in D (empty FIMI lines) count in N and stay empty.

Every edit is logged; :meth:`HidingState.result` applies the log to the CSR
form of D and returns the sanitized :class:`~anonymize.itemsets.TransactionDB`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..itemsets import FrequentItemsets, RowIndex, TransactionDB, popcount, unpack_columns
from .patterns import SensitivePattern

__all__ = ["HidingState"]

_CHUNK = 1 << 23  # booleans per containment block (n_itemsets · k · transactions)


class HidingState:
    """Mutable bit-column state of a database being sanitized (see the module docstring).

    Parameters
    ----------
    db : TransactionDB
        The original database (never modified).
    min_count : int
        ``ceil(minsup · N)``.
    patterns : sequence of SensitivePattern
        Validated patterns (every item occurs in ``db``).
    frequent : FrequentItemsets
        All frequent itemsets of ``db`` at ``min_count``.
    conf : Fraction | None
        Minimum confidence, if rules are judged by confidence.
    seed : int | None
        Seeds the random tie-break among equally good transactions (None: fresh entropy).
    """

    def __init__(
        self,
        db: TransactionDB,
        min_count: int,
        patterns: Sequence[SensitivePattern],
        frequent: FrequentItemsets,
        *,
        conf: Fraction | None = None,
        seed: int | None = None,
    ) -> None:
        self.db = db
        self.n = db.n_transactions
        self.min_count = int(min_count)
        self.conf = conf
        self.patterns = list(patterns)
        pat_ids = np.array(sorted({i for p in self.patterns for i in p.items}), dtype=np.int64)
        freq_ids = frequent.itemsets(1).ravel() if 1 in frequent.levels else np.zeros(0, np.int64)
        self.ids = np.union1d(freq_ids, pat_ids).astype(np.int64)  # relevant item ids, ascending
        pos = db.item_positions(self.ids)
        if (pos < 0).any():
            raise ValueError("every relevant item must occur in the database")
        self.pos = pos
        self.cols = db.columns(pos).copy() if pos.size else np.zeros((0, db.n_words), np.uint64)
        self.lengths = np.diff(db.indptr).astype(np.int64)
        self.rng = np.random.default_rng(seed)
        self.tiebreak = self.rng.permutation(self.n)
        # non-sensitive frequent itemsets, as rows of relevant-item indices, per size
        self.fp: dict[int, np.ndarray] = {}
        self.fp_count: dict[int, np.ndarray] = {}
        # the frequent itemsets of D left out of F' (each holds a pattern's items), with their counts in D:
        # not tracked, but a rule hidden by confidence leaves its X ∪ Y frequent, and then these count as
        # lost when they fall (metrics module: H holds only what had to vanish); the exact algorithm reads them
        self.fx: dict[int, np.ndarray] = {}
        self.fx_count: dict[int, np.ndarray] = {}
        sens_rows = [self.rows(p.items) for p in self.patterns]
        for k, (items, counts) in frequent.levels.items():
            rows = np.searchsorted(self.ids, items)
            keep = np.ones(rows.shape[0], dtype=bool)
            for s in sens_rows:
                if s.size <= k:
                    keep &= np.isin(rows, s).sum(axis=1) != s.size
            if keep.any():
                self.fp[k] = rows[keep]
                self.fp_count[k] = counts[keep].astype(np.int64).copy()
            if not keep.all():
                self.fx[k] = rows[~keep]
                self.fx_count[k] = counts[~keep].astype(np.int64).copy()
        self.n_fp = sum(c.size for c in self.fp_count.values())
        self._index = {k: RowIndex(r) for k, r in self.fp.items()}
        # F' flattened (sizes ascending), padded with row R — an item every transaction "holds" — so one
        # gather tests all sizes at once; fp_count[k] are views into the flat counts
        kmax = max(self.fp, default=1)
        R = self.ids.size
        self.fp_offset = {}
        flat = np.full((self.n_fp, kmax), R, dtype=np.int64)
        off = 0
        for k, r in self.fp.items():
            flat[off : off + r.shape[0], :k] = r
            self.fp_offset[k] = off
            off += r.shape[0]
        self._flat = flat
        self._flat_count = np.concatenate([self.fp_count[k] for k in self.fp]) if self.fp else np.zeros(0, np.int64)
        self._views()
        self._holds_flat = np.zeros((R + 1, self.n_fp), dtype=bool)
        self._holds_flat[flat, np.repeat(np.arange(self.n_fp), kmax).reshape(flat.shape)] = True
        self._holds_flat = self._holds_flat[:R]
        self._log_t: list[np.ndarray] = []
        self._log_r: list[np.ndarray] = []
        self._log_add: list[np.ndarray] = []

    def _views(self) -> None:
        self.fp_count = {k: self._flat_count[o : o + self.fp[k].shape[0]] for k, o in self.fp_offset.items()}

    # ------------------------------------------------------------------ lookups
    def rows(self, item_ids) -> np.ndarray:
        """Row (relevant-item index) of each item id."""
        return np.searchsorted(self.ids, np.asarray(item_ids, dtype=np.int64)).astype(np.int64)

    def bits(self, rows) -> np.ndarray:
        """The bit column of an itemset: AND of its items' columns (all ones for the empty set)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size == 0:
            out = np.full(self.cols.shape[1], np.uint64(0xFFFFFFFFFFFFFFFF))
            if self.n % 64 and out.size:
                out[-1] = np.uint64((1 << (self.n % 64)) - 1)
            return out
        return np.bitwise_and.reduce(self.cols[rows], axis=0)

    def count(self, rows) -> int:
        """Current support count of an itemset (given as rows)."""
        return int(popcount(self.bits(rows)))

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """Current support counts of the k-itemsets ``rows`` (an ``(n, k)`` matrix of rows), in batches."""
        rows = np.asarray(rows, dtype=np.int64)
        n, k = rows.shape
        out = np.empty(n, dtype=np.int64)
        W = max(1, self.cols.shape[1])
        step = max(1, _CHUNK // (8 * W * max(1, k)))
        for s in range(0, n, step):
            blk = rows[s : s + step]
            acc = self.cols[blk[:, 0]].copy() if k else np.broadcast_to(self.bits([]), (blk.shape[0], W)).copy()
            for c in range(1, k):
                acc &= self.cols[blk[:, c]]
            out[s : s + step] = popcount(acc)
        return out

    def tids(self, rows) -> np.ndarray:
        """Ascending transactions that currently contain the itemset."""
        return np.flatnonzero(unpack_columns(self.bits(rows), self.n))

    def item_counts(self, rows) -> np.ndarray:
        """Current support of each single item row."""
        return popcount(self.cols[np.asarray(rows, dtype=np.int64)])

    def rowbits(self, t: np.ndarray) -> np.ndarray:
        """``(R, T)`` bool: which relevant items each transaction of ``t`` currently holds."""
        t = np.asarray(t, dtype=np.int64)
        return ((self.cols[:, t >> 6] >> (t & 63).astype(np.uint64)) & np.uint64(1)).astype(bool)

    def rowbits_all(self, rows) -> np.ndarray:
        """``(len(rows), N)`` bool: the current columns of these item rows, unpacked."""
        return unpack_columns(self.cols[np.asarray(rows, dtype=np.int64)], self.n).reshape(-1, self.n)

    def order_shortest(self, t: np.ndarray, *primary: np.ndarray) -> np.ndarray:
        """Permutation of ``t`` by the ``primary`` keys (first most significant), then
        length ascending, then the seeded random tie-break."""
        keys = [self.tiebreak[t], self.lengths[t], *reversed(primary)]
        return np.lexsort(keys)

    # ------------------------------------------------------------------ non-sensitive frequent itemsets
    @staticmethod
    def contained(M: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(n, T)`` bool: itemset ``rows[j]`` ⊆ transaction column ``M[:, t]``."""
        n, k = rows.shape
        T = M.shape[1]
        if n == 0 or T == 0:
            return np.zeros((n, T), dtype=bool)
        if k == 1:
            return M[rows[:, 0]]
        out = np.empty((n, T), dtype=bool)
        step = max(1, _CHUNK // max(1, k * T))
        for s in range(0, n, step):
            blk = rows[s : s + step]
            acc = M[blk[:, 0]].copy()
            for c in range(1, k):
                acc &= M[blk[:, c]]
            out[s : s + step] = acc
        return out

    def _contained_flat(self, M: np.ndarray, sel: np.ndarray) -> np.ndarray:
        """``(len(sel), T)`` bool: flat F' itemset ``sel[j]`` ⊆ transaction column ``M[:, t]``."""
        T = M.shape[1]
        Mx = np.vstack([M, np.ones((1, T), dtype=bool)])
        rows = self._flat[sel]
        out = np.empty((sel.size, T), dtype=bool)
        step = max(1, _CHUNK // max(1, rows.shape[1] * T))
        for s in range(0, sel.size, step):
            out[s : s + step] = Mx[rows[s : s + step]].all(axis=1)
        return out

    def flat_index(self, k: int, idx: np.ndarray) -> np.ndarray:
        """Flat position of itemsets ``idx`` of ``fp[k]``."""
        return self.fp_offset[k] + np.asarray(idx, dtype=np.int64)

    def flat_count(self, flat: np.ndarray) -> np.ndarray:
        """Current counts of F' itemsets by flat position."""
        return self._flat_count[flat]

    def fp_lookup(self, k: int, rows: np.ndarray) -> np.ndarray:
        """Index in ``fp[k]`` of each k-itemset (rows of relevant-item indices), −1 where absent."""
        if k not in self._index:
            return np.full(len(rows), -1, dtype=np.int64)
        return self._index[k].find(rows)

    def fp_items(self, k: int) -> np.ndarray:
        """Item ids of the non-sensitive frequent k-itemsets (rows of ``fp[k]``)."""
        return self.ids[self.fp[k]]

    def side_effect_cost(self, t: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """``(T, C)`` cost of deleting candidate item row ``cand[c]`` from transaction ``t[j]``.

        Sum over the non-sensitive frequent itemsets f that hold the item and lie in the
        transaction of w(f): ``W`` if f sits exactly at the threshold (the deletion loses
        it; W = |F'| + 1 so one loss outweighs any number of touches), else
        ``1/(count(f) − minc + 1)`` (the closer to the threshold, the dearer). Itemsets
        already lost weigh 0. This is the side-effect-minimizing victim choice asked of
        Verykios et al. (IEEE TKDE 16(4), 2004) §4 heuristics, with the margin weighting
        of Sun & Yu, "A border-based approach for hiding sensitive frequent itemsets",
        ICDM 2005, applied to all of F' instead of its border.
        """
        t = np.asarray(t, dtype=np.int64)
        cand = np.asarray(cand, dtype=np.int64)
        cost = np.zeros((t.size, cand.size))
        if t.size == 0 or cand.size == 0:
            return cost
        M = self.rowbits(t)
        big = float(self.n_fp + 1)
        for k, rows in self.fp.items():
            cnt = self.fp_count[k]
            has = (rows[:, :, None] == cand[None, None, :]).any(axis=1)  # (n, C)
            sel = (cnt >= self.min_count) & has.any(axis=1)
            if not sel.any():
                continue
            margin = cnt[sel] - self.min_count
            w = np.where(margin == 0, big, 1.0 / (margin + 1.0))
            cont = self.contained(M, rows[sel])  # (n', T)
            cost += cont.T.astype(np.float64) @ (w[:, None] * has[sel])
        return cost

    def lost_count(self) -> int:
        """Non-sensitive frequent itemsets of D currently below the threshold."""
        return int((self._flat_count < self.min_count).sum())

    def positive_border(self) -> list[tuple[int, np.ndarray]]:
        """The positive border of the still-frequent non-sensitive itemsets: ``[(k, indices into fp[k])]``.

        An itemset is on the border when it is frequent and no frequent non-sensitive
        superset exists — the revised positive border of Sun & Yu, "A border-based
        approach for hiding sensitive frequent itemsets", ICDM 2005 (§3): keeping it
        frequent keeps every non-sensitive frequent itemset frequent (Apriori property).
        Checked level by level: every (k−1)-subset of an alive k-itemset is not maximal.
        """
        alive = {k: self.fp_count[k] >= self.min_count for k in self.fp}
        maximal = {k: a.copy() for k, a in alive.items()}
        for k, rows in self.fp.items():
            if k - 1 not in self.fp:
                continue
            up = rows[alive[k]]
            if up.size == 0:
                continue
            for drop in range(k):
                sub = np.delete(up, drop, axis=1)
                at = self.fp_lookup(k - 1, sub)
                maximal[k - 1][at[at >= 0]] = False
        return [(k, np.flatnonzero(m)) for k, m in maximal.items() if m.any()]

    # ------------------------------------------------------------------ edits
    def apply(self, t: np.ndarray, r: np.ndarray, *, add: bool = False) -> int:
        """Delete (or, with ``add``, insert) item row ``r[j]`` in transaction ``t[j]``.

        Pairs that would change nothing (deleting an absent item, adding a present one)
        and deletions that would empty a transaction are skipped; pairs must be
        distinct. Tracked supports of F' are updated incrementally. Returns the number
        of edits made.
        """
        t = np.asarray(t, dtype=np.int64).ravel()
        r = np.asarray(r, dtype=np.int64).ravel()
        if t.size == 0:
            return 0
        ut, ti = np.unique(t, return_inverse=True)
        Mb = self.rowbits(ut)
        present = Mb[r, ti]
        ok = ~present if add else present
        if not add:  # never empty a transaction: keep the first (length − 1) deletions of each
            idx = np.flatnonzero(ok)
            o = idx[np.argsort(ti[idx], kind="stable")]
            grp = ti[o]
            rank = np.arange(o.size) - np.searchsorted(grp, grp, side="left")
            ok = np.zeros(t.size, dtype=bool)
            ok[o[rank < self.lengths[t[o]] - 1]] = True
        if not ok.any():
            return 0
        t, r, ti = t[ok], r[ok], ti[ok]
        Ma = Mb.copy()
        Ma[r, ti] = add
        sel = np.flatnonzero(self._holds_flat[np.unique(r)].any(axis=0))
        if sel.size:
            before = self._contained_flat(Mb, sel).sum(axis=1)
            after = self._contained_flat(Ma, sel).sum(axis=1)
            self._flat_count[sel] += after - before
        word = t >> 6
        bit = np.left_shift(np.uint64(1), (t & 63).astype(np.uint64))
        if add:
            np.bitwise_or.at(self.cols, (r, word), bit)
            np.add.at(self.lengths, t, 1)
        else:
            np.bitwise_and.at(self.cols, (r, word), ~bit)
            np.subtract.at(self.lengths, t, 1)
        self._log_t.append(t)
        self._log_r.append(r)
        self._log_add.append(np.full(t.size, add))
        return int(t.size)

    def fork(self) -> HidingState:
        """An independent copy (same database, thresholds and tie-break; own columns, counts and log)."""
        new = copy.copy(self)
        new.cols = self.cols.copy()
        new.lengths = self.lengths.copy()
        new._flat_count = self._flat_count.copy()
        new._views()
        new._log_t, new._log_r, new._log_add = list(self._log_t), list(self._log_r), list(self._log_add)
        return new

    def net_edits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Net changes against D as ``(t, row, added)`` arrays: an item deleted then put back is no change."""
        if not self._log_t:
            e = np.zeros(0, np.int64)
            return e, e, np.zeros(0, bool)
        m = max(self.db.items.size, 1)
        key = np.concatenate(self._log_t) * m + self.pos[np.concatenate(self._log_r)]
        add = np.concatenate(self._log_add)
        uk, first = np.unique(key[::-1], return_index=True)  # the last edit of a pair wins
        last_add = add[::-1][first]
        present = _sorted_member(uk, self.db.rows * m + self.db.indices)
        keep = last_add != present
        uk, last_add = uk[keep], last_add[keep]
        return uk // m, np.searchsorted(self.pos, uk % m), last_add

    def replay(self, other: HidingState) -> int:
        """Apply the net edits of ``other`` (a fork of this state before it was edited)."""
        t, r, added = other.net_edits()
        return self.apply(t[~added], r[~added]) + self.apply(t[added], r[added], add=True)

    # ------------------------------------------------------------------ result
    def result(self) -> tuple[TransactionDB, dict[str, int]]:
        """The sanitized database and edit statistics (``items_removed``, ``items_added``,
        ``transactions_modified``)."""
        db = self.db
        if not self._log_t:
            return db, {"items_removed": 0, "items_added": 0, "transactions_modified": 0}
        m = max(db.items.size, 1)
        t = np.concatenate(self._log_t)
        pos = self.pos[np.concatenate(self._log_r)]
        add = np.concatenate(self._log_add)
        key = t * m + pos
        rk = key[::-1]  # the last edit of a (transaction, item) pair wins
        uk, first = np.unique(rk, return_index=True)
        last_add = add[::-1][first]
        orig = db.rows * m + db.indices  # ascending: rows ascending, items ascending within a row
        present = _sorted_member(uk, orig)
        removed = uk[~last_add & present]
        added = uk[last_add & ~present]
        if removed.size:
            drop = np.zeros(orig.size, dtype=bool)
            drop[np.searchsorted(orig, removed)] = True
            keys = orig[~drop]
        else:
            keys = orig
        if added.size:
            keys = np.union1d(keys, added)
        tx = keys // m
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(tx, minlength=self.n), out=indptr[1:])
        out = TransactionDB(self.n, db.items, indptr, (keys - tx * m).astype(np.int32), db.labels)
        changed = np.union1d(removed, added) // m
        stats = {
            "items_removed": int(removed.size),
            "items_added": int(added.size),
            "transactions_modified": int(np.unique(changed).size),
        }
        return out, stats


def _sorted_member(q: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``q ∈ table`` for an ascending ``table`` (binary search, no hashing)."""
    if table.size == 0:
        return np.zeros(q.shape, dtype=bool)
    at = np.minimum(np.searchsorted(table, q), table.size - 1)
    return table[at] == q
