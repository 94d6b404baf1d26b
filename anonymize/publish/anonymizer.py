"""One entry point for publishing: :func:`anonymize_table`.

Pick an algorithm, privacy models and a suppression budget; get the released table, the chosen
generalization, every metric and the timings (what ``ppdm anonymize`` writes as its report).

Algorithms (see each module for the paper and the details):

* ``samarati`` — binary search over lattice height (:mod:`.samarati`, seed 000 §20.3.1.1);
* ``incognito`` — every minimal full-domain node, subset-closure pruning and frequency-set
  roll-up (:mod:`.incognito`, §20.3.1.2);
* ``flash`` — the same minimal nodes by binary search on paths (:mod:`.flash`, Kohlmayer et al.
  2012; ARX's search), much faster on large lattices;
* ``datafly`` — Sweeney's greedy heuristic (:mod:`.datafly`);
* ``mondrian`` — multidimensional partitioning, strict or relaxed (:mod:`.mondrian`, §20.3.1.3).

Full-domain results suppress the rows of classes that fail a model (at most
``⌊max_suppression·n⌋``); Mondrian never suppresses. The full-domain searches return several
satisfying nodes; one is chosen by ``metric`` (:data:`.lattice.METRICS`, default NCP) and all are
listed in the report.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import AnonymizeError
from . import metrics as M
from .hierarchy import Hierarchy
from .lattice import METRICS, Lattice, SearchResult
from .models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    class_entropy,
    class_stats,
    sorted_desc,
    t_distances,
)
from .recode import release_levels, release_partition
from .table import EncodedTable, Schema

__all__ = ["ALGORITHMS", "AnonymizationResult", "anonymize_table", "build_models", "achieved_privacy", "auto_queries"]

ALGORITHMS = ("samarati", "incognito", "flash", "datafly", "mondrian")


@dataclass
class AnonymizationResult:
    """What :func:`anonymize_table` returns.

    ``df`` — the release; ``levels`` — chosen full-domain levels per QI (None for Mondrian);
    ``suppressed_mask`` — rows suppressed (``*`` everywhere); ``class_id`` — equivalence class of
    every input row; ``metrics`` / ``timings`` / ``report`` — JSON-ready dicts; ``search`` — the
    full-domain :class:`.lattice.SearchResult` (None for Mondrian).
    """

    df: pd.DataFrame
    levels: dict | None
    suppressed_mask: np.ndarray
    metrics: dict
    timings: dict
    report: dict
    class_id: np.ndarray | None = None
    search: SearchResult | None = None
    table: EncodedTable | None = field(default=None, repr=False)


def build_models(
    k: int | None = None,
    l: float | None = None,
    l_variant: str = "distinct",
    c: float | None = None,
    t: float | None = None,
    t_distance: str = "emd",
    t_ground: str | None = None,
) -> list[PrivacyModel]:
    """Privacy models from the CLI-style parameters: k-anonymity (``k``), l-diversity (``l`` with
    ``l_variant`` distinct | entropy | recursive, the latter needing ``c``), t-closeness (``t`` with
    ``t_distance`` emd | variational | kl and an optional EMD ground distance)."""
    models: list[PrivacyModel] = []
    if k is not None:
        models.append(KAnonymity(k))
    if l is not None:
        if l_variant == "distinct":
            if int(l) != l:
                raise AnonymizeError(f"distinct l-diversity needs an integer l, got {l}")
            models.append(DistinctLDiversity(int(l)))
        elif l_variant == "entropy":
            models.append(EntropyLDiversity(l))
        elif l_variant == "recursive":
            if c is None:
                raise AnonymizeError("recursive (c,l)-diversity needs --c")
            if int(l) != l:
                raise AnonymizeError(f"recursive (c,l)-diversity needs an integer l, got {l}")
            models.append(RecursiveCLDiversity(c, int(l)))
        else:
            raise AnonymizeError(f"unknown l-diversity variant '{l_variant}' (use distinct, entropy or recursive)")
    elif c is not None:
        raise AnonymizeError("--c is the c of recursive (c,l)-diversity: give --l and --l-variant recursive too")
    if t is not None:
        models.append(TCloseness(t, distance=t_distance, ground=t_ground))
    if not models:
        raise AnonymizeError("no privacy model given: set k (and optionally l, t)")
    return models


def auto_queries(n: int) -> int:
    """Default number of random COUNT queries for the query-error metric: 200 at every size
    (:func:`.metrics.query_error` evaluates them per released class and per distinct original row,
    64 queries per pass, so 200 queries on 1 M rows take well under a second)."""
    return 200


def _encode(table_or_df, schema, hierarchies) -> EncodedTable:
    if isinstance(table_or_df, EncodedTable):
        return table_or_df
    if not isinstance(table_or_df, pd.DataFrame):
        raise AnonymizeError("expected a pandas DataFrame or an EncodedTable")
    if schema is None:
        raise AnonymizeError("a Schema (quasi-identifiers, sensitive attributes) is needed to anonymize a DataFrame")
    return EncodedTable.encode(table_or_df, schema, dict(hierarchies or {}))


def achieved_privacy(table: EncodedTable, class_id: np.ndarray, n_classes: int, suppressed: np.ndarray) -> dict:
    """Privacy the release actually offers, measured on its released (non-suppressed) classes:
    k (smallest class); per sensitive attribute distinct l, entropy l = exp(min class entropy)
    (eq. 20.10), the recursive-(c,l) bound c (eq. 20.11: every class is (c, l)-diverse for c above
    it, at l = distinct l) and t for each distance (eq. 20.13, 20.14, EMD), against the whole
    table's distribution."""
    keep = ~np.asarray(suppressed, dtype=bool)
    stats = class_stats(table, class_id, n_classes, rows=keep)
    live = stats.sizes > 0
    stats = stats.select(live)
    out = {"k": int(stats.sizes.min()) if stats.n_classes else 0, "classes": int(stats.n_classes)}
    sens = {}
    for j, name in enumerate(table.schema.sensitive):
        hist = stats.sens_hist[j]
        if len(hist) == 0:
            continue
        distinct = (hist > 0).sum(axis=1)
        ld = int(distinct.min())
        r = sorted_desc(hist)
        tail = r[:, ld - 1 :].sum(axis=1)
        numeric = np.issubdtype(np.asarray(table.sens_values[j]).dtype, np.number)
        t = {
            "variational": float(t_distances(stats, j, "variational").max()),
            "kl": float(t_distances(stats, j, "kl").max()),
            "emd_equal": float(t_distances(stats, j, "emd", "equal").max()),
            "emd_ordered": float(t_distances(stats, j, "emd", "ordered").max()),
        }
        if name in table.sens_hierarchies:
            t["emd_hierarchical"] = float(t_distances(stats, j, "emd", "hierarchical").max())
        t["emd"] = t["emd_ordered"] if numeric else t["emd_equal"]
        sens[name] = {
            "l_distinct": ld,
            "l_entropy": float(math.exp(class_entropy(hist).min())),
            "recursive_c_bound": float((r[:, 0] / np.maximum(tail, 1e-300)).max()),
            "t": t,
        }
    out["sensitive_attributes"] = sens
    return out


