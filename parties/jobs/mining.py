"""Daemon jobs for joint mining: ``mine.horizontal`` and ``mine.vertical``.

Each party reads its own ``[data] transactions`` file (FIMI ``.dat`` or CSR
``.npz``, see :mod:`parties.joint.partition`) and runs the protocol of
:mod:`parties.joint`. Every party computes the same result; only the
party named in ``params["report_to"]`` (default: the first) sends the itemsets
and rules back to the analyst, the others only their protocol statistics.
Progress lines (level sizes, which every party learns anyway) go to the
daemon log — never data.

``mine.horizontal`` with ``epsilon`` runs the ε-DP protocol of
:mod:`parties.joint.dp_mining` (params ``max_len`` required, ``max_contributions``,
``colluders``; candidates "all" only), spending the budget the daemon's guard charged
at admission (:mod:`parties.guards.dp_budget`); ``mine.vertical`` refuses ``epsilon``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from anonymize.itemsets import TransactionDB
from mpc.channel import agree
from parties.jobs.registry import DPJobSpec, JobContext, JobError, job, refuse_dp_job, register_dp_job
from parties.joint import JointResult, check_all, mine_horizontal, mine_vertical
from parties.joint.common import support_ratio
from parties.joint.dp_mining import check_dp_params, mine_horizontal_dp
from parties.joint.dp_sum import check_colluders
from parties.joint.keyed import ALIGN_MODES, align_private_id, align_psi
from parties.joint.memory import estimate_file_bytes, estimate_job_bytes, level_bytes
from parties.joint.named import agree_universe, renumber, vertical_schema
from parties.runtime.shaping import WaitCounter
from parties.sources.spec import SourceError

if TYPE_CHECKING:  # pandas and DuckDB load when a job reads a source, not at daemon start
    from parties.sources.transactions import KeyedTransactions

__all__ = ["result_json"]

DEFAULT_MAX_JOB_MEMORY = 2 << 30


def _memory_limit(ctx: JobContext) -> int:
    limits = getattr(ctx.config, "limits", None)
    return int(getattr(limits, "max_job_memory_bytes", DEFAULT_MAX_JOB_MEMORY))


async def _check_memory(ctx: JobContext, need: int | None) -> None:
    """Refuse the job on every party, with one line, if any party's estimate exceeds its limit."""
    limit = _memory_limit(ctx)
    problem = None
    if need is not None and need > limit:
        problem = (
            f"would need about {need / 2**20:,.0f} MiB for this job, over its [limits] max_job_memory_bytes "
            f"({limit / 2**20:,.0f} MiB)"
        )
    await check_all(ctx.ch, "memory", problem)


def _level_guard(ctx: JobContext, db, split: str):
    """Stop before a level whose candidates this party's memory limit cannot hold (one line, public sizes)."""
    limit = _memory_limit(ctx)
    base = estimate_job_bytes(db, split)

    def guard(k: int, n_candidates: int) -> None:
        need = base + level_bytes(n_candidates, k, split)
        if need > limit:
            raise ValueError(
                f"party {ctx.name!r}: level {k} has {n_candidates:,} candidates, about {need / 2**20:,.0f} MiB, "
                f"over its [limits] max_job_memory_bytes ({limit / 2**20:,.0f} MiB); raise min_support or set max_len"
            )

    return guard


