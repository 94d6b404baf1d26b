"""Shared fixtures. Keep small: per-topic fixtures live in their test modules."""

import pytest


@pytest.fixture
def make_cluster():
    """Factory for :class:`parties.local_cluster.LocalCluster`; every cluster made is stopped after the test."""
    from parties.local_cluster import LocalCluster

    made = []

    def make(*args, **kwargs):
        c = LocalCluster(*args, **kwargs).start()
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
