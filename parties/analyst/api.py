"""The analyst's Python API: joint jobs on party daemons, or on a local cluster, without the CLI.

    from parties.analyst import AnalystConfig, HorizontalMining, mine, mine_local

    cfg = AnalystConfig.load("analyst/analyst.toml")      # [analyst] cert/key/ca, [parties.NAME] address
    res = mine(HorizontalMining(min_support="0.3", n_items=120), cfg)
    res = mine_local("mushroom.dat", VerticalMining(min_support="0.4"), parties=3)

A mining result (:class:`parties.analyst.result.MiningResult`) is the JSON object ``ppdm mine --json``
prints — ``transactions``, ``itemsets`` (``items``, ``count``), ``rules`` (``antecedent``,
``consequent``, ``support``, ``confidence``), ``protocol`` (mode, parties, phases, rounds, bytes per
party, what was revealed) and, with ε, ``dp`` — as a ``dict``, with DataFrame views by item name::

    res.itemsets   # items (tuple of names), length, support, support_fraction
    res.rules      # antecedent, consequent, support, support_fraction, confidence, lift
    res.raw        # the plain dict

:func:`run` starts any registered job and returns every party's reply.

Errors: :class:`AnalystError` for a config that cannot be used, :class:`JobParamError` for bad
parameters (both ``ValueError``), :class:`parties.identity.keyfiles.TLSError` for credentials
that cannot be read, :class:`parties.analyst.client.PartyError` when a party refuses or fails
(its message names the party).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from parties.analyst.params import HorizontalMining, VerticalMining
from parties.analyst.result import MiningResult

if TYPE_CHECKING:
    from parties.config import PeerInfo
    from parties.identity.tls import Credentials

__all__ = [
    "AnalystConfig",
    "AnalystError",
    "MiningResult",
    "mine",
    "mine_centralized",
    "mine_local",
    "mine_local_sources",
    "merge_replies",
    "run",
]


class AnalystError(ValueError):
    """An analyst config (or local input) that cannot be used: one line saying why."""


@dataclass(frozen=True)
class AnalystConfig:
    """Who the analyst is and which daemons a job runs on, in protocol order (``analyst.toml``)."""

    peers: tuple[PeerInfo, ...]
    creds: Credentials

    @classmethod
    def load(cls, path: str | os.PathLike) -> AnalystConfig:
        """Read ``[analyst] cert, key, ca`` and ``[parties.NAME] address`` (paths relative to the file)."""
        from parties.config import PeerInfo
        from parties.identity.tls import load_credentials

        p = Path(path)
        try:
            doc = tomllib.loads(p.read_text())
        except OSError as e:
            raise AnalystError(f"cannot read {p}: {e.strerror or e}") from None
        except tomllib.TOMLDecodeError as e:
            raise AnalystError(f"{p} is not valid TOML: {e}") from None
        a = doc.get("analyst")
        parties = doc.get("parties")
        if not isinstance(a, dict) or not all(isinstance(a.get(k), str) for k in ("cert", "key", "ca")):
            raise AnalystError(f"{p}: [analyst] needs cert, key and ca paths")
        if not isinstance(parties, dict) or len(parties) < 2:
            raise AnalystError(f"{p}: list at least two [parties.NAME] tables with an address")
        peers = []
        for name, t in parties.items():
            if not isinstance(t, dict) or not isinstance(t.get("address"), str):
                raise AnalystError(f'{p}: [parties.{name}] needs address = "HOST:PORT"')
            peers.append(PeerInfo(name=name, address=t["address"]))
        base = p.parent
        creds = load_credentials(base / a["cert"], base / a["key"], base / a["ca"])
        return cls(tuple(peers), creds)


def _config(parties: AnalystConfig | str | os.PathLike) -> AnalystConfig:
    return parties if isinstance(parties, AnalystConfig) else AnalystConfig.load(parties)


def run(
    job: str, params: Mapping[str, Any], parties: AnalystConfig | str | os.PathLike, *, timeout: float = 3600
) -> dict[str, dict[str, Any]]:
    """Start ``job`` with ``params`` on every party of ``parties``; each party's reply by name."""
    from parties.analyst.client import run_job, run_sync

    cfg = _config(parties)
    return run_sync(run_job(list(cfg.peers), job, dict(params), creds=cfg.creds, timeout=timeout))


def mine(
    params: HorizontalMining | VerticalMining, parties: AnalystConfig | str | os.PathLike, *, timeout: float = 3600
) -> MiningResult:
    """Joint mining on the daemons of ``parties``; each reads its own ``[data] transactions``."""
    job_params = params.to_params()  # before any connection: bad parameters cost nothing
    cfg = _config(parties)
    t0 = time.perf_counter()
    out = run(params.job, job_params, cfg, timeout=timeout)
    res = merge_replies(out, params.split, time.perf_counter() - t0)
    res.analyst = cfg.creds.name
    return res


