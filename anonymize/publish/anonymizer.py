"""One entry point for publishing: :func:`anonymize_table`.

Pick an algorithm from the registry (:mod:`.registry`), privacy models and a suppression budget;
get the released table, the chosen generalization, every metric and the timings (what
``ppdm anonymize`` writes as its report). The built-in algorithms and their papers are listed by
:func:`.registry.algorithms` (``ppdm anonymize --help`` prints them).

Full-domain results suppress the rows of classes that fail a model (at most
``⌊max_suppression·n⌋``); partition-style results (Mondrian, clustering) are released as each
class's bounding cells by the same code. The full-domain searches return several satisfying
nodes; one is chosen by ``metric`` (:data:`.fulldomain.result.METRICS`, default NCP) and all are
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

# importing the algorithm packages registers their algorithms (fulldomain, bucketize and
# condensation are imported below for names they export)
from . import clustering, partition, registry  # noqa: F401
from . import metrics as M
from .bucketize import bucket_metrics
from .classes import class_stats
from .condensation import covariance_check
from .fulldomain import METRICS, Lattice, SearchResult
from .fulldomain.local_recoding import (
    LOCAL_ALGORITHMS,
    LocalRecodingResult,
    achieved_from_release,
    boxes_from_row_levels,
    check_local_models,
    release_local,
    released_classes,
)
from .fulldomain.local_recoding import local_recoding as run_local_recoding
from .fulldomain.privacy import ARX
from .hierarchy import Hierarchy
from .metrics import achieved_privacy
from .metrics.cells import CATEGORICAL_LOSSES
from .metrics.loss import DEFAULT_GS_FACTOR, attribute_weights, gs_factors, loss_geometric
from .metrics.suppressed_group import achieved_outside_group, suppressed_group
from .models import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    PrivacyModel,
    RecursiveCLDiversity,
    TCloseness,
    check_feasible,
    check_fits,
)
from .models_population import bind_models, check_algorithm, population_models
from .models_sensitive import AlphaKAnonymity, BetaLikeness, DeltaDisclosure
from .recode import release_levels, release_partition
from .table import EncodedTable, Schema

__all__ = ["ALGORITHMS", "AnonymizationResult", "anonymize_table", "build_models", "achieved_privacy", "auto_queries"]

ALGORITHMS = registry.names()
"""Names of the registered algorithms (the registry is complete once :mod:`anonymize.publish` is imported)."""


@dataclass
class AnonymizationResult:
    """What :func:`anonymize_table` returns.

    ``df`` — the release (for a bucketization the QI table, for condensation the synthetic
    table); ``levels`` — chosen full-domain levels per QI (None for other kinds);
    ``suppressed_mask`` — rows suppressed (``*`` everywhere, or not published); ``class_id`` —
    equivalence class (group) of every input row; ``metrics`` / ``timings`` / ``report`` —
    JSON-ready dicts; ``search`` — the full-domain :class:`.fulldomain.SearchResult` (None for
    other kinds); ``tables`` — further published tables by name (a bucketization's sensitive
    tables; empty otherwise); ``kind`` — the algorithm's kind (:data:`.registry.KINDS`);
    ``algorithm_result`` — what the algorithm returned (e.g. a
    :class:`.bucketize.BucketizationResult` or :class:`.condensation.SyntheticResult`).
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
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    kind: str = registry.FULL_DOMAIN
    algorithm_result: object = field(default=None, repr=False)
    local_recoding: LocalRecodingResult | None = field(default=None, repr=False)


