"""What operators expect of a daemon, end to end against real daemons on loopback:

the standard ``grpc.health.v1`` service (its own stub) and reflection; Prometheus metrics parsed with
``prometheus_client.parser`` and moving with jobs; JSON logs; log levels; SIGTERM draining; the bounded
session queue; certificate and revocation-list reload on SIGHUP; expiry warnings; ``ppdm party status``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from parties.analyst.client import PartyError, health, run_sync
from parties.runtime.grpc_channel import channel_options

pytestmark = pytest.mark.daemons

REPO = Path(__file__).resolve().parent.parent
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def health_check(c, name: str, service: str = "") -> int:
    """The grpc.health.v1 status of daemon ``name`` (the package's own stub, the analyst's certificate)."""
    p = c.party(name)
    with grpc.secure_channel(p.address, c.creds.channel_credentials(), options=channel_options(name)) as ch:
        return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status


def metrics_url(c, name: str) -> str:
    found = re.findall(r"metrics on (https?://\S+/metrics)", c.log(name))
    assert found, c.log(name)
    return found[-1]  # the daemon's latest start


def scrape(url: str, context: ssl.SSLContext | None = None) -> dict[tuple[str, tuple], float]:
    """``{(sample name, sorted labels): value}`` of one scrape, parsed by prometheus_client's own parser."""
    with urllib.request.urlopen(url, timeout=5, context=context) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