def mine_centralized(
    db, min_support: str, min_confidence: str | None = None, names: list | None = None
) -> MiningResult:
    """Mine ``db`` (a :class:`anonymize.itemsets.TransactionDB`) in this process; the joint jobs' shape.

    ``names[i]`` names the item at position ``i`` of ``db.items`` (text or integers); without it
    the item ids are the names. ``db`` may also be baskets partitioned on an engine
    (:class:`anonymize.itemsets.partitioned.BasketPartitions`), mined by SON with its item names.
    """
    from anonymize.itemsets import association_rules, frequent_itemsets
    from parties.ratio import exact_ratio

    t0 = time.perf_counter()
    if hasattr(db, "mine_support"):  # baskets on Spark: SON's phase 1 in the pass that reads them
        fi = db.mine_support(exact_ratio(min_support, "min support"))
        names = db.item_names if names is None else names
    elif hasattr(db, "mine"):  # anonymize.itemsets.partitioned.BasketPartitions on an engine: SON
        from anonymize.itemsets.support import min_count_for

        fi = db.mine(min_count_for(exact_ratio(min_support, "min support"), db.n_transactions))
        names = db.item_names if names is None else names
    else:
        fi = frequent_itemsets(db, exact_ratio(min_support, "min support"))
    t1 = time.perf_counter()
    rules = association_rules(fi, exact_ratio(min_confidence, "min confidence")) if min_confidence is not None else None
    t2 = time.perf_counter()
    pos = {int(v): i for i, v in enumerate(db.items)} if names is not None else {}

    def named(items) -> list:
        return list(items) if names is None else [names[pos[int(x)]] for x in items]

    res = {
        "transactions": fi.n_transactions,
        "itemsets": [{"items": named(i), "count": int(c)} for i, c in fi],
        "rules": []
        if rules is None
        else [
            {
                "antecedent": named(r.antecedent),
                "consequent": named(r.consequent),
                "support": r.count,  # int and float already (AssociationRules columns .tolist())
                "confidence": r.confidence,
            }
            for r in rules
        ],
        "protocol": {
            "mode": "centralized",
            "phases_seconds": {"mine": round(t1 - t0, 6), "rules": round(t2 - t1, 6)},
            "rounds": 0,
            "bytes_sent": 0,
            "revealed": ["nothing leaves this process"],
        },
    }
    return MiningResult(res)


class _LogFollower(threading.Thread):
    """Print a local daemon's progress lines ("level k: ...") while a job runs."""

    def __init__(self, cluster, name: str):
        super().__init__(daemon=True)
        self.cluster, self.name_, self.stop = cluster, name, threading.Event()
        self.seen = len(cluster.log(name))

    def run(self) -> None:
        while not self.stop.wait(0.25):
            self.flush()

    def flush(self) -> None:
        text = self.cluster.log(self.name_)
        new, self.seen = text[self.seen :], len(text)
        for line in new.splitlines():
            if " level " in line:
                print("  " + line.split(" level ", 1)[1].join(["level ", ""]), file=sys.stderr, flush=True)


def mine_local(
    path: str | os.PathLike,
    params: HorizontalMining | VerticalMining,
    parties: int,
    *,
    progress: bool = True,
    timeout: float = 3600,
    link_shape: tuple[float, float | None] | None = None,
    announce: Callable[[str], None] | None = None,
) -> MiningResult:
    """Partition ``path`` into ``parties`` shares, start that many local daemons, mine jointly.

    For trying the protocols on one machine: the analyst holds the whole file here, so the
    daemons allow sessions of two parties. A horizontal job's item universe comes from the file;
    with ``dp`` each daemon gets a budget of exactly that ε for the analyst. ``progress`` prints
    the first daemon's per-level lines on stderr; ``link_shape`` ``(rtt_ms, mbit)`` emulates a WAN.
    """
    from parties.joint.partition import load_transactions, save_npz, split_horizontal, split_vertical, write_fimi

    if parties < 2:
        raise AnalystError("a local cluster needs at least 2 parties")
    db = load_transactions(path)
    split = params.split
    if split == "vertical" and db.items.size < parties:
        raise AnalystError(f"cannot split {db.items.size} items over {parties} parties vertically")
    if isinstance(params, HorizontalMining):
        params = params.with_items(int(db.items.max()) + 1 if db.items.size else 1)
    job_params = params.to_params()
    with tempfile.TemporaryDirectory(prefix="ppdm-mine-") as d:
        data = {}
        shares = split_horizontal(db, parties) if split == "horizontal" else split_vertical(db, parties)
        for i, share in enumerate(shares):
            if split == "horizontal" and (share.indptr[1:] > share.indptr[:-1]).all() and share.n_transactions:
                f = Path(d) / f"p{i}.dat"
                write_fimi(share, f)
            else:
                f = Path(d) / f"p{i}.npz"
                save_npz(share, f)
            data[f"p{i}"] = {"transactions": str(f)}
        if progress:
            print(
                f"starting {parties} party daemons on loopback (mTLS, fresh certificates); "
                f"{split} split of {db.n_transactions} transactions",
                file=sys.stderr,
                flush=True,
            )
        out, wall = _run_on_local_cluster(Path(d), parties, data, params, job_params, progress, timeout, link_shape)
    return _local_result(out, split, wall)