def _metrics(table: EncodedTable, lo, hi, class_id, n_classes, suppressed, models, n_queries: int, seed: int) -> dict:
    keep = ~suppressed
    sizes = np.bincount(class_id[keep], minlength=n_classes)
    k = max([m.k for m in models if isinstance(m, KAnonymity)], default=1)
    n_sup = int(suppressed.sum())
    out = {
        "rows": int(table.n),
        "suppressed_rows": n_sup,
        "suppressed_fraction": n_sup / table.n if table.n else 0.0,
        "classes": M.summarize_classes(sizes),
        "ncp": M.ncp(table, lo, hi, suppressed),
        "ncp_leaves": M.ncp(table, lo, hi, suppressed, categorical="leaves")["ncp"],
        "il_total": M.il_total(table, class_id, n_classes, lo, hi, suppressed),
        "dm": M.discernibility(sizes, n_sup, table.n),
        "cdm": M.cdm(sizes),
        "c_avg": M.average_class_size(sizes, k),
        "risk": M.reidentification_risk(sizes),
    }
    if n_queries > 0:
        out["query_error"] = M.query_error(table, lo, hi, suppressed, n_queries=n_queries, seed=seed)
    out["achieved"] = achieved_privacy(table, class_id, n_classes, suppressed)
    return out