# --------------------------------------------------------------------------- health, reflection, draining
def test_standard_health_and_reflection(make_cluster):
    c = make_cluster(["alice", "bob"], server={"reflection": True})
    assert health_check(c, "alice") == SERVING
    assert health_check(c, "alice", "ppdm.v1.Party") == SERVING
    with pytest.raises(grpc.RpcError) as e:
        health_check(c, "alice", "no.such.Service")
    assert e.value.code() == grpc.StatusCode.NOT_FOUND

    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    p = c.party("alice")
    with grpc.secure_channel(p.address, c.creds.channel_credentials(), options=channel_options("alice")) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        replies = list(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    names = {s.name for s in replies[0].list_services_response.service}
    assert {"ppdm.v1.Party", "grpc.health.v1.Health"} <= names


def test_sigterm_drains_running_sessions_then_stops(make_cluster):
    c = make_cluster(["alice", "bob"], limits={"drain_timeout": 30})

    async def scenario():
        job = asyncio.create_task(c.arun_job("sleep", {"seconds": 3}, timeout=30))
        while (await health(c.party("alice"), c.creds)).running_sessions == 0:
            await asyncio.sleep(0.05)
        c.procs["alice"].send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while await asyncio.to_thread(health_check, c, "alice") != NOT_SERVING:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        r = await health(c.party("alice"), c.creds)
        assert r.draining and not r.serving and r.running_sessions == 1
        with pytest.raises(PartyError) as refused:  # a new session is refused while draining ...
            await c.arun_job("ping", timeout=10)
        return await job, refused.value  # ... the running one finishes

    out, refused = run_sync(scenario())
    assert out["alice"]["slept"] == 3 and out["bob"]["slept"] == 3
    assert "alice" in str(refused) and "shutting down" in str(refused)
    assert c.procs["alice"].wait(10) == 0
    log = c.log("alice")
    assert "SIGTERM: draining: 1 running session(s) may finish within 30 s" in log and "stopped" in log


def test_sigterm_aborts_what_outlives_the_drain_deadline_with_a_clear_error(make_cluster):
    c = make_cluster(["alice", "bob"], limits={"drain_timeout": 1})

    async def scenario():
        job = asyncio.create_task(c.arun_job("sleep", {"seconds": 60}, timeout=90))
        for name in ("bob", "alice"):  # the session runs on both (under load one may start it later)
            while (await health(c.party(name), c.creds)).running_sessions == 0:
                await asyncio.sleep(0.05)
        t0 = time.monotonic()
        c.procs["alice"].send_signal(signal.SIGTERM)
        with pytest.raises(PartyError) as e:
            await job
        return e.value, time.monotonic() - t0

    err, took = run_sync(scenario())
    assert 1 <= took < 8
    assert "party 'alice' is shutting down: its running sessions had 1 s to finish" in str(err)
    assert "shutting down" in err.errors["bob"][1]  # bob was told, and says why
    assert c.procs["alice"].wait(10) == 0 and c.alive("bob")
    assert set(c.run_job("ping", timeout=20, parties=["bob"])) == {"bob"}


# --------------------------------------------------------------------------- the session queue
def test_a_burst_beyond_max_sessions_waits_in_order_and_all_succeed(make_cluster):
    c = make_cluster(["alice", "bob", "carol"], limits={"max_sessions": 2, "max_sessions_per_analyst": 2})

    async def scenario():
        t0 = time.monotonic()
        jobs = [c.arun_job("sleep", {"seconds": 0.6}, timeout=60) for _ in range(8)]
        outs = await asyncio.gather(*jobs)
        return outs, time.monotonic() - t0

    outs, took = run_sync(scenario())
    assert all(set(o) == {"alice", "bob", "carol"} for o in outs)
    assert took >= 2 * 0.6  # 8 jobs through 2 slots (+ the few a peer ran first): more than one round
    for n in ("alice", "bob", "carol"):
        assert "waits for a slot" in c.log(n)
        assert "too many sessions" not in c.log(n)


def test_a_queued_session_times_out_cleanly_and_a_full_queue_refuses(make_cluster):
    c = make_cluster(["alice", "bob"], limits={"max_sessions": 1, "max_queued_sessions": 1})

    async def scenario():
        long = asyncio.create_task(c.arun_job("sleep", {"seconds": 6}, timeout=30))
        while (await health(c.party("alice"), c.creds)).running_sessions == 0:
            await asyncio.sleep(0.05)
        waiting = asyncio.create_task(c.arun_job("ping", timeout=2))
        while (await health(c.party("alice"), c.creds)).queued_sessions == 0:
            await asyncio.sleep(0.05)
        with pytest.raises(PartyError) as full:  # one waits already: the queue is full
            await c.arun_job("ping", timeout=10)
        with pytest.raises(PartyError) as timed_out:
            await waiting
        r = await health(c.party("alice"), c.creds)
        await long
        return full.value, timed_out.value, r

    full, timed_out, r = run_sync(scenario())
    assert "max_queued_sessions" in str(full)
    assert "no session slot at" in str(timed_out) and "max_sessions 1 busy" in str(timed_out)
    assert r.queued_sessions == 0 and r.running_sessions == 1
    # nothing left behind: the next job runs at once
    assert set(c.run_job("ping", timeout=10)) == {"alice", "bob"}
    for n in ("alice", "bob"):
        assert run_sync(health(c.party(n), c.creds)).active_sessions == 0


# --------------------------------------------------------------------------- metrics
def test_metrics_parse_and_move_with_jobs(make_cluster):
    c = make_cluster(
        ["alice", "bob", "carol"],
        metrics={"alice": {"address": "127.0.0.1:0"}},
    )
    url = metrics_url(c, "alice")
    before = scrape(url)
    assert value(before, "ppdm_serving") == 1 and value(before, "ppdm_sessions_running") == 0
    out = c.run_job("exchange", {"size": 5000, "tags": 3}, timeout=30)
    with pytest.raises(PartyError):
        c.run_job("no-such-job", timeout=10, parties=["alice"])
    after = scrape(url)
    assert value(after, "ppdm_sessions_started_total", job="exchange") == 1 + value(
        before, "ppdm_sessions_started_total", job="exchange"
    )
    assert value(after, "ppdm_sessions_finished_total", job="exchange") >= 1
    for peer in ("bob", "carol"):
        assert value(after, "ppdm_peer_messages_sent_total", peer=peer) == 3
        assert value(after, "ppdm_peer_bytes_sent_total", peer=peer) == 3 * 5000
        assert value(after, "ppdm_peer_bytes_received_total", peer=peer) == 3 * 5000
    assert out["alice"]["bytes_sent"] == 2 * 3 * 5000
    assert value(after, "ppdm_refusals_total", guard="daemon", rule="unknown_job") == 1
    assert value(after, "ppdm_protocol_seconds_count", job="exchange") == 1
    from cryptography import x509

    cert = x509.load_pem_x509_certificate(c.credentials("alice").cert_pem)
    assert value(after, "ppdm_tls_not_after_seconds", what="certificate") == cert.not_valid_after_utc.timestamp()
    assert value(after, "ppdm_tls_expiring", what="certificate") == 0


def test_metrics_behind_mtls_refuse_a_scraper_without_a_certificate(make_cluster):
    c = make_cluster(["alice", "bob"], metrics={"alice": {"address": "127.0.0.1:0", "tls": True}})
    url = metrics_url(c, "alice")
    assert url.startswith("https://")
    wd = c.workdir
    ctx = ssl.create_default_context(cafile=str(wd / "ca" / "ca.pem"))
    ctx.check_hostname = False
    with pytest.raises((ssl.SSLError, OSError)):
        scrape(url, ctx)
    ctx.load_cert_chain(str(wd / "analyst" / "analyst.pem"), str(wd / "analyst" / "analyst.key"))
    assert value(scrape(url, ctx), "ppdm_serving") == 1


def test_metrics_on_a_public_address_need_tls(tmp_path):
    from parties.config import ConfigError, parse_config

    doc = {
        "party": {"name": "alice", "listen": "127.0.0.1:1", "cert": "a", "key": "b", "ca": "c"},
        "metrics": {"address": "0.0.0.0:9464"},
    }
    with pytest.raises(ConfigError, match="not a loopback address: serve it with tls = true"):
        parse_config(doc, tmp_path)
    assert parse_config({**doc, "metrics": {"address": "0.0.0.0:9464", "tls": True}}, tmp_path).metrics.tls


# --------------------------------------------------------------------------- logs
def test_json_logs_parse_line_by_line_and_name_sessions(make_cluster):
    c = make_cluster(["alice", "bob"], log_format="json", log_level="DEBUG")
    c.run_job("exchange", {"size": 100}, timeout=30)
    with pytest.raises(PartyError):
        c.run_job("fail", {"kind": "bug"}, timeout=30)
    lines = [ln for ln in c.log("bob").splitlines() if ln and not ln.startswith("party bob listening on")]
    recs = [json.loads(ln) for ln in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "event"} <= set(r) for r in recs)
    started = [r for r in recs if "job exchange started" in r["event"]]
    assert started and started[0]["job"] == "exchange" and started[0]["session"].startswith("analyst/")
    assert any(r["level"] == "DEBUG" for r in recs)
    failed = [r for r in recs if "job fail failed" in r["event"]]
    assert failed and failed[0]["level"] == "ERROR" and failed[0]["session"].startswith("analyst/")
    assert "secret value 42" not in c.log("bob")


