"""``ppdm bench mpc``: every primitive between real daemons on loopback, checked and timed.

Starts three daemons with fresh certificates (:class:`parties.analyst.local_cluster.LocalCluster`),
runs each primitive on seeded random inputs (:mod:`parties.bench_inputs`),
checks every result against the plain function, and prints one table — or,
with ``--json``, ``{"results": [{"operation", "parties", "size", "seconds",
"per_second", "bytes", "correct", ...}]}``.

``seconds`` is the protocol time: the slowest party's time from a common
start barrier to its output (the ``wall_seconds`` field adds the analyst's
job round trip). ``per_second`` counts elements (vectors), OTs, or input
items of all parties (set protocols; ``intersection_cardinality`` per party).
"""

from __future__ import annotations

import json
import sys
import time

from parties.cli.common import CLIError, comma_list
from parties.jobs.bench_inputs import OPERATIONS, expected

__all__ = ["register", "run_bench", "PLAN_FULL", "PLAN_QUICK"]

# operation -> (parties, size)
PLAN_FULL = {
    "base_ot": (2, 128),
    "ot_extension": (2, 1_000_000),
    "ot_1_of_n": (2, 100_000),
    "secure_sum": (3, 1_000_000),
    "secure_sum_threshold": (3, 10_000),
    "dot_product": (2, 1_000_000),
    "set_union": (3, 2_000),
    "intersection_cardinality": (2, 10_000),
}
PLAN_QUICK = {
    "base_ot": (2, 128),
    "ot_extension": (2, 100_000),
    "ot_1_of_n": (2, 10_000),
    "secure_sum": (3, 100_000),
    "secure_sum_threshold": (3, 1_000),
    "dot_product": (2, 100_000),
    "set_union": (3, 300),
    "intersection_cardinality": (2, 1_000),
}
UNIT = {
    "base_ot": "OTs",
    "ot_extension": "OTs",
    "ot_1_of_n": "OTs",
    "secure_sum": "elements",
    "secure_sum_threshold": "elements",
    "dot_product": "elements",
    "set_union": "items",
    "intersection_cardinality": "items/party",
}


def _throughput(op: str, parties: int, size: int, seconds: float) -> float:
    items = size * parties if op == "set_union" else size
    return items / seconds if seconds > 0 else float("inf")


def run_bench(
    plan: dict, *, seed: int = 1, repeat: int = 1, operations=None, progress=None, link_shape=None
) -> list[dict]:
    """Run the plan on a fresh 3-party local cluster; one result dict per operation (best of ``repeat``).

    ``link_shape``: ``(rtt_ms, mbit)`` emulates a WAN link between the daemons (:mod:`parties.runtime.shaping`).
    """
    from parties.analyst.local_cluster import LocalCluster

    ops = [o for o in OPERATIONS if operations is None or o in operations]
    results = []
    n_max = max(plan[o][0] for o in ops)
    with LocalCluster(n_max, log_level="WARNING", link_shape=link_shape) as cluster:
        for op in ops:
            n, size = plan[op]
            names = cluster.names[:n]
            best = None
            for r in range(repeat):
                s = seed + r
                t0 = time.perf_counter()
                out = cluster.run_job(
                    "bench.mpc", {"operation": op, "size": size, "seed": s}, timeout=600, parties=names
                )
                wall = time.perf_counter() - t0
                want = expected(op, s, n, size)
                outputs = [v["output"] for v in out.values() if v["output"] is not None]
                correct = bool(outputs) and all(o == want for o in outputs)
                seconds = max(v["seconds"] for v in out.values())
                row = {
                    "operation": op,
                    "parties": n,
                    "size": size,
                    "seconds": round(seconds, 6),
                    "per_second": round(_throughput(op, n, size, seconds), 1),
                    "bytes": int(sum(v["bytes"] for v in out.values())),
                    "bytes_per_party": {p: int(v["bytes"]) for p, v in out.items()},
                    "network_waits": max(int(v.get("waits", 0)) for v in out.values()),
                    "correct": correct,
                    "unit": UNIT[op],
                    "wall_seconds": round(wall, 6),
                }
                if best is None or (row["correct"] and row["seconds"] < best["seconds"]) or not row["correct"]:
                    best = row if (best is None or best["correct"]) else best
            if best is not None:  # repeat >= 1
                results.append(best)
                if progress:
                    progress(best)
    return results