def anonymize_table(
    table_or_df,
    schema: Schema | None = None,
    hierarchies: Mapping[str, Hierarchy] | None = None,
    algorithm: str = "flash",
    models: Sequence[PrivacyModel] | None = None,
    max_suppression: float = 0.0,
    *,
    metric: str = "ncp",
    mondrian_mode: str = "strict",
    numeric_output: str = "range",
    suppressed_rows: str = "star",
    n_queries: int | None = None,
    query_seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> AnonymizationResult:
    """Anonymize a table and measure the release.

    ``table_or_df`` — a DataFrame (with ``schema`` and optional ``hierarchies``; QIs without one get
    :func:`.table.auto_hierarchy`) or an :class:`EncodedTable`. ``algorithm`` ∈ :data:`ALGORITHMS`;
    ``models`` — privacy models (:func:`build_models`); ``max_suppression`` — fraction of rows the
    full-domain algorithms may suppress (Samarati's MaxSup); ``metric`` — how to choose among the
    satisfying nodes (:data:`.lattice.METRICS`); ``mondrian_mode`` strict | relaxed;
    ``numeric_output`` range | mean; ``suppressed_rows`` star | drop; ``n_queries`` random COUNT
    queries for the query-error metric (0 skips it; None = :func:`auto_queries`).

    Errors are :class:`AnonymizeError` (one line): unknown column, NaN in a QI, value missing from a
    hierarchy, k larger than the table, no satisfying generalization, bad option values.
    """
    timings: dict = {}
    t_all = time.perf_counter()
    if algorithm not in ALGORITHMS:
        raise AnonymizeError(f"unknown algorithm '{algorithm}' (use {', '.join(ALGORITHMS)})")
    if metric not in METRICS:
        raise AnonymizeError(f"unknown metric '{metric}' (use {', '.join(METRICS)})")
    models = list(models or [])
    if not models:
        raise AnonymizeError("no privacy model given (e.g. KAnonymity(k))")
    if not 0.0 <= float(max_suppression) <= 1.0:
        raise AnonymizeError(f"max suppression must be a fraction in [0, 1], got {max_suppression}")
    t = time.perf_counter()
    table = _encode(table_or_df, schema, hierarchies)
    timings["encode"] = time.perf_counter() - t
    for m in models:
        if isinstance(m, KAnonymity) and m.k > table.n:
            raise AnonymizeError(f"k = {m.k} is larger than the table ({table.n} rows)")
    qis = table.schema.qis
    search = None
    levels = None
    t = time.perf_counter()
    if algorithm == "mondrian":
        from .mondrian import mondrian

        res = mondrian(table, models, mode=mondrian_mode, progress=progress)
        class_id, n_classes = res.class_id, res.n_classes
        suppressed = np.zeros(table.n, dtype=bool)
        algo_stats = res.stats
        timings["search"] = time.perf_counter() - t
        t = time.perf_counter()
        df = release_partition(table, class_id, n_classes, numeric_output=numeric_output)
        lo, hi = M.class_boxes(table, class_id, n_classes)
    else:
        lat = Lattice(table, models, max_suppression)
        if algorithm == "incognito":
            from .incognito import incognito as run
        elif algorithm == "flash":
            from .flash import flash as run
        elif algorithm == "samarati":
            from .samarati import samarati as run
        else:
            from .datafly import datafly as run
        search = run(lat, metric=metric, progress=progress)
        lv = search.levels
        levels = {name: int(x) for name, x in zip(qis, lv)}
        cid, fail = lat.row_classes(lv)
        suppressed = fail[cid]
        class_id = cid
        n_classes = len(fail)
        algo_stats = search.stats
        timings["search"] = time.perf_counter() - t
        t = time.perf_counter()
        df = release_levels(table, lv, suppressed, numeric_output=numeric_output, suppressed_rows=suppressed_rows)
        lo, hi = M.boxes_from_levels(table, lv)
    timings["recode"] = time.perf_counter() - t
    t = time.perf_counter()
    if n_queries is None:
        n_queries = auto_queries(table.n)
    metrics = _metrics(table, lo, hi, class_id, n_classes, suppressed, models, n_queries, query_seed)
    timings["metrics"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_all
    report = {
        "algorithm": algorithm,
        "parameters": {
            "quasi_identifiers": qis,
            "sensitive": table.schema.sensitive,
            "identifiers_dropped": table.schema.identifiers,
            "models": [m.describe() for m in models],
            "max_suppression": float(max_suppression),
            "max_suppressed_rows": int(math.floor(float(max_suppression) * table.n + 1e-9)),
            "metric": metric if algorithm != "mondrian" else None,
            "mondrian_mode": mondrian_mode if algorithm == "mondrian" else None,
            "numeric_output": numeric_output,
            "suppressed_rows": suppressed_rows,
            "hierarchies": {
                name: {"levels": h.height + 1, "leaves": h.n_leaves, "numeric": h.numeric}
                for name, h in zip(qis, table.hierarchies)
            },
        },
        "levels": levels,
        "metrics": metrics,
        "search": _jsonable(algo_stats),
        "timings": timings,
    }
    if search is not None:
        report["chosen_node"] = search.chosen.as_dict()
        report["candidate_nodes"] = [x.as_dict() for x in search.nodes]
        report["candidate_nodes_kind"] = {
            "incognito": "every minimal satisfying node",
            "flash": "every minimal satisfying node",
            "samarati": "every satisfying node at the lowest height",
            "datafly": "the node Datafly reached",
        }[algorithm]
    return AnonymizationResult(df, levels, suppressed, metrics, timings, report, class_id, search, table)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    return x
