"""The rows of a :class:`~parties.sources.spec.TableSource` inside an embedded DuckDB connection.

Every source ends up as a DuckDB relation of two columns, ``k`` (the key) and ``i`` (the item),
that later SQL reads once, as a stream:

* CSV and Parquet files (globs too) are scanned by DuckDB itself (``read_csv`` / ``read_parquet``);
* a DuckDB database file is attached read-only and the configured query runs in it;
* PostgreSQL is read with the ADBC PostgreSQL driver (Apache Arrow ADBC, libpq's binary COPY):
  ``fetch_record_batch`` yields Arrow record batches as they arrive, and DuckDB scans that
  stream — no result set is ever held as Python objects. ADBC rather than psycopg 3 because it
  produces Arrow columns natively (psycopg returns Python tuples per row).

Errors become one :class:`~parties.sources.spec.SourceError` line naming the data key: a
missing file or column, a failing query, an unreachable server, a refused password, a
connection lost mid-read. The password is read from its file when the connection opens and
is scrubbed from any driver message.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from anonymize.engines.sql import ident
from anonymize.engines.sql import lit as _lit
from anonymize.engines.sql import one_line as _one_line
from parties.sources.spec import SourceError, TableSource

__all__ = [
    "source_relation",
    "duckdb_connection",
    "read_password",
    "ident",
    "one_line",
    "spill_to_parquet",
    "read_columns",
]


def one_line(e: BaseException) -> str:
    """A database error as one line without quoted rows (:func:`anonymize.engines.sql.one_line`)."""
    return _one_line(e)


@contextmanager
def duckdb_connection(memory_limit: int | None = None, temp_dir: str | None = None) -> Iterator[Any]:
    """An in-memory DuckDB connection that spills to ``temp_dir`` beyond ``memory_limit`` bytes."""
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET preserve_insertion_order = false")
        if memory_limit:
            con.execute(f"SET memory_limit = '{max(64, memory_limit >> 20)}MB'")
        if temp_dir:
            con.execute(f"SET temp_directory = {_lit(temp_dir)}")
        yield con
    finally:
        con.close()


def read_password(src: TableSource) -> str | None:
    """The password in ``src.password_file`` (first line), or None without a file.

    The file must be readable by its owner only, as libpq demands of ``.pgpass``.
    """
    p = src.password_file
    if p is None:
        return None
    try:
        st = p.stat()
    except FileNotFoundError:
        raise SourceError(f"data {src.key!r}: its password file does not exist", str(p)) from None
    except OSError as e:
        raise SourceError(f"data {src.key!r}: cannot read its password file", f"{p}: {e.strerror or e}") from None
    if os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SourceError(
            f"data {src.key!r}: its password file is readable by others",
            f"{p} has mode {stat.S_IMODE(st.st_mode):o}; chmod 600 {p}",
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(
            f"data {src.key!r}: cannot read its password file", f"{p}: {getattr(e, 'strerror', None) or e}"
        ) from None
    lines = text.splitlines()
    if not lines or not lines[0]:
        raise SourceError(f"data {src.key!r}: its password file is empty", str(p))
    return lines[0]


def _pg_url(src: TableSource, password: str | None) -> str:
    if password is None:
        return src.location
    parts = urlsplit(src.location)
    user = quote(parts.username or "", safe="")
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{user}:{quote(password, safe='')}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _check_columns(src: TableSource, columns: list[str]) -> None:
    """Both named columns exist; the detail lists the schema (for CSV only its width: a file without a
    header line would have its first data row taken for the header, and that must not reach a log)."""
    missing = [c for c in (src.transaction, src.item) if c not in columns]
    if missing:
        if src.kind == "file" and src.format == "csv":
            detail = f"{src.describe()}: its header line has {len(columns)} column(s), none named {missing[0]!r}"
        else:
            detail = f"{src.describe()} has columns {', '.join(columns[:20])}{', ...' if len(columns) > 20 else ''}"
        raise SourceError(f"data {src.key!r}: no column {missing[0]!r}", detail)


def _file_scan(src: TableSource) -> str:
    fn = "read_parquet" if src.format == "parquet" else "read_csv"
    extra = ", header = true" if src.format == "csv" else ""
    return f"{fn}({_lit(src.location)}{extra})"


@contextmanager
def source_relation(con: Any, src: TableSource) -> Iterator[str]:
    """Make ``src`` readable in ``con`` as a relation with columns ``k``, ``i``; yields its SQL name.

    PostgreSQL connections stay open while the caller reads (the relation is a live stream
    that can be scanned once); everything is closed when the context ends.
    """
    import duckdb

    src.check_columns()
    assert src.transaction is not None and src.item is not None
    cols = f"{ident(src.transaction)} AS k, {ident(src.item)} AS i"
    if src.kind == "file":
        if not _has_files(src.location):
            raise SourceError(f"data {src.key!r}: no such file", f"nothing matches {src.location}")
        inner = _file_scan(src)
        try:
            names = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {inner}").fetchall()]
        except duckdb.Error as e:
            raise SourceError(
                f"data {src.key!r}: cannot read its file as {src.format}", f"{src.location}: {_one_line(e)}"
            ) from None
        _check_columns(src, names)
        con.execute(f"CREATE OR REPLACE TEMP VIEW ppdm_src AS SELECT {cols} FROM {inner}")
        yield "ppdm_src"
        return
    if src.kind == "duckdb":
        if not os.path.isfile(src.location):
            raise SourceError(f"data {src.key!r}: its DuckDB database does not exist", src.location)
        try:
            con.execute(f"ATTACH {_lit(src.location)} AS ppdm_wh (READ_ONLY)")
            con.execute("USE ppdm_wh")
            names = [r[0] for r in con.execute(f"DESCRIBE {src.query}").fetchall()]
        except duckdb.Error as e:
            raise SourceError(f"data {src.key!r}: its query failed", f"{src.describe()}: {_one_line(e)}") from None
        _check_columns(src, names)
        try:
            con.execute(f"CREATE OR REPLACE TEMP VIEW ppdm_src AS SELECT {cols} FROM ({src.query}) AS q")
        except duckdb.Error as e:
            raise SourceError(f"data {src.key!r}: its query failed", f"{src.describe()}: {_one_line(e)}") from None
        yield "ppdm_src"
        return
    if src.kind != "postgresql":
        raise SourceError(f"data {src.key!r}: a FIMI/CSR file is not a table with columns", src.location)
    with _postgresql_stream(src) as reader:
        _check_columns(src, list(reader.schema.names))
        con.register("ppdm_pg", reader)
        con.execute(f"CREATE OR REPLACE TEMP VIEW ppdm_src AS SELECT {cols} FROM ppdm_pg")
        yield "ppdm_src"


def _has_files(pattern: str) -> bool:
    import glob

    return bool(glob.glob(pattern)) if any(c in pattern for c in "*?[") else os.path.isfile(pattern)


@contextmanager
def _postgresql_stream(src: TableSource) -> Iterator[Any]:
    """The query's rows as an Arrow RecordBatchReader over a live ADBC connection."""
    try:
        import adbc_driver_postgresql.dbapi as pg
    except ImportError:  # pragma: no cover - a core dependency
        raise SourceError(
            f"data {src.key!r}: PostgreSQL sources need the ADBC driver: pip install adbc-driver-postgresql"
        ) from None
    password = read_password(src)
    try:
        conn = pg.connect(_pg_url(src, password))
    except Exception as e:  # the driver raises its own DB-API hierarchy
        raise SourceError(
            f"data {src.key!r}: cannot connect to its PostgreSQL server", f"{src.describe()}: {_one_line(e, password)}"
        ) from None
    try:
        cur = conn.cursor()
        try:
            cur.execute(src.query)
            reader = cur.fetch_record_batch()
        except Exception as e:
            raise SourceError(
                f"data {src.key!r}: its query failed", f"{src.describe()}: {_one_line(e, password)}"
            ) from None
        try:
            yield reader
        except SourceError:
            raise
        except Exception as e:  # a read error surfaces in DuckDB's scan of the stream
            raise SourceError(
                f"data {src.key!r}: reading from its PostgreSQL server failed",
                f"{src.describe()}: {_one_line(e, password)}",
            ) from None
        finally:
            try:
                cur.close()
            except Exception:
                pass
    finally:
        try:
            conn.close()
        except Exception:
            pass


