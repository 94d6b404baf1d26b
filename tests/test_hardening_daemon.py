"""Hardening II (issue 16) on real daemons: what a loaded daemon, an idle peer or a diagnostic job must not break."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from parties.analyst.client import run_sync


@pytest.mark.daemons
def test_sixteen_concurrent_sessions_all_succeed(make_cluster, tmp_path):
    """A burst of 16 secure sums on 3 daemons: every session connects and finishes (a 200 ms minimum
    reconnect backoff also acted as the connect timeout, which loaded TLS handshakes exceeded)."""
    vecs = {f"p{i}": np.arange(1_000_000, dtype=np.int64) * (i + 1) for i in range(3)}
    data = {}
    for name, v in vecs.items():
        np.save(tmp_path / f"{name}.npy", v)
        data[name] = {"vector": str(tmp_path / f"{name}.npy")}
    cluster = make_cluster(3, data=data)
    want = sum(vecs.values()).tolist()

    async def burst():
        return await asyncio.gather(
            *(cluster.arun_job("secure_sum", {}, timeout=120) for _ in range(16)), return_exceptions=True
        )

    results = run_sync(burst())
    failed = [r for r in results if isinstance(r, BaseException)]
    assert not failed, f"{len(failed)} of 16 sessions failed: {failed[0]}"
    assert all(out[p]["sum"] == want for out in results for p in out)


def test_channel_options_leave_the_connect_timeout_alone():
    """grpc.min_reconnect_backoff_ms doubles as gRPC core's minimum connect timeout: never set it low."""
    from parties.runtime.grpc_channel import channel_options

    opts = dict(channel_options("p0"))
    assert "grpc.min_reconnect_backoff_ms" not in opts
    assert opts["grpc.initial_reconnect_backoff_ms"] <= 1000  # a restarted peer is still found again quickly
