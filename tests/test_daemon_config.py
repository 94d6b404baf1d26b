"""Unit tests: certificates (tls.py), party.toml validation (config.py), the job registry (jobs.py), CLI init."""

import asyncio
import ipaddress
import os
import stat
import sys
import tomllib

import pytest
from cryptography import x509

from parties import jobs
from parties.config import ConfigError, Limits, load_config, parse_config, write_config
from parties.identity.tls import TLSError, create_ca, ensure_ca, issue_cert, load_credentials, validate_name


@pytest.fixture
def ca(tmp_path):
    return create_ca(tmp_path / "ca")


def test_ca_and_party_certificates(ca, tmp_path):
    ca_cert, ca_key = ca
    cert, key = issue_cert(ca_cert, ca_key, "alice", tmp_path / "alice", hosts=["10.0.0.5", "alice.example.org"])
    for k in (ca_key, key):
        assert stat.S_IMODE(os.stat(k).st_mode) == 0o600
    c = x509.load_pem_x509_certificate(cert.read_bytes())
    assert c.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value == "alice"
    san = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(san.get_values_for_type(x509.DNSName)) == {"alice", "localhost", "alice.example.org"}
    assert set(san.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.0.0.5"),
    }
    creds = load_credentials(cert, key, ca_cert)
    assert creds.name == "alice"
    a_cert, _ = issue_cert(ca_cert, ca_key, "analyst", tmp_path / "an", server=False)
    eku = (
        x509.load_pem_x509_certificate(a_cert.read_bytes())
        .extensions.get_extension_for_class(x509.ExtendedKeyUsage)
        .value
    )
    assert list(eku) == [x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]


def test_ensure_ca_reuses_and_checks(tmp_path):
    c1, k1, made = ensure_ca(tmp_path / "ca")
    assert made
    c2, k2, made2 = ensure_ca(tmp_path / "ca")
    assert not made2 and c1.read_bytes() == c2.read_bytes()
    k1.unlink()
    with pytest.raises(TLSError, match="CA key file not found"):
        ensure_ca(tmp_path / "ca")


def test_credential_errors_name_the_file(ca, tmp_path, monkeypatch):
    ca_cert, ca_key = ca
    cert, key = issue_cert(ca_cert, ca_key, "alice", tmp_path / "a")
    bcert, bkey = issue_cert(ca_cert, ca_key, "bob", tmp_path / "b")
    other_ca, _ = create_ca(tmp_path / "other")
    with pytest.raises(TLSError, match="certificate file not found: .*missing.pem"):
        load_credentials(tmp_path / "missing.pem", key, ca_cert)
    with pytest.raises(TLSError, match="does not match"):
        load_credentials(cert, bkey, ca_cert)
    with pytest.raises(TLSError, match="not signed by CA"):
        load_credentials(cert, key, other_ca)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("hello")
    with pytest.raises(TLSError, match="not a PEM certificate"):
        load_credentials(garbage, key, ca_cert)
    with pytest.raises(TLSError, match="path is a directory"):
        load_credentials(cert, tmp_path, ca_cert)
    real = type(key).read_bytes

    def deny(self):  # chmod 000 does not stop root, so simulate it
        if self == key:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(type(key), "read_bytes", deny)
    with pytest.raises(TLSError, match=f"private key file is not readable \\(permission denied\\): {key}"):
        load_credentials(cert, key, ca_cert)


@pytest.mark.parametrize("bad", ["Alice", "-a", "a_b", "", "a" * 64, "a.b"])
def test_invalid_names(bad):
    with pytest.raises(TLSError, match="invalid party name"):
        validate_name(bad)


def good_doc(**over):
    doc = {
        "party": {"name": "alice", "listen": "127.0.0.1:5000", "cert": "a.pem", "key": "a.key", "ca": "ca.pem"},
        "peers": {"bob": {"address": "bob.example.org:5000"}},
        "data": {"transactions": "tx.dat", "rows": 5},
        "limits": {"max_sessions": 3, "session_timeout": 30},
    }
    doc.update(over)
    return doc


