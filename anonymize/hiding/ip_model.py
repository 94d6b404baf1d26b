"""The integer program of exact hiding, built vectorized over groups of interchangeable transactions.

Formulation (after the inline approach of Gkoulalas-Divanis & Verykios, "An integer
programming approach for frequent itemset hiding", CIKM 2006; see :mod:`.exact` for
what is optimized and the solving): A = transactions holding some sensitive itemset S_j
(a rule's X ∪ Y); V_t = union of the S_j ⊆ t (deleting anything else never lowers a
sensitive support, and deleting an item of X elsewhere only raises a confidence). An
*at-risk* itemset is a frequent f that holds a sensitive item, counts as lost when it
falls (below), and could fall below ``minc`` in a *minimal* solution — one where no deleted
item can be put back without a sensitive pattern being mined again or a rule changing
route (:mod:`.restore`). Minimal solutions are enough (putting items back that way never
loses a pattern), and in one every edited transaction is critical for some S_j it no longer
holds, and at most need_j = count(S_j) − minc + 1 transactions of D(S_j) lose S_j (exactly
that many when S_j is hidden by support, fewer when a rule is hidden by confidence), so f
loses at most Σ_{S_j ∩ f ≠ ∅} min(need_j, |D(S_j ∪ f)|). The at-risk itemsets are those of
F' (no sensitive pattern's items: always lost when they fall) and, for the rules r judged
by confidence, the frequent supersets of X_r ∪ Y_r that hold no sensitive itemset — lost
when they fall unless a rule r whose X ∪ Y they hold (R_f) is hidden by support (then they
are in H, :mod:`.metrics`). Transactions of A are grouped by (which S_j they hold, which
at-risk f they hold, which antecedents X_r they hold, whether t = V_t): within a group
they are interchangeable, so the variables are counts:

* x_{g,P} ∈ {0..n_g} — transactions of group g that lose exactly P ⊆ V_g, for the
  *useful* P only (each item needed to break some S_j that P breaks), never P = t;
* w_{g,φ} = Σ_{P ∩ φ ≠ ∅} x_{g,P} — for each distinct φ = f ∩ (sensitive items) met
  in g (continuous, defined by an equality: keeps the rows of f sparse);
* L_f ∈ {0, 1} — at-risk itemset f is given up;
* z_r ∈ {0, 1} — rule r (with a minimum confidence C = p/q) is hidden by confidence (1)
  or by support (0); fixed when only one route can hide it;

  Σ_P x_{g,P} ≤ n_g                                     (each transaction once)
  d_j := Σ_{g ⊇ S_j, P ∩ S_j ≠ ∅} x_{g,P} ≥ need_j·(1 − z_j)          (S_j hidden by support)
  q·d_r − p·Σ_{g ⊇ X_r, P ∩ X_r ≠ ∅} x_{g,P} ≥ (a_r q − p b_r + 1)·z_r − M_r·(1 − z_r)
                                                           (r hidden by confidence)
  Σ_{g ⊇ f} w_{g,φ(f)} − M_f·L_f ≤ count(f) − minc + M_f·Σ_{r ∈ R_f} (1 − z_r)
                                                           (f kept unless L_f or excused)
  L_f ≤ L_f'  for f ⊂ f' in F' at risk, |f'| = |f| + 1   (losing f loses f')

with a_r = count(X_r ∪ Y_r), b_r = count(X_r) (itemsets and rules without C have no z:
their support row is d_j ≥ need_j), M_f = maxdrop(f) − (count(f) − minc) and
M_r = p·(transactions of A holding X_r but not X_r ∪ Y_r that can lose an item of X_r),
the tightest big-Ms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..itemsets import unpack_columns
from .errors import InstanceTooLarge
from .patterns import SensitivePattern
from .state import HidingState

__all__ = ["IPModel", "build_model", "MAX_VARIABLES", "MAX_CONSTRAINTS"]

MAX_VARIABLES = 200_000
MAX_CONSTRAINTS = 100_000
_MAX_V_ITEMS = 16  # items of V_t: 2^16 candidate deletion sets per type at most
_MAX_CELLS = 200_000_000  # booleans of the (affected transactions × at-risk itemsets) matrix


@dataclass
class IPModel:
    """The program: variables [x (nx) | w (nw) | L (nf)], rows ``lb ≤ matrix·v ≤ ub``."""

    A: np.ndarray  # affected transactions
    hideable: list  # the sensitive patterns the program hides (the others cannot be)
    group: np.ndarray  # group of each affected transaction
    n_g: np.ndarray
    per_g: np.ndarray  # x variables per group
    var_g: np.ndarray
    var_p: np.ndarray  # deletion set of each x variable, bitmask over IS
    IS: np.ndarray  # sensitive item rows
    nx: int
    nw: int
    nf: int
    matrix: object
    lb: np.ndarray
    ub: np.ndarray
    upper: np.ndarray
    integrality: np.ndarray
    risk_at: list = field(default_factory=list)  # [(k, indices into state.fp[k])], first in L order
    stats: dict = field(default_factory=dict)
    nz: int = 0  # route indicators z_r of the rules with a minimum confidence, after L
    lower: np.ndarray | None = None  # variable lower bounds (None: all 0)
    cond_at: list = field(default_factory=list)  # [(k, indices into state.fx[k])], after risk_at in L order
    cond_rules: np.ndarray | None = None  # (conditional L, nz) bool: X ∪ Y of rule r ⊆ f
    z_patterns: list = field(default_factory=list)  # the rule of each z

    @property
    def n_vars(self) -> int:
        return self.nx + self.nw + self.nf + self.nz

    @property
    def l_slice(self) -> slice:
        """Where the L variables sit in the variable vector."""
        return slice(self.nx + self.nw, self.nx + self.nw + self.nf)


def _too_large(what: str, v: int, c: int, max_v: int, max_c: int, *, sized: bool = True) -> InstanceTooLarge:
    """The size guard's error. ``sized``: the guard is the program's size (variables, constraints), which
    --max-variables/--max-constraints raise; otherwise a structural limit they cannot lift (``what`` says
    which), and the message names no counts it did not reach."""
    if sized:
        detail = (
            f"the integer program would have {v:,} variables and {c:,} constraints (limits {max_v:,} and "
            f"{max_c:,}); use --algorithm border (closest to the optimum in misses cost) or heuristic, or raise "
            "--max-variables/--max-constraints"
        )
    else:
        detail = (
            "use --algorithm border (closest to the optimum in misses cost) or heuristic, or a higher "
            "--min-support (fewer frequent itemsets)"
        )
    return InstanceTooLarge(f"exact: {what}: {detail}", variables=v, constraints=c, suggestion="border")


def _popcount64(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(np.asarray(x, dtype=np.uint64)).astype(np.int64)


def _useful_sets(vmask: int, smasks: list[int], full: bool) -> list[int]:
    """Deletion sets P ⊆ V (bitmasks) in which every item is needed for the patterns P breaks."""
    bits = [b for b in range(64) if vmask >> b & 1]
    if len(bits) > _MAX_V_ITEMS:
        raise _too_large(
            f"a transaction holds {len(bits)} sensitive items (at most {_MAX_V_ITEMS})", 0, 0, 0, 0, sized=False
        )

    def broken(p: int) -> int:
        return sum(1 << j for j, s in enumerate(smasks) if s & p)

    out = []
    for sub in range(1, 1 << len(bits)):
        p = sum(1 << bits[i] for i in range(len(bits)) if sub >> i & 1)
        if full and p == vmask:
            continue
        h = broken(p)
        if all(broken(p & ~(1 << b)) != h for b in bits if p >> b & 1):
            out.append(p)
    return out


def build_model(
    state: HidingState,
    patterns: Sequence[SensitivePattern],
    *,
    max_variables: int = MAX_VARIABLES,
    max_constraints: int = MAX_CONSTRAINTS,
    progress: Callable[[str], None] | None = None,
) -> IPModel | None:
    """The program for hiding ``patterns`` from ``state`` (module docstring); None if none is mined.

    Raises :class:`InstanceTooLarge` (naming the border algorithm instead) when it would
    exceed ``max_variables`` or ``max_constraints``.
    """
    from scipy.sparse import coo_array

    minc = state.min_count
    conf = state.conf
    pc, qc = (conf.numerator, conf.denominator) if conf is not None else (0, 1)
    rows = [state.rows(p.items) for p in patterns]
    by_conf = [conf is not None and p.is_rule for p in patterns]  # rules that confidence can hide
    # a sensitive pattern is hideable by support when enough of its transactions can lose an item of
    # it without becoming empty (only one-item transactions cannot); a rule by confidence when enough
    # can lose an item of Y; the others are left as they are
    live: list[int] = []
    routes: list[tuple[bool, bool]] = []
    ab: list[tuple[int, int]] = []
    for i, r in enumerate(rows):
        t = state.tids(r)
        movable = int((state.lengths[t] >= 2).sum())
        a = int(t.size)
        b = state.count(state.rows(patterns[i].antecedent)) if by_conf[i] else 0
        if a < minc or (by_conf[i] and a * qc < pc * b):
            continue  # not mined: nothing to hide
        sup_ok = movable >= a - minc + 1
        conf_ok = by_conf[i] and movable >= (a * qc - pc * b) // qc + 1
        if sup_ok or conf_ok:
            live.append(i)
            routes.append((sup_ok, conf_ok))
            ab.append((a, b))
    if not live:
        return None
    if len(live) > 62:
        raise _too_large(
            f"{len(live)} sensitive itemsets (at most 62)", 0, 0, max_variables, max_constraints, sized=False
        )
    IS = np.unique(np.concatenate([rows[i] for i in live]))
    if IS.size > 63:
        raise _too_large(
            f"{IS.size} distinct sensitive items (at most 63)", 0, 0, max_variables, max_constraints, sized=False
        )
    smask = [int(sum(1 << int(b) for b in np.searchsorted(IS, rows[i]))) for i in live]
    need = [ab[j][0] - minc + 1 for j in range(len(live))]
    # rules with a route indicator z (hidden by support if z = 0, by confidence if z = 1)
    zl = [j for j, i in enumerate(live) if by_conf[i]]  # indices into live
    nz = len(zl)
    xrows = [state.rows(patterns[live[j]].antecedent) for j in zl]
    xmask = [int(sum(1 << int(b) for b in np.searchsorted(IS, x))) for x in xrows]
    # affected transactions and which sensitive itemsets (and antecedents) each holds
    bits = [state.bits(rows[i]) for i in live]
    A = np.flatnonzero(unpack_columns(np.bitwise_or.reduce(np.stack(bits), axis=0), state.n))
    M = state.rowbits(A)  # (R, |A|)
    holds = np.stack([M[rows[i]].all(axis=0) for i in live])  # (|S|, |A|)
    holds_x = np.stack([M[x].all(axis=0) for x in xrows]) if nz else np.zeros((0, A.size), bool)
    pm = (holds.astype(np.int64) << np.arange(len(live))[:, None]).sum(axis=0)
    vm = np.zeros(A.size, dtype=np.int64)
    for j, s in enumerate(smask):
        vm |= np.where(holds[j], s, 0)
    # at-risk non-sensitive frequent itemsets: those of F' (state.fp), then — rules hidden by confidence
    # keeping their X ∪ Y frequent — the frequent supersets of a confidence rule's X ∪ Y holding no
    # sensitive itemset (state.fx), lost unless a rule whose X ∪ Y they hold is hidden by support
    pos_in_is = np.full(state.ids.size, -1, dtype=np.int64)
    pos_in_is[IS] = np.arange(IS.size)
    need_a = np.asarray(need, dtype=np.int64)
    smask_a = np.asarray(smask, dtype=np.int64)
    holds_f = holds.T.astype(np.float64)  # (|A|, |S|)
    blocks: list[tuple[str, int, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]] = [
        ("fp", k, state.fp[k], state.fp_count[k], None) for k in state.fp
    ]
    if nz:
        always = [rows[i] for i in range(len(patterns)) if not by_conf[i]]  # sensitive itemsets: always in H
        zrows = [rows[live[j]] for j in zl]
        for k, frows in state.fx.items():
            keep = np.ones(frows.shape[0], dtype=bool)
            for srow in always:
                if srow.size <= k:
                    keep &= np.isin(frows, srow).sum(axis=1) != srow.size
            inr = np.stack([np.isin(frows, z).sum(axis=1) == z.size for z in zrows], axis=1)  # (n, nz)
            keep &= inr.any(axis=1)
            if keep.any():
                blocks.append(("fx", k, frows[keep], state.fx_count[k][keep], (np.flatnonzero(keep), inr[keep])))
    risk_cnt, risk_drop, risk_fmask, risk_cont = [], [], [], []
    risk_at: list[tuple[int, np.ndarray]] = []
    cond_at: list[tuple[int, np.ndarray]] = []
    cond_r: list[np.ndarray] = []
    for src, k, frows, cnt, extra in blocks:
        p = pos_in_is[frows]
        fm = np.where(p >= 0, np.left_shift(1, np.maximum(p, 0)), 0).sum(axis=1)
        cand = np.flatnonzero((fm != 0) & (cnt >= minc))
        if cand.size == 0:
            continue
        if cand.size * A.size > _MAX_CELLS:
            raise _too_large(
                f"{A.size:,} affected transactions × {cand.size:,} at-risk itemsets is "
                f"{cand.size * A.size / 1e6:,.0f} M cells to examine (at most {_MAX_CELLS / 1e6:,.0f} M)",
                A.size,
                0,
                max_variables,
                max_constraints,
                sized=False,
            )
        cont = state.contained(M, frows[cand])  # (n, |A|)
        drop = (cont & ((fm[cand][:, None] & vm[None, :]) != 0)).sum(axis=1)
        # a minimal solution (restore module) edits a transaction only if it is critical for some S_j hit
        # there, and at most need_j transactions of D(S_j) lose S_j, so f loses at most
        # Σ_{S_j ∩ f ≠ ∅} min(need_j, |D(S_j ∪ f)|)
        both = np.rint(cont.astype(np.float64) @ holds_f).astype(np.int64)  # (n, |S|)
        meets = (fm[cand][:, None] & smask_a[None, :]) != 0
        drop = np.minimum(drop, (np.minimum(both, need_a[None, :]) * meets).sum(axis=1))
        r = cnt[cand] - drop < minc
        if r.any():
            if src == "fp":
                risk_at.append((k, cand[r]))
            else:
                assert extra is not None
                cond_at.append((k, extra[0][cand[r]]))
                cond_r.append(extra[1][cand[r]])
            risk_cnt.append(cnt[cand[r]])
            risk_drop.append(drop[r])
            risk_fmask.append(fm[cand[r]])
            risk_cont.append(cont[r])
    nf = sum(c.size for c in risk_cnt)
    nf_fp = sum(idx.size for _, idx in risk_at)
    fcnt = np.concatenate(risk_cnt) if nf else np.zeros(0, np.int64)
    fdrop = np.concatenate(risk_drop) if nf else np.zeros(0, np.int64)
    fmask = np.concatenate(risk_fmask) if nf else np.zeros(0, np.int64)
    fcont = np.concatenate(risk_cont) if nf else np.zeros((0, A.size), bool)
    f_rules = np.zeros((nf, nz), dtype=bool)  # rule r whose support route excuses f
    if cond_r:
        f_rules[nf_fp:] = np.concatenate(cond_r)
    # implications: losing f loses every superset (L_sub ≤ L_sup), which tightens the relaxation (F' only:
    # a superset of a confidence rule's X ∪ Y may be excused)
    rid = {k: np.full(state.fp[k].shape[0], -1, dtype=np.int64) for k in state.fp}
    off = 0
    for k, idx in risk_at:
        rid[k][idx] = off + np.arange(idx.size)
        off += idx.size
    imp_sub, imp_sup = [], []
    for k, idx in risk_at:
        if k < 2 or k - 1 not in rid:
            continue
        sup_rows = state.fp[k][idx]
        for drop_col in range(k):
            sub = state.fp_lookup(k - 1, np.delete(sup_rows, drop_col, axis=1))
            r = np.where(sub >= 0, rid[k - 1][np.maximum(sub, 0)], -1)
            ok = r >= 0
            imp_sub.append(r[ok])
            imp_sup.append(rid[k][idx[ok]])
    imp_sub_a = np.concatenate(imp_sub) if imp_sub else np.zeros(0, np.int64)
    imp_sup_a = np.concatenate(imp_sup) if imp_sup else np.zeros(0, np.int64)
    ni = imp_sub_a.size
    # groups of interchangeable transactions
    full = state.lengths[A] == _popcount64(vm)
    key = np.concatenate(
        [
            pm.astype("<i8").view(np.uint8).reshape(A.size, 8),
            full[:, None].astype(np.uint8),
            np.packbits(fcont.T, axis=1),
            np.packbits(holds_x.T, axis=1),
        ],
        axis=1,
    )
    _, first, inv, n_g = np.unique(key, axis=0, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    G = first.size
    g_pm, g_full, g_vm = pm[first], full[first], vm[first]
    g_cont = fcont[:, first]  # (nf, G)
    g_hx = holds_x[:, first]  # (nz, G)
    types: dict[tuple[int, bool], list[int]] = {}
    g_sets = []
    for g in range(G):
        key_t = (int(g_pm[g]), bool(g_full[g]))
        if key_t not in types:
            held = [smask[j] for j in range(len(live)) if key_t[0] >> j & 1]
            types[key_t] = _useful_sets(int(g_vm[g]), held, key_t[1])
        g_sets.append(types[key_t])
    per_g = np.fromiter((len(s) for s in g_sets), dtype=np.int64, count=G)
    nx = int(per_g.sum())
    var_g = np.repeat(np.arange(G), per_g)
    var_p = np.fromiter((p for s in g_sets for p in s), dtype=np.int64, count=nx)
    # aggregated hits: w_{g,φ} = Σ_{P ∩ φ ≠ ∅} x_{g,P}, one per group and distinct φ = f ∩ IS met there
    phis, f_phi = np.unique(fmask, return_inverse=True)
    f_phi = f_phi.ravel()
    in_g = np.zeros((phis.size, G), dtype=bool)
    if nf:
        np.logical_or.at(in_g, (np.repeat(f_phi, G).reshape(nf, G)[g_cont], np.nonzero(g_cont)[1]), True)
    in_g &= (phis[:, None] & g_vm[None, :]) != 0
    w_phi, w_g = np.nonzero(in_g)
    nw = w_phi.size
    w_index = np.full((phis.size, G), -1, dtype=np.int64)
    w_index[w_phi, w_g] = np.arange(nw)
    n_vars = nx + nw + nf + nz
    n_cons = G + len(live) + nw + nf + ni + nz
    if n_vars > max_variables or n_cons > max_constraints:
        raise _too_large("instance too large", n_vars, n_cons, max_variables, max_constraints)
    if progress:
        progress(f"exact: {n_vars:,} variables, {n_cons:,} constraints ({G:,} groups of {A.size:,} transactions)")
    z0 = nx + nw + nf  # first z variable
    # constraint rows: [groups | sensitive | w definitions | at-risk itemsets | implications | confidence]
    ri, ci, vals = [var_g], [np.arange(nx)], [np.ones(nx)]
    row = G
    hits = []  # per live pattern: the x variables whose deletion set breaks it
    for j in range(len(live)):
        sel = np.flatnonzero(((g_pm[var_g] >> j) & 1).astype(bool) & ((var_p & smask[j]) != 0))
        hits.append(sel)
        ri.append(np.full(sel.size, row))
        ci.append(sel)
        vals.append(np.ones(sel.size))
        row += 1
    # the support route of a confidence rule is switched off by z: Σ x + need·z ≥ need
    zcol = {j: c for c, j in enumerate(zl)}
    for j, c in zcol.items():
        ri.append(np.array([G + j]))
        ci.append(np.array([z0 + c]))
        vals.append(np.array([float(need[j])]))
    # w rows: w − Σ x = 0; pairs (w, x) where x's group is w's group and P meets φ
    starts = np.concatenate([[0], np.cumsum(per_g)])
    w_len = per_g[w_g]
    wx_w = np.repeat(np.arange(nw), w_len)
    wx_x = np.repeat(starts[w_g], w_len) + (np.arange(int(w_len.sum())) - np.repeat(np.cumsum(w_len) - w_len, w_len))
    hit = (var_p[wx_x] & phis[w_phi[wx_w]]) != 0
    ri += [row + np.arange(nw), row + wx_w[hit]]
    ci += [nx + np.arange(nw), wx_x[hit]]
    vals += [np.ones(nw), -np.ones(int(hit.sum()))]
    row += nw
    ff, gg = np.nonzero(g_cont)
    wv = w_index[f_phi[ff], gg]
    ok = wv >= 0
    ri.append(row + ff[ok])
    ci.append(nx + wv[ok])
    vals.append(np.ones(int(ok.sum())))
    bigm = (fdrop - (fcnt - minc)).astype(np.float64)
    ri.append(row + np.arange(nf))
    ci.append(nx + nw + np.arange(nf))
    vals.append(-bigm)
    # a superset f of a confidence rule's X ∪ Y is excused when that rule goes by support (z = 0):
    # Σ w − M_f·L_f + M_f·Σ_{r ∈ R_f} z_r ≤ count(f) − minc + M_f·|R_f|
    fr, zr = np.nonzero(f_rules)
    ri.append(row + fr)
    ci.append(z0 + zr)
    vals.append(bigm[fr])
    f_ub = (fcnt - minc).astype(np.float64) + bigm * f_rules.sum(axis=1)
    row += nf
    ri += [row + np.arange(ni), row + np.arange(ni)]
    ci += [nx + nw + imp_sub_a, nx + nw + imp_sup_a]
    vals += [np.ones(ni), -np.ones(ni)]
    row += ni
    # the confidence route (Verykios et al. 2004, §3: hidden when count(X∪Y)/count(X) < C = p/q):
    # (a − d_XY)·q < p·(b − d_X) ⇔ q·d_XY − p·d_X ≥ aq − pb + 1, switched on by z:
    # q·d_XY − p·d_X − (aq − pb + 1 + M_r)·z ≥ −M_r. The transactions of D(X ∪ Y) that lose an item of X
    # are among those counted by d_XY and q ≥ p, so q·d_XY − p·d_X ≥ −p·(transactions of A holding X but
    # not X ∪ Y that can lose an item of X) =: −M_r, the tightest big-M (0 unless another sensitive
    # itemset holds an item of X)
    conf_lb = np.zeros(nz)
    for c, j in enumerate(zl):
        gx = g_hx[c][var_g] & ((var_p & xmask[c]) != 0)  # x variables lowering count(X)
        coef = np.zeros(nx)
        coef[hits[j]] += qc
        coef[gx] -= pc
        nzc = np.flatnonzero(coef)
        a, b = ab[j]
        m_r = float(pc * int((holds_x[c] & ~holds[j] & ((vm & xmask[c]) != 0)).sum()))
        ri += [np.full(nzc.size, row + c), np.array([row + c])]
        ci += [nzc, np.array([z0 + c])]
        vals += [coef[nzc], np.array([-(a * qc - pc * b + 1 + m_r)])]
        conf_lb[c] = -m_r
    Amat = coo_array((np.concatenate(vals), (np.concatenate(ri), np.concatenate(ci))), shape=(n_cons, n_vars)).tocsr()
    lb = np.concatenate(
        [np.full(G, -np.inf), np.asarray(need, dtype=np.float64), np.zeros(nw), np.full(nf + ni, -np.inf), conf_lb]
    )
    ub = np.concatenate(
        [
            n_g.astype(np.float64),
            np.full(len(live), np.inf),
            np.zeros(nw),
            f_ub,
            np.zeros(ni),
            np.full(nz, np.inf),
        ]
    )
    # z fixed where only one route is open
    z_lo = np.array([0.0 if routes[j][0] else 1.0 for j in zl])
    z_hi = np.array([1.0 if routes[j][1] else 0.0 for j in zl])
    lower = np.concatenate([np.zeros(nx + nw + nf), z_lo])
    upper = np.concatenate([n_g[var_g].astype(np.float64), n_g[w_g].astype(np.float64), np.ones(nf), z_hi])
    integrality = np.concatenate([np.ones(nx), np.zeros(nw), np.ones(nf + nz)])
    return IPModel(
        A=A,
        hideable=[patterns[i] for i in live],
        group=inv,
        n_g=n_g,
        per_g=per_g,
        var_g=var_g,
        var_p=var_p,
        IS=IS,
        nx=nx,
        nw=nw,
        nf=nf,
        matrix=Amat,
        lb=lb,
        ub=ub,
        upper=upper,
        integrality=integrality,
        risk_at=risk_at,
        stats={
            "variables": n_vars,
            "constraints": n_cons,
            "groups": G,
            "affected_transactions": int(A.size),
            "at_risk_itemsets": nf,
            "confidence_rules": nz,
        },
        nz=nz,
        lower=lower,
        cond_at=cond_at,
        cond_rules=f_rules[nf_fp:],
        z_patterns=[patterns[live[j]] for j in zl],
    )
