"""N real party daemons on loopback, for tests, the demo, benchmarks and ``ppdm mine --local``.

    from parties.analyst.local_cluster import LocalCluster

    with LocalCluster(["alice", "bob", "carol"], data={"alice": {"transactions": "a.dat"}}) as c:
        out = c.run_job("exchange", {"size": 1 << 20}, timeout=30)   # {"alice": {...}, ...}
        c.kill("bob")                                              # SIGKILL one daemon

    async with LocalCluster(3) as c:                               # parties p0, p1, p2
        out = await c.arun_job("ping")

It creates a fresh CA and, through certificate signing requests
(:mod:`parties.identity.pki`: each party's key is made in its own directory, the CA key
never leaves ``<workdir>/ca``), party certificates and an analyst certificate
in a temporary directory (or ``workdir``), picks free loopback ports, writes one
``party.toml`` per party, starts one daemon *process* per party
(``python -m parties.runtime.daemon``) and waits until every daemon answers
``Health``. On exit — also on an exception, and via ``--exit-with-parent`` if
this process dies — the daemons are terminated. Each daemon logs to
``<workdir>/<name>.log`` (:meth:`LocalCluster.log`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from parties.config import PeerInfo, write_config
from parties.identity.pki import init_ca, make_csr, revoke, sign_csr
from parties.identity.tls import Credentials, cert_fingerprint, load_credentials, validate_name

__all__ = ["LocalCluster", "ClusterError"]

ROOT = Path(__file__).resolve().parent.parent
ANALYST = "analyst"


class ClusterError(RuntimeError):
    """A local daemon did not start (the message quotes the end of its log)."""


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _terminate(procs: dict[str, subprocess.Popen], timeout: float = 3.0) -> None:
    for p in procs.values():
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout
    for p in procs.values():
        try:
            p.wait(max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class LocalCluster:
    """Real daemons on 127.0.0.1 (see the module docstring).

    Parameters
    ----------
    parties: a count (names ``p0, p1, ...``) or a list of names.
    workdir: where certificates, configs and logs go (default: a temporary
        directory removed on exit; a given one is kept).
    data: ``{party: {key: path}}`` written to each party's ``[data]``.
    limits: ``[limits]`` for every party (e.g. ``{"max_message_bytes": ...}``).
    job_modules: extra modules every daemon imports for jobs.
    log_level: the daemons' log level.
    policy: ``[policy]`` for every party (see :mod:`parties.guards.policy`), or
        ``{party: policy}`` when the keys are party names.
    diagnostics: run the diagnostic jobs (``exchange``, ``sleep``, ``fail``, ...) — on by default
        here (``[policy] diagnostics = true``), off by default in an operator's ``party.toml``.
    crl: every daemon reads the CA's revocation list (``<workdir>/ca/crl.pem``)
        at start; :meth:`revoke` adds a certificate to it.
    pins: ``{party: {peer: fingerprint}}`` certificate pins; a fingerprint of
        ``None`` pins the certificate the cluster issued to that peer.
    analysts: more analysts (besides ``"analyst"``, whose credentials are
        :attr:`creds`) every party accepts; :meth:`credentials` gives theirs.
    audit: ``[audit]`` for every party (see :mod:`parties.guards.audit_state`), or
        ``{party: audit}`` when the keys are party names.
    link_shape: ``(rtt_ms, mbit)`` to emulate a WAN link between every pair of
        daemons (:mod:`parties.runtime.shaping`; ``mbit`` None: no bandwidth cap).
    dp: ``[dp]`` (privacy budgets, :mod:`parties.guards.dp_budget`) for every party, or
        ``{party: table}`` when the keys are party names.
    spark: ``{party: [spark] table}`` (``master``, ``conf``) for parties with ``engine = "spark"`` data.
    metrics: ``{party: [metrics] table}`` (``address``, ``tls``): Prometheus endpoints (:mod:`parties.runtime.metrics`).
    server: ``[server]`` (``reflection``) for every party.
    publish: ``[publish]`` (joint publishing's guard, :mod:`parties.guards.releases`) for every party, or
        ``{party: table}`` when the keys are party names.
    log_format: ``text`` or ``json`` (:mod:`parties.runtime.logs`).
    """

    def __init__(
        self,
        parties: int | Sequence[str] = 3,
        workdir: str | os.PathLike | None = None,
        data: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        limits: Mapping[str, Any] | None = None,
        job_modules: Sequence[str] = (),
        log_level: str = "INFO",
        start_timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        policy: Mapping[str, Any] | None = None,
        crl: bool = False,
        pins: Mapping[str, Mapping[str, str | None]] | None = None,
        analysts: Sequence[str] = (),
        link_shape: tuple[float, float | None] | None = None,
        audit: Mapping[str, Any] | None = None,
        dp: Mapping[str, Any] | None = None,
        diagnostics: bool = True,
        spark: Mapping[str, Mapping[str, Any]] | None = None,
        metrics: Mapping[str, Mapping[str, Any]] | None = None,
        server: Mapping[str, Any] | None = None,
        log_format: str = "text",
        publish: Mapping[str, Any] | None = None,
    ):
        names = [f"p{i}" for i in range(parties)] if isinstance(parties, int) else list(parties)
        if len(names) < 1 or len(set(names)) != len(names):
            raise ValueError(f"need distinct party names, got {names}")
        for n in names:
            validate_name(n)
        if ANALYST in names:
            raise ValueError(f"{ANALYST!r} is reserved for the analyst certificate")
        unknown = set(data or {}) - set(names)
        if unknown:
            raise ValueError(f"data given for unknown parties {sorted(unknown)}")
        self.names = names
        self._data = {k: dict(v) for k, v in (data or {}).items()}
        self._limits = dict(limits or {})
        self._job_modules = list(job_modules)
        self._log_level = log_level
        self._start_timeout = start_timeout
        self._env = dict(env or {})
        pol = dict(policy or {})
        self._policy = (
            {n: dict(pol.get(n) or {}) for n in names} if pol and set(pol) <= set(names) else {n: pol for n in names}
        )
        if diagnostics:  # a local cluster is for trying the daemons: its diagnostic jobs are on
            self._policy = {n: {"diagnostics": True, **p} for n, p in self._policy.items()}
        dpt = dict(dp or {})
        self._dp = (
            {n: dict(dpt.get(n) or {}) for n in names} if dpt and set(dpt) <= set(names) else {n: dpt for n in names}
        )
        self._crl = crl
        self._spark = {n: dict(t) for n, t in (spark or {}).items()}
        self._metrics = {n: dict(t) for n, t in (metrics or {}).items()}
        self._server = dict(server or {})
        pub = dict(publish or {})
        self._publish = (
            {n: dict(pub.get(n) or {}) for n in names} if pub and set(pub) <= set(names) else {n: pub for n in names}
        )
        self._log_format = log_format
        aud = dict(audit or {})
        self._audit = (
            {n: dict(aud.get(n) or {}) for n in names} if aud and set(aud) <= set(names) else {n: aud for n in names}
        )
        self._analysts = [ANALYST, *(a for a in analysts if a != ANALYST)]
        for a in self._analysts:
            validate_name(a, "analyst name")
            if a in names:
                raise ValueError(f"{a!r} is both a party and an analyst")
        self._pins = {k: dict(v) for k, v in (pins or {}).items()}
        if link_shape is not None:  # (rtt ms, Mbit/s or None): emulated WAN links, see parties.runtime.shaping
            rtt_ms, mbit = link_shape
            self._env["PPDM_LINK_SHAPE"] = f"rtt_ms={rtt_ms}" + ("" if mbit is None else f",mbit={mbit}")
        self._own_dir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else None
        self.procs: dict[str, subprocess.Popen] = {}
        self.peers: list[PeerInfo] = []
        self.configs: dict[str, Path] = {}
        self.creds: Credentials | None = None
        self._finalizer: weakref.finalize | None = None
        self.startup_seconds: float | None = None
        self._log_start: dict[str, int] = {}

    # ------------------------------------------------------------------ set-up
    def _prepare(self) -> None:
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="ppdm-cluster-"))
        wd = self.workdir
        wd.mkdir(parents=True, exist_ok=True)
        ca = init_ca(wd / "ca")
        ca_cert = ca["cert"]
        ports = _free_ports(len(self.names))
        self.peers = [PeerInfo(n, f"127.0.0.1:{p}") for n, p in zip(self.names, ports)]
        for n in [*self.names, *self._analysts]:  # each key made where it lives; the CA signs the request
            _key, csr = make_csr(n, wd / n)
            sign_csr(csr, wd / "ca", wd / n / f"{n}.pem", client_only=n in self._analysts)
        a_cert, a_key = wd / ANALYST / f"{ANALYST}.pem", wd / ANALYST / f"{ANALYST}.key"
        self.creds = load_credentials(a_cert, a_key, ca_cert)
        fingerprints = {n: cert_fingerprint((wd / n / f"{n}.pem").read_bytes()) for n in self.names}
        for info in self.peers:
            n = info.name
            self.configs[n] = write_config(
                wd / n / "party.toml",
                name=n,
                listen=info.address,
                cert=f"{n}.pem",
                key=f"{n}.key",
                ca=ca_cert,
                peers={p.name: p.address for p in self.peers if p.name != n},
                analysts=self._analysts,
                data={
                    k: str(Path(v).resolve()) if isinstance(v, (str, os.PathLike)) else v
                    for k, v in self._data.get(n, {}).items()
                },
                limits=self._limits,
                job_modules=self._job_modules,
                policy=self._policy.get(n) or None,
                audit=self._audit.get(n) or None,
                crl=ca["crl"].resolve() if self._crl else None,
                pins={p: fp or fingerprints[p] for p, fp in self._pins.get(n, {}).items()},
                dp=self._dp.get(n) or None,
                spark=self._spark.get(n) or None,
                metrics=self._metrics.get(n) or None,
                server=self._server or None,
                publish=self._publish.get(n) or None,
            )

    def _spawn(self, name: str) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        env.setdefault("PYTHONUNBUFFERED", "1")
        # all daemons share this machine: split its cores between them for the public-key work
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        env.setdefault("PPDM_CRYPTO_THREADS", str(max(1, cores // len(self.names))))
        env.update(self._env)
        log = open(self.log_path(name), "ab")
        self._log_start[name] = log.tell()  # the ready line must come after this
        try:
            return subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "parties.runtime.daemon",
                    "--config",
                    str(self.configs[name]),
                    "--log-level",
                    self._log_level,
                    "--log-format",
                    self._log_format,
                    "--exit-with-parent",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(ROOT),
                start_new_session=True,
            )
        finally:
            log.close()

    def log_path(self, name: str) -> Path:
        assert self.workdir is not None
        return self.workdir / f"{name}.log"

    def log(self, name: str) -> str:
        """Everything daemon ``name`` has logged so far."""
        try:
            return self.log_path(name).read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def _wait_ready(self, names: Sequence[str]) -> None:
        deadline = time.monotonic() + self._start_timeout
        waiting = set(names)
        while waiting:
            for n in list(waiting):
                p = self.procs[n]
                with open(self.log_path(n), "rb") as f:
                    f.seek(self._log_start.get(n, 0))
                    ready = f"party {n} listening on".encode() in f.read()
                if ready:
                    waiting.discard(n)
                elif p.poll() is not None:
                    raise ClusterError(f"daemon {n} exited with code {p.returncode}: {self._tail(n)}")
            if waiting and time.monotonic() > deadline:
                raise ClusterError(
                    f"daemons {sorted(waiting)} not ready after {self._start_timeout:g} s: "
                    + "; ".join(self._tail(n) for n in sorted(waiting))
                )
            if waiting:
                time.sleep(0.02)
        self._health_all(names)

    def _health_all(self, names: Sequence[str]) -> None:
        # the synchronous gRPC API: no event loop involved, so this works from any context
        import grpc

        from parties.proto.ppdm.v1 import party_pb2 as pb
        from parties.proto.ppdm.v1 import party_pb2_grpc as pb_grpc
        from parties.runtime.grpc_channel import channel_options

        assert self.creds is not None
        creds = self.creds.channel_credentials()
        for n in names:
            with grpc.secure_channel(self.party(n).address, creds, options=channel_options(n)) as ch:
                try:
                    pb_grpc.PartyStub(ch).Health(pb.HealthRequest(), timeout=10, wait_for_ready=True)
                except grpc.RpcError as e:
                    raise ClusterError(f"daemon {n} does not answer Health: {e.code().name}: {e.details()}") from None

    def _tail(self, name: str, lines: int = 5) -> str:
        t = self.log(name).strip().splitlines()[-lines:]
        return " | ".join(t) or "(no output)"

    # ------------------------------------------------------------------ public
    def start(self) -> LocalCluster:
        """Create certificates and configs, start every daemon, wait until all answer Health."""
        t0 = time.perf_counter()
        try:
            self._prepare()
            for n in self.names:
                self.procs[n] = self._spawn(n)
            self._finalizer = weakref.finalize(self, _terminate, self.procs)
            self._wait_ready(self.names)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - t0
        return self

    def stop(self) -> None:
        """Terminate every daemon (SIGTERM, then SIGKILL after 3 s); remove a temporary workdir."""
        _terminate(self.procs)
        if self._finalizer is not None:
            self._finalizer.detach()
        if self._own_dir and self.workdir is not None and self.workdir.exists():
            shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (default SIGKILL) to daemon ``name`` and wait for it to exit."""
        p = self.procs[name]
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def restart(self, name: str) -> None:
        """Start daemon ``name`` again (same port, certificate and config) after :meth:`kill`."""
        if self.procs[name].poll() is None:
            raise ClusterError(f"daemon {name} is still running")
        self.procs[name] = self._spawn(name)
        self._wait_ready([name])

    def credentials(self, name: str) -> Credentials:
        """The credentials of party ``name`` (or ``"analyst"``), e.g. to act as that party in a test."""
        assert self.workdir is not None, "cluster not started"
        d = self.workdir / name
        return load_credentials(d / f"{name}.pem", d / f"{name}.key", self.workdir / "ca" / "ca.pem")

    def revoke(self, name: str) -> int:
        """Revoke the certificate of party (or analyst) ``name`` on the CA's list; return its serial.

        Daemons read the list at start (``crl=True``): :meth:`kill` and
        :meth:`restart` the ones that must know.
        """
        assert self.workdir is not None, "cluster not started"
        serial, _ = revoke(self.workdir / "ca", cert=self.workdir / name / f"{name}.pem")
        return serial

    def alive(self, name: str) -> bool:
        return self.procs[name].poll() is None

    def party(self, name: str) -> PeerInfo:
        return next(p for p in self.peers if p.name == name)

    async def arun_job(
        self,
        job: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        parties: Sequence[str] | None = None,
        **kw,
    ) -> dict[str, Any]:
        """Run ``job`` on every party (or on ``parties``, in that order); see :func:`parties.analyst.client.run_job`."""
        from parties.analyst.client import run_job

        assert self.creds is not None, "cluster not started"
        peers = self.peers if parties is None else [self.party(n) for n in parties]
        return await run_job(peers, job, params or {}, creds=self.creds, timeout=timeout, **kw)

    def run_job(
        self,
        job: str,
        params: Mapping[str, Any] | None = None,
        timeout: float = 60.0,
        parties: Sequence[str] | None = None,
        **kw,
    ) -> dict[str, Any]:
        """Synchronous :meth:`arun_job` (runs on :func:`parties.analyst.client.run_sync`'s shared loop)."""
        from parties.analyst.client import run_sync

        return run_sync(self.arun_job(job, params, timeout, parties, **kw))

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    async def __aenter__(self) -> LocalCluster:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.to_thread(self.stop)