def build_models(
    k: int | None = None,
    l: float | None = None,
    l_variant: str = "distinct",
    c: float | None = None,
    t: float | None = None,
    t_distance: str = "emd",
    t_ground: str | None = None,
    beta: float | None = None,
    beta_variant: str = "enhanced",
    delta: float | None = None,
    alpha: float | None = None,
    *,
    population=None,
    population_size: int | None = None,
    delta_presence: tuple[float, float] | None = None,
    k_map: int | None = None,
    k_map_estimator: str = "poisson",
    k_map_significance: float = 0.01,
    max_avg_risk: float | None = None,
    max_sample_uniques: float | None = None,
    max_population_uniques: float | None = None,
    uniqueness_estimator: str = "dankar",
) -> list[PrivacyModel]:
    """Privacy models from the CLI-style parameters: k-anonymity (``k``), l-diversity (``l`` with
    ``l_variant`` distinct | entropy | recursive, the latter needing ``c``), t-closeness (``t`` with
    ``t_distance`` emd | variational | kl and an optional EMD ground distance), β-likeness (``beta``
    with ``beta_variant`` basic | enhanced), δ-disclosure privacy (``delta``) and (α,k)-anonymity
    (``alpha``, with ``k``: the model :class:`.models_sensitive.AlphaKAnonymity` ``(alpha, k)`` is
    added beside ``KAnonymity(k)``, which stays in the list so that what reads the k of a run — the
    average class size C_avg, the trade-off plot — still finds it)."""
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
    if beta is not None:
        models.append(BetaLikeness(beta, variant=beta_variant))
    if delta is not None:
        models.append(DeltaDisclosure(delta))
    if alpha is not None:
        if k is None:
            raise AnonymizeError("(alpha,k)-anonymity needs k: give --k too (--k 1 for the alpha bound alone)")
        models.append(AlphaKAnonymity(alpha, k))
    # δ-presence, k-map and the table-level risk models (:func:`.models_population.population_models`)
    models += population_models(
        population=population,
        population_size=population_size,
        delta_presence=delta_presence,
        k_map=k_map,
        k_map_estimator=k_map_estimator,
        k_map_significance=k_map_significance,
        max_avg_risk=max_avg_risk,
        max_sample_uniques=max_sample_uniques,
        max_population_uniques=max_population_uniques,
        uniqueness_estimator=uniqueness_estimator,
    )
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


def _metrics(
    table: EncodedTable,
    lo,
    hi,
    class_id,
    n_classes,
    suppressed,
    models,
    n_queries: int,
    seed: int,
    suppressed_rows: str,
    *,
    ncp_categorical: str = "height",
    weights: np.ndarray | None = None,
    gs_factor: float = DEFAULT_GS_FACTOR,
) -> dict:
    keep = ~suppressed
    w = table.weights
    sizes = np.bincount(class_id[keep], weights=None if w is None else w[keep], minlength=n_classes).astype(np.int64)
    k = max([m.minimal_class_size for m in models if m.size_only], default=1)
    n_sup = int(suppressed.sum()) if w is None else int(w[suppressed].sum())
    out = {
        "rows": int(table.n),
        "suppressed_rows": n_sup,
        "suppressed_fraction": n_sup / table.n if table.n else 0.0,
        "classes": M.summarize_classes(sizes),
        "ncp": M.ncp(table, lo, hi, suppressed, categorical=ncp_categorical, weights=weights)
        | {"categorical": ncp_categorical, "weighted": weights is not None},
        "ncp_leaves": M.ncp(table, lo, hi, suppressed, categorical="leaves", weights=weights)["ncp"],
        "loss_geometric": loss_geometric(table, lo, hi, suppressed, weights=weights, gs_factor=gs_factor),
        "il_total": M.il_total(table, class_id, n_classes, lo, hi, suppressed),
        "gaacp_iloss": M.gaacp_iloss(table, lo, hi, suppressed),
        "dm": M.discernibility(sizes, n_sup, table.n),
        "cdm": M.cdm(sizes),
        "cdm_definition": M.CDM_DEFINITION,
        "c_avg": M.average_class_size(sizes, k),
        "risk": M.reidentification_risk(sizes),
    }
    if n_queries > 0 and w is None:  # the query workload is drawn over rows (not on a weighted table)
        out["query_error"] = M.query_error(table, lo, hi, suppressed, n_queries=n_queries, seed=seed)
    if suppressed_rows == ARX:  # ARX: the models hold outside the '*' group, which is described on its own
        out["achieved"] = achieved_outside_group(table, class_id, n_classes, suppressed)
        out["suppressed_group"] = suppressed_group(table, class_id, n_classes, suppressed, models)
    else:
        out["achieved"] = achieved_privacy(table, class_id, n_classes, suppressed, suppressed_rows)
    return out