def spill_to_parquet(src: TableSource, path: str, memory_limit: int | None = None) -> int:
    """Stream every column of ``src``'s query (PostgreSQL or DuckDB) into the Parquet file ``path`` — one
    pass over the server's rows, memory bounded by DuckDB's limit — so that engines can scan it several
    times. Returns the rows written. Errors are one :class:`SourceError` line."""
    import duckdb

    with duckdb_connection(memory_limit) as con:
        try:
            if src.kind == "postgresql":
                with _postgresql_stream(src) as reader:
                    con.register("ppdm_pg", reader)
                    got = con.execute(f"COPY (SELECT * FROM ppdm_pg) TO {_lit(path)} (FORMAT parquet)").fetchone()
            elif src.kind == "duckdb":
                con.execute(f"ATTACH {_lit(src.location)} AS ppdm_wh (READ_ONLY)")
                con.execute("USE ppdm_wh")
                got = con.execute(f"COPY ({src.query}) TO {_lit(path)} (FORMAT parquet)").fetchone()
            else:
                raise SourceError(f"data {src.key!r}: only database sources are spilled", src.describe())
        except duckdb.Error as e:
            raise SourceError(f"data {src.key!r}: reading it failed", f"{src.describe()}: {_one_line(e)}") from None
    return int(got[0]) if got else 0


