"""Seeded synthetic market-basket data in the manner of the IBM Quest generator (Agrawal–Srikant 1994).

    python benchmarks/synthetic_transactions.py OUT.npz [--transactions 1000000] [--seed 0] ...

R. Agrawal, R. Srikant, "Fast Algorithms for Mining Association Rules",
VLDB 1994, §4.1 (the model behind the FIMI files T10I4D100K etc.):

* |L| *potentially large itemsets* ("patterns"): sizes Poisson(|I|) (≥ 1);
  each shares a fraction ~ Exp(mean 0.5) of its items with the previous one,
  the rest drawn uniformly from N items; weights Exp(1), normalized;
  a corruption level c ~ N(0.5, 0.1) clipped to [0, 1] per pattern.
* Transactions: sizes Poisson(|T|) (≥ 1), filled with patterns picked by
  weight; from each pick, items are dropped while a uniform draw is < c.

Vectorized (no loop per transaction): picks are drawn as one stream and laid
end to end over the concatenated transactions; a pick belongs wholly to the
transaction its first item falls in (the paper moves an overflowing pattern
to the next transaction half of the time; here it always stays, so sizes run
slightly above |T|). Kept items are a random rotation of the pattern.
Duplicate items in a transaction are merged. Same arguments and seed → the
same database.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from anonymize.itemsets import TransactionDB  # noqa: E402

__all__ = ["quest_transactions"]


def _patterns(rng: np.random.Generator, n_patterns: int, avg_size: float, n_items: int, correlation: float):
    sizes = np.maximum(rng.poisson(avg_size, n_patterns), 1)
    pats: list[np.ndarray] = []
    prev = rng.choice(n_items, size=min(int(sizes[0]), n_items), replace=False)
    for s in sizes:  # |L| = a few thousand patterns: a loop over patterns, not transactions
        s = min(int(s), n_items)
        share = min(int(round(min(rng.exponential(correlation), 1.0) * s)), prev.size)
        from_prev = rng.choice(prev, size=share, replace=False) if share else np.zeros(0, np.int64)
        fresh = rng.choice(n_items, size=min(s + share, n_items), replace=False)
        items = np.concatenate([from_prev, fresh[~np.isin(fresh, from_prev)][: s - share]])
        rng.shuffle(items)
        pats.append(items)
        prev = items
    lens = np.array([p.size for p in pats])
    mat = np.full((n_patterns, int(lens.max())), -1, np.int64)
    for i, p in enumerate(pats):
        mat[i, : p.size] = p
    weights = rng.exponential(1.0, n_patterns)
    corruption = np.clip(rng.normal(0.5, 0.1, n_patterns), 0.0, 1.0)
    return mat, lens, weights / weights.sum(), corruption


def quest_transactions(
    n_transactions: int,
    *,
    avg_size: float = 10.0,
    avg_pattern: float = 4.0,
    n_patterns: int = 2000,
    n_items: int = 1000,
    correlation: float = 0.5,
    seed: int = 0,
) -> TransactionDB:
    """A ``TxIyDz``-style database (defaults: T10I4, |L| = 2000, N = 1000 items), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    mat, lens, weights, corruption = _patterns(rng, n_patterns, avg_pattern, n_items, correlation)
    tsize = np.maximum(rng.poisson(avg_size, n_transactions), 1)
    ends = np.cumsum(tsize)
    total = int(ends[-1])
    mean_kept = float((weights * lens * (1 - corruption)).sum()) or 1.0
    pick_t, pick_p, pick_k = [], [], []
    filled = 0
    while filled < total:  # a few batches of picks
        m = int((total - filled) / mean_kept * 1.1) + 1024
        p = rng.choice(n_patterns, size=m, p=weights)
        drops = rng.geometric(1.0 - np.minimum(corruption[p], 0.999)) - 1  # drop while U < c
        kept = np.maximum(lens[p] - drops, 0)
        start = filled + np.concatenate([[0], np.cumsum(kept)[:-1]])
        ok = (kept > 0) & (start < total)
        t = np.searchsorted(ends, start[ok], side="right")
        pick_t.append(t)
        pick_p.append(p[ok])
        pick_k.append(kept[ok])
        filled = int(start[-1] + kept[-1])
    t, p, kept = (np.concatenate(x) for x in (pick_t, pick_p, pick_k))
    rot = (rng.random(p.size) * lens[p]).astype(np.int64)
    owner = np.repeat(np.arange(p.size), kept)
    offset = np.arange(owner.size) - np.repeat(np.cumsum(kept) - kept, kept)
    items = mat[p[owner], (rot[owner] + offset) % lens[p[owner]]]
    tx = t[owner]
    key = np.unique(tx * n_items + items)  # sorted by transaction, duplicates merged
    counts = np.bincount(key // n_items, minlength=n_transactions)
    indptr = np.zeros(n_transactions + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    return TransactionDB.from_csr(indptr, key % n_items)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="output file: .npz (CSR) or .dat (FIMI text)")
    ap.add_argument("--transactions", type=int, default=1_000_000)
    ap.add_argument("--avg-size", type=float, default=10.0, help="|T|")
    ap.add_argument("--avg-pattern", type=float, default=4.0, help="|I|")
    ap.add_argument("--patterns", type=int, default=2000, help="|L|")
    ap.add_argument("--items", type=int, default=1000, help="N")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    from parties.joint.partition import save_npz, write_fimi

    t0 = time.perf_counter()
    db = quest_transactions(
        a.transactions,
        avg_size=a.avg_size,
        avg_pattern=a.avg_pattern,
        n_patterns=a.patterns,
        n_items=a.items,
        seed=a.seed,
    )
    (write_fimi if a.out.endswith(".dat") else save_npz)(db, a.out)
    sizes = np.diff(db.indptr)
    print(
        f"{a.out}: {db.n_transactions:,} transactions, {db.items.size} items, mean size {sizes.mean():.2f}, "
        f"{time.perf_counter() - t0:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