def test_config_parses_and_resolves_paths(tmp_path):
    cfg = parse_config(good_doc(), tmp_path)
    assert cfg.name == "alice" and cfg.peers["bob"].address == "bob.example.org:5000"
    assert cfg.cert == tmp_path / "a.pem" and cfg.data["transactions"] == str(tmp_path / "tx.dat")
    assert cfg.data["rows"] == 5 and cfg.analysts == ("analyst",)
    assert cfg.limits.max_sessions == 3 and cfg.limits.session_timeout == 30.0
    assert cfg.limits.max_message_bytes == Limits().max_message_bytes


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("party"), "missing table \\[party\\]"),
        (lambda d: d["party"].pop("listen"), "missing key party.listen"),
        (lambda d: d["party"].update(listen="nohost"), 'party.listen: expected "host:port"'),
        (lambda d: d["party"].update(listen="h:99999"), "party.listen.*port 0-65535"),
        (lambda d: d["party"].update(name="Alice"), "party.name: invalid party name"),
        (lambda d: d["party"].update(colour="red"), "unknown key party.colour"),
        (lambda d: d["peers"].update(alice={"address": "x:1"}), "peers.alice: a party cannot be its own peer"),
        (lambda d: d["peers"]["bob"].pop("address"), "missing key peers.bob.address"),
        (lambda d: d["limits"].update(max_sessions=0), "limits.max_sessions must be a positive integer"),
        (lambda d: d["limits"].update(session_timeout="long"), "limits.session_timeout must be a positive number"),
        (lambda d: d["limits"].update(max_sesions=3), "unknown key limits.max_sesions"),
        (lambda d: d["party"].update(analysts="analyst"), "party.analysts must be a list"),
        (lambda d: d.update(extra=1), "unknown key extra"),
    ],
)
def test_config_errors_name_the_key(tmp_path, mutate, message):
    doc = good_doc()
    mutate(doc)
    with pytest.raises(ConfigError, match=message):
        parse_config(doc, tmp_path, "party.toml")


