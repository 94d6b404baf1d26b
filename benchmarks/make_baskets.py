"""Make a large table of basket lines from a FIMI transaction file, on demand, for the benchmarks of issue 18
(engines beyond one machine's memory).

    python benchmarks/make_baskets.py IN.dat OUT.parquet --replicas R [--text-items] [--fimi OUT.dat]
    python benchmarks/make_baskets.py IN.dat OUT.parquet --rows-target 100000000

IN is a FIMI file (``../shared/data/fimi/retail.dat``, ``T10I4D100K.dat``, …): one transaction per line, items as
space-separated integers. OUT is a Parquet table with one row per (transaction, item) — the "basket lines" a
party's source holds (``parties/sources``) — with the columns

* ``basket`` BIGINT: the transaction id, ``replica · N + line`` (N = lines of IN, line 0-based), so every
  replica's transactions are distinct baskets;
* ``item`` BIGINT, or with ``--text-items`` VARCHAR ``'item-<id>'`` (for engines keyed on strings).

The file is IN replicated R times (``--replicas``), or (``--rows-target``) replicated until about that many lines:
whole replicas, then the first transactions of one more, up to the target (never splitting a transaction).
Rows come in basket order, items in the file's order. Item frequencies, and so supports in proportion, are
exactly IN's for whole replicas.

This is data made by a script, not stored data. Memory is bounded by IN (parsed once into two int64 arrays) and
one chunk of ~1 M rows: the output is written chunk by chunk (a row group each) with pyarrow's ParquetWriter;
``item`` is dictionary-encoded, ``basket`` (ascending) delta-encoded (DELTA_BINARY_PACKED: ~35% smaller and
faster to write and to scan than plain or dictionary pages).
``--fimi OUT.dat`` also writes the replicated transactions as FIMI text (items space-separated, no trailing
space) for peer tools that read FIMI. Outputs are written beside their targets under temporary names and
renamed when complete.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CHUNK_ROWS = 1 << 20  # rows per write (and Parquet row group), about


class GenError(Exception):
    """A problem with the inputs or the output path: reported as one line, without a traceback."""


def read_fimi(path: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """(line of each item, item, number of lines) of a FIMI file; empty lines are transactions without items."""
    if not path.is_file():
        raise GenError(f"{path}: no such FIMI file")
    lines: list[int] = []
    items: list[int] = []
    n = 0
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            toks = raw.split()
            try:
                items.extend(map(int, toks))
            except ValueError:
                bad = next(t for t in toks if not t.lstrip(b"-").isdigit())
                raise GenError(f"{path}: line {n}: {bad[:40]!r} is not an integer item") from None
            lines.extend([n - 1] * len(toks))
    if not items:
        raise GenError(f"{path}: no items")
    return np.asarray(lines, np.int64), np.asarray(items, np.int64), n


def plan(n_items: int, line: np.ndarray, replicas: int | None, rows_target: int | None) -> tuple[int, int]:
    """(whole replicas, items of the partial replica that follows them)."""
    if replicas is not None:
        if replicas < 1:
            raise GenError(f"--replicas must be positive, got {replicas}")
        return replicas, 0
    assert rows_target is not None
    if rows_target < 1:
        raise GenError(f"--rows-target must be positive, got {rows_target}")
    whole, rest = divmod(rows_target, n_items)
    if rest:
        # the prefix of whole transactions with at most `rest` items: cut before the first item of the line of
        # item `rest` (the line it starts is not complete within the target)
        rest = int(np.searchsorted(line, line[rest], side="left"))
    return whole, rest


def chunks(
    line: np.ndarray, item: np.ndarray, n_lines: int, whole: int, rest: int
) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(first replica, basket, item) chunks of ~CHUNK_ROWS rows: whole replicas, several to a chunk when IN is
    small, then the partial replica."""
    per = max(1, CHUNK_ROWS // len(item))
    for r0 in range(0, whole, per):
        k = min(per, whole - r0)
        offs = np.repeat((r0 + np.arange(k, dtype=np.int64)) * n_lines, len(item))
        yield r0, np.tile(line, k) + offs, np.tile(item, k)
    if rest:
        yield whole, line[:rest] + whole * n_lines, item[:rest]


def fimi_text(line: np.ndarray, item: np.ndarray, n_lines: int, upto: int | None = None) -> bytes:
    """The transactions as FIMI text, one line per transaction (empty lines kept), items space-separated;
    only the items before ``upto`` (a whole number of transactions) and their lines when given."""
    m = len(item) if upto is None else upto
    n = n_lines if upto is None else (int(line[m - 1]) + 1 if m else 0)
    out: list[list[str]] = [[] for _ in range(n)]
    for ln, it in zip(line[:m].tolist(), item[:m].tolist()):
        out[ln].append(str(it))
    return "".join(" ".join(t) + "\n" for t in out).encode()


def _tmp(path: Path) -> Path:
    return path.with_name(f".partial-{os.getpid()}-{path.name}")


def make(
    src: Path,
    out: Path,
    replicas: int | None,
    rows_target: int | None,
    text_items: bool,
    fimi: Path | None,
    compression: str,
) -> None:
    if not out.name.lower().endswith((".parquet", ".pq")):
        raise GenError(f"{out}: the output is Parquet: name it .parquet or .pq")
    for p in (out, fimi):
        if p is not None and not p.parent.is_dir():
            raise GenError(f"{p.parent}: no such directory for the output")
        if p is not None and p.is_dir():
            raise GenError(f"{p}: is a directory")
    if fimi is not None and fimi.resolve() == src.resolve():
        raise GenError(f"{fimi}: --fimi would overwrite the input")
    t0 = time.perf_counter()
    line, item, n_lines = read_fimi(src)
    whole, rest = plan(len(item), line, replicas, rows_target)
    total = whole * len(item) + rest
    if total == 0:
        raise GenError(f"--rows-target {rows_target} is smaller than the first transaction of {src}")
    print(
        f"{src}: {n_lines:,} transactions, {len(item):,} lines, {len(np.unique(item)):,} distinct items "
        f"(read in {time.perf_counter() - t0:.1f} s)"
    )
    tail = f" + {int(line[rest - 1]) + 1:,} transactions" if rest else ""
    print(f"writing {whole:,} replicas{tail} = {total:,} basket lines to {out}", flush=True)
    t1 = time.perf_counter()
    item_type = pa.string() if text_items else pa.int64()
    schema = pa.schema([pa.field("basket", pa.int64(), nullable=False), pa.field("item", item_type, nullable=False)])
    if text_items:
        # the strings of IN's items, once; each chunk takes from them (dictionary-encoded in the file anyway)
        uniq, inv = np.unique(item, return_inverse=True)
        words = pa.array([f"item-{v}" for v in uniq.tolist()], pa.string())
        inv = inv.astype(np.int32)
    tmps = [_tmp(out)] + ([_tmp(fimi)] if fimi is not None else [])
    written = 0
    last = t1
    try:
        with ExitStack() as stack:
            writer = stack.enter_context(
                pq.ParquetWriter(
                    tmps[0],
                    schema,
                    compression=compression,
                    use_dictionary=["item"],  # few distinct items; basket ids ascend: delta-encoded
                    column_encoding={"basket": "DELTA_BINARY_PACKED"},
                )
            )
            fimi_f: BinaryIO | None = stack.enter_context(open(tmps[1], "wb")) if fimi is not None else None
            whole_text = fimi_text(line, item, n_lines) if fimi_f is not None else b""
            for r0, basket, items in chunks(line, item, n_lines, whole, rest):
                if text_items:
                    reps = len(items) // len(item) if r0 < whole else 0
                    idx = np.tile(inv, reps) if reps else inv[: len(items)]
                    col: pa.Array = words.take(pa.array(idx))
                else:
                    col = pa.array(items, pa.int64())
                writer.write_table(pa.table([pa.array(basket, pa.int64()), col], schema=schema), CHUNK_ROWS)
                if fimi_f is not None:
                    if r0 < whole:
                        for _ in range(len(items) // len(item)):
                            fimi_f.write(whole_text)
                    else:
                        fimi_f.write(fimi_text(line, item, n_lines, rest))
                written += len(items)
                now = time.perf_counter()
                if now - last >= 5 or written == total:
                    last = now
                    print(f"  {now - t1:7.1f} s: {written:,} lines ({100 * written / total:.0f}%)", flush=True)
        os.replace(tmps[0], out)
        if fimi is not None:
            os.replace(tmps[1], fimi)
    except BaseException:
        for t in tmps:
            t.unlink(missing_ok=True)
        raise
    dt = time.perf_counter() - t1
    print(
        f"done: {total:,} lines in {dt:.1f} s ({total / dt / 1e6:.1f} M lines/s), "
        f"{out.stat().st_size / 1e6:,.1f} MB -> {out}"
        + (f"; FIMI {fimi.stat().st_size / 1e6:,.1f} MB -> {fimi}" if fimi is not None else "")
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("src", type=Path, metavar="IN.dat", help="FIMI transaction file")
    ap.add_argument("out", type=Path, metavar="OUT.parquet", help="Parquet table of basket lines (basket, item)")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--replicas", type=int, help="replicate IN this many times")
    how.add_argument("--rows-target", type=int, help="replicate IN until about this many lines (whole transactions)")
    ap.add_argument("--text-items", action="store_true", help="items as text 'item-<id>' instead of BIGINT")
    ap.add_argument("--fimi", type=Path, default=None, metavar="OUT.dat", help="also write the replicas as FIMI text")
    ap.add_argument(
        "--compression",
        default="snappy",
        choices=["snappy", "zstd", "gzip", "none"],
        help="Parquet compression (default snappy)",
    )
    a = ap.parse_args(argv)
    try:
        make(a.src, a.out, a.replicas, a.rows_target, a.text_items, a.fimi, a.compression)
    except GenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (OSError, pa.ArrowException) as e:
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
