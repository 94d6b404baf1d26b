"""A party's real data: private alignment, keyed vertical mining, and reading 20 M lines from files and PostgreSQL.

    python benchmarks/bench_keyed.py align [--keys 100000,1000000] [--modes private-id,psi]
    python benchmarks/bench_keyed.py vertical [--customers 1000000] [--shared 0.6]
    python benchmarks/bench_keyed.py sources [--lines 20000000] [--no-postgresql]

Every run starts real daemons on loopback (``parties.analyst.local_cluster.LocalCluster``: fresh
certificates, mTLS gRPC, one process per party) on data this script generates in a temporary
directory (seeded; nothing is stored in the repository):

* ``align`` — two parties with ``n`` customer keys each, half shared, a few text products each:
  the vertical job's ``alignment`` phase (key digests → Private-ID or PSI → rows), with
  ``max_len 1`` so mining adds almost nothing. Targets: ``psi`` 1 M keys ≤ 20 s; ``private-id``
  1 M ≤ 360 s, 100 k ≤ 40 s. The PSI peer (``openmined-psi``, ECDH, C++) is timed by
  ``benchmarks/bench_psi.py``.
* ``vertical`` — two parties, ``--customers`` each, ``--shared`` of them common, text items:
  the whole keyed job (``--align private-id`` and ``psi``) against the alignment time plus the
  *unkeyed* vertical job on the same counts (CSR ``.npz`` shares of the inner join, aligned by
  position). Target: keyed ≤ 2 × (alignment + unkeyed).
* ``sources`` — three parties, each reading ``--lines`` basket lines (10 per basket, 500 text SKUs, Zipf-skewed) for a
  horizontal job from Parquet, from PostgreSQL (a server this script starts, as in the tests)
  and from the same data as ``.npz``: wall time and peak RSS of each daemon. Targets: peak RSS
  ≤ 1.5 GB per daemon, time ≤ 2 × the ``.npz`` run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from parties.analyst.local_cluster import LocalCluster  # noqa: E402

PRODUCTS = ["checking", "savings", "card", "mortgage", "car_loan", "home", "car", "life", "travel", "pension"]


def customers(n: int, shared: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two parties' customer ids (``n`` each, a fraction ``shared`` in common), as int64."""
    rng = np.random.default_rng(seed)
    pool = rng.permutation(np.arange(10_000_000, 10_000_000 + int(n * (2 - shared)) + 1))
    common = int(n * shared)
    return pool[:n], np.concatenate([pool[:common], pool[n : n + n - common]])


def keyed_parquet(path: Path, ids: np.ndarray, products: list[str], seed: int) -> None:
    """One row per (customer, product); each customer holds each product with probability 0.3 (≥ 1 row)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    held = rng.random((ids.size, len(products))) < 0.3
    held[~held.any(axis=1), 0] = True
    r, c = np.nonzero(held)
    pq.write_table(
        pa.table({"customer_id": pa.array(ids[r]), "product": pa.array(np.array(products, dtype=object)[c])}), path
    )


def bank_and_insurer(d: Path, n: int, shared: float) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """Two parties' keyed Parquet tables in ``d`` (a.parquet, b.parquet): their ids and ``[data.crm]`` tables."""
    a, b = customers(n, shared, 1)
    keyed_parquet(d / "a.parquet", a, PRODUCTS[:5], 2)
    keyed_parquet(d / "b.parquet", b, PRODUCTS[5:], 3)
    tables = [{"crm": {"path": str(d / f"{x}.parquet"), "transaction": "customer_id", "item": "product"}} for x in "ab"]
    return a, b, tables


