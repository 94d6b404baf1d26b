"""Frequency sets of full-domain lattice nodes: computed from the rows once, rolled up node to
node, and cached as roll-up sources.

Frequency sets (Incognito §3.2, "rollup"). The frequency set of a node is its
list of distinct generalized QI tuples with their counts (and, when l-diversity
or t-closeness is asked for, each tuple's histogram of sensitive values). The
frequency set of a generalization ``N' ≥ N`` follows from the one of ``N``
alone: map every tuple's codes one level up (or several) and add the counts of
tuples that become equal. No pass over the ``n`` rows is needed, and frequency
sets shrink as nodes rise (on Adult ~3,000 tuples per check against 30,162 rows,
~0.1 ms per check).

Encoding. Each QI value is a *compact* code (rank among the leaves present in
the data; every level's nodes are ranked the same way, and ARX hierarchies keep
nodes contiguous in leaf order, so every level map is non-decreasing). A tuple
is one int64 bit-packed key ``Σ_j c_j·2^{s_j}``, attribute ``j`` taking
``b_j = ⌈log2 R_j⌉`` bits (``R_j`` = number of present leaves); rolling attribute
``j`` up is ``key += (up[c_j] − c_j) << s_j`` with ``c_j = key >> s_j & (2^{b_j} − 1)``
— shifts and masks, no division. Grouping equal keys is a sort and
``np.add.reduceat`` of counts over the runs: a roll-up's keys are sorted runs of
its source's, which a stable ``argsort`` (a merging sort) orders fastest; from
6,000 tuples an LSD radix sort over 16-bit digits; the rows' keys (in no order)
by one quicksort of ``key << b | position``. When
``Σ_j ⌈log2 R_j⌉ > 62`` bits the engine switches to a code-matrix
representation (slower, same results).

Sensitive histograms (l-diversity, t-closeness) roll up with the counts, packed: every count is
at most ``n``, so each takes a *lane* of the fewest bits of 8, 16 or 32 that hold ``n`` (16 on
Adult), several lanes to a uint64 word (:class:`HistogramLayout`). Adding two words adds their lanes
without a carry crossing a lane (a lane's sums never exceed ``n``), so ``np.add.reduceat`` runs over
⌈V·lane/64⌉ words per tuple instead of V counts — its cost grows with the columns (4 words instead
of 14 counts on Adult's occupation: about 3× faster) — and a lane is read back through a view. When
the last word has a free lane, it carries the tuple's count, so the counts roll up with the values
(no gather and ``reduceat`` of their own: l = 2 and salary-class t-closeness on Adult about 5 % faster).

Incognito's attribute subsets are also nodes here: dropping attribute ``j``
(projecting the table onto the other QIs) is a virtual level ``h_j + 1`` that
maps every value to one code, above ``*``. So one key space and one roll-up
serve the subset lattices and the full lattice (:data:`DROPPED`).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

import numpy as np

from ..classes import equivalence_classes
from ..table import EncodedTable

__all__ = ["DROPPED", "FrequencySet", "FrequencySets", "HistogramLayout", "sensitive_offsets"]

DROPPED = -1
"""Marker used in level vectors passed to :meth:`.engine.Lattice.node_info` for a dropped attribute
(internally the virtual level ``h_j + 1``)."""

_I16MAX = int(np.iinfo(np.int16).max)
_ALL_TRUE = np.uint64(0x0101010101010101)  # eight bytes of True, read as one word
_I64MAX = int(np.iinfo(np.int64).max)


def sensitive_offsets(table: EncodedTable) -> tuple[list[int], int]:
    """Layout of the concatenated sensitive histograms: the first column of each sensitive
    attribute, and the total number of columns ``V``."""
    offsets = []
    off = 0
    for vals in table.sens_values:
        offsets.append(off)
        off += len(vals)
    return offsets, off


class HistogramLayout:
    """How a frequency set's sensitive histograms are packed: ``V`` counts per tuple (the sensitive
    attributes' values concatenated, :func:`sensitive_offsets`), each in a ``lane`` of 8, 16 or 32
    bits — the fewest that hold ``n``, the largest sum a count can reach — or 64 (unpacked) beyond
    2^32, ``64 // lane`` lanes to a uint64 word, ``words`` words per tuple. Lanes are written and
    read through a view of the words as unsigned ``lane``-bit integers, so packing and reading agree
    on any byte order."""

    def __init__(self, table: EncodedTable):
        self.offsets, self.V = sensitive_offsets(table)
        self.widths = [len(v) for v in table.sens_values]
        n = int(table.n)
        self.lane = next((b for b in (8, 16, 32) if n < 1 << b), 64)
        self.per_word = 64 // self.lane
        self.words = max(-(-self.V // self.per_word), 1)
        self._lane_dtype = np.dtype(f"u{self.lane // 8}")
        #: a free lane after the values carries the tuple's count, which then rolls up with the values
        #: (one gather and one ``reduceat`` fewer per roll-up); None when the words are full
        self.count_lane: int | None = self.V if self.V < self.words * self.per_word else None

    def lanes(self, packed: np.ndarray) -> np.ndarray:
        """``(m, words · 64/lane)`` view of packed ``(m, words)`` uint64 histograms, one lane per column
        (column ``V`` is the count when :attr:`count_lane` is set; the columns after it are zero)."""
        return packed.view(self._lane_dtype)

    def pack(self, m: int, value_index: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
        """``(m, words)`` packed histograms of ``m`` tuples that each hold ``counts[i]`` rows, all with
        the value ``value_index[s][i]`` of sensitive attribute ``s`` (the bottom node's rows)."""
        packed = np.zeros((m, self.words), dtype=np.uint64)
        view = self.lanes(packed)
        rows = np.arange(m)
        for s, off in enumerate(self.offsets):
            view[rows, off + value_index[s]] = counts
        if self.count_lane is not None:
            view[:, self.count_lane] = counts
        return packed

    def counts(self, packed: np.ndarray) -> np.ndarray:
        """The ``(m,)`` int64 counts carried in :attr:`count_lane` (a copy)."""
        assert self.count_lane is not None
        return self.lanes(packed)[:, self.count_lane].astype(np.int64)

    def unpack(self, packed: np.ndarray) -> list[np.ndarray]:
        """Per sensitive attribute, its ``(m, V_s)`` int64 counts (a copy)."""
        view = self.lanes(packed)
        return [view[:, off : off + w].astype(np.int64) for off, w in zip(self.offsets, self.widths)]


@dataclass
class FrequencySet:
    """Distinct generalized QI tuples of one node with their counts (Incognito's frequency set).

    levels : internal levels (``h_j + 1`` = attribute dropped).
    keys : (m,) int64 sorted bit-packed keys (fast mode) — or None in wide mode.
    codes : (m, q) int32 compact node codes (wide mode only).
    counts : (m,) int64 rows per tuple.
    hist : (m, V) int64 concatenated sensitive-value histograms, or None (k-anonymity only).
    """

    levels: tuple
    keys: np.ndarray | None
    counts: np.ndarray
    hist: np.ndarray | None = None
    codes: np.ndarray | None = None

    @property
    def size(self) -> int:
        """Number of distinct tuples (m)."""
        return len(self.counts)


def _compact(col: np.ndarray, bound: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(col, return_inverse=True)`` for non-negative integer codes, by counting instead of
    sorting when their range is small (hierarchy codes are): the values present, ascending, and each
    element's position among them. ``bound`` — the codes are known to lie in ``[0, bound)`` (a
    hierarchy's leaf or node codes): no pass for their range."""
    present, inv, _ = _compact_counted(col, bound)
    return present, inv


def _compact_counted(col: np.ndarray, bound: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_compact` and how often each value present occurs (``np.unique``'s ``return_counts``)."""
    col = np.asarray(col)
    if bound is None or col.dtype.kind not in "iu":
        if col.size == 0 or col.dtype.kind not in "iu" or int(col.min()) < 0 or int(col.max()) >= 8 * col.size + 4096:
            present, inv, counts = np.unique(col, return_inverse=True, return_counts=True)
            return present, inv.reshape(-1), counts
        bound = int(col.max()) + 1
    present, lookup, counts = _leaf_lookup(col, bound)
    if len(present) == len(lookup):  # every code from 0 to the largest occurs: already compact
        return present, col.astype(np.int64), counts
    return present, lookup.take(col), counts


def _leaf_lookup(col: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For codes ``col`` in ``[0, bound)``: the codes present (ascending), a ``(bound,)`` int64 table
    of each present code's rank among them (:func:`_compact`'s inverse is ``table[col]``), and how
    often each present code occurs."""
    seen = np.bincount(col, minlength=bound)
    present = np.flatnonzero(seen)
    lookup = np.zeros(len(seen), dtype=np.int64)
    lookup[present] = np.arange(len(present), dtype=np.int64)
    return present.astype(col.dtype), lookup, seen[present]


class FrequencySets:
    """The frequency sets of one :class:`EncodedTable`'s lattice: the compact encoding of its QIs,
    the bottom node's set (:attr:`base`), roll-ups (:meth:`rollup`) and the cache of sets kept as
    roll-up sources (:meth:`remember`, :meth:`source_for`, hubs :meth:`hub`).

    ``need_hist`` — roll up the sensitive histograms with the counts; ``wide`` — force (or forbid)
    the code-matrix representation (default: only when the packed keys would not fit 62 bits).
    The counter ``rows_scanned`` measures the roll-up work done.
    """

    #: cap on the number of frequency-set rows kept for roll-ups (memory bound)
    cache_rows = 4_000_000
    #: cap on the rows of hub frequency sets kept (:meth:`hub`)
    hub_rows = 4_000_000
    #: roll-ups of at least this many tuples group by a radix sort (:meth:`_radix_order`); below it a
    #: comparison sort of the packed keys is faster (numpy's radix pass has a fixed cost)
    radix_min = 6_000

    def __init__(self, table: EncodedTable, *, need_hist: bool, wide: bool | None = None):
        self.table = table
        self.n = table.n  # rows the table stands for (Σ weights of a weighted table)
        self.n_tuples = table.n_tuples  # code rows
        self.q = table.q
        self.heights = [int(h.height) for h in table.hierarchies]
        self.need_hist = need_hist
        # --- compact codes per QI
        self.R: list[int] = []
        self.lvmap: list[list[np.ndarray]] = []  # [j][l] compact leaf -> compact node
        self.node_of: list[list[np.ndarray]] = []  # [j][l] compact node -> hierarchy node code
        #: rows per compact leaf of every QI (an unweighted table's; counted with the compaction)
        self.leaf_rows: list[np.ndarray] = []
        #: per QI, every leaf code's compact code (:attr:`leaf_compact` is these applied to the rows)
        self.leaf_lookup: list[np.ndarray] = []
        self._leaf_compact: np.ndarray | None = None
        for j, h in enumerate(table.hierarchies):
            present, lookup, rows = _leaf_lookup(table.qi_codes[:, j], h.n_leaves)
            self.leaf_lookup.append(lookup)
            self.leaf_rows.append(rows)
            self.R.append(len(present))
            lm, no = [], []
            for lv in range(h.height + 1):
                nodes = h.maps[lv][present]
                uniq, cinv = _compact(nodes, int(h.maps[lv].max()) + 1 if lv else h.n_leaves)
                lm.append(cinv)
                no.append(uniq)
            lm.append(np.zeros(len(present), dtype=np.int64))  # virtual 'dropped' level
            no.append(np.zeros(1, dtype=np.int64))
            self.lvmap.append(lm)
            self.node_of.append(no)
        self.n_nodes = [[len(no) for no in self.node_of[j]] for j in range(self.q)]
        # bit-packed keys: attribute j occupies bits [shift_j, shift_j + bits_j)
        self.bits = [max(int(r - 1).bit_length(), 0) for r in self.R]
        self.shift = [0] * self.q
        acc = 0
        for j in range(self.q - 1, -1, -1):
            self.shift[j] = acc
            acc += self.bits[j]
        self.key_bits = acc
        self.key_space = 1 << acc
        self.wide = (acc > 62) if wide is None else bool(wide)
        self.mask = [(1 << b) - 1 for b in self.bits]
        self._up: dict = {}
        # sensitive histogram layout
        self.hist_layout = HistogramLayout(table)
        self.sens_offsets, self.V = self.hist_layout.offsets, self.hist_layout.V
        self.rows_scanned = 0
        self._arange = np.zeros(0, dtype=np.int64)
        self._cache: dict[tuple, int] = {}  # levels -> slot
        self._slots: list = []
        # the cached nodes' levels, a row per slot padded to whole 8-byte words (pad columns 0), so
        # that a row's eight comparisons are read as one uint64 (:meth:`best_cached`)
        self._lv_cols = max(8, -(-self.q // 8) * 8)
        self._slot_lv = np.zeros((0, self._lv_cols), dtype=np.int16)
        self._slot_size = np.zeros(0, dtype=np.int64)
        self._free: list[int] = []
        self._order: collections.deque = collections.deque()
        self._cache_rows = 0
        self._hubs: dict[tuple, FrequencySet] = {}
        self._hub_rows = 0
        self.base = self._base()

    # ------------------------------------------------------------------ encoding helpers
    def internal(self, levels) -> tuple:
        """Level vector with :data:`DROPPED` (or ``None``) replaced by the virtual level ``h_j + 1``."""
        return tuple(self.heights[j] + 1 if (lv is None or lv == DROPPED) else int(lv) for j, lv in enumerate(levels))

    def up(self, j: int, a: int, b: int) -> np.ndarray:
        """Compact node code at level ``b`` of every compact node at level ``a`` (``a ≤ b``) of QI ``j``."""
        key = (j, a, b)
        u = self._up.get(key)
        if u is None:
            lm = self.lvmap[j]
            first = np.searchsorted(lm[a], np.arange(self.n_nodes[j][a]), side="left")
            u = lm[b][first].astype(np.int64)
            self._up[key] = u
        return u

    def _delta(self, j: int, a: int, b: int) -> np.ndarray:
        """``(up[c] − c) << shift_j`` for every compact code ``c`` of QI ``j`` at level ``a``: the key
        change when QI ``j`` goes from level ``a`` to ``b``."""
        key = (j, a, b, "d")
        d = self._up.get(key)
        if d is None:
            u = self.up(j, a, b)
            d = (u - np.arange(len(u), dtype=np.int64)) << self.shift[j]
            self._up[key] = d
        return d

    def _base(self) -> FrequencySet:
        """Frequency set of the bottom node ``(0, …, 0)`` straight from the rows (a weighted table's
        rows count their weight)."""
        lv = tuple([0] * self.q)
        m = self.n_tuples
        counts = self.table.row_weights().copy()
        hist = None
        if self.need_hist:
            sens = self.table.sens_codes
            hist = self.hist_layout.pack(m, [sens[:, s] for s in range(len(self.sens_offsets))], counts)
        if self.wide:
            fs = FrequencySet(lv, None, counts, hist, codes=self.leaf_compact.astype(np.int32))
        else:
            # each row's key straight from its leaf codes: a lookup of leaf → compact code << shift
            # per QI (no (n, q) array of compact codes is made)
            key = np.zeros(m, dtype=np.int64)
            codes = self.table.qi_codes
            for j in range(self.q):
                key += (self.leaf_lookup[j] << self.shift[j]).take(codes[:, j])
            fs = FrequencySet(lv, key, counts, hist)
        return self._group(fs, lv, fs.keys, fs.codes, presorted=False, runs=False, unit=self.table.weights is None)

    @property
    def leaf_compact(self) -> np.ndarray:
        """``(n_tuples, q)`` int64 compact leaf code of every row and QI (column-major: every use
        reads one QI's column), made on first use."""
        if self._leaf_compact is None:
            out = np.empty((self.n_tuples, self.q), dtype=np.int64, order="F")
            for j in range(self.q):
                self.leaf_lookup[j].take(self.table.qi_codes[:, j], out=out[:, j])
            self._leaf_compact = out
        return self._leaf_compact

    def histograms(self, fs: FrequencySet, rows: np.ndarray | None = None) -> list[np.ndarray]:
        """Per sensitive attribute, the ``(m, V_s)`` int64 value counts of every tuple of ``fs`` — or
        of its tuples ``rows`` (an index array) — unpacked from :attr:`FrequencySet.hist`; empty
        without histograms."""
        if fs.hist is None:
            return []
        return self.hist_layout.unpack(fs.hist if rows is None else np.take(fs.hist, rows, axis=0))

    # ------------------------------------------------------------------ roll-up
    def _radix_order(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(order, keys[order])`` sorting ``keys`` (at most 48 bits) stably, by an LSD radix sort over
        16-bit digits: numpy's stable sort of uint16 values is a counting sort, linear in the keys,
        where a comparison sort of int64 is not (18,000 keys: 63 us a digit against 500 us)."""
        order = None
        sk = keys
        for lo in range(0, max(self.key_bits, 1), 16):
            digit = (sk >> lo).astype(np.uint16) if lo else sk.astype(np.uint16)  # the low 16 bits
            step = np.argsort(digit, kind="stable")
            order = step if order is None else order[step]
            sk = sk[step]
        assert order is not None
        return order, sk

    def _positions(self, m: int) -> np.ndarray:
        """``0 … m − 1`` as int64, a view of one array kept for all roll-ups (read only)."""
        ar = self._arange
        if len(ar) < m:
            ar = self._arange = np.arange(max(m, 2 * len(ar)), dtype=np.int64)
            ar.flags.writeable = False
        return ar[:m]

    def _group(
        self, src: FrequencySet, levels: tuple, keys, codes, presorted: bool, runs: bool = True, unit: bool = False
    ) -> FrequencySet:
        """Merge equal tuples: sort (unless already sorted), find runs, add counts/histograms.
        ``runs``: the keys are sorted runs (a roll-up's), so a merging sort is used; the rows' keys
        (the bottom node) are in no order, and quicksort is faster there (the packed keys are
        distinct, so both sorts give the same order). ``unit``: every count is 1 (an unweighted
        table's rows), so a merged tuple's count is its run's length."""
        m = len(src.counts)
        counts, hist = src.counts, src.hist
        if m == 0:
            return FrequencySet(levels, keys, counts, hist, codes)
        order: np.ndarray | None
        if self.wide:
            cid, nc = equivalence_classes(codes)
            order = np.argsort(cid, kind="stable")
            sk = cid[order]
            flag = np.empty(m, dtype=bool)
            flag[0] = True
            np.not_equal(sk[1:], sk[:-1], out=flag[1:])
            starts = np.flatnonzero(flag)
            new_codes = codes[order[starts]]
            return FrequencySet(
                levels,
                None,
                np.add.reduceat(counts[order], starts),
                None if hist is None else np.add.reduceat(np.take(hist, order, axis=0), starts, axis=0),
                codes=new_codes,
            )
        if presorted:
            sk = keys
            order = None
        else:
            b = int(m - 1).bit_length()
            if b == 0:
                sk, order = keys, None
            elif m >= self.radix_min and self.key_bits <= 48:
                order, sk = self._radix_order(keys)
            elif runs or (self.key_space << b) >= 2**63:
                # the keys are sorted runs of the source (one per combination of the changed
                # attributes' old values): a merging sort (timsort) takes about half quicksort's time
                order = np.argsort(keys, kind="stable")
                sk = keys.take(order)
            else:
                packed = np.left_shift(keys, b)  # rows in no order: quicksort of key << b | position
                packed |= self._positions(m)
                packed.sort(kind="quicksort")  # in place: no copy
                order = packed & ((1 << b) - 1)
                sk = packed >> b
        flag = np.empty(m, dtype=bool)
        flag[0] = True
        np.not_equal(sk[1:], sk[:-1], out=flag[1:])
        starts = np.flatnonzero(flag)
        in_hist = hist is not None and self.hist_layout.count_lane is not None  # counts ride in a lane
        if len(starts) == m:
            if order is None:
                return FrequencySet(levels, sk, counts, hist)
            if hist is None:
                return FrequencySet(levels, sk, counts.take(order))
            hh = np.take(hist, order, axis=0)
            return FrequencySet(levels, sk, self.hist_layout.counts(hh) if in_hist else counts.take(order), hh)
        new_hist = None
        if hist is not None:
            hh = hist if order is None else np.take(hist, order, axis=0)  # a row gather: faster than hist[order]
            new_hist = np.add.reduceat(hh, starts, axis=0)
        if in_hist:
            assert new_hist is not None
            new_counts = self.hist_layout.counts(new_hist)
        elif unit:
            new_counts = np.diff(starts, append=m)
        else:
            new_counts = np.add.reduceat(counts if order is None else counts.take(order), starts)
        return FrequencySet(levels, sk.take(starts), new_counts, new_hist)

    def rollup(self, src: FrequencySet, levels) -> FrequencySet:
        """Frequency set of ``levels`` (internal levels, each ≥ ``src.levels``) from ``src``
        (Incognito's rollup property: counts of merged tuples add up)."""
        levels = tuple(levels)
        self.rows_scanned += src.size
        changed = [j for j in range(self.q) if levels[j] != src.levels[j]]
        if not changed:
            return src
        for j in changed:
            if levels[j] < src.levels[j]:
                raise ValueError(f"cannot roll {src.levels} up to {levels}: not a generalization")
        if self.wide:
            assert src.codes is not None
            codes = src.codes.copy()
            for j in changed:
                codes[:, j] = self.up(j, src.levels[j], levels[j])[codes[:, j]]
            return self._group(src, levels, None, codes, presorted=False)
        src_keys = src.keys
        assert src_keys is not None
        # attributes own disjoint bit fields and a delta stays within its field, so every changed
        # attribute's codes are read from the source's keys
        keys = None
        for j in changed:
            c = src_keys >> self.shift[j]
            c &= self.mask[j]
            d = self._delta(j, src.levels[j], levels[j]).take(c)
            if keys is None:
                keys = src_keys + d
            else:
                keys += d
        assert keys is not None
        # a strictly increasing map (no two present nodes merge) keeps keys sorted and distinct
        if all(self.n_nodes[j][levels[j]] == self.n_nodes[j][src.levels[j]] for j in changed):
            return FrequencySet(levels, keys, src.counts, src.hist)
        # a non-decreasing map on the last varying attribute keeps keys sorted (runs merge)
        presorted = len(changed) == 1 and all(self.n_nodes[i][levels[i]] == 1 for i in range(changed[0] + 1, self.q))
        return self._group(src, levels, keys, None, presorted=presorted)

    def cached(self, levels) -> FrequencySet | None:
        """The cached frequency set of a node (internal levels), or None."""
        slot = self._cache.get(tuple(levels))
        return None if slot is None else self._slots[slot]

    def frequency_set(self, levels, source: FrequencySet | None = None) -> FrequencySet:
        """Frequency set of a node (internal levels): cached, or rolled up from ``source`` if given,
        else from the smallest cached direct child, else from the bottom node."""
        levels = tuple(levels)
        fs = self.cached(levels)
        if fs is not None:
            return fs
        if source is None:
            source = self.best_child(levels) or self.base
        return self.rollup(source, levels)

    def best_child(self, levels: tuple) -> FrequencySet | None:
        """The smallest cached direct specialization (one attribute one level lower), or None."""
        best = None
        for j in range(self.q):
            if levels[j] > 0:
                slot = self._cache.get(levels[:j] + (levels[j] - 1,) + levels[j + 1 :])
                if slot is not None:
                    fs = self._slots[slot]
                    if best is None or fs.size < best.size:
                        best = fs
        return best

    def best_cached(self, levels) -> FrequencySet:
        """The smallest cached specialization of ``levels`` (any distance), else the bottom node.
        One vectorized comparison against the cache's level matrix."""
        if not self._cache:
            return self.base
        used = len(self._slots)
        probe = np.zeros(self._lv_cols, dtype=np.int16)
        probe[: self.q] = levels
        words = (self._slot_lv[:used] <= probe).view(np.uint64)  # 8 comparisons per word
        ok = words[:, 0] == _ALL_TRUE if words.shape[1] == 1 else (words == _ALL_TRUE).all(axis=1)
        sizes = np.where(ok, self._slot_size[:used], _I64MAX)
        slot = int(np.argmin(sizes))
        if sizes[slot] >= self.base.size:
            return self.base
        return self._slots[slot]

    def source_for(self, levels) -> FrequencySet:
        """Best roll-up source for a node (internal levels): a cached direct child, else the smallest
        cached specialization; when that is the bottom node, the node's *hub* — every generalized
        attribute at level 1, dropped attributes kept dropped (:meth:`hub`) — which later nodes
        above the same hub share: Incognito's super-root idea applied to any search order."""
        levels = tuple(levels)
        src = self.best_child(levels) or self.best_cached(levels)
        if src is self.base:
            h = tuple(lv if lv > self.heights[j] else min(lv, 1) for j, lv in enumerate(levels))
            if any(lv <= self.heights[j] for j, lv in enumerate(h)):
                src = self.hub(h)  # may be the node itself (levels in {0, 1, dropped})
        return src

    def hub(self, levels) -> FrequencySet:
        """Frequency set of a hub node (levels in {0, 1, dropped}), kept apart from the cache (up to
        :attr:`hub_rows` rows) and computed from another hub with one dropped attribute restored —
        the one with the fewest level-1 values, or a cached one — down to the bottom node; so the
        hubs of all attribute subsets (Incognito) cost about their own size, not the table's."""
        levels = tuple(levels)
        fs = self._hubs.get(levels)
        if fs is not None:
            return fs
        dropped = [j for j in range(self.q) if levels[j] > self.heights[j]]
        if not dropped:
            src = self.base
        else:
            parents = [levels[:j] + (min(1, self.heights[j]),) + levels[j + 1 :] for j in dropped]
            have = [self._hubs[p] for p in parents if p in self._hubs]
            if have:
                src = min(have, key=lambda f: f.size)
            else:
                j = min(dropped, key=lambda a: (self.n_nodes[a][min(1, self.heights[a])], a))
                src = self.hub(levels[:j] + (min(1, self.heights[j]),) + levels[j + 1 :])
        fs = self.rollup(src, levels)
        if self._hub_rows + fs.size <= self.hub_rows:
            self._hubs[levels] = fs
            self._hub_rows += fs.size
        self.remember(fs)
        return fs

    def remember(self, fs: FrequencySet) -> None:
        """Keep ``fs`` as a roll-up source (bounded by :attr:`cache_rows`; oldest dropped first)."""
        if fs.levels in self._cache or fs is self.base:
            return
        if self._free:
            slot = self._free.pop()
            self._slots[slot] = fs
        else:
            slot = len(self._slots)
            self._slots.append(fs)
            if slot >= len(self._slot_size):
                cap = max(64, 2 * len(self._slot_size))
                lv = np.zeros((cap, self._lv_cols), dtype=np.int16)  # pad columns stay 0
                lv[:, : self.q] = _I16MAX
                lv[: len(self._slot_lv)] = self._slot_lv
                sz = np.full(cap, _I64MAX, dtype=np.int64)
                sz[: len(self._slot_size)] = self._slot_size
                self._slot_lv, self._slot_size = lv, sz
        self._slot_lv[slot, : self.q] = fs.levels
        self._slot_size[slot] = fs.size
        self._cache[fs.levels] = slot
        self._order.append(fs.levels)
        self._cache_rows += fs.size
        while self._cache_rows > self.cache_rows and self._order:
            self._drop(self._order.popleft())

    def _drop(self, levels) -> None:
        slot = self._cache.pop(tuple(levels), None)
        if slot is None:
            return
        self._cache_rows -= self._slots[slot].size
        self._slots[slot] = None
        self._slot_lv[slot, : self.q] = _I16MAX
        self._slot_size[slot] = _I64MAX
        self._free.append(slot)

    def forget(self, levels_iter=None) -> None:
        """Drop cached frequency sets (all, or the given internal level vectors)."""
        if levels_iter is None:
            for lv in list(self._cache):
                self._drop(lv)
            self._order.clear()
            return
        for lv in levels_iter:
            self._drop(lv)

    def row_codes(self, levels) -> np.ndarray:
        """(n_tuples, q) compact node codes of every row at a node (internal levels), from the rows."""
        codes = np.empty((self.n_tuples, self.q), dtype=np.int64)
        for j in range(self.q):
            codes[:, j] = self.lvmap[j][levels[j]][self.leaf_compact[:, j]]
        return codes

    def tuple_codes(self, fs: FrequencySet) -> np.ndarray:
        """(m, q) compact node codes of a frequency set's tuples."""
        if fs.codes is not None:
            return fs.codes.astype(np.int64)
        out = np.empty((fs.size, self.q), dtype=np.int64)
        assert fs.keys is not None
        for j in range(self.q):
            out[:, j] = (fs.keys >> self.shift[j]) & self.mask[j]
        return out
