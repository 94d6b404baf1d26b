"""Anatomy (Xiao & Tao, "Anatomy: simple and effective privacy preservation", VLDB 2006, §5,
Algorithm *Anatomize*): l-diverse groups published as a QI table and a sensitive table linked by
the group id (:mod:`.result`).

1. Hash the rows into buckets by sensitive value.
2. While at least ``l`` buckets are non-empty: a new group takes one row (an arbitrary one — here
   drawn with ``seed``) from each of the ``l`` currently largest buckets.
3. Each residual row (at most ``l − 1`` are left, from distinct buckets) joins a group, drawn at
   random, that does not contain its sensitive value.

The table must be *eligible*: no sensitive value on more than ``n/l`` rows (Xiao & Tao, §5);
otherwise no l-diverse partition exists and the error names the value. Every group has ``l`` or
``l + 1`` distinct values, each on one row, so an adversary's posterior for any row's sensitive
value is at most ``1/l`` (their Theorem 1). This gives distinct l-diversity and entropy
l-diversity (``−Σ p log p ≥ −log max p ≥ log l``); a k-anonymity model cannot be honoured, since
the QI values are published exactly.

Cost: O(n log V) — one step per group over the ``V`` bucket sizes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ...errors import AnonymizeError
from ..clustering.common import Rng, encoded
from ..models import PrivacyModel
from ..registry import BUCKETIZATION, register
from ..table import EncodedTable
from .result import BucketizationResult, bucket_tables

__all__ = ["anatomy", "required_l"]

ACCEPTS = ["distinct-l-diversity", "entropy-l-diversity"]


def required_l(models: Sequence[PrivacyModel], name: str) -> tuple[int, list]:
    """The integer ``l`` the groups need (distinct l; ⌈l⌉ for entropy l) and the models' attributes."""
    ls = []
    attrs = []
    for m in models:
        if m.name in ACCEPTS:
            ls.append(m.minimal_class_size)
            attrs.append(getattr(m, "attribute", None))
    if not ls:
        raise AnonymizeError(f"algorithm '{name}' needs l-diversity (give l)")
    return max(ls), attrs


@register(
    "anatomy",
    kind=BUCKETIZATION,
    summary="Anatomy: l-diverse groups, QI table + sensitive table (Xiao & Tao, VLDB 2006)",
    accepts=ACCEPTS,
    options=("seed",),
)
def anatomy(
    table: EncodedTable,
    models: Sequence[PrivacyModel],
    *,
    seed: int | None = 0,
    progress: Callable[[str], None] | None = None,
) -> BucketizationResult:
    """Anatomize ``table`` (module docstring) for its one sensitive attribute; the sensitive table
    is published as ``tables['sensitive']``."""
    t0 = time.perf_counter()
    table = encoded(table)
    l, attrs = required_l(models, "anatomy")
    if not table.schema.sensitive:
        raise AnonymizeError("anatomy needs a sensitive attribute (--sensitive)")
    if len(table.schema.sensitive) != 1:
        raise AnonymizeError(
            f"anatomy publishes one sensitive attribute, {len(table.schema.sensitive)} given "
            "(use msal for several sensitive attributes)"
        )
    for a in attrs:
        table.sens_index(a)
    n = table.n
    s = table.sens_codes[:, 0].astype(np.int64)
    V = len(table.sens_values[0])
    counts = np.bincount(s, minlength=V)
    worst = int(np.argmax(counts))
    if counts[worst] * l > n:
        raise AnonymizeError(
            f"anatomy with l = {l} needs every sensitive value on at most n/l = {n / l:g} rows; "
            f"'{table.sens_values[0][worst]}' is on {int(counts[worst])} of {n} (l can be at most "
            f"{n // int(counts[worst])})"
        )
    if int((counts > 0).sum()) < l:
        raise AnonymizeError(f"anatomy with l = {l} needs at least {l} distinct sensitive values")
    rng = Rng(seed)
    # bucket v = rows with value v, in random order; rows are popped from the end
    perm = rng.gen.permutation(n)
    by_val = perm[np.argsort(s[perm], kind="stable")]
    start = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    left = counts.astype(np.int64).copy()
    gid = np.full(n, -1, dtype=np.int64)
    g = 0
    while int((left > 0).sum()) >= l:
        top = np.argsort(-left, kind="stable")[:l]  # the l largest buckets (ties: value order)
        left[top] -= 1
        gid[by_val[start[top] + left[top]]] = g
        g += 1
        if progress and g % 2000 == 0:
            progress(f"anatomy: {g} groups")
    # residues: at most l-1 rows, each to a random group without its value
    res_rows = [int(by_val[start[v] + i]) for v in np.flatnonzero(left > 0).tolist() for i in range(int(left[v]))]
    if res_rows:
        pres = np.zeros((g, V), dtype=bool)
        done = gid >= 0
        pres[gid[done], s[done]] = True
        for r in res_rows:
            cand = np.flatnonzero(~pres[:, s[r]])
            if len(cand) == 0:  # cannot happen on an eligible table (Xiao & Tao, §5)
                raise AnonymizeError("anatomy: internal error: a residual row found no group without its value")
            pick = rng.choice(cand)
            gid[r] = pick
            pres[pick, s[r]] = True
    qi, tabs = bucket_tables(table, gid, [0], ["sensitive"])
    stats = {"l": l, "groups": g, "residual_rows": len(res_rows), "seed": seed, "seconds": time.perf_counter() - t0}
    return BucketizationResult(gid, g, qi, tabs, [0], l, stats)
