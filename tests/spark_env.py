"""Spark for the tests: a ``local[2]`` session, and a real standalone cluster (a master and two worker JVMs) on loopback.

Both need pyspark (the ``spark`` extra) and a Java 17+ runtime (``JAVA_HOME``, or ``java`` on PATH); without
them the tests that ask for a fixture skip with one line saying what is missing (:func:`spark_unavailable`).

One Python process holds at most one SparkContext, so a session against the cluster replaces the local one:
``spark_local`` hands every test the one local session of the test run and re-creates it (in the driver JVM
that is already running, well under a second) when a cluster test stopped it; ``spark_cluster.session()``
stops whatever session is active. Use the fixtures after ``from spark_env import spark_cluster, spark_local``
in ``conftest.py``.

Spark does not mind running as root (CI does), so unlike PostgreSQL (tests/pg_server.py) the JVMs run as the
current user. Every JVM the cluster starts is its own process group and dies with the test process (Linux
``PR_SET_PDEATHSIG``); teardown kills each group and everything below it, so no JVM outlives the tests.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = [
    "REPO_ROOT",
    "SparkCluster",
    "batch_row_counts",
    "executor_count",
    "local_session",
    "partition_origin",
    "process_ancestry",
    "spark_cluster",
    "spark_conf_for_tests",
    "spark_local",
    "spark_unavailable",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS_DIR = Path(__file__).resolve().parent
MIN_JAVA = 17  # Spark 4 runs on Java 17 and 21
INSTALL_PYSPARK = "pip install 'ppdm[spark]', or PPDM_WITH_SPARK=1 python3 bootstrap.py test"
INSTALL_JAVA = "a JDK 17: apt install openjdk-17-jre-headless, or JAVA_HOME set to one"
# C1 only: C2's background compiles of a JVM's start-up code took half of two cores and doubled the time to a
# first result (cluster up, session, first job: 35 s instead of 70 s); serial GC, no GC threads to share them with
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
STARTUP_TIMEOUT = 120.0  # seconds for workers to register, and for executors to come up (a loaded 2-core CI machine)
CLUSTER_CONF = {"spark.executor.memory": "512m", "spark.cores.max": "2", "spark.executor.cores": "1"}


# --- is Spark usable here? ---------------------------------------------------------------------------------


def find_java() -> Path | None:
    """The ``java`` Spark's launch scripts run: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return Path(home) / "bin" / "java"
    found = shutil.which("java")
    return Path(found) if found else None


def java_home(java: Path) -> Path:
    """JAVA_HOME for a ``java`` binary: ``/usr/bin/java`` -> ``/usr/lib/jvm/java-17-openjdk-amd64`` (links resolved)."""
    return Path(os.path.realpath(java)).parent.parent


def java_major(java: Path) -> int | None:
    """The major version ``java -version`` reports (``1.8.0_392`` -> 8, ``17.0.15`` -> 17); None if it does not run."""
    try:
        r = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', r.stderr + r.stdout)
    if r.returncode != 0 or m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


