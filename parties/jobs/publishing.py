"""The joint publishing job: one k-anonymous, l-diverse release of horizontally partitioned data.

``publish.horizontal`` (:func:`parties.joint.publishing.publish_horizontal`): every party reads its
``[data] <params.data>`` (default ``table``: a CSV or Parquet file with the same columns at every
party), encodes the quasi-identifiers against the analyst's public hierarchies and runs the search.
Parameters (all public, checked by every party): ``qi`` (list of columns), ``hierarchies``
(``{column: rows}`` as in an ARX hierarchy file), ``sensitive`` (a column or null),
``sensitive_values`` (its public domain, or null for a secure union), ``k``, ``l`` (distinct),
``max_suppression``, ``suppressed_rows``, ``metric`` (``dm`` or ``ncp``), ``ncp_categorical``, ``weights``
(``{column: weight}`` of NCP). A party's policy may set floors on
them (``[policy.job."publish.horizontal"] floor = { k = 10 }``), pin the hierarchies it accepts and
limit the distinct releases of one data key (``[publish]``, :mod:`parties.guards.releases`).

Errors never quote a value of the party's data: a value missing from a hierarchy is reported as a
count per column.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from mpc.errors import ProtocolError
from parties.jobs.registry import JobContext, JobError, PolicyRefusal, job

if TYPE_CHECKING:  # the publishing stack (pandas, anonymize.publish) loads when a session runs, not at start-up
    from anonymize.publish.hierarchy import Hierarchy
    from parties.joint.publishing import JointPublishSpec, LocalRows

__all__ = ["publish_horizontal_job", "spec_from_params"]


def _str_list(ctx: JobContext, key: str, *, optional: bool = False) -> list[str] | None:
    v = ctx.params.get(key)
    if v is None and optional:
        return None
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise JobError(f"parameter {key!r} must be a non-empty list of text")
    return list(v)


def _weights(ctx: JobContext, qis: list[str]) -> tuple[float, ...] | None:
    """``weights``: ``{column: weight ≥ 0}`` of NCP (unnamed QIs 1), or null."""
    from anonymize.errors import AnonymizeError
    from anonymize.publish.metrics.loss import attribute_weights

    raw = ctx.params.get("weights")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise JobError("parameter 'weights' must map quasi-identifiers to numbers >= 0")
    try:
        w = attribute_weights(qis, raw)
    except AnonymizeError as e:
        raise JobError(str(e)) from None
    return None if w is None else tuple(float(x) for x in w)


def spec_from_params(ctx: JobContext) -> JointPublishSpec:
    """The public parameters of a session, checked (one-line :class:`JobError` otherwise)."""
    from parties.joint.publishing import JointPublishSpec

    qis = _str_list(ctx, "qi")
    assert qis is not None
    sens = ctx.params.get("sensitive")
    if sens is not None and not isinstance(sens, str):
        raise JobError("parameter 'sensitive' must be a column name or null")
    l_raw = ctx.params.get("l")
    if l_raw is not None and (not isinstance(l_raw, int) or isinstance(l_raw, bool)):
        raise JobError("parameter 'l' must be an integer (distinct l-diversity) or null")
    values = _str_list(ctx, "sensitive_values", optional=True)
    spec = JointPublishSpec(
        qis=tuple(qis),
        sensitive=sens,
        k=ctx.param("k", int, 2, min=1),
        l=l_raw,
        max_suppression=ctx.param("max_suppression", float, 0.0, min=0.0),
        suppressed_rows=ctx.param("suppressed_rows", str, "star"),
        metric=ctx.param("metric", str, "dm"),
        ncp_categorical=ctx.param("ncp_categorical", str, "height"),
        sensitive_values=None if values is None else tuple(values),
        weights=_weights(ctx, qis),
    )
    try:
        spec.check()
    except ValueError as e:
        raise JobError(str(e)) from None
    if sens is not None and sens in qis:
        raise JobError(f"column '{sens}' cannot be both a quasi-identifier and sensitive")
    if max(spec.k, spec.l or 0) < 2:
        # with k = 1 (and no l) every node passes and the release at the bottom node is the pooled table
        raise PolicyRefusal("joint publishing needs classes of at least 2 rows (k >= 2 or l >= 2)")
    return spec


def _hierarchies(ctx: JobContext, qis: list[str]) -> list[Hierarchy]:
    from anonymize.errors import AnonymizeError
    from anonymize.publish.hierarchy import Hierarchy

    raw = ctx.params.get("hierarchies")
    if not isinstance(raw, dict):
        raise JobError("parameter 'hierarchies' must map every quasi-identifier to its hierarchy rows")
    out = []
    for c in qis:
        rows = raw.get(c)
        if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
            raise JobError(f"no hierarchy rows for quasi-identifier '{c}' (full-domain publishing needs one per QI)")
        try:
            out.append(Hierarchy.from_rows(c, [[str(x) for x in r] for r in rows]))
        except AnonymizeError as e:
            raise JobError(f"hierarchy of '{c}': {e}") from None
    return out


def _load_rows(ctx: JobContext, spec: JointPublishSpec, hs: list[Hierarchy]) -> LocalRows:
    """This party's table encoded against the public hierarchies (runs off the event loop)."""
    from anonymize.errors import AnonymizeError
    from anonymize.publish.hierarchy import canonical_strings
    from anonymize.publish.io import read_table
    from parties.joint.publishing import LocalRows

    key = ctx.param("data", str, "table")
    path = ctx.data_path(key)
    try:
        df = read_table(path)
    except AnonymizeError as e:
        ctx.log.warning("session %s cannot read data %r: %s", ctx.session, key, e)
        raise JobError(f"data {key!r} cannot be read as a table (CSV or Parquet)") from None
    need = list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise JobError(f"data {key!r} has no column {', '.join(repr(c) for c in missing)}")
    codes = np.empty((len(df), len(hs)), dtype=np.int32)
    for j, (c, h) in enumerate(zip(spec.qis, hs)):
        col = df[c]
        if col.isna().any():
            raise JobError(f"data {key!r}: column '{c}' has {int(col.isna().sum())} missing value(s)")
        try:
            codes[:, j] = h.encode(col, column=c)
        except AnonymizeError:
            # the message would name the value: say only how many are not in the hierarchy
            known = set(canonical_strings(h.leaves))
            bad = int((~canonical_strings(col).isin(known)).sum())
            raise JobError(f"data {key!r}: {bad} value(s) of column '{c}' are not in its hierarchy") from None
    sens = None
    if spec.sensitive:
        col = df[spec.sensitive]
        if col.isna().any():
            raise JobError(f"data {key!r}: column '{spec.sensitive}' has {int(col.isna().sum())} missing value(s)")
        sens = canonical_strings(col).tolist()
    return LocalRows(codes, sens)


