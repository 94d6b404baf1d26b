"""What a full-domain search returns: evaluated nodes, the chosen one, and how it is chosen."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ...errors import AnonymizeError

__all__ = ["METRICS", "NodeInfo", "SearchResult", "Completes", "choose", "metric_key", "node_cdm"]

METRICS = ("ncp", "dm", "cdm", "height", "suppressed", "avg-class-size", "loss")


@dataclass
class NodeInfo:
    """Outcome of evaluating one full-lattice node.

    ``ok`` — satisfies every model within the suppression budget; ``ok_monotone`` — satisfies the
    monotone part used for pruning (equal to ``ok`` when :attr:`Lattice.exact_monotone`);
    ``suppressed`` — rows in failing classes (of a failing node a search evaluated for its verdict
    only, possibly a lower bound: :meth:`Lattice.evaluate`'s ``exact_failing``); ``n_classes`` — released (non-suppressed) classes;
    ``dm`` — discernibility Σ|E|² + suppressed·n (Bayardo & Agrawal, "Data privacy through optimal
    k-anonymization", ICDE 2005); ``ncp`` — the information loss of :func:`.metrics.ncp` averaged
    over all QI cells, suppressed cells counting 1 (Jiang, Zeng, Ma, "Greedy clustering-anonymity
    method for privacy preservation of table data-publishing", Journal of Software 28(2), 2017,
    §2.2; categorical flavour ``Lattice.ncp_categorical``; with attribute weights their weighted
    mean over the QIs); ``loss`` — ARX's "Loss" (:func:`..metrics.loss.loss_geometric`: Iyengar's
    loss per QI, ARX's geometric-mean aggregate). DM, NCP and Loss are
    filled lazily (:meth:`Lattice.complete`) for the nodes a search returns.
    """

    levels: tuple
    ok: bool
    ok_monotone: bool
    suppressed: int
    n_classes: int = 0
    dm: float = float("nan")
    ncp: float = float("nan")
    loss: float = float("nan")
    _pending: object = field(default=None, repr=False, compare=False)

    @property
    def height(self) -> int:
        """Σ levels (Samarati's height of the node)."""
        return int(sum(self.levels))

    def as_dict(self) -> dict:
        """JSON-ready summary (levels, height, suppressed rows, classes, DM, NCP, Loss)."""
        return {
            "levels": list(map(int, self.levels)),
            "height": self.height,
            "suppressed": int(self.suppressed),
            "classes": int(self.n_classes),
            "dm": float(self.dm),
            "ncp": float(self.ncp),
            "loss": float(self.loss),
        }


@dataclass
class SearchResult:
    """Outcome of a full-domain search.

    ``nodes`` — the satisfying nodes the algorithm returns (Incognito / Flash: every minimal one;
    Samarati: every satisfying node at the lowest height; Datafly: its one node), each with metrics;
    ``chosen`` — the one picked by ``metric`` (:func:`metric_key`); ``stats`` — work counters
    (nodes evaluated, frequency-set rows scanned, lattice size, whether pruning was exact);
    ``nodes_kind`` — what ``nodes`` are, in words (for reports).
    """

    algorithm: str
    nodes: list
    chosen: NodeInfo
    metric: str
    stats: dict = field(default_factory=dict)
    nodes_kind: str = "every minimal satisfying node"

    @property
    def levels(self) -> tuple:
        """Levels of the chosen node."""
        return tuple(int(x) for x in self.chosen.levels)


class Completes(Protocol):
    """What :func:`choose` needs of a lattice (:class:`.engine.Lattice`): its number of rows and
    :meth:`~.engine.Lattice.complete`, which fills a node's metrics."""

    n: int

    def complete(self, info: NodeInfo) -> NodeInfo: ...


def choose(lat: Completes, infos: Sequence[NodeInfo], metric: str) -> NodeInfo:
    """Fill the metrics of ``infos`` (:meth:`Lattice.complete`) and return the node minimizing
    :func:`metric_key` (``infos`` must be non-empty)."""
    for i in infos:
        lat.complete(i)
    return min(infos, key=lambda i: metric_key(i, metric, lat.n))


def node_cdm(info: NodeInfo, n: int | None) -> float:
    """CDM of a node's release, Σ|E|² / N over its released classes (:func:`..metrics.cdm`, this
    project's reconstruction of Xu & Guo's CDM): DM without the suppressed rows' cost, per class."""
    if info.n_classes <= 0:
        return 0.0
    return (info.dm - info.suppressed * float(n or 0)) / info.n_classes


def metric_key(info: NodeInfo, metric: str = "ncp", n: int | None = None):
    """Sort key choosing among satisfying nodes: the named metric first, then NCP, DM, height,
    then the level vector (so the choice is deterministic). ``metric`` ∈ :data:`METRICS`."""
    if metric not in METRICS:
        raise AnonymizeError(f"unknown metric '{metric}' (use {', '.join(METRICS)})")
    if metric == "ncp":
        first = info.ncp
    elif metric == "dm":
        first = info.dm
    elif metric == "cdm":
        first = node_cdm(info, n)
    elif metric == "height":
        first = info.height
    elif metric == "suppressed":
        first = info.suppressed
    elif metric == "loss":
        first = info.loss
    else:
        first = ((n or 0) - info.suppressed) / max(info.n_classes, 1)
    return (first, round(info.ncp, 12), info.dm, info.height, tuple(info.levels))
