"""Joint mining between real daemons vs centralized mining with mlxtend, in the same run.

    python benchmarks/bench_joint_mining.py [--data ../shared/data/fimi] [--quick]

* 3-party horizontal (Kantarcioglu–Clifton) on retail at 0.5% vs mlxtend's
  fpgrowth on the pooled file (read + one-hot encode + mine, in process);
* 2-party vertical (Vaidya–Clifton) on mushroom at 30%.

Each joint run is checked against the FIMI reference fingerprint. The joint
time is the analyst's wall time for the job (daemons already started) — all
protocol rounds included.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from parties.cli.mine import run_local  # noqa: E402


def fp(res: dict) -> str:
    import hashlib

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "fimi"))
    ap.add_argument("--quick", action="store_true", help="mushroom only (bundled)")
    a = ap.parse_args()
    data = Path(a.data)
    jobs = [("mushroom", REPO / "anonymize" / "data" / "mushroom.dat", "0.3", "vertical", 2)]
    if not a.quick and (data / "retail.dat").exists():
        jobs.insert(0, ("retail", data / "retail.dat", "0.005", "horizontal", 3))
    ok_all = True
    print(
        f"{'dataset':<10}{'split':<12}{'parties':>8}{'minsup':>8}{'joint s':>10}{'mlxtend s':>11}{'ratio':>8}"
        f"{'itemsets':>10}  reference"
    )
    for name, path, minsup, split, n in jobs:
        t0 = time.perf_counter()
        res = run_local(str(path), n, split, minsup, None, progress=False)
        wall = time.perf_counter() - t0
        joint = res["protocol"]["wall_seconds"]
        tm, nm = mlxtend_central(path, float(minsup))
        want = reference(name, float(minsup), data)
        ok = want is None or fp(res) == want
        ok_all &= ok and nm == len(res["itemsets"])
        print(
            f"{name:<10}{split:<12}{n:>8}{minsup:>8}{joint:>10.2f}{tm:>11.2f}{joint / tm:>7.2f}x"
            f"{len(res['itemsets']):>10}  {'match' if ok else 'MISMATCH'} (with start-up {wall:.2f} s)"
        )
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
