"""Samarati's binary search over lattice height (Samarati, "Protecting respondents' identities in
microdata release", IEEE TKDE 13(6), 2001; Aggarwal, *Data Mining: The Textbook*, Springer 2015,
§20.3.1.1).

AG_TS (attribute generalization, tuple suppression): find the *lowest height* ``h`` of the
full-domain lattice at which some node satisfies the privacy models after suppressing at most
``MaxSup`` tuples. Since every generalization of a satisfying node satisfies (monotonicity), "some
node at height ``h`` satisfies" is monotone in ``h`` and a binary search over ``[0, h_max]`` finds
the lowest such height: test ``h_max/2``; if a node there satisfies, test ``h_max/4``, else
``3·h_max/4``; and so on (Aggarwal 2015, §20.3.1.1). At the height found, **every** node is
checked and all satisfying ones are returned; one is chosen by a stated metric (default NCP,
:mod:`.result`).

Checking a node is a frequency-set roll-up from the best cached specialization (nodes checked at
lower heights during the search), plus predictive tagging: a satisfying node tags its
generalizations, a failing one its specializations, so later heights skip what is already known.

Non-monotone predicates (entropy / recursive (c,l)-diversity, t-closeness with suppression,
see :mod:`..models`): "some node at height h satisfies" is then not guaranteed monotone; the
binary search is run as Samarati defines it (only failures of the monotone part are propagated)
and the reported height is the lowest the search found — ``stats['exact_pruning']`` is False.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ...errors import AnonymizeError
from ..registry import FULL_DOMAIN, register
from .engine import Lattice
from .grid import FAIL, PASS, tag_closure
from .result import NodeInfo, SearchResult, choose

__all__ = ["samarati"]


@register(
    "samarati",
    kind=FULL_DOMAIN,
    summary="Samarati: binary search over lattice height with a suppression budget (Samarati 2001)",
)
def samarati(lat: Lattice, metric: str = "ncp", progress: Callable[[str], None] | None = None) -> SearchResult:
    """Run Samarati's binary search on ``lat``; return all satisfying nodes at the lowest height,
    the one ``metric`` chooses, and work counters. :class:`AnonymizeError` if nothing satisfies."""
    t0 = time.perf_counter()
    ev0, rows0 = lat.n_evaluated, lat.rows_scanned
    g = lat.grid()
    exact = lat.exact_monotone
    tags = bytearray(g.N)  # monotone-part tags (PASS only when exact)
    result: dict[int, NodeInfo] = {}
    by_height: dict[int, list[int]] = {}
    for i in range(g.N):
        by_height.setdefault(g.height[i], []).append(i)
    for h in by_height:
        by_height[h].sort(key=lambda i: (g.norm[i], i))
    hmax = max(by_height)

    def check(i) -> bool:
        if i in result:
            return result[i].ok
        lv = g.levels[i]
        info, _ = lat.evaluate(lv, source=lat.source_for(lv))
        result[i] = info
        if exact:
            tag_closure(tags, i, PASS if info.ok else FAIL, g.succ if info.ok else g.pred)
        elif not info.ok_monotone:
            tag_closure(tags, i, FAIL, g.pred)
        return info.ok

    def satisfied_at(h: int, all_nodes: bool) -> list[int]:
        found = []
        for i in by_height[h]:
            if tags[i] == FAIL:
                continue
            if tags[i] == PASS and not all_nodes:
                return [i]
            if check(i):
                found.append(i)
                if not all_nodes:
                    return found
        return found

    if not satisfied_at(hmax, all_nodes=False):
        raise AnonymizeError(
            "no generalization satisfies the privacy models within the suppression budget, "
            "even the most general one; relax k / l / t or allow more suppression"
        )
    lo, hi = 0, hmax  # invariant: some node at height hi satisfies
    probes = []
    while lo < hi:
        mid = (lo + hi) // 2
        ok = bool(satisfied_at(mid, all_nodes=False))
        probes.append((mid, ok))
        if progress:
            progress(f"samarati: height {mid} of {hmax}: {'satisfiable' if ok else 'not satisfiable'}")
        if ok:
            hi = mid
        else:
            lo = mid + 1
    best = satisfied_at(hi, all_nodes=True)
    nodes = [result[i] for i in best]
    nodes.sort(key=lambda x: x.levels)
    chosen = choose(lat, nodes, metric)
    stats = {
        "nodes_in_lattice": g.N,
        "lattice_height": hmax,
        "lowest_height": hi,
        "probes": probes,
        "checked": lat.n_evaluated - ev0,
        "frequency_set_rows_scanned": lat.rows_scanned - rows0,
        "satisfying_at_lowest_height": len(nodes),
        "exact_pruning": exact,
        "seconds": time.perf_counter() - t0,
    }
    return SearchResult("samarati", nodes, chosen, metric, stats, "every satisfying node at the lowest height")
