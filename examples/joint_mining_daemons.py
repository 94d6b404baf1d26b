"""Three organizations mine frequent itemsets jointly: real daemons, mTLS gRPC, loopback.

    python examples/joint_mining_daemons.py

Each daemon holds a horizontal share of the bundled mushroom data; the result
equals mining the pooled data, which is checked at the end.
"""

import tempfile
from pathlib import Path

from anonymize.itemsets import frequent_itemsets, read_fimi
from parties.analyst.local_cluster import LocalCluster
from parties.joint.partition import split_horizontal, write_fimi

data = Path(__file__).resolve().parents[1] / "anonymize" / "data" / "mushroom.dat"
db = read_fimi(data)
with tempfile.TemporaryDirectory() as d:
    files = {}
    for i, share in enumerate(split_horizontal(db, 3)):  # what each organization holds
        files[f"org{i}"] = {"transactions": str(Path(d) / f"org{i}.dat")}
        write_fimi(share, files[f"org{i}"]["transactions"])
    with LocalCluster(["org0", "org1", "org2"], data=files) as cluster:  # CA, certificates, 3 processes
        out = cluster.run_job(
            "mine.horizontal", {"min_support": "0.4", "min_confidence": "0.9", "n_items": 120}, timeout=300
        )
res = out["org0"]
print(f"{len(res['itemsets'])} frequent itemsets, {len(res['rules'])} rules")
for line in res["protocol"]["revealed"]:
    print(" revealed:", line)
central = {tuple(i): c for i, c in frequent_itemsets(db, "0.4")}
assert {tuple(i["items"]): i["count"] for i in res["itemsets"]} == central
print("identical to centralized mining")
