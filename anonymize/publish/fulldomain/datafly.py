"""Datafly (Sweeney, "Achieving k-anonymity privacy protection using generalization and
suppression", IJUFKS 10(5), 2002) — the classic greedy full-domain heuristic.

Start from the original table (every QI at level 0). While the rows in classes that fail the
privacy models exceed the suppression budget ``MaxSup``, generalize by one level the quasi-
identifier with the **most distinct values** in the current generalized table (ties: the earlier
column); then suppress the rows of the remaining failing classes. Sweeney's budget is "at most k
tuples"; here it is ``MaxSup = ⌊max_suppression · n⌋`` like Samarati's. Any privacy model works
(:mod:`..models`). The result is one node, not necessarily minimal — Datafly is the baseline the
optimal searches are compared with.

Each step is a frequency-set roll-up of the previous step's (:mod:`.engine`); the number of
distinct values of a QI at a level is known from the encoding, so no pass over the rows is needed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...errors import AnonymizeError
from ..registry import FULL_DOMAIN, register
from .engine import Lattice
from .result import SearchResult, choose

__all__ = ["datafly"]


@register(
    "datafly",
    kind=FULL_DOMAIN,
    summary="Datafly: greedy full-domain heuristic, generalize the QI with most distinct values (Sweeney 2002)",
)
def datafly(lat: Lattice, metric: str = "ncp", progress: Callable[[str], None] | None = None) -> SearchResult:
    """Run Datafly on ``lat``; the single node reached is ``chosen`` (``metric`` only fills the
    report). :class:`AnonymizeError` if even the top of every hierarchy fails."""
    t0 = time.perf_counter()
    ev0, rows0 = lat.n_evaluated, lat.rows_scanned
    levels = [0] * lat.q
    fs = lat.base
    steps = []
    while True:
        info, fs = lat.evaluate(tuple(levels), source=fs, keep=False)
        if info.ok:
            break
        distinct = [lat.n_nodes[j][levels[j]] if levels[j] < lat.heights[j] else -1 for j in range(lat.q)]
        j = max(range(lat.q), key=lambda a: (distinct[a], -a))
        if distinct[j] < 0:
            raise AnonymizeError(
                "Datafly: every quasi-identifier is fully generalized and the privacy models still "
                "fail within the suppression budget; relax k / l / t or allow more suppression"
            )
        steps.append(
            {"attribute": lat.table.schema.qis[j], "distinct": distinct[j], "suppressed_before": info.suppressed}
        )
        levels[j] += 1
        if progress:
            progress(f"datafly: generalize '{lat.table.schema.qis[j]}' to level {levels[j]}")
    chosen = choose(lat, [info], metric)
    stats = {
        "steps": steps,
        "checked": lat.n_evaluated - ev0,
        "frequency_set_rows_scanned": lat.rows_scanned - rows0,
        "seconds": time.perf_counter() - t0,
    }
    return SearchResult("datafly", [info], chosen, metric, stats, "the node Datafly reached")