def _serve(args, env=None, **kw):
    return subprocess.run(
        [sys.executable, "-m", "parties.cli", "party", "serve", *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        **kw,
    )


def test_unknown_log_levels_and_formats_are_refused_in_one_line(tmp_path):
    r = _serve(["--config", str(tmp_path / "x.toml"), "--log-level", "VERBOSE"])
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert "unknown log level 'VERBOSE'" in r.stderr and "DEBUG, INFO, WARNING" in r.stderr
    r = _serve(["--config", str(tmp_path / "x.toml")], env={"PPDM_LOG_LEVEL": "chatty"})
    assert r.returncode == 2 and "PPDM_LOG_LEVEL: unknown log level 'chatty'" in r.stderr
    r = _serve(["--config", str(tmp_path / "x.toml"), "--log-format", "xml"])
    assert r.returncode == 2 and "unknown format 'xml'" in r.stderr


def test_ppdm_log_level_is_honoured_by_party_serve(make_cluster):
    c = make_cluster(["alice", "bob"])
    cfg = c.configs["alice"]
    c.kill("alice", signal.SIGTERM)
    p = subprocess.Popen(
        [sys.executable, "-m", "parties.cli", "party", "serve", "--config", str(cfg), "--log-format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "PPDM_LOG_LEVEL": "WARNING"},
    )
    try:
        assert p.stdout is not None and "listening on" in p.stdout.readline()
        c.run_job("ping", timeout=20)
        with pytest.raises(PartyError):
            c.run_job("fail", {"at": "alice"}, timeout=20)  # a warning at alice
    finally:
        p.send_signal(signal.SIGTERM)
        _out, err = p.communicate(timeout=20)
    assert p.returncode == 0
    recs = [json.loads(ln) for ln in err.splitlines() if ln.strip()]
    assert recs and all(r["level"] in ("WARNING", "ERROR", "CRITICAL") for r in recs), err  # no INFO lines


# --------------------------------------------------------------------------- certificates
def test_sighup_reloads_the_revocation_list_without_a_restart_or_disturbing_a_job(make_cluster):
    c = make_cluster(["alice", "bob", "carol"], crl=True)
    assert set(c.run_job("ping", timeout=20)) == {"alice", "bob", "carol"}

    async def scenario():
        job = asyncio.create_task(
            c.arun_job("exchange", {"size": 1000, "rounds": 6, "delay": 0.5}, timeout=60, parties=["alice", "carol"])
        )
        await asyncio.sleep(1.0)
        pids = {n: c.procs[n].pid for n in ("alice", "carol")}
        serial = c.revoke("bob")
        for n in ("alice", "carol"):
            os.kill(pids[n], signal.SIGHUP)
        return await job, serial

    out, serial = run_sync(scenario())  # the running job is not disturbed by the reload
    assert set(out) == {"alice", "carol"} and out["alice"]["sent"]["carol"] == out["carol"]["received"]["alice"]
    for n in ("alice", "carol"):
        deadline = time.monotonic() + 10
        while "SIGHUP: certificates reloaded" not in c.log(n):
            assert time.monotonic() < deadline, c.log(n)
            time.sleep(0.1)
        assert "1 revoked" in c.log(n)
    with pytest.raises(PartyError) as ei:  # bob is refused now, by daemons that never restarted
        c.run_job("ping", timeout=20)
    assert "bob" in str(ei.value)
    assert f"the certificate of 'bob' (serial {serial:x}) is revoked" in c.log("alice")
    assert set(c.run_job("ping", timeout=20, parties=["alice", "carol"])) == {"alice", "carol"}
    assert all(c.alive(n) for n in ("alice", "carol"))


def test_a_bad_reload_keeps_the_current_certificates(make_cluster):
    c = make_cluster(["alice", "bob"], crl=True)
    crl = c.workdir / "ca" / "crl.pem"
    good = crl.read_bytes()
    crl.write_bytes(b"not a CRL")
    try:
        os.kill(c.procs["alice"].pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while "certificates not reloaded, keeping the current ones" not in c.log("alice"):
            assert time.monotonic() < deadline, c.log("alice")
            time.sleep(0.1)
        assert set(c.run_job("ping", timeout=20)) == {"alice", "bob"}
        assert health_check(c, "alice") == SERVING
    finally:
        crl.write_bytes(good)


def test_a_short_lived_certificate_is_warned_about_in_log_metrics_and_status(make_cluster):
    from parties.identity.pki import sign_csr

    c = make_cluster(["alice", "bob"], metrics={"alice": {"address": "127.0.0.1:0"}})
    d = c.workdir / "alice"
    c.kill("alice", signal.SIGTERM)
    sign_csr(d / "alice.csr", c.workdir / "ca", d / "alice.pem", days=3, overwrite=True)
    c.restart("alice")
    log = c.log("alice")
    assert re.search(r"WARNING .*the party's certificate expires on \S+ \S+ UTC \(in [23]\.\d days\)", log), log
    assert value(scrape(metrics_url(c, "alice")), "ppdm_tls_expiring", what="certificate") == 1
    r = subprocess.run(
        [sys.executable, "-m", "parties.cli", "party", "status", "--config", str(c.configs["alice"]), "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    st = json.loads(r.stdout)
    assert r.returncode == 0 and st["self"]["serving"], r.stdout + r.stderr
    assert any("certificate expires on" in w for w in st["self"]["warnings"])
    not_after = dt.datetime.fromisoformat(st["self"]["certificate_not_after"])
    assert dt.timedelta(days=2) < not_after - dt.datetime.now(dt.UTC) <= dt.timedelta(days=3)
    assert set(c.run_job("ping", timeout=20)) == {"alice", "bob"}  # still serving


def test_party_status_reports_the_daemon_itself_and_its_peers(make_cluster, capsys):
    from parties.cli import main

    c = make_cluster(["alice", "bob", "carol"], crl=True)
    assert main(["party", "status", "--config", str(c.configs["alice"])]) == 0
    text = capsys.readouterr().out
    assert re.search(r"party alice at 127\.0\.0\.1:\d+: serving \(version \S+, 0 running, 0 queued sessions\)", text)
    assert "certificate until" in text and "revocation list until" in text and "2 peer(s):" in text
    c.kill("carol")
    assert main(["party", "status", "--config", str(c.configs["alice"]), "--json"]) == 1
    st = json.loads(capsys.readouterr().out)
    assert st["self"]["serving"] and st["self"]["crl_next_update"]
    assert {r["peer"]: r["ok"] for r in st["peers"]} == {"bob": True, "carol": False}
    c.kill("alice")
    assert main(["party", "status", "--config", str(c.configs["alice"]), "--json"]) == 1
    st = json.loads(capsys.readouterr().out)
    assert st["self"]["ok"] is False and "UNAVAILABLE" in st["self"]["error"]


# --------------------------------------------------------------------------- what logs and metrics never hold
def _distinct_tables(tmp_path: Path, seed: int) -> tuple[dict[str, dict], set[str]]:
    """Two parties' keyed basket tables whose customer keys and item names are unmistakable strings."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    customers = [f"cust{rng.integers(16**10):010x}" for _ in range(60)]
    items = [f"sku{rng.integers(16**8):08x}" for _ in range(8)]
    data, secrets = {}, set(customers) | set(items)
    for i, name in enumerate(("alice", "bob")):
        mine = items[4 * i : 4 * i + 4]
        rows = [(c, it) for c in customers[10 * i :] for it in mine if rng.random() < 0.5]
        path = tmp_path / f"{name}.csv"
        pd.DataFrame(rows, columns=["customer", "sku"]).to_csv(path, index=False)
        data[name] = {"crm": {"path": str(path), "transaction": "customer", "item": "sku"}}
    return data, secrets


def test_no_input_value_appears_in_any_log_line_of_full_jobs_at_debug(make_cluster, tmp_path):
    data, secrets = _distinct_tables(tmp_path, 7)
    c = make_cluster(
        ["alice", "bob"],
        data=data,
        policy={"min_parties": 2},
        log_level="DEBUG",
        log_format="json",
        metrics={"alice": {"address": "127.0.0.1:0"}},
    )
    vertical = c.run_job("mine.vertical", {"min_support": "0.2", "data": "crm"}, timeout=120)
    horizontal = c.run_job("mine.horizontal", {"min_support": "0.2", "data": "crm"}, timeout=120)
    found = {
        x for out in (vertical, horizontal) for r in out.values() for s in r.get("itemsets", []) for x in s["items"]
    }
    assert found and found <= secrets  # the jobs did read and name the items: they are what must stay out of logs
    logs = {n: c.log(n) for n in ("alice", "bob")}
    assert all(len(t.splitlines()) > 50 for t in logs.values())  # DEBUG: the logs say a lot
    pattern = re.compile("|".join(sorted(secrets)))
    for n, text in logs.items():
        leaks = pattern.findall(text)
        assert not leaks, f"{n}'s log holds input values: {sorted(set(leaks))[:5]}"
    page = urllib.request.urlopen(metrics_url(c, "alice"), timeout=5).read().decode()
    assert not pattern.search(page)


def test_forty_concurrent_jobs_against_three_daemons_with_sixteen_slots_all_succeed(make_cluster):
    c = make_cluster(["alice", "bob", "carol"], limits={"max_sessions": 16, "max_sessions_per_analyst": 16})

    async def burst():
        return await asyncio.gather(*(c.arun_job("sleep", {"seconds": 0.5}, timeout=120) for _ in range(40)))

    outs = run_sync(burst())
    assert len(outs) == 40 and all(set(o) == {"alice", "bob", "carol"} for o in outs)
    for n in ("alice", "bob", "carol"):
        assert run_sync(health(c.party(n), c.creds)).active_sessions == 0


def test_the_privacy_budget_left_is_a_metric(make_cluster, tmp_path):
    import numpy as np

    data = {}
    for i in range(3):
        np.save(tmp_path / f"p{i}.npy", np.arange(10) + i)
        data[f"p{i}"] = {"vector": str(tmp_path / f"p{i}.npy")}
    c = make_cluster(3, data=data, dp={"total_epsilon": 1}, metrics={"p0": {"address": "127.0.0.1:0"}})
    c.run_job("secure_sum", {"epsilon": "0.25", "sensitivity": 2}, timeout=120)
    samples = scrape(metrics_url(c, "p0"))
    left = {k[1]: v for k, v in samples.items() if k[0] == "ppdm_privacy_budget_remaining"}
    assert list(left.values()) == [0.75], left
    assert dict(next(iter(left)))["analyst"] == "analyst"


def test_a_missing_data_file_turns_health_not_serving_until_it_is_back(make_cluster, tmp_path):
    import numpy as np

    data = {}
    for n in ("alice", "bob"):
        np.save(tmp_path / f"{n}.npy", np.arange(5))
        data[n] = {"vector": str(tmp_path / f"{n}.npy")}
    c = make_cluster(["alice", "bob"], data=data)
    assert health_check(c, "alice") == SERVING
    moved = tmp_path / "elsewhere.npy"
    (tmp_path / "alice.npy").rename(moved)
    os.kill(c.procs["alice"].pid, signal.SIGHUP)  # or wait for the periodic check
    deadline = time.monotonic() + 10
    while health_check(c, "alice") != NOT_SERVING:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = run_sync(health(c.party("alice"), c.creds))
    assert not r.serving and r.admitting and "data 'vector'" in r.problems[0]
    assert set(c.run_job("ping", timeout=20)) == {"alice", "bob"}  # jobs on other data still run
    moved.rename(tmp_path / "alice.npy")
    os.kill(c.procs["alice"].pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while health_check(c, "alice") != SERVING:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_expiry_rules_of_certificates_and_revocation_lists():
    from parties.runtime.lifecycle import TLSDates, tls_problems, tls_warnings

    now = dt.datetime(2026, 11, 26, 12, tzinfo=dt.UTC)
    d = TLSDates(
        certificate=now + dt.timedelta(days=3), ca=now + dt.timedelta(days=3000), crl=now - dt.timedelta(hours=1)
    )
    problems, warnings = tls_problems(d, now), tls_warnings(d, now)
    assert problems == [
        "the party's revocation list expired on 2026-11-26 11:00 UTC: fetch a fresh one from the CA (ppdm ca crl) "
        "and send the daemon SIGHUP"
    ]
    assert len(warnings) == 1 and "certificate expires on 2026-11-29 12:00 UTC (in 3.0 days)" in warnings[0]
    assert tls_warnings(TLSDates(now + dt.timedelta(days=8), now + dt.timedelta(days=8), None), now) == []


def test_sighup_rotates_the_partys_own_certificate_and_key_for_new_connections(make_cluster):
    from cryptography import x509

    from parties.identity.pki import make_csr, sign_csr

    c = make_cluster(["alice", "bob"])
    d = c.workdir / "alice"

    def served_serial() -> int:
        ctx = ssl.create_default_context(cafile=str(c.workdir / "ca" / "ca.pem"))
        ctx.check_hostname = False
        ctx.set_alpn_protocols(["h2"])
        ctx.load_cert_chain(str(c.workdir / "analyst" / "analyst.pem"), str(c.workdir / "analyst" / "analyst.key"))
        host, port = c.party("alice").address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as raw, ctx.wrap_socket(raw) as tls:
            return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number

    old = served_serial()
    make_csr("alice", d, overwrite=True)  # a new key ...
    sign_csr(d / "alice.csr", c.workdir / "ca", d / "alice.pem", overwrite=True)  # ... and its certificate
    new = x509.load_pem_x509_certificate((d / "alice.pem").read_bytes()).serial_number
    assert new != old
    os.kill(c.procs["alice"].pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "SIGHUP: certificates reloaded" not in c.log("alice"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert served_serial() == new  # new handshakes get the new certificate, without a restart
    out = c.run_job("exchange", {"size": 2000}, timeout=30)  # alice's calls to bob present it too
    assert out["alice"]["sent"]["bob"] == out["bob"]["received"]["alice"] and c.alive("alice")
