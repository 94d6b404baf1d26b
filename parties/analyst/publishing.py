"""The analyst's side of joint publishing: parameters, the run on daemons or a local cluster, the release.

    from parties.analyst.publishing import JointPublishing, publish, publish_local

    params = JointPublishing(qi=("age", "sex"), hierarchies=hs, sensitive="salary-class", k=5, l=2,
                             max_suppression=0.05)
    res = publish(params, "analyst/analyst.toml")          # each party reads its [data] table
    res = publish_local(df, params, parties=3)             # rows in turn over 3 local daemons
    res.release                                            # the rows, in random order, no party label
    res.report                                             # node, metrics, protocol, what was revealed

The parties return the release as additive shares of its counts (:mod:`parties.joint.publishing`);
it is assembled here, on the analyst's side, and nowhere else.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonymize.publish.hierarchy import Hierarchy

__all__ = ["JointPublishing", "PublishResult", "publish", "publish_local", "split_rows", "SPLITS"]

COMPUTE_ONLY = "helper"
"""Name of the compute-only daemon ``publish_local`` adds to two data parties."""

SPLITS = ("horizontal", "vertical")
"""Partitionings joint publishing runs on."""
ALIGN_MODES = ("private-id", "psi")
ALGORITHMS = ("flash", "incognito", "samarati", "mondrian")
"""Joint publishing's algorithms: the optimal full-domain search (flash, incognito and samarati find the
same satisfying nodes: one joint search serves the three) and, horizontally, strict Mondrian."""
"""How vertical publishing aligns keyed rows (``key``): Private-ID (the union, presence hidden) or PSI."""


@dataclass(frozen=True)
class JointPublishing:
    """The public parameters of ``publish.horizontal`` or ``publish.vertical`` (``split``; see
    :mod:`parties.jobs.publishing`). Vertical only: ``key`` (align by this column, privately),
    ``align`` (``private-id`` or ``psi``), ``owners`` (``{column: party}`` for a column several hold)."""

    qi: tuple[str, ...]
    hierarchies: Mapping[str, Hierarchy]
    sensitive: str | None = None
    k: int = 2
    l: int | None = None
    max_suppression: float = 0.0
    suppressed_rows: str = "star"
    metric: str = "dm"
    sensitive_values: tuple[str, ...] | None = None
    data: str = "table"
    ncp_categorical: str = "height"
    weights: Mapping[str, float] | None = None
    split: str = "horizontal"
    compute_only: tuple[str, ...] = ()
    key: str | None = None
    align: str = "private-id"
    owners: Mapping[str, str] | None = None
    algorithm: str = "flash"

    @property
    def job(self) -> str:
        return f"publish.{self.split}"

    def check(self) -> None:
        """One-line ``ValueError`` for parameters no party would accept."""
        if self.split not in SPLITS:
            raise ValueError(f"joint publishing runs on --split {' or '.join(SPLITS)}")
        if self.split == "horizontal" and (self.key is not None or self.owners):
            raise ValueError("a key column and column owners belong to --split vertical")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"joint publishing runs {', '.join(ALGORITHMS)}, not '{self.algorithm}'")
        if self.algorithm == "mondrian" and self.split != "horizontal":
            raise ValueError(
                "joint Mondrian runs on --split horizontal (vertical publishing runs the full-domain search)"
            )
        if self.align not in ALIGN_MODES:
            raise ValueError(f"--align is one of {', '.join(ALIGN_MODES)}")
        if self.key is not None and self.key in (*self.qi, self.sensitive):
            raise ValueError(f"the key column '{self.key}' cannot be a quasi-identifier or the sensitive column")
        missing = [c for c in self.qi if c not in self.hierarchies]
        if missing:
            raise ValueError(f"joint publishing needs a hierarchy for every quasi-identifier (none for {missing[0]})")
        self.spec().check()

    def spec(self):
        """The protocol's view of these parameters (:class:`parties.joint.publishing.JointPublishSpec`)."""
        from parties.joint.publishing import JointPublishSpec

        return JointPublishSpec(
            tuple(self.qi),
            self.sensitive,
            self.k,
            self.l,
            self.max_suppression,
            self.suppressed_rows,
            self.metric,
            self.sensitive_values,
            self.ncp_categorical,
            self._weight_vector(),
        )

    def _weight_vector(self) -> tuple[float, ...] | None:
        from anonymize.errors import AnonymizeError
        from anonymize.publish.metrics.loss import attribute_weights

        try:
            w = attribute_weights(self.qi, self.weights)
        except AnonymizeError as e:
            raise ValueError(str(e)) from None
        return None if w is None else tuple(float(x) for x in w)

    def to_params(self) -> dict[str, Any]:
        self.check()
        return {
            "qi": list(self.qi),
            "hierarchies": {c: self.hierarchies[c].to_rows() for c in self.qi},
            "sensitive": self.sensitive,
            "sensitive_values": None if self.sensitive_values is None else list(self.sensitive_values),
            "k": int(self.k),
            "l": None if self.l is None else int(self.l),
            "max_suppression": float(self.max_suppression),
            "suppressed_rows": self.suppressed_rows,
            "metric": self.metric,
            "ncp_categorical": self.ncp_categorical,
            "weights": None if self.weights is None else {c: float(w) for c, w in self.weights.items()},
            "data": self.data,
            "compute_only": list(self.compute_only),
            # sent only for Mondrian: the full-domain searches' parameters (and a party's record of the
            # releases it joined, parties.guards.releases) stay what they were before Mondrian existed
            **({"algorithm": self.algorithm} if self.algorithm == "mondrian" else {}),
            **(
                {"key": self.key, "align": self.align, "owners": dict(self.owners or {})}
                if self.split == "vertical"
                else {}
            ),
        }


