"""The joint publishing job: one k-anonymous, l-diverse release of horizontally partitioned data.

``publish.horizontal`` (:func:`parties.joint.publishing.publish_horizontal`): every party reads its
``[data] <params.data>`` (default ``table``: a CSV or Parquet file with the same columns at every
party), encodes the quasi-identifiers against the analyst's public hierarchies and runs the search.
Parameters (all public, checked by every party): ``qi`` (list of columns), ``hierarchies``
(``{column: rows}`` as in an ARX hierarchy file), ``sensitive`` (a column or null),
``sensitive_values`` (its public domain, or null for a secure union), ``k``, ``l`` (distinct),
``max_suppression``, ``suppressed_rows``, ``metric`` (``dm`` or ``ncp``), ``ncp_categorical``, ``weights``
(``{column: weight}`` of NCP), ``algorithm`` (``flash`` — the default; ``incognito`` and ``samarati`` run the
same search — or ``mondrian``: strict Mondrian by secure medians, which takes k, l, ``ncp_categorical`` for
the order of its cuts and ``weights``, and suppresses nothing). A party's policy may set floors on
them (``[policy.job."publish.horizontal"] floor = { k = 10 }``), pin the hierarchies it accepts and
limit the distinct releases of one data key (``[publish]``, :mod:`parties.guards.releases`).

``publish.vertical`` (:func:`parties.joint.publishing_vertical.publish_vertical`): every data party
reads the columns of its ``[data]`` table that the session names (the QIs it holds, the sensitive
column if it holds it); the rows are aligned by position, or with ``key`` (a column every data party
has) by a private alignment (``align``: ``private-id``, the default, or ``psi``). Exactly one
``compute_only`` party — the helper — holds no data. Who holds which column is announced (column
names only); ``owners`` (``{column: party}``) settles a column several parties hold.

Errors never quote a value of the party's data: a value missing from a hierarchy is reported as a
count per column.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mpc.errors import ProtocolError
from parties.jobs.registry import JobContext, JobError, PolicyRefusal, job

if TYPE_CHECKING:  # the publishing stack (pandas, anonymize.publish) loads when a session runs, not at start-up
    from anonymize.publish.hierarchy import Hierarchy
    from parties.joint.publishing import JointPublishSpec, LocalRows

__all__ = ["HORIZONTAL_ALGORITHMS", "publish_horizontal_job", "publish_vertical_job", "spec_from_params"]


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
    from parties.joint.publishing import LocalRows

    need = list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])
    df = _party_frame(ctx, need)
    codes = _encode_columns(ctx, df, list(spec.qis), hs)
    sens = _sensitive_values(ctx, df, spec.sensitive) if spec.sensitive else None
    return LocalRows(codes, sens)


def _sensitive_values(ctx: JobContext, df, column: str) -> list[str]:
    """The sensitive column as canonical text; missing values are a count, never a value."""
    from anonymize.publish.hierarchy import canonical_strings

    col = df[column]
    if col.isna().any():
        key = ctx.param("data", str, "table")
        raise JobError(f"data {key!r}: column '{column}' has {int(col.isna().sum())} missing value(s)")
    return canonical_strings(col).tolist()


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


HORIZONTAL_ALGORITHMS = ("flash", "incognito", "samarati", "mondrian")
"""``algorithm`` of ``publish.horizontal``: the optimal full-domain search (flash, incognito and samarati
find the same satisfying nodes: one joint search serves them) or strict Mondrian
(:mod:`parties.joint.publishing_mondrian`)."""


def _algorithm(ctx: JobContext) -> str:
    """``algorithm`` (default flash), one of :data:`HORIZONTAL_ALGORITHMS`; Mondrian takes no
    suppression budget (it suppresses nothing, as locally) and only its strict mode."""
    a = ctx.param("algorithm", str, "flash")
    if a not in HORIZONTAL_ALGORITHMS:
        raise JobError(f"joint publishing runs {', '.join(HORIZONTAL_ALGORITHMS)}, not {a!r}")
    if a == "mondrian" and ctx.param("mondrian_mode", str, "strict") != "strict":
        raise JobError("joint Mondrian cuts strictly (a relaxed cut would split rows of equal values)")
    return a


@job("publish.horizontal")
async def publish_horizontal_job(ctx: JobContext) -> dict[str, Any]:
    """Joint full-domain publishing of horizontally partitioned rows (module docstring)."""
    from parties.jobs.mining import peak_rss_bytes
    from parties.joint.publishing import LocalRows, publish_horizontal

    spec = spec_from_params(ctx)
    algorithm = _algorithm(ctx)
    hs = _hierarchies(ctx, list(spec.qis))
    helpers = _compute_only(ctx)
    if ctx.name in helpers:  # a computing party that holds no rows of this table
        rows = LocalRows(np.zeros((0, len(hs)), dtype=np.int32), [] if spec.sensitive else None)
    else:
        rows = await asyncio.to_thread(_load_rows, ctx, spec, hs)
    ctx.check_input_length(len(rows.qi_codes), "table")
    t0 = time.perf_counter()
    try:
        if algorithm == "mondrian":
            from parties.joint.publishing_mondrian import publish_mondrian

            out = await publish_mondrian(
                ctx.ch, hs, rows, spec, say=lambda line: ctx.log.info("session %s %s", ctx.session, line)
            )
        else:
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


def _party_frame(ctx: JobContext, required: list[str], optional: Sequence[str] = ()):
    """This party's ``[data] <params.data>`` as a DataFrame with the ``required`` columns (and those
    of ``optional`` it has): a CSV or Parquet path, or a ``[data.KEY]`` table naming a file, a DuckDB
    query or a PostgreSQL query (:func:`parties.sources.reader.read_columns`). One-line
    :class:`JobError` otherwise, never quoting a value."""
    from anonymize.errors import AnonymizeError
    from anonymize.publish.io import read_table

    key = ctx.param("data", str, "table")
    raw = (getattr(ctx.config, "data", None) or {}).get(key)
    if raw is None:
        raise JobError(f"party {ctx.name!r} has no [data] {key} in its config")
    if isinstance(raw, (str, os.PathLike)):
        path = ctx.data_path(key)
        try:
            df = read_table(path)
        except AnonymizeError as e:
            ctx.log.warning("session %s cannot read data %r: %s", ctx.session, key, e)
            raise JobError(f"data {key!r} cannot be read as a table (CSV or Parquet)") from None
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise JobError(f"data {key!r} has no column {', '.join(repr(c) for c in missing)}")
        return df
    from parties.sources import SourceError
    from parties.sources.reader import read_columns

    try:
        return read_columns(raw, required, optional)
    except SourceError as e:
        ctx.log.warning("session %s cannot read data %r: %s", ctx.session, key, e.full())
        raise JobError(f"party {ctx.name!r}: {e}") from None


def _vertical_table(ctx: JobContext, spec: JointPublishSpec, key_col: str | None):
    """This party's table restricted to the session's columns it holds (and the key column)."""
    wanted = list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])
    return _party_frame(ctx, [key_col] if key_col else [], wanted)


def _encode_columns(ctx: JobContext, df, cols: list[str], hs: list[Hierarchy]) -> np.ndarray:
    """Leaf codes of ``cols`` against their hierarchies; errors count values, never quote them."""
    from anonymize.errors import AnonymizeError
    from anonymize.publish.hierarchy import canonical_strings

    key = ctx.param("data", str, "table")
    codes = np.empty((len(df), len(cols)), dtype=np.int32)
    for j, (c, h) in enumerate(zip(cols, hs)):
        col = df[c]
        if col.isna().any():
            raise JobError(f"data {key!r}: column '{c}' has {int(col.isna().sum())} missing value(s)")
        try:
            codes[:, j] = h.encode(col, column=c)
        except AnonymizeError:  # the message would name the value: say only how many are not in it
            known = set(canonical_strings(h.leaves))
            bad = int((~canonical_strings(col).isin(known)).sum())
            raise JobError(f"data {key!r}: {bad} value(s) of column '{c}' are not in its hierarchy") from None
    return codes


async def _vertical_layout(ctx: JobContext, spec: JointPublishSpec, helper: str, held: list[str]):
    """Every party announces which session columns it holds (names only); the layout follows."""
    import json

    from mpc.channel import broadcast, gather_from
    from parties.joint.publishing_vertical import VerticalLayout

    await broadcast(ctx.ch, "pubv/columns", json.dumps(held).encode())
    got = {p: json.loads(v) for p, v in (await gather_from(ctx.ch, "pubv/columns")).items()}
    got[ctx.name] = held
    owners_raw = ctx.params.get("owners") or {}
    if not isinstance(owners_raw, dict) or not all(isinstance(v, str) for v in owners_raw.values()):
        raise JobError("parameter 'owners' must map columns to party names")
    data_parties = [p for p in ctx.parties if p != helper]

    def owner(c: str) -> str:
        holders = [p for p in data_parties if c in got.get(p, [])]
        if c in owners_raw:
            if owners_raw[c] not in holders:
                raise JobError(f"owners names {owners_raw[c]!r} for column '{c}', which that party does not hold")
            return owners_raw[c]
        if not holders:
            raise JobError(f"no data party holds column '{c}'")
        if len(holders) > 1:
            raise JobError(f"column '{c}' is held by {', '.join(holders)}: name its owner with owners")
        return holders[0]

    owners = tuple(owner(c) for c in spec.qis)
    sens_owner = owner(spec.sensitive) if spec.sensitive else None
    return VerticalLayout(owners, sens_owner, helper)


async def _align_vertical(ctx: JobContext, df, key_col: str | None, data_parties: list[str]):
    """``(row order of df, present mask or None, revealed lines)``: by position without a key, else
    a private alignment among the data parties (the helper takes no part)."""
    import hashlib

    from mpc.keys import subset_channel

    if key_col is None:
        return np.arange(len(df)), None, ["data parties: rows aligned by position (no key column)"]
    keys = df[key_col]
    if keys.isna().any():
        raise JobError(f"key column {key_col!r} has {int(keys.isna().sum())} missing value(s)")
    text = keys.astype(str)
    if text.duplicated().any():
        raise JobError(f"key column {key_col!r} has {int(text.duplicated().sum())} repeated key(s)")
    digests = np.frombuffer(b"".join(hashlib.sha256(k.encode()).digest() for k in text), dtype=np.uint8).reshape(-1, 32)
    align = ctx.param("align", str, "private-id")
    sub = subset_channel(ctx.ch, data_parties)
    if align == "psi":
        from mpc.psi import PSI_LEAKAGE, private_set_intersection

        inside = await private_set_intersection(sub, np.ascontiguousarray(digests[:, :16]), tag="pubv/psi")
        common = np.flatnonzero(inside)
        kv = np.ascontiguousarray(digests[common]).view(np.dtype((np.void, 32))).ravel()
        order = common[np.argsort(kv, kind="stable")]
        return order, None, [f"data parties: {PSI_LEAKAGE} — {order.size:,} common records"]
    if align != "private-id":
        raise JobError(f"parameter 'align' must be private-id or psi, got {align!r}")
    from mpc.private_id import PRIVATE_ID_LEAKAGE, private_id

    res = await private_id(sub, [bytes(r) for r in digests], tag="pubv/pid")
    rows = res.rows()
    u = len(res.union)
    order = np.full(u, -1, dtype=np.int64)
    order[rows] = np.arange(len(df))
    present = order >= 0
    return (
        np.maximum(order, 0),
        present,
        [
            f"data parties: {PRIVATE_ID_LEAKAGE} — union {u:,}, held by all {res.intersection:,}; the helper learns "
            "which positions of each node's random row order every data party holds"
        ],
    )


@job("publish.vertical")
async def publish_vertical_job(ctx: JobContext) -> dict[str, Any]:
    """Joint full-domain publishing of vertically partitioned columns (module docstring)."""
    from parties.jobs.mining import peak_rss_bytes
    from parties.joint.publishing_vertical import VerticalRows, publish_vertical

    spec = spec_from_params(ctx)
    hs = _hierarchies(ctx, list(spec.qis))
    helpers = _compute_only(ctx)
    if len(helpers) != 1:
        raise JobError("vertical joint publishing needs exactly one compute_only party (the helper)")
    helper = helpers[0]
    key_col = ctx.params.get("key")
    if key_col is not None and not isinstance(key_col, str):
        raise JobError("parameter 'key' must be a column name or null")
    wanted = list(spec.qis) + ([spec.sensitive] if spec.sensitive else [])
    df = None
    held: list[str] = []
    if ctx.name != helper:
        df = await asyncio.to_thread(_vertical_table, ctx, spec, key_col)
        held = [c for c in wanted if c in df.columns]
        ctx.check_input_length(len(df), "table")
    layout = await _vertical_layout(ctx, spec, helper, held)
    data_parties = layout.data_parties(ctx.parties)
    revealed: list[str] = []
    rows = None
    if df is not None:
        order, present, revealed = await _align_vertical(ctx, df, key_col, data_parties)
        mine = layout.columns_of(ctx.name)
        codes = await asyncio.to_thread(_encode_columns, ctx, df, [spec.qis[j] for j in mine], [hs[j] for j in mine])
        sens = None
        if spec.sensitive and layout.sensitive_owner == ctx.name:
            sens = np.asarray(_sensitive_values(ctx, df, spec.sensitive), dtype=object)[order].tolist()
        rows = VerticalRows(codes[order], sens, present)
    t0 = time.perf_counter()
    try:
        out = await publish_vertical(
            ctx.ch, hs, rows, spec, layout, progress=lambda line: ctx.log.info("session %s %s", ctx.session, line)
        )
    except ValueError as e:
        raise JobError(str(e)) from None
    out["revealed"] = revealed + out.get("revealed", [])
    out["layout"] = {
        "owners": dict(zip(spec.qis, layout.owners)),
        "sensitive": layout.sensitive_owner,
        "helper": helper,
    }
    out["seconds"] = time.perf_counter() - t0
    out["bytes_sent"] = int(getattr(ctx.ch, "bytes_sent", 0))
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out