def _compute_only(ctx: JobContext) -> list[str]:
    """``compute_only``: the session's parties that hold no rows and only compute (so two data
    parties can publish with a third, non-colluding party); at least two parties must hold data."""
    v = ctx.params.get("compute_only") or []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise JobError("parameter 'compute_only' must be a list of party names")
    unknown = [x for x in v if x not in ctx.parties]
    if unknown:
        raise JobError(f"compute_only names {unknown[0]!r}, which is not a party of this session")
    if len(ctx.parties) - len(set(v)) < 2:
        raise JobError("joint publishing needs at least two parties that hold data")
    return list(v)


@job("publish.horizontal")
async def publish_horizontal_job(ctx: JobContext) -> dict[str, Any]:
    """Joint full-domain publishing of horizontally partitioned rows (module docstring)."""
    from parties.jobs.mining import peak_rss_bytes
    from parties.joint.publishing import LocalRows, publish_horizontal

    spec = spec_from_params(ctx)
    hs = _hierarchies(ctx, list(spec.qis))
    helpers = _compute_only(ctx)
    if ctx.name in helpers:  # a computing party that holds no rows of this table
        rows = LocalRows(np.zeros((0, len(hs)), dtype=np.int32), [] if spec.sensitive else None)
    else:
        rows = await asyncio.to_thread(_load_rows, ctx, spec, hs)
    ctx.check_input_length(len(rows.qi_codes), "table")
    t0 = time.perf_counter()
    try:
        out = await publish_horizontal(
            ctx.ch, hs, rows, spec, progress=lambda line: ctx.log.info("session %s %s", ctx.session, line)
        )
    except ValueError as e:
        raise JobError(str(e)) from None
    except ProtocolError:
        raise
    out["seconds"] = time.perf_counter() - t0
    out["bytes_sent"] = int(getattr(ctx.ch, "bytes_sent", 0))
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out