def run(
    parties: int, data: list[dict], job: str, params: dict, timeout: float = 3600, memory: int | None = 8 << 30
) -> tuple[float, dict]:
    """One job on fresh daemons; ``memory`` is their ``[limits] max_job_memory_bytes`` (None: the default)."""
    limits: dict = {"session_timeout": timeout}
    if memory:
        limits["max_job_memory_bytes"] = memory
    with tempfile.TemporaryDirectory(prefix="ppdm-bench-") as d:
        with LocalCluster(
            parties,
            workdir=Path(d),
            data={f"p{i}": x for i, x in enumerate(data)},
            policy={"min_parties": 2},
            limits=limits,
        ) as c:
            t0 = time.perf_counter()
            out = c.run_job(job, params, timeout=timeout)
            return time.perf_counter() - t0, out


def cmd_align(args) -> None:
    print(f"{'keys':>10} {'mode':>10} {'alignment s':>12} {'job s':>8} {'union':>10} {'common':>10}")
    for n in [int(x) for x in args.keys.split(",")]:
        with tempfile.TemporaryDirectory(prefix="ppdm-keys-") as d:
            a, b, data = bank_and_insurer(Path(d), n, 0.5)
            for mode in args.modes.split(","):
                params = {"min_support": "0.9", "max_len": 1, "data": "crm", "align": mode}
                wall, out = run(2, data, "mine.vertical", params)
                ph = out["p0"]["protocol"]["phases_seconds"]
                print(
                    f"{n:>10,} {mode:>10} {ph.get('alignment', float('nan')):>12.1f} {wall:>8.1f} "
                    f"{len(a) + len(b) - int(n * 0.5):>10,} {out['p0']['transactions']:>10,}",
                    flush=True,
                )


def cmd_vertical(args) -> None:
    import pyarrow.parquet as pq

    from anonymize.itemsets import TransactionDB
    from parties.joint.partition import save_npz

    n = args.customers
    with tempfile.TemporaryDirectory(prefix="ppdm-keys-") as d:
        a, b, data = bank_and_insurer(Path(d), n, args.shared)
        # the same counts without keys: CSR shares of the inner join, aligned by position
        common = np.intersect1d(a, b)
        for i, x in enumerate("ab"):
            t = pq.read_table(Path(d) / f"{x}.parquet").to_pandas()
            t = t[t.customer_id.isin(common)]
            row = np.searchsorted(common, t.customer_id.to_numpy())
            prods = PRODUCTS[:5] if x == "a" else PRODUCTS[5:]
            code = t["product"].map({p: 5 * i + j for j, p in enumerate(prods)}).to_numpy()
            order = np.argsort(row, kind="stable")
            indptr = np.zeros(common.size + 1, np.int64)
            np.cumsum(np.bincount(row, minlength=common.size), out=indptr[1:])
            save_npz(
                TransactionDB.from_csr(indptr, code[order], items=np.arange(5 * i, 5 * i + 5)), Path(d) / f"{x}.npz"
            )
        base = {"min_support": "0.05", "min_confidence": "0.6"}
        t_plain, out = run(2, [{"transactions": str(Path(d) / f"{x}.npz")} for x in "ab"], "mine.vertical", base)
        print(f"unkeyed vertical job on the inner join ({common.size:,} rows): {t_plain:.1f} s, "
              f"{len(out['p0']['itemsets'])} itemsets")  # fmt: skip
        for mode in ("psi", "private-id"):
            t, out = run(2, data, "mine.vertical", {**base, "data": "crm", "align": mode})
            align = out["p0"]["protocol"]["phases_seconds"].get("alignment", float("nan"))
            ratio = t / (align + t_plain)
            print(
                f"keyed --align {mode}: {t:.1f} s (alignment {align:.1f} s), {len(out['p0']['itemsets'])} itemsets; "
                f"keyed / (alignment + unkeyed) = {ratio:.2f} (target <= 2)",
                flush=True,
            )