@dataclass
class PublishResult:
    """A joint release: ``release`` (rows in random order), ``levels`` (QI → level), ``report``."""

    release: pd.DataFrame
    levels: dict[str, int]
    report: dict[str, Any] = field(default_factory=dict)


def split_rows(df: pd.DataFrame, parties: int) -> list[pd.DataFrame]:
    """Rows in turn over ``parties`` parties (row i to party i mod N), as ``ppdm anonymize --local``."""
    if parties < 1:
        raise ValueError("need at least one party")
    return [df.iloc[i::parties].reset_index(drop=True) for i in range(parties)]


def assemble(params: JointPublishing, replies: Mapping[str, dict[str, Any]], wall: float) -> PublishResult:
    """The release and report from every party's reply (the computing parties' shares added)."""
    from anonymize.dp.randomness import RandomSource
    from anonymize.publish.fulldomain.cells import release_from_counts
    from parties.joint.publishing import combine_release

    if params.split == "vertical":
        return _assemble_vertical(params, replies, wall)
    if params.algorithm == "mondrian":
        return _assemble_mondrian(params, replies, wall)
    shares = [v["share"] for v in replies.values() if "share" in v]
    first = next(iter(replies.values()))
    levels = [int(x) for x in first["levels"]]
    if any([int(x) for x in v["levels"]] != levels for v in replies.values()):
        raise ValueError("the parties disagree on the chosen node")
    kept, sup = combine_release(shares)
    n = int(first["n"])
    if int(kept.sum()) + int(sup.sum()) != n or (kept < 0).any() or (sup < 0).any():
        # shares that do not add up to n rows: a party's share is wrong (or was altered); write nothing
        raise ValueError(f"the parties' release shares do not add up to the {n:,} rows: no release written")
    hs = [params.hierarchies[c] for c in params.qi]
    df = release_from_counts(
        hs,
        levels,
        kept,
        sup,
        sensitive=params.sensitive,
        sens_values=first.get("sensitive_values") or (),
        suppressed_rows=params.suppressed_rows,
    )
    df = df.iloc[RandomSource().permutation(len(df))].reset_index(drop=True)
    suppressed = int(sup.sum())
    counts = (
        kept.reshape(-1, max(1, len(first.get("sensitive_values") or []))).sum(axis=1) if params.sensitive else kept
    )
    sizes = counts[counts > 0]
    dm = float((sizes.astype(float) ** 2).sum() + suppressed * n)
    ncp = _ncp(hs, levels, counts, suppressed, n, params.ncp_categorical, params.spec().ncp_multipliers())
    achieved = _measure(df, list(params.qi), params.sensitive)
    report = {
        "algorithm": "flash (joint, horizontal)",
        "levels": dict(zip(params.qi, levels)),
        "parameters": {k: v for k, v in params.to_params().items() if k != "hierarchies"},
        "metrics": _metrics(n, suppressed, len(df), sizes, dm, ncp),
        "achieved": achieved,
        "protocol": _horizontal_protocol(params, replies, wall),
    }
    return PublishResult(df, dict(zip(params.qi, levels)), report)


