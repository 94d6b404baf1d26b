"""The analyst's side: typed job parameters, joint jobs on party daemons or a local cluster.

The public API (the ``ppdm mine`` command is built on it)::

    from parties.analyst import AnalystConfig, HorizontalMining, VerticalMining, DPOptions
    from parties.analyst import mine, mine_local, mine_centralized, run

* :mod:`.params` — one frozen dataclass per job kind, validated once, serialized once;
* :mod:`.api` — :class:`AnalystConfig` (``analyst.toml``), :func:`mine` on daemons,
  :func:`mine_local` on a fresh local cluster, :func:`mine_centralized`, :func:`run` (any job);
* :mod:`.client` — ``StartJob`` on every party of a session over mTLS, results gathered;
* :mod:`.local_cluster` — a CA and N real daemons on loopback, for demos, tests and benchmarks.

Importing this package imports neither gRPC nor pandas; they load when a job starts.
"""

from parties.analyst.api import (
    AnalystConfig,
    AnalystError,
    MiningResult,
    merge_replies,
    mine,
    mine_centralized,
    mine_local,
    mine_local_sources,
    run,
)
from parties.analyst.params import (
    DPOptions,
    HorizontalMining,
    JobParamError,
    MiningParams,
    VerticalMining,
    check_threshold,
)

__all__ = [
    "AnalystConfig",
    "AnalystError",
    "DPOptions",
    "HorizontalMining",
    "JobParamError",
    "MiningParams",
    "MiningResult",
    "VerticalMining",
    "check_threshold",
    "merge_replies",
    "mine",
    "mine_centralized",
    "mine_local",
    "mine_local_sources",
    "run",
]
