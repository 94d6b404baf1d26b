"""LCA-FC and LCA-RC: l-diverse clustering (the l-diverse clustering algorithms of the thesis on
privacy-leakage control in anonymized data publishing, ch. 2, Algorithms 2.1 and 2.2; see
``docs/references.md``). Classes are distinct-l-diverse (Machanavajjhala, Kifer, Gehrke,
Venkitasubramaniam, "l-Diversity: privacy beyond k-anonymity", ACM TKDD 2007): at least ``l``
distinct sensitive values each.

Both algorithms, given ``T`` and ``l`` (here also ``k``: classes need ``max(k, l)`` rows):

1. if ``T`` has at least ``l`` distinct sensitive values, choose a seed record ``r``; cluster
   ``C = {r}``, centroid = ``r``;
2. while ``|C| < l``: among the candidate records whose sensitive value is not yet in ``C``, add
   the one with the least information loss ``IL({record} ∪ {centroid})`` and update the centroid
   (numeric QIs: the mean; categorical QIs: the most frequent value);
3. repeat from 1 while the records left can still make an l-diverse cluster;
4. every record left joins the cluster with the least ``IL(record ∪ centroid)`` among clusters with
   fewer than ``2l − 1`` records (here ``2·max(k, l) − 1``; when every cluster is that large, the
   least-IL cluster).

IL is the thesis's Definition 1.1 (:func:`..metrics.il_total`):
``IL(e) = |e|·(Σ_numeric (max − min)/|N_i| + Σ_categorical distinct(e)/|C_j|)`` with ``|N_i|`` the
attribute's range and ``|C_j|`` its number of distinct values in ``T``.

* **LCA-FC** ("furthest seed, compare with centroid"): the first seed is drawn at random (with
  ``seed``), each next seed is the record left that is farthest — largest IL — from the previous
  seed; candidates are the records whose sensitive value differs from the seed's.
* **LCA-RC** ("random seed, compare with centroid"): the seed is drawn at random among the records
  carrying the currently most frequent sensitive value (set ``LS``); candidates are
  ``T − LS − {records of the least frequent value}`` (Algorithm 2.2, step 1). When these
  candidates cannot complete the cluster, every record left with a new sensitive value is
  allowed (otherwise the cluster could not reach ``l`` when ``l`` = number of values).

The thesis publishes each cluster as its centroid record; here clusters are released by the
shared partition code (numeric QIs as the cluster's range or, with ``--numeric-output mean``, its
mean; categorical QIs as the lowest common ancestor of the values) so that a categorical mode does
not misstate the other records. Every class is checked with :class:`..classes.ClassChecker`.

Vectorization: a step scores every distinct (QI, sensitive) row left as a sum of per-leaf tables —
``2|v − mean|/|N|`` or ``2(1 + [v ≠ mode])/|C|`` — plus a sensitive-value table that is +inf for
values already in the cluster or outside the candidate set (:class:`.common.Remaining`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import AnonymizeError
from ..classes import ClassChecker, class_stats
from ..models import PrivacyModel, check_feasible, check_fits
from ..registry import CLUSTERING, PartitionResult, register
from ..table import EncodedTable
from .common import CodePacker, Remaining, Rng, TakeLog, distinct_rows, encoded, numeric_values, table_range

__all__ = ["lca_fc", "lca_rc", "lca_clustering", "VARIANTS"]

VARIANTS = ("fc", "rc")
ACCEPTS = ["k-anonymity", "distinct-l-diversity"]


def _requirements(table: EncodedTable, models: Sequence[PrivacyModel], name: str) -> tuple[int, int, int | None]:
    """``(k, l, sensitive column)`` from the models (k = 1 without k-anonymity, l = 1 without l)."""
    k = max([m.minimal_class_size for m in models if m.name == "k-anonymity"], default=1)
    lm = [m for m in models if m.name == "distinct-l-diversity"]
    l = max([m.minimal_class_size for m in lm], default=1)
    sens = None
    if lm:
        cols = sorted({j for m in lm for j in table.sens_index(getattr(m, "attribute", None))})
        if len(cols) != 1:
            raise AnonymizeError(
                f"algorithm '{name}' protects one sensitive attribute; name it in the l-diversity model "
                "(or use msal for several)"
            )
        sens = cols[0]
    if not lm and not [m for m in models if m.name == "k-anonymity"]:
        raise AnonymizeError(f"algorithm '{name}' needs k-anonymity or distinct l-diversity")
    return k, l, sens


class _IL:
    """Definition 1.1 terms of ``{record, centroid}`` as per-leaf tables."""

    def __init__(self, table: EncodedTable):
        hs = table.hierarchies
        self.numeric = [bool(h.numeric) for h in hs]
        self.vals: list[np.ndarray] = [numeric_values(h) if h.numeric else np.zeros(0) for h in hs]
        self.rng = [table_range(h, table.qi_codes[:, j]) if h.numeric else 1.0 for j, h in enumerate(hs)]
        self.L = [h.n_leaves for h in hs]
        self.ndom = [
            max(1, int(np.count_nonzero(np.bincount(table.qi_codes[:, j], minlength=h.n_leaves))))
            for j, h in enumerate(hs)
        ]

    def tables(self, centroid: list) -> list[np.ndarray]:
        out = []
        for j, c in enumerate(centroid):
            if self.numeric[j]:
                out.append(2.0 * np.abs(self.vals[j] - c) / self.rng[j])
            else:
                t = np.full(self.L[j], 4.0 / self.ndom[j])
                t[int(c)] = 2.0 / self.ndom[j]
                out.append(t)
        return out

    def point(self, codes: np.ndarray) -> list:
        return [self.vals[j][c] if self.numeric[j] else int(c) for j, c in enumerate(codes)]


class _Centroid:
    """Running mean (numeric) and mode (categorical) of a cluster."""

    def __init__(self, il: _IL):
        self.il = il
        self.n = 0
        self.sums = [0.0] * len(il.L)
        self.counts = [np.zeros(L, dtype=np.int64) for L in il.L]

    def add(self, codes: np.ndarray, times: int) -> None:
        self.n += times
        for j, c in enumerate(codes):
            if self.il.numeric[j]:
                self.sums[j] += times * float(self.il.vals[j][c])
            else:
                self.counts[j][c] += times

    def value(self) -> list:
        return [
            self.sums[j] / self.n if self.il.numeric[j] else int(np.argmax(self.counts[j]))
            for j in range(len(self.sums))
        ]


def lca_clustering(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    variant: str = "fc",
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> PartitionResult:
    """LCA-FC (``variant='fc'``) or LCA-RC (``'rc'``) clustering (module docstring); every class has
    ``≥ max(k, l)`` rows and ``≥ l`` distinct values of the sensitive attribute."""
    if variant not in VARIANTS:
        raise AnonymizeError(f"unknown LCA variant '{variant}' (use fc or rc)")
    name = f"lca-{variant}"
    t0 = time.perf_counter()
    table = encoded(table)
    k, l, sj = _requirements(table, models, name)
    check_fits(models, table.n)
    check_feasible(models, class_stats(table, np.zeros(table.n, dtype=np.int64), 1), False)
    size_need = max(k, l)
    il = _IL(table)
    q = table.q
    sens = table.sens_codes[:, sj] if sj is not None else np.zeros(table.n, dtype=np.int32)
    V = len(table.sens_values[sj]) if sj is not None else 1
    codes = np.column_stack([table.qi_codes, sens])
    U, inv, cnt = distinct_rows(codes)
    rem = Remaining(U, cnt, CodePacker(il.L + [V]))
    sens_left = np.bincount(U[:, q], weights=cnt, minlength=V).astype(np.int64)
    rng = Rng(seed)
    log = TakeLog()
    clusters: list[list] = []
    sizes: list[int] = []
    steps = 0
    prev_seed: np.ndarray | None = None
    zero_s = np.zeros(V)

    def take(pos: np.ndarray, times: np.ndarray, c: int) -> None:
        log.add(rem.ids[pos], c, times)
        np.subtract.at(sens_left, U[rem.ids[pos], q], times)
        rem.take(pos, times)

    while rem.tuples >= size_need and int((sens_left > 0).sum()) >= l:
        c = len(clusters)
        # ---- seed
        if variant == "fc":
            if prev_seed is None:
                live = rem.live()
                pos = rng.choice(np.repeat(live, rem.cnt[live]))
            else:
                d = rem.score(il.tables(il.point(prev_seed[:q])) + [zero_s])
                d[np.isinf(d)] = -np.inf
                pos = int(np.argmax(d))
        else:
            ls_value = int(np.argmax(sens_left))
            live = rem.live()
            in_ls = live[U[rem.ids[live], q] == ls_value]
            pos = rng.choice(np.repeat(in_ls, rem.cnt[in_ls]))
        first_entry = len(log.rows)
        seed_codes = U[rem.ids[pos]]
        prev_seed = seed_codes
        cen = _Centroid(il)
        cen.add(seed_codes[:q], 1)
        in_c = np.zeros(V, dtype=bool)
        in_c[seed_codes[q]] = True
        take(np.array([pos]), np.ones(1, dtype=np.int64), c)
        # ---- candidate set (a +inf table over sensitive values)
        allowed = np.ones(V, dtype=bool)
        if variant == "fc":
            allowed[seed_codes[q]] = False
        else:
            present = np.flatnonzero(sens_left > 0)
            allowed[ls_value] = False
            if len(present):
                allowed[present[np.argmin(sens_left[present])]] = False
        size = 1
        complete = True
        while size < size_need or int(in_c.sum()) < l:
            steps += 1
            need_new = int(in_c.sum()) < l
            mask = allowed & ~in_c if need_new else np.ones(V, dtype=bool)
            if need_new and not (mask & (sens_left > 0)).any():
                mask = ~in_c  # the candidate set cannot complete the cluster: any new value
            if not (mask & (sens_left > 0)).any():
                complete = False
                break
            s_tab = np.where(mask, 0.0, np.inf)
            d = rem.score(il.tables(cen.value()) + [s_tab])
            best = int(np.argmin(d))
            times = 1 if need_new else min(int(rem.cnt[best]), size_need - size)
            row = U[rem.ids[best]]
            cen.add(row[:q], times)
            in_c[row[q]] = True
            take(np.array([best]), np.array([times], dtype=np.int64), c)
            size += times
        if not complete:  # give the cluster's rows back to the leftovers
            for e in range(first_entry, len(log.cls)):
                log.cls[e] = np.full_like(log.cls[e], -1)
            break
        clusters.append(cen.value())
        sizes.append(size)
        if progress and len(clusters) % 500 == 0:
            progress(f"{name}: {len(clusters)} clusters, {rem.tuples} records left")
    if not clusters:
        raise AnonymizeError(f"{name}: no l-diverse cluster could be formed (l = {l}, k = {k})")
    # ---- leftovers (and the rows of an incomplete last cluster) join the least-IL cluster
    class_id = log.labels(inv)
    left_rows = np.flatnonzero(class_id < 0)
    n_left = len(left_rows)
    if n_left:
        C = len(clusters)
        cap = 2 * size_need - 1
        size_arr = np.asarray(sizes, dtype=np.int64)
        cols = []
        for j in range(q):
            cv = np.array([cl[j] for cl in clusters])
            cols.append(cv)
        # IL of each distinct leftover QI row to every centroid, then one assignment per row
        lu, linv, _ = distinct_rows(table.qi_codes[left_rows])
        for u in range(len(lu)):
            cost = np.zeros(C)
            for j in range(q):
                v = lu[u, j]
                if il.numeric[j]:
                    cost += 2.0 * np.abs(il.vals[j][v] - cols[j]) / il.rng[j]
                else:
                    cost += np.where(cols[j] == v, 2.0, 4.0) / il.ndom[j]
            for r in left_rows[linv == u].tolist():
                open_ = size_arr < cap
                pick = int(np.argmin(np.where(open_, cost, np.inf))) if open_.any() else int(np.argmin(cost))
                class_id[r] = pick
                size_arr[pick] += 1
    n_classes = len(clusters)
    ok = ClassChecker(table, models).ok_labels(class_id, n_classes)
    if not ok.all():  # cannot happen for k-anonymity and distinct l-diversity (adding rows keeps both)
        raise AnonymizeError(f"{name}: internal error: {int((~ok).sum())} class(es) fail the privacy models")
    stats = {
        "k": k,
        "l": l,
        "clusters": n_classes,
        "greedy_steps": steps,
        "leftover_rows": int(n_left),
        "seed": seed,
        "seconds": time.perf_counter() - t0,
    }
    return PartitionResult(class_id, n_classes, stats=stats)


@register(
    "lca-fc",
    kind=CLUSTERING,
    summary="LCA-FC: l-diverse clustering, furthest-first seeds, centroid = mean / mode (thesis ch. 2)",
    accepts=ACCEPTS,
    options=("seed",),
)
def lca_fc(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> PartitionResult:
    """LCA-FC (Algorithm 2.1): :func:`lca_clustering` with furthest-first seeds."""
    return lca_clustering(table, models, "fc", seed=seed, progress=progress)


@register(
    "lca-rc",
    kind=CLUSTERING,
    summary="LCA-RC: l-diverse clustering, random seeds of the most frequent sensitive value (thesis ch. 2)",
    accepts=ACCEPTS,
    options=("seed",),
)
def lca_rc(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> PartitionResult:
    """LCA-RC (Algorithm 2.2): :func:`lca_clustering` with random seeds from the most frequent value."""
    return lca_clustering(table, models, "rc", seed=seed, progress=progress)