def _assemble_vertical(params: JointPublishing, replies: Mapping[str, dict[str, Any]], wall: float) -> PublishResult:
    """The vertical release: the helper's ciphertexts decrypted with each data party's keys
    (:func:`parties.joint.publishing_vertical.decrypt_release`), shuffled, measured."""
    from anonymize.dp.randomness import RandomSource
    from anonymize.publish.metrics.cells import hierarchy_loss_tables
    from parties.joint.publishing_vertical import VerticalLayout, decrypt_release

    helper = next((p for p, v in replies.items() if "release" in v), None)
    if helper is None:
        raise ValueError("no party returned the release (the helper's reply is missing)")
    first = replies[helper]
    levels = [int(x) for x in first["levels"]]
    if any([int(x) for x in v["levels"]] != levels for v in replies.values()):
        raise ValueError("the parties disagree on the chosen node")
    lay = first["layout"]
    layout = VerticalLayout(tuple(lay["owners"][c] for c in params.qi), lay.get("sensitive"), lay["helper"])
    hs = [params.hierarchies[c] for c in params.qi]
    spec = params.spec()
    df, codes = decrypt_release(hs, spec, layout, dict(replies))
    n = int(first["n"])
    kept = len(codes)
    suppressed = n - kept
    if kept + (suppressed if params.suppressed_rows != "drop" else 0) != len(df) or suppressed < 0:
        raise ValueError(f"the release does not account for the {n:,} rows of the joined table: no release written")
    df = df.iloc[RandomSource().permutation(len(df))].reset_index(drop=True)
    sizes = np.unique(codes, axis=0, return_counts=True)[1] if kept else np.zeros(0, np.int64)
    dm = float((sizes.astype(float) ** 2).sum() + suppressed * n)
    mult = spec.ncp_multipliers()
    tables = hierarchy_loss_tables(hs, params.ncp_categorical)
    loss = sum(float(mult[j]) * tables[j][levels[j]][codes[:, j]].sum() for j in range(len(hs))) if kept else 0.0
    ncp = float((loss + suppressed * float(mult.sum())) / (n * float(mult.sum()))) if n else 0.0
    achieved = _measure(df, list(params.qi), params.sensitive)
    data_parties = [p for p in replies if p != layout.helper]
    report = {
        "algorithm": "flash (joint, vertical)",
        "levels": dict(zip(params.qi, levels)),
        "parameters": {k: v for k, v in params.to_params().items() if k != "hierarchies"},
        "metrics": _metrics(n, suppressed, len(df), sizes, dm, ncp),
        "achieved": achieved,
        "protocol": {
            "mode": "vertical",
            "parties": list(replies),
            "data_parties": data_parties,
            "helper": layout.helper,
            "columns": dict(lay["owners"], **({params.sensitive: lay["sensitive"]} if params.sensitive else {})),
            "stats": first.get("stats", {}),
            "revealed": _vertical_revealed(replies, layout.helper),
            "bytes_sent": {p: v.get("bytes_sent") for p, v in replies.items()},
            "party_seconds": {p: v.get("seconds") for p, v in replies.items()},
            "wall_seconds": round(wall, 6),
        },
    }
    return PublishResult(df, dict(zip(params.qi, levels)), report)


