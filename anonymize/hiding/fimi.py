"""Writing a sanitized database as a FIMI ``.dat`` file, atomically.

FIMI (the FIMI'03 repository: B. Goethals, M. J. Zaki, "Advances in frequent itemset mining
implementations: report on FIMI'03", SIGKDD Explorations 6(1), 2004): one transaction per line, item ids
separated by single spaces, ascending. The text is :func:`anonymize.itemsets.fimi_text`, written through
:func:`anonymize.publish.io.atomic_write_text` (temporary file in the target
directory + ``os.replace``): a reader never sees a partial file and an error
leaves the target path untouched.
"""

from __future__ import annotations

import os

from ..itemsets import TransactionDB
from ..itemsets import fimi_text as itemsets_fimi_text
from ..publish.io import atomic_write_text
from .errors import HidingError

__all__ = ["fimi_text", "write_fimi"]


def fimi_text(db: TransactionDB) -> str:
    """The FIMI text of ``db`` (:func:`anonymize.itemsets.fimi_text`); an empty transaction is a
    :class:`HidingError` (FIMI readers skip blank lines, which would change N)."""
    try:
        return itemsets_fimi_text(db)
    except ValueError as e:
        raise HidingError(str(e)) from None


def write_fimi(db: TransactionDB, path: str | os.PathLike) -> None:
    """Write ``db`` to ``path`` as FIMI, atomically (temp file + rename)."""
    atomic_write_text(path, fimi_text(db))
