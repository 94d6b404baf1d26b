"""Joint mining between real daemons (loopback, or an emulated WAN) vs centralized mining, in the same run.

    python benchmarks/bench_joint_mining.py [--data ../shared/data/fimi] [--jobs NAME,...] [--quick]
        [--repeat N] [--rtt-ms 50 --mbit 100] [--no-mlxtend] [--json]

Jobs (``--jobs``, default: the first five; ``--quick``: mushroom only):

* ``h-retail-0.5-3`` — 3-party horizontal (Kantarcioglu–Clifton) retail 0.5%;
* ``v-mushroom-30-3`` — 3-party vertical (Vaidya–Clifton) mushroom 30%;
* ``v-retail-0.5-2``, ``v-retail-0.5-3`` — vertical retail 0.5%, 2 and 3 parties;
* ``v-retail-0.1-2`` — vertical retail 0.1%, 2 parties;
* ``v-quest1m-2-3`` — vertical, 3 parties, 1,000,000 synthetic T10I4 transactions
  (``synthetic_transactions.py``, Agrawal–Srikant 1994 model, seed 1) at 2%.

Every job runs ``ppdm mine --local`` (``parties.analyst.mine_local``: fresh daemons,
mTLS gRPC on loopback), ``--repeat`` times; the table gives the best wall time and the
spread (max − min), the receives that waited on the network (``network_waits``, the
largest over the parties: protocol rounds that actually waited), bytes sent in all and
by the busiest party, and the largest peak RSS of a daemon (its VmHWM). Each result is
checked against the FIMI reference fingerprint (synthetic data: ppdm's centralized
miner on the pooled file). The peer is mlxtend's ``fpgrowth`` on the pooled file (read +
one-hot encode + mine, in process; skipped for the synthetic job). ``--rtt-ms/--mbit``
shape every link between two daemons (``parties/runtime/shaping.py``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from parties.analyst import HorizontalMining, VerticalMining, mine_local  # noqa: E402

# name → (dataset, min support, split, parties)
JOBS = {
    "h-retail-0.5-3": ("retail", "0.005", "horizontal", 3),
    "v-mushroom-30-3": ("mushroom", "0.3", "vertical", 3),
    "v-retail-0.5-2": ("retail", "0.005", "vertical", 2),
    "v-retail-0.5-3": ("retail", "0.005", "vertical", 3),
    "v-retail-0.1-2": ("retail", "0.001", "vertical", 2),
    "v-quest1m-2-3": ("quest1m", "0.02", "vertical", 3),
}
DEFAULT = ["h-retail-0.5-3", "v-mushroom-30-3", "v-retail-0.5-2", "v-retail-0.5-3", "v-retail-0.1-2"]


def fp(res: dict) -> str:
    lines = sorted(" ".join(map(str, i["items"])) + f":{i['count']}" for i in res["itemsets"])
    return hashlib.md5("\n".join(lines).encode()).hexdigest()


def mlxtend_central(path: Path, minsup: float) -> tuple[float, int]:
    import pandas as pd
    from mlxtend.frequent_patterns import fpgrowth
    from mlxtend.preprocessing import TransactionEncoder

    t0 = time.perf_counter()
    txs = [line.split() for line in path.read_text().splitlines() if line.strip()]
    te = TransactionEncoder()
    df = pd.DataFrame(te.fit(txs).transform(txs), columns=te.columns_)
    res = fpgrowth(df, min_support=minsup)
    return time.perf_counter() - t0, len(res)


def reference(dataset: str, minsup: float, data: Path) -> str | None:
    ref = data / "reference_counts.json"
    if not ref.exists():
        return None
    for lv in json.loads(ref.read_text())["levels"]:
        if lv["dataset"] == dataset and abs(lv["minsup"] - minsup) < 1e-12:
            return lv["fingerprint_md5"]
    return None


def central_fingerprint(path: Path, minsup: str) -> str:
    """ppdm's centralized miner on the pooled file, fingerprinted like :func:`fp`."""
    from anonymize.itemsets import frequent_itemsets
    from parties.joint.partition import load_transactions

    fi = frequent_itemsets(load_transactions(path), minsup)
    return fp({"itemsets": [{"items": list(i), "count": int(c)} for i, c in fi]})


