"""The Spark test infrastructure itself (tests/spark_env.py): a local session, and a real standalone cluster
whose workers are separate JVMs, one of which a test kills mid-job.

What Spark 4.3 does when workers die, asserted below: losing one of two workers mid-job costs only the tasks
that ran there (they are re-run on the other worker and the job returns the right answer); with no worker
left a job neither fails nor finishes, it waits for a worker to come back, so a caller bounds it by
cancelling its job group, which raises at once.
"""

from __future__ import annotations

import functools
import os
import stat
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import spark_env
from spark_env import REPO_ROOT, SparkCluster, batch_row_counts, executor_count, partition_origin, spark_unavailable

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

needs_spark = pytest.mark.skipif(spark_unavailable() is not None, reason=spark_unavailable() or "")
JOB_BOUND = 90.0  # seconds a job may take on a loaded 2-core machine before the test calls it hung


def test_the_skip_reason_is_one_line_naming_what_is_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "jdk8" / "bin" / "java"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\necho 'openjdk version \"1.8.0_392\"' >&2\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("JAVA_HOME", str(fake.parent.parent))
    reason = spark_unavailable.__wrapped__()  # uncached: this JAVA_HOME only
    assert reason is not None and "\n" not in reason and reason.startswith("Spark tests skipped: ")
    try:
        import pyspark  # noqa: F401

        assert "is Java 8, Spark 4 needs 17+" in reason
    except ImportError:
        assert "pyspark is not installed" in reason
    assert "apt install openjdk-17-jre-headless" in reason

    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nowhere"))
    reason = spark_unavailable.__wrapped__()
    assert reason is not None and "\n" not in reason


@needs_spark
def test_the_local_session_counts_and_groups(spark_local: SparkSession) -> None:
    assert spark_local.sparkContext.master == "local[2]"
    assert spark_local.conf.get("spark.sql.shuffle.partitions") == "4"
    df = spark_local.range(1000)
    assert df.count() == 1000
    groups = df.groupBy((df.id % 10).alias("k")).count().collect()
    assert sorted((r.k, r["count"]) for r in groups) == [(k, 100) for k in range(10)]


@needs_spark
def test_map_in_arrow_runs_a_function_the_python_workers_import_from_the_repository(spark_local: SparkSession) -> None:
    out = (
        spark_local.range(1000)
        .repartition(4)
        .mapInArrow(batch_row_counts, "rows long, pid long, module string")
        .collect()
    )
    assert sorted(r.rows for r in out) == [250] * 4
    assert {r.module for r in out} == {str(Path(spark_env.__file__).resolve())}  # imported by name, not pickled
    assert os.getpid() not in {r.pid for r in out}  # ran in Spark's Python workers, not in this process


@needs_spark
def test_the_standalone_cluster_has_two_alive_workers(spark_cluster: SparkCluster) -> None:
    status = spark_cluster.status()
    assert status["status"] == "ALIVE" and status["aliveworkers"] == 2 and status["cores"] == 2
    assert spark_cluster.master_url == status["url"]
    assert len(spark_cluster.worker_pids) == 2
    for pid in spark_cluster.worker_pids:
        os.kill(pid, 0)  # the worker JVM is this pid (spark-class execs java)


@needs_spark
def test_a_job_runs_on_both_workers_and_the_local_session_comes_back(spark_cluster: SparkCluster) -> None:
    spark = spark_cluster.session("both-workers")
    assert executor_count(spark) == 2
    rows = spark.sparkContext.parallelize(range(100), 8).mapPartitions(partition_origin).collect()
    assert sum(total for total, _, _ in rows) == sum(range(100))
    # each task's process ancestry: Python worker, PySpark daemon, executor JVM, worker JVM, ...
    workers = {pid for _, chain, _ in rows for pid in chain if pid in spark_cluster.worker_pids}
    assert workers == set(spark_cluster.worker_pids)
    assert len({chain[0] for _, chain, _ in rows}) >= 2
    assert {f for _, _, files in rows for f in files} == {
        str(REPO_ROOT / pkg / "__init__.py") for pkg in ("anonymize", "parties", "mpc")
    }

    # the cluster session replaced the local one (one SparkContext per process); the fixture's helper remakes it
    local = spark_env.local_session()
    assert local.sparkContext.master == "local[2]" and local.range(10).count() == 10