def _assemble_mondrian(params: JointPublishing, replies: Mapping[str, dict[str, Any]], wall: float) -> PublishResult:
    """Joint Mondrian's release: the public class boxes labelled as the local release labels them
    (:func:`parties.joint.publishing_mondrian.mondrian_release`), the rows per (class, sensitive value)
    from the computing parties' shares; shuffled and measured."""
    from anonymize.dp.randomness import RandomSource
    from anonymize.publish.metrics.cells import cell_loss, hierarchy_domain
    from anonymize.publish.metrics.loss import weighted_mean
    from parties.joint.publishing import combine_release
    from parties.joint.publishing_mondrian import mondrian_release

    shares = [v["share"] for v in replies.values() if "share" in v]
    first = next(iter(replies.values()))
    classes = first["classes"]
    if any(v.get("classes") != classes for v in replies.values()):
        raise ValueError("the parties disagree on the partition")
    hs = [params.hierarchies[c] for c in params.qi]
    _check_boxes(classes, hs)
    counts, _ = combine_release(shares)
    n = int(first["n"])
    values = first.get("sensitive_values") or []
    per = max(len(values), 1) if params.sensitive else 1
    if len(counts) != len(classes) * per or int(counts.sum()) != n or (counts < 0).any():
        raise ValueError(f"the parties' release shares do not add up to the {n:,} rows: no release written")
    df = mondrian_release(hs, params.qi, classes, counts, params.sensitive, values)
    df = df.iloc[RandomSource().permutation(len(df))].reset_index(drop=True)
    sizes = counts.reshape(len(classes), per).sum(axis=1)
    if (sizes <= 0).any():
        raise ValueError("a class of the parties' partition holds no row: no release written")
    dm = float((sizes.astype(float) ** 2).sum())
    # NCP as the local report measures it (metrics.ncp: the hierarchies' numeric domains), per QI the
    # mean loss of the released cells, then their (weighted) mean
    per_qi = []
    for j, h in enumerate(hs):
        lo = np.array([c["lo"][j] for c in classes], dtype=np.int64)
        hi = np.array([c["hi"][j] for c in classes], dtype=np.int64)
        loss = cell_loss(h, lo, hi, hierarchy_domain(h) if h.numeric else None, params.ncp_categorical)
        per_qi.append(float(np.dot(loss, sizes)) / n)
    w = params.spec().weights
    ncp = float(weighted_mean(np.asarray(per_qi), None if w is None else np.asarray(w)))
    report = {
        "algorithm": "mondrian (joint, horizontal, strict)",
        "parameters": {k: v for k, v in params.to_params().items() if k != "hierarchies"},
        "metrics": _metrics(n, 0, len(df), sizes, dm, ncp),
        "achieved": _measure(df, list(params.qi), params.sensitive),
        "protocol": _horizontal_protocol(params, replies, wall),
    }
    return PublishResult(df, {}, report)


def _horizontal_protocol(params: JointPublishing, replies: Mapping[str, dict[str, Any]], wall: float) -> dict[str, Any]:
    """The report's ``protocol`` of a horizontal joint release (full-domain or Mondrian): the parties,
    the first three computing, the first reply's stats and revealed lines, bytes and seconds."""
    first = next(iter(replies.values()))
    return {
        "mode": "horizontal",
        "parties": list(replies),
        "computing_parties": list(replies)[:3],
        "compute_only": list(params.compute_only),
        "stats": first.get("stats", {}),
        "revealed": first.get("revealed", []),
        "bytes_sent": {p: v.get("bytes_sent") for p, v in replies.items()},
        "party_seconds": {p: v.get("seconds") for p, v in replies.items()},
        "wall_seconds": round(wall, 6),
    }


