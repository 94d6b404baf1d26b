"""MSAL: l-diversity on several sensitive attributes by bucketing (the multi-sensitive-attribute
algorithm of the thesis on privacy-leakage control in anonymized data publishing, ch. 3,
Algorithm 3.1; see ``docs/references.md``), published like Anatomy (X. Xiao, Y. Tao, "Anatomy:
simple and effective privacy preservation", VLDB 2006): a QI table plus one table per sensitive
attribute, linked by the group id (:mod:`.result`).

1. The sensitive attributes are ranked: the first one given is the primary one. Each must have at
   least ``l`` distinct values.
2. Rows are put in buckets by their primary sensitive value.
3. While at least ``l`` buckets are non-empty: sort the buckets by size (largest first); a group
   starts with a random row of the largest bucket; each next bucket in size order gives its first
   row whose values on the *other* sensitive attributes differ from those of every row already in
   the group (a bucket without such a row is skipped) until the group has ``l`` rows. So every
   sensitive attribute has ``l`` distinct values in the group, one row each. If the buckets cannot
   complete a group, its seed row is set aside for step 4 and grouping goes on.
4. Each row left joins a group that has fewer than ``2l − 1`` rows and in which, after adding it,
   no value of any sensitive attribute is on more than ``|group|/l`` rows (the thesis: the most
   frequent value's share ≤ 1/l); among those, the group whose information loss (Definition 1.1,
   :func:`..metrics.il_total`) grows least. A row that no group can take is not published
   (counted in ``suppressed_rows``).

Guarantee: in every group and for every sensitive attribute, no value is on more than a ``1/l``
share of the rows, so the adversary's posterior for each sensitive attribute separately is at most
``1/l``; distinct and entropy l-diversity hold on each attribute. (The posterior of a
*combination* of values of several attributes is at most ``1/l`` too: the group's rows carry
pairwise different values on every attribute before step 4.)

Vectorization: a bucket's candidates are checked at once (a boolean table per attribute of the
values already in the group); leftovers are scored against every group as array operations.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import AnonymizeError
from ..clustering.common import Rng, encoded, numeric_values, table_range
from ..models import PrivacyModel
from ..registry import BUCKETIZATION, register
from ..table import EncodedTable
from .anatomy import required_l
from .result import BucketizationResult, bucket_tables

__all__ = ["msal"]

ACCEPTS = ["distinct-l-diversity", "entropy-l-diversity"]


@register(
    "msal",
    kind=BUCKETIZATION,
    summary="MSAL: l-diversity on several sensitive attributes by bucketing; QI table + one table per "
    "sensitive attribute (thesis ch. 3)",
    accepts=ACCEPTS,
    options=("seed",),
)
def msal(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> BucketizationResult:
    """Group ``table`` with MSAL (module docstring) over all its sensitive attributes; the tables are
    published under the attributes' names."""
    t0 = time.perf_counter()
    table = encoded(table)
    l, attrs = required_l(models, "msal")
    ns = len(table.schema.sensitive)
    if ns == 0:
        raise AnonymizeError("msal needs at least one sensitive attribute (--sensitive)")
    if any(a is not None for a in attrs):
        raise AnonymizeError("msal makes every sensitive attribute l-diverse; give l without an attribute")
    S = [table.sens_codes[:, a].astype(np.int64) for a in range(ns)]
    Vs = [len(v) for v in table.sens_values]
    for a in range(ns):
        d = int((np.bincount(S[a], minlength=Vs[a]) > 0).sum())
        if d < l:
            raise AnonymizeError(
                f"msal with l = {l}: sensitive attribute '{table.schema.sensitive[a]}' has only {d} distinct "
                f"value(s), so l can be at most {d}"
            )
    n = table.n
    rng = Rng(seed)
    alive = np.ones(n, dtype=bool)
    buckets = [np.flatnonzero(S[0] == v) for v in range(Vs[0])]
    left = np.array([len(b) for b in buckets], dtype=np.int64)
    gid = np.full(n, -1, dtype=np.int64)
    used = [np.zeros(V, dtype=bool) for V in Vs]
    g = 0
    failed = 0
    while int((left > 0).sum()) >= l:
        order = np.argsort(-left, kind="stable")
        b0 = int(order[0])
        rows0 = buckets[b0][alive[buckets[b0]]]
        members = [rng.choice(rows0)]
        for a in range(ns):
            used[a][:] = False
            used[a][S[a][members[0]]] = True
        for b in order[1:].tolist():
            if left[b] == 0 or len(members) == l:
                break
            rows = buckets[b]
            rows = rows[alive[rows]]
            ok = np.ones(len(rows), dtype=bool)
            for a in range(1, ns):
                ok &= ~used[a][S[a][rows]]
            hit = np.flatnonzero(ok)
            if len(hit):
                r = int(rows[hit[0]])
                members.append(r)
                for a in range(ns):
                    used[a][S[a][r]] = True
        if len(members) < l:  # the seed cannot start a group now: it waits for step 4
            alive[members[0]] = False
            left[S[0][members[0]]] -= 1
            failed += 1
            continue
        mem = np.asarray(members)
        alive[mem] = False
        gid[mem] = g
        np.subtract.at(left, S[0][mem], 1)
        g += 1
        if g % 512 == 0:  # drop published rows from the bucket arrays
            buckets = [b[alive[b]] for b in buckets]
            if progress:
                progress(f"msal: {g} groups")
    if g == 0:
        raise AnonymizeError(f"msal: no group of {l} rows with {l} distinct values on every sensitive attribute exists")
    left_rows = np.flatnonzero(gid < 0)
    n_sup = _place_leftovers(table, gid, g, left_rows, S, Vs, l)
    names = list(table.schema.sensitive)
    qi, tabs = bucket_tables(table, gid, list(range(ns)), names)
    stats = {
        "l": l,
        "groups": g,
        "leftover_rows": int(len(left_rows)),
        "suppressed_rows": n_sup,
        "seeds_set_aside": failed,
        "primary_sensitive": names[0],
        "seed": seed,
        "seconds": time.perf_counter() - t0,
    }
    return BucketizationResult(gid, g, qi, tabs, list(range(ns)), l, stats)


