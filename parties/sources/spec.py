"""Where a party's table lives: the ``[data.KEY]`` tables of ``party.toml`` and the flags of ``ppdm mine``.

One row per (transaction or record key, item)::

    [data.sales]
    path = "sales/*.parquet"            # CSV or Parquet file(s), a glob; FIMI .dat / CSR .npz keep working
    transaction = "basket_id"           # the key column
    item = "sku"                        # the item column: text or integers

    [data.lines]
    duckdb = "warehouse.duckdb"         # an embedded DuckDB database file, opened read-only
    query = "SELECT basket_id, sku FROM lines"
    transaction = "basket_id"
    item = "sku"

    [data.shop]
    postgresql = "postgresql://ppdm@localhost:5432/shop"
    password_file = "pg.pass"           # the password alone, a file only its owner can read
    query = "SELECT basket_id, sku FROM lines"
    transaction = "basket_id"
    item = "sku"

The old form ``[data] transactions = "alice.dat"`` (a string) stays valid: a FIMI ``.dat`` or
CSR ``.npz`` file of integer item ids, or a CSV/Parquet file whose columns the job names.
The password is never part of a :class:`TableSource`'s text, its :meth:`~TableSource.describe`
line or any error: only the path of its file is kept, and it is read when the connection opens.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["SourceError", "TableSource", "parse_source", "source_from_flags", "LEGACY_SUFFIXES", "FILE_FORMATS"]

LEGACY_SUFFIXES = (".dat", ".npz")  # FIMI text and CSR arrays of integer item ids: no key or item columns
FILE_FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}
_KINDS = ("path", "duckdb", "postgresql")
_KEYS = {"path", "duckdb", "postgresql", "password_file", "query", "transaction", "item", "format", "engine"}
ENGINES = ("memory", "duckdb", "spark")
"""Where a party's local work on a data key runs (``engine =``; anonymize.engines)."""


class SourceError(ValueError):
    """A data source that cannot be read as asked: one line, never a password or a data value.

    ``str(e)`` is what may be shown to the other parties of a session (the data key and the kind
    of failure); ``detail`` adds what only the party's own operator should see (paths, the server,
    the driver's message) — :meth:`full` joins both for the command line and the daemon's log.
    """

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = detail

    def full(self) -> str:
        return str(self) if not self.detail else f"{self}: {self.detail}"


@dataclass(frozen=True)
class TableSource:
    """A validated data source (see the module docstring); paths are absolute.

    ``kind`` is ``"legacy"`` (FIMI/CSR file), ``"file"`` (CSV/Parquet, ``location`` may be a glob),
    ``"duckdb"`` (database file + ``query``) or ``"postgresql"`` (``location`` is the URL without a
    password; ``password_file`` holds it).
    """

    key: str
    kind: str
    location: str
    transaction: str | None = None
    item: str | None = None
    query: str | None = None
    password_file: Path | None = None
    format: str | None = None  # files: "csv" or "parquet"
    engine: str = "memory"  # where the party's local work runs: memory | duckdb | spark

    def describe(self) -> str:
        """A short public description for messages and logs (no password, no query text)."""
        if self.kind in ("legacy", "file"):
            return self.location
        if self.kind == "duckdb":
            return f"DuckDB {self.location}"
        return f"PostgreSQL {self.location}"

    def identity(self) -> str:
        """What two data keys must share to name the same data (the guards keep one state per data)."""
        if self.kind in ("legacy", "file"):
            return os.path.realpath(self.location) if not _is_glob(self.location) else self.location
        return f"{self.kind}:{os.path.realpath(self.location) if self.kind == 'duckdb' else self.location}:{self.query}"

    def to_table(self) -> dict[str, str]:
        """The ``[data.KEY]`` table of this source (absolute paths), for writing a ``party.toml``."""
        if self.kind == "legacy":
            return {"path": self.location}
        out: dict[str, str] = {}
        if self.kind == "file":
            out["path"] = self.location
            if self.format:
                out["format"] = self.format
        else:
            out[self.kind] = self.location
            if self.query:
                out["query"] = self.query
            if self.password_file:
                out["password_file"] = str(self.password_file)
        for k in ("transaction", "item"):
            v = getattr(self, k)
            if v:
                out[k] = v
        return out

    def check_columns(self) -> None:
        """Keyed sources (mining) need both column names (one line naming the data key otherwise); a
        table naming neither is read by its columns (joint publishing, :func:`.reader.read_columns`)."""
        if self.kind == "legacy":
            return
        missing = [k for k in ("transaction", "item") if not getattr(self, k)]
        if missing:
            raise SourceError(
                f"data {self.key!r} ({self.describe()}) needs the column names: "
                + " and ".join(f'{k} = "COLUMN"' for k in missing)
            )


