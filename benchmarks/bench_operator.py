"""Operators' surfaces under load (issue 19): health and metrics latency while sessions run; a burst.

    python benchmarks/bench_operator.py [--sessions 16] [--probes 200] [--burst 40] [--json]

Three daemons on loopback (``max_sessions = 16``, metrics on at the first). While ``--sessions`` joint
``exchange`` jobs run (each party sends every peer ``--size`` bytes a round for ``--rounds`` rounds,
``--delay`` seconds apart: by default 8 MiB, 6 rounds, no pause, which saturates this 2-core machine's
cores with the three daemons' traffic), it times ``--probes`` calls of the standard
``grpc.health.v1`` ``Check`` (one mTLS channel, as a load balancer keeps) and ``--probes`` scrapes of
``/metrics`` (a fresh HTTP connection each, as Prometheus makes), and reports the median, 95th
percentile and maximum of each. Then it starts ``--burst`` jobs at once against the three daemons and
reports how many succeeded and how long the burst took (the queue holds what ``max_sessions`` cannot
run). Targets: health ≤ 5 ms, a scrape ≤ 20 ms (both at the 95th percentile); every burst job succeeds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from parties.analyst.client import health, run_sync  # noqa: E402
from parties.analyst.local_cluster import LocalCluster  # noqa: E402
from parties.runtime.grpc_channel import channel_options  # noqa: E402


def _stats(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3),
        "max_ms": round(ms[-1], 3),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--burst", type=int, default=40)
    ap.add_argument("--size", type=int, default=8 << 20, help="bytes per message of the load's exchange jobs")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of each load job (every party sends every peer)")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds each load job waits between rounds")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    limits = {"max_sessions": 16, "max_sessions_per_analyst": 16, "max_queued_sessions": 64}
    with LocalCluster(["alice", "bob", "carol"], limits=limits, metrics={"alice": {"address": "127.0.0.1:0"}}) as c:
        url = re.findall(r"metrics on (http://\S+/metrics)", c.log("alice"))[-1]
        alice = c.party("alice")
        ch = grpc.secure_channel(alice.address, c.creds.channel_credentials(), options=channel_options("alice"))
        stub = health_pb2_grpc.HealthStub(ch)
        stub.Check(health_pb2.HealthCheckRequest(), timeout=5)  # connect once, as a prober keeps its channel

        load_done = threading.Event()
        load_result: dict = {}

        def load() -> None:
            async def many():
                jobs = [
                    c.arun_job(
                        "exchange",
                        {"size": args.size, "rounds": args.rounds, "delay": args.delay, "digest": False},
                        timeout=600,
                    )
                    for _ in range(args.sessions)
                ]
                return await asyncio.gather(*jobs, return_exceptions=True)

            t0 = time.perf_counter()
            outs = run_sync(many())
            load_result.update(
                seconds=round(time.perf_counter() - t0, 2), failed=sum(isinstance(o, Exception) for o in outs)
            )
            load_done.set()

        threading.Thread(target=load, daemon=True).start()
        while run_sync(health(alice, c.creds)).running_sessions < args.sessions:
            time.sleep(0.02)
        health_ms, scrape_ms, running_seen = [], [], []
        for _ in range(args.probes):
            t0 = time.perf_counter()
            r = stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
            health_ms.append((time.perf_counter() - t0) * 1e3)
            assert r.status == health_pb2.HealthCheckResponse.SERVING
            t0 = time.perf_counter()
            page = urllib.request.urlopen(url, timeout=5).read().decode()
            scrape_ms.append((time.perf_counter() - t0) * 1e3)
            m = re.search(r"^ppdm_sessions_running (\S+)$", page, re.M)
            running_seen.append(float(m.group(1)) if m else 0.0)
            if load_done.is_set():
                break
        ch.close()
        load_done.wait()

        async def burst():
            jobs = [c.arun_job("sleep", {"seconds": 0.5}, timeout=300) for _ in range(args.burst)]
            return await asyncio.gather(*jobs, return_exceptions=True)

        t0 = time.perf_counter()
        outs = run_sync(burst())
        burst_s = time.perf_counter() - t0
        errors = [str(o) for o in outs if isinstance(o, Exception)]
        queued_logs = sum(c.log(n).count("waits for a slot") for n in ("alice", "bob", "carol"))

    out = {
        "load_job": {"size": args.size, "rounds": args.rounds, "delay": args.delay, "sessions": args.sessions},
        "sessions_running_during_probes": {"min": min(running_seen), "max": max(running_seen)},
        "health": _stats(health_ms),
        "scrape": _stats(scrape_ms),
        "load": load_result,
        "burst": {
            "jobs": args.burst,
            "succeeded": args.burst - len(errors),
            "seconds": round(burst_s, 2),
            "waits_logged": queued_logs,
            "errors": errors[:3],
        },
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        h, s = out["health"], out["scrape"]
        print(f"while {out['sessions_running_during_probes']} sessions ran ({len(health_ms)} probes):")
        print(f"  grpc.health.v1 Check: median {h['median_ms']} ms, p95 {h['p95_ms']} ms, max {h['max_ms']} ms")
        print(f"  /metrics scrape:      median {s['median_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms")
        b = out["burst"]
        print(f"burst of {b['jobs']} jobs, max_sessions 16: {b['succeeded']} succeeded in {b['seconds']} s")
    return 0 if not errors and not load_result.get("failed") else 1


if __name__ == "__main__":
    sys.exit(main())
