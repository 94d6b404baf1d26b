"""Writing a sanitized database as a FIMI ``.dat`` file, atomically.

FIMI (the FIMI'03 repository: B. Goethals, M. J. Zaki, "Advances in frequent itemset mining
implementations: report on FIMI'03", SIGKDD Explorations 6(1), 2004): one transaction per line, item ids
separated by single spaces, ascending. The text is built with numpy (ids turned to
strings once, separators interleaved) and written through
:func:`anonymize.publish.io.atomic_write_text` (temporary file in the target
directory + ``os.replace``): a reader never sees a partial file and an error
leaves the target path untouched.
"""

from __future__ import annotations

import os

import numpy as np

from ..itemsets import TransactionDB
from ..publish.io import atomic_write_text
from .errors import HidingError

__all__ = ["fimi_text", "write_fimi"]


def fimi_text(db: TransactionDB) -> str:
    """The FIMI text of ``db`` (one line per transaction, LF-terminated).

    Raises :class:`HidingError` if a transaction is empty: FIMI readers skip blank
    lines, which would change N and with it ``ceil(minsup·N)``.
    """
    lengths = np.diff(db.indptr)
    if (lengths == 0).any():
        t = int(np.argmax(lengths == 0))
        raise HidingError(f"transaction {t} is empty: FIMI cannot hold empty transactions")
    if db.n_transactions == 0:
        return ""
    toks = db.items[db.indices].astype(str).astype(object)
    sep = np.full(toks.size, " ", dtype=object)
    sep[db.indptr[1:] - 1] = "\n"
    inter = np.empty(2 * toks.size, dtype=object)
    inter[0::2] = toks
    inter[1::2] = sep
    return "".join(inter.tolist())


def write_fimi(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` to ``path`` as FIMI, atomically (temp file + rename)."""
    atomic_write_text(path, fimi_text(db))
