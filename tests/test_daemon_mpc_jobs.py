"""MPC jobs between real daemons: a real secure-sum job on the parties' own files, and its failure modes."""

import numpy as np
import pytest

from parties.analyst.client import PartyError


@pytest.mark.daemons
def test_secure_sum_job_and_length_mismatch(make_cluster, tmp_path):
    vecs = {"p0": np.array([1, 2, 3, -4]), "p1": np.array([10, 20, 30, 40]), "p2": np.array([0, 0, 0, 2**40])}
    data = {}
    for name, v in vecs.items():
        np.save(tmp_path / f"{name}.npy", v)
        data[name] = {"vector": str(tmp_path / f"{name}.npy")}
    np.save(tmp_path / "short.npy", np.array([1, 2, 3]))
    data["p2"]["short"] = str(tmp_path / "short.npy")
    for name in ("p0", "p1"):
        data[name]["short"] = str(tmp_path / f"{name}.npy")
    cluster = make_cluster(3, data=data)

    out = cluster.run_job("secure_sum", {}, timeout=60)
    want = sum(vecs.values()).tolist()
    assert all(v["sum"] == want for v in out.values())

    with pytest.raises(PartyError) as e:  # p2's vector is shorter: one clear error, naming the lengths
        cluster.run_job("secure_sum", {"key": "short"}, timeout=60)
    msg = str(e.value)
    assert "disagree" in msg and "p2" in msg and "Traceback" not in msg

    out = cluster.run_job("secure_sum", {}, timeout=60)  # the daemons serve the next session
    assert out["p1"]["sum"] == want