def cmd_sources(args) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from anonymize.itemsets import TransactionDB
    from parties.joint.partition import save_npz

    lines = args.lines
    skus = np.array([f"sku-{i:05d}" for i in range(500)], dtype=object)
    with tempfile.TemporaryDirectory(prefix="ppdm-lines-") as d:
        server = None
        if not args.no_postgresql:
            from pg_server import PostgresServer, find_bindir

            bindir = find_bindir()
            server = PostgresServer(bindir).start() if bindir else None
            if server is None:
                print("PostgreSQL: no server binaries (apt install postgresql); skipped")
        try:
            data: dict[str, list[dict]] = {"npz": [], "parquet": [], "postgresql": []}
            for p in range(3):
                rng = np.random.default_rng(10 + p)
                per = 10
                baskets = lines // per
                popular = rng.zipf(1.3, size=lines) % skus.size  # a skewed catalogue
                basket = np.repeat(np.arange(baskets, dtype=np.int64) + p * 10**9, per)[:lines]
                tbl = pa.table({"basket_id": basket, "sku": pa.array(skus[popular]).dictionary_encode()})
                f = Path(d) / f"p{p}.parquet"
                pq.write_table(tbl, f, row_group_size=1 << 20)
                data["parquet"].append({"lines": {"path": str(f), "transaction": "basket_id", "item": "sku"}})
                # the same lines as integer ids for the .npz run (sku code = its name's rank)
                ids = popular.astype(np.int64)
                indptr = np.arange(0, lines + per, per, dtype=np.int64)[: baskets + 1]
                save_npz(
                    TransactionDB.from_csr(indptr, ids[: indptr[-1]], items=np.arange(skus.size)), Path(d) / f"p{p}.npz"
                )
                data["npz"].append({"transactions": str(Path(d) / f"p{p}.npz")})
                if server:
                    t0 = time.perf_counter()
                    server.ingest(f"lines_{p}", tbl.cast(pa.schema([("basket_id", pa.int64()), ("sku", pa.string())])))
                    print(
                        f"PostgreSQL: loaded party {p}'s {lines:,} lines in {time.perf_counter() - t0:.0f} s",
                        flush=True,
                    )
                    pw = server.password_file(Path(d) / f"p{p}.pass")
                    data["postgresql"].append(
                        {"lines": {"postgresql": server.url, "password_file": str(pw),
                                   "query": f"SELECT basket_id, sku FROM lines_{p}",
                                   "transaction": "basket_id", "item": "sku"}}
                    )  # fmt: skip
                del tbl, basket, popular
            params = {"min_support": args.min_support, "candidates": "all"}
            base = None
            print(f"{'source':>11} {'wall s':>8} {'ratio':>6} {'peak RSS per daemon (MiB)':>30} {'itemsets':>9}")
            for kind in ("npz", "parquet", "postgresql"):
                if not data[kind]:
                    continue
                extra = {"n_items": int(skus.size)} if kind == "npz" else {"data": "lines"}
                wall, out = run(3, data[kind], "mine.horizontal", {**params, **extra}, memory=None)  # default 2 GiB
                base = base or wall
                rss = ", ".join(f"{v['peak_rss_bytes'] / 2**20:,.0f}" for v in out.values())
                n_its = len(next(v for v in out.values() if "itemsets" in v)["itemsets"])
                print(f"{kind:>11} {wall:>8.1f} {wall / base:>6.2f} {rss:>30} {n_its:>9}", flush=True)
        finally:
            if server:
                server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("align")
    a.add_argument("--keys", default="100000,1000000")
    a.add_argument("--modes", default="psi,private-id")
    v = sub.add_parser("vertical")
    v.add_argument("--customers", type=int, default=1_000_000)
    v.add_argument("--shared", type=float, default=0.6)
    s = sub.add_parser("sources")
    s.add_argument("--lines", type=int, default=20_000_000)
    s.add_argument("--min-support", default="0.01")
    s.add_argument("--no-postgresql", action="store_true")
    args = ap.parse_args()
    {"align": cmd_align, "vertical": cmd_vertical, "sources": cmd_sources}[args.cmd](args)


if __name__ == "__main__":
    main()
