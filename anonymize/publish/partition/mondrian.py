"""Mondrian multidimensional partitioning (LeFevre, DeWitt, Ramakrishnan, "Mondrian
multidimensional k-anonymity", ICDE 2006; Aggarwal, *Data Mining: The Textbook*, Springer 2015,
§20.3.1.3).

Model. Start with the whole table as one partition (it satisfies the models, or nothing can).
Repeatedly take a partition and cut it along one quasi-identifier into parts that **each satisfy
every privacy model** (an *allowable* cut); stop when no allowable cut exists. Each final
partition is an equivalence class, released as its bounding box. The greedy loop
(LeFevre et al. 2006):

1. compute each QI's normalized span in the partition and try the QIs widest first;
2. cut at the median; if both sides satisfy the models, replace the partition by them,
   else try the next QI; a partition no QI can cut is final.

Cuts used here (all on integer codes, :mod:`.table`):

* **numeric QI, strict** — the median value ``v`` of the partition; the two candidate cuts
  "≤ v | > v" and "< v | ≥ v" (they differ only when ``v`` repeats) are tried, the more balanced
  first. Parts never overlap (strict multidimensional partitioning, LeFevre §3).
* **numeric QI, relaxed** — the rows sorted by value are cut at the middle position, so rows with
  the median value may go to both sides (relaxed partitioning, LeFevre §3); if that cut is not
  allowable the strict candidates are tried.
* **categorical QI** (hierarchy-aware, both modes) — the partition's values lie under their lowest
  common ancestor ``N`` in the hierarchy; the cut separates ``N``'s children: every child whose
  rows satisfy the models becomes a part, the children that do not are pooled into one remainder
  part (published under their common ancestor); if the remainder does not satisfy the models it
  joins the smallest satisfying child. Allowable when at least two parts result.

Normalized span (the order QIs are tried in) is the QI's information loss if the partition were
published now, in the NCP flavour reported (:func:`.metrics.ncp`): numeric ``(max − min)/(max −
min over the table)``; categorical ``level(N)/height`` (Jiang, Zeng, Ma, "Greedy
clustering-anonymity method for privacy preservation of table data-publishing", Journal of
Software 28(2), 2017, §2.2.2; or ``(leaves under N − 1)/(leaves − 1)`` with
``categorical_span='leaves'``); ties broken by the number of leaves under ``N``, then column
order. On Adult (k = 5) the height span gives NCP 0.084 against 0.094 for the
leaves span.

Attribute weights (``weights``, ``ppdm anonymize --weights``). The weighted NCP is ``Σ_j w_j·NCP_j /
Σ_j w_j`` (Xu, Wang, Pei, Wang, Shi, Fu, "Utility-based anonymization using local recoding", KDD
2006, weighted certainty penalty; :func:`.metrics.loss.weighted_mean`), the metric the full-domain
searches minimize. With weights the QIs are tried in decreasing ``w_j·span_j`` (``w_j`` divided by
the largest weight, as ARX normalizes them: :func:`.metrics.loss.arx_weights`), ties broken by the
unweighted span, then as above: the heaviest QI is cut first and as long as its weighted span
leads, so its cells end narrower and its NCP — the term the weighted mean stresses — falls. A QI of
weight 0 is still cut, last (a cut on it still lets the partition be cut further on the others).
Equal weights give ``w_j = 1`` exactly, hence exactly the unweighted partition.

Allowability uses any :class:`.models.PrivacyModel` (k, l, t), so k-anonymity, l-diversity and
t-closeness partitions all come from the same loop; t-closeness is checked against the whole
table's distribution.

Vectorization. Partitions are processed breadth-first in rounds: all active partitions live as
contiguous segments of one row array; spans are ``np.minimum/maximum.reduceat`` over the
segments; the median / children of every partition that tries QI ``j`` come from one packed sort
of ``(segment, code)`` keys (``np.sort`` on ``key << b | position``); models are checked for all
candidate parts at once on ``np.bincount`` histograms. The work list is an explicit array of
segments — no recursion — and a round costs O(n·q), so the whole run is O(n·q·depth).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import AnonymizeError
from ..classes import ClassChecker
from ..metrics.loss import arx_weights, attribute_weights
from ..models import PrivacyModel, check_fits
from ..registry import PARTITION, PartitionResult, register
from ..table import EncodedTable

__all__ = ["mondrian", "MondrianResult", "MODES", "partition_spans", "dimension_order"]

MODES = ("strict", "relaxed")


@dataclass
class MondrianResult(PartitionResult):
    """Partition found by :func:`mondrian` (a :class:`..registry.PartitionResult`): ``class_id``
    per row (``0..n_classes-1``), class ``sizes``, the ``mode`` and counters in ``stats``
    (rounds, cuts per QI, seconds)."""

    mode: str = "strict"


def _sort_order(key: np.ndarray, key_max: int) -> np.ndarray:
    """Stable order of ``key`` (non-negative int64): one ``np.sort`` of ``key << b | position``
    when it fits in 63 bits, else ``argsort(kind='stable')``."""
    m = len(key)
    if m <= 1:
        return np.arange(m, dtype=np.int64)
    b = int(m - 1).bit_length()
    if (int(key_max) + 1) << b < 2**63:
        packed = np.sort((key << b) | np.arange(m, dtype=np.int64))
        return packed & ((1 << b) - 1)
    return np.argsort(key, kind="stable")


class _Attr:
    """Per-QI lookup arrays: leaf values (numeric), ancestor first/last leaf per level."""

    def __init__(self, h, codes: np.ndarray, categorical: str = "height"):
        self.h = h
        self.categorical = categorical
        self.numeric = bool(h.numeric)
        self.L = h.n_leaves
        self.H = h.height
        if self.numeric:
            self.vals = np.asarray(h.leaves, dtype=np.float64)
            lo, hi = self.vals[codes.min()], self.vals[codes.max()]
            self.range = float(hi - lo)
        else:
            first = np.empty((self.H + 1, self.L), dtype=np.int64)
            last = np.empty((self.H + 1, self.L), dtype=np.int64)
            for lv in range(self.H + 1):
                f, l_ = h.node_span(lv)
                node = h.maps[lv]
                first[lv] = f[node]
                last[lv] = l_[node]
            self.first, self.last = first, last

    def lca_level(self, mn: np.ndarray, mx: np.ndarray) -> np.ndarray:
        """Level of the lowest common ancestor of leaf codes ``mn`` and ``mx`` (per partition)."""
        return self.h.level_of_span(mn, mx)

    def span(self, mn: np.ndarray, mx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Normalized span and tie-break per partition (see module docstring)."""
        if self.numeric:
            w = self.vals[mx] - self.vals[mn]
            return (w / self.range if self.range > 0 else np.zeros(len(mn))), w
        lev = self.lca_level(mn, mx)
        under = (self.last[lev, mn] - self.first[lev, mn] + 1).astype(np.float64)
        if self.categorical == "height":
            return (lev / self.H if self.H else np.zeros(len(mn))), under
        return ((under - 1) / (self.L - 1) if self.L > 1 else np.zeros(len(mn))), under


