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
   weighted aggregation over it — the same numbers as the memory engine gives on the rows;
3. the release is the recoding of every distinct tuple (its released QI values, or dropped),
   joined back to the table by the engine and written, streaming, in a fresh random order
   (:meth:`~anonymize.engines.Engine.write_recoded`);
4. the written file is grouped again by the engine and measured (:func:`.metrics.measure_release`
   with weights); a file whose k or l differs from what the search claimed is deleted and the run
   fails.

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
from .hierarchy import Hierarchy
from .metrics import measure_release
from .metrics.attack_resistance import frame_attack_resistance
from .models import PrivacyModel
from .recode import release_levels, release_partition
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
    sep: str = ",",
    progress: Callable[[str], None] | None = None,
) -> AnonymizationResult:
    """Anonymize the table ``src`` on ``engine`` and write the release to ``output`` (Parquet or CSV by
    extension); returns the :class:`.anonymizer.AnonymizationResult` of the weighted table (its ``df`` is
    the recoding of the distinct tuples, not the release) with the report extended by ``engine``.

    Same parameters and errors as :func:`.anonymizer.anonymize_table`; the algorithms are
    :data:`ENGINE_ALGORITHMS` (strict Mondrian). Nothing is left at ``output`` on any error.
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
        remeasured = _remeasure(engine, out, qis, sens, sep, res, progress)
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


def _remeasure(engine: Engine, out: Path, qis, sens, sep: str, res: AnonymizationResult, progress) -> dict:
    """Group the written file on the engine and measure it; any difference from the search's claim fails."""
    wsrc = TableInput(paths=(str(out),), fmt="parquet" if out.suffix.lower() in (".parquet", ".pq") else "csv", sep=sep)
    g = engine.group_counts(wsrc, list(qis) + list(sens), progress)
    cols = list(qis) + list(sens)
    frame = g[cols].copy()
    for c in qis:
        frame[c] = frame[c].map(str)
    rep = measure_release(frame, qis, sens, weights=g["__n"].to_numpy())
    ach = res.metrics["achieved"]
    got = {"k": int(rep["k"]), "rows": int(rep["rows"])}
    problems = []
    if got["k"] != int(ach["k"]):
        problems.append(f"k = {got['k']} where the search gave {ach['k']}")
    for s_name, m in ach.get("sensitive_attributes", {}).items():
        r = rep["sensitive_attributes"][s_name]
        got[f"l_distinct[{s_name}]"] = int(r["l_distinct"])
        if int(r["l_distinct"]) != int(m["l_distinct"]):
            problems.append(f"distinct l of '{s_name}' = {r['l_distinct']} where the search gave {m['l_distinct']}")
    if problems:
        raise AnonymizeError("the written release does not measure what was claimed (" + "; ".join(problems) + ")")
    return got


def measure_on_engine(
    engine: Engine,
    src: TableInput,
    qis: Sequence[str],
    sensitive: Sequence[str] = (),
    hierarchies: Mapping[str, Hierarchy] | None = None,
    c: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """:func:`.metrics.measure_release` of a table where it lives: the engine groups it by ``qis`` and
    ``sensitive`` and the measurement runs on the weighted distinct tuples (same figures)."""
    cols = engine.columns(src)
    Schema(list(qis), list(sensitive)).validate(cols)
    g = _grouped(engine, src, list(qis) + list(sensitive), progress)
    frame = g[list(qis) + list(sensitive)].copy()
    rep = measure_release(frame, qis, sensitive, hierarchies=hierarchies, c=c, weights=g["__n"].to_numpy())
    rep["attack_resistance"] = frame_attack_resistance(frame, qis, sensitive, weights=g["__n"].to_numpy())
    rep["engine"] = {"name": engine.name, "distinct_tuples": int(len(g))}
    return rep
