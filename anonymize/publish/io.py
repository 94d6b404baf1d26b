"""Reading tables (CSV with any delimiter, Parquet) and writing them atomically.

* :func:`read_table` — CSV/TSV (delimiter sniffed among ``;`` ``,`` tab ``|``; CRLF fine;
  a UTF-8 BOM is dropped) or Parquet (needs ``pyarrow``; a clear error says to install it).
  Empty, missing, binary or unparsable files raise :class:`AnonymizeError` with one line.
* :func:`write_table` — CSV (or Parquet by extension) written to a temporary file in the
  target directory and moved into place with ``os.replace``: readers never see a partial
  file, and on any error the target path is left untouched.
* :func:`read_hierarchies` — a directory of ARX hierarchy files and ``COL=FILE`` pairs.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd

from ..errors import AnonymizeError
from .atomic import atomic_write, atomic_write_text
from .hierarchy import Hierarchy

__all__ = [
    "read_table",
    "write_table",
    "sniff_delimiter",
    "read_hierarchies",
    "atomic_write",
    "atomic_write_text",
    "check_writable_path",
]

_DELIMS = [";", ",", "\t", "|"]


def check_writable_path(path, what: str) -> Path:
    """``path`` if a file may be written there — not a directory, in an existing directory this process
    may write — else :class:`AnonymizeError` with one line naming ``what`` (checked before any work)."""
    import os

    p = Path(path)
    if p.is_dir():
        raise AnonymizeError(f"{what} {p} is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise AnonymizeError(f"{what} directory does not exist: {parent}")
    if not os.access(parent, os.W_OK):
        raise AnonymizeError(f"cannot write {what} into {parent}: permission denied")
    return p


def sniff_delimiter(sample: str) -> str:
    """The delimiter among ``; , TAB |`` that splits the first lines into the same number (> 1)
    of fields most consistently; ``,`` if none does."""
    lines = [ln for ln in sample.splitlines() if ln.strip()][:50]
    if not lines:
        return ","
    best, best_score = ",", (-1, 0)
    for d in _DELIMS:
        counts = [ln.count(d) for ln in lines]
        if counts[0] == 0:
            continue
        same = sum(1 for c in counts if c == counts[0])
        score = (same, counts[0])
        if score > best_score:
            best, best_score = d, score
    return best


def _is_parquet(path: Path, head: bytes) -> bool:
    return path.suffix.lower() in (".parquet", ".pq") or head[:4] == b"PAR1"


def _need_pyarrow(action: str):
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise AnonymizeError(f"{action} Parquet needs pyarrow: pip install pyarrow") from None


def read_table(path, sep: str | None = None) -> pd.DataFrame:
    """Read a CSV (any of ``; , TAB |``, sniffed unless ``sep`` is given) or Parquet file.

    Values are parsed by pandas (numbers become numeric columns); the header row
    is required. Raises :class:`AnonymizeError` (one line) for a missing, empty,
    binary or unparsable file.
    """
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(65536)
    except FileNotFoundError:
        raise AnonymizeError(f"input file not found: {p}") from None
    except IsADirectoryError:
        raise AnonymizeError(f"input is a directory, expected a file: {p}") from None
    except OSError as e:
        raise AnonymizeError(f"cannot read {p}: {e.strerror or e}") from None
    if _is_parquet(p, head):
        _need_pyarrow("reading")
        try:
            df = pd.read_parquet(p)
        except Exception as e:  # pyarrow raises many types
            raise AnonymizeError(
                f"cannot read Parquet file {p}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from None
        if len(df.columns) == 0:
            raise AnonymizeError(f"input file {p} has no columns")
        return df
    if not head.strip():
        raise AnonymizeError(f"input file {p} is empty")
    if b"\x00" in head:
        raise AnonymizeError(f"cannot read {p}: binary file, expected CSV text or Parquet")
    try:
        text_head = head.decode("utf-8-sig")
        encoding = "utf-8-sig"
    except UnicodeDecodeError as e:
        if e.start > len(head) - 4:  # a multi-byte character cut by the 64 KiB sample
            text_head = head[: e.start].decode("utf-8-sig")
            encoding = "utf-8-sig"
        else:
            text_head = head.decode("latin-1")
            encoding = "latin-1"
    delim = sep or sniff_delimiter(text_head)
    try:
        df = pd.read_csv(p, sep=delim, encoding=encoding, skipinitialspace=False)
    except pd.errors.EmptyDataError:
        raise AnonymizeError(f"input file {p} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise AnonymizeError(f"cannot parse {p} as CSV (delimiter {delim!r}): {msg}") from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


def write_table(df: pd.DataFrame, path, sep: str = ",") -> None:
    """Write ``df`` atomically: CSV (``sep``, LF, no index) or Parquet if the name ends in
    ``.parquet``/``.pq``. On error the target path is untouched."""
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq"):
        _need_pyarrow("writing")
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        atomic_write(p, lambda fh: fh.write(buf.getvalue()))
        return
    text = df.to_csv(sep=sep, index=False, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    atomic_write(p, lambda fh: fh.write(text.encode("utf-8")))


def read_hierarchies(directory=None, pairs=None, columns=None) -> dict[str, Hierarchy]:
    """Hierarchies from a directory and/or ``COL=FILE`` pairs (pairs win).

    In a directory, a file belongs to column ``c`` if its stem ends with
    ``hierarchy_c`` (ARX's ``adult_hierarchy_age.csv``) or, when ``columns`` is
    given, if its stem is ``c``; ``columns`` limits which columns are looked for
    (other files are ignored). An unreadable file is an
    :class:`AnonymizeError`.
    """
    out: dict[str, Hierarchy] = {}
    if directory is not None:
        d = Path(directory)
        if not d.is_dir():
            raise AnonymizeError(f"hierarchy directory not found: {d}")
        for f in sorted(d.iterdir()):
            if not f.is_file() or f.suffix.lower() not in (".csv", ".txt", ""):
                continue
            stem = f.stem
            if "hierarchy_" in stem:
                name = stem.split("hierarchy_", 1)[1]
            elif columns is not None and stem in columns:
                name = stem
            else:
                continue
            if columns is not None and name not in columns:
                continue
            out[name] = Hierarchy.read_arx(f, name=name)
    for item in pairs or []:
        if "=" not in item:
            raise AnonymizeError(f"--hierarchy expects COL=FILE, got {item!r}")
        col, f = item.split("=", 1)
        col = col.strip()
        if columns is not None and col not in columns:
            raise AnonymizeError(f"--hierarchy {col}=…: '{col}' is not a quasi-identifier or sensitive column")
        out[col] = Hierarchy.read_arx(f, name=col)
    return out