def _is_glob(p: str) -> bool:
    return any(c in p for c in "*?[")


def _abs(base: Path, v: str) -> str:
    p = Path(os.path.expanduser(v))
    return str(p if p.is_absolute() else base / p)


def _strip_password(url: str, where: str) -> str:
    """The URL without a password; a URL that carries one is refused (it would sit in a config file)."""
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise SourceError(
            f"{where}: expected a postgresql://user@host[:port]/database URL, got scheme {parts.scheme!r}"
        )
    if parts.password is not None:
        raise SourceError(f"{where}: the URL carries a password; put it in a file of its own (password_file) instead")
    if not parts.hostname and not parts.path.strip("/"):
        raise SourceError(f"{where}: expected a postgresql://user@host[:port]/database URL")
    return urlunsplit(parts)


def _format_of(path: str, explicit: str | None, where: str) -> tuple[str, str | None]:
    """``(kind, format)`` of a file source from its suffix (or an explicit ``format``)."""
    suffix = Path(path.rstrip("*")).suffix.lower()
    if explicit is not None:
        if explicit not in ("csv", "parquet"):
            raise SourceError(f'{where}format must be "csv" or "parquet", got {explicit!r}')
        return "file", explicit
    if suffix in LEGACY_SUFFIXES and not _is_glob(path):
        return "legacy", None
    fmt = FILE_FORMATS.get(suffix)
    if fmt is None:
        raise SourceError(
            f"{where}path {path!r}: cannot tell the format from the name; use .csv, .parquet, .dat or .npz "
            'or say format = "csv" / "parquet"'
        )
    return "file", fmt