def _population_achieved(lat: Lattice, levels, class_id: np.ndarray, fail: np.ndarray, suppressed_rows: str) -> dict:
    """δ-presence and k-map of a full-domain release against the population table of its models:
    ``delta_presence`` [smallest, largest] rows / population rows over the released classes (with
    ``star`` the all-``*`` class too, which matches every population row), ``k_map`` the fewest
    population rows of a released class, ``population_absent_rows`` the population rows in no class of
    the table (the release shows them absent; Nergiz, Atzori, Clifton, SIGMOD 2007)."""
    pop_counts = lat.privacy.population
    assert pop_counts is not None
    lv = lat.internal(levels)
    codes = lat.freq.row_codes(lv)
    nc = len(fail)
    first = np.full(nc, len(class_id), dtype=np.int64)
    np.minimum.at(first, class_id, np.arange(len(class_id), dtype=np.int64))
    pop = pop_counts.counts(lv, codes[first]).astype(np.int64)
    w = lat.table.weights
    sizes = np.bincount(class_id, weights=w, minlength=nc).astype(np.int64)
    released = ~fail & (sizes > 0)
    ratios = (sizes[released] / pop[released]).tolist()
    n_sup = int(sizes[fail].sum())
    if suppressed_rows == "star" and n_sup:
        ratios.append(n_sup / pop_counts.total)
    return {
        "delta_presence": [float(min(ratios)), float(max(ratios))] if ratios else None,
        "k_map": int(pop[released].min()) if released.any() else None,
        "population_absent_rows": int(pop_counts.total - int(pop.sum())),
    }


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
    ncp_categorical: str = "height",
    weights: Mapping[str, float] | None = None,
    n_queries: int | None = None,
    query_seed: int = 0,
    local_recoding: bool = False,
    local_iterations: int | None = None,
    local_records: float | None = None,
    gs_factor: float | None = None,
    local_gs_factor: float | None = None,
    local_gs_adaption: float | None = None,
    options: Mapping | None = None,
    progress: Callable[[str], None] | None = None,
) -> AnonymizationResult:
    """Anonymize a table and measure the release.

    ``table_or_df`` — a DataFrame (with ``schema`` and optional ``hierarchies``; QIs without one get
    :func:`.table.auto_hierarchy`) or an :class:`EncodedTable`. ``algorithm`` — a name in the registry (:data:`ALGORITHMS`);
    ``models`` — privacy models (:func:`build_models`); ``max_suppression`` — fraction of rows the
    full-domain algorithms may suppress (MaxSup of P. Samarati, "Protecting respondents' identities
    in microdata release", IEEE TKDE 2001); ``metric`` — how to choose among the
    satisfying nodes (:data:`.fulldomain.METRICS`); ``mondrian_mode`` strict | relaxed (the ``mode``
    option of algorithms that take one); ``options`` — further options of a partition-style
    algorithm (:attr:`.registry.Algorithm.options`);
    ``numeric_output`` range | mean; ``suppressed_rows`` star | drop | arx (``'arx'``: written as
    ``*`` like star, but the models are checked, as ARX does, on the other classes only — the report's
    ``suppressed_group`` says what the ``*`` group breaks); ``ncp_categorical`` height | leaves |
    span — the categorical NCP flavour of the search metric and the report
    (:func:`.metrics.cells.cell_loss`); ``weights`` — ``{qi: weight ≥ 0}`` (others 1) for NCP (a
    weighted mean over the QIs) and ARX's Loss (``metric='loss'``), steering the full-domain
    searches and Mondrian's choice of cut (other algorithms refuse it); ``n_queries`` random COUNT
    queries for the query-error metric (0 skips it; None = :func:`auto_queries`);
    ``local_recoding`` — after the global search, re-anonymize the suppressed rows on their own at
    most ``local_iterations`` times (default 100; with ``local_records`` each re-search must release at
    least that fraction of all rows, ARX's ``optimizeIterativeFast``; flash, incognito, samarati;
    :mod:`.fulldomain.local_recoding`): the release then has one node per row and its "achieved" is
    measured on the written tuples. ``gs_factor`` — ARX's generalization/suppression factor of the
    Loss (``metric='loss'`` only; :func:`.metrics.loss.gs_factors`; default 0.5, both weigh the
    same): 0 favours suppression, 1 generalization; the search, every local recoding step and the
    report's ``loss_geometric`` use it — the steps take ``local_gs_factor`` instead when it is given
    (ARX's GUI: 0 for the search, 0.05 for the steps of its local transformation), and with
    ``local_gs_adaption`` it grows after a step that releases nothing (ARX's adaption factor,
    :func:`.fulldomain.local_recoding.local_recoding`).

    Errors are :class:`AnonymizeError` (one line): unknown column, NaN in a QI, value missing from a
    hierarchy, k larger than the table, no satisfying generalization, bad option values.
    """
    timings: dict = {}
    t_all = time.perf_counter()
    alg = registry.get(algorithm)
    if metric not in METRICS:
        raise AnonymizeError(f"unknown metric '{metric}' (use {', '.join(METRICS)})")
    models = list(models or [])
    if not models:
        raise AnonymizeError("no privacy model given (e.g. KAnonymity(k))")
    registry.check_models(alg, models)
    check_algorithm(alg, models)  # table-level / population models: full-domain searches only
    if ncp_categorical not in CATEGORICAL_LOSSES:
        raise AnonymizeError(
            f"unknown categorical NCP flavour '{ncp_categorical}' (use {', '.join(CATEGORICAL_LOSSES)})"
        )
    if weights is not None and alg.kind != registry.FULL_DOMAIN and "weights" not in alg.options:
        raise AnonymizeError(
            f"attribute weights steer the full-domain searches and Mondrian only: '{alg.name}' ignores them "
            "(drop the weights)"
        )
    if local_recoding:
        if alg.name not in LOCAL_ALGORITHMS:
            raise AnonymizeError(
                f"local recoding runs on the full-domain searches {', '.join(LOCAL_ALGORITHMS)}, not '{alg.name}'"
            )
        if numeric_output == "mean":
            raise AnonymizeError("local recoding publishes hierarchy labels: use numeric output 'range', not 'mean'")
        if local_iterations is not None and int(local_iterations) < 1:
            raise AnonymizeError(f"local recoding needs at least one iteration, got {local_iterations}")
        if local_records is not None and not 0.0 < float(local_records) <= 1.0:
            raise AnonymizeError(
                f"the share of records each local recoding step releases must be in (0, 1], got {local_records}"
            )
        check_local_models(models)
    elif local_iterations is not None:
        raise AnonymizeError("local iterations are the iterations of local recoding: give local recoding too")
    elif local_records is not None:
        raise AnonymizeError("a share of records per step is a setting of local recoding: give local recoding too")
    if not 0.0 <= float(max_suppression) <= 1.0:
        raise AnonymizeError(f"max suppression must be a fraction in [0, 1], got {max_suppression}")
    if gs_factor is not None:
        gs_factors(gs_factor)  # one line for a factor outside [0, 1]
        if metric != "loss" or alg.kind != registry.FULL_DOMAIN:
            raise AnonymizeError(
                "the gs-factor weighs generalization against suppression in ARX's Loss: it needs the metric "
                "'loss' and a full-domain search (flash, incognito, samarati)"
            )
    gs = DEFAULT_GS_FACTOR if gs_factor is None else float(gs_factor)
    if local_gs_factor is not None:
        gs_factors(local_gs_factor)
        if not local_recoding or metric != "loss":
            raise AnonymizeError("the local recoding steps' gs-factor needs local recoding and the metric 'loss'")
    step_gs = gs if local_gs_factor is None else float(local_gs_factor)
    if local_gs_adaption is not None and not local_recoding:
        raise AnonymizeError("adapting the steps' gs-factor is a setting of local recoding: give local recoding too")
    t = time.perf_counter()
    table = _encode(table_or_df, schema, hierarchies)
    timings["encode"] = time.perf_counter() - t
    qi_weights = attribute_weights(table.schema.qis, weights)
    written_rows = "star" if suppressed_rows == ARX else suppressed_rows  # 'arx' writes '*' rows as star does
    models = bind_models(models, table.n)  # estimated k-map derives k'; population sizes ≥ the table
    check_fits(models, table.n)
    can_suppress = alg.kind == registry.FULL_DOMAIN and math.floor(float(max_suppression) * table.n + 1e-9) > 0
    hint = check_feasible(models, class_stats(table, np.zeros(table.n_tuples, dtype=np.int64), 1), can_suppress)
    qis = table.schema.qis
    search = None
    levels = None
    algo_result = None
    local: LocalRecodingResult | None = None
    population_achieved: dict = {}
    tables: dict[str, pd.DataFrame] = {}
    t = time.perf_counter()
    if alg.kind == registry.FULL_DOMAIN:
        lat = Lattice(
            table,
            models,
            max_suppression,
            suppressed_rows=suppressed_rows,
            ncp_categorical=ncp_categorical,
            weights=qi_weights,
            gs_factor=gs,
        )
        try:
            if local_recoding:
                local = run_local_recoding(
                    table,
                    models,
                    max_suppression,
                    metric,
                    100 if local_iterations is None else int(local_iterations),
                    algorithm=alg.name,
                    suppressed_rows=suppressed_rows,
                    progress=progress,
                    lattice=lat,
                    lattice_options={"ncp_categorical": ncp_categorical, "weights": qi_weights, "gs_factor": step_gs},
                    budget="fraction" if local_records is None else "records",
                    records=local_records,
                    gs_adaption=0.0 if local_gs_adaption is None else float(local_gs_adaption),
                )
                search = local.search
            else:
                search = alg.run(lat, metric=metric, progress=progress)
        except AnonymizeError as e:
            raise AnonymizeError(f"{e} ({hint})" if hint else str(e)) from None
        lv = search.levels
        levels = {name: int(x) for name, x in zip(qis, lv)}
        algo_stats = search.stats
        if local is not None:  # one node per row; classes are the released tuples
            row_levels = local.row_levels(table.heights)
            suppressed = local.suppressed
            class_id, n_classes = released_classes(table, row_levels, suppressed)
            timings["search"] = time.perf_counter() - t
            t = time.perf_counter()
            df = release_local(table, row_levels, suppressed, suppressed_rows=written_rows)
            lo, hi = boxes_from_row_levels(table, row_levels)
        else:
            cid, fail = lat.row_classes(lv)
            suppressed = fail[cid]
            if lat.privacy.population is not None:
                population_achieved = _population_achieved(lat, lv, cid, fail, suppressed_rows)
            class_id = cid
            n_classes = len(fail)
            timings["search"] = time.perf_counter() - t
            t = time.perf_counter()
            df = release_levels(table, lv, suppressed, numeric_output=numeric_output, suppressed_rows=written_rows)
            lo, hi = M.boxes_from_levels(table, lv)
    else:
        opts = dict(options or {})
        if "mode" in alg.options:
            opts.setdefault("mode", mondrian_mode)
        if weights is not None:  # an algorithm taking a 'weights' option (Mondrian; the others refused above)
            opts["weights"] = dict(weights)
        unknown = sorted(set(opts) - set(alg.options))
        if unknown:
            raise AnonymizeError(
                f"algorithm '{alg.name}' takes no option {', '.join(unknown)}"
                + (f" (it takes {', '.join(alg.options)})" if alg.options else "")
            )
        res = alg.run(table, models, progress=progress, **opts)
        algo_result = res
        algo_stats = res.stats
        timings["search"] = time.perf_counter() - t
        t = time.perf_counter()
        if alg.kind in registry.PARTITION_KINDS:
            class_id, n_classes = res.class_id, res.n_classes
            suppressed = (
                np.zeros(table.n_tuples, dtype=bool) if res.suppressed is None else np.asarray(res.suppressed, bool)
            )
            df = release_partition(
                table,
                class_id,
                n_classes,
                numeric_output=numeric_output,
                suppressed=suppressed,
                suppressed_rows=written_rows,
            )
            lo, hi = M.class_boxes(table, class_id, n_classes)
        elif alg.kind == registry.BUCKETIZATION:
            class_id = np.asarray(res.group_id, dtype=np.int64)
            suppressed = class_id < 0
            df, tables = res.qi_table, dict(res.tables)
        elif alg.kind == registry.SYNTHETIC:
            class_id = np.asarray(res.group_id, dtype=np.int64)
            suppressed = np.zeros(table.n_tuples, dtype=bool)
            df = res.df
        else:  # pragma: no cover - KINDS is closed
            raise AnonymizeError(f"algorithm '{alg.name}' has an unknown kind {alg.kind!r}")
    timings["recode"] = time.perf_counter() - t
    t = time.perf_counter()
    if n_queries is None:
        n_queries = auto_queries(table.n)
    if alg.kind == registry.BUCKETIZATION:
        assert algo_result is not None
        metrics = bucket_metrics(table, algo_result)
        if n_queries > 0 and table.weights is None:  # exact QIs, sensitive values per group (Xiao & Tao)
            metrics["query_error"] = M.bucket_query_error(table, class_id, n_queries=n_queries, seed=query_seed)
    elif alg.kind == registry.SYNTHETIC:
        metrics = synthetic_metrics(table, algo_result)
    else:
        metrics = _metrics(
            table,
            lo,
            hi,
            class_id,
            n_classes,
            suppressed,
            models,
            n_queries,
            query_seed,
            suppressed_rows,
            ncp_categorical=ncp_categorical,
            weights=qi_weights,
            gs_factor=gs,
        )
    if local is not None and suppressed_rows != ARX:  # the written tuples: cells of two nodes are two classes
        metrics["achieved"] = achieved_from_release(df, table, suppressed, suppressed_rows)
    if population_achieved:
        metrics["achieved"] = {**metrics.get("achieved", {}), **population_achieved}
    timings["metrics"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t_all
    report = {
        "algorithm": algorithm,
        "kind": alg.kind,
        "parameters": {
            "quasi_identifiers": qis,
            "sensitive": table.schema.sensitive,
            "identifiers_dropped": table.schema.identifiers,
            "models": [m.describe() for m in models],
            "max_suppression": float(max_suppression),
            "max_suppressed_rows": int(math.floor(float(max_suppression) * table.n + 1e-9)),
            "metric": metric if alg.kind == registry.FULL_DOMAIN else None,
            "mondrian_mode": mondrian_mode if "mode" in alg.options else None,
            "numeric_output": numeric_output if alg.kind in (registry.FULL_DOMAIN, *registry.PARTITION_KINDS) else None,
            "suppressed_rows": suppressed_rows
            if alg.kind in (registry.FULL_DOMAIN, *registry.PARTITION_KINDS)
            else None,
            "ncp_categorical": ncp_categorical,
            "gs_factor": gs if metric == "loss" and alg.kind == registry.FULL_DOMAIN else None,
            "local_gs_factor": step_gs if local_recoding and metric == "loss" else None,
            "local_gs_adaption": None if local_gs_adaption is None else float(local_gs_adaption),
            "weights": None if qi_weights is None else {name: float(x) for name, x in zip(qis, qi_weights)},
            "options": _jsonable(dict(options or {})),
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
    if tables:
        report["tables"] = {"qi": {"rows": int(len(df)), "columns": [str(c) for c in df.columns]}} | {
            name: {"rows": int(len(tb)), "columns": [str(c) for c in tb.columns]} for name, tb in tables.items()
        }
    if search is not None:
        report["chosen_node"] = search.chosen.as_dict()
        # the search fills DM first and NCP / Loss only where they decide (optimum.best_node): fill them now
        report["candidate_nodes"] = [lat.complete(x).as_dict() for x in search.nodes]
        report["candidate_nodes_kind"] = search.nodes_kind
    if local is not None:
        report["local_recoding"] = local.report(qis, table.weights)
    return AnonymizationResult(
        df, levels, suppressed, metrics, timings, report, class_id, search, table, tables, alg.kind, algo_result, local
    )


def synthetic_metrics(table: EncodedTable, res) -> dict:
    """Report of a synthetic release (:class:`.condensation.SyntheticResult`): rows, group sizes, the
    smallest group and the k-anonymity of the written table (not the same: see the condensation
    module), and how well the covariance structure is kept
    (:func:`.condensation.covariance_check` against the input's numeric QIs)."""
    sizes = np.rint(res.groups.r).astype(np.int64)
    X = table.df[res.columns].to_numpy(dtype=np.float64)
    released = res.df[res.columns]
    k_file = int(released.value_counts(sort=False).min()) if len(released) else 0  # as pycanon measures it
    return {
        "rows": int(table.n),
        "synthetic_rows": int(len(res.df)),
        "suppressed_rows": 0,
        "classes": M.summarize_classes(sizes),
        # k: k-anonymity of the written QI columns (synthetic values are nearly all distinct: usually 1);
        # group_size_min: every record was condensed with at least that many - 1 others
        "achieved": {"k": k_file, "group_size_min": int(sizes.min()), "groups": int(len(sizes))},
        "covariance": covariance_check(X, released.to_numpy(dtype=np.float64)),
        "columns_not_published": [str(c) for c in table.df.columns if c not in res.df.columns],
    }


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