def _wait_for_running_tasks(sc: SparkContext, n: int, job: Future[int], timeout: float = JOB_BOUND) -> None:
    """Wait until the status tracker shows ``n`` running tasks; fail at once if ``job`` ended first (its tasks
    must outlast the listener bus's lag, which on a loaded machine can swallow a whole short job)."""
    tracker, deadline = sc.statusTracker(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        if sum(i.numActiveTasks for i in infos if i is not None) >= n:
            return
        if job.done():
            raise AssertionError(
                f"the job ended before {n} of its tasks were seen running: {job.exception() or 'done'}"
            )
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} tasks running after {timeout} s")


def _stages_waiting_without_tasks(sc: SparkContext, timeout: float) -> bool:
    """True once some stage is active and none of the active stages has a running task."""
    tracker, deadline = sc.statusTracker(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        if stages and all(s is not None and s.numActiveTasks == 0 for s in stages):
            return True
        time.sleep(0.2)
    return False


def _submit(pool: ThreadPoolExecutor, sc: SparkContext, group: str, partitions: int, seconds: float) -> Future[int]:
    """Run a job of ``partitions`` tasks of ``seconds`` each in its own job group; its future is the sum."""

    def job() -> int:
        sc.setJobGroup(group, group, interruptOnCancel=True)  # local to this thread (pinned-thread mode)
        task = functools.partial(partition_origin, seconds=seconds)
        return sum(total for total, _, _ in sc.parallelize(range(60), partitions).mapPartitions(task).collect())

    return pool.submit(job)


@needs_spark
def test_a_lost_worker_costs_its_tasks_only_and_with_no_worker_left_the_job_waits_until_cancelled(
    spark_cluster: SparkCluster,
) -> None:
    spark = spark_cluster.session("worker-loss", {"spark.task.maxFailures": "2"})
    sc = spark.sparkContext
    with ThreadPoolExecutor(1) as pool:
        # worker 0 dies (JVM, executor and Python workers: kill -9) while both workers run a task
        job = _submit(pool, sc, "one-lost", partitions=4, seconds=3.0)
        _wait_for_running_tasks(sc, 2, job)
        spark_cluster.kill_worker(0)
        assert job.result(timeout=JOB_BOUND) == sum(range(60))  # its lost task re-ran on worker 1
        assert executor_count(spark) == 1 and len(spark_cluster.worker_pids) == 1

        # the last worker dies mid-job: Spark does not fail the job (2 tasks of 30 s, killed with the worker:
        # long enough that the status tracker sees one running even when its listener bus lags) ...
        job = _submit(pool, sc, "none-left", partitions=2, seconds=30.0)
        _wait_for_running_tasks(sc, 1, job)
        spark_cluster.kill_worker(1)
        deadline = time.monotonic() + JOB_BOUND
        while executor_count(spark) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert executor_count(spark) == 0
        try:
            with pytest.raises(TimeoutError):
                job.result(timeout=4)
            # ... it waits for a worker: its stage is active with no task running (the status tracker learns of the
            # lost tasks from the listener bus, asynchronously: poll it), the application is still RUNNING
            assert _stages_waiting_without_tasks(sc, timeout=JOB_BOUND)
            assert [a["state"] for a in spark_cluster.status()["activeapps"]] == ["RUNNING"]
        except BaseException:
            sc.cancelJobGroup("none-left")  # never leave the pool waiting on a job nobody can run
            raise
        # ... until the caller cancels it, which fails it at once
        sc.cancelJobGroup("none-left")
        started = time.monotonic()
        with pytest.raises(Exception, match="SPARK_JOB_CANCELLED"):
            job.result(timeout=JOB_BOUND)
        assert time.monotonic() - started < 15
    assert spark_cluster.worker_pids == []
