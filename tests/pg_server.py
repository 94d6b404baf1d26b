"""A real PostgreSQL server for the tests: initdb in a temporary directory, ``postgres`` on loopback.

PostgreSQL refuses to run as root, so under root (as CI runs) the cluster belongs to the
unprivileged ``nobody`` user and the server runs as it. Password authentication (SCRAM) is on,
so a wrong password file is a real refusal. Without the binaries the tests that need the server
skip with one line saying how to enable them.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["PostgresServer", "find_bindir", "SKIP_REASON"]

SKIP_REASON = (
    "PostgreSQL tests need initdb and postgres (Debian/Ubuntu: apt install postgresql; or set PPDM_PG_BINDIR "
    "to their directory)"
)


def find_bindir() -> Path | None:
    """The directory of ``initdb`` and ``postgres``: $PPDM_PG_BINDIR, PATH, or /usr/lib/postgresql/*/bin."""
    env = os.environ.get("PPDM_PG_BINDIR")
    cands = [Path(env)] if env else []
    for tool in ("initdb", "postgres"):
        w = shutil.which(tool)
        if w:
            cands.append(Path(os.path.realpath(w)).parent)
    cands += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for d in cands:
        if (d / "initdb").is_file() and (d / "postgres").is_file():
            return d
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """Start with :meth:`start`, stop with :meth:`stop`. ``url`` has no password; ``password`` is it."""

    def __init__(self, bindir: Path, user: str = "ppdm", password: str = "s3cret-pw"):
        self.bindir, self.user, self.password = bindir, user, password
        self.dir = Path(tempfile.mkdtemp(prefix="ppdm-pg-"))
        self.data = self.dir / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None
        self.run_as = "nobody" if os.geteuid() == 0 else None

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def password_file(self, where: Path, password: str | None = None, mode: int = 0o600) -> Path:
        """Write a password file (the password alone) with ``mode``."""
        where.write_text((self.password if password is None else password) + "\n", encoding="utf-8")
        where.chmod(mode)
        return where

    def start(self) -> PostgresServer:
        pwfile = self.dir / "pw"
        pwfile.write_text(self.password + "\n")
        if self.run_as:
            import pwd

            ent = pwd.getpwnam(self.run_as)
            for p in (self.dir, pwfile):
                os.chown(p, ent.pw_uid, ent.pw_gid)
        kw = {"user": self.run_as} if self.run_as else {}
        r = subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                self.user,
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            capture_output=True,
            text=True,
            cwd=self.dir,
            **kw,  # type: ignore[arg-type]
        )
        if r.returncode != 0:
            raise RuntimeError(f"initdb failed: {r.stderr.strip()[-500:]}")
        self.log = open(self.dir / "server.log", "wb")  # closed in stop()
        self.proc = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-h",
                "127.0.0.1",
                "-k",
                str(self.dir),
                "-c",
                "fsync=off",
                "-c",
                "shared_buffers=64MB",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.dir,
            **kw,  # type: ignore[arg-type]
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.execute("SELECT 1")
                return self
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        "PostgreSQL did not start: " + (self.dir / "server.log").read_text()[-500:]
                    ) from None
                time.sleep(0.2)

    def connect(self):
        import adbc_driver_postgresql.dbapi as pg

        return pg.connect(f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/postgres")

    def execute(self, *sql: str) -> None:
        with self.connect() as conn, conn.cursor() as cur:
            for q in sql:
                cur.execute(q)
            conn.commit()

    def ingest(self, table: str, data) -> None:
        """Create ``table`` from an Arrow table or record batch reader (ADBC bulk COPY)."""
        with self.connect() as conn, conn.cursor() as cur:
            cur.adbc_ingest(table, data, mode="replace")
            conn.commit()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
