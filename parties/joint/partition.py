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

from anonymize.itemsets import TransactionDB, read_fimi

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


def _atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def save_npz(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` as CSR ``.npz`` (keeps empty transactions and the item universe)."""
    ids = db.items[db.indices]

    def w(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, indptr=db.indptr, items=ids, universe=db.items)

    _atomic(Path(path), w)


def write_fimi(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` as a FIMI ``.dat`` file (empty transactions are not representable and are refused)."""
    lengths = np.diff(db.indptr)
    if (lengths == 0).any():
        raise ValueError("FIMI cannot hold empty transactions; use .npz")
    ids = db.items[db.indices].astype(str)
    lines = np.split(ids, db.indptr[1:-1]) if db.n_transactions else []

    def w(tmp: Path) -> None:
        with open(tmp, "w") as f:
            f.write("\n".join(" ".join(x) for x in lines))
            if lines:
                f.write("\n")

    _atomic(Path(path), w)


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