def _check_boxes(classes: Any, hs: Sequence[Hierarchy]) -> None:
    """Every class box of a joint Mondrian reply names leaves and nodes of the public hierarchies (a
    ``ValueError`` — no release written — for anything else, never a traceback)."""
    q = len(hs)
    bad = ValueError("the parties returned a malformed partition: no release written")
    if not isinstance(classes, list) or not classes:
        raise bad
    for c in classes:
        if not isinstance(c, dict) or any(
            not isinstance(c.get(f), list) or len(c[f]) != q or not all(isinstance(x, int) for x in c[f])
            for f in ("lo", "hi", "level", "node")
        ):
            raise bad
        for j, h in enumerate(hs):
            lo, hi, lev, node = c["lo"][j], c["hi"][j], c["level"][j], c["node"][j]
            if not 0 <= lo <= hi < h.n_leaves:
                raise bad
            if not h.numeric and not (0 <= lev <= h.height and 0 <= node < h.n_nodes(lev)):
                raise bad


def _metrics(n: int, suppressed: int, released: int, sizes: np.ndarray, dm: float, ncp: float) -> dict[str, Any]:
    """The report's ``metrics`` of a joint release (``sizes``: its kept classes' sizes)."""
    return {
        "rows": n,
        "suppressed_rows": suppressed,
        "released_rows": int(released),
        "classes": int(len(sizes)),
        "min_class_size": int(sizes.min()) if len(sizes) else 0,
        "dm": dm,
        "ncp": ncp,
    }


def _vertical_revealed(replies: Mapping[str, dict[str, Any]], helper: str) -> list[str]:
    """The data parties' lines (alignment first) and the helper's, each once, in order."""
    out: list[str] = []
    for p in [*[q for q in replies if q != helper], helper]:
        for line in replies[p].get("revealed", []):
            if line not in out:
                out.append(line)
    return out


def _ncp(
    hs: Sequence[Hierarchy],
    levels: Sequence[int],
    counts: np.ndarray,
    suppressed: int,
    n: int,
    flavour: str,
    mult: np.ndarray,
) -> float:
    """The release's NCP as the pooled search computes it (mean loss over the QI cells, suppressed
    cells 1; :class:`anonymize.publish.fulldomain.node_metrics.NodeMetrics`), from the kept counts per
    cell and the public loss tables of the hierarchies."""
    from anonymize.publish.metrics.cells import cell_losses_of_node, hierarchy_loss_tables

    if not hs or n == 0:
        return 0.0
    w = cell_losses_of_node(hierarchy_loss_tables(hs, flavour), levels, mult)
    m = float(mult.sum())
    return float((np.dot(counts.astype(np.float64), w) + suppressed * m) / (n * m))


def _measure(df: pd.DataFrame, qis: list[str], sensitive: str | None) -> dict[str, Any]:
    """k and distinct l re-measured on the release as written (its '*' rows are one class, as a
    reader grouping the file sees them)."""
    if len(df) == 0:
        return {"k": None, "l": None}
    groups = df.groupby(qis, sort=False, dropna=False)
    out: dict[str, Any] = {"k": int(groups.size().min())}
    out["l"] = int(groups[sensitive].nunique().min()) if sensitive else None
    return out


def publish(params: JointPublishing, parties: Any, *, timeout: float = 3600) -> PublishResult:
    """Joint publishing on the daemons of ``parties`` (an :class:`parties.analyst.api.AnalystConfig`
    or its TOML path); each party reads its own ``[data] <params.data>``."""
    from parties.analyst.api import run

    job_params = params.to_params()
    t0 = time.perf_counter()
    out = run(params.job, job_params, parties, timeout=timeout)
    return assemble(params, out, time.perf_counter() - t0)


