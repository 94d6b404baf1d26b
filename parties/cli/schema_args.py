"""Options the publishing verbs share: the input table, its schema and hierarchies, output checks.

``ppdm tune`` and ``ppdm publish`` build their parsers from these helpers, so a table is named and
read the same way everywhere: ``IN`` (CSV with any of ``; , TAB |``, or Parquet), ``--qi``,
``--sensitive``, ``--id``, ``--hierarchies DIR``, ``--hierarchy COL=FILE`` (repeatable) and
``--sep`` — the options of ``ppdm anonymize``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from anonymize.errors import AnonymizeError
from parties.cli.common import comma_list

__all__ = [
    "add_table_args",
    "add_release_args",
    "add_utility_args",
    "weights_arg",
    "read_table_args",
    "output_sep",
    "unroled_columns",
    "warn_unroled",
    "check_output_path",
    "fraction",
    "positive_int",
]


def fraction(s: str) -> float:
    """argparse type: a fraction such as ``0.05`` or ``5%`` in [0, 1]."""
    try:
        x = float(s.rstrip("%")) / (100.0 if s.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05 or 5%, got {s!r}") from None
    if not 0.0 <= x <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {s!r}")
    return x


def positive_int(s: str) -> int:
    """argparse type: an integer ≥ 1."""
    try:
        x = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s!r}") from None
    if x < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {s!r}")
    return x


def add_table_args(p: argparse.ArgumentParser, what: str = "table", *, optional_input: bool = False) -> None:
    """``IN``, ``--qi`` (required), ``--sensitive``, ``--id``, ``--hierarchies``, ``--hierarchy``, ``--sep``.
    ``optional_input``: IN may be left out (the table then comes from ``--duckdb``/``--postgresql``)."""
    p.add_argument(
        "input",
        metavar="IN",
        nargs="?" if optional_input else None,
        help=f"{what}: CSV (any of ; , TAB |) or Parquet" + (" (or --duckdb/--postgresql)" if optional_input else ""),
    )
    p.add_argument("--qi", required=True, metavar="COLS", help="quasi-identifier columns, comma-separated")
    p.add_argument("--sensitive", metavar="COLS", default="", help="sensitive columns, comma-separated")
    p.add_argument("--id", metavar="COLS", default="", help="identifier columns (dropped from any release)")
    p.add_argument(
        "--insensitive",
        metavar="COLS",
        default="",
        help="columns published unchanged on purpose (no quasi-identifier, not sensitive): without it, every "
        "column with no role is published unchanged with a warning",
    )
    p.add_argument(
        "--hierarchies", metavar="DIR", help="directory of ARX hierarchy files named <col>.csv or *hierarchy_<col>.csv"
    )
    p.add_argument(
        "--hierarchy",
        metavar="COL=FILE",
        action="append",
        default=[],
        help="one ARX hierarchy (repeatable; wins over --hierarchies). QIs without one get an automatic "
        "hierarchy (numeric: intervals; ZIP-like: masking; else value → *)",
    )
    p.add_argument("--sep", default=None, help="input CSV delimiter (default: sniffed)")


def add_release_args(p: argparse.ArgumentParser, *, arx: bool = False) -> None:
    """``--max-suppression``, ``--suppressed-rows``, ``--t-distance``, ``--t-ground`` (as ``ppdm anonymize``);
    ``arx`` — offer ``--suppressed-rows arx`` too (ARX's outlier semantics: anonymize, tune, publish)."""
    p.add_argument(
        "--max-suppression",
        type=fraction,
        default=0.0,
        metavar="FRACTION",
        help="rows the full-domain algorithms may suppress, e.g. 0.05 (default 0)",
    )
    p.add_argument(
        "--suppressed-rows",
        choices=("star", "drop", "arx") if arx else ("star", "drop"),
        default="star",
        help="suppressed rows: * in every QI, the * group checked like any class (star), left out (drop)"
        + (", or * in every QI with the models checked on the other classes only, as ARX does (arx)" if arx else ""),
    )
    p.add_argument("--t-distance", choices=("emd", "variational", "kl"), default="emd")
    p.add_argument(
        "--t-ground",
        choices=("equal", "ordered", "hierarchical"),
        default=None,
        help="EMD ground distance (default: ordered for numeric, equal otherwise)",
    )


def weights_arg(s: str) -> dict[str, float]:
    """argparse type: ``COL=W,COL=W`` — attribute weights, each a number ≥ 0."""
    out: dict[str, float] = {}
    for part in s.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.rpartition("=")
        name = name.strip()
        if not eq or not name:
            raise argparse.ArgumentTypeError(f"expected COL=W[,COL=W...] such as age=2,sex=0.5, got {s!r}")
        try:
            w = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"the weight of {name!r} must be a number, got {value.strip()!r}"
            ) from None
        if not w >= 0 or w == float("inf"):
            raise argparse.ArgumentTypeError(
                f"the weight of {name!r} must be a finite number >= 0, got {value.strip()!r}"
            )
        if name in out:
            raise argparse.ArgumentTypeError(f"{name!r} is weighted twice in {s!r}")
        out[name] = w
    if not out:
        raise argparse.ArgumentTypeError(f"expected COL=W[,COL=W...] such as age=2,sex=0.5, got {s!r}")
    return out


