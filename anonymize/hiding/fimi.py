"""Reading and writing FIMI ``.dat`` files for hiding, keeping empty transactions, atomically.

FIMI (the FIMI'03 repository: B. Goethals, M. J. Zaki, "Advances in frequent itemset mining
implementations: report on FIMI'03", SIGKDD Explorations 6(1), 2004): one transaction per line, item ids
separated by blanks, ascending. Supports are fractions of *all* N transactions, so an empty line
is an empty transaction: it counts in N (and in ``ceil(minsup·N)``). :func:`read_fimi` keeps it
(unlike :func:`anonymize.itemsets.read_fimi`, which skips blank lines) and :func:`fimi_text` writes
it back as an empty line, so reading → hiding → writing keeps N. Text after the last newline is a
transaction only if it holds an item (a trailing blank fragment is not a line).

:func:`write_fimi` writes through :func:`anonymize.publish.io.atomic_write_text` (temporary file in
the target directory + ``os.replace``): a reader never sees a partial file and an error leaves the
target path untouched.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..itemsets import TransactionDB, parse_fimi
from ..publish.io import atomic_write_text

__all__ = ["fimi_text", "parse_fimi_keep_empty", "read_fimi", "write_fimi"]


def parse_fimi_keep_empty(data: bytes | str, name: str = "<data>") -> TransactionDB:
    """Parse FIMI text like :func:`anonymize.itemsets.parse_fimi`, but every line is a transaction:
    a line without items (empty or blanks only) is an empty transaction."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    db = parse_fimi(raw, name=name)  # validates tokens, drops duplicates, skips blank lines
    b = np.frombuffer(raw, dtype=np.uint8)
    dig = (b >= 48) & (b <= 57)
    starts = np.flatnonzero(dig & ~np.concatenate([[False], dig[:-1]])) if b.size else np.zeros(0, np.int64)
    nl = np.flatnonzero(b == 10)
    line_start = np.concatenate([[0], nl + 1, [b.size + 1]]).astype(np.int64)
    per_line = np.diff(np.searchsorted(starts, line_start))  # tokens on each line (last: after the last \n)
    if per_line.size and per_line[-1] == 0:
        per_line = per_line[:-1]  # nothing after the last newline: not a line
    if not (per_line == 0).any():
        return db
    lengths = np.zeros(per_line.size, dtype=np.int64)
    lengths[per_line > 0] = np.diff(db.indptr)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return TransactionDB.from_csr(indptr, db.items[db.indices], items=db.items)


def read_fimi(path: str | os.PathLike) -> TransactionDB:
    """Read a FIMI file, empty lines as empty transactions (module docstring)."""
    p = Path(path)
    return parse_fimi_keep_empty(p.read_bytes(), name=str(p))


def fimi_text(db: TransactionDB) -> str:
    """The FIMI text of ``db``: one LF-terminated line per transaction, ids separated by single
    spaces; an empty transaction is an empty line (read back as one by :func:`read_fimi`)."""
    if db.n_transactions == 0:
        return ""
    lengths = np.diff(db.indptr)
    toks = db.items[db.indices].astype(str).astype(object)
    sep = np.full(toks.size, " ", dtype=object)
    sep[db.indptr[1:][lengths > 0] - 1] = "\n"
    inter = np.empty(2 * toks.size, dtype=object)
    inter[0::2] = toks
    inter[1::2] = sep
    empty = np.flatnonzero(lengths == 0)
    if empty.size:  # an empty line before the tokens of the transaction that follows it
        inter = np.insert(inter, 2 * db.indptr[empty], "\n")
    return "".join(inter.tolist())


def write_fimi(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` to ``path`` as FIMI, atomically (temp file + rename)."""
    atomic_write_text(path, fimi_text(db))