@functools.cache
def spark_unavailable() -> str | None:
    """None when pyspark imports and a Java 17+ runtime runs; otherwise one line: what is missing, how to enable."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return f"Spark tests skipped: pyspark is not installed ({INSTALL_PYSPARK}; and {INSTALL_JAVA})"
    java = find_java()
    if java is None:
        return f"Spark tests skipped: no Java runtime, neither JAVA_HOME nor java on PATH ({INSTALL_JAVA})"
    if not java.is_file():
        return f"Spark tests skipped: JAVA_HOME={os.environ.get('JAVA_HOME')} has no bin/java ({INSTALL_JAVA})"
    major = java_major(java)
    if major is None:
        return f"Spark tests skipped: '{java} -version' fails ({INSTALL_JAVA})"
    if major < MIN_JAVA:
        return f"Spark tests skipped: {java} is Java {major}, Spark 4 needs {MIN_JAVA}+ ({INSTALL_JAVA})"
    return None


def _skip_unless_spark() -> None:
    reason = spark_unavailable()
    if reason is not None:
        pytest.skip(reason)


# --- settings shared by the driver, the local session and the cluster ----------------------------------------


def spark_conf_for_tests() -> dict[str, str]:
    """The Spark settings of the test sessions: small, quiet, loopback only, executors run this venv's Python.

    The executors' PYTHONPATH holds the repository root (``anonymize``, ``parties``, ``mpc``) and ``tests/``
    (helpers such as this module, which tests hand to ``mapInArrow``), so they import project code by name;
    then this process's PYTHONPATH, which the setting would otherwise hide from the Python workers.
    """
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": "WARN",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR), *inherited]),
        "spark.driver.extraJavaOptions": JVM_OPTIONS,
        "spark.executor.extraJavaOptions": JVM_OPTIONS,
    }


def _spark_home() -> Path:
    """The pyspark package directory: its ``bin/`` and ``jars/`` are a Spark distribution."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _spark_environ() -> dict[str, str]:
    """Environment variables for every Spark JVM (the driver's and the cluster's) and the Python workers."""
    env = {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",  # else Spark warns that the hostname resolves to loopback and picks eth0
    }
    java = find_java()
    if not os.environ.get("JAVA_HOME") and java is not None:
        env["JAVA_HOME"] = str(java_home(java))
    return env


def _set_driver_environ() -> None:
    """Put :func:`_spark_environ` into os.environ: pyspark hands it to the driver JVM it launches (once per process)."""
    os.environ.update(_spark_environ())


def _stop_active_session() -> None:
    """Stop the process's SparkContext if there is one (its driver JVM keeps running, ready for the next)."""
    from pyspark import SparkContext

    active = SparkContext._active_spark_context
    if active is not None:
        active.stop()


def _build_session(master: str, app_name: str, conf: Mapping[str, str]) -> SparkSession:
    from pyspark.sql import SparkSession

    _set_driver_environ()
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


# --- helpers that run on executors (imported there by name from tests/, see spark_conf_for_tests) -----------


