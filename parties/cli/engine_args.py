"""The engine flags of ``ppdm anonymize``, ``ppdm check`` and ``ppdm mine``: where a party's local work
runs (``--engine auto|memory|duckdb|spark``, ``--spark-master``, ``--spark-conf``, ``--memory-limit``) and
where a table is besides a FILE (``--duckdb DB`` / ``--postgresql URL --password-file F`` with
``--query SQL``; docs/engines.md)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anonymize.engines import ENGINES, TableInput
from anonymize.errors import AnonymizeError

__all__ = ["add_engine_args", "add_database_args", "engine_input", "spark_conf", "parse_size", "engine_kwargs"]


def parse_size(text: str) -> int:
    """``'4GB'``, ``'512MB'``, ``'1.5GiB'`` or a number of bytes → bytes."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?I?B?)?\s*", text.upper())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4GB, 512MB)")
    mult = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[(m.group(2) or "B")[0]]
    return int(float(m.group(1)) * mult)


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """``--engine``, ``--spark-master``, ``--spark-conf`` (repeatable), ``--memory-limit``."""
    g = p.add_argument_group("engine (where the work runs; docs/engines.md)")
    g.add_argument(
        "--engine",
        choices=("auto", *ENGINES),
        default="auto",
        help="memory (numpy), duckdb (embedded, spills to disk) or spark; auto: memory for tables that fit "
        "comfortably, duckdb beyond (default auto)",
    )
    g.add_argument(
        "--spark-master", metavar="URL", default=None, help="with --engine spark: local[N] or spark://host:port"
    )
    g.add_argument(
        "--spark-conf",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="with --engine spark: a Spark setting (repeatable), e.g. spark.executor.memory=2g",
    )
    g.add_argument(
        "--memory-limit",
        type=parse_size,
        default=None,
        metavar="SIZE",
        help="with --engine duckdb: memory DuckDB may use before spilling to disk (default: an eighth of RAM, "
        "at most 2GB)",
    )


def add_database_args(p: argparse.ArgumentParser) -> None:
    """``--duckdb DB`` / ``--postgresql URL`` (``--password-file F``) with ``--query SQL``."""
    g = p.add_argument_group("a table in a database instead of IN")
    g.add_argument("--duckdb", metavar="DB", help="read the table from this DuckDB database file with --query")
    g.add_argument("--postgresql", metavar="URL", help="read from PostgreSQL (postgresql://user@host/db) with --query")
    g.add_argument("--password-file", metavar="FILE", help="with --postgresql: a file holding the password (mode 600)")
    g.add_argument("--query", metavar="SQL", help="with --duckdb/--postgresql: the table's rows")


def spark_conf(args) -> dict[str, str]:
    """``--spark-conf KEY=VALUE`` pairs as a dict."""
    out: dict[str, str] = {}
    for item in getattr(args, "spark_conf", []) or []:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise AnonymizeError(f"--spark-conf takes KEY=VALUE, got {item!r}")
        out[k.strip()] = v.strip()
    return out


def engine_kwargs(args) -> dict:
    """Keyword arguments of :func:`anonymize.engines.open_engine` from the flags."""
    if args.engine != "spark" and (args.spark_master or args.spark_conf):
        raise AnonymizeError("--spark-master and --spark-conf go with --engine spark")
    return {
        "spark_master": args.spark_master,
        "spark_conf": spark_conf(args),
        "memory_limit": args.memory_limit,
    }


@contextmanager
def engine_input(args) -> Iterator[TableInput]:
    """The table named by IN or by ``--duckdb`` / ``--postgresql`` with ``--query``. A PostgreSQL query's
    rows are streamed once into a private temporary Parquet file (removed at the end) so that the engines
    can read them several times."""
    given = [n for n, v in (("IN", args.input), ("--duckdb", args.duckdb), ("--postgresql", args.postgresql)) if v]
    if len(given) != 1:
        raise AnonymizeError("give one table: IN (CSV or Parquet), or --duckdb DB / --postgresql URL with --query SQL")
    if args.input:
        if args.query or args.password_file:
            raise AnonymizeError("--query and --password-file go with --duckdb or --postgresql, not with IN")
        yield TableInput.file(args.input, sep=args.sep)
        return
    if not args.query:
        raise AnonymizeError(f'{given[0]} needs a query: --query "SELECT ... FROM ..."')
    if args.password_file and not args.postgresql:
        raise AnonymizeError("--password-file goes with --postgresql")
    if args.duckdb:
        yield TableInput(database=str(Path(args.duckdb)), query=args.query)
        return
    from parties.sources.engine_input import table_input
    from parties.sources.spec import SourceError, TableSource

    url = args.postgresql
    if "@" in url.split("//", 1)[-1].split("/", 1)[0] and ":" in url.split("//", 1)[-1].split("@", 1)[0]:
        raise AnonymizeError("the PostgreSQL URL carries a password: put it in a file given with --password-file")
    src = TableSource(
        key="input",
        kind="postgresql",
        location=url,
        query=args.query,
        password_file=Path(args.password_file) if args.password_file else None,
    )
    try:
        with table_input(src, memory_limit=getattr(args, "memory_limit", None)) as inp:
            yield inp
    except SourceError as e:
        raise AnonymizeError(e.full().replace("data 'input': ", "PostgreSQL: ")) from None
