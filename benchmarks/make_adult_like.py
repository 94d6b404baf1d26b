"""Make an Adult-like table of any size, on demand, for the benchmarks of issue 18 (engines beyond one machine's memory).

    python benchmarks/make_adult_like.py OUT.parquet --rows N [--seed S] [--adult PATH] [--check]

The table has the columns of the project's Adult file (``../shared/data/adult/adult.csv``, else the bundled
``anonymize/data/adult_subset.csv``), in the file's order, and Adult's joint distribution: every row is an Adult
row drawn uniformly with replacement, whose integer column(s) (``age``) get a small uniform integer noise in
``[-jitter, +jitter]`` (default 2), clipped to the range of the column's ARX hierarchy
(``anonymize/data/adult_hierarchy_age.csv``: leaves 1 … 100), so that every value still has a hierarchy entry;
a column without a hierarchy is clipped to the range Adult itself has.

This is data made by a script, not stored data: 100 M rows (~340 MB of Parquet, several GB as a pandas frame)
take ~20 s on two cores, in ~0.3 GB of memory. DuckDB does the work in one streaming ``COPY … TO`` with a memory
limit: Adult is a 30 k-row table with a row number whose categorical columns are ENUMs (the hash join's payload
is then one byte a column), joined to ``range(N)`` on ``hash(i, seed) % len(Adult)``; the noise comes from
``hash()`` of that hash, so the output depends on ``--seed`` only (same seed, same DuckDB version → the same rows
in the same order). Row ``i`` of the output is the ``i``-th draw.

The output format follows the extension: ``.parquet``/``.pq`` (row groups of ~1 M rows) or ``.csv`` (also
``.csv.gz``/``.csv.zst``; ``;``-separated with a header, like Adult). It is written beside the target under a
temporary name and renamed when complete. ``--check`` then compares, over the written file, each categorical
column's marginal frequencies with Adult's (largest absolute difference in proportion) and checks that every
jittered value is a hierarchy leaf.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import threading
import time
from pathlib import Path

import duckdb
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
SHARED_ADULT = REPO.parent / "shared" / "data" / "adult" / "adult.csv"
BUNDLED_ADULT = REPO / "anonymize" / "data" / "adult_subset.csv"
HIERARCHY_DIR = REPO / "anonymize" / "data"

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.zst")


class GenError(Exception):
    """A problem with the inputs or the output path: reported as one line, without a traceback."""


def default_adult() -> Path:
    return SHARED_ADULT if SHARED_ADULT.is_file() else BUNDLED_ADULT


def output_format(out: Path) -> str:
    name = out.name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise GenError(
        f"{out}: cannot tell the format from the name; use one of {', '.join(PARQUET_SUFFIXES + CSV_SUFFIXES)}"
    )


def _is_int(s: str) -> bool:
    try:
        int(s)
    except ValueError:
        return False
    return True


def read_adult(path: Path) -> tuple[list[str], dict[str, list[str]], dict[str, list[int]]]:
    """Adult as read from ``path`` (``;`` or ``,`` separated, with a header): the column names in file order,
    the categorical columns (strings) and the integer columns (every value an integer)."""
    if not path.is_file():
        raise GenError(f"{path}: no such Adult file")
    with path.open(newline="", encoding="utf-8") as f:
        header_line = f.readline()
        if not header_line.count(";") and not header_line.count(","):
            raise GenError(f"{path}: not a ;- or ,-separated CSV with a header, as Adult is")
        delimiter = ";" if header_line.count(";") >= header_line.count(",") else ","
        f.seek(0)
        rows = list(csv.reader(f, delimiter=delimiter))
    if len(rows) < 2:
        raise GenError(f"{path}: no data rows")
    names = [c.strip() for c in rows[0]]
    if len(set(names)) != len(names) or any(not c for c in names):
        raise GenError(f"{path}: empty or repeated column names in the header {names}")
    body = [r for r in rows[1:] if r]
    for n, r in enumerate(body, start=2):
        if len(r) != len(names):
            raise GenError(f"{path}: line {n} has {len(r)} fields, the header {len(names)}")
    cat: dict[str, list[str]] = {}
    num: dict[str, list[int]] = {}
    for j, c in enumerate(names):
        col = [r[j].strip() for r in body]
        if all(_is_int(v) for v in col):
            num[c] = [int(v) for v in col]
        else:
            cat[c] = col
    if not cat:
        raise GenError(f"{path}: no categorical column; not an Adult-like table")
    return names, cat, num


def hierarchy_leaves(col: str, adult: Path) -> tuple[set[int], Path] | None:
    """The integer leaves of the column's ARX hierarchy (``adult_hierarchy_<col>.csv`` in anonymize/data, else
    beside the Adult file), or None when there is none."""
    for d in (HIERARCHY_DIR, adult.parent):
        p = d / f"adult_hierarchy_{col}.csv"
        if p.is_file():
            with p.open(newline="", encoding="utf-8") as f:
                firsts = [r[0].strip() for r in csv.reader(f, delimiter=";") if r]
            if not firsts or not all(_is_int(v) for v in firsts):
                raise GenError(f"{p}: the leaves (first column) of a hierarchy of {col!r} are not all integers")
            return {int(v) for v in firsts}, p
    return None


def clip_range(col: str, values: list[int], adult: Path) -> tuple[int, int, str, set[int] | None]:
    """The range jittered values of ``col`` are clipped to, and where it comes from. With a hierarchy every
    integer of the range must be a leaf (else clipping would not keep the values in it)."""
    found = hierarchy_leaves(col, adult)
    if found is None:
        return min(values), max(values), "Adult's own range (no hierarchy)", None
    leaves, p = found
    lo, hi = min(leaves), max(leaves)
    holes = sorted(set(range(lo, hi + 1)) - leaves)
    if holes:
        raise GenError(f"{p}: the leaves of {col!r} are not contiguous (missing {holes[:5]}); cannot clip into it")
    outside = sorted({v for v in values if not lo <= v <= hi})
    if outside:
        raise GenError(f"{p}: Adult's {col!r} has values without a hierarchy leaf: {outside[:5]}")
    return lo, hi, f"the leaves of {p}", leaves


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def load_adult(con: duckdb.DuckDBPyConnection, names: list[str], cat: dict[str, list[str]], num: dict[str, list[int]]):
    """Adult as the DuckDB table ``adult(rid, …)``: ``rid`` = 0-based row number in file order, categorical
    columns as ENUMs of their sorted values."""
    n = len(next(iter(cat.values())) if cat else next(iter(num.values())))
    cols = {"rid": pa.array(range(n), pa.int64())}
    for c in names:
        cols[c] = pa.array(cat[c], pa.string()) if c in cat else pa.array(num[c], pa.int64())
    con.register("adult_arrow", pa.table(cols))
    for k, c in enumerate(cat):
        con.execute(f"CREATE TYPE e{k} AS ENUM ({', '.join(_lit(v) for v in sorted(set(cat[c])))})")
    sel = ", ".join(f"{_q(c)}::e{list(cat).index(c)} AS {_q(c)}" if c in cat else _q(c) for c in names)
    con.execute(f"CREATE TABLE adult AS SELECT rid, {sel} FROM adult_arrow ORDER BY rid")
    con.unregister("adult_arrow")
    return n


def generate_sql(
    names: list[str], num_ranges: dict[str, tuple[int, int]], n_rows: int, n_adult: int, seed: int, jitter: int
) -> str:
    """The query of the N-row table. ``hash(i, seed)`` picks the Adult row; the noise of the k-th integer column
    is the k-fold rehash of it (a chain: independent of the pick and of each other), modulo 2·jitter + 1."""
    pick = f"hash(range, {int(seed)})"
    draws = [f"{pick} AS h0"]
    expr = pick
    out = []
    for c in names:
        if c in num_ranges:
            k = len(draws)
            expr = f"hash({expr})"
            draws.append(f"{expr} AS h{k}")
            lo, hi = num_ranges[c]
            noise = f"(r.h{k} % {2 * jitter + 1})::BIGINT - {jitter}"
            out.append(f"least(greatest(a.{_q(c)} + {noise}, {lo}), {hi}) AS {_q(c)}")
        else:
            out.append(f"a.{_q(c)}")  # an ENUM: Parquet and CSV get its string
    # range(N) is scanned in order and the join's probe side keeps that order (preserve_insertion_order)
    return (
        f"SELECT {', '.join(out)} FROM (SELECT {', '.join(draws)} FROM range({int(n_rows)})) r "
        f"JOIN adult a ON a.rid = (r.h0 % {int(n_adult)})::BIGINT"
    )


def _progress(path: Path, t0: float, done: threading.Event, every: float) -> None:
    while not done.wait(every):
        size = path.stat().st_size if path.exists() else 0
        print(f"  {time.perf_counter() - t0:7.1f} s: {size / 1e6:,.0f} MB written", flush=True)


def check(
    con: duckdb.DuckDBPyConnection,
    out: Path,
    fmt: str,
    names: list[str],
    cat: dict[str, list[str]],
    leaves: dict[str, set[int]],
    tol: float,
) -> bool:
    """Marginals of the written file against Adult's (per categorical column, the largest absolute difference
    in proportion), and every value of an integer column with a hierarchy is a leaf. True when all pass."""
    src = (
        f"read_parquet({_lit(str(out))})"
        if fmt == "parquet"
        else f"read_csv({_lit(str(out))}, delim=';', header=true, all_varchar=true)"
    )
    total = con.execute(f"SELECT count(*) FROM {src}").fetchone()[0]  # type: ignore[index]
    ok = True
    n_adult = len(next(iter(cat.values()))) if cat else 0
    for c in cat:
        ref: dict[str, float] = {}
        for v in cat[c]:
            ref[v] = ref.get(v, 0) + 1 / n_adult
        got = {v: k / total for v, k in con.execute(f"SELECT {_q(c)}, count(*) FROM {src} GROUP BY ALL").fetchall()}
        diff = max(abs(got.get(v, 0.0) - ref.get(v, 0.0)) for v in set(ref) | set(got))
        new = sorted(set(got) - set(ref))
        good = diff <= tol and not new
        ok &= good
        print(
            f"  {c}: {len(got)} values, max |Δ proportion| = {diff:.5f}{' NEW VALUES ' + str(new[:3]) if new else ''}"
            f" {'ok' if good else 'FAIL'}"
        )
    for c, lv in leaves.items():
        got_vals = [int(v) for (v,) in con.execute(f"SELECT DISTINCT {_q(c)} FROM {src}").fetchall()]
        bad = sorted(set(got_vals) - lv)
        ok &= not bad
        print(
            f"  {c}: {len(got_vals)} distinct values in [{min(got_vals)}, {max(got_vals)}], "
            f"{'all hierarchy leaves ok' if not bad else 'NOT LEAVES ' + str(bad[:5]) + ' FAIL'}"
        )
    print(f"  {total:,} rows; check {'passed' if ok else 'FAILED'}")
    return ok


def make(
    out: Path,
    rows: int,
    seed: int,
    adult: Path,
    jitter: int,
    memory_limit: str,
    threads: int | None,
    compression: str,
    row_group_size: int,
    do_check: bool,
    tol: float,
) -> bool:
    fmt = output_format(out)
    if rows < 1:
        raise GenError(f"--rows must be positive, got {rows}")
    if jitter < 0:
        raise GenError(f"--jitter must be >= 0, got {jitter}")
    if not out.parent.is_dir():
        raise GenError(f"{out.parent}: no such directory for the output")
    if out.is_dir():
        raise GenError(f"{out}: is a directory")
    names, cat, num = read_adult(adult)
    ranges: dict[str, tuple[int, int]] = {}
    leaves: dict[str, set[int]] = {}
    for c, vals in num.items():
        lo, hi, why, lv = clip_range(c, vals, adult)
        ranges[c] = (lo, hi)
        if lv is not None:
            leaves[c] = lv
        print(f"{c}: Adult range [{min(vals)}, {max(vals)}], jitter ±{jitter}, clipped to [{lo}, {hi}] ({why})")
    con = duckdb.connect()
    con.execute(f"SET memory_limit = {_lit(memory_limit)}")
    con.execute("SET preserve_insertion_order = true")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    n_adult = load_adult(con, names, cat, num)
    print(f"Adult: {adult} ({n_adult:,} rows, columns {', '.join(names)})")
    if fmt == "parquet":
        opts = f"FORMAT parquet, COMPRESSION {compression}, ROW_GROUP_SIZE {int(row_group_size)}"
    else:
        opts = "FORMAT csv, HEADER true, DELIMITER ';', COMPRESSION auto"
    tmp = out.with_name(f".partial-{os.getpid()}-{out.name}")
    sql = generate_sql(names, ranges, rows, n_adult, seed, jitter)
    print(f"writing {rows:,} rows to {out} ({fmt}, seed {seed}) ...", flush=True)
    t0 = time.perf_counter()
    done = threading.Event()
    mon = threading.Thread(target=_progress, args=(tmp, t0, done, 5.0), daemon=True)
    mon.start()
    try:
        con.execute(f"COPY ({sql}) TO {_lit(str(tmp))} ({opts})")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        done.set()
        mon.join()
    dt = time.perf_counter() - t0
    size = out.stat().st_size
    print(f"done: {rows:,} rows in {dt:.1f} s ({rows / dt / 1e6:.2f} M rows/s), {size / 1e6:,.1f} MB -> {out}")
    if not do_check:
        return True
    print("check against Adult:")
    t1 = time.perf_counter()
    ok = check(con, out, fmt, names, cat, leaves, tol)
    print(f"  checked in {time.perf_counter() - t1:.1f} s")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out", type=Path, metavar="OUT", help="output file: .parquet/.pq, or .csv (.csv.gz, .csv.zst)")
    ap.add_argument("--rows", type=int, default=100_000_000, help="number of rows (default 100,000,000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draws (default 0)")
    ap.add_argument(
        "--adult",
        type=Path,
        default=None,
        help=f"Adult CSV to sample (default {SHARED_ADULT} if present, else {BUNDLED_ADULT})",
    )
    ap.add_argument("--jitter", type=int, default=2, help="integer columns get uniform noise in [-J, J] (default 2)")
    ap.add_argument("--memory-limit", default="2GB", help="DuckDB memory_limit (default 2GB)")
    ap.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all cores)")
    ap.add_argument(
        "--compression",
        default="snappy",
        choices=["snappy", "zstd", "gzip", "uncompressed"],
        help="Parquet compression (default snappy)",
    )
    ap.add_argument("--row-group-size", type=int, default=1_000_000, help="Parquet rows per row group (default 1 M)")
    ap.add_argument(
        "--check",
        action="store_true",
        help="afterwards, compare the marginals with Adult's and check that values are hierarchy leaves",
    )
    ap.add_argument(
        "--tolerance",
        type=float,
        default=0.01,
        help="--check: largest allowed absolute difference in proportion (default 0.01)",
    )
    a = ap.parse_args(argv)
    try:
        ok = make(
            a.out,
            a.rows,
            a.seed,
            a.adult or default_adult(),
            a.jitter,
            a.memory_limit,
            a.threads,
            a.compression,
            a.row_group_size,
            a.check,
            a.tolerance,
        )
    except GenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (duckdb.Error, OSError) as e:
        print(f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else e!r}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
