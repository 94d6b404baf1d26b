"""Shared fixtures. Keep small: per-topic fixtures live in their test modules.

Hypothesis profiles: by default every run draws fresh examples (keep exploring when you run the
tests by hand). ``PPDM_HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) derandomizes: every CI run
checks the same examples for a given Hypothesis version, so whether a change lands does not depend
on the draw; a failing example found anywhere is printed with its reproduction blob.
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("PPDM_HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["PPDM_HYPOTHESIS_PROFILE"])


@pytest.fixture
def make_cluster():
    """Factory for :class:`parties.analyst.local_cluster.LocalCluster`; every cluster made is stopped after the test."""
    from parties.analyst.local_cluster import LocalCluster

    made = []

    def make(*args, **kwargs):
        c = LocalCluster(*args, **kwargs).start()
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server on loopback for the whole test session (tests/pg_server.py); skips without one."""
    from pg_server import SKIP_REASON, PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        pytest.skip(SKIP_REASON)
    server = PostgresServer(bindir).start()
    yield server
    server.stop()


# Spark for the engine tests (tests/spark_env.py): a local[2] session and a standalone cluster; both skip
# with one line saying how to enable them when pyspark or a Java 17 runtime is missing
from spark_env import spark_cluster, spark_local  # noqa: E402,F401