def batch_row_counts(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A ``mapInArrow`` function: one row per input batch with its row count, the worker's pid and this file."""
    import pyarrow as pa

    for batch in batches:
        yield pa.RecordBatch.from_pydict(
            {"rows": [batch.num_rows], "pid": [os.getpid()], "module": [str(Path(__file__).resolve())]},
            schema=pa.schema([("rows", pa.int64()), ("pid", pa.int64()), ("module", pa.string())]),
        )


def partition_origin(rows: Iterable[int], seconds: float = 0.0) -> Iterator[tuple[int, list[int], list[str]]]:
    """A ``mapPartitions`` function: after ``seconds``, one tuple (the partition's sum, this process's ancestry,
    the files the executor imported ``anonymize``, ``parties`` and ``mpc`` from)."""
    import importlib

    total = sum(rows)
    time.sleep(seconds)
    files = [str(importlib.import_module(name).__file__) for name in ("anonymize", "parties", "mpc")]
    yield total, process_ancestry(), files


def process_ancestry(pid: int | None = None) -> list[int]:
    """``pid`` (default: this process) and its ancestors up to init, from /proc (Linux)."""
    chain = [os.getpid() if pid is None else pid]
    while chain[-1] > 1:
        try:
            stat = Path(f"/proc/{chain[-1]}/stat").read_text()
        except OSError:
            break
        chain.append(int(stat.rsplit(")", 1)[1].split()[1]))  # the field after "(comm) state" is the ppid
    return chain


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, from /proc (Linux; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


# --- the standalone cluster ----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# looked up here, not in the forked child (the driver's Py4J threads may hold the dynamic loader's lock)
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the test process dies, so no JVM outlives a killed pytest (Linux).

    The signal follows the death of the thread that started the child: start clusters from the main thread.
    """
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc``'s process group and every process below it (an executor JVM, its Python daemon), then reap."""
    if proc.poll() is None:
        below = _descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in below:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    proc.wait()


class SparkCluster:
    """A Spark standalone master and ``workers`` workers (1 core, 1 GiB each), separate JVMs on 127.0.0.1.

    :meth:`start` returns once every worker is registered; :meth:`session` connects a SparkSession;
    :meth:`kill_worker` loses a worker (and its executor) as a crashed machine would; :meth:`stop` kills all.
    """

    def __init__(self, workers: int = 2) -> None:
        self.home = _spark_home()
        self.dir = Path(tempfile.mkdtemp(prefix="ppdm-spark-"))
        self.port, self.webui_port = _free_port(), _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.master: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes] | None] = [None] * workers
        self.worker_ports: list[int] = [0] * workers
        self._logs: list[Any] = []
        self._sessions: list[SparkSession] = []
        conf_dir = self.dir / "conf"  # empty: no spark-env.sh or spark-defaults.conf from anywhere else
        conf_dir.mkdir()
        self.env = {
            **os.environ,
            **_spark_environ(),
            "SPARK_HOME": str(self.home),
            "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOG_DIR": str(self.dir),
            "SPARK_LOCAL_DIRS": str(self.dir / "scratch"),  # executors' shuffle and spill files
            "SPARK_DAEMON_MEMORY": "256m",  # heap of the master and worker daemons (default 1g)
            "SPARK_DAEMON_JAVA_OPTS": JVM_OPTIONS,
        }

    @property
    def worker_pids(self) -> list[int]:
        """The pids of the worker JVMs that are running (a killed worker drops out)."""
        return [p.pid for p in self.workers if p is not None and p.poll() is None]

    @property
    def webui_url(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    def _spawn(self, name: str, cls: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.dir / f"{name}.log", "ab")  # closed in stop()
        self._logs.append(log)
        return subprocess.Popen(
            [str(self.home / "bin" / "spark-class"), f"org.apache.spark.deploy.{cls}", *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.dir,
            start_new_session=True,  # its own process group: killpg takes the JVM and what it launched
            preexec_fn=_die_with_parent,
        )

    def start(self) -> SparkCluster:
        """Start the master and every worker; wait (up to 60 s) until the master lists them all as ALIVE."""
        try:
            self.master = self._spawn(
                "master",
                "master.Master",
                *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.webui_port)),
            )
            for i in range(len(self.workers)):
                self.start_worker(i, wait=False)
            self.wait_for_workers()
        except BaseException:
            self.stop()
            raise
        return self

    def start_worker(self, i: int, wait: bool = True) -> None:
        """(Re)start worker ``i`` with a fresh RPC port; with ``wait``, until the master lists it as ALIVE."""
        old = self.workers[i]
        if old is not None and old.poll() is None:
            raise RuntimeError(f"worker {i} is running (pid {old.pid})")
        self.worker_ports[i] = _free_port()
        work_dir = self.dir / f"work-{i}"
        work_dir.mkdir(exist_ok=True)
        self.workers[i] = self._spawn(
            f"worker-{i}",
            "worker.Worker",
            self.master_url,
            *("--cores", "1", "--memory", "1g", "--host", "127.0.0.1", "--port", str(self.worker_ports[i])),
            *("--webui-port", str(_free_port()), "--work-dir", str(work_dir)),
        )
        if wait:
            self.wait_for_workers()

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker ``i``'s JVM with its executor JVM and Python workers (a lost machine); the pid drops out."""
        proc = self.workers[i]
        if proc is None:
            raise RuntimeError(f"worker {i} was never started")
        _kill_tree(proc)

    def status(self) -> dict[str, Any]:
        """The master web UI's JSON (``aliveworkers``, ``workers``, ``activeapps``, ...)."""
        with urllib.request.urlopen(self.webui_url + "/json/", timeout=5) as r:
            return json.load(r)

    def alive_worker_ports(self) -> set[int]:
        """The RPC ports of the workers the master lists as ALIVE (it lists a killed one as DEAD once it notices)."""
        return {w["port"] for w in self.status().get("workers", []) if w.get("state") == "ALIVE"}

    def wait_for_workers(self, timeout: float = STARTUP_TIMEOUT) -> None:
        """Wait until every running worker is registered and ALIVE at the master; RuntimeError with the logs if not."""
        want = {port for port, p in zip(self.worker_ports, self.workers) if p is not None and p.poll() is None}
        self._wait(lambda: want <= self.alive_worker_ports(), timeout, f"{len(want)} workers to register")

    def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``done`` until true; RuntimeError with the logs' tails on timeout or when the master died."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError, ValueError):  # the web UI not up yet
                if done():
                    return
            if self.master is None or self.master.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Spark standalone cluster: gave up waiting for {what}\n{self.log_tail()}")
            time.sleep(0.3)

    def log_tail(self, lines: int = 15) -> str:
        """The last ``lines`` lines of the master's, the workers' and the executors' logs."""
        out = []
        logs = sorted(self.dir.glob("*.log")) + sorted(self.dir.glob("work-*/app-*/*/stderr"))
        for path in logs:
            with contextlib.suppress(OSError):
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {path.relative_to(self.dir)}\n" + "\n".join(tail))
        return "\n".join(out)

    def session(
        self, app_name: str = "ppdm-test", conf: Mapping[str, str] | None = None, executors: int | None = None
    ) -> SparkSession:
        """A SparkSession on this cluster (replacing the process's active session), once ``executors`` run.

        Workers an earlier test killed are restarted first. ``executors`` defaults to one per worker;
        ``conf`` is added to :func:`spark_conf_for_tests` and the executor settings (512 MiB, 1 core each,
        2 cores in all).
        """
        _stop_active_session()
        dead = [i for i, p in enumerate(self.workers) if p is None or p.poll() is not None]
        for i in dead:
            self.start_worker(i, wait=False)
        if dead:
            self.wait_for_workers()
        spark = _build_session(self.master_url, app_name, {**spark_conf_for_tests(), **CLUSTER_CONF, **(conf or {})})
        self._sessions.append(spark)
        want = len(self.worker_pids) if executors is None else executors
        self._wait(lambda: executor_count(spark) >= want, STARTUP_TIMEOUT, f"{want} executors of {app_name!r}")
        return spark

    def stop(self) -> None:
        """Stop the sessions made here, kill every JVM started (with all below it), delete the directory."""
        for spark in self._sessions:
            with contextlib.suppress(Exception):
                if spark.sparkContext._jsc is not None:
                    spark.stop()
        self._sessions.clear()
        for proc in (*self.workers, self.master):
            if proc is not None:
                _kill_tree(proc)
        for log in self._logs:
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def executor_count(spark: SparkSession) -> int:
    """How many executors the driver has registered (the driver itself not counted; 0 in local mode)."""
    return int(spark.sparkContext._jsc.sc().getExecutorIds().size())


# --- pytest fixtures (import them into conftest.py) -----------------------------------------------------------

_local: SparkSession | None = None


def local_session() -> SparkSession:
    """The test run's ``local[2]`` session: made on first use, re-made if a cluster session replaced it."""
    global _local
    if _local is None or _local.sparkContext._jsc is None:
        _stop_active_session()
        _local = _build_session("local[2]", "ppdm-tests-local", spark_conf_for_tests())
    return _local


def _stop_local() -> None:
    if _local is not None and _local.sparkContext._jsc is not None:
        _local.stop()


@pytest.fixture
def spark_local(request: pytest.FixtureRequest) -> SparkSession:
    """A ``local[2]`` SparkSession, one for the whole test run (stopped at its end); skips without Spark.

    Function-scoped only so that a test after a ``spark_cluster`` test still gets a live session: the
    cluster session stops the local one (one SparkContext per process), and this re-creates it.
    """
    _skip_unless_spark()
    fresh = _local is None
    spark = local_session()
    if fresh:
        request.session.addfinalizer(_stop_local)
    return spark


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[SparkCluster]:
    """A Spark standalone cluster on loopback (a master, two workers) for the test run; skips without Spark."""
    _skip_unless_spark()
    cluster = SparkCluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()
