"""Certificates without sharing the CA key (issue 8, item 5): CSRs, revocation, pinning, key-file hygiene.

On main ``party init`` made every party's key wherever the CA key was, so each
party held the CA key (and could mint an analyst) or one operator made
everyone's keys; there was no revocation and no pinning, and keys were written
through symlinks. The contract commands are run here as a user runs them.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from parties.analyst.client import PartyError, run_job, run_sync
from parties.cli import main as ppdm
from parties.config import load_config
from parties.identity.pki import init_ca, issue_crl, make_csr, revoke, sign_csr
from parties.identity.tls import TLSError, load_credentials, load_crl, write_private

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(args, cwd: Path, capsys) -> tuple[int, str, str]:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        rc = ppdm([str(a) for a in args])
    except SystemExit as e:  # argparse
        rc = int(e.code or 0)
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return rc, out.out, out.err


# --------------------------------------------------------------------------- the contract, end to end
@pytest.mark.daemons
def test_csr_flow_end_to_end_with_the_ca_key_never_at_a_party(tmp_path, capsys):
    op, sites = tmp_path / "operator", {n: tmp_path / n for n in ("alice", "bob", "analyst")}
    for d in (op, *sites.values()):
        d.mkdir()
    assert cli(["ca", "init", "--out", "ca"], op, capsys)[0] == 0
    assert stat.S_IMODE((op / "ca").stat().st_mode) == 0o700
    assert stat.S_IMODE((op / "ca" / "ca.key").stat().st_mode) == 0o600
    ports = {"alice": free_port(), "bob": free_port()}
    for n in ("alice", "bob"):
        rc, out, err = cli(["party", "init", "--name", n, "--csr", "--host", f"{n}.example.org"], sites[n], capsys)
        assert rc == 0, err
        assert sorted(p.name for p in (sites[n] / n).iterdir()) == [f"{n}.csr", f"{n}.key"]
        (op / f"{n}.csr").write_bytes((sites[n] / n / f"{n}.csr").read_bytes())  # the request travels
        rc, out, err = cli(["ca", "sign", f"{n}.csr", "--ca-dir", "ca", "-o", f"{n}.pem", "--days", "30"], op, capsys)
        assert rc == 0 and "fingerprint: sha256:" in out, err
        for f in (f"{n}.pem", "ca/ca.pem", "ca/crl.pem"):  # the certificate, CA certificate and CRL travel back
            (sites[n] / Path(f).name).write_bytes((op / f).read_bytes())
    (sites["bob"] / "data.dat").write_text("1 2\n")
    for n, other in (("alice", "bob"), ("bob", "alice")):
        rc, out, err = cli(
            [
                "party", "init", "--cert", f"{n}.pem", "--key", f"{n}/{n}.key", "--ca-cert", "ca.pem",
                "--crl", "crl.pem", "--listen", f"127.0.0.1:{ports[n]}", "--peer", f"{other}=127.0.0.1:{ports[other]}",
                "--pin", f"{other}={op / (other + '.pem')}", "--data", "transactions=data.dat",
            ],
            sites[n],
            capsys,
        )  # fmt: skip
        assert rc == 0, err
    cfg = load_config(sites["bob"] / "bob" / "party.toml")
    assert cfg.name == "bob" and cfg.crl is not None and cfg.peers["alice"].fingerprint
    assert cfg.data["transactions"] == str(sites["bob"] / "data.dat")  # resolved where the command ran
    assert cli(["party", "analyst", "--csr"], sites["analyst"], capsys)[0] == 0
    (op / "analyst.csr").write_bytes((sites["analyst"] / "analyst" / "analyst.csr").read_bytes())
    assert (
        cli(["ca", "sign", "analyst.csr", "--ca-dir", "ca", "-o", "analyst.pem", "--client-only"], op, capsys)[0] == 0
    )
    (sites["analyst"] / "analyst.pem").write_bytes((op / "analyst.pem").read_bytes())
    (sites["analyst"] / "ca.pem").write_bytes((op / "ca" / "ca.pem").read_bytes())
    rc, _, err = cli(
        ["party", "analyst", "--cert", "analyst.pem", "--key", "analyst/analyst.key", "--ca-cert", "ca.pem",
         "--party", f"alice=127.0.0.1:{ports['alice']}", "--party", f"bob=127.0.0.1:{ports['bob']}"],
        sites["analyst"],
        capsys,
    )  # fmt: skip
    assert rc == 0, err
    # the CA key exists once, in the operator's directory: no party or analyst holds it
    ca_key = (op / "ca" / "ca.key").read_bytes()
    for site in sites.values():
        for f in site.rglob("*"):
            assert f.name != "ca.key" and (not f.is_file() or f.read_bytes() != ca_key), f
    # an analyst certificate cannot serve as a party's
    rc, _, err = cli(
        ["party", "init", "--cert", "analyst.pem", "--key", "analyst/analyst.key", "--ca-cert", "ca.pem", "--out", "x"],
        sites["analyst"],
        capsys,
    )
    assert rc == 2 and "client-only" in err and err.count("\n") == 1

    # the check below runs the diagnostic job 'exchange', which an operator turns on explicitly
    assert "[policy]" not in (sites["alice"] / "alice" / "party.toml").read_text()
    for n in ("alice", "bob"):
        with open(sites[n] / n / "party.toml", "a") as f:
            f.write("\n[policy]\ndiagnostics = true\n")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "parties.cli", "party", "serve", "--config", f"{n}/party.toml"],
            cwd=sites[n],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        for n in ("alice", "bob")
    ]
    try:
        for p in procs:
            lines = []
            while not lines or "listening on" not in lines[-1]:
                lines.append(p.stdout.readline().decode())
                assert lines[-1], "".join(lines)  # the daemon exited
        from parties.analyst import AnalystConfig

        cfg = AnalystConfig.load(sites["analyst"] / "analyst" / "analyst.toml")
        peers, creds = list(cfg.peers), cfg.creds
        out = run_sync(run_job(peers, "exchange", {"size": 4096, "tags": 2}, creds=creds, timeout=30))
        assert out["alice"]["sent"]["bob"] == out["bob"]["received"]["alice"]
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)


# --------------------------------------------------------------------------- revocation and pinning, real daemons
@pytest.mark.daemons
def test_a_revoked_certificate_is_refused(make_cluster):
    c = make_cluster(["alice", "bob", "carol"], crl=True)
    assert set(c.run_job("ping", timeout=20)) == {"alice", "bob", "carol"}
    serial = c.revoke("bob")
    for n in ("alice", "carol"):  # daemons read the list at start
        c.kill(n, signal.SIGTERM)
        c.restart(n)
    with pytest.raises(PartyError) as ei:
        c.run_job("ping", timeout=20)
    assert "bob" in str(ei.value)
    log = c.log("alice")
    assert f"the certificate of 'bob' (serial {serial:x}) is revoked (crl.pem)" in log
    assert set(c.run_job("ping", timeout=20, parties=["alice", "carol"])) == {"alice", "carol"}
    # bob's own daemon refuses to start with its revoked certificate: one line, exit 2
    c.kill("bob", signal.SIGTERM)
    r = subprocess.run(
        [sys.executable, "-m", "parties.runtime.daemon", "--config", str(c.configs["bob"])],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert r.returncode == 2 and "is revoked by" in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.daemons
def test_a_pinned_fingerprint_mismatch_is_refused(make_cluster):
    c = make_cluster(["alice", "bob", "carol"], pins={"alice": {"bob": "00" * 32, "carol": None}})
    assert set(c.run_job("ping", timeout=20, parties=["alice", "carol"])) == {"alice", "carol"}  # right pin
    with pytest.raises(PartyError):
        c.run_job("ping", timeout=20, parties=["alice", "bob"])
    assert "the certificate of 'bob' does not match its pinned fingerprint" in c.log("alice")


# --------------------------------------------------------------------------- units: CA operations
def test_sign_checks_the_request(tmp_path):
    ca = init_ca(tmp_path / "ca")
    assert load_crl(ca["crl"], x509.load_pem_x509_certificate(ca["cert"].read_bytes())).serials == frozenset()
    _, csr = make_csr("bob", tmp_path / "bob", hosts=["bob.example.org", "10.0.0.7"])
    cert, name, hosts = sign_csr(csr, tmp_path / "ca", tmp_path / "bob.pem")
    c = x509.load_pem_x509_certificate(cert.read_bytes())
    san = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert name == "bob" and "bob.example.org" in san.get_values_for_type(x509.DNSName)
    # a request for another party's bare name is refused (it would answer in alice's place)
    key = ec.generate_private_key(ec.SECP256R1())
    evil = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bob")]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("alice")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "evil.csr").write_bytes(evil.public_bytes(serialization.Encoding.PEM))
    with pytest.raises(TLSError, match="bare names are party names"):
        sign_csr(tmp_path / "evil.csr", tmp_path / "ca", tmp_path / "evil.pem")
    bad_cn = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Bob Smith")]))
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cn.csr").write_bytes(bad_cn.public_bytes(serialization.Encoding.PEM))
    with pytest.raises(TLSError, match="invalid name"):
        sign_csr(tmp_path / "cn.csr", tmp_path / "ca", tmp_path / "cn.pem")
    assert not (tmp_path / "evil.pem").exists() and not (tmp_path / "cn.pem").exists()
    with pytest.raises(TLSError, match="exists"):
        sign_csr(csr, tmp_path / "ca", tmp_path / "bob.pem")  # never overwritten silently


def test_crl_must_come_from_the_ca_and_be_current(tmp_path):
    ca = init_ca(tmp_path / "ca")
    other = init_ca(tmp_path / "other")
    ca_cert = x509.load_pem_x509_certificate(ca["cert"].read_bytes())
    with pytest.raises(TLSError, match="not signed by the CA"):
        load_crl(other["crl"], ca_cert)
    _, csr = make_csr("bob", tmp_path / "bob")
    cert, _, _ = sign_csr(csr, tmp_path / "ca", tmp_path / "bob" / "bob.pem")
    serial, crl = revoke(tmp_path / "ca", cert=cert, reason="key_compromise")
    assert serial in load_crl(crl, ca_cert).serials
    with pytest.raises(TLSError, match="already revoked"):
        revoke(tmp_path / "ca", serial=serial)
    with pytest.raises(TLSError, match="is revoked"):
        load_credentials(cert, tmp_path / "bob" / "bob.key", ca["cert"], crl=crl)
    # an expired list is refused (the daemon would not start on it)
    ca_key = serialization.load_pem_private_key(ca["key"].read_bytes(), None)
    now = dt.datetime.now(dt.UTC)
    old = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now - dt.timedelta(days=3))
        .next_update(now - dt.timedelta(days=1))
        .sign(ca_key, hashes.SHA256())
    )
    (tmp_path / "old.pem").write_bytes(old.public_bytes(serialization.Encoding.PEM))
    with pytest.raises(TLSError, match="expired on"):
        load_crl(tmp_path / "old.pem", ca_cert)
    refreshed = issue_crl(tmp_path / "ca", days=7, out=tmp_path / "fresh.pem")
    assert load_crl(refreshed, ca_cert).serials == {serial}


# --------------------------------------------------------------------------- units: key files
def test_private_keys_are_created_never_followed_or_overwritten(tmp_path):
    d = tmp_path / "new" / "keys"
    p = write_private(d / "k.key", b"secret")
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(d.stat().st_mode) == 0o700 and stat.S_IMODE(d.parent.stat().st_mode) == 0o700
    with pytest.raises(TLSError, match="exists"):
        write_private(p, b"other")
    assert p.read_bytes() == b"secret"
    # a symlink planted at the key's path is never followed
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    link = d / "planted.key"
    link.symlink_to(victim)
    with pytest.raises(TLSError, match="exists"):
        write_private(link, b"key")
    write_private(link, b"key", overwrite=True)  # replaces the link itself
    assert victim.read_bytes() == b"precious" and not link.is_symlink() and link.read_bytes() == b"key"
    # a directory others may write to is refused
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(TLSError, match="writable by other users"):
        write_private(shared / "k.key", b"secret")
    assert not any(shared.iterdir())


def test_party_init_refuses_to_clobber_or_mix_modes(tmp_path, capsys):
    assert cli(["party", "init", "--name", "bob", "--csr"], tmp_path, capsys)[0] == 0
    rc, _, err = cli(["party", "init", "--name", "bob", "--csr"], tmp_path, capsys)
    assert rc == 2 and "exists" in err and err.startswith("ppdm: error: ")
    rc, _, err = cli(["party", "init", "--name", "bob", "--csr", "--peer", "a=127.0.0.1:1"], tmp_path, capsys)
    assert rc == 2 and "second step" in err
    assert not (tmp_path / "ca").exists()  # --csr never touches a CA


def test_ca_cli_one_line_errors(tmp_path, capsys):
    assert cli(["ca", "init", "--out", "ca"], tmp_path, capsys)[0] == 0
    rc, _, err = cli(["ca", "init", "--out", "ca"], tmp_path, capsys)
    assert rc == 2 and "already holds a CA" in err and err.count("\n") == 1
    rc, _, err = cli(["ca", "sign", "nope.csr", "--ca-dir", "ca", "-o", "x.pem"], tmp_path, capsys)
    assert rc == 2 and "not found" in err and err.count("\n") == 1
    rc, _, err = cli(["ca", "revoke", "--ca-dir", "ca", "--serial", "zz"], tmp_path, capsys)
    assert rc == 2 and "hexadecimal" in err
    rc, out, _ = cli(["ca", "fingerprint", "ca/ca.pem"], tmp_path, capsys)
    assert rc == 0 and out.startswith("sha256:") and len(out.strip()) == 7 + 32 * 3 - 1


def test_a_key_other_users_can_read_is_refused(tmp_path):
    """Issue 16 (low): a world-readable key was accepted without a word."""
    from parties.identity.tls import create_ca, issue_cert

    ca_cert, ca_key = create_ca(tmp_path / "ca")
    cert, key = issue_cert(ca_cert, ca_key, "alice", tmp_path / "alice")
    load_credentials(cert, key, ca_cert)  # 0600 as written
    os.chmod(key, 0o644)
    with pytest.raises(TLSError, match="accessible by other users .*chmod 600"):
        load_credentials(cert, key, ca_cert)
