"""The analyst's side: typed job parameters, joint jobs on party daemons or a local cluster.

The public API (the ``ppdm mine`` command is built on it)::

    from parties.analyst import AnalystConfig, HorizontalMining, VerticalMining, DPOptions
    from parties.analyst import mine, mine_local, mine_centralized, run
    from parties.analyst import itemsets_frame, rules_frame, write_result, noise_warning, mining_page

* :mod:`.params` — one frozen dataclass per job kind, validated once, serialized once;
* :mod:`.api` — :class:`AnalystConfig` (``analyst.toml``), :func:`mine` on daemons,
  :func:`mine_local` on a fresh local cluster, :func:`mine_centralized`, :func:`run` (any job);
* :mod:`.result` — :class:`MiningResult`: the ``--json`` object (a ``dict``) with ``.itemsets`` and
  ``.rules`` as DataFrames of item names and ``.raw``; :func:`itemsets_frame`, :func:`rules_frame`
  of any result dict; :func:`write_result` (CSV, Parquet or JSON by extension, atomically);
* :mod:`.noise` — :func:`noise_warning` / :func:`noise_advice`: whether an ε-DP result's count noise
  exceeds its support threshold, and the ε to try;
* :mod:`.report` — :func:`mining_page`, the HTML report of a mining run;
* :mod:`.client` — ``StartJob`` on every party of a session over mTLS, results gathered;
* :mod:`.local_cluster` — a CA and N real daemons on loopback, for demos, tests and benchmarks.

Importing this package imports neither gRPC nor pandas; they load when a job starts.
"""

from parties.analyst.api import (
    AnalystConfig,
    AnalystError,
    merge_replies,
    mine,
    mine_centralized,
    mine_local,
    mine_local_sources,
    run,
)
from parties.analyst.noise import NoiseAdvice, noise_advice, noise_warning
from parties.analyst.params import (
    DPOptions,
    HorizontalMining,
    JobParamError,
    MiningParams,
    VerticalMining,
    check_threshold,
)
from parties.analyst.report import mining_page
from parties.analyst.result import MiningResult, itemsets_frame, result_table, rules_frame, write_result

__all__ = [
    "AnalystConfig",
    "AnalystError",
    "DPOptions",
    "HorizontalMining",
    "JobParamError",
    "MiningParams",
    "MiningResult",
    "NoiseAdvice",
    "VerticalMining",
    "check_threshold",
    "itemsets_frame",
    "merge_replies",
    "mine",
    "mine_centralized",
    "mine_local",
    "mine_local_sources",
    "mining_page",
    "noise_advice",
    "noise_warning",
    "result_table",
    "rules_frame",
    "run",
    "write_result",
]
