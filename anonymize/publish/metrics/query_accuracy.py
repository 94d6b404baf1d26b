"""Average relative error of random COUNT queries on a release (utility for aggregate analysis).

The measure and its workload follow Xiao & Tao, "Anatomy: simple and effective privacy
preservation", VLDB 2006, and LeFevre, DeWitt, Ramakrishnan, "Mondrian multidimensional
k-anonymity", ICDE 2006 (full entries: docs/references.md).
"""

from __future__ import annotations

import numpy as np

from ...errors import AnonymizeError
from ..table import EncodedTable
from .cells import suppressed_mask
from .grouping import DENSE_SPAN, group_rows

__all__ = ["query_error", "bucket_query_error"]

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
    """Average relative error of random COUNT queries (Xiao & Tao 2006): mean |act − est| / act.

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
    sup = suppressed_mask(n, suppressed)
    any_sup = bool(sup.any())
    dims = min(3, q) if dims is None else max(1, min(int(dims), q))
    use_sens = bool(sensitive and table.sens_codes.shape[1] > 0)
    n_pred = dims + (1 if use_sens else 0)
    frac = float(selectivity) ** (1.0 / n_pred)
    rng = np.random.default_rng(seed)
    V = len(table.sens_values[0]) if use_sens else 0
    s_codes = table.sens_codes[:, 0] if use_sens else np.zeros(n, dtype=np.int32)

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

    gid, G, rep = group_rows(cell_columns(), n)
    cells = []  # per QI: (group -> its distinct cell of this QI, cell lo, cell hi, cell width)
    g_sup = sup[rep]
    for j, h in enumerate(hs):
        L = h.n_leaves
        glo, ghi = lo[rep, j], hi[rep, j]
        if any_sup:
            glo = np.where(g_sup, 0, glo)
            ghi = np.where(g_sup, L - 1, ghi)
        cinv, _, crep = group_rows([(glo, L), (ghi, L)], G)
        clo, chi = glo[crep], ghi[crep]
        cells.append((cinv, clo, chi, (chi - clo + 1).astype(np.float64)))
    g_sens: np.ndarray | None = None
    g_sens_code: np.ndarray | None = None
    g_count: np.ndarray | None = None
    if use_sens and G * V <= max(2 * n, DENSE_SPAN):
        # per group histogram of the sensitive value, (V, G)
        g_sens = np.bincount(gid * V + s_codes, minlength=G * V).reshape(G, V).T.astype(np.float64)
        g_count = None
    elif use_sens:
        # too many values for a dense histogram: split the groups by sensitive value instead
        pgid, G, prep = group_rows([(gid, G), (s_codes, V)], n)
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
        _, P_sample, _ = group_rows(((c[::step], r) for c, r in zip(o_cols, o_ranges)), n_sample)
        worth = P_sample <= 0.9 * n_sample
    if worth:
        ogid, P, orep = group_rows(zip(o_cols, o_ranges), n)
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
            assert g_count is not None
            return float(v @ g_count)
        if g_sens is None:
            assert g_count is not None and g_sens_code is not None
            return float(v @ (g_count * sv[g_sens_code]))
        return float((g_sens @ v) @ sv.astype(np.float64))

    errs: list[float] = []
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


def bucket_query_error(
    table: EncodedTable,
    group_id,
    n_queries: int = 200,
    dims: int | None = None,
    selectivity: float = 0.05,
    seed: int = 0,
) -> dict:
    """:func:`query_error` for a bucketized release (Anatomy, MSAL: exact QIs in one table, each group's
    sensitive values in another), with Xiao & Tao's estimate (VLDB 2006, §3): a COUNT query with QI
    predicates ``Q`` and a sensitive predicate ``S`` is answered as Σ_g |{t ∈ g : Q(t)}| · |{t ∈ g : S(t)}|
    / |g| — within a group, each QI row holds each of the group's sensitive values with equal chance.

    The workload is :func:`query_error`'s (``dims`` random QIs plus the first sensitive attribute, each
    predicate covering ``selectivity ** (1/#predicates)`` of its domain; queries with act = 0 redrawn);
    rows not published (``group_id < 0``, e.g. MSAL's) count in the true answers and not in the estimate.
    Returns the same keys as :func:`query_error`.
    """
    gid = np.asarray(group_id, dtype=np.int64)
    n, q = table.qi_codes.shape
    if table.sens_codes.shape[1] == 0:
        raise AnonymizeError("bucket_query_error: a bucketized release has a sensitive attribute")
    hs = table.hierarchies
    dims = min(3, q) if dims is None else max(1, min(int(dims), q))
    frac = float(selectivity) ** (1.0 / (dims + 1))
    rng = np.random.default_rng(seed)
    V = len(table.sens_values[0])
    s_codes = table.sens_codes[:, 0]
    pub = gid >= 0
    g_pub = gid[pub]
    G = int(g_pub.max()) + 1 if len(g_pub) else 0
    sizes = np.bincount(g_pub, minlength=G).astype(np.float64)
    w = table.row_weights()
    errs: list[float] = []
    tries = 0
    while len(errs) < n_queries:
        tries += 1
        if tries > 20 * n_queries + 100:
            raise AnonymizeError("query_error: no query with a non-zero answer; raise the selectivity")
        qmask = np.ones(n, dtype=bool)
        for j in rng.choice(q, size=dims, replace=False):
            L = hs[j].n_leaves
            m = max(1, int(round(frac * L)))
            ind = np.zeros(L, dtype=bool)
            if hs[j].numeric:
                s = int(rng.integers(0, L - m + 1))
                ind[s : s + m] = True
            else:
                ind[rng.choice(L, size=m, replace=False)] = True
            qmask &= ind[table.qi_codes[:, j]]
        sv = np.zeros(V, dtype=bool)
        sv[rng.choice(V, size=max(1, int(round(frac * V))), replace=False)] = True
        smask = sv[s_codes]
        act = float(w[qmask & smask].sum())
        if act == 0:
            continue
        a = np.bincount(g_pub, weights=(qmask[pub] * w[pub]).astype(np.float64), minlength=G)
        b = np.bincount(g_pub, weights=(smask[pub] * w[pub]).astype(np.float64), minlength=G)
        ok = sizes > 0
        est = float((a[ok] * b[ok] / sizes[ok]).sum())
        errs.append(abs(act - est) / act)
    e = np.asarray(errs)
    return {
        "mean_relative_error": float(e.mean()) if len(e) else 0.0,
        "median_relative_error": float(np.median(e)) if len(e) else 0.0,
        "n_queries": len(errs),
        "dims": dims,
        "sensitive": True,
        "selectivity": selectivity,
        "seed": seed,
        "estimator": "Xiao-Tao (exact QIs, sensitive values spread uniformly within each group)",
    }
