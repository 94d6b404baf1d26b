"""Publishing on a data engine (DuckDB out of core, or Spark): the table stays where it is; only its
distinct quasi-identifier tuples with their counts come into memory.

Pipeline (LeFevre, DeWitt, Ramakrishnan, "Incognito: efficient full-domain k-anonymity", SIGMOD 2005,
§3.2, compute the frequency set of the bottom node with one ``GROUP BY`` and roll up from there):

1. the engine groups the table by its quasi-identifiers and sensitive attributes
   (:meth:`anonymize.engines.Engine.group_counts`): a *weighted* :class:`.table.EncodedTable` whose
   rows are the distinct tuples and whose weights are their counts;
2. the algorithm runs on it unchanged (:func:`.anonymizer.anonymize_table`): the full-domain
   searches (Flash, Incognito, Samarati, Datafly) roll frequency sets up in memory from it, strict
   Mondrian cuts at weighted medians (the same cuts as on the rows), and every metric and risk is a
   weighted aggregation over it — the same numbers as the memory engine gives on the rows. The
   utility options ride on the same aggregates, each tuple's cell losses multiplied by its count:
   attribute weights and the categorical NCP flavour (``weights``, ``ncp_categorical``: the weighted
   mean of per-attribute NCPs and ARX's Loss, ``ARXConfiguration.setAttributeWeight``; Xu et al.,
   KDD 2006, and Iyengar, KDD 2002, for the leaves / span flavours), and ARX's outlier semantics
   (``suppressed_rows='arx'``: models checked on the classes outside the ``*`` group, whose rows and
   sizes are sums of counts; :mod:`.metrics.suppressed_group`);
3. the release is the recoding of every distinct tuple (its released QI values, or dropped),
   joined back to the table by the engine and written, streaming, in a fresh random order
   (:meth:`~anonymize.engines.Engine.write_recoded`);
4. the written file is grouped again by the engine and measured (:func:`.metrics.measure_release`
   with weights); a file whose k or l differs from what the search claimed is deleted and the run
   fails (with ``suppressed_rows='arx'`` the claim is about the classes outside the all-``*`` group,
   so that group is set aside and its size checked instead: :func:`_remeasure`).

:func:`measure_on_engine` (``ppdm check --engine``) measures a table where it lives on its distinct
tuples, NCP in any flavour and with attribute weights and ARX's geometric-mean Loss included
(:func:`.metrics.release_utility.release_utility` with the counts as row weights).

Algorithms that need every row (clustering, bucketization, condensation, relaxed Mondrian) run on
the memory engine only; a clear error says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..engines.base import Engine, TableInput
from ..errors import AnonymizeError
from .anonymizer import AnonymizationResult, anonymize_table
from .fulldomain.privacy import ARX
from .hierarchy import Hierarchy
from .metrics import measure_release
from .metrics.attack_resistance import frame_attack_resistance
from .metrics.release_utility import release_utility
from .models import PrivacyModel
from .recode import STAR, release_levels, release_partition
from .table import EncodedTable, Schema

__all__ = ["ENGINE_ALGORITHMS", "anonymize_on_engine", "measure_on_engine", "engine_supports"]

ENGINE_ALGORITHMS = ("flash", "incognito", "samarati", "datafly", "mondrian")
"""Algorithms that run on a weighted table of distinct tuples (the engines' input)."""


def engine_supports(algorithm: str, mondrian_mode: str = "strict") -> bool:
    """Whether ``algorithm`` can run on an engine's distinct tuples."""
    return algorithm in ENGINE_ALGORITHMS and not (algorithm == "mondrian" and mondrian_mode != "strict")


def _grouped(
    engine: Engine, src: TableInput, columns: list[str], progress: Callable[[str], None] | None
) -> pd.DataFrame:
    g = engine.group_counts(src, columns, progress)
    for c in columns:
        na = g[c].isna().to_numpy()
        if na.any():
            raise AnonymizeError(
                f"column '{c}' has {int(g['__n'].to_numpy()[na].sum())} missing value(s); fill or drop them before "
                "anonymizing"
            )
    return g


def anonymize_on_engine(
    engine: Engine,
    src: TableInput,
    schema: Schema,
    hierarchies: Mapping[str, Hierarchy] | None,
    output: str | Path,
    *,
    algorithm: str = "flash",
    models: Sequence[PrivacyModel],
    max_suppression: float = 0.0,
    metric: str = "ncp",
    mondrian_mode: str = "strict",
    numeric_output: str = "range",
    suppressed_rows: str = "star",
    ncp_categorical: str = "height",
    weights: Mapping[str, float] | None = None,
    sep: str = ",",
    progress: Callable[[str], None] | None = None,
) -> AnonymizationResult:
    """Anonymize the table ``src`` on ``engine`` and write the release to ``output`` (Parquet or CSV by
    extension); returns the :class:`.anonymizer.AnonymizationResult` of the weighted table (its ``df`` is
    the recoding of the distinct tuples, not the release) with the report extended by ``engine``.

    Same parameters and errors as :func:`.anonymizer.anonymize_table`; the algorithms are
    :data:`ENGINE_ALGORITHMS` (strict Mondrian). ``ncp_categorical``, ``weights`` (attribute weights
    of NCP and ARX's Loss) and ``suppressed_rows='arx'`` act as they do in memory (the same node,
    metrics and release: every figure they change is a count-weighted sum over the distinct tuples);
    ``weights`` with an algorithm that takes none is refused as in memory. Nothing is
    left at ``output`` on any error.
    """
    if not engine_supports(algorithm, mondrian_mode):
        raise AnonymizeError(
            f"algorithm '{algorithm}'"
            + (" in relaxed mode" if algorithm == "mondrian" else "")
            + f" needs every row in memory: run it with --engine memory (the {engine.name} engine runs "
            + ", ".join(ENGINE_ALGORITHMS)
            + " with strict Mondrian)"
        )
    t_all = time.perf_counter()
    timings: dict = {}
    cols = engine.columns(src)
    schema.validate(cols)
    qis, sens = list(schema.qis), list(schema.sensitive)
    t = time.perf_counter()
    g = _grouped(engine, src, qis + sens, progress)
    timings["engine_group"] = time.perf_counter() - t
    if progress:
        progress(f"{engine.name}: {int(g['__n'].sum()):,} rows, {len(g):,} distinct quasi-identifier tuples")
    work_schema = Schema(qis=qis, sensitive=sens)
    table = EncodedTable.encode(g[qis + sens], work_schema, dict(hierarchies or {}), weights=g["__n"].to_numpy())
    res = anonymize_table(
        table,
        algorithm=algorithm,
        models=models,
        max_suppression=max_suppression,
        metric=metric,
        mondrian_mode=mondrian_mode,
        numeric_output=numeric_output,
        suppressed_rows=suppressed_rows,
        ncp_categorical=ncp_categorical,
        weights=weights,
        n_queries=0,
        progress=progress,
    )
    mapping = recoding(table, res, numeric_output, suppressed_rows)
    t = time.perf_counter()
    out = Path(output)
    written = engine.write_recoded(
        src,
        mapping,
        qis,
        {c: f"__r{j}" for j, c in enumerate(qis)},
        schema.identifiers,
        out,
        sep=sep,
        progress=progress,
    )
    timings["engine_write"] = time.perf_counter() - t
    t = time.perf_counter()
    try:
        dropped = table.row_weights()[res.suppressed_mask].sum() if suppressed_rows == "drop" else 0
        expect = int(table.n - dropped)
        if written >= 0 and written != expect:
            raise AnonymizeError(f"the engine wrote {written:,} rows where {expect:,} were expected")
        remeasured = _remeasure(engine, out, qis, sens, sep, res, table, mapping, suppressed_rows, progress)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    timings["engine_remeasure"] = time.perf_counter() - t
    timings["engine_total"] = time.perf_counter() - t_all
    res.report["timings"].update(timings)
    res.report["engine"] = {
        "name": engine.name,
        "input": src.describe(),
        "rows": int(table.n),
        "distinct_tuples": int(table.n_tuples),
        "rows_written": int(written),
        "remeasured": remeasured,
    }
    res.report["row_order"] = "random"
    res.report["identifiers_dropped"] = list(schema.identifiers)
    return res


def recoding(table: EncodedTable, res: AnonymizationResult, numeric_output: str, suppressed_rows: str) -> pd.DataFrame:
    """One row per distinct QI tuple of ``table``: the tuple's values (the join keys), its released
    value per QI as text (``__r<j>``) and ``__drop`` (suppressed and ``suppressed_rows='drop'``)."""
    qis = table.schema.qis
    sup = np.asarray(res.suppressed_mask, dtype=bool)
    if res.levels is not None:
        rel = release_levels(table, list(res.levels.values()), sup, numeric_output=numeric_output)
    else:
        assert res.class_id is not None
        rel = release_partition(
            table, res.class_id, int(res.class_id.max()) + 1, numeric_output=numeric_output, suppressed=sup
        )
    mapping = pd.DataFrame({c: table.df[c].to_numpy() for c in qis})
    for j, c in enumerate(qis):
        mapping[f"__r{j}"] = rel[c].map(str).to_numpy(dtype=object)
    mapping["__drop"] = sup & (suppressed_rows == "drop")
    first = ~mapping.duplicated(subset=qis)
    mapping = mapping.loc[first].reset_index(drop=True)
    if mapping.duplicated(subset=qis).any():  # pragma: no cover - a class is a function of the QIs
        raise AnonymizeError("internal error: one quasi-identifier tuple has two recodings")
    return mapping


def _remeasure(
    engine: Engine,
    out: Path,
    qis,
    sens,
    sep: str,
    res: AnonymizationResult,
    table: EncodedTable,
    mapping: pd.DataFrame,
    suppressed_rows: str,
    progress,
) -> dict:
    """Group the written file on the engine and measure it; any difference from the search's claim fails.

    With ``suppressed_rows='arx'`` and suppressed rows, the claim (``achieved``) is about the classes
    outside the all-``*`` group (:func:`.metrics.suppressed_group.achieved_outside_group`, as ARX's
    ``HashGroupify`` checks the models on the non-outlier classes only): the file's rows whose every QI
    is ``*`` are set aside, k and distinct l are measured on the others, and the group's size must be
    the suppressed rows plus the rows of any released class that is itself all ``*`` (a class the file
    cannot tell from the group: k is then checked as the smaller of the two, l as a lower bound)."""
    wsrc = TableInput(paths=(str(out),), fmt="parquet" if out.suffix.lower() in (".parquet", ".pq") else "csv", sep=sep)
    g = engine.group_counts(wsrc, list(qis) + list(sens), progress)
    cols = list(qis) + list(sens)
    frame = g[cols].copy()
    for c in qis:
        frame[c] = frame[c].map(str)
    w = g["__n"].to_numpy()
    ach = res.metrics["achieved"]
    problems = []
    sup = np.asarray(res.suppressed_mask, dtype=bool)
    sup_rows = int(table.row_weights()[sup].sum()) if sup.any() else 0
    star_class_rows = 0
    got: dict = {"rows": int(w.sum())}
    if suppressed_rows == ARX and sup_rows:
        star_class_rows = _all_star_rows(table, mapping, sup)
        in_group = (frame[list(qis)] == STAR).all(axis=1).to_numpy()
        got["star_group_rows"] = int(w[in_group].sum())
        if got["star_group_rows"] != sup_rows + star_class_rows:
            problems.append(
                f"the '*' group has {got['star_group_rows']} rows where {sup_rows + star_class_rows} were expected"
            )
        frame, w = frame.loc[~in_group].reset_index(drop=True), w[~in_group]
    if len(frame):
        rep = measure_release(frame, qis, sens, weights=w)
        k_file = int(rep["k"])
        l_file = {s_name: int(r["l_distinct"]) for s_name, r in rep["sensitive_attributes"].items()}
    else:  # every row in the '*' group: no class outside it (achieved_outside_group's k = 0)
        k_file, l_file = 0, {}
    # a released all-'*' class is one class inside the group: k is the smaller, l at least the claim
    got["k"] = (min(k_file, star_class_rows) if k_file else star_class_rows) if star_class_rows else k_file
    if got["k"] != int(ach["k"]):
        problems.append(f"k = {got['k']} where the search gave {ach['k']}")
    for s_name, m in ach.get("sensitive_attributes", {}).items():
        if star_class_rows and s_name not in l_file:
            continue  # the only class is inside the '*' group
        got[f"l_distinct[{s_name}]"] = ld = l_file.get(s_name, 0)
        if ld < int(m["l_distinct"]) or (ld != int(m["l_distinct"]) and not star_class_rows):
            problems.append(f"distinct l of '{s_name}' = {ld} where the search gave {m['l_distinct']}")
    if problems:
        raise AnonymizeError("the written release does not measure what was claimed (" + "; ".join(problems) + ")")
    return got


def _all_star_rows(table: EncodedTable, mapping: pd.DataFrame, suppressed: np.ndarray) -> int:
    """Rows of ``table`` kept (not ``suppressed``) whose released QI values are all ``*`` — written
    like the suppressed rows, so in the file's ``*`` group (a join of the distinct tuples to their
    recodings: :func:`recoding`)."""
    qis = list(table.schema.qis)
    rel = mapping[[f"__r{j}" for j in range(len(qis))]].to_numpy(dtype=object)
    star = (rel == STAR).all(axis=1)
    if not star.any():
        return 0
    keys = pd.DataFrame({c: table.df[c].to_numpy() for c in qis})
    flags = keys.merge(mapping[qis].assign(__star=star), on=qis, how="left", validate="many_to_one")["__star"]
    kept_star = flags.to_numpy(dtype=bool) & ~suppressed
    return int(table.row_weights()[kept_star].sum())


def measure_on_engine(
    engine: Engine,
    src: TableInput,
    qis: Sequence[str],
    sensitive: Sequence[str] = (),
    hierarchies: Mapping[str, Hierarchy] | None = None,
    c: float | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    ncp_categorical: str = "height",
    weights: Mapping[str, float] | None = None,
) -> dict:
    """:func:`.metrics.measure_release` of a table where it lives: the engine groups it by ``qis`` and
    ``sensitive`` and the measurement runs on the weighted distinct tuples (same figures).

    As ``ppdm check`` in memory, the report's ``ncp`` (flavour ``ncp_categorical``, attribute
    ``weights``) and ``loss_geometric`` (ARX's Loss, ``MetricMDNMLoss`` with its geometric-mean
    aggregate) are :func:`.metrics.release_utility.release_utility` of the distinct tuples, each
    tuple's cell losses multiplied by its count: Σ_tuples count·loss / n is the mean over the rows."""
    cols = engine.columns(src)
    Schema(list(qis), list(sensitive)).validate(cols)
    g = _grouped(engine, src, list(qis) + list(sensitive), progress)
    frame = g[list(qis) + list(sensitive)].copy()
    n = g["__n"].to_numpy()
    rep = measure_release(frame, qis, sensitive, hierarchies=hierarchies, c=c, weights=n)
    rep |= release_utility(frame, qis, hierarchies, categorical=ncp_categorical, weights=weights, row_weights=n)
    rep["attack_resistance"] = frame_attack_resistance(frame, qis, sensitive, weights=n)
    rep["engine"] = {"name": engine.name, "distinct_tuples": int(len(g))}
    return rep