def peak_rss_bytes() -> int:
    """This daemon process's peak resident set size since it started, in bytes.

    Linux: ``VmHWM`` of ``/proc/self/status`` (the high-water mark of this
    memory image; ``getrusage``'s ru_maxrss would also count the parent's image
    at fork time, which exec keeps). Elsewhere: ``getrusage`` ru_maxrss.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # bytes on macOS, KiB on Linux


def _named(items, names: list | None) -> list:
    return [int(i) for i in items] if names is None else [names[int(i)] for i in items]


def result_json(res: JointResult, with_result: bool, names: list | None = None) -> dict:
    """The JSON of a mining result: itemsets ``{items, count}`` and rules, plus ``protocol``.

    ``names[i]`` names item id ``i`` (text or integers); without it the ids are the names.
    """
    out: dict = {"transactions": res.frequent.n_transactions, "protocol": res.protocol()}
    if res.dp is not None:
        out["dp"] = res.dp
    if with_result:
        out["itemsets"] = [
            {"items": _named(items, names), "count": int(c) if c >= 0 else None} for items, c in res.frequent
        ]
        out["rules"] = []
        if res.rules is not None:
            out["rules"] = [
                {
                    "antecedent": _named(r.antecedent, names),
                    "consequent": _named(r.consequent, names),
                    "support": None if r.count is None else int(r.count),
                    "confidence": None if r.confidence is None else float(r.confidence),
                }
                for r in res.rules
            ]
    return out


def _thresholds(ctx: JobContext):
    ms = ctx.params.get("min_support")
    if not isinstance(ms, (str, int, float)) or isinstance(ms, bool):
        raise JobError("parameter 'min_support' must be a decimal string or number")
    report_to = ctx.params.get("report_to", ctx.parties[0])
    return ms, ctx.params.get("min_confidence"), ctx.params.get("max_len"), report_to == ctx.name


async def _load(ctx: JobContext) -> KeyedTransactions:
    """This party's ``[data] <params.data>`` (default ``transactions``), read off the event loop.

    Any problem (a missing column, NULL keys, a failing query, an unreachable database, a wrong
    password file, over the memory limit) is one line naming the data key; the session fails here at
    once, so every other party stops with "peer ... has failed the session" and the analyst sees this
    party's line as the cause.
    """
    key = ctx.param("data", str, "transactions")
    limit = _memory_limit(ctx)
    problem, kt = None, None
    try:
        src = ctx.data_source(key)
        if src.kind != "legacy":
            src.check_columns()  # a table of columns (joint publishing's) names no key and item
        if getattr(src, "engine", "memory") != "memory":
            return await _load_on_engine(ctx, src, limit)
        if src.kind == "legacy":
            size = os.path.getsize(src.location) if os.path.exists(src.location) else 0
            need = estimate_file_bytes(src.location, size)
            if need > limit:
                raise JobError(
                    f"loading data {key!r} would need about {need / 2**20:,.0f} MiB, over its [limits] "
                    f"max_job_memory_bytes ({limit / 2**20:,.0f} MiB)"
                )
        from parties.sources.transactions import load_source

        kt = await asyncio.to_thread(load_source, src, memory_limit=limit // 2, progress=_progress(ctx))
    except SourceError as e:  # str(e) is for the peers; the details stay in this party's log
        ctx.log.warning("session %s cannot read data %r: %s", ctx.session, key, e.full())
        problem = str(e)
    except JobError as e:
        problem = str(e).removeprefix(f"party {ctx.name!r}: ").removeprefix(f"party {ctx.name!r} ")
    if problem:  # the session fails here at once; the other parties see this party's abort
        raise JobError(problem)
    assert kt is not None
    return kt


async def _load_on_engine(ctx: JobContext, src, limit: int) -> KeyedTransactions:
    """A ``[data.KEY]`` with ``engine = "duckdb" | "spark"``: the baskets partitioned on that engine
    (:mod:`anonymize.itemsets.partitioned`); the session closes them (:func:`_close_engine`). Horizontal
    jobs only: the protocol asks them for support counts, which the engine sums over its partitions."""
    from anonymize.engines import EngineError, open_engine
    from parties.sources.engine_input import table_input

    if ctx.job != "mine.horizontal" or "epsilon" in ctx.params:
        raise JobError(
            f"party {ctx.name!r}: data {src.key!r} runs on the {src.engine} engine, which serves horizontal jobs "
            "without epsilon; run this job on a memory data key"
        )
    spark = getattr(ctx.config, "spark", None) or {}

    def build():
        stack = contextlib.ExitStack()
        try:
            inp = stack.enter_context(table_input(src, memory_limit=limit // 2))
            eng = stack.enter_context(
                open_engine(
                    src.engine,
                    spark_master=spark.get("master"),
                    spark_conf=spark.get("conf"),
                    memory_limit=limit // 2,
                )
            )
            baskets = eng.baskets(inp, src.transaction, src.item, progress=_progress(ctx))
            stack.callback(baskets.close)
            return baskets, stack.pop_all()
        except BaseException:
            stack.close()
            raise

    try:
        baskets, stack = await asyncio.to_thread(build)
    except (SourceError, EngineError) as e:
        detail = e.full() if isinstance(e, SourceError) else str(e)
        ctx.log.warning("session %s cannot read data %r on the %s engine: %s", ctx.session, src.key, src.engine, detail)
        raise JobError(f"data {src.key!r} cannot be read on the {src.engine} engine") from None
    ctx.cleanup.append(stack.close)
    from parties.sources.transactions import KeyedTransactions

    return KeyedTransactions(baskets, baskets.item_names, None, baskets.item_kind)


def _progress(ctx: JobContext):
    return lambda line: ctx.log.info("session %s %s", ctx.session, line)


def _finish(ctx: JobContext, res: JointResult, report: bool, names: list | None, t0: float) -> dict:
    out = result_json(res, report, names)
    out["seconds"] = time.perf_counter() - t0
    out["network"] = dict(WaitCounter.of(ctx.ch.state))
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out


async def _horizontal_universe(
    ctx: JobContext, kt: KeyedTransactions, ms
) -> tuple[TransactionDB, int, list | None, list[str]]:
    """The horizontal job's item numbering: ``(db over 0..n-1, n, names or None, revealed)`` (parties.joint.named)."""
    n_items = ctx.params.get("n_items")
    catalog = ctx.params.get("catalog")
    if n_items is not None and catalog is not None:
        raise JobError("give either n_items or catalog, not both")
    if n_items is not None:
        n_items = ctx.param("n_items", int, min=1)
        if kt.names is None:  # integer ids over the agreed universe 0..n_items-1 (checked by the protocol)
            return kt.db, n_items, None, []
        if kt.item_kind != "int":
            raise JobError(f"party {ctx.name!r}: n_items numbers integer items; its items are text (omit n_items)")
        db, _ = renumber(kt.db, kt.item_names(), list(range(n_items)))
        return db, n_items, None, []
    if catalog is not None:
        if (
            not isinstance(catalog, list)
            or not catalog
            or not all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in catalog)
        ):
            raise JobError("parameter 'catalog' must be a non-empty list of item names (text or integers)")
    if "epsilon" in ctx.params and catalog is None:
        raise JobError(
            "with epsilon, name the items publicly (a catalog, or n_items): the secure union of locally "
            "frequent items is not differentially private"
        )
    try:
        db, universe, revealed = await agree_universe(
            ctx.ch, kt.db, kt.item_names(), kt.item_kind, min_support=support_ratio(ms), catalog=catalog
        )
    except ValueError as e:
        raise JobError(str(e)) from None
    return db, len(universe), universe, revealed