def publish_local(
    table: pd.DataFrame | str | os.PathLike,
    params: JointPublishing,
    parties: int,
    *,
    timeout: float = 3600,
    link_shape: tuple[float, float | None] | None = None,
    progress: bool = True,
    runs: int = 1,
) -> PublishResult:
    """Split ``table`` over ``parties`` local daemons (fresh certificates, mTLS on loopback) and
    publish jointly: rows in turn (horizontal), or the QIs in turn with the sensitive column at the
    last party and a compute-only helper added (vertical, :func:`split_columns`). The analyst holds
    the whole table here: for trying the protocol.

    ``runs`` — run the job that many times on the same daemons (benchmarks) and return the last
    release; the report's ``protocol.wall_seconds_runs`` lists every run's time. The first job of a
    fresh daemon also loads the publishing code (about 0.3 s); later ones are what a long-running
    daemon costs."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    import sys

    from anonymize.publish.io import read_table
    from parties.analyst.local_cluster import LocalCluster

    if parties < 2:
        raise ValueError("joint publishing needs at least 2 parties that hold rows")
    df = table if isinstance(table, pd.DataFrame) else read_table(table)
    cols = list(pooled_columns(params))
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"the table has no column '{missing[0]}'")
    names = [f"p{i}" for i in range(parties)]
    vertical = params.split == "vertical"
    if parties == 2 or vertical:  # a third daemon that holds no rows only computes (the vertical helper)
        names.append(COMPUTE_ONLY)
        params = dataclasses.replace(params, compute_only=(COMPUTE_ONLY,))
    if vertical and params.key is not None and params.key not in df.columns:
        raise ValueError(f"the table has no key column '{params.key}'")
    job_params = params.to_params()
    parts = split_columns(df, params, parties) if vertical else split_rows(df[cols], parties)
    with tempfile.TemporaryDirectory(prefix="ppdm-publish-") as d:
        data = {}
        for i, part in enumerate(parts):
            f = Path(d) / f"p{i}.csv"
            part.to_csv(f, index=False, sep=";")
            data[f"p{i}"] = {params.data: str(f)}
        if progress:
            extra = f" and a compute-only party ({COMPUTE_ONLY}, no rows)" if COMPUTE_ONLY in names else ""
            how = "its columns in turn" if vertical else f"rows of {len(df):,} in turn"
            print(
                f"starting {parties} party daemons{extra} on loopback (mTLS, fresh certificates); {how}",
                file=sys.stderr,
                flush=True,
            )
        with LocalCluster(
            names, workdir=Path(d) / "cluster", data=data, link_shape=link_shape, policy={"min_parties": 3}
        ) as cluster:
            walls = []
            for _ in range(runs):
                t0 = time.perf_counter()
                out = cluster.run_job(params.job, dict(job_params), timeout=timeout)
                walls.append(time.perf_counter() - t0)
    res = assemble(params, out, walls[-1])
    if runs > 1:
        res.report["protocol"]["wall_seconds_runs"] = [round(w, 6) for w in walls]
    return res


def split_columns(df: pd.DataFrame, params: JointPublishing, parties: int) -> list[pd.DataFrame]:
    """The QIs in turn over ``parties`` parties (QI j to party j mod N), the sensitive column with the
    last party, and the key column (if any) at every party — as ``ppdm anonymize --local N --split
    vertical``. Rows keep their order (aligned by position without a key)."""
    if parties < 2:
        raise ValueError("vertical joint publishing needs at least 2 parties that hold columns")
    if parties > len(params.qi) + (1 if params.sensitive else 0):
        raise ValueError(f"{parties} parties but only {len(params.qi)} quasi-identifiers to split among them")
    own: list[list[str]] = [[] for _ in range(parties)]
    for j, c in enumerate(params.qi):
        own[j % parties].append(c)
    if params.sensitive:
        own[-1].append(params.sensitive)
    if any(not o for o in own):
        raise ValueError(f"{parties} parties but too few columns to give each one")
    key = [params.key] if params.key else []
    return [df[key + o].reset_index(drop=True) for o in own]


def pooled_columns(params: JointPublishing) -> Sequence[str]:
    """The columns a joint release has (QIs, then the sensitive column)."""
    return [*params.qi, *([params.sensitive] if params.sensitive else [])]