def dataset_path(name: str, data: Path, tmp: Path) -> Path | None:
    if name == "mushroom":
        return REPO / "anonymize" / "data" / "mushroom.dat"
    if name == "quest1m":
        out = tmp / "quest1m.npz"
        if not out.exists():
            from synthetic_transactions import quest_transactions

            from parties.joint.partition import save_npz

            save_npz(quest_transactions(1_000_000, seed=1), out)
        return out
    p = data / f"{name}.dat"
    return p if p.exists() else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "fimi"))
    ap.add_argument("--jobs", default=",".join(DEFAULT), help=f"comma-separated, from {', '.join(JOBS)}")
    ap.add_argument("--quick", action="store_true", help="mushroom only (bundled)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per job (best and spread reported)")
    ap.add_argument("--rtt-ms", type=float, default=None, help="emulated round-trip time per link (ms)")
    ap.add_argument("--mbit", type=float, default=None, help="emulated bandwidth per link (Mbit/s)")
    ap.add_argument("--no-mlxtend", action="store_true", help="skip the centralized peer")
    ap.add_argument("--json", action="store_true", help="print every run as JSON")
    a = ap.parse_args()
    data = Path(a.data)
    names = ["v-mushroom-30-3"] if a.quick else [j.strip() for j in a.jobs.split(",") if j.strip()]
    unknown = [j for j in names if j not in JOBS]
    if unknown or a.repeat < 1:
        ap.error(f"unknown job(s) {unknown}" if unknown else "--repeat must be ≥ 1")
    shape = None
    if a.rtt_ms is not None or a.mbit is not None:
        shape = (a.rtt_ms or 0.0, a.mbit)
    link = (
        "loopback"
        if shape is None
        else f"WAN {shape[0]:g} ms RTT, " + (f"{shape[1]:g} Mbit/s" if shape[1] else "no bandwidth cap")
    )
    print(f"# {link}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(
        f"{'job':<18}{'wall s':>8}{'spread':>8}{'waits':>7}{'MB sent':>9}{'busiest':>9}{'RSS MB':>8}"
        f"{'itemsets':>9}{'mlxtend s':>10}  result"
    )
    ok_all = True
    runs = []
    with tempfile.TemporaryDirectory(prefix="ppdm-bench-") as tmpd:
        for name in names:
            dataset, minsup, split, n = JOBS[name]
            path = dataset_path(dataset, data, Path(tmpd))
            if path is None:
                print(f"{name:<18}skipped: {dataset}.dat not in {data}")
                continue
            walls, res = [], None
            for _ in range(a.repeat):
                kind = HorizontalMining if split == "horizontal" else VerticalMining
                res = mine_local(str(path), kind(min_support=minsup), n, progress=False, link_shape=shape)
                walls.append(res["protocol"]["wall_seconds"])
                runs.append(
                    {"job": name, "link": link, **{k: v for k, v in res["protocol"].items() if k != "revealed"}}
                )
            assert res is not None
            proto = res["protocol"]
            want = (
                central_fingerprint(path, minsup) if dataset == "quest1m" else reference(dataset, float(minsup), data)
            )
            ok = want is None or fp(res) == want
            peer = ""
            if not a.no_mlxtend and dataset != "quest1m":
                tm, nm = mlxtend_central(path, float(minsup))
                ok &= nm == len(res["itemsets"])
                peer = f"{tm:.2f}"
            ok_all &= ok
            sent = proto["bytes_sent"]
            rss = max((v or 0) for v in proto.get("peak_rss_bytes", {}).values() or [0])
            print(
                f"{name:<18}{min(walls):>8.2f}{max(walls) - min(walls):>8.2f}{max(proto['network_waits'].values()):>7}"
                f"{proto['bytes_total'] / 1e6:>9.1f}{max(sent.values()) / 1e6:>9.1f}{rss / 2**20:>8.0f}"
                f"{len(res['itemsets']):>9}{peer:>10}  {'match' if ok else 'MISMATCH'}"
                + ("" if want else " (no reference)"),
                flush=True,
            )
    print(f"# load average at the end {os.getloadavg()[0]:.2f}")
    if a.json:
        print(json.dumps(runs, indent=1))
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
