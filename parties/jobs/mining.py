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

import os
import resource
import sys
import time

from parties.jobs.registry import DPJobSpec, JobContext, JobError, job, refuse_dp_job, register_dp_job
from parties.joint import JointResult, check_all, mine_horizontal, mine_vertical
from parties.joint.dp_mining import check_dp_params, mine_horizontal_dp
from parties.joint.dp_sum import check_colluders
from parties.joint.memory import estimate_file_bytes, estimate_job_bytes, level_bytes
from parties.joint.partition import load_transactions
from parties.runtime.shaping import WaitCounter

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


def result_json(res: JointResult, with_result: bool) -> dict:
    """The JSON of a mining result: itemsets ``{items, count}`` and rules, plus ``protocol``."""
    out: dict = {"transactions": res.frequent.n_transactions, "protocol": res.protocol()}
    if res.dp is not None:
        out["dp"] = res.dp
    if with_result:
        out["itemsets"] = [{"items": list(items), "count": int(c) if c >= 0 else None} for items, c in res.frequent]
        out["rules"] = []
        if res.rules is not None:
            out["rules"] = [
                {
                    "antecedent": list(r.antecedent),
                    "consequent": list(r.consequent),
                    "support": None if r.count is None else int(r.count),
                    "confidence": None if r.confidence is None else float(r.confidence),
                }
                for r in res.rules
            ]
    return out


def _common(ctx: JobContext):
    ms = ctx.params.get("min_support")
    if not isinstance(ms, (str, int, float)) or isinstance(ms, bool):
        raise JobError("parameter 'min_support' must be a decimal string or number")
    mc = ctx.params.get("min_confidence")
    max_len = ctx.params.get("max_len")
    path = ctx.data_path("transactions")
    limit = _memory_limit(ctx)
    if estimate_file_bytes(path, os.path.getsize(path)) > limit:
        raise JobError(
            f"party {ctx.name!r}: loading its transactions would need about "
            f"{estimate_file_bytes(path, os.path.getsize(path)) / 2**20:,.0f} MiB, over its [limits] "
            f"max_job_memory_bytes ({limit / 2**20:,.0f} MiB)"
        )
    try:
        db = load_transactions(path)
    except ValueError as e:
        raise JobError(f"party {ctx.name!r} cannot read its transactions file") from e
    report_to = ctx.params.get("report_to", ctx.parties[0])
    return ms, mc, max_len, db, report_to == ctx.name


def _progress(ctx: JobContext):
    return lambda line: ctx.log.info("session %s %s", ctx.session, line)


@job("mine.horizontal")
async def mine_horizontal_job(ctx: JobContext) -> dict:
    """Kantarcioglu–Clifton mining of horizontally partitioned data; params min_support, n_items, ..."""
    ms, mc, max_len, db, report = _common(ctx)
    n_items = ctx.param("n_items", int, min=1)
    await _check_memory(ctx, estimate_job_bytes(db, "horizontal", n_items=n_items))
    if "epsilon" in ctx.params:
        return await _mine_horizontal_dp_job(ctx, ms, mc, max_len, db, report, n_items)
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
    out = result_json(res, report)
    out["seconds"] = time.perf_counter() - t0
    out["network"] = dict(WaitCounter.of(ctx.ch.state))
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out


@job("mine.vertical", sum_style=False)
async def mine_vertical_job(ctx: JobContext) -> dict:
    """Vaidya–Clifton mining of vertically partitioned data; params min_support, counting, ..."""
    ms, mc, max_len, db, report = _common(ctx)
    counting = ctx.param("counting", str, "auto")
    await _check_memory(ctx, estimate_job_bytes(db, "vertical"))
    t0 = time.perf_counter()
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
        )
    except ValueError as e:
        raise JobError(str(e)) from None
    out = result_json(res, report)
    out["seconds"] = time.perf_counter() - t0
    out["network"] = dict(WaitCounter.of(ctx.ch.state))
    out["peak_rss_bytes"] = peak_rss_bytes()
    return out


async def _mine_horizontal_dp_job(ctx: JobContext, ms, mc, max_len, db, report: bool, n_items: int) -> dict:
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
    out = result_json(res, report)
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


register_dp_job(DPJobSpec("mine.horizontal", keys=lambda p: ["transactions"], check=_check_dp_mining))
refuse_dp_job(
    "mine.vertical",
    "no party sees a whole transaction, so what one transaction adds to a level's counts cannot be bounded "
    "(only by the number of candidates, which drowns the counts), and its shared counts live in rings sized "
    "for exact counts; use a horizontal split",
)