@job("mine.horizontal")
async def mine_horizontal_job(ctx: JobContext) -> dict:
    """Kantarcioglu–Clifton mining of horizontally partitioned data; params min_support, data, n_items|catalog, ..."""
    ms, mc, max_len, report = _thresholds(ctx)
    kt = await _load(ctx)
    db, n_items, names, agreed = await _horizontal_universe(ctx, kt, ms)
    await _check_memory(ctx, estimate_job_bytes(db, "horizontal", n_items=n_items))
    if "epsilon" in ctx.params:
        return await _mine_horizontal_dp_job(ctx, ms, mc, max_len, db, report, n_items, names)
    t0 = time.perf_counter()
    try:
        res = await mine_horizontal(
            ctx.ch,
            db,
            min_support=ms,
            min_confidence=mc,
            n_items=n_items,
            max_len=max_len,
            reveal_counts=bool(ctx.params.get("reveal_counts", True)),
            candidates=ctx.param("candidates", str, "union"),
            progress=_progress(ctx),
            level_guard=_level_guard(ctx, db, "horizontal"),
        )
    except ValueError as e:  # bad thresholds: same message on every party, nothing private
        raise JobError(str(e)) from None
    res.revealed = agreed + res.revealed
    return _finish(ctx, res, report, names, t0)