@register(
    "mondrian",
    kind=PARTITION,
    summary="Mondrian: multidimensional median cuts, strict or relaxed (LeFevre, DeWitt, Ramakrishnan 2006)",
    options=("mode", "weights"),
)
def mondrian(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    mode: str = "strict",
    progress: Callable[[str], None] | None = None,
    categorical_span: str = "height",
    weights: Mapping[str, float] | None = None,
) -> MondrianResult:
    """Partition ``table`` with Mondrian so that every class satisfies every model in ``models``.

    ``mode``: ``'strict'`` or ``'relaxed'`` (numeric cuts; see module docstring).
    ``categorical_span``: how wide a categorical QI is, matching the NCP flavour of
    :func:`.metrics.ncp` — ``'height'`` (level of the lowest common ancestor / hierarchy height,
    Jiang, Zeng, Ma 2017, §2.2.2; default) or ``'leaves'`` ((leaves under it − 1)/(leaves − 1)).
    ``weights``: ``{qi: weight ≥ 0}`` (unnamed QIs 1; :func:`.metrics.loss.attribute_weights`), the
    attribute weights of the weighted NCP (Xu et al., KDD 2006): the QI cut first is the one with the
    largest weight × normalized span (module docstring); None or equal weights: the unweighted order.
    Raises :class:`AnonymizeError` when the whole table already fails the models (e.g. k > n, or l
    larger than the number of sensitive values) and for a bad weight (one line).
    """
    if mode not in MODES:
        raise AnonymizeError(f"unknown Mondrian mode '{mode}' (use {' or '.join(MODES)})")
    if not models:
        raise AnonymizeError("no privacy model given (e.g. k-anonymity with --k)")
    t0 = time.perf_counter()
    n, q = table.qi_codes.shape
    if table.weights is not None and mode == "relaxed":
        raise AnonymizeError(
            "relaxed Mondrian cuts between rows with equal values, which a weighted table (an engine's distinct "
            "rows) cannot do: use the strict mode, or the memory engine"
        )
    w = table.row_weights()
    N = table.n
    check_fits(models, N)
    chk = ClassChecker(table, models)
    X = [np.ascontiguousarray(table.qi_codes[:, j]) for j in range(q)]
    if categorical_span not in ("height", "leaves"):
        raise AnonymizeError(f"unknown categorical span '{categorical_span}' (use height or leaves)")
    attrs = [_Attr(h, X[j], categorical_span) for j, h in enumerate(table.hierarchies)]
    qi_w = attribute_weights(table.schema.qis, weights)
    scale = None if qi_w is None else arx_weights(qi_w, q)  # w_j / max w (all 1 for equal weights)
    act = np.arange(n, dtype=np.int64)
    if not chk.ok(np.zeros(n, dtype=np.int64), act, 1, np.array([N]))[0]:
        raise AnonymizeError(
            "the whole table does not satisfy the privacy models, so no partition can; relax k / l / t"
        )
    psize = np.array([n], dtype=np.int64)  # code rows per partition
    pweight = np.array([N], dtype=np.int64)  # rows the partition stands for (= psize unweighted)
    class_id = np.empty(n, dtype=np.int64)
    next_id = 0
    rounds = 0
    cuts = {name: 0 for name in table.schema.qis}
    while len(psize):
        rounds += 1
        P = len(psize)
        pstart = np.zeros(P, dtype=np.int64)
        np.cumsum(psize[:-1], out=pstart[1:])
        row_part = np.repeat(np.arange(P, dtype=np.int64), psize)
        spans = np.empty((P, q))
        ties = np.empty((P, q))
        mins = np.empty((q, P), dtype=np.int64)
        maxs = np.empty((q, P), dtype=np.int64)
        for j in range(q):
            v = X[j][act]
            mins[j] = np.minimum.reduceat(v, pstart)
            maxs[j] = np.maximum.reduceat(v, pstart)
            spans[:, j], ties[:, j] = attrs[j].span(mins[j], maxs[j])
        order = _dimension_order(spans, ties, scale)
        done = np.zeros(P, dtype=bool)
        new_rows, new_sizes, new_weights = [], [], []
        for r in range(q):
            dim = order[:, r]
            trying = ~done & (spans[np.arange(P), dim] > 0)
            if not trying.any():
                break
            dim = np.where(trying, dim, -1)
            for j in np.unique(dim[trying]).tolist():
                sel = np.flatnonzero(dim == j)
                rmask = dim[row_part] == j
                rows = act[rmask]
                seg = np.searchsorted(sel, row_part[rmask])
                if attrs[j].numeric:
                    ok, rows_out, sizes_out, weights_out = _split_numeric(
                        rows, seg, psize[sel], pweight[sel], X[j], attrs[j], chk, mode, w
                    )
                else:
                    ok, rows_out, sizes_out, weights_out = _split_categorical(
                        rows, seg, psize[sel], X[j], attrs[j], chk, mins[j][sel], maxs[j][sel], w
                    )
                done[sel[ok]] = True
                cuts[table.schema.qis[j]] += int(ok.sum())
                new_rows.append(rows_out)
                new_sizes.append(sizes_out)
                new_weights.append(weights_out)
        fin = ~done
        if fin.any():
            rank = np.cumsum(fin) - 1
            fmask = fin[row_part]
            class_id[act[fmask]] = next_id + rank[row_part[fmask]]
            next_id += int(fin.sum())
        act = np.concatenate(new_rows) if new_rows else np.zeros(0, dtype=np.int64)
        psize = np.concatenate(new_sizes) if new_sizes else np.zeros(0, dtype=np.int64)
        pweight = np.concatenate(new_weights) if new_weights else np.zeros(0, dtype=np.int64)
        if progress:
            progress(f"mondrian: round {rounds}: {next_id} classes final, {len(psize)} partitions to cut")
    sizes = np.bincount(class_id, weights=table.weights, minlength=next_id).astype(np.int64)
    stats = {"rounds": rounds, "cuts": cuts, "classes": next_id, "seconds": time.perf_counter() - t0}
    return MondrianResult(class_id, next_id, sizes, stats, mode=mode)