def test_config_file_errors(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[party\nname=")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_write_config_roundtrip_and_cert_name_check(ca, tmp_path):
    ca_cert, ca_key = ca
    issue_cert(ca_cert, ca_key, "bob", tmp_path / "alice")  # the wrong certificate for alice
    p = write_config(
        tmp_path / "alice" / "party.toml",
        name="alice",
        listen="127.0.0.1:1",
        cert="bob.pem",
        key="bob.key",
        ca=ca_cert,
        peers={"bob": "127.0.0.1:2"},
        data={"tx": "t.dat"},
        limits={"max_sessions": 2},
    )
    cfg = load_config(p)
    assert cfg.limits.max_sessions == 2 and cfg.path == p.resolve()
    assert tomllib.loads(p.read_text())["peers"]["bob"]["address"] == "127.0.0.1:2"
    with pytest.raises(ConfigError, match="name is 'alice' but certificate .* is for 'bob'"):
        cfg.credentials()


# --------------------------------------------------------------------------- jobs registry
def test_registry_lookup_and_unknown_job():
    assert {"ping", "exchange", "fail"} <= set(jobs.registered_jobs())
    with pytest.raises(jobs.UnknownJobError, match="unknown job 'nope' \\(known: .*ping"):
        jobs.get_job("nope")


def test_registry_refuses_sync_and_duplicate_jobs():
    with pytest.raises(TypeError):
        jobs.job("t_sync")(lambda ctx: {})

    async def other(ctx):
        return {}

    with pytest.raises(ValueError, match="already registered"):
        jobs.job("ping")(other)


def test_load_job_modules_skips_only_missing_optional(monkeypatch, tmp_path):
    monkeypatch.setattr(jobs, "JOB_MODULES", ["ppdm_no_such_module_xyz"])
    monkeypatch.delenv("PPDM_JOB_MODULES", raising=False)
    assert jobs.load_job_modules() == []
    (tmp_path / "ppdm_broken_jobs_xyz.py").write_text("import ppdm_missing_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(jobs, "JOB_MODULES", ["ppdm_broken_jobs_xyz"])
    with pytest.raises(ModuleNotFoundError, match="ppdm_missing_dependency_xyz"):
        jobs.load_job_modules()  # a broken job module is not silently skipped
    monkeypatch.setattr(jobs, "JOB_MODULES", [])
    with pytest.raises(jobs.JobError, match="job module 'ppdm_no_such_module_xyz' not found"):
        jobs.load_job_modules(["ppdm_no_such_module_xyz"])


def test_jobs_module_has_no_grpc_side_effect():
    import subprocess

    code = "import sys, parties.jobs; print('grpc' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_builtin_jobs_on_memory_network():
    from mpc.channel import MemoryNetwork

    async def main():
        net = MemoryNetwork(["a", "b", "c"])
        ctxs = [
            jobs.JobContext(name=n, ch=net.channel(n), params={"size": 1000, "rounds": 2, "tags": 2})
            for n in net.parties
        ]
        return await asyncio.gather(*(jobs.get_job("exchange")(c) for c in ctxs))

    res = {r["party"]: r for r in asyncio.run(main())}
    for a in res:
        for b in res:
            if a != b:
                assert res[a]["sent"][b] == res[b]["received"][a] and len(res[a]["sent"][b]) == 4


def test_job_params_are_checked():
    from mpc.channel import MemoryNetwork

    ctx = jobs.JobContext(name="a", ch=MemoryNetwork(["a", "b"]).channel("a"), params={"size": "big"})
    with pytest.raises(jobs.JobError, match="parameter 'size' must be int"):
        ctx.param("size", int)
    with pytest.raises(jobs.JobError, match="has no \\[data\\] transactions"):
        ctx.data_path("transactions")


# --------------------------------------------------------------------------- CLI init
def test_cli_party_init(tmp_path, monkeypatch, capsys):
    from parties.cli import main

    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "party",
                "init",
                "--name",
                "alice",
                "--listen",
                "127.0.0.1:7001",
                "--peer",
                "bob=127.0.0.1:7002",
                "--data",
                "transactions=a.dat",
            ]
        )
        == 0
    )
    assert main(["party", "init", "--name", "bob", "--listen", "127.0.0.1:7002", "--peer", "alice=127.0.0.1:7001"]) == 0
    cfg = load_config(tmp_path / "alice" / "party.toml")
    assert cfg.credentials().name == "alice" and cfg.peers["bob"].address == "127.0.0.1:7002"
    assert cfg.data["transactions"] == str(tmp_path / "a.dat")  # where the command ran, not alice/
    assert stat.S_IMODE(os.stat(tmp_path / "alice" / "alice.key").st_mode) == 0o600
    # both parties share the CA that the first init created
    assert (tmp_path / "alice" / "ca.pem").read_bytes() == (tmp_path / "bob" / "ca.pem").read_bytes()
    capsys.readouterr()
    assert main(["party", "init", "--name", "alice"]) == 2
    assert "exists (use --force" in capsys.readouterr().err
    assert main(["party", "init", "--name", "carol", "--ca-cert", "nope.pem", "--ca-key", "nope.key"]) == 2
    assert "CA certificate file not found: nope.pem" in capsys.readouterr().err
    assert main(["party", "serve", "--config", "missing.toml"]) == 2
    assert "config file not found" in capsys.readouterr().err


def test_cli_party_init_writes_the_publish_guard(tmp_path, monkeypatch, capsys):
    """``--publish-hierarchies DIR --max-releases N``: [publish] in the fresh party.toml, read back as
    the guard's settings; a missing directory or N < 1 is one line and no party.toml."""
    from parties.cli import main

    monkeypatch.chdir(tmp_path)
    h = tmp_path / "hier"
    h.mkdir()
    (h / "age.csv").write_text("30;30-39;*\n31;30-39;*\n")
    args = ["party", "init", "--name", "dora", "--publish-hierarchies", "hier", "--max-releases", "2"]
    assert main(args) == 0
    cfg = load_config(tmp_path / "dora" / "party.toml")
    assert cfg.publish.max_releases == 2 and dict(cfg.publish.hierarchies or {}) == {"age": h / "age.csv"}
    capsys.readouterr()
    for bad, msg in (
        (["--publish-hierarchies", "nowhere"], "not a directory"),
        (["--max-releases", "0"], "at least 1"),
    ):
        assert main(["party", "init", "--name", "erin", *bad]) == 2
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1
        assert not (tmp_path / "erin" / "party.toml").exists()
