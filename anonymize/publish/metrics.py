"""Utility and risk metrics of a release.

A release is described in code space, whatever algorithm produced it: for every row
and QI a **cell** ``[lo, hi]`` of leaf codes (the hierarchy node or range the value
was generalized to — hierarchies keep every node a contiguous leaf-code run, see
:mod:`.hierarchy`), plus a ``suppressed`` row mask. Full-domain results get cells from
:func:`boxes_from_levels`; partition results (Mondrian, clustering) from
:func:`class_boxes`. Suppressed rows count as fully generalized (``*`` in every QI),
as ARX publishes them.

Utility
  * :func:`ncp` — normalized information loss in [0, 1]: numeric (max−min)/(range of the
    attribute in the table) (seed 002 §2.2.1, seed 004 def. 1.1); categorical h(v,v*)/h(v,root)
    (seed 002 §2.2.2) or card(node)/|A| (Xu et al. 2006, ``categorical='leaves'``).
  * :func:`gaacp_iloss` — seed 002's total iloss(T, A^q) = Σ_r Σ_i iloss(C_r, A_i).
  * :func:`il_total` — seed 004 def. 1.1/1.2: IL(e) = |e|·(Σ (max−min)/|N_i| + Σ distinct_j/|C_j|),
    total_IL = Σ_e IL(e).
  * :func:`discernibility` — DM = Σ|E|² + |S|·n (seed 004 def. 1.3; Bayardo & Agrawal 2005).
  * :func:`cdm` — seed 003's class-size metric (see its docstring for the reconstruction).
  * :func:`average_class_size` — C_avg = (n/|E|)/k (LeFevre, DeWitt, Ramakrishnan 2006).
  * :func:`query_error` — average relative error of random COUNT queries (seed 004 def. 1.4).

Risk
  * :func:`reidentification_risk` — prosecutor / journalist / marketer (El Emam & Dankar 2008).

Measuring a table as released
  * :func:`measure_release` — what ``ppdm check`` prints: k, each l, t per distance, DM,
    CDM, C_avg, risks (and NCP where hierarchies are given).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from .hierarchy import Hierarchy, _value_str, canonical_strings
from .models import (
    _probs,
    class_entropy,
    emd_hierarchical,
    emd_ordered,
    equivalence_classes,
    kl_divergence,
    sorted_desc,
    variational,
)
from .table import EncodedTable

__all__ = [
    "boxes_from_levels",
    "class_boxes",
    "ncp",
    "gaacp_iloss",
    "il_total",
    "discernibility",
    "cdm",
    "average_class_size",
    "query_error",
    "reidentification_risk",
    "measure_release",
    "summarize_classes",
]


# ---------------------------------------------------------------- release cells
def boxes_from_levels(table: EncodedTable, levels) -> tuple[np.ndarray, np.ndarray]:
    """Cells ``(lo, hi)`` (each ``(n, q)`` int64 leaf codes) of full-domain generalization ``levels``."""
    lo = np.empty(table.qi_codes.shape, dtype=np.int64)
    hi = np.empty_like(lo)
    for j, (h, lv) in enumerate(zip(table.hierarchies, levels)):
        first, last = h.node_span(int(lv))
        node = h.maps[int(lv)][table.qi_codes[:, j]]
        lo[:, j] = first[node]
        hi[:, j] = last[node]
    return lo, hi


def class_boxes(
    table: EncodedTable, class_id: np.ndarray, n_classes: int, categorical: str = "node"
) -> tuple[np.ndarray, np.ndarray]:
    """Cells of a partition (Mondrian, clustering): per class and QI the min..max leaf code of its
    rows; for categorical QIs with ``categorical='node'`` widened to the lowest hierarchy node that
    covers them (their lowest common ancestor), as hierarchy-aware recoding publishes.
    Returns per-row ``(lo, hi)`` ``(n, q)``."""
    cid = np.asarray(class_id, dtype=np.int64)
    n, q = table.qi_codes.shape
    order = np.argsort(cid, kind="stable")
    sc = cid[order]
    starts = np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]])
    present = sc[starts]
    clo = np.zeros((n_classes, q), dtype=np.int64)
    chi = np.zeros((n_classes, q), dtype=np.int64)
    for j, h in enumerate(table.hierarchies):
        col = table.qi_codes[order, j].astype(np.int64)
        mn = np.minimum.reduceat(col, starts)
        mx = np.maximum.reduceat(col, starts)
        if categorical == "node" and not h.numeric:
            lev = h.level_of_span(mn, mx)
            first_l = np.empty_like(mn)
            last_l = np.empty_like(mx)
            for lv in np.unique(lev):
                sel = lev == lv
                f, l_ = h.node_span(int(lv))
                node = h.maps[int(lv)][mn[sel]]
                first_l[sel], last_l[sel] = f[node], l_[node]
            mn, mx = first_l, last_l
        clo[present, j] = mn
        chi[present, j] = mx
    return clo[cid], chi[cid]


def _suppressed_mask(n, suppressed):
    if suppressed is None:
        return np.zeros(n, dtype=bool)
    s = np.asarray(suppressed)
    if s.dtype == bool:
        return s
    m = np.zeros(n, dtype=bool)
    m[s] = True
    return m


# ---------------------------------------------------------------- information loss
_DENSE_SPAN = 1 << 22  # flag / count tables up to this many entries (or a few per row) are cheaper than hashing


def _cell_losses(table, lo, hi, categorical="height"):
    """(n, q) per-cell loss in [0, 1] (before suppression)."""
    n, q = lo.shape
    out = np.empty((n, q))
    for j, h in enumerate(table.hierarchies):
        if h.numeric:
            out[:, j] = _numeric_width(table, j, h, lo[:, j], hi[:, j])
        elif categorical == "height":
            lev = h.level_of_span(lo[:, j], hi[:, j])
            out[:, j] = lev / h.height if h.height else 0.0
        elif categorical == "leaves":
            card = hi[:, j] - lo[:, j] + 1
            out[:, j] = np.where(card > 1, card / h.n_leaves, 0.0)
        elif categorical == "span":
            card = hi[:, j] - lo[:, j] + 1
            out[:, j] = (card - 1) / (h.n_leaves - 1) if h.n_leaves > 1 else 0.0
        else:
            raise AnonymizeError(f"unknown categorical loss '{categorical}' (use 'height', 'leaves' or 'span')")
    return out


def _numeric_width(table, j, h, lo, hi):
    """(max − min of the cell, clipped to the column's range) / (max T − min T), seed 002 §2.2.1."""
    vals = h.leaves.astype(np.float64)
    codes = table.qi_codes[:, j]
    d_lo, d_hi = vals[codes.min()], vals[codes.max()]
    rng = float(d_hi - d_lo)
    if rng <= 0:
        return np.zeros(len(lo))
    width = np.minimum(vals[hi], d_hi) - np.maximum(vals[lo], d_lo)
    return np.clip(width / rng, 0.0, 1.0)


def ncp(table: EncodedTable, lo, hi, suppressed=None, categorical: str = "height") -> dict:
    """Normalized information loss of a release, in [0, 1] (0 = original data, 1 = all ``*``).

    Per cell: numeric QI (max − min of the cell, clipped to the column's range) / (max T − min T),
    the range of the attribute in the table (seed 002 §2.2.1; the numeric part of seed 004 def. 1.1);
    categorical QI h(v, v*)/h(v, root) — the height of the lowest hierarchy node covering the cell
    (the least upper bound of seed 002 §3.1) over the hierarchy height (seed 002 §2.2.2); or with
    ``categorical='leaves'`` card(v*)/|A| and 0 for an ungeneralized value (Xu et al., KDD 2006,
    "NCP"); or ``categorical='span'`` (card(v*) − 1)/(|A| − 1) (Iyengar's loss metric, KDD 2002 —
    what the lattice search's ``cell_loss_tables`` uses). Suppressed rows cost 1 per cell. This is seed 002's iloss(T, A^q) divided by n·d.
    Returns ``{"ncp": mean over all cells, "per_attribute": {qi: mean}}``.
    """
    lo, hi = np.asarray(lo), np.asarray(hi)
    cells = _cell_losses(table, lo, hi, categorical)
    cells[_suppressed_mask(table.n, suppressed)] = 1.0
    per = cells.mean(axis=0)
    return {
        "ncp": float(per.mean()) if len(per) else 0.0,
        "per_attribute": {name: float(v) for name, v in zip(table.schema.qis, per)},
    }


def gaacp_iloss(table: EncodedTable, lo, hi, suppressed=None) -> float:
    """Seed 002 §2.2 total information loss iloss(T, A^q) = iloss(T, A^nq) + iloss(T, A^cq):
    Σ over classes/rows of (max C_r − min C_r)/(max T − min T) for numeric QIs and
    h(t_j, t_j*)/h(t_j, root) for categorical QIs (unnormalized; divide by n·d for :func:`ncp`)."""
    cells = _cell_losses(table, np.asarray(lo), np.asarray(hi), "height")
    cells[_suppressed_mask(table.n, suppressed)] = 1.0
    return float(cells.sum())


def il_total(table: EncodedTable, class_id, n_classes: int, lo, hi, suppressed=None) -> dict:
    """Seed 004 def. 1.1 and 1.2: IL(e) = |e|·(Σ_i (max_{N_i} − min_{N_i})/|N_i| + Σ_j distinct_{C_j}(e)/|C_j|),
    total_IL = Σ_e IL(e).

    |N_i| is the numeric attribute's range in the table; distinct_{C_j}(e) the number of distinct
    original values of categorical C_j in class e; |C_j| its number of distinct values in the table.
    Suppressed rows count as one class with every attribute fully generalized (loss 1 per QI).
    Returns ``{"total_il", "average_il"}`` (average = total / (n·d)).
    """
    cid = np.asarray(class_id, dtype=np.int64)
    sup = _suppressed_mask(table.n, suppressed)
    any_sup = bool(sup.any())
    keep = ~sup
    lo, hi = np.asarray(lo), np.asarray(hi)
    q = table.q
    total = 0.0
    ck = cid[keep] if any_sup else cid
    sizes = np.bincount(ck, minlength=n_classes)
    for j, h in enumerate(table.hierarchies):
        codes = table.qi_codes[:, j]
        if h.numeric:
            w = _numeric_width(table, j, h, lo[keep, j], hi[keep, j])
            total += float(w.sum())  # Σ_e |e|·(max−min)/|N| = Σ_rows cell width
        else:
            L = h.n_leaves
            n_dom = int(np.count_nonzero(np.bincount(codes, minlength=L)))
            distinct = _distinct_per_class(ck, n_classes, codes[keep] if any_sup else codes, L)
            total += float((sizes * distinct).sum()) / n_dom
    total += float(sup.sum()) * q
    return {"total_il": total, "average_il": total / (table.n * q) if table.n and q else 0.0}


def _distinct_per_class(cid: np.ndarray, n_classes: int, codes: np.ndarray, n_values: int) -> np.ndarray:
    """Number of distinct ``codes`` (in ``[0, n_values)``) among the rows of each class: presence of
    the combined key class·n_values + code — a scatter into a table of n_classes·n_values flags when
    that is small, else the distinct keys by hashing (``pd.factorize``, no sort)."""
    n_classes = max(int(n_classes), int(cid.max()) + 1 if len(cid) else 0)
    span = n_classes * int(n_values)
    key = cid * n_values + codes
    if span <= max(8 * len(key), _DENSE_SPAN):
        present = np.zeros(span, dtype=bool)
        present[key] = True
        return np.count_nonzero(present.reshape(n_classes, n_values), axis=1)
    _, uniq = pd.factorize(key, sort=False)
    return np.bincount(np.asarray(uniq) // n_values, minlength=n_classes)


# ---------------------------------------------------------------- class-size metrics
def discernibility(sizes, n_suppressed: int = 0, n: int | None = None) -> float:
    """Discernibility metric DM = Σ_E |E|² + |S|·n (seed 004 def. 1.3 gives Σ|E|²; suppressed
    records each cost n, Bayardo & Agrawal ICDE 2005). ``n`` defaults to Σ|E| + |S|."""
    sizes = np.asarray(sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    if n is None:
        n = int(sizes.sum()) + int(n_suppressed)
    return float((sizes**2).sum() + float(n_suppressed) * n)


def cdm(sizes) -> float:
    """Seed 003's improved discernibility metric CDM over the N equivalence classes of sizes Q_i.

    The seed's formula is an image missing from its text; the prose says CDM is built from Q_i
    and N, grows with k, equals a fixed function of k for uniform classes (the paper derives
    K_max from a CDM bound and a CDM target from P_max = 1/k) and is smaller when the classes are
    more even. We use CDM = Σ_i Q_i² / N — DM per class (Bayardo & Agrawal's Σ|E|² divided by N),
    which is k² for classes all of size k and, for a fixed number of classes, smallest when they
    are equal. Suppressed rows are not classes here (count them with :func:`discernibility`).
    """
    sizes = np.asarray(sizes, dtype=np.float64)
    sizes = sizes[sizes > 0]
    return float((sizes**2).sum() / len(sizes)) if len(sizes) else 0.0


def average_class_size(sizes, k: int) -> float:
    """C_avg = (released records / number of classes) / k (LeFevre, DeWitt, Ramakrishnan, ICDE 2006);
    1 is ideal."""
    sizes = np.asarray(sizes)
    sizes = sizes[sizes > 0]
    if len(sizes) == 0 or k <= 0:
        return 0.0
    return float(sizes.sum() / len(sizes) / k)


# ---------------------------------------------------------------- grouping helpers
def _densify(key: np.ndarray, span: int, n: int) -> tuple[np.ndarray, int]:
    """Dense ids ``0..G-1`` of the int64 ``key`` (values in ``[0, span)``): a presence table when the
    span is small, else ``pd.factorize`` (hashing, no sort)."""
    if span <= max(4 * n, _DENSE_SPAN):
        present = np.zeros(span, dtype=bool)
        present[key] = True
        remap = np.cumsum(present, dtype=np.int64) - 1
        return remap[key], int(remap[-1]) + 1
    codes, uniq = pd.factorize(key, sort=False)
    return codes.astype(np.int64, copy=False), len(uniq)


def _group_rows(columns, n: int) -> tuple[np.ndarray, int, np.ndarray]:
    """Exact grouping of ``n`` rows by a tuple of integer columns, given as an iterable of
    ``(values, range)`` with ``values`` in ``[0, range)`` (consumed one at a time, so a generator keeps
    only one extra column alive): mixed-radix int64 keys, re-densified before they could overflow.
    Returns ``(gid, G, rep)``: group of every row, number of groups, and some row of each group."""
    key, span = None, 1
    for c, r in columns:
        r = max(int(r), 1)
        if key is None:
            key, span = np.array(c, dtype=np.int64), r
            continue
        if span * r >= 1 << 62:
            key, span = _densify(key, span, n)
        key *= r
        key += c
        span *= r
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0, np.zeros(0, dtype=np.int64)
    if key is None:
        return np.zeros(n, dtype=np.int64), 1, np.zeros(1, dtype=np.int64)
    gid, G = _densify(key, span, n)
    rep = np.empty(G, dtype=np.int64)
    rep[gid] = np.arange(n, dtype=np.int64)  # any row of the group will do: all its columns agree
    return gid, G, rep


_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_WORD_BITS: np.ndarray | None = None  # (65536, 16): bit i of every 16-bit value, built on first use


def _bit_counts(mask: np.ndarray, n_bits: int, weights) -> np.ndarray:
    """Per bit position ``b < n_bits``: Σ over rows of ``weights[r]`` (1 without weights) where bit
    ``b`` of ``mask[r]`` (little-endian uint64) is set — one 65,536-bin bincount per 16-bit word."""
    global _WORD_BITS
    if _WORD_BITS is None:
        _WORD_BITS = ((np.arange(1 << 16)[:, None] >> np.arange(16)[None, :]) & 1).astype(np.int64)
    words = mask.view("<u2").reshape(-1, 4)
    out = np.zeros(n_bits, dtype=np.int64)
    for k in range((n_bits + 15) // 16):
        h = np.bincount(words[:, k], weights=weights, minlength=1 << 16)
        if weights is not None:
            h = np.rint(h).astype(np.int64)
        m = min(16, n_bits - 16 * k)
        out[16 * k : 16 * k + m] = (h @ _WORD_BITS)[:m]
    return out


# ---------------------------------------------------------------- query error
def query_error(
    table: EncodedTable,
    lo,
    hi,
    suppressed=None,
    n_queries: int = 500,
    dims: int | None = None,
    selectivity: float = 0.05,
    seed: int = 0,
    sensitive: bool = True,
) -> dict:
    """Average relative error of random COUNT queries (seed 004 def. 1.4): mean |act − est| / act.

    Workload (LeFevre et al. 2006; Xiao & Tao 2006): each query ANDs predicates on ``dims``
    random QIs (default min(3, q)) and, if ``sensitive`` and the table has one, on the first
    sensitive attribute; each predicate covers a fraction ``selectivity ** (1/#predicates)`` of
    its domain — a contiguous leaf range for numeric QIs, a random value set otherwise. ``act``
    is the count on the original data; ``est`` on the release assumes every record is spread
    uniformly over the leaves of its cell (a suppressed record over the whole domain).
    Queries with act = 0 are redrawn. Seeded (``np.random.default_rng(seed)``).

    Evaluation (same answers as a row-by-row scan, without scanning every row per query):
    ``act`` counts the distinct original rows (QI codes and the sensitive code, grouped once,
    weighted by their multiplicity) through 64 queries at a time, one bit per query in a uint64
    mask per leaf; ``est`` sums over the distinct released cells (rows with the same cell in every
    QI — an equivalence class — grouped once) count × Π per-cell overlap fraction, the fraction
    computed once per distinct cell of each attribute.
    """
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    n, q = table.qi_codes.shape
    hs = table.hierarchies
    sup = _suppressed_mask(n, suppressed)
    any_sup = bool(sup.any())
    dims = min(3, q) if dims is None else max(1, min(int(dims), q))
    use_sens = bool(sensitive and table.sens_codes.shape[1] > 0)
    n_pred = dims + (1 if use_sens else 0)
    frac = float(selectivity) ** (1.0 / n_pred)
    rng = np.random.default_rng(seed)
    V = len(table.sens_values[0]) if use_sens else 0
    s_codes = table.sens_codes[:, 0] if use_sens else None

    # -- released cells: group the rows with the same cell in every QI (suppressed rows: whole domain)
    def cell_columns():
        for j, h in enumerate(hs):
            L = h.n_leaves
            lj, hj = lo[:, j], hi[:, j]
            if any_sup:
                lj = np.where(sup, 0, lj)
                hj = np.where(sup, L - 1, hj)
            wj = hj - lj
            if n and (lj.min() < 0 or wj.min() < 0 or hj.max() >= L):
                raise AnonymizeError(
                    f"query_error: cells of '{h.name}' are not leaf-code ranges [lo, hi] within 0..{L - 1}"
                )
            yield lj, (int(lj.max()) + 1 if n else 1)
            yield wj, (int(wj.max()) + 1 if n else 1)

    gid, G, rep = _group_rows(cell_columns(), n)
    cells = []  # per QI: (group -> its distinct cell of this QI, cell lo, cell hi, cell width)
    g_sup = sup[rep] if any_sup else None
    for j, h in enumerate(hs):
        L = h.n_leaves
        glo, ghi = lo[rep, j], hi[rep, j]
        if any_sup:
            glo = np.where(g_sup, 0, glo)
            ghi = np.where(g_sup, L - 1, ghi)
        cinv, _, crep = _group_rows([(glo, L), (ghi, L)], G)
        clo, chi = glo[crep], ghi[crep]
        cells.append((cinv, clo, chi, (chi - clo + 1).astype(np.float64)))
    g_sens = g_sens_code = None
    if use_sens and G * V <= max(2 * n, _DENSE_SPAN):
        # per group histogram of the sensitive value, (V, G)
        g_sens = np.bincount(gid * V + s_codes, minlength=G * V).reshape(G, V).T.astype(np.float64)
        g_count = None
    elif use_sens:
        # too many values for a dense histogram: split the groups by sensitive value instead
        pgid, G, prep = _group_rows([(gid, G), (s_codes, V)], n)
        g_of = gid[prep]
        cells = [(cinv[g_of], clo, chi, cw) for cinv, clo, chi, cw in cells]
        g_sens_code = s_codes[prep]
        g_count = np.bincount(pgid, minlength=G).astype(np.float64)
        del pgid
    else:
        g_count = np.bincount(gid, minlength=G).astype(np.float64)
    del gid

    # -- original rows: group identical (QI codes, sensitive code) rows once, unless a sample shows
    # they are nearly all distinct (then grouping would cost more than it saves; results are the same)
    o_cols = [table.qi_codes[:, j] for j in range(q)] + ([s_codes] if use_sens else [])
    o_ranges = [h.n_leaves for h in hs] + ([V] if use_sens else [])
    weights = None
    worth = True
    if n > 65536:  # every (n // 32768)-th row: 32,768 to 65,535 of them
        step = n // 32768
        n_sample = len(range(0, n, step))
        _, P_sample, _ = _group_rows(((c[::step], r) for c, r in zip(o_cols, o_ranges)), n_sample)
        worth = P_sample <= 0.9 * n_sample
    if worth:
        ogid, P, orep = _group_rows(zip(o_cols, o_ranges), n)
        if P <= 0.6 * n:
            weights = np.bincount(ogid, minlength=P).astype(np.float64)
            o_cols = [c[orep] for c in o_cols]
        del ogid, orep
    if weights is None:
        o_cols = [np.ascontiguousarray(c) for c in o_cols]

    def draw():
        attrs = rng.choice(q, size=dims, replace=False)
        preds = []
        for j in attrs:
            h = hs[j]
            L = h.n_leaves
            m = max(1, int(round(frac * L)))
            if h.numeric:
                s = int(rng.integers(0, L - m + 1))
                preds.append((int(j), s, s + m, None))
            else:
                ind = np.zeros(L, dtype=bool)
                ind[rng.choice(L, size=m, replace=False)] = True
                preds.append((int(j), 0, 0, ind))
        sv = None
        if use_sens:
            m = max(1, int(round(frac * V)))
            sv = np.zeros(V, dtype=bool)
            sv[rng.choice(V, size=m, replace=False)] = True
        return preds, sv

    n_rows = len(o_cols[0]) if o_cols else 0

    def actual(batch) -> np.ndarray:
        """True answers of up to 64 queries: bit b of a uint64 per query b; per attribute a table
        leaf -> the queries its value satisfies, ANDed over each row's values."""
        tabs: dict[int, np.ndarray] = {}
        for b, (preds, sv) in enumerate(batch):
            clear = ~np.uint64(1 << b)
            for j, s, e, ind in preds:
                t = tabs.get(j)
                if t is None:
                    t = tabs[j] = np.full(hs[j].n_leaves, _ALL, dtype="<u8")
                if ind is None:
                    t[:s] &= clear
                    t[e:] &= clear
                else:
                    t[~ind] &= clear
            if sv is not None:
                t = tabs.get(q)
                if t is None:
                    t = tabs[q] = np.full(V, _ALL, dtype="<u8")
                t[~sv] &= clear
        mask = None
        for j, t in tabs.items():
            g = t[o_cols[j]]
            if mask is None:
                mask = g
            else:
                mask &= g
        if mask is None:
            mask = np.full(n_rows, _ALL, dtype="<u8")
        return _bit_counts(mask, len(batch), weights)

    def estimate(preds, sv) -> float:
        v = None
        for j, s, e, ind in preds:
            cinv, clo, chi, cw = cells[j]
            if ind is None:
                inside = np.minimum(chi, e - 1) - np.maximum(clo, s) + 1
                np.maximum(inside, 0, out=inside)
            else:
                cum = np.r_[0, np.cumsum(ind)]
                inside = cum[chi + 1] - cum[clo]
            f = np.take(inside / cw, cinv)
            if v is None:
                v = f
            else:
                v *= f
        if v is None:
            v = np.ones(G)
        if not use_sens:
            return float(v @ g_count)
        if g_sens is None:
            return float(v @ (g_count * sv[g_sens_code]))
        return float((g_sens @ v) @ sv.astype(np.float64))

    errs = []
    tries = 0
    max_tries = 20 * n_queries
    while len(errs) < n_queries and tries < max_tries:
        # every query drawn here would have been drawn by a one-at-a-time loop too: at most as many
        # as are still missing, so the workload (and the redraws) are the same for any batch size
        batch = [draw() for _ in range(min(64, n_queries - len(errs), max_tries - tries))]
        tries += len(batch)
        for (preds, sv), act in zip(batch, actual(batch)):
            if act == 0:
                continue
            errs.append(abs(int(act) - estimate(preds, sv)) / int(act))
    if not errs:
        raise AnonymizeError("query_error: no query with a non-zero answer; raise the selectivity")
    e = np.asarray(errs)
    return {
        "mean_relative_error": float(e.mean()),
        "median_relative_error": float(np.median(e)),
        "n_queries": len(errs),
        "dims": dims,
        "sensitive": use_sens,
        "selectivity": selectivity,
        "seed": seed,
    }


# ---------------------------------------------------------------- risk
def reidentification_risk(sizes, population_sizes=None) -> dict:
    """Re-identification risks of the released classes (El Emam & Dankar, JAMIA 2008; ARX's risk model).

    sizes: f_j, rows per released class. population_sizes: F_j, matching individuals in the
    population (≥ f_j); without it the release is taken as the population (F_j = f_j).

    * prosecutor (the target is known to be in the release): max = 1/min f_j, average = J/n
      (mean over records of 1/f_j);
    * journalist (the target is someone in the population): max = 1/min F_j, average =
      (1/n) Σ_j f_j/F_j;
    * marketer (share of records re-identified when matching everyone): (1/n) Σ_j f_j/F_j
      (= J/n, the number of classes over n, without a population table).
    """
    f = np.asarray(sizes, dtype=np.float64)
    keep = f > 0
    f = f[keep]
    if len(f) == 0:
        return {
            "prosecutor_max": 0.0,
            "prosecutor_avg": 0.0,
            "journalist_max": 0.0,
            "journalist_avg": 0.0,
            "marketer": 0.0,
            "records_in_unique_classes": 0,
        }
    n = f.sum()
    F = f if population_sizes is None else np.maximum(np.asarray(population_sizes, dtype=np.float64)[keep], f)
    return {
        "prosecutor_max": float(1.0 / f.min()),
        "prosecutor_avg": float(len(f) / n),
        "journalist_max": float(1.0 / F.min()),
        "journalist_avg": float((f / F).sum() / n),
        "marketer": float((f / F).sum() / n),
        "records_in_unique_classes": int(f[f == 1].sum()),
    }


def summarize_classes(sizes) -> dict:
    """Count, min / max / mean / median size of the non-empty classes."""
    s = np.asarray(sizes)
    s = s[s > 0]
    if len(s) == 0:
        return {"classes": 0}
    return {
        "classes": int(len(s)),
        "min": int(s.min()),
        "max": int(s.max()),
        "mean": float(s.mean()),
        "median": float(np.median(s)),
    }


# ---------------------------------------------------------------- measure a released table
def _factorize_columns(df: pd.DataFrame, cols, uniques: list | None = None) -> np.ndarray:
    out = np.empty((len(df), len(cols)), dtype=np.int64)
    for j, c in enumerate(cols):
        out[:, j], u = pd.factorize(df[c], use_na_sentinel=False)
        if uniques is not None:
            uniques.append(u)
    return out


_RANGE = None


def _parse_range(text: str):
    """``'20-29'``, ``'[20, 30)'``, ``'20..29'``, ``'20~29'`` → (lo, hi, hi_open) or None."""
    global _RANGE
    if _RANGE is None:
        import re

        num = r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
        _RANGE = re.compile(r"^\s*([\[(]?)\s*" + num + r"\s*(?:-|,|\.\.|~)\s*" + num + r"\s*([\])]?)\s*$")
    m = _RANGE.match(text)
    if not m:
        return None
    return float(m.group(2)), float(m.group(3)), m.group(4) == ")"


def _label_cells(h: Hierarchy, inv: np.ndarray, uniq_raw, column: str):
    """Map released values to hierarchy cells (lo, hi leaf codes): the lowest level whose label
    matches; for numeric hierarchies also plain leaf numbers and ranges such as ``20-29`` or
    ``[20, 30)``. A categorical value that is no label of the hierarchy is an error; a numeric
    value that is neither (e.g. a class mean) gives None (NCP not measurable). ``inv``/``uniq_raw``
    are the column's ``pd.factorize`` codes and uniques."""
    uniq = np.array([_value_str(v) for v in uniq_raw], dtype=object)
    lo = np.full(len(uniq), -1, dtype=np.int64)
    hi = np.full(len(uniq), -1, dtype=np.int64)
    for lv in range(h.height + 1):
        pos = pd.Index(h.labels[lv].astype(str)).get_indexer(uniq)  # labels are unique within a level
        first, last = h.node_span(lv)
        new = (lo < 0) & (pos >= 0)
        lo[new] = first[pos[new]]
        hi[new] = last[pos[new]]
    if (lo < 0).any() and h.numeric:
        lv = h.leaves.astype(np.float64)
        for i in np.flatnonzero(lo < 0):
            try:
                x = float(uniq[i])
                a, b, open_ = x, x, False
            except ValueError:
                r = _parse_range(uniq[i])
                if r is None:
                    continue
                a, b, open_ = r
            lo_i = int(np.searchsorted(lv, a, side="left"))
            hi_i = int(np.searchsorted(lv, b, side="left" if open_ else "right")) - 1
            if lo_i <= hi_i and lo_i < len(lv) and (a != b or lv[lo_i] == a):
                lo[i], hi[i] = lo_i, hi_i
    if (lo < 0).any():
        bad = uniq[lo < 0]
        if not h.numeric:
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise AnonymizeError(
                f"column '{column}': value {', '.join(repr(str(b)) for b in bad[:3])}{more} not in hierarchy "
                f"'{h.name}' (at any level)"
            )
        return None
    return lo[inv], hi[inv]


def measure_release(
    df: pd.DataFrame,
    qis,
    sensitive=(),
    identifiers=(),
    hierarchies=None,
    c: float | None = None,
    population: pd.DataFrame | None = None,
) -> dict:
    """Measure a table *as released* (generalized values such as ``*`` or ``20-29`` are plain
    categories), like pycanon but vectorized and index-independent.

    Reports: rows, classes and their sizes, k (seed 000 def. 20.3.1); per sensitive attribute
    distinct l (def. 20.3.2), entropy l = exp(min class entropy) (eq. 20.10; pycanon reports its
    floor), recursive (c,l) (eq. 20.11: ``c_bound`` such that every class is (c, l)-diverse for
    every c > c_bound at l = distinct l, and with ``c`` the largest l that holds), t for each
    distance (variational eq. 20.13, KL eq. 20.14, EMD equal/ordered, hierarchical when a
    hierarchy for the attribute is given); DM, CDM, C_avg, prosecutor/journalist/marketer risk
    (journalist against ``population`` if given: a table with the same QI columns in the same
    released form); NCP for QIs whose hierarchy is given and whose released values are labels of it.
    """
    t0 = time.perf_counter()
    qis, sensitive, identifiers = list(qis), list(sensitive), list(identifiers)
    if len(df.columns) == 0 or len(df) == 0:
        raise AnonymizeError("the table has no rows")
    from .table import Schema

    Schema(qis, sensitive, identifiers).validate(df.columns)
    for col in qis + sensitive:
        na = df[col].isna().to_numpy()
        if na.any():
            raise AnonymizeError(
                f"column '{col}' has {int(na.sum())} missing value(s) (first at data row "
                f"{int(np.argmax(na)) + 1}); fill or drop them first"
            )
    hierarchies = dict(hierarchies or {})
    n = len(df)
    qi_uniques: list = []
    codes = _factorize_columns(df, qis, qi_uniques)
    cid, C = equivalence_classes(codes)
    sizes = np.bincount(cid, minlength=C)
    k = int(sizes.min())
    out: dict = {
        "rows": n,
        "quasi_identifiers": qis,
        "sensitive": sensitive,
        "classes": summarize_classes(sizes),
        "k": k,
    }
    sens_out = {}
    for s in sensitive:
        col = df[s]
        h = hierarchies.get(s)
        if h is not None:
            leaf = h.encode(col, column=s)
            present = np.unique(leaf)
            sc = np.searchsorted(present, leaf)
            values = h.leaves[present]
        else:
            is_num = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
            sc, values = pd.factorize(col if is_num else canonical_strings(col), sort=True)
        V = len(values)
        hist = np.bincount(cid * V + sc, minlength=C * V).reshape(C, V)
        Q = np.bincount(sc, minlength=V) / n
        P = _probs(hist)
        distinct = (hist > 0).sum(axis=1)
        l_distinct = int(distinct.min())
        ent = class_entropy(hist)
        r = sorted_desc(hist)
        tail = r[:, l_distinct - 1 :].sum(axis=1)
        c_bound = float((r[:, 0] / tail).max()) if l_distinct >= 1 else float("inf")
        rec = {"l": l_distinct, "c_bound": c_bound}
        if c is not None:
            best = 0
            for l_try in range(1, l_distinct + 1):
                t_ = r[:, l_try - 1 :].sum(axis=1)
                if np.all(r[:, 0] < c * t_):
                    best = l_try
            rec["c"] = float(c)
            rec["l_at_c"] = best
        numeric_sens = np.issubdtype(np.asarray(values).dtype, np.number)
        t = {
            "variational": float(variational(P, Q).max()),
            "kl": float(kl_divergence(P, Q).max()),
            "emd_equal": float(variational(P, Q).max()),
            "emd_ordered": float(emd_ordered(P, Q).max()),
        }
        t["emd"] = t["emd_ordered"] if numeric_sens else t["emd_equal"]
        if h is not None:
            t["emd_hierarchical"] = float(emd_hierarchical(P, Q, h, present).max())
        sens_out[s] = {
            "distinct_values": V,
            "l_distinct": l_distinct,
            "l_entropy": float(math.exp(ent.min())),
            "l_entropy_floor": int(math.floor(math.exp(ent.min()) + 1e-9)),
            "recursive": rec,
            "t": t,
            "ground_for_emd": "ordered" if numeric_sens else "equal",
        }
    out["sensitive_attributes"] = sens_out
    out["dm"] = discernibility(sizes)
    out["cdm"] = cdm(sizes)
    out["c_avg"] = average_class_size(sizes, k)
    pop_sizes = None
    if population is not None:
        missing = [q_ for q_ in qis if q_ not in population.columns]
        if missing:
            raise AnonymizeError(f"population table lacks quasi-identifier column(s): {', '.join(missing)}")
        both = pd.concat(
            [df[qis].apply(canonical_strings), population[qis].apply(canonical_strings)], ignore_index=True
        )
        bcodes = _factorize_columns(both, qis)
        bid, BC = equivalence_classes(bcodes)
        pop_count = np.bincount(bid[n:], minlength=BC)
        # release class -> combined class id of any of its rows
        rep = np.zeros(C, dtype=np.int64)
        rep[cid] = bid[:n]
        pop_sizes = pop_count[rep]
        out["population_rows"] = int(len(population))
    out["risk"] = reidentification_risk(sizes, pop_sizes)
    ncp_per = {}
    for j, qname in enumerate(qis):
        h = hierarchies.get(qname)
        if h is None:
            continue
        cells = _label_cells(h, codes[:, j], qi_uniques[j], qname)
        if cells is None:
            ncp_per[qname] = None
            continue
        lo, hi = cells
        if h.numeric:
            vals = h.leaves.astype(np.float64)
            rng = float(vals[hi].max() - vals[lo].min())
            loss = (vals[hi] - vals[lo]) / rng if rng > 0 else np.zeros(n)
        else:
            lev = h.level_of_span(lo, hi)
            loss = lev / h.height if h.height else np.zeros(n)
        ncp_per[qname] = float(np.mean(loss))
    if ncp_per:
        vals_ = [v for v in ncp_per.values() if v is not None]
        out["ncp"] = {"per_attribute": ncp_per, "ncp": float(np.mean(vals_)) if len(vals_) == len(qis) else None}
    out["seconds"] = time.perf_counter() - t0
    return out