def partition_spans(
    hierarchies, mins: np.ndarray, maxs: np.ndarray, low: np.ndarray, high: np.ndarray, categorical: str = "height"
) -> tuple[np.ndarray, np.ndarray]:
    """Normalized spans and tie-breaks ``(P, q)`` of partitions given their boxes: per QI the smallest
    and largest leaf code present (``mins`` / ``maxs``, ``(P, q)``; for a categorical QI any two
    leaves whose lowest common ancestor is the partition's), and the whole table's smallest and
    largest leaf codes (``low`` / ``high``, ``(q,)``: a numeric QI's range). What :func:`mondrian`
    orders the QIs of a partition by; joint Mondrian (:mod:`parties.joint.publishing_mondrian`)
    orders them the same way from boxes computed jointly."""
    P, q = mins.shape
    spans = np.empty((P, q))
    ties = np.empty((P, q))
    for j, h in enumerate(hierarchies):
        attr = _Attr(h, np.array([low[j], high[j]], dtype=np.int64), categorical)
        spans[:, j], ties[:, j] = attr.span(mins[:, j], maxs[:, j])
    return spans, ties


def dimension_order(spans: np.ndarray, ties: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """Per partition the QIs in the order :func:`mondrian` tries them (:func:`_dimension_order`)."""
    return _dimension_order(spans, ties, scale)


def _dimension_order(spans: np.ndarray, ties: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """Per partition (row of ``spans`` / ``ties``, ``(P, q)``) the QIs in the order they are tried:
    widest normalized span first, then the tie-break of :meth:`_Attr.span`, then column order
    (LeFevre et al. 2006, choose_dimension); with attribute weights ``scale`` (``(q,)``, the largest 1)
    the largest ``scale_j·span_j`` first, the unweighted keys breaking ties (Xu et al. 2006's weighted
    NCP; module docstring). ``scale`` of ones gives the unweighted order exactly."""
    P, q = spans.shape
    if q == 1:
        return np.zeros((P, 1), dtype=np.int64)
    keys: tuple[np.ndarray, ...] = (np.broadcast_to(np.arange(q), (P, q)), -ties, -spans)
    if scale is not None:
        keys += (-(spans * scale),)
    return np.lexsort(keys, axis=1)


def _seg_starts(sizes: np.ndarray) -> np.ndarray:
    st = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=st[1:])
    return st


def _two_way_ok(chk: ClassChecker, rows_s, seg_s, starts, sizes, wsizes, cut, wcut) -> np.ndarray:
    """Both sides of ``cut`` (a position per segment, rows sorted within segments) satisfy the models;
    ``wsizes`` / ``wcut`` are the segment's and the left side's weights (= ``sizes`` / ``cut`` unweighted)."""
    valid = (cut > 0) & (cut < sizes)
    if chk.size_only:
        return valid & (wcut >= chk.min_size) & (wsizes - wcut >= chk.min_size)
    B = len(sizes)
    pos = np.arange(len(rows_s), dtype=np.int64) - starts[seg_s]
    side = (pos >= cut[seg_s]).astype(np.int64)
    part = seg_s * 2 + side
    psz = np.stack([wcut, wsizes - wcut], axis=1).ravel()
    ok = chk.ok(part, rows_s, 2 * B, psz).reshape(B, 2)
    return valid & ok[:, 0] & ok[:, 1]


def _emit(ok, rows_s, seg_s, child_sizes_2d):
    """Rows of the segments that were cut (still grouped, parts contiguous) and their part sizes."""
    keep = ok[seg_s]
    return rows_s[keep], child_sizes_2d[ok].ravel()


def _split_numeric(rows, seg, sizes, wsizes, col, attr: _Attr, chk: ClassChecker, mode: str, w):
    """Median cut of every segment on a numeric QI; returns ``(ok per segment, rows, part sizes, part
    weights)``. The median is the weighted one: the value at row ``(W − 1) // 2`` of the segment's rows
    repeated by weight (the same value as for the expanded rows)."""
    B = len(sizes)
    L = attr.L
    vals = col[rows].astype(np.int64)
    key = seg * L + vals
    order = _sort_order(key, B * L)
    rows_s, key_s, seg_s = rows[order], key[order], seg[order]
    starts = _seg_starts(sizes)
    cw0 = np.zeros(len(rows_s) + 1, dtype=np.int64)  # cw0[i] = weight of the first i sorted rows
    np.cumsum(w[rows_s], out=cw0[1:])
    base = cw0[starts]
    mid = np.searchsorted(cw0, base + (wsizes - 1) // 2, side="right") - 1
    v = key_s[mid]
    c_le = np.searchsorted(key_s, v, side="right") - starts  # rows ≤ median value
    c_lt = np.searchsorted(key_s, v, side="left") - starts  # rows < median value
    w_le, w_lt = cw0[starts + c_le] - base, cw0[starts + c_lt] - base
    half = wsizes / 2.0
    a_first = np.abs(w_le - half) <= np.abs(w_lt - half)
    cand = [
        (np.where(a_first, c_le, c_lt), np.where(a_first, w_le, w_lt)),
        (np.where(a_first, c_lt, c_le), np.where(a_first, w_lt, w_le)),
    ]
    if mode == "relaxed":  # unweighted only (refused in :func:`mondrian`)
        cand.insert(0, (sizes // 2, sizes // 2))
    cut = np.full(B, -1, dtype=np.int64)
    wcut = np.zeros(B, dtype=np.int64)
    for c, wc in cand:
        todo = cut < 0
        if not todo.any():
            break
        ok = _two_way_ok(chk, rows_s, seg_s, starts, sizes, wsizes, c, wc) & todo
        cut[ok] = c[ok]
        wcut[ok] = wc[ok]
    ok = cut >= 0
    rows_out, sizes_out = _emit(ok, rows_s, seg_s, np.stack([cut, sizes - cut], axis=1))
    return ok, rows_out, sizes_out, np.stack([wcut, wsizes - wcut], axis=1)[ok].ravel()


def _split_categorical(rows, seg, sizes, col, attr: _Attr, chk: ClassChecker, mn, mx, w):
    """Cut every segment into the children of its values' lowest common ancestor (module docstring);
    returns ``(ok per segment, rows, part sizes, part weights)`` (sizes of a child count weights)."""
    B = len(sizes)
    L = attr.L
    lev = attr.lca_level(mn, mx)  # ≥ 1 since the span is > 0
    vals = col[rows].astype(np.int64)
    child_first = attr.first[lev[seg] - 1, vals]
    key = seg * L + child_first
    order = _sort_order(key, B * L)
    rows_s, key_s, seg_s = rows[order], key[order], seg[order]
    m = len(rows_s)
    flag = np.empty(m, dtype=bool)
    flag[0] = True
    np.not_equal(key_s[1:], key_s[:-1], out=flag[1:])
    gstart = np.flatnonzero(flag)
    G = len(gstart)
    gsize = np.add.reduceat(w[rows_s], gstart) if G else np.zeros(0, dtype=np.int64)  # rows (weights) per child
    gseg = seg_s[gstart]
    group_of_row = np.cumsum(flag) - 1
    g_ok = chk.ok(group_of_row, rows_s, G, gsize)
    n_ok = np.bincount(gseg, weights=g_ok, minlength=B).astype(np.int64)
    fail_g = ~g_ok
    rem_size = np.bincount(gseg[fail_g], weights=gsize[fail_g], minlength=B).astype(np.int64)
    has_rem = rem_size > 0
    # does the pooled remainder satisfy the models?
    if chk.size_only:
        rem_ok = rem_size >= chk.min_size
    else:
        rrow = fail_g[group_of_row]
        rem_ok = chk.ok(seg_s[rrow], rows_s[rrow], B, rem_size)
    need_merge = has_rem & ~rem_ok
    # merge target: the smallest satisfying child of the segment
    okg = np.flatnonzero(g_ok)
    tgt = np.full(B, -1, dtype=np.int64)
    if len(okg):
        o = okg[np.lexsort((gsize[okg], gseg[okg]))]
        firsts = np.r_[True, gseg[o][1:] != gseg[o][:-1]]
        tgt[gseg[o][firsts]] = o[firsts]
    merge_ok = tgt >= 0
    if need_merge.any() and not chk.size_only:
        # check target ∪ remainder
        in_merge = need_merge[gseg] & (fail_g | (np.arange(G) == tgt[gseg]))
        mrow = in_merge[group_of_row]
        msize = np.bincount(gseg[in_merge], weights=gsize[in_merge], minlength=B).astype(np.int64)
        mok = chk.ok(seg_s[mrow], rows_s[mrow], B, msize)
        merge_ok &= mok
    n_parts = n_ok + (has_rem & ~need_merge)
    ok = (n_parts >= 2) & (~need_merge | merge_ok)
    # part number of every group: satisfying children 0.., remainder last or merged into the target
    rank = np.cumsum(g_ok) - 1
    first_ok_rank = np.zeros(B, dtype=np.int64)
    if len(okg):
        seg_first = np.full(B, -1, dtype=np.int64)
        # rank of the first satisfying group per segment
        fr = np.r_[True, gseg[okg][1:] != gseg[okg][:-1]]
        seg_first[gseg[okg][fr]] = rank[okg][fr]
        first_ok_rank = np.where(seg_first >= 0, seg_first, 0)
    part_g = np.where(g_ok, rank - first_ok_rank[gseg], n_ok[gseg])
    merged = fail_g & need_merge[gseg]
    if merged.any():
        tg = tgt[gseg[merged]]
        part_g[merged] = np.where(tg >= 0, rank[np.maximum(tg, 0)] - first_ok_rank[gseg[merged]], 0)
    maxp = int(part_g.max()) + 1 if G else 1
    part_row = part_g[group_of_row]
    key2 = seg_s * maxp + part_row
    order2 = _sort_order(key2, B * maxp)
    rows2, seg2, key2s = rows_s[order2], seg_s[order2], key2[order2]
    keep = ok[seg2]
    rows_out = rows2[keep]
    k2 = key2s[keep]
    if len(k2):
        f2 = np.r_[True, k2[1:] != k2[:-1]]
        st2 = np.flatnonzero(f2)
        sizes_out = np.diff(np.r_[st2, len(k2)]).astype(np.int64)
        weights_out = np.add.reduceat(w[rows_out], st2).astype(np.int64)
    else:
        sizes_out = np.zeros(0, dtype=np.int64)
        weights_out = np.zeros(0, dtype=np.int64)
    return ok, rows_out, sizes_out, weights_out