def _place_leftovers(table: EncodedTable, gid: np.ndarray, G: int, rows: np.ndarray, S, Vs, l: int) -> int:
    """Step 4 (module docstring): place each leftover row, in place in ``gid``; returns how many
    rows could not be placed."""
    if len(rows) == 0:
        return 0
    cap = 2 * l - 1
    pub = gid >= 0
    size = np.bincount(gid[pub], minlength=G).astype(np.int64)
    hist = [np.zeros((G, V), dtype=np.int64) for V in Vs]
    for a in range(len(Vs)):
        np.add.at(hist[a], (gid[pub], S[a][pub]), 1)
    # Definition 1.1 state per group: numeric min/max, categorical distinct values present
    hs = table.hierarchies
    qc = table.qi_codes
    num = [j for j, h in enumerate(hs) if h.numeric]
    cat = [j for j, h in enumerate(hs) if not h.numeric]
    vals = {j: numeric_values(hs[j]) for j in num}
    rng_ = {j: table_range(hs[j], qc[:, j]) for j in num}
    lo = {j: np.full(G, np.inf) for j in num}
    hi = {j: np.full(G, -np.inf) for j in num}
    for j in num:
        np.minimum.at(lo[j], gid[pub], vals[j][qc[pub, j]])
        np.maximum.at(hi[j], gid[pub], vals[j][qc[pub, j]])
    pres = {j: np.zeros((G, hs[j].n_leaves), dtype=bool) for j in cat}
    ndom = {j: max(1, int(np.count_nonzero(np.bincount(qc[:, j], minlength=hs[j].n_leaves)))) for j in cat}
    for j in cat:
        pres[j][gid[pub], qc[pub, j]] = True
    n_sup = 0
    for r in rows.tolist():
        ok = size < cap
        for a in range(len(Vs)):
            ok &= (hist[a][:, S[a][r]] + 1) * l <= size + 1
        cand = np.flatnonzero(ok)
        if len(cand) == 0:
            n_sup += 1
            continue
        # IL(e ∪ r) − IL(e), IL(e) = |e|·(Σ (max − min)/|N| + Σ distinct/|C|)
        sz = size[cand].astype(np.float64)
        per_old = np.zeros(len(cand))
        per_new = np.zeros(len(cand))
        for j in num:
            x = vals[j][qc[r, j]]
            w_old = (hi[j][cand] - lo[j][cand]) / rng_[j]
            w_new = (np.maximum(hi[j][cand], x) - np.minimum(lo[j][cand], x)) / rng_[j]
            per_old += w_old
            per_new += w_new
        for j in cat:
            dcnt = pres[j][cand].sum(axis=1)
            per_old += dcnt / ndom[j]
            per_new += (dcnt + ~pres[j][cand, qc[r, j]]) / ndom[j]
        inc = (sz + 1) * per_new - sz * per_old
        pick = int(cand[int(np.argmin(inc))])
        gid[r] = pick
        size[pick] += 1
        for a in range(len(Vs)):
            hist[a][pick, S[a][r]] += 1
        for j in num:
            x = vals[j][qc[r, j]]
            lo[j][pick] = min(lo[j][pick], x)
            hi[j][pick] = max(hi[j][pick], x)
        for j in cat:
            pres[j][pick, qc[r, j]] = True
    return n_sup
