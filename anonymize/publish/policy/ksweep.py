"""The optimal full-domain k-anonymous release for every k of a range, from one pass over the lattice.

A node's equivalence classes do not depend on k: only which of them fail does (those with fewer
than k rows). So instead of one search per k, :func:`k_sweep` evaluates every node that can
satisfy the smallest k once — its frequency set rolled up from a cached specialization
(:class:`..fulldomain.Lattice`, Incognito's roll-up) — and derives, for all k at once, what the
lattice's check and metrics would give (the DM of R. J. Bayardo, R. Agrawal, "Data privacy through
optimal k-anonymization", ICDE 2005; the NCP of
:meth:`.fulldomain.Lattice.complete`; this project's CDM):

    suppressed(k) = Σ_{|E| < k} |E|,   ok(k) = suppressed(k) ≤ MaxSup  [and the ``*`` class ≥ k],
    DM(k) = Σ|E|² − Σ_{|E|<k} |E|² + suppressed(k)·n,
    NCP(k) = (Σ_E |E|·loss(E) − Σ_{|E|<k} |E|·loss(E) + suppressed(k)·q) / (n·q),
    CDM(k) = (Σ|E|² − Σ_{|E|<k} |E|²) / #{E : |E| ≥ k}

— prefix sums over the class sizes bucketed at min(|E|, k_max + 1), one ``np.bincount`` each.

Which nodes: "suppressed(k) ≤ MaxSup" is monotone under generalization (merged classes are at
least as large), so every node satisfying some k ≥ k_lo lies above a minimal node of
"suppressed(k_lo) ≤ MaxSup"; Flash (F. Kohlmayer, F. Prasser, C. Eckert, A. Kemper, K. A. Kuhn,
"Flash: efficient, stable and optimal k-anonymity", PASSAT 2012) finds those minimal nodes and
the sweep evaluates their up-closure. For each k the chosen node minimizes the same key as
:func:`.fulldomain.result.metric_key` (metric, NCP, DM, height, levels) over **all** satisfying
nodes — the optimum :func:`.fulldomain.optimum.best_node` returns, so the choice equals what Flash
and Incognito choose for that k (tested).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import AnonymizeError
from ..fulldomain.engine import Lattice
from ..fulldomain.flash import flash
from ..models import KAnonymity
from ..table import EncodedTable

__all__ = ["KSweep", "k_sweep"]


class KSweep:
    """Result of :func:`k_sweep`: for every k, the chosen node's levels (None when no node
    satisfies k) and its DM / NCP / CDM / suppressed rows / classes as the lattice computes them.
    ``stats`` — nodes evaluated, region size, seconds."""

    def __init__(self, ks: list[int], chosen: dict, stats: dict):
        self.ks = ks
        self.chosen = chosen
        self.stats = stats

    def levels(self, k: int) -> tuple | None:
        """Levels of the node chosen for ``k`` (None: no full-domain generalization satisfies it)."""
        got = self.chosen.get(k)
        return None if got is None else got["levels"]


def k_sweep(
    table: EncodedTable,
    ks: Sequence[int],
    *,
    max_suppression: float = 0.0,
    suppressed_rows: str = "star",
    metric: str = "ncp",
    progress: Callable[[str], None] | None = None,
) -> KSweep:
    """The optimal full-domain k-anonymous node for every k in ``ks`` (module docstring), chosen by
    ``metric`` (``ncp``, ``dm`` or ``cdm``) among all nodes whose classes of fewer than k rows hold at
    most ``⌊max_suppression·n⌋`` rows (``suppressed_rows='star'``: and, when some are suppressed, at
    least k of them, since they are released as one ``*`` class; ``'drop'`` and ``'arx'`` — ARX's
    outliers, the ``*`` group not judged — ask nothing of the suppressed rows)."""
    if metric not in ("ncp", "dm", "cdm"):
        raise AnonymizeError(f"the k sweep chooses by ncp, dm or cdm, not '{metric}'")
    t0 = time.perf_counter()
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise AnonymizeError("k values must be positive integers")
    valid = [k for k in ks if k <= table.n]
    chosen: dict = dict.fromkeys(ks)
    stats = {"nodes_in_lattice": 0, "region_nodes": 0, "evaluated": 0, "seconds": 0.0}
    if not valid:
        return KSweep(ks, chosen, stats)
    k_lo, k_hi = valid[0], valid[-1]
    lat = Lattice(table, [KAnonymity(k_lo)], max_suppression, suppressed_rows="drop")
    grid = lat.grid()
    stats["nodes_in_lattice"] = grid.N
    try:
        border = flash(lat, metric="height").nodes  # minimal nodes of "suppressed(k_lo) <= MaxSup"
    except AnonymizeError:
        stats["seconds"] = time.perf_counter() - t0
        return KSweep(ks, chosen, stats)
    region = bytearray(grid.N)
    stack = [grid.index_of(b.levels) for b in border]
    while stack:
        x = stack.pop()
        if not region[x]:
            region[x] = 1
            stack.extend(s for s in grid.succ[x] if not region[s])
    nodes = sorted((i for i in range(grid.N) if region[i]), key=lambda i: (grid.height[i], i))
    stats["region_nodes"] = len(nodes)
    kv = np.asarray(valid, dtype=np.int64)
    R, K = len(nodes), len(kv)
    per_node, _ = lat.loss_tables()
    n, q = float(lat.n), lat.q
    ok = np.zeros((R, K), dtype=bool)
    dm = np.zeros((R, K))
    ncp = np.zeros((R, K))
    cdm = np.zeros((R, K))
    sup_rows = np.zeros((R, K), dtype=np.int64)
    n_cls = np.zeros((R, K), dtype=np.int64)
    for r, i in enumerate(nodes):
        lv = grid.levels[i]
        fs = lat.frequency_set(lv, lat.source_for(lv))
        lat.remember(fs)
        c = fs.counts
        codes = lat.tuple_codes(fs)
        loss = np.zeros(len(c))
        for j in range(q):
            loss += per_node[j][lv[j]][codes[:, j]]
        cf = c.astype(np.float64)
        b = np.minimum(c, k_hi + 1)
        # below[x] = Σ over classes with |E| <= x; "fewer than k" is below[k − 1]
        s0 = np.bincount(b, weights=cf, minlength=k_hi + 2).cumsum()[kv - 1]
        s1 = np.bincount(b, weights=cf * cf, minlength=k_hi + 2).cumsum()[kv - 1]
        s2 = np.bincount(b, weights=cf * loss, minlength=k_hi + 2).cumsum()[kv - 1]
        cnt = np.bincount(b, minlength=k_hi + 2).cumsum()[kv - 1]
        tot_sq = float(np.dot(cf, cf))
        tot_loss = float(np.dot(cf, loss))
        sup = np.rint(s0).astype(np.int64)
        good = sup <= lat.max_sup
        if suppressed_rows == "star":
            good &= (sup == 0) | (sup >= kv)
        ok[r] = good
        sup_rows[r] = sup
        n_cls[r] = len(c) - cnt
        dm[r] = tot_sq - s1 + sup * n
        ncp[r] = (tot_loss - s2 + sup * q) / (n * q) if q else 0.0
        kept_sq = tot_sq - s1
        cdm[r] = np.where(n_cls[r] > 0, kept_sq / np.maximum(n_cls[r], 1), 0.0)
        if progress and r % 500 == 0:
            progress(f"k sweep: {r:,} of {R:,} lattice nodes evaluated")
    stats["evaluated"] = R
    levels = np.array([grid.levels[i] for i in nodes], dtype=np.int64).reshape(R, q)
    height = levels.sum(axis=1)
    first = {"ncp": ncp, "dm": dm, "cdm": cdm}[metric]
    for x, k in enumerate(valid):
        cand = np.flatnonzero(ok[:, x])
        if len(cand) == 0:
            continue
        # lexicographic (metric, round(ncp, 12), dm, height, levels) — metric_key's order
        keys = [levels[cand, j] for j in range(q - 1, -1, -1)]
        keys += [height[cand], dm[cand, x], np.round(ncp[cand, x], 12), first[cand, x]]
        best = cand[np.lexsort(keys)[0]]
        chosen[k] = {
            "levels": tuple(int(v) for v in levels[best]),
            "ncp": float(ncp[best, x]),
            "dm": float(dm[best, x]),
            "cdm": float(cdm[best, x]),
            "suppressed": int(sup_rows[best, x]),
            "classes": int(n_cls[best, x]),
        }
    stats["seconds"] = time.perf_counter() - t0
    return KSweep(ks, chosen, stats)