def _run_on_local_cluster(
    workdir: Path,
    parties: int,
    data: Mapping[str, Mapping[str, Any]],
    params: HorizontalMining | VerticalMining,
    job_params: Mapping[str, Any],
    progress: bool,
    timeout: float,
    link_shape: tuple[float, float | None] | None,
) -> tuple[dict[str, dict[str, Any]], float]:
    """Start ``parties`` local daemons with ``data``, run the mining job once: ``(replies, wall seconds)``.

    The analyst holds all the data here, so the parties' default minimum of 3 for sum-style jobs
    (parties.guards.policy) protects nobody: sessions of two parties are allowed. With ``dp`` each
    daemon gets a budget of exactly that ε for the analyst. ``progress`` prints the first daemon's
    per-level lines on stderr.
    """
    from parties.analyst.local_cluster import LocalCluster

    dp = getattr(params, "dp", None)
    budget = {"total_epsilon": dp.epsilon} if dp is not None else None
    with LocalCluster(
        parties, workdir=workdir / "cluster", data=data, link_shape=link_shape, policy={"min_parties": 2}, dp=budget
    ) as cluster:
        follower = _LogFollower(cluster, "p0") if progress else None
        if follower:
            follower.start()
        try:
            t0 = time.perf_counter()
            out = cluster.run_job(params.job, dict(job_params), timeout=timeout)
            return out, time.perf_counter() - t0
        finally:
            if follower:
                follower.stop.set()
                follower.join()
                follower.flush()


def mine_local_sources(
    sources: Sequence[Any],
    params: HorizontalMining | VerticalMining,
    *,
    progress: bool = True,
    timeout: float = 3600,
    link_shape: tuple[float, float | None] | None = None,
) -> MiningResult:
    """One local daemon per source (:class:`parties.sources.TableSource`), each reading its own table; mine.

    The newcomer's path: ``ppdm mine --local --split vertical bank.csv insurer.csv --transaction
    customer_id --item product``. Each daemon's ``[data]`` names its source as the job's data key;
    sessions of two parties are allowed (the analyst holds all the files here).
    """
    if len(sources) < 2:
        raise AnalystError("a local cluster needs at least 2 parties: give one data source per party")
    data = {f"p{i}": {params.data: src.to_table()} for i, src in enumerate(sources)}
    job_params = params.to_params()
    with tempfile.TemporaryDirectory(prefix="ppdm-mine-") as d:
        if progress:
            print(
                f"starting {len(sources)} party daemons on loopback (mTLS, fresh certificates); "
                f"{params.split} job, one data source each",
                file=sys.stderr,
                flush=True,
            )
        out, wall = _run_on_local_cluster(
            Path(d), len(sources), data, params, job_params, progress, timeout, link_shape
        )
    return _local_result(out, params.split, wall)


def _local_result(out: Mapping[str, dict[str, Any]], split: str, wall: float) -> MiningResult:
    """The merged result of a local cluster's run; its analyst is the cluster's analyst certificate."""
    from parties.analyst.local_cluster import ANALYST

    res = merge_replies(out, split, wall)
    res.analyst = ANALYST
    return res


def merge_replies(out: Mapping[str, dict[str, Any]], split: str, wall: float) -> MiningResult:
    """One result from the parties' replies: the reporting party's result, everyone's protocol stats (and,
    outside the JSON, each party's own job seconds: ``party_seconds``)."""
    reporter = next(v for v in out.values() if "itemsets" in v)
    proto = dict(reporter["protocol"])
    proto["mode"] = split
    proto["parties"] = list(out)
    proto["bytes_sent"] = {p: v["protocol"]["bytes_sent"] for p, v in out.items()}
    proto["bytes_total"] = sum(proto["bytes_sent"].values())
    proto["network_waits"] = {p: v.get("network", {}).get("waits", 0) for p, v in out.items()}
    proto["peak_rss_bytes"] = {p: v.get("peak_rss_bytes") for p, v in out.items()}  # each daemon, since its start
    proto["wall_seconds"] = round(wall, 6)
    seconds = {p: float(v["seconds"]) for p, v in out.items() if isinstance(v.get("seconds"), (int, float))}
    res = MiningResult(
        {
            "transactions": reporter["transactions"],
            "itemsets": reporter["itemsets"],
            "rules": reporter["rules"],
            "protocol": proto,
        },
        party_seconds=seconds,
    )
    if "dp" in reporter:
        res["dp"] = reporter["dp"]
    return res