def parse_source(key: str, value: Any, base: Path | str, file: str = "party.toml") -> TableSource:
    """Validate one ``[data]`` entry: a path string (old form) or a ``[data.KEY]`` table.

    Relative paths are resolved against ``base`` (the config file's directory). Raises
    :class:`SourceError` naming ``file`` and the key.
    """
    base = Path(base)
    where = f"{file}: data.{key}."
    if isinstance(value, (str, os.PathLike)):
        loc = _abs(base, str(value))
        kind, fmt = _format_of(loc, None, f"{file}: data.{key}: ")
        return TableSource(key, kind, loc, format=fmt)
    if not isinstance(value, Mapping):
        raise SourceError(f"{file}: data.{key} must be a path or a table [data.{key}], got {value!r}")
    extra = sorted(set(value) - _KEYS)
    if extra:
        raise SourceError(f"{file}: unknown key data.{key}.{extra[0]} (allowed: {', '.join(sorted(_KEYS))})")
    for k, v in value.items():
        if not isinstance(v, str) or not v.strip():
            raise SourceError(f"{where}{k} must be a non-empty string, got {v!r}")
    engine = value.get("engine", "memory")
    if engine not in ENGINES:
        raise SourceError(f"{where}engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    kinds = [k for k in _KINDS if k in value]
    if len(kinds) != 1:
        raise SourceError(f"{file}: data.{key} needs exactly one of path, duckdb, postgresql (got {kinds or 'none'})")
    kind = kinds[0]
    if kind == "path":
        if "query" in value or "password_file" in value:
            raise SourceError(f"{where}query/password_file go with duckdb or postgresql, not with path")
        loc = _abs(base, value["path"])
        k2, fmt = _format_of(loc, value.get("format"), where)
        if k2 == "legacy" and ("transaction" in value or "item" in value):
            raise SourceError(f"{where}transaction/item: a {Path(loc).suffix} file has no columns; drop them")
        src = TableSource(key, k2, loc, value.get("transaction"), value.get("item"), format=fmt)
    else:
        if "format" in value:
            raise SourceError(f"{where}format goes with path, not with {kind}")
        if "query" not in value:
            raise SourceError(f'{file}: data.{key}: {kind} needs a query (e.g. "SELECT basket_id, sku FROM lines")')
        if kind == "duckdb":
            if "password_file" in value:
                raise SourceError(f"{where}password_file goes with postgresql, not with duckdb")
            src = TableSource(
                key, "duckdb", _abs(base, value["duckdb"]), value.get("transaction"), value.get("item"), value["query"]
            )
        else:
            url = _strip_password(value["postgresql"], f"{where}postgresql")
            pw = Path(_abs(base, value["password_file"])) if "password_file" in value else None
            src = TableSource(key, "postgresql", url, value.get("transaction"), value.get("item"), value["query"], pw)
    if (src.transaction is None) != (src.item is None):  # naming one of the two is a mistake
        src.check_columns()  # (naming neither: a table of columns, as joint publishing reads it)
    if engine != "memory":
        if src.kind == "legacy":
            raise SourceError(
                f'{where}engine = "{engine}" reads CSV, Parquet or a database, not a {Path(src.location).suffix} file'
            )
        src = dataclasses.replace(src, engine=engine)
    return src


def source_from_flags(
    file: str | None,
    *,
    duckdb: str | None = None,
    postgresql: str | None = None,
    password_file: str | None = None,
    query: str | None = None,
    transaction: str | None = None,
    item: str | None = None,
    key: str = "input",
) -> TableSource:
    """The source of local ``ppdm mine`` from its flags (FILE, or ``--duckdb``/``--postgresql`` + ``--query``)."""
    given = [n for n, v in (("FILE", file), ("--duckdb", duckdb), ("--postgresql", postgresql)) if v]
    if len(given) != 1:
        raise SourceError("give one data source: a FILE, or --duckdb DB / --postgresql URL with --query SQL")
    table: dict[str, str] = {}
    if file:
        table["path"] = file
        if query:
            raise SourceError("--query goes with --duckdb or --postgresql, not with a FILE")
    elif duckdb:
        table.update(duckdb=duckdb)
    else:
        table.update(postgresql=postgresql or "")
        if password_file:
            table["password_file"] = password_file
    if password_file and not postgresql:
        raise SourceError("--password-file goes with --postgresql")
    if query:
        table["query"] = query
    for k, v in (("transaction", transaction), ("item", item)):
        if v:
            table[k] = v
    if file and Path(file).suffix.lower() in LEGACY_SUFFIXES and not (transaction or item):
        return parse_source(key, file, Path.cwd(), "command line")
    if (duckdb or postgresql) and not query:
        raise SourceError(f'{given[0]} needs a query: --query "SELECT key_column, item_column FROM ..."')
    if not (transaction and item):
        what = file or given[0]
        raise SourceError(f"{what}: name its key and item columns with --transaction COL --item COL")
    try:
        return parse_source(key, table, Path.cwd(), "command line")
    except SourceError as e:  # the table's keys are the flags' names here
        msg = str(e).replace(f"command line: data.{key}.", "--").replace(f"command line: data.{key}", "the source")
        raise SourceError(msg.replace("password_file", "password-file")) from None
