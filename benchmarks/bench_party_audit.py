"""Cost of the party daemons' audit (parties.guards.audit): admission, pooled decision, a real session.

    python benchmarks/bench_party_audit.py [--quick] [--json]

* ``admission`` — :meth:`AuditGuard.check` + ``started`` for random sessions (p0 and 2..P-1 others)
  over P parties: decide, commit and (for a new party set) write the state file with fsync.
  Peer, same run: the plain :class:`anonymize.audit.SumAuditor` ``submit`` on the same sequence
  (no persistence, no bookkeeping) — the ratio is the price of the state file and the ledger.
* ``pooled`` — :meth:`AuditGuard.pooled_refusal` with every other party's view of the same size
  (the decision each party makes in the pooled round).
* ``daemons`` — a 3-party secure sum of 1,000 int64 on real daemons (loopback mTLS), median over
  repeated sessions, audit on vs ``[audit] enabled = false`` (both run the pooled round: its
  messages are exchanged whatever the settings).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from anonymize.audit import SumAuditor
from parties.guards.audit import AuditGuard
from parties.guards.audit_state import AuditSettings
from parties.guards.policy import SessionRequest


def sessions(parties: int, n: int, seed: int) -> list[tuple[str, ...]]:
    rnd = random.Random(seed)
    names = [f"p{i}" for i in range(parties)]
    out = []
    for _ in range(n):
        k = rnd.randint(2, parties - 1)
        out.append(("p0", *sorted(rnd.sample(names[1:], k))))
    return out


def admission(parties: int, n: int) -> dict:
    seq = sessions(parties, n, seed=parties)
    names = [f"p{i}" for i in range(parties)]
    with tempfile.TemporaryDirectory() as d:
        g = AuditGuard("p0", AuditSettings(), Path(d) / "s.json", parties=names[1:], data={"vector": "v"})
        t0 = time.perf_counter()
        refused = 0
        for i, ps in enumerate(seq):
            r = SessionRequest("p0", "analyst", f"s{i}", "secure_sum", ps, {})
            if g.check(r) is None:
                g.started(r)
            else:
                refused += 1
        guard_s = time.perf_counter() - t0
        writes = sum(len(led.entries) for led in g.ledgers.values())
        g.close()
    plain = SumAuditor(names)
    t0 = time.perf_counter()
    plain_refused = sum(not plain.submit(list(ps)).allowed for ps in seq)
    plain_s = time.perf_counter() - t0
    assert plain_refused == refused
    return {
        "parties": parties,
        "sessions": n,
        "refused": refused,
        "state_writes": writes,
        "guard_ms_per_session": 1e3 * guard_s / n,
        "plain_ms_per_session": 1e3 * plain_s / n,
        "ratio_guard_to_plain": guard_s / plain_s,
    }


def pooled(parties: int, per_view: int, reps: int) -> dict:
    names = [f"p{i}" for i in range(parties)]
    rnd = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        g = AuditGuard("p0", AuditSettings(), Path(d) / "s.json", parties=names[1:], data={"vector": "v"})
        from parties.guards.audit_state import AuditedSession

        views = {
            p: [AuditedSession(f"{p}-{j}", "analyst", (p, *rnd.sample(names, 2)), "") for j in range(per_view)]
            for p in names[1:4]
        }
        views = {p: [s for s in v if len(set(s.parties)) == 3] for p, v in views.items()}
        r = SessionRequest("p0", "analyst", "new", "secure_sum", tuple(names[:4]), {})
        t0 = time.perf_counter()
        for _ in range(reps):
            g.pooled_refusal(r, views)
        dt = time.perf_counter() - t0
        g.close()
    return {"parties": parties, "sets_per_view": per_view, "ms_per_decision": 1e3 * dt / reps}


def daemons(runs: int) -> dict:
    from parties.analyst.local_cluster import LocalCluster

    d = Path(tempfile.mkdtemp())
    data = {}
    for i, n in enumerate(["alice", "bob", "carol"]):
        np.save(d / f"{n}.npy", np.arange(1000, dtype=np.int64) * (i + 1))
        data[n] = {"vector": str(d / f"{n}.npy")}
    out = {}
    for label, audit in (("audit_on", None), ("audit_off", {"enabled": False})):
        with LocalCluster(["alice", "bob", "carol"], data=data, audit=audit) as c:
            for _ in range(3):
                c.run_job("secure_sum", {}, timeout=30)
            ts = []
            for _ in range(runs):
                t = time.perf_counter()
                c.run_job("secure_sum", {}, timeout=30)
                ts.append(time.perf_counter() - t)
        out[f"{label}_median_ms"] = 1e3 * statistics.median(ts)
    out["ratio_on_to_off"] = out["audit_on_median_ms"] / out["audit_off_median_ms"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    logging.getLogger("ppdm.audit").setLevel(logging.ERROR)  # one warning per refusal otherwise
    n = 200 if a.quick else 1000
    res = {
        "admission": [admission(p, n) for p in (4, 10, 40)],
        "pooled": [pooled(p, v, 20 if a.quick else 100) for p, v in ((10, 10), (40, 40))],
        "daemons": daemons(10 if a.quick else 40),
    }
    if a.json:
        print(json.dumps(res, indent=1))
        return
    for r in res["admission"]:
        print(
            f"admission  P={r['parties']:>2}: {r['sessions']} sessions ({r['refused']} refused, {r['state_writes']} "
            f"state writes): {r['guard_ms_per_session']:.3f} ms/session; plain SumAuditor "
            f"{r['plain_ms_per_session']:.3f} ms (x{r['ratio_guard_to_plain']:.1f})"
        )
    for r in res["pooled"]:
        print(
            f"pooled     P={r['parties']:>2}, 3 views of {r['sets_per_view']} sets: {r['ms_per_decision']:.2f} ms/decision"
        )
    dm = res["daemons"]
    print(
        f"daemons    3-party secure sum (1,000 int64): audit on {dm['audit_on_median_ms']:.1f} ms, "
        f"off {dm['audit_off_median_ms']:.1f} ms (median; ratio {dm['ratio_on_to_off']:.2f})"
    )


if __name__ == "__main__":
    main()