def _fmt_rate(x: float) -> str:
    for div, suf in ((1e6, " M"), (1e3, " k")):
        if x >= div:
            return f"{x / div:.2f}{suf}"
    return f"{x:.0f} "


def _fmt_bytes(b: int) -> str:
    for div, suf in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= div:
            return f"{b / div:.1f} {suf}"
    return f"{b} B"


def format_table(rows: list[dict]) -> str:
    head = (
        f"{'operation':<26}{'parties':>8}{'size':>11}{'seconds':>10}  {'throughput':<22}{'bytes':>11}"
        f"{'net waits':>10}  correct"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['operation']:<26}{r['parties']:>8}{r['size']:>11,}{r['seconds']:>10.3f}  "
            f"{_fmt_rate(r['per_second']) + r['unit'] + '/s':<22}{_fmt_bytes(r['bytes']):>11}"
            f"{r.get('network_waits', 0):>10}  {'yes' if r['correct'] else 'NO'}"
        )
    return "\n".join(lines)


def _cmd(args) -> int:
    if args.target != "mpc":
        raise CLIError(f"unknown benchmark {args.target!r} (available: mpc)")
    plan = PLAN_QUICK if args.quick else PLAN_FULL
    ops = None
    if args.only:
        ops = comma_list(args.only)
        bad = [o for o in ops if o not in OPERATIONS]
        if bad:
            raise CLIError(f"unknown operation(s) {', '.join(bad)} (choose from {', '.join(OPERATIONS)})")
    if args.repeat < 1:
        raise CLIError("--repeat must be at least 1")
    shape = None
    if args.rtt_ms is not None or args.mbit is not None:
        if (args.rtt_ms or 0) < 0 or (args.mbit is not None and args.mbit <= 0):
            raise CLIError("--rtt-ms must be >= 0 and --mbit > 0")
        shape = (args.rtt_ms or 0.0, args.mbit)

    def progress(row):
        if not args.json:
            print(
                f"  {row['operation']:<26} {row['seconds']:.3f} s  {'ok' if row['correct'] else 'WRONG'}",
                file=sys.stderr,
                flush=True,
            )

    if not args.json:
        print(
            f"ppdm bench mpc{' --quick' if args.quick else ''}: starting 3 party daemons on loopback "
            "(mTLS gRPC, fresh certificates)",
            file=sys.stderr,
            flush=True,
        )
    rows = run_bench(plan, seed=args.seed, repeat=args.repeat, operations=ops, progress=progress, link_shape=shape)
    if args.json:
        print(json.dumps({"results": rows}, indent=1))
    else:
        print(format_table(rows))
    return 0 if all(r["correct"] for r in rows) else 1


def register(sub) -> None:
    p = sub.add_parser(
        "bench",
        help="benchmark the MPC primitives between real local daemons",
        description="Run every MPC primitive between real party daemons on loopback, "
        "check each result against the plain computation, and print the figures.",
    )
    p.add_argument("target", choices=["mpc"], help="what to benchmark")
    p.add_argument("--quick", action="store_true", help="small sizes (a few seconds)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--seed", type=int, default=1, help="seed of the random inputs (default 1)")
    p.add_argument("--repeat", type=int, default=1, help="runs per operation; the best is reported")
    p.add_argument("--only", metavar="OPS", help="comma-separated subset of operations")
    p.add_argument("--rtt-ms", type=float, help="emulated round-trip time per link between the daemons (ms)")
    p.add_argument("--mbit", type=float, help="emulated bandwidth per link between the daemons (Mbit/s)")
    p.set_defaults(func=_cmd)
