"""A party's tables where they live: files (CSV, Parquet, FIMI, CSR), DuckDB and PostgreSQL.

* :mod:`parties.sources.spec` — what a ``[data.KEY]`` table of ``party.toml`` (or the flags of
  local ``ppdm mine``) says: :class:`TableSource`, validated once, one line per mistake.
* :mod:`parties.sources.reader` — the rows of a source as a stream of Arrow record batches
  (DuckDB for files and SQL, the ADBC PostgreSQL driver for PostgreSQL).
* :mod:`parties.sources.transactions` — one row per (transaction key, item) turned into a
  :class:`~anonymize.itemsets.TransactionDB` with item names and key digests
  (:class:`KeyedTransactions`), the encoding done inside DuckDB so memory does not grow with
  the number of lines beyond the compact result.
"""

from typing import TYPE_CHECKING

from parties.sources.spec import SourceError, TableSource, parse_source, source_from_flags

if TYPE_CHECKING:
    from parties.sources.transactions import KeyedTransactions, load_source


def __getattr__(name: str):
    """``KeyedTransactions`` and ``load_source`` load pandas and DuckDB on first use, not when a daemon
    reads its ``[data.KEY]`` tables (PEP 562)."""
    if name in ("KeyedTransactions", "load_source"):
        from parties.sources import transactions

        return getattr(transactions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["KeyedTransactions", "SourceError", "TableSource", "load_source", "parse_source", "source_from_flags"]