def read_columns(
    src: TableSource,
    required: Sequence[str],
    optional: Sequence[str] = (),
    *,
    memory_limit: int | None = None,
):
    """The columns ``required`` (each must exist) and those of ``optional`` that exist, of a CSV or
    Parquet file, a DuckDB query or a PostgreSQL query, as a pandas DataFrame (what joint publishing
    reads: a party's quasi-identifiers and sensitive column, not (key, item) lines). One
    :class:`SourceError` line on any problem, naming a missing column but never a value."""
    import duckdb

    if src.kind == "legacy":
        raise SourceError(f"data {src.key!r}: a FIMI/CSR file is not a table with columns", src.location)

    def pick(names: list[str]) -> list[str]:
        missing = [c for c in required if c not in names]
        if missing:
            raise SourceError(f"data {src.key!r}: no column {missing[0]!r}", f"{src.describe()}")
        want = list(dict.fromkeys([*required, *(c for c in optional if c in names)]))
        return want

    with duckdb_connection(memory_limit) as con:
        try:
            if src.kind == "file":
                if not _has_files(src.location):
                    raise SourceError(f"data {src.key!r}: no such file", f"nothing matches {src.location}")
                rel = _file_scan(src)
            elif src.kind == "duckdb":
                if not os.path.isfile(src.location):
                    raise SourceError(f"data {src.key!r}: its DuckDB database does not exist", src.location)
                con.execute(f"ATTACH {_lit(src.location)} AS ppdm_wh (READ_ONLY)")
                con.execute("USE ppdm_wh")
                rel = f"({src.query}) AS q"
            else:
                with _postgresql_stream(src) as reader:
                    cols = pick(list(reader.schema.names))
                    con.register("ppdm_pg", reader)
                    return con.execute(f"SELECT {', '.join(ident(c) for c in cols)} FROM ppdm_pg").df()
            names = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]
            cols = pick(names)
            return con.execute(f"SELECT {', '.join(ident(c) for c in cols)} FROM {rel}").df()
        except duckdb.Error as e:
            raise SourceError(f"data {src.key!r}: reading it failed", f"{src.describe()}: {_one_line(e)}") from None