async def _vertical_layout(ctx: JobContext, kt: KeyedTransactions):
    """Keyed data: the public schema and the private alignment; ``(db, names, required, n_counted, revealed)``."""
    align = ctx.param("align", str, None) if ctx.params.get("align") is not None else None
    if align is not None and align not in ALIGN_MODES:
        raise JobError(f"parameter 'align' must be one of {', '.join(ALIGN_MODES)}, got {align!r}")
    keyed = kt.keyed
    if keyed and align is None:
        align = "private-id"
    await check_all(
        ctx.ch,
        "v/keyed",
        None
        if keyed or align is None
        else f"holds data without keys (a FIMI/CSR file), which --align {align} cannot align; use a keyed table",
    )
    await agree(ctx.ch, "v/keyed", keyed=keyed, align=align)
    if kt.key_digests is None:
        return kt.db, None, None, None, []
    offsets, names = await vertical_schema(ctx.ch, kt.item_names(), kt.item_kind)
    me = ctx.parties.index(ctx.name)
    m = len(kt.item_names())
    own = offsets[me] + np.arange(m, dtype=np.int64)
    if align == "private-id":
        presence = len(names) + me
        db, n_counted, revealed = await align_private_id(
            ctx.ch, kt.db, kt.key_digests, offset=offsets[me], presence=presence, universe=np.append(own, presence)
        )
        required = len(names) + np.arange(len(ctx.parties), dtype=np.int64)
        return db, names, required, n_counted, revealed
    db, n_counted, revealed = await align_psi(ctx.ch, kt.db, kt.key_digests, offset=offsets[me], universe=own)
    return db, names, None, n_counted, revealed


@job("mine.vertical", sum_style=False)
async def mine_vertical_job(ctx: JobContext) -> dict:
    """Vaidya–Clifton mining of vertically partitioned data; params min_support, data, align, counting, ..."""
    ms, mc, max_len, report = _thresholds(ctx)
    counting = ctx.param("counting", str, "auto")
    kt = await _load(ctx)
    t0 = time.perf_counter()
    db, names, required, n_counted, revealed = await _vertical_layout(ctx, kt)
    await _check_memory(ctx, estimate_job_bytes(db, "vertical"))
    try:
        res = await mine_vertical(
            ctx.ch,
            db,
            min_support=ms,
            min_confidence=mc,
            max_len=max_len,
            counting=counting,
            progress=_progress(ctx),
            level_guard=_level_guard(ctx, db, "vertical"),
            required=required,
            n_counted=n_counted,
        )
    except ValueError as e:
        raise JobError(str(e)) from None
    res.revealed = revealed + res.revealed
    if names is not None:  # keyed: the schema and the private alignment came first
        res.phases = {"alignment": time.perf_counter() - t0 - sum(res.phases.values()), **res.phases}
    return _finish(ctx, res, report, names, t0)


async def _mine_horizontal_dp_job(
    ctx: JobContext, ms, mc, max_len, db, report: bool, n_items: int, names: list | None
) -> dict:
    """``mine.horizontal`` with ``epsilon``: ε-DP mining (:mod:`parties.joint.dp_mining`), budget charged at admission."""
    from anonymize.dp import as_epsilon

    eps = as_epsilon(ctx.params["epsilon"])  # checked by the budget guard at admission
    charge = ctx.privacy_charge(eps)
    t0 = time.perf_counter()
    try:
        res = await mine_horizontal_dp(
            ctx.ch,
            db,
            epsilon=eps,
            min_support=ms,
            min_confidence=mc,
            n_items=n_items,
            max_len=max_len,
            reveal_counts=bool(ctx.params.get("reveal_counts", True)),
            max_contributions=ctx.params.get("max_contributions"),
            colluders=ctx.params.get("colluders", 0),
            on_release=charge.release,
            progress=_progress(ctx),
            level_guard=_level_guard(ctx, db, "horizontal"),
        )
    except ValueError as e:
        raise JobError(str(e)) from None
    out = result_json(res, report, names)
    out["seconds"] = time.perf_counter() - t0
    out["network"] = dict(WaitCounter.of(ctx.ch.state))
    return out


def _check_dp_mining(params, n_parties: int, cfg) -> None:
    """Admission check of ``mine.horizontal`` with ``epsilon`` (the budget guard runs it before charging)."""
    check_dp_params(
        params["epsilon"], params.get("max_len"), params.get("max_contributions"), params.get("candidates", "all")
    )
    check_colluders(n_parties, params.get("colluders", 0))
    if params.get("min_confidence") is not None and not params.get("reveal_counts", True):
        raise ValueError("rules need the noisy counts: with epsilon, min_confidence cannot go with private counts")


register_dp_job(
    DPJobSpec("mine.horizontal", keys=lambda p: [str(p.get("data", "transactions"))], check=_check_dp_mining)
)
refuse_dp_job(
    "mine.vertical",
    "no party sees a whole transaction, so what one transaction adds to a level's counts cannot be bounded "
    "(only by the number of candidates, which drowns the counts), and its shared counts live in rings sized "
    "for exact counts; use a horizontal split",
)
