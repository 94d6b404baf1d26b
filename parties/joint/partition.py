"""Splitting a transaction database into party shares, and loading a party's share.

Formats a party's ``[data] transactions`` may have:

* ``.dat`` — FIMI (one transaction per line, item ids separated by spaces).
  Horizontal shares use it; FIMI has no empty transactions, so it cannot hold a
  vertical share (a transaction with none of the party's items would vanish).
* ``.npz`` — CSR arrays ``indptr`` and ``items`` (and optionally ``universe``,
  the ids the party holds): one row per transaction, empty rows allowed. The
  vertical shares written by :func:`split_vertical` use it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from anonymize.itemsets import TransactionDB, fimi_text, read_fimi
from anonymize.publish.io import atomic_write, atomic_write_text

__all__ = ["load_transactions", "save_npz", "write_fimi", "split_horizontal", "split_vertical"]


def load_transactions(path: str | os.PathLike) -> TransactionDB:
    """Read a party's transactions from ``.dat`` (FIMI) or ``.npz`` (CSR); clear ValueError otherwise."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"cannot read {p}: no such file")
    if p.suffix == ".npz":
        try:
            with np.load(p, allow_pickle=False) as z:
                universe = z["universe"] if "universe" in z.files else None
                return TransactionDB.from_csr(z["indptr"], z["items"], items=universe)
        except (KeyError, ValueError, OSError) as e:
            raise ValueError(f"cannot read {p} as a CSR .npz (arrays indptr, items): {e}") from None
    try:
        return read_fimi(p)
    except OSError as e:
        raise ValueError(f"cannot read {p}: {e.strerror or e}") from None


def save_npz(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` as CSR ``.npz`` (keeps empty transactions and the item universe), atomically."""
    ids = db.items[db.indices]
    atomic_write(path, lambda fh: np.savez(fh, indptr=db.indptr, items=ids, universe=db.items), private=True)


def write_fimi(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` as a FIMI ``.dat`` file (:func:`anonymize.itemsets.fimi_text`), atomically; empty
    transactions are not representable and are refused."""
    try:
        text = fimi_text(db)
    except ValueError as e:
        raise ValueError(f"{e}; use .npz") from None
    atomic_write_text(path, text, private=True)  # a party's share of the data


def split_horizontal(db: TransactionDB, n: int) -> list[TransactionDB]:
    """Contiguous blocks of transactions, sizes differing by at most one."""
    bounds = np.linspace(0, db.n_transactions, n + 1).round().astype(np.int64)
    return [db.take(np.arange(bounds[i], bounds[i + 1])) for i in range(n)]


def split_vertical(db: TransactionDB, n: int) -> list[TransactionDB]:
    """The distinct items cut into ``n`` contiguous id ranges; each party keeps all N rows, its items only."""
    groups = np.array_split(db.items, n)
    ids = db.items[db.indices]
    lengths = np.diff(db.indptr)
    tx = np.repeat(np.arange(db.n_transactions), lengths)
    out = []
    for g in groups:
        keep = np.isin(ids, g)
        indptr = np.zeros(db.n_transactions + 1, np.int64)
        np.cumsum(np.bincount(tx[keep], minlength=db.n_transactions), out=indptr[1:])
        out.append(TransactionDB.from_csr(indptr, ids[keep], items=g))
    return out