def add_utility_args(p: argparse.ArgumentParser) -> None:
    """``--ncp-categorical`` and ``--weights``: how NCP and ARX's Loss are computed (``ppdm anonymize``,
    ``ppdm check``)."""
    p.add_argument(
        "--ncp-categorical",
        choices=("height", "leaves", "span"),  # anonymize.publish.metrics.cells.CATEGORICAL_LOSSES
        default="height",
        help="categorical NCP: level of the lowest common ancestor / hierarchy height (height, default), "
        "leaves under the value / all leaves, 0 for one (leaves, Xu et al. 2006), or (leaves - 1) / (all leaves - 1) "
        "(span, Iyengar 2002)",
    )
    p.add_argument(
        "--weights",
        type=weights_arg,
        default=None,
        metavar="COL=W,...",
        help="attribute weights (>= 0, unnamed quasi-identifiers 1) of NCP (a weighted mean) and of ARX's Loss, "
        "as ARX's attribute weights; they steer the full-domain searches and Mondrian's choice of cut",
    )


def read_table_args(args, *, need_sensitive: bool = False, frame=None):
    """Read the table and hierarchies named by :func:`add_table_args`: ``(df, schema, hierarchies)``;
    ``frame`` — the table already read (from a database), instead of IN."""
    from anonymize.publish.io import read_hierarchies, read_table
    from anonymize.publish.table import Schema

    qis, sens, ids = comma_list(args.qi), comma_list(args.sensitive), comma_list(args.id)
    if not qis:
        raise AnonymizeError("--qi needs at least one column")
    if need_sensitive and not sens:
        raise AnonymizeError("--sensitive needs at least one column (the disclosure probability is about it)")
    df = read_table(args.input, sep=args.sep) if frame is None else frame
    if len(df) == 0:
        raise AnonymizeError(f"input {args.input or 'table'} has no data rows")
    hs = read_hierarchies(args.hierarchies, args.hierarchy, columns=set(qis) | set(sens))
    return df, Schema(qis, sens, ids), hs


def unroled_columns(args, columns) -> list[str]:
    """The table's columns that ``--qi``, ``--sensitive``, ``--id`` and ``--insensitive`` leave without a role:
    a release carries them unchanged, and k, l and t say nothing about a linkage through them."""
    named = set(comma_list(args.qi)) | set(comma_list(args.sensitive)) | set(comma_list(args.id))
    named |= set(comma_list(getattr(args, "insensitive", "")))
    return [str(c) for c in columns if str(c) not in named]


def warn_unroled(cols: list[str]) -> None:
    """Say on stderr which columns go out unchanged with no role (:func:`unroled_columns`); silent when none.
    Called once the release is made (bad input stays one line)."""
    import sys

    if cols:
        print(
            f"ppdm: warning: published unchanged with no role: {', '.join(cols)} — k, l and t cover the "
            "quasi-identifiers only, and a reader can link records through these columns (give each a role: "
            "--qi, --sensitive, --id to drop it, or --insensitive to keep it as it is)",
            file=sys.stderr,
            flush=True,
        )


def output_sep(args) -> str:
    """The output delimiter: ``--out-sep``, else ``--sep``, else the input's (sniffed), else ``,``."""
    from anonymize.publish.io import sniff_delimiter

    sep = getattr(args, "out_sep", None) or args.sep
    if sep is None and args.input:
        try:
            with open(args.input, "rb") as fh:
                sep = sniff_delimiter(fh.read(65536).decode("utf-8", "replace"))
        except OSError:
            sep = ","
    return sep or ","


def check_output_path(path: str, what: str, inp: Path | None = None) -> Path:
    """A path we may write: not a directory, in an existing writable directory, not the input."""
    from anonymize.publish.io import check_writable_path

    p = check_writable_path(path, what)
    if inp is not None and p.exists() and inp.exists() and os.path.samefile(p, inp):
        raise AnonymizeError(f"{what} {p} is the input file; choose another name")
    return p
